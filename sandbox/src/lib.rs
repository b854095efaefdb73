//! In-process Kubernetes API server hosting several virtual clusters.
//!
//! The crate is split into a storage layer with no HTTP ([`store`], [`registry`],
//! [`selector`], [`patch`], [`fields`]) and an HTTP layer ([`http`]) that speaks the
//! Kubernetes REST protocol on top of it. [`Sandbox`] starts several virtual clusters on
//! loopback ports and hands out a `kube::Client` and a kubeconfig per cluster.

pub mod auth;
pub mod controllers;
pub mod defaults;
pub mod error;
pub mod events;
pub mod faults;
pub mod field_labels;
pub mod fields;
pub mod formats;
pub mod http;
pub mod journal;
pub mod meta;
pub mod paging;
pub mod patch;
pub mod registry;
pub mod sandbox;
pub mod selector;
pub mod smp;
pub mod store;
pub mod structural;
pub mod tokens;
pub mod typed;
pub mod validation;
pub mod webhook;

pub use error::{Error, Result};
pub use sandbox::{ClusterHandle, Sandbox, SandboxOptions};
pub use store::Store;
