//! The sveltos-events manager: turns EventReports and EventTriggers into generated
//! ClusterProfiles, ConfigMaps and Secrets, and keeps them in step as events come and go.
//!
//! The "decide" modules here are pure (inputs -> desired objects) and unit-tested without a
//! server; the reconcilers that read and write the cluster are thin layers on top.

pub mod answer;
pub mod deployer;
pub mod engine;
pub mod event_data;
pub mod fleet;
pub mod identity;
pub mod instantiate;
pub mod kept;
pub mod leader;
pub mod manager;
pub mod memo;
pub mod plan;
pub mod profiles;
pub mod queue;
pub mod render;
pub mod room;
pub mod run;
pub mod serve;
pub mod sets;
pub mod settled;
pub mod tenancy;
#[cfg(test)]
mod testing;
pub mod watches;
pub mod webhook;

/// Errors of the manager.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An EventReport's content cannot be decoded.
    #[error("EventReport {report}: {reason}")]
    Report {
        /// Name of the report.
        report: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Result alias of the manager.
pub type Result<T, E = Error> = std::result::Result<T, E>;
