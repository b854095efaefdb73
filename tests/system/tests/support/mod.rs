//! Shared set-up of the tests and benchmarks that run the whole system on the sandbox: apply
//! objects, register a sandbox cluster, define the NetworkPolicy scenario, start the agent,
//! manager and deployer.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // each user needs a subset

use std::collections::BTreeMap;
use std::sync::Arc;

use controller::fleet::ClusterScope;
use controller::serve::Telemetry;
use controller::watches::Watches;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use sandbox::{ClusterHandle, Sandbox, SandboxOptions};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// Server-side applies `object` (any kind the cluster serves).
pub async fn apply(client: &Client, object: Value) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, caps) = kube::discovery::pinned_kind(client, &gvk).await.unwrap();
    let name = object["metadata"]["name"].as_str().unwrap().to_owned();
    let api: Api<DynamicObject> = if caps.scope == kube::discovery::Scope::Namespaced {
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        Api::namespaced_with(client.clone(), namespace, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    };
    let params = PatchParams::apply("test").force();
    api.patch(&name, &params, &Patch::Apply(&object))
        .await
        .unwrap();
}

/// Installs the CRDs in the management cluster.
pub async fn install_crds(mgmt: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(mgmt.clone());
    for crd in api::crd::all().unwrap() {
        crds.create(&Default::default(), &crd).await.unwrap();
    }
}

/// Registers a sandbox cluster as `default/<name>` labelled `env=fv`.
pub async fn register(mgmt: &Client, cluster: &ClusterHandle) {
    let labels = BTreeMap::from([("env".to_owned(), "fv".to_owned())]);
    let kubeconfig = cluster.kubeconfig_yaml();
    clusters::registry::register_cluster(
        mgmt,
        "test",
        "default",
        &cluster.name,
        labels,
        &kubeconfig,
    )
    .await
    .unwrap();
}

/// A sandbox with `count` managed clusters and the CRDs installed, none registered: the
/// sandbox and the client of `mgmt`.
pub async fn sandbox_with_crds(count: usize) -> (Sandbox, Client) {
    let sandbox = Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: count,
        ..Default::default()
    })
    .await
    .unwrap();
    // The controllers' client as their binaries build it.
    let config = sandbox.cluster("mgmt").unwrap().config().unwrap();
    let mgmt = clusters::client::client(config).unwrap();
    install_crds(&mgmt).await;
    (sandbox, mgmt)
}

/// A sandbox with `count` managed clusters, the CRDs installed and every cluster registered
/// (`default/cluster-<n>`, `env=fv`): the sandbox and the clients of `mgmt` and the clusters.
pub async fn registered_clusters(count: usize) -> (Sandbox, Client, Vec<Client>) {
    let (sandbox, mgmt) = sandbox_with_crds(count).await;
    let mut managed = Vec::new();
    for n in 1..=count {
        let handle = sandbox.cluster(&format!("cluster-{n}")).unwrap();
        register(&mgmt, handle).await;
        managed.push(handle.client().unwrap());
    }
    (sandbox, mgmt, managed)
}

/// A sandbox with one managed cluster, the CRDs installed and the cluster registered: the
/// sandbox and the clients of `mgmt` and `cluster-1`.
pub async fn one_registered_cluster() -> (Sandbox, Client, Client) {
    let (sandbox, mgmt, mut managed) = registered_clusters(1).await;
    let cluster = managed.remove(0);
    (sandbox, mgmt, cluster)
}

/// [`one_registered_cluster`] with the NetworkPolicy scenario defined.
pub async fn one_cluster_scenario() -> (Sandbox, Client, Client) {
    let (sandbox, mgmt, managed) = one_registered_cluster().await;
    network_policy_scenario(&mgmt).await;
    (sandbox, mgmt, managed)
}

/// Defines the NetworkPolicy scenario (examples/network-policy) in the management cluster.
pub async fn network_policy_scenario(mgmt: &Client) {
    for text in [
        include_str!("../../../../examples/network-policy/eventsource.yaml"),
        include_str!("../../../../examples/network-policy/eventtrigger.yaml"),
        include_str!("../../../../examples/network-policy/configmap.yaml"),
    ] {
        for document in api::load::documents(text).unwrap() {
            apply(mgmt, document).await;
        }
    }
}

/// A Service the scenario's EventSource matches.
pub fn service(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": "default", "labels": {"sveltos": "fv"}},
           "spec": {"selector": {"app": name}, "ports": [{"port": 80, "protocol": "TCP"}]}})
}

/// Starts the agent (hub mode), the manager and the deployer against `mgmt`.
pub fn start_system(mgmt: &Client) -> Vec<JoinHandle<()>> {
    start_system_onboarding(mgmt, None)
}

/// [`start_system`] handling only the Cluster API clusters carrying `capi_onboard_annotation`.
pub fn start_system_onboarding(
    mgmt: &Client,
    capi_onboard_annotation: Option<String>,
) -> Vec<JoinHandle<()>> {
    let capi = clusters::capi::watch(mgmt.clone(), capi_onboard_annotation);
    let mut tasks = vec![start_agent(mgmt, capi.clone())];
    tasks.extend(start_controllers(mgmt, ClusterScope::default(), capi));
    tasks
}

/// The agent (hub mode) against `mgmt`.
fn start_agent(mgmt: &Client, capi: clusters::capi::CapiClusters) -> JoinHandle<()> {
    tokio::spawn(agent::hub::run(mgmt.clone(), capi, std::future::pending()))
}

/// The agent (hub mode) and the manager against `mgmt`, without the deployer, which
/// [`start_deployer`] starts later with the watches returned.
pub fn start_agent_and_manager(mgmt: &Client) -> (Vec<JoinHandle<()>>, Watches) {
    let capi = clusters::capi::watch(mgmt.clone(), None);
    let agent = start_agent(mgmt, capi.clone());
    let watches = Watches::start(mgmt, ClusterScope::default(), capi);
    let manager = start_manager(mgmt, watches.clone(), Telemetry::new());
    (vec![agent, manager], watches)
}

/// The manager against `mgmt`, with the watches and telemetry of its process.
fn start_manager(mgmt: &Client, watches: Watches, telemetry: Arc<Telemetry>) -> JoinHandle<()> {
    let run = controller::manager::run(mgmt.clone(), watches, telemetry, std::future::pending());
    spawn(run)
}

/// The deployer against `mgmt`, with the watches of its process (shared with its manager).
pub fn start_deployer(
    mgmt: &Client,
    watches: Watches,
    telemetry: Arc<Telemetry>,
) -> JoinHandle<()> {
    let run = controller::deployer::run(mgmt.clone(), watches, telemetry, std::future::pending());
    spawn(run)
}

/// Runs a controller until it ends (its outcome is the test's to find in the cluster).
fn spawn<E>(run: impl Future<Output = Result<(), E>> + Send + 'static) -> JoinHandle<()> {
    tokio::spawn(async move {
        let _ = run.await;
    })
}

/// The manager and the deployer against `mgmt`, handling the clusters of `scope`.
pub fn start_controllers(
    mgmt: &Client,
    scope: ClusterScope,
    capi: clusters::capi::CapiClusters,
) -> Vec<JoinHandle<()>> {
    let (watches, telemetry) = (Watches::start(mgmt, scope, capi), Telemetry::new());
    vec![
        start_manager(mgmt, watches.clone(), telemetry.clone()),
        start_deployer(mgmt, watches, telemetry),
    ]
}

/// Waits (at most 20 s) until `f` holds.
pub async fn eventually<F, Fut>(what: &str, f: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while !f().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The sorted names of the objects `api` lists.
pub async fn names<K>(api: &Api<K>) -> Vec<String>
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
