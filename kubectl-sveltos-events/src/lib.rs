//! The sveltos-events kubectl plugin as a library: every command's module, so that the binary
//! (`main.rs`) stays a thin dispatcher and benchmarks can reach the TUI and the chain engine.

pub mod apply;
pub mod chain;
pub mod check;
pub mod complete;
pub mod connect;
pub mod demo;
pub mod install;
pub mod kubeconfig;
pub mod manifests;
pub mod offline;
pub mod register;
pub mod sandbox_command;
pub mod system;
pub mod tui;
pub mod uninstall;
pub mod version;
