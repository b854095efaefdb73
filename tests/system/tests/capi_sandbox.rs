//! The NetworkPolicy scenario with a Cluster API cluster instead of a SveltosCluster: Cluster
//! API is installed after the system started, the cluster is handled once it carries the
//! onboarding annotation and its control plane is initialised, the hub reaches it through
//! Cluster API's `<name>-kubeconfig` Secret, and its deletion withdraws everything.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

mod support;

use std::time::Duration;

use api::v1beta1::{ClusterProfile, EventReport};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch};
use kube::api::{PatchParams, PostParams};
use serde_json::{Value, json};
use support::{apply, eventually, names, network_policy_scenario, service};

const ONBOARD: &str = "example.com/sveltos";

/// A minimal Cluster API CRD: `clusters.cluster.x-k8s.io`, v1beta1, any fields.
fn capi_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusters.cluster.x-k8s.io"},
        "spec": {
            "group": "cluster.x-k8s.io", "scope": "Namespaced",
            "names": {"plural": "clusters", "singular": "cluster", "kind": "Cluster",
                      "listKind": "ClusterList"},
            "versions": [{"name": "v1beta1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .unwrap()
}

fn capi_clusters(mgmt: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta1", "Cluster");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "clusters");
    Api::namespaced_with(mgmt.clone(), "default", &resource)
}

async fn merge(api: &Api<DynamicObject>, name: &str, patch: Value) {
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_api_cluster_is_a_source_and_a_destination() {
    let (sandbox, mgmt) = support::sandbox_with_crds(1).await;
    let handle = sandbox.cluster("cluster-1").unwrap();
    let managed = handle.client().unwrap();
    network_policy_scenario(&mgmt).await;
    let tasks = support::start_system_onboarding(&mgmt, Some(ONBOARD.to_owned()));
    apply(&managed, service("web")).await;

    // Cluster API arrives after the system started.
    Api::<CustomResourceDefinition>::all(mgmt.clone())
        .create(&PostParams::default(), &capi_crd())
        .await
        .unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "workload-kubeconfig", "namespace": "default"},
        "stringData": {"value": handle.kubeconfig_yaml()}
    }))
    .unwrap();
    Api::<Secret>::namespaced(mgmt.clone(), "default")
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let clusters = capi_clusters(&mgmt);
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": "workload", "namespace": "default", "labels": {"env": "fv"}},
        "spec": {},
        "status": {"initialization": {"controlPlaneInitialized": true}}
    }))
    .unwrap();
    clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();

    // Not onboarded: nothing is made for it.
    let reports: Api<EventReport> = Api::namespaced(mgmt.clone(), "default");
    let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(names(&reports).await.is_empty());
    assert!(names(&profiles).await.is_empty());

    merge(
        &clusters,
        "workload",
        json!({"metadata": {"annotations": {ONBOARD: ""}}}),
    )
    .await;
    let policies: Api<NetworkPolicy> = Api::namespaced(managed.clone(), "default");
    eventually("the policy in the Cluster API cluster", || async {
        names(&policies).await == ["front-web"]
    })
    .await;
    assert_eq!(names(&reports).await, ["capi--sveltos-service--workload"]);
    let report = reports
        .get("capi--sveltos-service--workload")
        .await
        .unwrap();
    assert_eq!(report.spec.cluster_type.as_str(), "Capi");
    let profile = profiles.list(&Default::default()).await.unwrap().items;
    assert_eq!(profile.len(), 1);
    let reference = &profile[0].spec.cluster_refs[0];
    assert_eq!(reference.kind.as_deref(), Some("Cluster"));
    assert_eq!(
        reference.api_version.as_deref(),
        Some("cluster.x-k8s.io/v1beta1")
    );
    let labels = profile[0].metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels["eventtrigger.lib.projectsveltos.io/clustertype"],
        "Capi"
    );

    // A new event in the cluster: a second policy.
    apply(&managed, service("api")).await;
    eventually("a second policy", || async {
        names(&policies).await == ["front-api", "front-web"]
    })
    .await;
    Api::<Service>::namespaced(managed.clone(), "default")
        .delete("api", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the second policy to go", || async {
        names(&policies).await == ["front-web"]
    })
    .await;

    // The cluster goes: its report, profile and deployed policy go with it.
    clusters
        .delete("workload", &DeleteParams::default())
        .await
        .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(mgmt.clone(), "default");
    eventually(
        "the report, the profile and the source list to go",
        || async {
            names(&reports).await.is_empty()
                && names(&profiles).await.is_empty()
                && config_maps
                    .get_opt("workload-capi")
                    .await
                    .unwrap()
                    .is_none()
        },
    )
    .await;
    for task in tasks {
        task.abort();
    }
    sandbox.shutdown().await;
}
