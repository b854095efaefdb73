//! The NetworkPolicy scenario with the managed cluster in spoke mode: its own agent evaluates
//! the EventSource the hub copied in, the hub relays the report, and the manager and deployer
//! act on it exactly as in hub mode, cleanup included.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

mod support;

use api::v1beta1::{ClusterProfile, EventReport, ReportPhase, SveltosCluster};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::{apply, eventually, names, one_cluster_scenario, service, start_system};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoke_cluster_gets_its_add_ons_through_the_relay() {
    let (sandbox, mgmt, managed) = one_cluster_scenario().await;
    let spoke = json!({"metadata": {"annotations": {"sveltos-events.io/agent-mode": "spoke"}}});
    Api::<SveltosCluster>::namespaced(mgmt.clone(), "default")
        .patch("cluster-1", &PatchParams::default(), &Patch::Merge(&spoke))
        .await
        .unwrap();
    let mut tasks = start_system(&mgmt);
    tasks.push(tokio::spawn(sveltos_events_agent_spoke(managed.clone())));

    apply(&managed, service("web")).await;
    let policies: Api<NetworkPolicy> = Api::namespaced(managed.clone(), "default");
    eventually("the policy in the spoke cluster", || async {
        names(&policies).await == ["front-web"]
    })
    .await;
    // The report was written in the cluster by its own agent, and relayed.
    let local: Api<EventReport> = Api::namespaced(managed.clone(), "projectsveltos");
    assert_eq!(names(&local).await, ["sveltos-service"]);
    eventually("the local report to be marked delivered", || async {
        let report = local.get("sveltos-service").await.unwrap();
        report.status.and_then(|s| s.phase) == Some(ReportPhase::Processed)
    })
    .await;
    let relayed: Api<EventReport> = Api::namespaced(mgmt.clone(), "default");
    assert_eq!(
        names(&relayed).await,
        ["sveltos--sveltos-service--cluster-1"]
    );
    let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
    assert_eq!(names(&profiles).await.len(), 1);

    Api::<Service>::namespaced(managed.clone(), "default")
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the policy and the profile to go", || async {
        names(&policies).await.is_empty() && names(&profiles).await.is_empty()
    })
    .await;
    for task in tasks {
        task.abort();
    }
    sandbox.shutdown().await;
}

/// The agent in spoke mode inside `managed`.
async fn sveltos_events_agent_spoke(managed: kube::Client) {
    agent::spoke::run(managed, "cluster-1".into(), std::future::pending()).await;
}
