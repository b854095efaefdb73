//! The whole system on the sandbox while the manager or the deployer has a backlog: a fresh
//! event in another cluster does not wait for it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

mod support;

use std::time::Duration;

use api::labels::CLUSTER_NAME_LABEL;
use api::v1beta1::ClusterProfile;
use futures_util::{StreamExt, stream};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams};
use sandbox::faults::Fault;
use support::{apply, eventually, names, network_policy_scenario, registered_clusters, service};

/// Services (so events, profiles and generated ConfigMaps) waiting in the first cluster.
const BACKLOG: usize = 600;

/// The generated profiles of the source cluster `cluster`.
async fn profiles_of(profiles: &Api<ClusterProfile>, cluster: &str) -> usize {
    let selector = format!("{CLUSTER_NAME_LABEL}={cluster}");
    let listed = profiles
        .list(&ListParams::default().labels(&selector))
        .await;
    listed.unwrap().items.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_event_does_not_wait_for_the_managers_backlog() {
    let (sandbox, mgmt, managed) = registered_clusters(2).await;
    network_policy_scenario(&mgmt).await;
    stream::iter(0..BACKLOG)
        .for_each_concurrent(16, |i| apply(&managed[0], service(&format!("backlog-{i}"))))
        .await;
    // Every request to the management cluster waits, so the backlog's 1,200 writes (a
    // ConfigMap and a profile per event) take seconds, 16 at a time.
    let store = &sandbox.cluster("mgmt").unwrap().store;
    store
        .faults()
        .inject(Fault::Latency { millis: 20 }, Duration::from_secs(120));
    let _system = support::start_system(&mgmt);
    let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
    eventually("the backlog under way", || async {
        profiles_of(&profiles, "cluster-1").await > 0
    })
    .await;

    apply(&managed[1], service("fresh")).await;
    eventually("the fresh event's profile", || async {
        profiles_of(&profiles, "cluster-2").await == 1
    })
    .await;
    let backlog_done = profiles_of(&profiles, "cluster-1").await;
    assert!(
        backlog_done < BACKLOG,
        "the fresh event waited for the whole backlog ({backlog_done} of {BACKLOG} profiles)"
    );
    // And the backlog still completes.
    store.faults().clear();
    eventually("the whole backlog", || async {
        profiles_of(&profiles, "cluster-1").await == BACKLOG
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_profile_does_not_wait_for_the_deployers_backlog_in_another_cluster() {
    const DEPLOYMENTS: usize = 100;
    let (sandbox, mgmt, managed) = registered_clusters(2).await;
    network_policy_scenario(&mgmt).await;
    stream::iter(0..DEPLOYMENTS)
        .for_each_concurrent(16, |i| apply(&managed[0], service(&format!("backlog-{i}"))))
        .await;
    // Every profile is there before the deployer starts, so it has them all to do at once;
    // every request to the first cluster waits, so deploying there takes seconds, one profile
    // after another.
    let (_agent_and_manager, watches) = support::start_agent_and_manager(&mgmt);
    let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
    eventually("every profile", || async {
        profiles_of(&profiles, "cluster-1").await == DEPLOYMENTS
    })
    .await;
    let store = &sandbox.cluster("cluster-1").unwrap().store;
    store
        .faults()
        .inject(Fault::Latency { millis: 20 }, Duration::from_secs(120));
    let _deployer = support::start_deployer(&mgmt, watches, controller::serve::Telemetry::new());
    let first: Api<NetworkPolicy> = Api::namespaced(managed[0].clone(), "default");
    let second: Api<NetworkPolicy> = Api::namespaced(managed[1].clone(), "default");
    eventually("the backlog under way", || async {
        !names(&first).await.is_empty()
    })
    .await;

    apply(&managed[1], service("fresh")).await;
    eventually("the fresh event's policy", || async {
        names(&second).await == ["front-fresh"]
    })
    .await;
    let backlog_done = names(&first).await.len();
    assert!(
        backlog_done < DEPLOYMENTS,
        "the fresh profile waited for the whole backlog ({backlog_done} of {DEPLOYMENTS})"
    );
    store.faults().clear();
    eventually("the whole backlog", || async {
        names(&first).await.len() == DEPLOYMENTS
    })
    .await;
}
