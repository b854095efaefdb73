//! What the agent's hub, the manager and the deployer share about the clusters of a
//! management cluster: the Cluster API watch, the registry of SveltosClusters and Cluster API
//! Clusters, registering a cluster and reaching it through its kubeconfig Secret, reflectors,
//! and the process plumbing (logs, stop signal) of every controller.

pub mod capi;
pub mod objects;
pub mod process;
pub mod registry;
pub mod shared;
pub mod watch;
pub mod words;

pub use capi::CapiClusters;
pub use registry::{Registration, Registry};
