//! Fleet convergence with the real binaries as separate processes, as issue 22 measures it:
//! the sandbox process serving the management cluster and `FLEET_CLUSTERS` managed clusters,
//! each holding `FLEET_SERVICES` matching Services, the CRDs and controllers put there by
//! `install`, every cluster registered; then the agent (hub mode) and the manager start as
//! their Deployments say, and the clock runs until every cluster holds its add-ons. Printed:
//! the convergence time, each process's peak RSS (VmHWM) and CPU time, for a `oneForEvent` trigger
//! (a NetworkPolicy per Service, examples/network-policy) and an aggregated one (an Ingress
//! with a path per Service, examples/ingress); for the first, also the event -> add-on
//! latency of Services created every 200 ms in the busy fleet while it converges, split at
//! the event's EventReport (the agent), its ClusterProfile (the manager) and its add-on (the
//! deployer), each as a watch sees it.
//!
//! The binaries are the release ones next to this bench:
//!
//!   cargo build --release --workspace --bins
//!   cargo bench -p sveltos-events-e2e --bench fleet
//!   FLEET_CLUSTERS=100 FLEET_SERVICES=100 FLEET_FORMS=one,aggregated
//!   FLEET_TIMEOUT_SECONDS=600 (the defaults)
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark set-up

use sveltos_events_e2e as common;

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent::observe::{bench_setting, millis, percentile};
use api::labels::{CLUSTER_NAME_LABEL, EVENT_REPORT_CLUSTER_NAME_LABEL, RESOURCE_NAME_LABEL};
use api::v1beta1::{ClusterProfile, ClusterType, EventReport, ReportNames};
use controller::identity::{ClusterRef, Identity, generated_name, identity_labels};
use futures_util::{StreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::sync::Notify;

/// How many requests the bench keeps in flight while it fills the fleet.
const IN_FLIGHT: usize = 16;

/// Which add-ons each Service causes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// One NetworkPolicy per Service.
    OneForEvent,
    /// One Ingress per cluster, with a path per Service.
    Aggregated,
}

async fn client(dir: &Path, cluster: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(dir.join(format!("{cluster}.kubeconfig"))).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Creates `object` (typed by `api`), once: the fleet starts empty.
async fn create<K>(api: &Api<K>, object: serde_json::Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(object).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

fn service(name: &str, namespace: &str, port: u16, labelled: bool) -> serde_json::Value {
    let labels = if labelled {
        json!({"sveltos": "fv"})
    } else {
        json!({})
    };
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"selector": {"app": name}, "ports": [{"port": port, "protocol": "TCP"}]}})
}

/// Fills one managed cluster and registers it (`default/<name>`, `env=fv`); its client.
async fn fill(
    dir: &Path,
    mgmt: &kube::Client,
    name: &str,
    form: Form,
    services: usize,
) -> kube::Client {
    let managed = client(dir, name).await;
    let (namespace, port) = match form {
        Form::OneForEvent => ("default", 80),
        Form::Aggregated => {
            let namespaces: Api<Namespace> = Api::all(managed.clone());
            create(&namespaces, json!({"metadata": {"name": "eng"}})).await;
            ("eng", 443)
        }
    };
    let api: Api<Service> = Api::namespaced(managed.clone(), namespace);
    for i in 0..services {
        let labelled = form == Form::OneForEvent;
        create(
            &api,
            service(&format!("svc-{i}"), namespace, port, labelled),
        )
        .await;
    }
    let kubeconfig = std::fs::read_to_string(dir.join(format!("{name}.kubeconfig"))).unwrap();
    let labels = BTreeMap::from([("env".to_owned(), "fv".to_owned())]);
    clusters::registry::register_cluster(mgmt, "fleet", "default", name, labels, &kubeconfig)
        .await
        .unwrap();
    managed
}

/// How long after `started` the management cluster first held an EventReport of every one of
/// `clusters` (the agent's first sweep), from one watch of report metadata.
async fn every_cluster_reported(
    mgmt: kube::Client,
    clusters: usize,
    started: Instant,
) -> Option<Duration> {
    let reports: Api<kube::core::PartialObjectMeta<EventReport>> = Api::all(mgmt);
    let mut seen = std::collections::HashSet::new();
    let events = watcher(reports, watcher::Config::default());
    let mut reports = std::pin::pin!(events.default_backoff().applied_objects());
    while let Some(report) = reports.next().await {
        // One cluster may hold reports of several sources: count clusters.
        let cluster = report.ok().and_then(|r| {
            let name = r.metadata.labels?.remove(EVENT_REPORT_CLUSTER_NAME_LABEL)?;
            Some((r.metadata.namespace, name))
        });
        seen.extend(cluster);
        if seen.len() >= clusters {
            return Some(started.elapsed());
        }
    }
    None
}

/// Whether `managed` holds every add-on its `services` Services cause.
async fn converged(managed: &kube::Client, form: Form, services: usize) -> bool {
    let managed = managed.clone();
    match form {
        Form::OneForEvent => {
            let policies: Api<NetworkPolicy> = Api::namespaced(managed, "default");
            let Ok(list) = policies.list(&ListParams::default()).await else {
                return false;
            };
            let fleet = list.items.iter().filter(|p| {
                let name = p.metadata.name.as_deref().unwrap_or_default();
                name.starts_with("front-svc-")
            });
            fleet.count() >= services
        }
        Form::Aggregated => {
            let ingresses: Api<Ingress> = Api::namespaced(managed, "default");
            let paths = ingresses
                .get_opt("ingress")
                .await
                .ok()
                .flatten()
                .and_then(|ingress| ingress.spec?.rules?.first()?.http.clone())
                .map_or(0, |http| http.paths.len());
            paths >= services
        }
    }
}

/// How often a probe event is created while the fleet converges: often enough that the p99
/// of a 100-cluster run (about 80 events) is not its largest sample, rarely enough that the
/// probes add little to the fleet's load (a Service each).
const PROBE_EVERY: Duration = Duration::from_millis(200);

/// The clusters probe events go to.
const PROBED: usize = 10;

/// Which object of a probe event a watch saw.
#[derive(Clone, Copy)]
enum Hop {
    /// Its cluster's EventReport listing the Service.
    Report = 0,
    /// Its ClusterProfile.
    Profile = 1,
    /// Its NetworkPolicy in the managed cluster.
    AddOn = 2,
}

/// When each probe's objects were first seen, by probe name, and the probes waiting. The
/// watches are shared by every probe: one per kind (and per probed cluster), not three per
/// probe, so that probes under way add nothing to the load they measure, however many.
#[derive(Default)]
struct Sightings {
    seen: Mutex<HashMap<String, [Option<Instant>; 3]>>,
    waiting: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Sightings {
    /// Notes that `hop` of probe `name` was seen now (the first sighting counts).
    fn saw(&self, hop: Hop, name: &str) {
        let at = Instant::now();
        let mut seen = self.seen.lock().unwrap();
        let times = seen.entry(name.to_owned()).or_default();
        times[hop as usize].get_or_insert(at);
        if let Some(waiting) = self.waiting.lock().unwrap().get(name) {
            waiting.notify_one();
        }
    }

    /// Waits until every hop of probe `name` was seen; their times.
    async fn all(&self, name: &str) -> [Instant; 3] {
        let notify = Arc::clone(
            self.waiting
                .lock()
                .unwrap()
                .entry(name.to_owned())
                .or_default(),
        );
        loop {
            let times = self.seen.lock().unwrap().get(name).copied();
            if let Some([Some(report), Some(profile), Some(add_on)]) = times {
                self.waiting.lock().unwrap().remove(name);
                return [report, profile, add_on];
            }
            notify.notified().await;
        }
    }
}

/// Feeds `sightings` with `hop` of the probes that the objects of `api` (as `config`
/// selects them) name, as `names` reads them.
fn watch_probes<K>(
    api: Api<K>,
    config: watcher::Config,
    hop: Hop,
    sightings: Arc<Sightings>,
    names: impl Fn(&K) -> Vec<String> + Send + 'static,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    tokio::spawn(async move {
        let stream = watcher(api, config).default_backoff().applied_objects();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            for name in event.iter().flat_map(&names) {
                if name.starts_with("probe-") {
                    sightings.saw(hop, &name);
                }
            }
        }
    });
}

/// Event -> add-on latency in the busy fleet: every [`PROBE_EVERY`] a labelled Service, round
/// the first [`PROBED`] clusters, each timed until its NetworkPolicy exists, until `done`;
/// then the probes under way are awaited (for `limit` at most). Open loop, so the fleet gets
/// the same events however fast it answers. The first is created once the fleet is busy,
/// when the first add-on is there: one created while the processes start is part of the
/// initial load, which the convergence time measures.
async fn probe(
    dir: PathBuf,
    clusters: usize,
    done: Arc<AtomicBool>,
    limit: Duration,
) -> Vec<Probe> {
    let mgmt = client(&dir, "mgmt").await;
    let sightings = Arc::new(Sightings::default());
    let probed: Vec<String> = (1..=clusters.min(PROBED))
        .map(|n| format!("cluster-{n}"))
        .collect();
    let within = |label: &str| format!("{label} in ({})", probed.join(","));
    let resource = kube::core::ApiResource::erase::<EventReport>(&());
    watch_probes(
        Api::<ReportNames>::namespaced_with(mgmt.clone(), "default", &resource),
        watcher::Config::default().labels(&within(EVENT_REPORT_CLUSTER_NAME_LABEL)),
        Hop::Report,
        Arc::clone(&sightings),
        |report| {
            let listed = report.spec.matching_resources.iter();
            listed.filter_map(|m| m.name.clone()).collect()
        },
    );
    watch_probes(
        Api::<ClusterProfile>::all(mgmt),
        watcher::Config::default().labels(&within(CLUSTER_NAME_LABEL)),
        Hop::Profile,
        Arc::clone(&sightings),
        |profile| {
            let labels = profile.metadata.labels.iter().flatten();
            let resource = labels.filter(|(key, _)| *key == RESOURCE_NAME_LABEL);
            resource.map(|(_, name)| name.clone()).collect()
        },
    );
    let mut apis = Vec::new();
    for cluster in &probed {
        let managed = client(&dir, cluster).await;
        let services: Api<Service> = Api::namespaced(managed.clone(), "default");
        let policies: Api<NetworkPolicy> = Api::namespaced(managed, "default");
        watch_probes(
            policies.clone(),
            watcher::Config::default(),
            Hop::AddOn,
            Arc::clone(&sightings),
            |policy| {
                let name = policy.metadata.name.as_deref().unwrap_or_default();
                name.strip_prefix("front-")
                    .map(str::to_owned)
                    .into_iter()
                    .collect()
            },
        );
        apis.push((cluster.clone(), services, policies));
    }
    let any_policy = ListParams::default().limit(1);
    'busy: while !done.load(Ordering::Relaxed) {
        for (_, _, policies) in &apis {
            if policies
                .list(&any_policy)
                .await
                .is_ok_and(|l| !l.items.is_empty())
            {
                break 'busy;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut probes = Vec::new();
    let mut k = 0;
    while !done.load(Ordering::Relaxed) {
        let (cluster, services, _) = apis[k % apis.len()].clone();
        let sightings = Arc::clone(&sightings);
        let name = format!("probe-{k}");
        k += 1;
        probes.push(tokio::spawn(async move {
            let sent = Instant::now();
            create(&services, service(&name, "default", 80, true)).await;
            let [report, profile, add_on] = tokio::time::timeout(limit, sightings.all(&name))
                .await
                .expect("a probe's add-on never came (FLEET_TIMEOUT_SECONDS)");
            Probe {
                profile: profile_name(&cluster, &name),
                to_report: report - sent,
                to_profile: profile - sent,
                to_add_on: add_on - sent,
            }
        }));
        tokio::time::sleep(PROBE_EVERY).await;
    }
    let mut samples = Vec::new();
    for probe in probes {
        samples.push(probe.await.unwrap());
    }
    samples
}

/// How long one probe event took to its EventReport (the agent), its ClusterProfile (then
/// the manager) and its add-on (then the deployer).
struct Probe {
    /// The ClusterProfile it makes (to find it in the controllers' logs).
    profile: String,
    to_report: Duration,
    to_profile: Duration,
    to_add_on: Duration,
}

/// The name of the ClusterProfile examples/network-policy generates for Service
/// `default/<service>` of `cluster`.
fn profile_name(cluster: &str, service: &str) -> String {
    let cluster = ClusterRef {
        namespace: "default".into(),
        name: cluster.into(),
        cluster_type: ClusterType::Sveltos,
    };
    let identity = Identity {
        trigger: "service-network-policy",
        cluster: &cluster,
        event_source: "sveltos-service",
        resource: Some(("default", service)),
        cloud_event: None,
    };
    generated_name(&identity_labels(&identity, &BTreeMap::new()))
}

/// A process's peak resident memory, in MiB.
fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// CPU time a process has used so far (user and system), in seconds; `/proc` counts it in
/// USER_HZ, which Linux fixes at 100 a second.
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command may hold spaces: fields are counted after its closing parenthesis.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command.
    (ticks(11) + ticks(12)) / 100.0
}

async fn fleet(form: Form, clusters: usize, services: usize) {
    let sandbox = common::start_bare(clusters);
    let dir = sandbox.dir.clone();
    common::plugin(
        &dir,
        &[
            "install",
            "--image",
            "sveltos-events:bench",
            "--timeout",
            "5m",
        ],
    )
    .ok();
    let scenario = match form {
        Form::OneForEvent => "network-policy",
        Form::Aggregated => "ingress",
    };
    common::apply_example(&dir, "mgmt", scenario, "");
    let mgmt = client(&dir, "mgmt").await;
    let filling = Instant::now();
    let names: Vec<String> = (1..=clusters).map(|n| format!("cluster-{n}")).collect();
    let managed: Vec<kube::Client> = stream::iter(&names)
        .map(|name| fill(&dir, &mgmt, name, form, services))
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    let filled = filling.elapsed();

    let started = Instant::now();
    let sandbox_cpu = cpu_seconds(&sandbox.id().to_string());
    let bench_cpu = cpu_seconds("self");
    let mut agent = common::start_controller(&dir, "mgmt", "sveltos-events-agent");
    let mut manager = common::start_controller(&dir, "mgmt", "sveltos-events-manager");
    let limit = Duration::from_secs(bench_setting("FLEET_TIMEOUT_SECONDS", 600) as u64);
    let done = Arc::new(AtomicBool::new(false));
    let probes = (form == Form::OneForEvent)
        .then(|| tokio::spawn(probe(dir.clone(), clusters, done.clone(), limit)));
    let reported = tokio::spawn(every_cluster_reported(mgmt.clone(), clusters, started));
    for client in &managed {
        while !converged(client, form, services).await {
            for (name, process) in [("agent", &mut agent), ("manager", &mut manager)] {
                if let Some(status) = process.exited() {
                    panic!(
                        "the {name} ended ({status}); its log is in {}",
                        dir.display()
                    );
                }
            }
            assert!(
                started.elapsed() < limit,
                "no convergence within {limit:?} (FLEET_TIMEOUT_SECONDS)"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let took = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let what = match form {
        Form::OneForEvent => format!("{} NetworkPolicies", clusters * services),
        Form::Aggregated => format!("{clusters} Ingresses of {services} paths"),
    };
    println!(
        "fleet, separate processes, {}: {clusters} clusters x {services} Services -> {what} in {:.2} s (filled in {:.1} s)",
        match form {
            Form::OneForEvent => "oneForEvent",
            Form::Aggregated => "aggregated",
        },
        took.as_secs_f64(),
        filled.as_secs_f64()
    );
    println!(
        "  peak RSS: manager {:.0} MiB, agent {:.0} MiB, sandbox ({} API servers) {:.0} MiB",
        peak_rss_mib(manager.id()),
        peak_rss_mib(agent.id()),
        clusters + 1,
        peak_rss_mib(sandbox.id()),
    );
    println!(
        "  CPU while converging: manager {:.1} s, agent {:.1} s, sandbox {:.1} s, this bench {:.1} s",
        cpu_seconds(&manager.id().to_string()),
        cpu_seconds(&agent.id().to_string()),
        cpu_seconds(&sandbox.id().to_string()) - sandbox_cpu,
        cpu_seconds("self") - bench_cpu,
    );
    let swept = if reported.is_finished() {
        reported.await.unwrap()
    } else {
        reported.abort();
        None
    };
    match swept {
        Some(after) => println!(
            "  a report of every cluster after {:.1} s (the agent's first sweep)",
            after.as_secs_f64()
        ),
        None => println!("  not every cluster had a report when the fleet converged"),
    }
    if let Some(probes) = probes {
        let probes = probes.await.unwrap();
        let spread = |mut samples: Vec<Duration>| {
            samples.sort();
            format!(
                "p50 {}, p90 {}, p99 {}, max {}",
                millis(percentile(&samples, 0.5)),
                millis(percentile(&samples, 0.9)),
                millis(percentile(&samples, 0.99)),
                millis(samples.last().copied().unwrap_or_default())
            )
        };
        println!(
            "  event -> add-on while converging: {} over {} events",
            spread(probes.iter().map(|p| p.to_add_on).collect()),
            probes.len()
        );
        let hop = |hop: fn(&Probe) -> Duration| spread(probes.iter().map(hop).collect());
        println!(
            "    event -> EventReport {}\n    EventReport -> ClusterProfile {}\n    ClusterProfile -> add-on {}",
            hop(|p| p.to_report),
            hop(|p| p.to_profile.saturating_sub(p.to_report)),
            hop(|p| p.to_add_on.saturating_sub(p.to_profile)),
        );
        let mut slowest: Vec<&Probe> = probes.iter().collect();
        slowest.sort_by_key(|p| Reverse(p.to_add_on));
        for p in slowest.iter().take(3) {
            println!(
                "    slow: {} report {}, profile {}, add-on {}",
                p.profile,
                millis(p.to_report),
                millis(p.to_profile),
                millis(p.to_add_on)
            );
        }
    }
}

fn main() {
    let clusters = bench_setting("FLEET_CLUSTERS", 100);
    let services = bench_setting("FLEET_SERVICES", 100);
    let forms = std::env::var("FLEET_FORMS").unwrap_or_else(|_| "one,aggregated".into());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for form in forms.split(',') {
        let form = match form.trim() {
            "one" => Form::OneForEvent,
            "aggregated" => Form::Aggregated,
            other => panic!("FLEET_FORMS: {other:?} is neither one nor aggregated"),
        };
        runtime.block_on(fleet(form, clusters, services));
    }
}
