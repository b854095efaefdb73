//! The hub (`hub::run`) against the sandbox's management cluster and two managed clusters:
//! EventReports follow Services as they are created, changed and deleted; withdrawing a source
//! or a cluster deletes its reports; a kind whose CRD appears later starts matching; a hub
//! restarted after changes made while it was down converges to the truth; a failing script is
//! told in words; and a spoke cluster's own agent reports through the hub's relay.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up and assertions, not user input

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use api::labels::AGENT_SOURCES_LABEL;
use api::v1beta1::{
    ClusterType, EventReport, EventSource, SveltosCluster, agent_sources_config_map_name,
    agent_sources_key, split_collected_resources,
};
use clusters::registry::register_cluster;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, Patch,
    PatchParams, PostParams,
};
use kube::{Api, Client};
use sandbox::{Sandbox, SandboxOptions};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

const TIMEOUT: Duration = Duration::from_secs(20);
/// Namespace of the SveltosClusters, hence of their reports and source lists.
const FLEET: &str = "default";
const MANAGED: [&str; 2] = ["cluster-1", "cluster-2"];

async fn eventually<T, F, Fut>(what: &str, f: F) -> T
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = f().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// The sandbox with the CRDs installed and both managed clusters registered in `default`.
struct Env {
    sandbox: Sandbox,
    mgmt: Client,
    managed: BTreeMap<&'static str, Client>,
}

impl Env {
    async fn start() -> Env {
        init_tracing();
        let sandbox = Sandbox::start(SandboxOptions {
            dir: None,
            managed_clusters: MANAGED.len(),
            ..Default::default()
        })
        .await
        .unwrap();
        let mgmt = sandbox.cluster("mgmt").unwrap().client().unwrap();
        let crds: Api<CustomResourceDefinition> = Api::all(mgmt.clone());
        for crd in api::crd::all().unwrap() {
            crds.create(&PostParams::default(), &crd).await.unwrap();
        }
        let mut managed = BTreeMap::new();
        for name in MANAGED {
            let cluster = sandbox.cluster(name).unwrap();
            register(&mgmt, name, &cluster.kubeconfig_yaml()).await;
            let client = cluster.client().unwrap();
            create_namespace(&client, "eng").await;
            managed.insert(name, client);
        }
        Env {
            sandbox,
            mgmt,
            managed,
        }
    }

    fn cluster(&self, name: &str) -> &Client {
        &self.managed[name]
    }

    fn services(&self, cluster: &str, namespace: &str) -> Api<Service> {
        Api::namespaced(self.cluster(cluster).clone(), namespace)
    }

    fn reports(&self) -> Api<EventReport> {
        Api::namespaced(self.mgmt.clone(), FLEET)
    }

    /// Starts the hub as a task; aborting it stops the hub mid-stream.
    fn start_hub(&self) -> JoinHandle<()> {
        tokio::spawn(sveltos_events_agent::hub::run(
            self.mgmt.clone(),
            clusters::capi::watch(self.mgmt.clone(), None),
            std::future::pending(),
        ))
    }

    async fn shutdown(self, hub: JoinHandle<()>) {
        hub.abort();
        let _ = hub.await;
        self.sandbox.shutdown().await;
    }

    /// The report of `source` for `cluster`, if any.
    async fn report(&self, source: &str, cluster: &str) -> Option<EventReport> {
        let name = api::v1beta1::event_report_name(source, cluster, ClusterType::Sveltos);
        self.reports().get_opt(&name).await.unwrap()
    }

    /// Waits until the report of `source` for `cluster` matches exactly `expected`
    /// (`namespace/name`), and returns it.
    async fn wait_matching(&self, source: &str, cluster: &str, expected: &[&str]) -> EventReport {
        let mut want: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
        want.sort();
        eventually(
            &format!("report {source}/{cluster} matching {want:?}"),
            || async {
                let report = self.report(source, cluster).await?;
                (matching(&report) == want).then_some(report)
            },
        )
        .await
    }

    /// Waits until `source` has no report for `cluster`.
    async fn wait_no_report(&self, source: &str, cluster: &str) {
        eventually(&format!("no report {source}/{cluster}"), || async {
            self.report(source, cluster).await.is_none().then_some(())
        })
        .await;
    }

    /// Sets the EventSources the manager would assign to `cluster` (trigger `t-<source>`).
    async fn assign(&self, cluster: &str, sources: &[&str]) {
        let name = agent_sources_config_map_name(cluster, ClusterType::Sveltos);
        let data: BTreeMap<String, String> = sources
            .iter()
            .map(|s| (agent_sources_key(&format!("t-{s}"), s), (*s).to_owned()))
            .collect();
        let api: Api<ConfigMap> = Api::namespaced(self.mgmt.clone(), FLEET);
        match api.get_opt(&name).await.unwrap() {
            Some(mut existing) => {
                existing.data = Some(data);
                api.replace(&name, &PostParams::default(), &existing)
                    .await
                    .unwrap();
            }
            None => {
                let list = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name),
                        namespace: Some(FLEET.to_owned()),
                        labels: Some(BTreeMap::from([(
                            AGENT_SOURCES_LABEL.to_owned(),
                            "true".to_owned(),
                        )])),
                        ..Default::default()
                    },
                    data: Some(data),
                    ..Default::default()
                };
                api.create(&PostParams::default(), &list).await.unwrap();
            }
        }
    }
}

/// Sveltos' `register cluster`, labelled `env=fv`.
async fn register(mgmt: &Client, name: &str, kubeconfig: &str) {
    let labels = BTreeMap::from([("env".to_owned(), "fv".to_owned())]);
    register_cluster(mgmt, "hub-test", FLEET, name, labels, kubeconfig)
        .await
        .unwrap();
}

async fn create_namespace(client: &Client, name: &str) {
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
}

async fn create_source(mgmt: &Client, source: Value) {
    let source: EventSource = serde_json::from_value(source).unwrap();
    Api::<EventSource>::all(mgmt.clone())
        .create(&PostParams::default(), &source)
        .await
        .unwrap();
}

/// `matchingResources` of a report as sorted `namespace/name`.
fn matching(report: &EventReport) -> Vec<String> {
    let mut names: Vec<String> = report
        .spec
        .matching_resources
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r.namespace.as_deref().unwrap_or_default(),
                r.name.as_deref().unwrap_or_default()
            )
        })
        .collect();
    names.sort();
    names
}

/// The collected resources of a report, decoded.
fn collected(report: &EventReport) -> Vec<Value> {
    let bytes = report
        .spec
        .resources
        .as_ref()
        .map(|b| b.0.clone())
        .unwrap_or_default();
    split_collected_resources(&bytes)
        .into_iter()
        .map(|doc| serde_json::from_slice(doc).unwrap())
        .collect()
}

fn service(name: &str, labels: &[(&str, &str)], ports: &[i32]) -> Service {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    let ports: Vec<Value> = ports
        .iter()
        .map(|p| json!({"name": format!("p{p}"), "port": p, "protocol": "TCP"}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {"ports": ports, "selector": {"app": name}}
    }))
    .unwrap()
}

async fn create_service(api: &Api<Service>, name: &str, labels: &[(&str, &str)], ports: &[i32]) {
    api.create(&PostParams::default(), &service(name, labels, ports))
        .await
        .unwrap();
}

async fn merge_patch(api: &Api<Service>, name: &str, patch: Value) {
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

async fn delete_service(api: &Api<Service>, name: &str) {
    api.delete(name, &DeleteParams::default()).await.unwrap();
}

/// Seed 001-05 (`labelsFilters: sveltos=fv`), in v1beta1.
fn labels_source() -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
        "metadata": {"name": "sveltos-service"},
        "spec": {"collectResources": true, "resourceSelectors": [{
            "group": "", "version": "v1", "kind": "Service",
            "labelFilters": [{"key": "sveltos", "operation": "Equal", "value": "fv"}]
        }]}
    })
}

/// Seed 001-13 (Services of namespace `eng` exposing 443 or 8443, by Lua), in v1beta1.
fn https_source() -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
        "metadata": {"name": "https-service"},
        "spec": {"collectResources": true, "resourceSelectors": [{
            "group": "", "version": "v1", "kind": "Service", "namespace": "eng",
            "evaluate": r"function evaluate()
  hs = {}
  hs.matching = false
  if obj.spec.ports ~= nil then
    for _,p in pairs(obj.spec.ports) do
      if p.port == 443 or p.port == 8443 then
        hs.matching = true
      end
    end
  end
  return hs
end"
        }]}
    })
}

/// Seed 002-18 (Services with a load-balancer ingress, by Lua), in v1beta1.
fn load_balancer_source() -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
        "metadata": {"name": "load-balancer-service"},
        "spec": {"collectResources": true, "resourceSelectors": [{
            "group": "", "version": "v1", "kind": "Service",
            "evaluate": r#"function evaluate()
  hs = {}
  hs.matching = false
  hs.message = ""
  if obj.status.loadBalancer.ingress ~= nil then
    hs.matching = true
  end
  return hs
end"#
        }]}
    })
}

/// An aggregated selection: every Service of namespace `eng`, but only once there are two.
fn aggregated_source() -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
        "metadata": {"name": "eng-pair"},
        "spec": {
            "collectResources": true,
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Service"}],
            "aggregatedSelection": r#"function evaluate()
  local hs = {}
  local found = {}
  for _, r in ipairs(resources) do
    if r.metadata.namespace == "eng" then
      table.insert(found, r)
    end
  end
  if #found >= 2 then
    hs.resources = found
  end
  return hs
end"#
        }
    })
}

const ALL: [&str; 4] = [
    "sveltos-service",
    "https-service",
    "load-balancer-service",
    "eng-pair",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_sources_follow_services_in_both_clusters() {
    let env = Env::start().await;
    for source in [
        labels_source(),
        https_source(),
        load_balancer_source(),
        aggregated_source(),
    ] {
        create_source(&env.mgmt, source).await;
    }
    let c1_eng = env.services("cluster-1", "eng");
    let c1_default = env.services("cluster-1", "default");
    let c2_eng = env.services("cluster-2", "eng");
    create_service(&c1_eng, "web", &[("sveltos", "fv")], &[443]).await;
    create_service(&c1_default, "api", &[("sveltos", "fv")], &[80]).await;
    create_service(&c2_eng, "db", &[], &[8443]).await;
    for cluster in MANAGED {
        env.assign(cluster, &ALL).await;
    }
    let hub = env.start_hub();

    // The hub makes the clusters ready.
    let clusters: Api<SveltosCluster> = Api::namespaced(env.mgmt.clone(), FLEET);
    for cluster in MANAGED {
        eventually(&format!("{cluster} ready"), || async {
            let c = clusters.get(cluster).await.unwrap();
            c.status.is_some_and(|s| s.ready).then_some(())
        })
        .await;
    }

    // Initial state, each cluster on its own.
    let report = env
        .wait_matching("sveltos-service", "cluster-1", &["default/api", "eng/web"])
        .await;
    assert_eq!(report.spec.cluster_name, "cluster-1");
    assert_eq!(report.spec.event_source_name, "sveltos-service");
    let names: Vec<String> = collected(&report)
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["api", "web"]);
    env.wait_matching("sveltos-service", "cluster-2", &[]).await;
    let report = env
        .wait_matching("https-service", "cluster-1", &["eng/web"])
        .await;
    let objects = collected(&report);
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0]["spec"]["ports"][0]["port"], 443);
    assert_eq!(objects[0]["kind"], "Service");
    env.wait_matching("https-service", "cluster-2", &["eng/db"])
        .await;
    for cluster in MANAGED {
        let report = env
            .wait_matching("load-balancer-service", cluster, &[])
            .await;
        assert!(report.spec.resources.is_none(), "nothing collected");
        env.wait_matching("eng-pair", cluster, &[]).await;
    }

    // Changes: a label removed, a port changed, a load balancer's ingress set, a second
    // Service in `eng`.
    merge_patch(
        &c1_default,
        "api",
        json!({"metadata": {"labels": {"sveltos": null}}}),
    )
    .await;
    env.wait_matching("sveltos-service", "cluster-1", &["eng/web"])
        .await;
    merge_patch(
        &c1_eng,
        "web",
        json!({"spec": {"ports": [{"name": "p80", "port": 80, "protocol": "TCP"}]}}),
    )
    .await;
    env.wait_matching("https-service", "cluster-1", &[]).await;
    let ingress = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}});
    c2_eng
        .patch_status("db", &PatchParams::default(), &Patch::Merge(&ingress))
        .await
        .unwrap();
    let report = env
        .wait_matching("load-balancer-service", "cluster-2", &["eng/db"])
        .await;
    let objects = collected(&report);
    assert_eq!(
        objects[0]["status"]["loadBalancer"]["ingress"][0]["ip"],
        "203.0.113.7"
    );
    env.wait_matching("load-balancer-service", "cluster-1", &[])
        .await;
    create_service(&c2_eng, "cache", &[], &[6379]).await;
    let report = env
        .wait_matching("eng-pair", "cluster-2", &["eng/cache", "eng/db"])
        .await;
    assert_eq!(collected(&report).len(), 2);
    env.wait_matching("eng-pair", "cluster-1", &[]).await;

    // Deletions.
    delete_service(&c1_eng, "web").await;
    env.wait_matching("sveltos-service", "cluster-1", &[]).await;
    delete_service(&c2_eng, "db").await;
    env.wait_matching("https-service", "cluster-2", &[]).await;
    env.wait_matching("load-balancer-service", "cluster-2", &[])
        .await;
    env.wait_matching("eng-pair", "cluster-2", &[]).await;

    // Exactly one report per (source, cluster).
    let names: BTreeSet<String> = env
        .reports()
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.metadata.name.unwrap())
        .collect();
    let expected: BTreeSet<String> = MANAGED
        .iter()
        .flat_map(|c| ALL.iter().map(move |s| format!("sveltos--{s}--{c}")))
        .collect();
    assert_eq!(names, expected);
    env.shutdown(hub).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdrawn_sources_and_clusters_lose_their_reports() {
    let env = Env::start().await;
    create_source(&env.mgmt, labels_source()).await;
    create_source(&env.mgmt, https_source()).await;
    for cluster in MANAGED {
        let eng = env.services(cluster, "eng");
        create_service(&eng, "web", &[("sveltos", "fv")], &[443]).await;
        env.assign(cluster, &["sveltos-service", "https-service"])
            .await;
    }
    let hub = env.start_hub();
    for cluster in MANAGED {
        env.wait_matching("sveltos-service", cluster, &["eng/web"])
            .await;
        env.wait_matching("https-service", cluster, &["eng/web"])
            .await;
    }

    // Changing an EventSource re-evaluates it: https-service now wants port 80.
    let sources: Api<EventSource> = Api::all(env.mgmt.clone());
    let mut https = sources.get("https-service").await.unwrap();
    let script = https.spec.resource_selectors[0]
        .evaluate
        .replace("p.port == 443", "p.port == 80");
    https.spec.resource_selectors[0].evaluate = script;
    sources
        .replace("https-service", &PostParams::default(), &https)
        .await
        .unwrap();
    for cluster in MANAGED {
        env.wait_matching("https-service", cluster, &[]).await;
    }

    // The manager withdraws https-service from cluster-1 only.
    env.assign("cluster-1", &["sveltos-service"]).await;
    env.wait_no_report("https-service", "cluster-1").await;
    assert!(env.report("https-service", "cluster-2").await.is_some());
    // Changes keep being reported for what is still assigned.
    merge_patch(
        &env.services("cluster-1", "eng"),
        "web",
        json!({"metadata": {"labels": {"sveltos": "other"}}}),
    )
    .await;
    env.wait_matching("sveltos-service", "cluster-1", &[]).await;

    // cluster-2 is deregistered: all its reports go, cluster-1's stay.
    Api::<SveltosCluster>::namespaced(env.mgmt.clone(), FLEET)
        .delete("cluster-2", &DeleteParams::default())
        .await
        .unwrap();
    env.wait_no_report("sveltos-service", "cluster-2").await;
    env.wait_no_report("https-service", "cluster-2").await;
    assert!(env.report("sveltos-service", "cluster-1").await.is_some());

    // The whole list of cluster-1 removed: its last report goes.
    Api::<ConfigMap>::namespaced(env.mgmt.clone(), FLEET)
        .delete(
            &agent_sources_config_map_name("cluster-1", ClusterType::Sveltos),
            &DeleteParams::default(),
        )
        .await
        .unwrap();
    env.wait_no_report("sveltos-service", "cluster-1").await;
    let left = env.reports().list(&ListParams::default()).await.unwrap();
    assert!(left.items.is_empty(), "reports left: {left:?}");
    env.shutdown(hub).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_matches_once_its_crd_is_created() {
    let env = Env::start().await;
    create_source(
        &env.mgmt,
        json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
            "metadata": {"name": "big-widgets"},
            "spec": {"resourceSelectors": [{
                "group": "example.com", "version": "v1", "kind": "Widget",
                "evaluate": "function evaluate() local hs = {} hs.matching = obj.spec.size > 10 return hs end"
            }]}
        }),
    )
    .await;
    env.assign("cluster-1", &["big-widgets"]).await;
    let hub = env.start_hub();
    // The kind is not served: the source selects nothing, and says so.
    env.wait_matching("big-widgets", "cluster-1", &[]).await;

    let managed = env.cluster("cluster-1");
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(managed.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    let widgets: Api<DynamicObject> = Api::namespaced_with(managed.clone(), "eng", &resource);
    let widget = |name: &str, size: i64| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "eng"},
            "spec": {"size": size}
        }))
        .unwrap()
    };
    // The CRD may take a moment to be served.
    eventually("Widgets to be served", || async {
        widgets
            .create(&PostParams::default(), &widget("big", 42))
            .await
            .ok()
    })
    .await;
    widgets
        .create(&PostParams::default(), &widget("small", 3))
        .await
        .unwrap();
    let report = env
        .wait_matching("big-widgets", "cluster-1", &["eng/big"])
        .await;
    let reference = &report.spec.matching_resources[0];
    assert_eq!(reference.kind.as_deref(), Some("Widget"));
    assert_eq!(reference.api_version.as_deref(), Some("example.com/v1"));
    widgets
        .patch(
            "small",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 11}})),
        )
        .await
        .unwrap();
    env.wait_matching("big-widgets", "cluster-1", &["eng/big", "eng/small"])
        .await;
    env.shutdown(hub).await;
}

/// What `https-service` and `sveltos-service` should report for `cluster`, computed from the
/// Services in the cluster.
async fn truth(env: &Env, cluster: &str) -> BTreeMap<&'static str, Vec<String>> {
    let all = Api::<Service>::all(env.cluster(cluster).clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut labelled = Vec::new();
    let mut https = Vec::new();
    for service in all {
        let namespace = service.metadata.namespace.clone().unwrap();
        let id = format!("{namespace}/{}", service.metadata.name.clone().unwrap());
        let labels = service.metadata.labels.clone().unwrap_or_default();
        if labels.get("sveltos").map(String::as_str) == Some("fv") {
            labelled.push(id.clone());
        }
        let ports = service.spec.and_then(|s| s.ports).unwrap_or_default();
        if namespace == "eng" && ports.iter().any(|p| p.port == 443 || p.port == 8443) {
            https.push(id);
        }
    }
    labelled.sort();
    https.sort();
    BTreeMap::from([("sveltos-service", labelled), ("https-service", https)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_hub_converges_without_duplicates() {
    let env = Env::start().await;
    create_source(&env.mgmt, labels_source()).await;
    create_source(&env.mgmt, https_source()).await;
    for cluster in MANAGED {
        env.assign(cluster, &["sveltos-service", "https-service"])
            .await;
    }
    let first = env.start_hub();
    for cluster in MANAGED {
        env.wait_matching("sveltos-service", cluster, &[]).await;
    }
    // A stream of changes, with the hub stopped in the middle of it.
    for i in 0..20 {
        for cluster in MANAGED {
            let eng = env.services(cluster, "eng");
            let port = if i % 2 == 0 { 443 } else { 80 };
            create_service(&eng, &format!("s{i}"), &[("sveltos", "fv")], &[port]).await;
        }
        if i == 10 {
            first.abort();
            let _ = first.await;
            break;
        }
    }
    // While it is down: deletions, relabelling, port changes, creations, and https-service
    // withdrawn from cluster-2.
    for cluster in MANAGED {
        let eng = env.services(cluster, "eng");
        for i in [0, 1, 2] {
            delete_service(&eng, &format!("s{i}")).await;
        }
        for i in [3, 4] {
            merge_patch(
                &eng,
                &format!("s{i}"),
                json!({"metadata": {"labels": {"sveltos": null}}}),
            )
            .await;
        }
        merge_patch(
            &eng,
            "s5",
            json!({"spec": {"ports": [{"name": "p8443", "port": 8443, "protocol": "TCP"}]}}),
        )
        .await;
        create_service(&eng, "late", &[("sveltos", "fv")], &[443]).await;
        create_service(
            &env.services(cluster, "default"),
            "plain",
            &[("sveltos", "fv")],
            &[443],
        )
        .await;
    }
    env.assign("cluster-2", &["sveltos-service"]).await;

    let second = env.start_hub();
    for cluster in MANAGED {
        let truth = truth(&env, cluster).await;
        for (source, expected) in &truth {
            if (cluster, *source) == ("cluster-2", "https-service") {
                continue;
            }
            let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
            env.wait_matching(source, cluster, &expected).await;
        }
    }
    env.wait_no_report("https-service", "cluster-2").await;
    let reports = env.reports().list(&ListParams::default()).await.unwrap();
    let names: Vec<String> = reports
        .iter()
        .map(|r| r.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        names.iter().collect::<BTreeSet<_>>(),
        BTreeSet::from([
            &"sveltos--https-service--cluster-1".to_owned(),
            &"sveltos--sveltos-service--cluster-1".to_owned(),
            &"sveltos--sveltos-service--cluster-2".to_owned(),
        ])
    );
    assert_eq!(
        names.len(),
        3,
        "one report per (source, cluster): {names:?}"
    );
    for report in &reports {
        let listed = matching(report);
        let unique: BTreeSet<&String> = listed.iter().collect();
        assert_eq!(unique.len(), listed.len(), "duplicates in {listed:?}");
        assert_eq!(collected(report).len(), listed.len());
    }
    env.shutdown(second).await;
}

/// A source whose script raises an error for Services labelled `broken`.
fn strict_source() -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
        "metadata": {"name": "strict"},
        "spec": {"resourceSelectors": [{
            "group": "", "version": "v1", "kind": "Service", "namespace": "eng",
            "evaluate": "function evaluate() if obj.metadata.labels and obj.metadata.labels.broken then error('cannot judge this one') end return {matching = true} end"
        }]}
    })
}

/// `status.agentFailureMessage` of a report, once the report exists.
async fn agent_failure(env: &Env, source: &str, cluster: &str) -> Option<Option<String>> {
    let report = env.report(source, cluster).await?;
    Some(report.status.and_then(|s| s.agent_failure_message))
}

/// Waits until the report of `source` for `cluster` exists and carries no failure.
async fn wait_failure_cleared(env: &Env, source: &str, cluster: &str) {
    eventually("the failure to be cleared", || async {
        agent_failure(env, source, cluster)
            .await
            .and_then(|failure| failure.is_none().then_some(()))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_script_is_told_in_words_and_spares_the_rest() {
    let env = Env::start().await;
    create_source(&env.mgmt, strict_source()).await;
    create_source(&env.mgmt, labels_source()).await;
    env.assign("cluster-1", &["strict", "sveltos-service"])
        .await;
    let hub = env.start_hub();
    let services = env.services("cluster-1", "eng");
    create_service(&services, "good", &[("sveltos", "fv")], &[80]).await;
    env.wait_matching("strict", "cluster-1", &["eng/good"])
        .await;

    create_service(
        &services,
        "bad",
        &[("broken", "yes"), ("sveltos", "fv")],
        &[80],
    )
    .await;
    let message = eventually("the failure in the report's status", || async {
        agent_failure(&env, "strict", "cluster-1").await.flatten()
    })
    .await;
    assert!(message.contains("EventSource strict"), "{message}");
    assert!(message.contains("Service eng/bad"), "{message}");
    assert!(message.contains("cannot judge this one"), "{message}");
    // The last good result stays; the other source goes on.
    env.wait_matching("strict", "cluster-1", &["eng/good"])
        .await;
    env.wait_matching("sveltos-service", "cluster-1", &["eng/bad", "eng/good"])
        .await;
    // `kubectl describe eventsource strict` shows it too.
    let events: Api<DynamicObject> = Api::all_with(
        env.mgmt.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk("events.k8s.io", "v1", "Event")),
    );
    eventually("a Warning Event on the EventSource", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|event| {
                event.data["reason"] == "EvaluationFailed"
                    && event.data["regarding"]["name"] == "strict"
                    && event.data["regarding"]["kind"] == "EventSource"
                    && event.data["note"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("cluster default/cluster-1: "))
            })
            .then_some(())
    })
    .await;

    // Repairing the object clears the failure and the result catches up.
    merge_patch(
        &services,
        "bad",
        json!({"metadata": {"labels": {"broken": null}}}),
    )
    .await;
    env.wait_matching("strict", "cluster-1", &["eng/bad", "eng/good"])
        .await;
    wait_failure_cleared(&env, "strict", "cluster-1").await;
    env.shutdown(hub).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_too_large_to_store_is_told_and_keeps_its_last_state() {
    let env = Env::start().await;
    create_source(&env.mgmt, labels_source()).await;
    env.assign("cluster-1", &["sveltos-service"]).await;
    let hub = env.start_hub();
    let services = env.services("cluster-1", "eng");
    // Each Service carries 200 KB of annotation; the report collects them, base64 encoded.
    let big = |name: &str| {
        let mut service = service(name, &[("sveltos", "fv")], &[80]);
        service.metadata.annotations =
            Some(BTreeMap::from([("blob".to_owned(), "x".repeat(200_000))]));
        service
    };
    let created = |name: &str| {
        let (services, service) = (services.clone(), big(name));
        async move {
            services
                .create(&PostParams::default(), &service)
                .await
                .unwrap();
        }
    };
    created("big-0").await;
    env.wait_matching("sveltos-service", "cluster-1", &["eng/big-0"])
        .await;

    // Seven more make a report of about 2 MB, more than etcd stores.
    for i in 1..8 {
        created(&format!("big-{i}")).await;
    }
    let message = eventually("the failure in the report's status", || async {
        agent_failure(&env, "sveltos-service", "cluster-1")
            .await
            .flatten()
    })
    .await;
    assert!(message.contains(" matching objects is "), "{message}");
    assert!(
        message.contains("more than the API server stores"),
        "{message}"
    );
    assert!(message.contains("collectResources"), "{message}");
    // The last state that fit stays (the watch may have brought a few Services at a time).
    let report = env.report("sveltos-service", "cluster-1").await.unwrap();
    let listed = matching(&report);
    assert!(
        listed.contains(&"eng/big-0".to_owned()) && listed.len() < 8,
        "{listed:?}"
    );

    // Fewer matches fit again: written, and the failure cleared.
    for i in 2..8 {
        delete_service(&services, &format!("big-{i}")).await;
    }
    env.wait_matching("sveltos-service", "cluster-1", &["eng/big-0", "eng/big-1"])
        .await;
    wait_failure_cleared(&env, "sveltos-service", "cluster-1").await;
    env.shutdown(hub).await;
}

/// Collects the Secrets of namespace `eng`.
fn secrets_source() -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
        "metadata": {"name": "eng-secrets"},
        "spec": {"collectResources": true, "resourceSelectors": [{
            "group": "", "version": "v1", "kind": "Secret", "namespace": "eng"
        }]}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoke_cluster_evaluates_itself_and_the_hub_relays_its_reports() {
    let env = Env::start().await;
    let clusters: Api<SveltosCluster> = Api::namespaced(env.mgmt.clone(), FLEET);
    let spoke = json!({"metadata": {"annotations": {"sveltos-events.io/agent-mode": "spoke"}}});
    clusters
        .patch("cluster-2", &PatchParams::default(), &Patch::Merge(&spoke))
        .await
        .unwrap();
    let trigger: api::v1beta1::EventTrigger = serde_json::from_value(json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventTrigger",
        "metadata": {"name": "t-sveltos-service"},
        "spec": {"sourceClusterSelector": {"matchLabels": {"env": "fv"}}, "eventSourceName": "sveltos-service"}
    }))
    .unwrap();
    let trigger = Api::<api::v1beta1::EventTrigger>::all(env.mgmt.clone())
        .create(&PostParams::default(), &trigger)
        .await
        .unwrap();
    create_source(&env.mgmt, labels_source()).await;
    create_source(&env.mgmt, secrets_source()).await;
    env.assign("cluster-2", &["sveltos-service", "eng-secrets"])
        .await;
    let hub = env.start_hub();
    let managed = env.cluster("cluster-2").clone();
    let agent = tokio::spawn(sveltos_events_agent::spoke::run(
        managed.clone(),
        "cluster-2".into(),
        std::future::pending(),
    ));

    // The hub copies the sources in, with Sveltos' annotation and the trigger as owner.
    let copies: Api<EventSource> = Api::all(managed.clone());
    let copy = eventually("the EventSource copy in the spoke cluster", || async {
        copies.get_opt("sveltos-service").await.ok().flatten()
    })
    .await;
    let annotations = copy.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("projectsveltos.io/deployed-by-sveltos")
            .map(String::as_str),
        Some("true")
    );
    let owners = copy.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(owners[0].kind, "EventTrigger");
    assert_eq!(Some(&owners[0].uid), trigger.metadata.uid.as_ref());
    assert_eq!(copy.spec, {
        let source: EventSource = serde_json::from_value(labels_source()).unwrap();
        source.spec
    });

    // The spoke's own agent writes the report locally; the hub relays it.
    let services = env.services("cluster-2", "eng");
    create_service(&services, "web", &[("sveltos", "fv")], &[80]).await;
    let relayed = env
        .wait_matching("sveltos-service", "cluster-2", &["eng/web"])
        .await;
    assert_eq!(relayed.spec.cluster_name, "cluster-2");
    assert_eq!(relayed.spec.cluster_namespace, FLEET);
    let local: Api<EventReport> = Api::namespaced(managed.clone(), "projectsveltos");
    let own = local.get("sveltos-service").await.unwrap();
    assert_eq!(matching(&own), vec!["eng/web".to_owned()]);
    assert_eq!(own.spec.cluster_name, "");
    assert_eq!(collected(&relayed), collected(&own));

    // A collected Secret travels without its data, which follows in the companion Secret.
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": {"name": "token", "namespace": "eng"},
        "stringData": {"token": "s3cret"}
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(managed.clone(), "eng")
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let report = env
        .wait_matching("eng-secrets", "cluster-2", &["eng/token"])
        .await;
    let shown = collected(&report);
    assert!(shown[0].get("data").is_none(), "{shown:?}");
    let digest = report.metadata.annotations.clone().unwrap_or_default()
        [api::secret_data::SECRET_DATA_ANNOTATION]
        .clone();
    let companions: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(env.mgmt.clone(), FLEET);
    let companion = companions
        .get(&api::secret_data::companion_name(
            report.metadata.name.as_deref().unwrap(),
        ))
        .await
        .unwrap();
    let data: BTreeMap<String, Vec<u8>> = companion
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    assert_eq!(api::secret_data::data_digest(&data), digest);
    assert!(
        data.values()
            .any(|v| String::from_utf8_lossy(v).contains("czNjcmV0")),
        "the companion holds the Secret's data"
    );

    // Changes follow; a withdrawn source loses its copy, its local report and the relayed one.
    delete_service(&services, "web").await;
    env.wait_matching("sveltos-service", "cluster-2", &[]).await;
    env.assign("cluster-2", &["eng-secrets"]).await;
    env.wait_no_report("sveltos-service", "cluster-2").await;
    eventually("the copy and the local report to go", || async {
        let copy = copies.get_opt("sveltos-service").await.unwrap();
        let own = local.get_opt("sveltos-service").await.unwrap();
        (copy.is_none() && own.is_none()).then_some(())
    })
    .await;
    assert!(env.report("eng-secrets", "cluster-2").await.is_some());
    agent.abort();
    env.shutdown(hub).await;
}

/// A cluster's loop that falls behind its watches holds them back (the queue is bounded) and
/// still sees every change once it catches up.
#[tokio::test]
async fn a_watch_ahead_of_its_loop_waits_and_loses_no_change() {
    use clusters::objects::{EVENT_QUEUE, KindEvent, event_queue, watch_kind};
    let env = Env::start().await;
    let client = env.managed[MANAGED[0]].clone();
    let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "configmaps");
    let (events, mut incoming) = event_queue::<sveltos_events_agent::kept::Kept>();
    let task = watch_kind(client.clone(), gvk, resource, events);
    let listed = incoming.recv().await.unwrap();
    assert!(matches!(listed, KindEvent::Listed(..)), "{listed:?}");

    // Far more changes than the queue holds, made while nobody reads it.
    let created = EVENT_QUEUE * 2 + 100;
    let maps: Api<ConfigMap> = Api::namespaced(client, "default");
    for i in 0..created {
        let map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("m{i:05}")),
                ..Default::default()
            },
            ..Default::default()
        };
        maps.create(&PostParams::default(), &map).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        incoming.len() <= EVENT_QUEUE,
        "{} events queued",
        incoming.len()
    );

    let mut seen = BTreeSet::new();
    while seen.len() < created {
        let event = tokio::time::timeout(TIMEOUT, incoming.recv())
            .await
            .unwrap_or_else(|_| panic!("{} of {created} changes arrived", seen.len()))
            .unwrap();
        match event {
            KindEvent::Applied(_, (_, name), _) if name.starts_with('m') => {
                seen.insert(name);
            }
            KindEvent::Listed(_, all) => {
                seen.extend(
                    all.into_keys()
                        .map(|(_, n)| n)
                        .filter(|n| n.starts_with('m')),
                );
            }
            _ => {}
        }
    }
    task.abort();
}
