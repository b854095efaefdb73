//! ClusterSets: the deployer's process keeps their selection, an EventTrigger's
//! `clusterSetRefs` make the selected cluster a source, and when that cluster's connection
//! goes down the set selects another one and the add-ons follow.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

mod support;

use api::v1beta1::{ClusterSet, SveltosCluster};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use support::{apply, eventually, names, service, start_system};

/// The ClusterSet's selected cluster names.
async fn selected(sets: &Api<ClusterSet>) -> Vec<String> {
    let set = sets.get("prod").await.unwrap();
    set.status
        .unwrap_or_default()
        .selected_cluster_refs
        .iter()
        .filter_map(|r| r.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_set_chooses_the_source_and_replaces_a_cluster_that_went_down() {
    let (sandbox, mgmt, managed) = support::registered_clusters(2).await;
    support::network_policy_scenario(&mgmt).await;
    // The trigger's own selector matches nothing; the set decides.
    apply(
        &mgmt,
        json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventTrigger",
               "metadata": {"name": "service-network-policy"},
               "spec": {"sourceClusterSelector": {"matchLabels": {"env": "none"}},
                        "clusterSetRefs": ["prod"],
                        "eventSourceName": "sveltos-service", "oneForEvent": true,
                        "policyRefs": [{"kind": "ConfigMap", "namespace": "default",
                                        "name": "network-policy"}]}}),
    )
    .await;
    let tasks = start_system(&mgmt);
    for cluster in &managed {
        apply(cluster, service("web")).await;
    }
    // Once both clusters are ready the set picks the first of its pool.
    let registered: Api<SveltosCluster> = Api::namespaced(mgmt.clone(), "default");
    eventually("both clusters to be ready", || async {
        let clusters = registered.list(&Default::default()).await.unwrap().items;
        clusters.len() == 2
            && clusters
                .iter()
                .all(|c| c.status.as_ref().is_some_and(|s| s.ready))
    })
    .await;
    apply(
        &mgmt,
        json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "ClusterSet",
               "metadata": {"name": "prod"},
               "spec": {"clusterSelector": {"matchLabels": {"env": "fv"}}, "maxReplicas": 1}}),
    )
    .await;

    let sets: Api<ClusterSet> = Api::all(mgmt.clone());
    eventually("the set to select one ready cluster", || async {
        selected(&sets).await == ["cluster-1"]
    })
    .await;
    let policies = |i: usize| Api::<NetworkPolicy>::namespaced(managed[i].clone(), "default");
    eventually("the policy in the selected cluster only", || async {
        names(&policies(0)).await == ["front-web"] && names(&policies(1)).await.is_empty()
    })
    .await;
    let status = sets.get("prod").await.unwrap().status.unwrap();
    assert_eq!(status.matching_cluster_refs.len(), 2);

    // cluster-1's connection goes down: the set moves to cluster-2, and so do the add-ons.
    Api::<SveltosCluster>::namespaced(mgmt.clone(), "default")
        .patch_status(
            "cluster-1",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"connectionStatus": "Down"}})),
        )
        .await
        .unwrap();
    eventually("the set to select the other cluster", || async {
        selected(&sets).await == ["cluster-2"]
    })
    .await;
    eventually("the policy to follow the selection", || async {
        names(&policies(1)).await == ["front-web"] && names(&policies(0)).await.is_empty()
    })
    .await;
    for task in tasks {
        task.abort();
    }
    sandbox.shutdown().await;
}
