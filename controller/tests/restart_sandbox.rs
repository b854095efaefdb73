//! The whole system (agent in hub mode, manager, deployer) on the sandbox, stopped mid-scenario
//! and started again after the world changed while it was down: it converges with no duplicate
//! and no leftover.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

use std::time::Duration;

use api::v1beta1::{ClusterProfile, ClusterSummary};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use sandbox::{Sandbox, SandboxOptions};
use serde_json::{Value, json};
use sveltos_events_controller::serve::Telemetry;
use tokio::task::JoinHandle;

async fn apply(client: &Client, object: Value) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let (resource, caps) =
        kube::discovery::pinned_kind(client, &GroupVersionKind::gvk(group, version, kind))
            .await
            .unwrap();
    let name = object["metadata"]["name"].as_str().unwrap().to_owned();
    let api: Api<DynamicObject> = if caps.scope == kube::discovery::Scope::Namespaced {
        Api::namespaced_with(
            client.clone(),
            object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default"),
            &resource,
        )
    } else {
        Api::all_with(client.clone(), &resource)
    };
    api.patch(
        &name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(&object),
    )
    .await
    .unwrap();
}

fn service(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": "default", "labels": {"sveltos": "fv"}},
           "spec": {"selector": {"app": name}, "ports": [{"port": 80, "protocol": "TCP"}]}})
}

fn start(mgmt: &Client) -> Vec<JoinHandle<()>> {
    let telemetry = Telemetry::new();
    let (a, m, d) = (mgmt.clone(), mgmt.clone(), mgmt.clone());
    let t = telemetry.clone();
    vec![
        tokio::spawn(agent::hub::run(a, std::future::pending())),
        tokio::spawn(async move {
            let _ = sveltos_events_controller::manager::run(m, t, std::future::pending()).await;
        }),
        tokio::spawn(async move {
            let _ = sveltos_events_controller::deployer::run(d, telemetry, std::future::pending())
                .await;
        }),
    ]
}

async fn eventually<F, Fut>(what: &str, f: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !f().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn names<K>(api: &Api<K>) -> Vec<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter_map(|o| o.meta().name.clone())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_after_changes_converges_without_duplicates_or_leftovers() {
    let sandbox = Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: 1,
    })
    .await
    .unwrap();
    let mgmt = sandbox.cluster("mgmt").unwrap().client().unwrap();
    let managed_handle = sandbox.cluster("cluster-1").unwrap();
    let managed = managed_handle.client().unwrap();
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> = Api::all(mgmt.clone());
    for crd in api::crd::all().unwrap() {
        crds.create(&Default::default(), &crd).await.unwrap();
    }
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cluster-1-sveltos-kubeconfig", "namespace": "default"},
        "data": {"kubeconfig": ByteString(managed_handle.kubeconfig_yaml().into_bytes())}});
    apply(&mgmt, secret).await;
    apply(&mgmt, json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "metadata": {"name": "cluster-1", "namespace": "default", "labels": {"env": "fv"}}, "spec": {}})).await;
    for text in [
        include_str!("../../examples/network-policy/eventsource.yaml"),
        include_str!("../../examples/network-policy/eventtrigger.yaml"),
        include_str!("../../examples/network-policy/configmap.yaml"),
    ] {
        for document in api::load::documents(text).unwrap() {
            apply(&mgmt, document).await;
        }
    }
    apply(&managed, service("first")).await;

    let policies: Api<NetworkPolicy> = Api::namespaced(managed.clone(), "default");
    let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
    let summaries: Api<ClusterSummary> = Api::namespaced(mgmt.clone(), "default");
    let tasks = start(&mgmt);
    eventually("the first policy", || async {
        names(&policies).await == ["front-first"]
    })
    .await;
    let first_profiles = names(&profiles).await;
    assert_eq!(first_profiles.len(), 1);

    // Everything stops; the world changes meanwhile.
    for task in &tasks {
        task.abort();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    apply(&managed, service("second")).await;
    Api::<Service>::namespaced(managed.clone(), "default")
        .delete("first", &DeleteParams::default())
        .await
        .unwrap();

    let _tasks = start(&mgmt);
    eventually("convergence after the restart", || async {
        names(&policies).await == ["front-second"]
            && names(&profiles).await.len() == 1
            && names(&summaries).await.len() == 1
    })
    .await;
    // The surviving profile is not the first one: the first event's objects are gone.
    assert_ne!(names(&profiles).await, first_profiles);
    let generated: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(mgmt.clone(), "projectsveltos");
    let labelled =
        ListParams::default().labels("eventtrigger.lib.projectsveltos.io/eventtriggername");
    assert_eq!(generated.list(&labelled).await.unwrap().items.len(), 1);
    for task in _tasks {
        task.abort();
    }
    sandbox.shutdown().await;
}
