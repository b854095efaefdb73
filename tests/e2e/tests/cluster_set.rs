//! End to end on the sandbox, through the real binary and kubectl: the ClusterSet example.
//! The set selects one of the two clusters, the trigger watches it and deploys there; when the
//! selected cluster's connection goes down, the selection and the add-ons move to the other.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use sveltos_events_e2e as common;

use common::{apply_example, eventually, example, items, kubectl, start};

/// Names of the clusters the ClusterSet selected.
fn selected(dir: &std::path::Path) -> Vec<String> {
    let set = kubectl(
        dir,
        "mgmt",
        &["get", "clusterset", "network-policy-pool", "-o", "json"],
    );
    let set: serde_json::Value = serde_json::from_str(&set).unwrap();
    set["status"]["selectedClusterRefs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str().map(str::to_owned))
        .collect()
}

/// Names of the NetworkPolicies in `cluster`.
fn policies(dir: &std::path::Path, cluster: &str) -> Vec<String> {
    items(dir, cluster, &["get", "networkpolicies", "-n", "default"])
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_add_ons_follow_the_cluster_set_selection() {
    let sandbox = start(2);
    let dir = sandbox.dir.clone();
    // Both clusters ready first, so the set's first pick is the first of its pool.
    eventually("both clusters ready", || {
        let clusters = items(&dir, "mgmt", &["get", "sveltosclusters", "-A"]);
        (clusters.len() == 2 && clusters.iter().all(|c| c["status"]["ready"] == true)).then_some(())
    });
    kubectl(
        &dir,
        "mgmt",
        &[
            "apply",
            "-f",
            &example("network-policy", "eventsource.yaml"),
            "-f",
            &example("network-policy", "configmap.yaml"),
            "-f",
            &example("cluster-set", ""),
        ],
    );
    for cluster in ["cluster-1", "cluster-2"] {
        apply_example(&dir, cluster, "network-policy", "managed/service.yaml");
    }
    eventually("cluster-1 selected and given the policy", || {
        (selected(&dir) == ["cluster-1"]
            && policies(&dir, "cluster-1") == ["front-my-service"]
            && policies(&dir, "cluster-2").is_empty())
        .then_some(())
    });

    kubectl(
        &dir,
        "mgmt",
        &[
            "patch",
            "sveltoscluster",
            "cluster-1",
            "-n",
            "default",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"connectionStatus":"Down"}}"#,
        ],
    );
    eventually("the selection and the policy to move to cluster-2", || {
        (selected(&dir) == ["cluster-2"]
            && policies(&dir, "cluster-2") == ["front-my-service"]
            && policies(&dir, "cluster-1").is_empty())
        .then_some(())
    });
}
