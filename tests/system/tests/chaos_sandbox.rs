//! The whole system (agent in hub mode, manager, deployer) on the sandbox while its API servers
//! misbehave: each fault class in turn on the management cluster and both managed clusters,
//! with Services coming and going meanwhile, then the controllers killed mid-flight and
//! started again. After each, within a bound, the fleet tells the truth: every cluster has
//! exactly the NetworkPolicies of its Services, one ClusterProfile and one generated
//! ConfigMap per Service, and every EventReport lists what its cluster holds. Nothing is
//! duplicated, nothing left over. (The reduced form of issue 22's chaos test: in-process,
//! a few clusters, each fault once.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

mod support;

use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;

use api::labels::EVENT_REPORT_CLUSTER_NAME_LABEL;
use api::v1beta1::{ClusterProfile, EventReport};
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use sandbox::Sandbox;
use sandbox::faults::Fault;
use support::{network_policy_scenario, registered_clusters, service, start_system};
use tokio::time::{Instant, sleep};

/// How long each fault lasts.
const FAULT_FOR: Duration = Duration::from_secs(1);
/// How long the fleet may take to tell the truth once a fault is over.
const CONVERGE_WITHIN: Duration = Duration::from_secs(60);

/// The test's own requests ride the faults too: each is tried until it goes through.
async fn retried<T, E: std::fmt::Display, Fut: Future<Output = Result<T, E>>>(
    what: &str,
    f: impl Fn() -> Fut,
) -> T {
    let deadline = Instant::now() + CONVERGE_WITHIN;
    loop {
        match f().await {
            Ok(value) => return value,
            Err(e) => assert!(Instant::now() < deadline, "{what}: {e}"),
        }
        sleep(Duration::from_millis(50)).await;
    }
}

async fn delete(services: &Api<Service>, name: &str) {
    retried("delete a Service", || async {
        match services.delete(name, &DeleteParams::default()).await {
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            other => other.map(|_| ()),
        }
    })
    .await;
}

/// The Services (and so the events) of each managed cluster, as the test made them.
struct World {
    services: Vec<BTreeSet<String>>,
    made: usize,
}

impl World {
    /// In each cluster, one more Service, the oldest gone where there are more than two, and
    /// one that comes and goes at once (an event that must leave nothing behind).
    async fn change(&mut self, managed: &[Client]) {
        for (cluster, client) in managed.iter().enumerate() {
            let services: Api<Service> = Api::namespaced(client.clone(), "default");
            let name = self.create(&services).await;
            self.services[cluster].insert(name);
            if self.services[cluster].len() > 2 {
                let oldest = self.services[cluster].pop_first().unwrap();
                delete(&services, &oldest).await;
            }
            let blink = self.create(&services).await;
            delete(&services, &blink).await;
        }
    }

    /// A new labelled Service; its name, zero-padded so that names sort as they were made.
    async fn create(&mut self, services: &Api<Service>) -> String {
        self.made += 1;
        let name = format!("s{:05}", self.made);
        let object = service(&name);
        let (params, patch) = (PatchParams::apply("chaos").force(), Patch::Apply(&object));
        retried("apply a Service", || services.patch(&name, &params, &patch)).await;
        name
    }

    /// Whether the fleet tells the truth; what differs when it does not.
    async fn differences(&self, mgmt: &Client, managed: &[Client]) -> Vec<String> {
        let mut differences = Vec::new();
        let list = ListParams::default();
        for (cluster, client) in managed.iter().enumerate() {
            let wanted: BTreeSet<String> = self.services[cluster]
                .iter()
                .map(|s| format!("front-{s}"))
                .collect();
            let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), "default");
            let Ok(found) = policies.list(&list).await else {
                return vec!["policies unreadable".into()];
            };
            let found: BTreeSet<String> = found
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect();
            if found != wanted {
                differences.push(format!(
                    "cluster-{}: policies {found:?}, wanted {wanted:?}",
                    cluster + 1
                ));
            }
        }
        let total: usize = self.services.iter().map(BTreeSet::len).sum();
        let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
        match profiles.list(&list).await {
            Ok(found) if found.items.len() == total => {}
            Ok(found) => {
                differences.push(format!("{} profiles, wanted {total}", found.items.len()))
            }
            Err(_) => return vec!["profiles unreadable".into()],
        }
        let generated: Api<ConfigMap> = Api::namespaced(mgmt.clone(), "projectsveltos");
        let labelled =
            ListParams::default().labels("eventtrigger.lib.projectsveltos.io/eventtriggername");
        match generated.list(&labelled).await {
            Ok(found) if found.items.len() == total => {}
            Ok(found) => {
                differences.push(format!(
                    "{} generated ConfigMaps, wanted {total}",
                    found.items.len()
                ));
            }
            Err(_) => return vec!["ConfigMaps unreadable".into()],
        }
        let reports: Api<EventReport> = Api::namespaced(mgmt.clone(), "default");
        let Ok(reports) = reports.list(&list).await else {
            return vec!["reports unreadable".into()];
        };
        for (cluster, services) in self.services.iter().enumerate() {
            let name = format!("cluster-{}", cluster + 1);
            let told: Vec<BTreeSet<String>> = reports
                .items
                .iter()
                .filter(|r| {
                    r.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(EVENT_REPORT_CLUSTER_NAME_LABEL))
                        == Some(&name)
                })
                .map(|r| {
                    r.spec
                        .matching_resources
                        .iter()
                        .filter_map(|m| m.name.clone())
                        .collect()
                })
                .collect();
            if told != [services.clone()] {
                differences.push(format!(
                    "{name}: reports tell {told:?}, wanted [{services:?}]"
                ));
            }
        }
        differences
    }

    /// Waits until the fleet tells the truth, and fails saying how it does not.
    async fn converged(&self, mgmt: &Client, managed: &[Client], after: &str) {
        let started = Instant::now();
        let deadline = started + CONVERGE_WITHIN;
        loop {
            let differences = self.differences(mgmt, managed).await;
            if differences.is_empty() {
                eprintln!("converged {:?} after {after}", started.elapsed());
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no convergence {CONVERGE_WITHIN:?} after {after}: {differences:?}"
            );
            sleep(Duration::from_millis(100)).await;
        }
    }
}

fn inject(sandbox: &Sandbox, fault: &Fault, lasting: Duration) {
    for cluster in sandbox.clusters() {
        cluster.store.faults().inject(fault.clone(), lasting);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_converges_after_each_fault_and_after_a_kill() {
    let (sandbox, mgmt, managed) = registered_clusters(2).await;
    network_policy_scenario(&mgmt).await;
    let mut tasks = start_system(&mgmt);
    let mut world = World {
        services: vec![BTreeSet::new(); managed.len()],
        made: 0,
    };
    world.change(&managed).await;
    world.converged(&mgmt, &managed, "the start").await;

    let faults = [
        Fault::DropWatches,
        Fault::ExpireWatches,
        Fault::Errors {
            code: 500,
            share: 0.3,
        },
        Fault::Errors {
            code: 503,
            share: 0.5,
        },
        Fault::Errors {
            code: 429,
            share: 0.5,
        },
        Fault::Conflicts { share: 0.5 },
        Fault::Latency { millis: 100 },
    ];
    for fault in &faults {
        inject(&sandbox, fault, FAULT_FOR);
        world.change(&managed).await;
        sleep(FAULT_FOR).await;
        world
            .converged(&mgmt, &managed, &format!("{fault:?}"))
            .await;
    }

    // Killed mid-flight, while requests fail and the world changes, then started again.
    inject(
        &sandbox,
        &Fault::Errors {
            code: 503,
            share: 0.3,
        },
        FAULT_FOR,
    );
    world.change(&managed).await;
    for task in tasks.drain(..) {
        task.abort();
    }
    world.change(&managed).await;
    sleep(FAULT_FOR).await;
    tasks = start_system(&mgmt);
    world
        .converged(&mgmt, &managed, "a kill and a restart")
        .await;

    for task in tasks {
        task.abort();
    }
    sandbox.shutdown().await;
}

/// Waits until the Processed condition of every EventReport names its generation.
async fn acknowledged(mgmt: &Client) {
    let reports: Api<EventReport> = Api::all(mgmt.clone());
    let (deadline, all) = (Instant::now() + CONVERGE_WITHIN, ListParams::default());
    loop {
        let list = retried("list reports", || reports.list(&all)).await;
        let behind: Vec<String> = list
            .items
            .iter()
            .filter(|report| {
                let conditions = report.status.iter().flat_map(|s| &s.conditions);
                let seen = conditions
                    .filter(|c| c.type_ == "Processed")
                    .find_map(|c| c.observed_generation);
                seen != report.metadata.generation
            })
            .map(kube::ResourceExt::name_any)
            .collect();
        if behind.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "reports not acknowledged: {behind:?}"
        );
        sleep(Duration::from_millis(100)).await;
    }
}

/// Writes every cluster of the sandbox has taken so far.
fn writes(sandbox: &Sandbox) -> u64 {
    sandbox
        .clusters()
        .iter()
        .map(|c| c.store.resource_version())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_nothing_changed_writes_nothing() {
    let (sandbox, mgmt, managed) = registered_clusters(3).await;
    network_policy_scenario(&mgmt).await;
    let tasks = start_system(&mgmt);
    let mut world = World {
        services: vec![BTreeSet::new(); managed.len()],
        made: 0,
    };
    for _ in 0..3 {
        world.change(&managed).await;
    }
    world.converged(&mgmt, &managed, "the start").await;
    // Nothing is left to do once every report's status acknowledges its generation too (the
    // manager writes a burst's acknowledgement up to a second later).
    acknowledged(&mgmt).await;
    for task in tasks {
        task.abort();
    }
    sleep(Duration::from_millis(500)).await;
    let before = writes(&sandbox);
    let tasks = start_system(&mgmt);
    // Long enough for every controller's first pass over the fleet.
    sleep(Duration::from_secs(3)).await;
    let rewritten = writes(&sandbox) - before;
    world.converged(&mgmt, &managed, "the restart").await;
    assert_eq!(rewritten, 0, "the restarted system rewrote what was right");
    for task in tasks {
        task.abort();
    }
    sandbox.shutdown().await;
}
