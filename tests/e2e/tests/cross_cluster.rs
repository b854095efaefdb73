//! End to end: the seed documents' cross-cluster scenario (destinationClusterSelector). A
//! load-balancer Service in cluster-2 (env=production) yields a selector-less Service and its
//! Endpoints in cluster-1 (dep=eng), and nothing in cluster-2.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use sveltos_events_e2e as common;

use common::{apply_example, eventually, items, kubectl, start};

#[test]
fn a_load_balancer_in_one_cluster_is_reachable_by_name_in_another() {
    let sandbox = start(2);
    let dir = sandbox.dir.clone();
    apply_example(&dir, "mgmt", "cross-cluster", "");
    apply_example(&dir, "cluster-2", "cross-cluster", "managed/service.yaml");
    // Not an event until the load balancer has an address.
    common::give_load_balancer_an_address(&dir, "cluster-2");

    let endpoints = eventually("Endpoints in cluster-1", || {
        items(&dir, "cluster-1", &["get", "endpoints", "-n", "external"]).pop()
    });
    assert_eq!(endpoints["metadata"]["name"], "external-my-lb-service");
    assert_eq!(
        endpoints["subsets"][0]["addresses"][0]["ip"],
        "34.172.32.172"
    );
    assert_eq!(endpoints["subsets"][0]["ports"][0]["port"], 60000);
    let service = eventually("Service in cluster-1", || {
        items(&dir, "cluster-1", &["get", "services", "-n", "external"]).pop()
    });
    assert_eq!(service["metadata"]["name"], "external-my-lb-service");
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 50001);
    // The source cluster gets nothing.
    let namespaces = items(&dir, "cluster-2", &["get", "namespaces"]);
    assert!(
        !namespaces
            .iter()
            .any(|n| n["metadata"]["name"] == "external")
    );

    // The load balancer goes: so do the Service and Endpoints in cluster-1.
    kubectl(
        &dir,
        "cluster-2",
        &["delete", "service", "my-lb-service", "-n", "test"],
    );
    eventually("cleanup in cluster-1", || {
        let services = items(&dir, "cluster-1", &["get", "services", "-n", "external"]);
        let endpoints = items(&dir, "cluster-1", &["get", "endpoints", "-n", "external"]);
        (services.is_empty() && endpoints.is_empty()).then_some(())
    });
}
