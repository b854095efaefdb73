//! The crate's error type.

/// Everything that can go wrong while selecting and evaluating resources.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Lua state could not be created or configured.
    #[error("lua runtime: {0}")]
    Runtime(String),
    /// A script failed to compile, raised an error, exceeded a limit or returned a bad value.
    #[error("EventSource {event_source}: {place}: {message}")]
    Evaluation {
        /// Name of the EventSource whose script failed.
        event_source: String,
        /// Which script: `resourceSelectors[i].evaluate` or `aggregatedSelection`.
        place: String,
        /// What went wrong, in words.
        message: String,
    },
    /// A label selector of the EventSource is invalid.
    #[error("EventSource {event_source}: {message}")]
    Selector {
        /// Name of the EventSource.
        event_source: String,
        /// What is wrong with the selector.
        message: String,
    },
    /// Input files could not be read or parsed.
    #[error("{0}")]
    Input(String),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
