//! The whole system (agent in hub mode, manager, deployer) on the sandbox, stopped mid-scenario
//! and started again after the world changed while it was down: it converges with no duplicate
//! and no leftover.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

mod support;

use std::time::Duration;

use api::v1beta1::{ClusterProfile, ClusterSummary};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams};
use support::{apply, eventually, names, one_cluster_scenario, service, start_system};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_after_changes_converges_without_duplicates_or_leftovers() {
    let (sandbox, mgmt, managed) = one_cluster_scenario().await;
    apply(&managed, service("first")).await;

    let policies: Api<NetworkPolicy> = Api::namespaced(managed.clone(), "default");
    let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
    let summaries: Api<ClusterSummary> = Api::namespaced(mgmt.clone(), "default");
    let tasks = start_system(&mgmt);
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

    let _tasks = start_system(&mgmt);
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
