//! The shared watch of Cluster API clusters against the sandbox: ready at once while CAPI is
//! absent, clusters seen once its CRD appears, read in the version the CRD comes to store
//! after an upgrade, and gone with the CRD; every holder hears of each change.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up and assertions

use std::future::Future;
use std::time::Duration;

use clusters::capi::{self, CapiClusters};
use futures_util::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use sandbox::{Sandbox, SandboxOptions};
use serde_json::{Value, json};

async fn eventually<F, Fut>(what: &str, f: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !f().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn version(name: &str, storage: bool) -> Value {
    json!({"name": name, "served": true, "storage": storage,
           "schema": {"openAPIV3Schema": {"type": "object",
                      "x-kubernetes-preserve-unknown-fields": true}}})
}

fn crd(versions: Vec<Value>) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusters.cluster.x-k8s.io"},
        "spec": {"group": "cluster.x-k8s.io", "scope": "Namespaced",
                 "names": {"plural": "clusters", "singular": "cluster", "kind": "Cluster",
                           "listKind": "ClusterList"},
                 "versions": versions}
    }))
    .unwrap()
}

/// A sandbox with the management cluster only, and its client.
async fn management_only() -> (Sandbox, kube::Client) {
    let sandbox = Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: 0,
        ..Default::default()
    })
    .await
    .unwrap();
    let mgmt = sandbox.cluster("mgmt").unwrap().client().unwrap();
    (sandbox, mgmt)
}

/// Creates v1beta1 Cluster `default/<name>` with `annotations`.
async fn create_cluster(mgmt: &kube::Client, name: &str, annotations: Value) {
    let gvk = GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta1", "Cluster");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "clusters");
    let api: Api<DynamicObject> = Api::namespaced_with(mgmt.clone(), "default", &resource);
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {}
    }))
    .unwrap();
    api.create(&PostParams::default(), &cluster).await.unwrap();
}

/// The apiVersions the watch holds its clusters in.
fn versions_seen(clusters: &CapiClusters) -> Vec<String> {
    clusters
        .state()
        .iter()
        .filter_map(|c| c["apiVersion"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_cluster_api_being_installed_upgraded_and_removed() {
    let (sandbox, mgmt) = management_only().await;
    let clusters = capi::watch(mgmt.clone(), None);
    let mut changes = clusters.changes();
    // Absent: ready at once, holding nothing.
    tokio::time::timeout(Duration::from_secs(10), clusters.wait_until_ready())
        .await
        .expect("ready while Cluster API is absent");
    assert!(clusters.state().is_empty());

    let crds: Api<CustomResourceDefinition> = Api::all(mgmt.clone());
    crds.create(&PostParams::default(), &crd(vec![version("v1beta1", true)]))
        .await
        .unwrap();
    create_cluster(&mgmt, "w", json!({})).await;
    eventually("the cluster in v1beta1", || async {
        versions_seen(&clusters) == ["cluster.x-k8s.io/v1beta1"]
    })
    .await;
    assert!(clusters.get("default", "w").is_some());
    tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("the holder heard of the change");

    // An upgrade stores v1beta2: the clusters are read again in it.
    let upgraded = crd(vec![version("v1beta1", false), version("v1beta2", true)]);
    crds.patch(
        "clusters.cluster.x-k8s.io",
        &PatchParams::apply("test").force(),
        &Patch::Apply(&upgraded),
    )
    .await
    .unwrap();
    eventually("the cluster in v1beta2", || async {
        versions_seen(&clusters) == ["cluster.x-k8s.io/v1beta2"]
    })
    .await;

    // Cluster API removed: its clusters go.
    crds.delete("clusters.cluster.x-k8s.io", &DeleteParams::default())
        .await
        .unwrap();
    eventually("no clusters", || async { clusters.state().is_empty() }).await;
    sandbox.shutdown().await;
}

#[tokio::test]
async fn onboarding_limits_the_clusters_seen() {
    let (sandbox, mgmt) = management_only().await;
    let crds: Api<CustomResourceDefinition> = Api::all(mgmt.clone());
    crds.create(&PostParams::default(), &crd(vec![version("v1beta1", true)]))
        .await
        .unwrap();
    create_cluster(&mgmt, "in", json!({"example.com/onboard": ""})).await;
    create_cluster(&mgmt, "out", json!({})).await;
    let clusters = capi::watch(mgmt.clone(), Some("example.com/onboard".into()));
    assert!(clusters.wait_until_ready().await);
    let names: Vec<_> = clusters
        .state()
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(names, ["in"]);
    assert!(clusters.get("default", "out").is_none());
    sandbox.shutdown().await;
}
