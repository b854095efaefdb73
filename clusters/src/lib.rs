//! What the agent's hub, the manager and the deployer share about the clusters of a
//! management cluster: the Cluster API watch, the registry of SveltosClusters and Cluster API
//! Clusters, registering a cluster and reaching it through its kubeconfig Secret, reflectors,
//! and the process plumbing (logs, stop signal) of every controller.

pub mod capi;
pub mod client;
pub mod objects;
pub mod process;
pub mod registry;
pub mod shared;
pub mod watch;
pub mod words;

pub use capi::CapiClusters;
pub use registry::{Registration, Registry};

/// Why a shared cluster operation failed: reaching a registered cluster, or finding the
/// cluster a process is pointed at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A registered cluster could not be reached through its kubeconfig Secret.
    #[error(transparent)]
    Connect(#[from] registry::ConnectError),
    /// No kubeconfig or in-cluster account gave a cluster.
    #[error(transparent)]
    LoadConfig(#[from] registry::LoadConfigError),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
