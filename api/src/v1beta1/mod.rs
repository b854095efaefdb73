//! The stored API version of lib.projectsveltos.io and config.projectsveltos.io.

mod addons;
mod cluster_profile;
mod cluster_report;
mod cluster_set;
mod cluster_summary;
mod event_report;
mod event_source;
mod event_trigger;
mod sveltos_cluster;

pub use addons::*;
pub use cluster_profile::*;
pub use cluster_report::*;
pub use cluster_set::*;
pub use cluster_summary::*;
pub use event_report::*;
pub use event_source::*;
pub use event_trigger::*;
pub use sveltos_cluster::*;
