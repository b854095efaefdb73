//! Sveltos API types: EventSource, EventTrigger, EventReport, SveltosCluster, ClusterProfile.
//!
//! `v1beta1` is the stored version and what every component works with; `v1alpha1` holds the
//! historical shapes users' older YAML still uses, each converting losslessly into `v1beta1`.
//! `load` reads YAML or JSON documents of any of them into `v1beta1` types.

pub mod capi;
pub mod cluster_ref;
pub mod condition;
pub mod convert;
pub mod crd;
pub mod event_note;
pub mod fields;
pub mod labels;
pub mod load;
mod schema;
pub mod secret_data;
pub mod selector;
pub mod v1alpha1;
pub mod v1beta1;

/// Errors reading, converting or validating Sveltos objects.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The text is not valid YAML (where and what, e.g. `line 4 column 9: unclosed quote`).
    #[error("cannot parse YAML: {0}")]
    Yaml(String),
    /// The text is beyond a limit of the YAML reader, said with its line (`line 65: nested
    /// deeper than 64 levels`).
    #[error("{0}")]
    YamlLimit(String),
    /// The input exceeds the size accepted from users.
    #[error("input is {size} bytes, more than the {limit} bytes accepted")]
    TooLarge {
        /// Size of the input.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A document does not have the fields of its kind.
    #[error("{what} does not match its schema: {source}")]
    Convert {
        /// The object (kind, name) or field being read.
        what: String,
        /// What serde found wrong.
        source: serde_json::Error,
    },
    /// A label selector (string form or matchExpressions) is wrong.
    #[error(transparent)]
    Selector(#[from] selector::SelectorError),
    /// The object is well-formed but breaks a rule of its kind.
    #[error("{0}")]
    Invalid(String),
}

/// A kubeconfig Secret lacks the key a cluster's kubeconfig is read from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no key {keys}")]
pub struct MissingKubeconfigKey {
    /// The key looked for, or the keys tried in turn (`kubeconfig or value`).
    pub keys: String,
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
