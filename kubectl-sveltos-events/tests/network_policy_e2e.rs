//! End to end on the sandbox, through the real binary and kubectl: the NetworkPolicy scenario
//! of the seed documents. A labelled Service in a managed cluster becomes an EventReport (agent),
//! then a ClusterProfile and an instantiated ConfigMap (manager); deleting the Service
//! withdraws them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

mod common;

use common::{apply_example, eventually, items, kubectl, start};

const TRIGGER_LABEL: &str =
    "eventtrigger.lib.projectsveltos.io/eventtriggername=service-network-policy";

#[test]
fn a_labelled_service_becomes_a_cluster_profile_and_an_instantiated_network_policy() {
    let sandbox = start(1);
    let dir = sandbox.dir.clone();

    // The sandbox registered cluster-1 and the agent reached it.
    let ready = eventually("cluster-1 ready", || {
        let clusters = items(&dir, "mgmt", &["get", "sveltosclusters", "-A"]);
        clusters
            .iter()
            .find(|c| c["metadata"]["name"] == "cluster-1" && c["status"]["ready"] == true)
            .cloned()
    });
    assert_eq!(ready["metadata"]["labels"]["env"], "fv");

    apply_example(&dir, "mgmt", "network-policy", "");
    apply_example(&dir, "cluster-1", "network-policy", "managed/service.yaml");

    // The agent reports the Service in the management cluster.
    let report = eventually("EventReport", || {
        let reports = items(&dir, "mgmt", &["get", "eventreports", "-n", "default"]);
        reports
            .into_iter()
            .find(|r| r["metadata"]["name"] == "sveltos--sveltos-service--cluster-1")
    });
    assert_eq!(report["spec"]["matchingResources"][0]["name"], "my-service");
    assert_eq!(
        report["metadata"]["labels"]["projectsveltos.io/eventsource-name"],
        "sveltos-service"
    );

    // The manager generates one ClusterProfile and one instantiated ConfigMap.
    let profile = eventually("ClusterProfile", || {
        items(
            &dir,
            "mgmt",
            &["get", "clusterprofiles", "-l", TRIGGER_LABEL],
        )
        .pop()
    });
    let name = profile["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("sveltos-") && name.len() == 28, "{name}");
    let labels = &profile["metadata"]["labels"];
    assert_eq!(
        labels["eventtrigger.lib.projectsveltos.io/resourcename"],
        "my-service"
    );
    assert_eq!(
        labels["eventtrigger.lib.projectsveltos.io/clustername"],
        "cluster-1"
    );
    let policy_ref = &profile["spec"]["policyRefs"][0];
    assert_eq!(policy_ref["namespace"], "projectsveltos");
    let map = eventually("instantiated ConfigMap", || {
        items(
            &dir,
            "mgmt",
            &[
                "get",
                "configmaps",
                "-n",
                "projectsveltos",
                "-l",
                TRIGGER_LABEL,
            ],
        )
        .pop()
    });
    assert_eq!(map["metadata"]["name"], policy_ref["name"]);
    let policy = map["data"]["networkpolicy.yaml"].as_str().unwrap();
    assert!(policy.contains("name: front-my-service"), "{policy}");
    assert!(policy.contains("namespace: default"), "{policy}");
    assert!(policy.contains("app.kubernetes.io/name: MyApp"), "{policy}");
    assert!(policy.contains("- port: 80"), "{policy}");

    // The deployer puts the NetworkPolicy into cluster-1, with Sveltos' metadata.
    let policy = eventually("NetworkPolicy in cluster-1", || {
        items(
            &dir,
            "cluster-1",
            &["get", "networkpolicies", "-n", "default"],
        )
        .pop()
    });
    assert_eq!(policy["metadata"]["name"], "front-my-service");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "MyApp"
    );
    assert_eq!(policy["spec"]["ingress"][0]["ports"][0]["port"], 80);
    let annotations = &policy["metadata"]["annotations"];
    assert_eq!(
        annotations["projectsveltos.io/reference-namespace"],
        "projectsveltos"
    );
    assert_eq!(
        annotations["projectsveltos.io/reference-name"],
        policy_ref["name"]
    );
    assert_eq!(
        annotations["projectsveltos.io/owner-name"],
        profile["metadata"]["name"]
    );
    assert!(
        annotations["projectsveltos.io/hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let summaries = items(&dir, "mgmt", &["get", "clustersummaries", "-n", "default"]);
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    assert_eq!(
        summaries[0]["status"]["featureSummaries"][0]["status"],
        "Provisioned"
    );

    // The Service goes: so do the profile, the ConfigMap and the NetworkPolicy.
    kubectl(&dir, "cluster-1", &["delete", "service", "my-service"]);
    eventually("withdrawal", || {
        let profiles = items(
            &dir,
            "mgmt",
            &["get", "clusterprofiles", "-l", TRIGGER_LABEL],
        );
        let maps = items(
            &dir,
            "mgmt",
            &[
                "get",
                "configmaps",
                "-n",
                "projectsveltos",
                "-l",
                TRIGGER_LABEL,
            ],
        );
        let policies = items(&dir, "cluster-1", &["get", "networkpolicies", "-A"]);
        let summaries = items(&dir, "mgmt", &["get", "clustersummaries", "-A"]);
        (profiles.is_empty() && maps.is_empty() && policies.is_empty() && summaries.is_empty())
            .then_some(())
    });
}
