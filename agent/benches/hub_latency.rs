//! End-to-end latency of the hub: a Service created or relabelled in a managed cluster, until
//! the EventReport in the management cluster says so (seen through a watch of EventReports,
//! not by polling). Everything runs in this process: the sandbox's API servers, the hub, and
//! the driver.
//!
//! `HUB_BENCH_EVENTS` (default 1000) sequential events per run; `HUB_BENCH_CLUSTERS` (default
//! `1,10`) the managed-cluster counts to run with, one sandbox each. Events go round-robin over
//! the clusters; each cluster has 20 Services, created by the first events (label
//! `bench=on`), then relabelled `on`/`off` in turn. The EventSource's Lua matches `bench=on`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark driver, not user input

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use api::labels::AGENT_SOURCES_LABEL;
use api::v1beta1::{
    ClusterType, EventReport, EventSource, agent_sources_config_map_name, agent_sources_key,
    event_report_name,
};
use clusters::registry::register_cluster;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use sandbox::{Sandbox, SandboxOptions};
use serde_json::json;

const FLEET: &str = "default";
const SOURCE: &str = "bench-services";
const SERVICES_PER_CLUSTER: usize = 20;
/// A single event taking longer than this aborts the benchmark.
const EVENT_TIMEOUT: Duration = Duration::from_secs(20);
/// Linux reports utime/stime in USER_HZ ticks, 100 per second on every architecture Rust
/// targets (`sysconf(_SC_CLK_TCK)` needs libc and unsafe code, which the workspace forbids).
const TICKS_PER_SECOND: f64 = 100.0;

const SCRIPT: &str = r#"function evaluate()
  local hs = {}
  hs.matching = obj.metadata.labels ~= nil and obj.metadata.labels.bench == "on"
  return hs
end"#;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// CPU time (user + system) this process has used, in milliseconds.
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let Some((_, after)) = stat.rsplit_once(')') else {
        return f64::NAN;
    };
    // After the command comes field 3 (state); utime and stime are fields 14 and 15.
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) * 1000.0 / TICKS_PER_SECOND
}

async fn register(mgmt: &Client, name: &str, kubeconfig: &str) {
    register_cluster(mgmt, "bench", FLEET, name, BTreeMap::new(), kubeconfig)
        .await
        .unwrap();
    let list = ConfigMap {
        metadata: ObjectMeta {
            name: Some(agent_sources_config_map_name(name, ClusterType::Sveltos)),
            namespace: Some(FLEET.to_owned()),
            labels: Some(BTreeMap::from([(
                AGENT_SOURCES_LABEL.to_owned(),
                "true".to_owned(),
            )])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            agent_sources_key("bench", SOURCE),
            SOURCE.to_owned(),
        )])),
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(mgmt.clone(), FLEET)
        .create(&PostParams::default(), &list)
        .await
        .unwrap();
}

/// `namespace/name` of every matching resource of a report.
fn matching(report: &EventReport) -> BTreeSet<String> {
    report
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
        .collect()
}

/// The EventReports as the watch has shown them so far, by name.
struct Reports<S> {
    stream: S,
    seen: BTreeMap<String, BTreeSet<String>>,
}

impl<S> Reports<S>
where
    S: futures_util::Stream<Item = Result<watcher::Event<EventReport>, watcher::Error>> + Unpin,
{
    /// Reads the watch until `done` holds for the report `name`.
    async fn until(&mut self, name: &str, done: impl Fn(Option<&BTreeSet<String>>) -> bool) {
        let wait = async {
            while !done(self.seen.get(name)) {
                match self.stream.next().await {
                    Some(Ok(watcher::Event::Apply(report) | watcher::Event::InitApply(report))) => {
                        let key = report.metadata.name.clone().unwrap_or_default();
                        self.seen.insert(key, matching(&report));
                    }
                    Some(Ok(watcher::Event::Delete(report))) => {
                        self.seen
                            .remove(&report.metadata.name.clone().unwrap_or_default());
                    }
                    Some(Ok(watcher::Event::Init | watcher::Event::InitDone)) => {}
                    Some(Err(error)) => eprintln!("watch error (retrying): {error}"),
                    None => panic!("the EventReport watch ended"),
                }
            }
        };
        tokio::time::timeout(EVENT_TIMEOUT, wait)
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for report {name}"));
    }
}

async fn run(clusters: usize, events: usize) {
    let sandbox = Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: clusters,
        ..Default::default()
    })
    .await
    .unwrap();
    let mgmt = sandbox.cluster("mgmt").unwrap().client().unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(mgmt.clone());
    for crd in api::crd::all().unwrap() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    let source: EventSource = serde_json::from_value(json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
        "metadata": {"name": SOURCE},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Service", "evaluate": SCRIPT}]}
    }))
    .unwrap();
    Api::<EventSource>::all(mgmt.clone())
        .create(&PostParams::default(), &source)
        .await
        .unwrap();
    let names: Vec<String> = (1..=clusters).map(|i| format!("cluster-{i}")).collect();
    let mut services = Vec::new();
    for name in &names {
        let cluster = sandbox.cluster(name).unwrap();
        register(&mgmt, name, &cluster.kubeconfig_yaml()).await;
        services.push(Api::<Service>::namespaced(
            cluster.client().unwrap(),
            "default",
        ));
    }
    let hub = tokio::spawn(sveltos_events_agent::hub::run(
        mgmt.clone(),
        clusters::capi::watch(mgmt.clone(), None),
        std::future::pending(),
    ));
    let reports_api: Api<EventReport> = Api::namespaced(mgmt.clone(), FLEET);
    let mut reports = Reports {
        stream: watcher(reports_api, watcher::Config::default())
            .default_backoff()
            .boxed(),
        seen: BTreeMap::new(),
    };
    // Every cluster served and reported once before measuring.
    for name in &names {
        reports
            .until(
                &event_report_name(SOURCE, name, ClusterType::Sveltos),
                |r| r.is_some(),
            )
            .await;
    }

    // Label state per (cluster, service): None = not created yet.
    let mut state: Vec<Vec<Option<bool>>> = vec![vec![None; SERVICES_PER_CLUSTER]; clusters];
    let mut latencies = Vec::with_capacity(events);
    let cpu_before = cpu_ms();
    let started = Instant::now();
    for i in 0..events {
        let c = i % clusters;
        let s = (i / clusters) % SERVICES_PER_CLUSTER;
        let service = format!("s{s}");
        let on = !state[c][s].unwrap_or(false);
        let value = if on { "on" } else { "off" };
        let report = event_report_name(SOURCE, &names[c], ClusterType::Sveltos);
        let key = format!("default/{service}");
        let t0 = Instant::now();
        if state[c][s].is_none() {
            let object: Service = serde_json::from_value(json!({
                "metadata": {"name": service, "labels": {"bench": value}},
                "spec": {"ports": [{"port": 80}]}
            }))
            .unwrap();
            services[c]
                .create(&PostParams::default(), &object)
                .await
                .unwrap();
        } else {
            let patch = json!({"metadata": {"labels": {"bench": value}}});
            services[c]
                .patch(&service, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
        reports
            .until(&report, |r| r.is_some_and(|m| m.contains(&key) == on))
            .await;
        latencies.push(t0.elapsed());
        state[c][s] = Some(on);
    }
    let wall = started.elapsed();
    let cpu = cpu_ms() - cpu_before;

    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| {
        let index = ((q * events as f64).ceil() as usize).clamp(1, events) - 1;
        ms(latencies[index])
    };
    println!(
        "hub_latency clusters={clusters} events={events}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, \
         {:.0} events/s, CPU {:.2} ms/event (whole process: hub + sandbox API servers + driver)",
        at(0.50),
        at(0.99),
        ms(*latencies.last().unwrap()),
        events as f64 / wall.as_secs_f64(),
        cpu / events as f64,
    );
    hub.abort();
    let _ = hub.await;
    drop(reports);
    sandbox.shutdown().await;
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let events: usize = env_or("HUB_BENCH_EVENTS", 1000).max(1);
    let clusters = std::env::var("HUB_BENCH_CLUSTERS").unwrap_or_else(|_| "1,10".to_owned());
    for count in clusters
        .split(',')
        .filter_map(|c| c.trim().parse::<usize>().ok())
    {
        run(count.max(1), events).await;
    }
}
