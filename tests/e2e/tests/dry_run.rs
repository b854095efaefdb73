//! `show dryrun`: a ClusterProfile switched to `syncMode: DryRun` changes nothing, and what it
//! would change is shown per object, each update's diff in full, from the deployer's
//! ClusterReport.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use std::path::Path;

use sveltos_events_e2e as common;

use common::{eventually, items, kubectl, plugin, start};

/// The add-ons ConfigMap holding `documents`, and a profile deploying it to cluster-1 in
/// `sync_mode`.
fn apply_profile(dir: &Path, sync_mode: &str, documents: &str) {
    let yaml = format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: addons
  namespace: default
data:
  objects.yaml: |
{}
---
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata:
  name: preview
spec:
  syncMode: {sync_mode}
  clusterRefs:
  - apiVersion: lib.projectsveltos.io/v1beta1
    kind: SveltosCluster
    namespace: default
    name: cluster-1
  policyRefs:
  - kind: ConfigMap
    namespace: default
    name: addons
"#,
        documents
            .lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let path = dir.join("preview.yaml");
    std::fs::write(&path, yaml).unwrap();
    kubectl(dir, "mgmt", &["apply", "-f", path.to_str().unwrap()]);
}

fn settings(level: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  level: \"{level}\"\n  colour: teal\n"
    )
}

#[test]
fn a_dry_run_profile_shows_each_change_and_every_diff_in_full() {
    let sandbox = start(1);
    let dir = &sandbox.dir;
    apply_profile(dir, "Continuous", &settings("1"));
    eventually("settings deployed in cluster-1", || {
        items(dir, "cluster-1", &["get", "configmaps", "-n", "default"])
            .into_iter()
            .find(|c| c["metadata"]["name"] == "settings")
    });

    // In DryRun (switched first: a change arriving before the switch is simply deployed), a
    // changed object and a new one are reported, not applied.
    apply_profile(dir, "DryRun", &settings("1"));
    eventually("the DryRun report", || {
        let run = plugin(dir, &["show", "dryrun", "--profile", "preview"]).ok();
        run.stdout.contains("No Action").then_some(())
    });
    let extra = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\n";
    apply_profile(dir, "DryRun", &format!("{}---\n{extra}", settings("2")));
    let table = eventually("show dryrun with the update and the create", || {
        let run = plugin(dir, &["show", "dryrun", "--profile", "preview"]).ok();
        (run.stdout.contains("Update") && run.stdout.contains("Create")).then_some(run.stdout)
    });
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().nth(4) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name} in\n{table}"))
            .to_owned()
    };
    assert!(
        row("settings").contains("Update") && row("settings").contains("diff below"),
        "{table}"
    );
    assert!(row("extra").contains("Create"), "{table}");
    // The diff, whole: the changed line both ways, the unchanged one as context.
    assert!(
        table.contains("v1:ConfigMap default/settings in cluster default/cluster-1"),
        "{table}"
    );
    assert!(table.contains("--- live\n+++ after deployment"), "{table}");
    assert!(
        table.contains("-  level: '1'") || table.contains("-  level: \"1\""),
        "{table}"
    );
    assert!(
        table.contains("+  level: '2'") || table.contains("+  level: \"2\""),
        "{table}"
    );
    assert!(table.contains("   colour: teal"), "{table}");
    // The deployer's own bookkeeping (its hash of the object) is not part of the change.
    assert!(!table.contains("projectsveltos.io/hash"), "{table}");
    // Nothing changed in the cluster.
    let live = kubectl(
        dir,
        "cluster-1",
        &[
            "get",
            "configmap",
            "settings",
            "-n",
            "default",
            "-o",
            "jsonpath={.data.level}",
        ],
    );
    assert_eq!(live, "1");
    assert!(
        items(dir, "cluster-1", &["get", "configmaps", "-n", "default"])
            .iter()
            .all(|c| c["metadata"]["name"] != "extra")
    );
    // JSON carries the same diff, uncut; a cluster filter that matches nothing shows nothing.
    let json = plugin(
        dir,
        &[
            "show",
            "dryrun",
            "--cluster",
            "default/cluster-1",
            "-o",
            "json",
        ],
    )
    .ok();
    let changes: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let update = changes
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["action"] == "Update")
        .unwrap();
    assert!(
        update["message"]
            .as_str()
            .unwrap()
            .contains("+++ after deployment"),
        "{update}"
    );
    let none = plugin(dir, &["show", "dryrun", "--cluster", "default/elsewhere"]).ok();
    assert!(
        none.stdout.contains("No DryRun changes found."),
        "{}",
        none.stdout
    );
}
