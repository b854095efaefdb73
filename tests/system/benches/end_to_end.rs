//! Event to add-on latency of the whole system on the sandbox (agent in hub mode, manager,
//! deployer, API servers, all in this process), and fleet convergence time with memory.
//!
//! Fleet: every cluster holds `E2E_FLEET_SERVICES` matching Services before the system starts;
//! the clock stops when every cluster has its add-ons: one NetworkPolicy per Service
//! (`oneForEvent`), then, in a second fleet, one Ingress with a path per Service (aggregated).
//!
//! Restart: once the fleet converged, the system is stopped and started again; the writes
//! it makes until the clusters are quiet for 10 s are counted (each rewrites what was right).
//!
//! Latency: a labelled Service is created in a managed cluster; the clock stops when the
//! watch on that cluster delivers the NetworkPolicy the scenario deploys for it. Events are
//! sequential; every created Service stays, so later events run against a growing fleet state.
//! Each hop is timed too, as watches see it: the EventReport listing the Service, its
//! ClusterProfile, its NetworkPolicy.
//!
//!   cargo bench -p sveltos-events-system --bench end_to_end
//!   E2E_EVENTS=1000 E2E_PREFILL=0 E2E_FLEET_CLUSTERS=10 E2E_FLEET_SERVICES=100 (the defaults)
//!
//! `E2E_PREFILL=N`: before the events, N profiles exist already, made for Services in other
//! clusters (100 each), so the latency is that of a fleet of N + E2E_EVENTS profiles.
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark set-up

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use agent::observe::{bench_setting, millis, percentile};

use api::labels::RESOURCE_NAME_LABEL;
use api::v1beta1::{ClusterProfile, EventReport, ReportNames};
use futures_util::StreamExt;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use kube::api::Api;
use kube::core::ApiResource;
use kube::runtime::{WatchStreamExt, watcher};
use support::{
    apply, network_policy_scenario, register, registered_clusters, sandbox_with_crds, service,
    start_system,
};
use tokio::sync::mpsc;

/// The hops an event takes on its way to its add-on.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Hop {
    /// The cluster's EventReport (in the management cluster) lists the Service.
    Report,
    /// The ClusterProfile generated for the Service exists.
    Profile,
    /// The NetworkPolicy deployed for the Service exists in the managed cluster.
    AddOn,
}

/// Sends `(hop, Service name, when)` for the first object of `api` in which `names` sees each
/// Service.
fn watch_hop<K>(
    api: Api<K>,
    hop: Hop,
    arrivals: mpsc::UnboundedSender<(Hop, String, Instant)>,
    names: impl Fn(&K) -> Vec<String> + Send + 'static,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    tokio::spawn(async move {
        let mut seen = std::collections::HashSet::new();
        let mut stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(Ok(object)) = stream.next().await {
            let at = Instant::now();
            for name in names(&object) {
                if seen.insert(name.clone()) {
                    let _ = arrivals.send((hop, name, at));
                }
            }
        }
    });
}

fn print_percentiles(what: &str, samples: &mut [Duration]) {
    samples.sort();
    println!(
        "  {what:<28} p50 {}  p90 {}  p99 {}  max {}",
        millis(percentile(samples, 0.50)),
        millis(percentile(samples, 0.90)),
        millis(percentile(samples, 0.99)),
        millis(samples.last().copied().unwrap_or_default()),
    );
}

/// Services (so profiles) per cluster of the fleet that exists before a latency run.
const PREFILL_PER_CLUSTER: usize = 100;

async fn latency(events: usize, prefill: usize) {
    // The measured cluster is cluster-1; the others hold `prefill` profiles' Services.
    let others = prefill.div_ceil(PREFILL_PER_CLUSTER);
    let (sandbox, mgmt, mut clients) = registered_clusters(1 + others).await;
    network_policy_scenario(&mgmt).await;
    let managed = clients.remove(0);
    let mut left = prefill;
    for client in &clients {
        for i in 0..left.min(PREFILL_PER_CLUSTER) {
            apply(client, service(&format!("fill-{i}"))).await;
        }
        left = left.saturating_sub(PREFILL_PER_CLUSTER);
    }
    let system = start_system(&mgmt);
    if prefill > 0 {
        let filled = Instant::now();
        wait_for_policies(&clients, prefill).await;
        println!(
            "{prefill} profiles in {others} other clusters made in {:.1} s before the events",
            filled.elapsed().as_secs_f64()
        );
    }

    let (arrivals, mut arrived) = mpsc::unbounded_channel::<(Hop, String, Instant)>();
    watch_hop(
        Api::<ReportNames>::all_with(mgmt.clone(), &ApiResource::erase::<EventReport>(&())),
        Hop::Report,
        arrivals.clone(),
        |report| {
            let resources = report.spec.matching_resources.iter();
            resources.filter_map(|r| r.name.clone()).collect()
        },
    );
    watch_hop(
        Api::<ClusterProfile>::all(mgmt.clone()),
        Hop::Profile,
        arrivals.clone(),
        |profile| {
            let labels = profile.metadata.labels.iter().flatten();
            labels
                .filter(|(key, _)| *key == RESOURCE_NAME_LABEL)
                .map(|(_, name)| name.clone())
                .collect()
        },
    );
    watch_hop(
        Api::<NetworkPolicy>::namespaced(managed.clone(), "default"),
        Hop::AddOn,
        arrivals,
        |policy| {
            let name = policy.metadata.name.as_deref().unwrap_or_default();
            name.strip_prefix("front-")
                .map(str::to_owned)
                .into_iter()
                .collect()
        },
    );
    // When each hop's watch first saw the Service (the watches may deliver out of order).
    let mut hops = std::collections::HashMap::<(Hop, String), Instant>::new();
    let mut wait_for = async |name: &str| -> [Instant; 3] {
        loop {
            let seen = [Hop::Report, Hop::Profile, Hop::AddOn]
                .map(|hop| hops.get(&(hop, name.to_owned())).copied());
            if let [Some(report), Some(profile), Some(add_on)] = seen {
                return [report, profile, add_on];
            }
            let (hop, seen, at) = arrived.recv().await.expect("the watches ended");
            hops.insert((hop, seen), at);
        }
    };
    // Warm-up: the first event also starts the agent's watch of Services.
    apply(&managed, service("warm-up")).await;
    wait_for("warm-up").await;

    let (mut total, mut to_report, mut to_profile, mut to_add_on) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let started = Instant::now();
    for i in 0..events {
        let name = format!("svc-{i}");
        let sent = Instant::now();
        apply(&managed, service(&name)).await;
        let [report, profile, add_on] = wait_for(&name).await;
        total.push(add_on.duration_since(sent));
        to_report.push(report.duration_since(sent));
        to_profile.push(profile.saturating_duration_since(report));
        to_add_on.push(add_on.saturating_duration_since(profile));
    }
    let elapsed = started.elapsed();
    println!(
        "event -> add-on latency, 1 managed cluster, {events} sequential events (the fleet grows to {} profiles); {:.0} events/s",
        prefill + events,
        events as f64 / elapsed.as_secs_f64()
    );
    print_percentiles("event -> add-on", &mut total);
    print_percentiles("event -> EventReport", &mut to_report);
    print_percentiles("EventReport -> ClusterProfile", &mut to_profile);
    print_percentiles("ClusterProfile -> add-on", &mut to_add_on);
    for task in system {
        task.abort();
    }
    sandbox.shutdown().await;
}

/// Waits until `clients`' clusters hold `count` NetworkPolicies between them (at most ten
/// minutes: a fleet that does not converge fails the bench rather than hanging it).
async fn wait_for_policies(clients: &[kube::Client], count: usize) {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let mut found = 0;
        for client in clients {
            let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), "default");
            found += policies
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .len();
        }
        if found >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {found} of {count} NetworkPolicies after ten minutes"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// How long the clusters must see no write before a restart counts as over.
const QUIET: Duration = Duration::from_secs(10);

async fn fleet(clusters: usize, services: usize) {
    let (sandbox, mgmt) = sandbox_with_crds(clusters).await;
    network_policy_scenario(&mgmt).await;
    let mut managed = Vec::new();
    for handle in sandbox.clusters().iter().filter(|c| c.name != "mgmt") {
        register(&mgmt, handle).await;
        let client = handle.client().unwrap();
        for i in 0..services {
            apply(&client, service(&format!("svc-{i}"))).await;
        }
        managed.push(client);
    }
    let before = agent::observe::rss_mib();
    let started = Instant::now();
    let system = start_system(&mgmt);
    for client in &managed {
        let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), "default");
        while policies
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len()
            < services
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    println!(
        "fleet convergence: {clusters} clusters x {services} Services -> {} NetworkPolicies in {:.2} s; RSS {:.0} MiB before the controllers started, {:.0} MiB after (sandbox included)",
        clusters * services,
        started.elapsed().as_secs_f64(),
        before,
        agent::observe::rss_mib()
    );
    let writes = || -> u64 {
        sandbox
            .clusters()
            .iter()
            .map(|c| c.store.resource_version())
            .sum()
    };
    // The system is stopped once it is done: its statuses written too (a burst of report
    // generations is acknowledged up to a second later).
    let (mut last, mut quiet_since) = (writes(), Instant::now());
    while quiet_since.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if writes() != last {
            (last, quiet_since) = (writes(), Instant::now());
        }
    }
    for task in system {
        task.abort();
    }

    // Restart cost: the system comes back over a converged fleet; every write it makes then
    // rewrites something that was already right (target: none).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = writes();
    let restarted = Instant::now();
    let system = start_system(&mgmt);
    let (mut last, mut quiet_since) = (before, Instant::now());
    while quiet_since.elapsed() < QUIET && restarted.elapsed() < Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = writes();
        if now != last {
            (last, quiet_since) = (now, Instant::now());
        }
    }
    match last - before {
        0 => println!(
            "restart over the converged fleet: 0 writes (target 0) in the {} s after",
            QUIET.as_secs()
        ),
        n => println!(
            "restart over the converged fleet: {n} writes (target 0), the last {:.2} s after the start",
            (quiet_since - restarted).as_secs_f64()
        ),
    }
    for task in system {
        task.abort();
    }
    sandbox.shutdown().await;
}

/// The aggregated form of the fleet: each cluster's `services` https Services (in namespace
/// `eng`) make one EventReport and one Ingress with a path per Service (examples/ingress,
/// `oneForEvent: false`).
async fn fleet_aggregated(clusters: usize, services: usize) {
    let (sandbox, mgmt) = sandbox_with_crds(clusters).await;
    for text in [
        include_str!("../../../examples/ingress/eventsource.yaml"),
        include_str!("../../../examples/ingress/eventtrigger.yaml"),
        include_str!("../../../examples/ingress/configmap.yaml"),
    ] {
        for document in api::load::documents(text).unwrap() {
            apply(&mgmt, document).await;
        }
    }
    let mut managed = Vec::new();
    for handle in sandbox.clusters().iter().filter(|c| c.name != "mgmt") {
        register(&mgmt, handle).await;
        let client = handle.client().unwrap();
        apply(
            &client,
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "eng"}}),
        )
        .await;
        for i in 0..services {
            let name = format!("web-{i}");
            apply(
                &client,
                serde_json::json!({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": name, "namespace": "eng"},
                    "spec": {"selector": {"app": name}, "ports": [{"port": 443}]}}),
            )
            .await;
        }
        managed.push(client);
    }
    let before = agent::observe::rss_mib();
    let started = Instant::now();
    let system = start_system(&mgmt);
    for client in &managed {
        let ingresses: Api<Ingress> = Api::namespaced(client.clone(), "default");
        loop {
            let paths = ingresses
                .get_opt("ingress")
                .await
                .unwrap()
                .and_then(|ingress| ingress.spec?.rules?.first()?.http.clone())
                .map_or(0, |http| http.paths.len());
            if paths >= services {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    println!(
        "fleet convergence, aggregated: {clusters} clusters x {services} Services -> {clusters} Ingresses of {services} paths in {:.2} s; RSS {:.0} MiB before the controllers started, {:.0} MiB after (sandbox included)",
        started.elapsed().as_secs_f64(),
        before,
        agent::observe::rss_mib()
    );
    for task in system {
        task.abort();
    }
    sandbox.shutdown().await;
}

fn main() {
    // RUST_LOG=sveltos_events_controller=debug shows where an event's time goes.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(latency(
        bench_setting("E2E_EVENTS", 1000),
        bench_setting("E2E_PREFILL", 0),
    ));
    let clusters = bench_setting("E2E_FLEET_CLUSTERS", 10);
    let services = bench_setting("E2E_FLEET_SERVICES", 100);
    runtime.block_on(fleet(clusters, services));
    runtime.block_on(fleet_aggregated(clusters, services));
}
