//! `explain` and `trace` in a Cluster API cluster: `--cluster NS/NAME` names a Cluster API
//! `Cluster` when no SveltosCluster has that name, reached as the controllers reach it (its
//! `<name>-kubeconfig` Secret), with its EventReports, ClusterSummaries and agent list read
//! under its type (`capi`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use std::path::Path;

use sveltos_events_e2e as common;

use common::{apply_example, eventually, items, kubectl, plugin, start};

/// Writes `yaml` to a file and applies it in `cluster`.
fn apply(dir: &Path, cluster: &str, name: &str, yaml: &str) {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, yaml).unwrap();
    kubectl(dir, cluster, &["apply", "-f", path.to_str().unwrap()]);
}

/// A minimal Cluster API: its `clusters.cluster.x-k8s.io` CRD (v1beta1, any fields).
const CAPI_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusters.cluster.x-k8s.io
spec:
  group: cluster.x-k8s.io
  scope: Namespaced
  names: {plural: clusters, singular: cluster, kind: Cluster, listKind: ClusterList}
  versions:
  - name: v1beta1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

#[test]
fn explain_and_trace_reach_a_cluster_api_cluster() {
    let sandbox = start(2);
    let dir = &sandbox.dir;
    // cluster-2's API server becomes the Cluster API cluster default/workload (label
    // env=capi, which only the edited trigger selects).
    apply(dir, "mgmt", "capi-crd", CAPI_CRD);
    eventually("the Cluster API CRD served", || {
        let served = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(dir.join("mgmt.kubeconfig"))
            .args(["get", "clusters.cluster.x-k8s.io", "-A"])
            .output()
            .unwrap();
        served.status.success().then_some(())
    });
    let kubeconfig = std::fs::read_to_string(dir.join("cluster-2.kubeconfig")).unwrap();
    let indented: String = kubeconfig.lines().map(|l| format!("    {l}\n")).collect();
    apply(
        dir,
        "mgmt",
        "workload-kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: workload-kubeconfig, namespace: default}}\n\
             stringData:\n  value: |\n{indented}"
        ),
    );
    apply(
        dir,
        "mgmt",
        "workload",
        "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\n\
         metadata: {name: workload, namespace: default, labels: {env: capi}}\nspec: {}\n",
    );
    kubectl(
        dir,
        "mgmt",
        &[
            "patch",
            "clusters.cluster.x-k8s.io",
            "workload",
            "-n",
            "default",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"initialization":{"controlPlaneInitialized":true}}}"#,
        ],
    );
    for file in ["eventsource.yaml", "configmap.yaml"] {
        apply_example(dir, "mgmt", "network-policy", file);
    }
    let trigger =
        std::fs::read_to_string(common::example("network-policy", "eventtrigger.yaml")).unwrap();
    apply(
        dir,
        "mgmt",
        "trigger",
        &trigger.replace("env: fv", "env: capi"),
    );
    apply_example(dir, "cluster-2", "network-policy", "managed/service.yaml");
    eventually("the NetworkPolicy in the Cluster API cluster", || {
        items(
            dir,
            "cluster-2",
            &["get", "networkpolicies", "-n", "default"],
        )
        .pop()
    });

    let workload = [
        "-n",
        "default",
        "--cluster",
        "default/workload",
        "-o",
        "wide",
    ];
    let run = |command: &str, target: &str| {
        let mut args = vec![command, target];
        args.extend(workload);
        plugin(dir, &args)
    };
    let up = eventually("a whole chain upward", || {
        let up = run("explain", "netpol/front-my-service");
        (up.code == 0).then_some(up.stdout)
    });
    assert!(
        up.lines()
            .any(|l| l.starts_with("└─ ClusterSummary default/sveltos-")
                && l.contains("-capi-workload")
                && l.contains("Resources Provisioned")),
        "{up}"
    );
    assert!(
        up.contains("EventReport default/capi--sveltos-service--workload"),
        "{up}"
    );
    assert!(
        up.contains("Service default/my-service @default/workload") && up.contains("still there"),
        "{up}"
    );
    let down = run("trace", "svc/my-service");
    assert_eq!(down.code, 0, "{}{}", down.stdout, down.stderr);
    assert!(
        down.stdout
            .contains("NetworkPolicy default/front-my-service @default/workload"),
        "{}",
        down.stdout
    );

    // Paused the Cluster API way (its annotation): said, exit 1.
    kubectl(
        dir,
        "mgmt",
        &[
            "annotate",
            "clusters.cluster.x-k8s.io",
            "workload",
            "-n",
            "default",
            "cluster.x-k8s.io/paused=true",
        ],
    );
    let paused = run("trace", "svc/my-service");
    assert_eq!(paused.code, 1, "{}", paused.stdout);
    assert!(
        paused.stdout.contains("cluster default/workload is paused"),
        "{}",
        paused.stdout
    );
    // A name neither kind has.
    plugin(dir, &["trace", "svc/x", "--cluster", "default/nowhere"])
        .fails_saying("no SveltosCluster or Cluster API Cluster default/nowhere is registered");
}
