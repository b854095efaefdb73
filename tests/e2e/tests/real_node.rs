//! The install proof on a real Kubernetes node (`real-node.sh`), as a test: it runs when asked
//! (`SVELTOS_EVENTS_REAL_NODE=1`) and the node's binaries are built, and otherwise says that it
//! did not run and why. The lane needs root and a node built once per machine (~15-30 min,
//! `../shared/tools/kube-node/build.sh`), which CI's time does not pay for.
#![allow(clippy::unwrap_used)] // test code

use std::path::PathBuf;
use std::process::Command;

use sveltos_events_e2e as common;

/// Where kube-node keeps the node's binaries (its build.sh default, or `KNODE_CACHE`).
fn node_cache() -> PathBuf {
    match std::env::var_os("KNODE_CACHE") {
        Some(cache) => PathBuf::from(cache),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/kube-node/1.20.2"),
    }
}

#[test]
fn install_register_example_check_and_uninstall_on_a_real_node() {
    if std::env::var("SVELTOS_EVENTS_REAL_NODE").as_deref() != Ok("1") {
        eprintln!(
            "real node lane not run: set SVELTOS_EVENTS_REAL_NODE=1 to run tests/e2e/real-node.sh \
             (needs root and the node from ../shared/tools/kube-node/build.sh)"
        );
        return;
    }
    let cache = node_cache();
    assert!(
        cache.join("bin/kubelet").exists(),
        "SVELTOS_EVENTS_REAL_NODE=1 but no node binaries in {}: build them with \
         ../shared/tools/kube-node/build.sh",
        cache.display()
    );
    let bins = common::plugin_binary().parent().unwrap().to_owned();
    let out = Command::new(common::repo_root().join("tests/e2e/real-node.sh"))
        .arg(&bins)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "real-node.sh failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
