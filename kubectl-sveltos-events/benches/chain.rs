//! What `explain` and `trace` cost on a busy fleet (issue 19's target: <= 300 ms wall each
//! with 1,000 generated profiles and 100 clusters): the whole system runs in this process on
//! the sandbox, the network-policy example fans 10 Services in each of 100 matching clusters
//! out to 1,000 ClusterProfiles, and each command is then timed as the CLI runs it, from a new
//! client of the management cluster to the printed tree.
//!
//! Run: `cargo bench -p kubectl-sveltos-events --bench chain`
//! (`CHAIN_CLUSTERS`, `CHAIN_SERVICES`, `CHAIN_ROUNDS` change the defaults 100, 10, 20).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark

use std::time::{Duration, Instant};

use agent::observe::{bench_setting, millis, percentile};

use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kubectl_sveltos_events::chain::fleet::Fleet;
use kubectl_sveltos_events::chain::render::{Format, render};
use kubectl_sveltos_events::chain::{Target, explain::explain, trace::trace};
use kubectl_sveltos_events::{demo, system};
use sandbox::{Sandbox, SandboxOptions};
use serde_json::json;

const EXAMPLE: [&str; 3] = [
    include_str!("../../examples/network-policy/eventsource.yaml"),
    include_str!("../../examples/network-policy/configmap.yaml"),
    include_str!("../../examples/network-policy/eventtrigger.yaml"),
];

async fn run() {
    // cluster-2 of the sandbox is env=production: one more cluster keeps `clusters` matching.
    let clusters = bench_setting("CHAIN_CLUSTERS", 100);
    let services = bench_setting("CHAIN_SERVICES", 10);
    let rounds = bench_setting("CHAIN_ROUNDS", 20);
    let sandbox = Sandbox::start(SandboxOptions {
        managed_clusters: clusters + 1,
        ..Default::default()
    })
    .await
    .unwrap();
    let (_controllers, _) = system::start(&sandbox).await.unwrap();
    let mgmt = sandbox.cluster("mgmt").unwrap().client().unwrap();
    for document in EXAMPLE {
        demo::apply_documents(&mgmt, document).await.unwrap();
    }
    let started = Instant::now();
    let params = PatchParams::apply("bench").force();
    let matching: Vec<String> = sandbox
        .clusters()
        .iter()
        .map(|c| c.name.clone())
        .filter(|n| n != "mgmt" && n != "cluster-2")
        .collect();
    for name in &matching {
        let client = sandbox.cluster(name).unwrap().client().unwrap();
        let api: Api<Service> = Api::namespaced(client, "default");
        for i in 0..services {
            let service = json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": format!("svc-{i}"), "namespace": "default",
                             "labels": {"sveltos": "fv"}},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
            });
            api.patch(&format!("svc-{i}"), &params, &Patch::Apply(&service))
                .await
                .unwrap();
        }
    }
    // Converged when the last cluster's last Service has its NetworkPolicy.
    let last = sandbox
        .cluster(matching.last().unwrap())
        .unwrap()
        .client()
        .unwrap();
    let policies: Api<k8s_openapi::api::networking::v1::NetworkPolicy> =
        Api::namespaced(last, "default");
    let wanted = format!("front-svc-{}", services - 1);
    while policies.get_opt(&wanted).await.unwrap().is_none() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let profiles: Api<api::v1beta1::ClusterProfile> = Api::all(mgmt.clone());
    let count = profiles
        .list_metadata(&Default::default())
        .await
        .unwrap()
        .items
        .len();
    println!(
        "fleet: {} matching clusters x {services} Services -> {count} ClusterProfiles, converged in {:.1} s",
        matching.len(),
        started.elapsed().as_secs_f64()
    );

    let cluster = format!("default/{}", matching[matching.len() / 2]);
    let name = format!("svc-{}", services / 2);
    let policy = format!("front-{name}");
    for (command, kind, object) in [
        ("explain", "networkpolicy", policy.as_str()),
        ("trace", "service", name.as_str()),
    ] {
        let mut samples = Vec::with_capacity(rounds);
        let mut whole = true;
        for _ in 0..rounds {
            let begun = Instant::now();
            let client = sandbox.cluster("mgmt").unwrap().client().unwrap();
            let mut fleet = Fleet::new(client);
            let target = Target {
                cluster: &cluster,
                kind,
                namespace: Some("default"),
                name: object,
            };
            let root = match command {
                "explain" => explain(&mut fleet, target).await.unwrap(),
                _ => trace(&mut fleet, target).await.unwrap(),
            };
            let text = render(&root, Format::Text, 0).unwrap();
            samples.push(begun.elapsed());
            whole &= root.whole() && !text.is_empty();
        }
        samples.sort();
        println!(
            "{command} {kind}/{object} in {cluster} ({rounds} runs, chain {}): p50 {}  p99 {}  max {}  (target <= 300 ms)",
            if whole { "whole" } else { "BROKEN" },
            millis(percentile(&samples, 0.5)),
            millis(percentile(&samples, 0.99)),
            millis(*samples.last().unwrap()),
        );
    }
    sandbox.shutdown().await;
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}
