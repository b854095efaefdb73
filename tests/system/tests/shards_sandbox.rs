//! Sharding: one manager and deployer per shard, each handling the clusters whose
//! `sharding.projectsveltos.io/key` names its shard. Both act on the same EventTrigger without
//! deleting each other's profiles or rewriting each other's status entries.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

mod support;

use api::v1beta1::{ClusterProfile, EventTrigger, SveltosCluster};
use controller::fleet::ClusterScope;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use support::{apply, eventually, names, service};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_share_a_trigger_without_undoing_each_other() {
    let (sandbox, mgmt, managed) = support::registered_clusters(2).await;
    let blue = json!({"metadata": {"annotations": {"sharding.projectsveltos.io/key": "blue"}}});
    Api::<SveltosCluster>::namespaced(mgmt.clone(), "default")
        .patch("cluster-2", &PatchParams::default(), &Patch::Merge(&blue))
        .await
        .unwrap();
    support::network_policy_scenario(&mgmt).await;
    let capi = clusters::capi::watch(mgmt.clone(), None);
    let mut tasks = vec![tokio::spawn(agent::hub::run(
        mgmt.clone(),
        capi.clone(),
        std::future::pending(),
    ))];
    for shard in ["", "blue"] {
        let scope = ClusterScope {
            shard: shard.to_owned(),
        };
        tasks.extend(support::start_controllers(&mgmt, scope, capi.clone()));
    }
    for cluster in &managed {
        apply(cluster, service("web")).await;
    }

    for cluster in &managed {
        let policies: Api<NetworkPolicy> = Api::namespaced(cluster.clone(), "default");
        eventually("the policy in each shard's cluster", || async {
            names(&policies).await == ["front-web"]
        })
        .await;
    }
    let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
    let triggers: Api<EventTrigger> = Api::all(mgmt.clone());
    eventually("both clusters in the trigger's status", || async {
        let trigger = triggers.get("service-network-policy").await.unwrap();
        let status = trigger.status.unwrap_or_default();
        let clusters: Vec<_> = status
            .cluster_info
            .iter()
            .filter_map(|i| i.cluster.name.clone())
            .collect();
        clusters == ["cluster-1", "cluster-2"] && status.matching_cluster_refs.len() == 2
    })
    .await;
    // A second event in the blue cluster: the default shard must not remove blue's profiles.
    apply(&managed[1], service("api")).await;
    let policies: Api<NetworkPolicy> = Api::namespaced(managed[1].clone(), "default");
    eventually("blue's second policy", || async {
        names(&policies).await == ["front-api", "front-web"]
    })
    .await;
    assert_eq!(names(&profiles).await.len(), 3);
    for task in tasks {
        task.abort();
    }
    sandbox.shutdown().await;
}
