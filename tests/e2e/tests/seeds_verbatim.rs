//! End to end with the seed documents' own YAML, unchanged: a v1alpha1 EventSource (with the
//! documentation's `labelsFilters` spelling), a v1alpha1 EventBasedAddOn with a string selector
//! and a ConfigMap without the instantiate annotation (2023's rule), applied with kubectl.
//! The conversion webhook path (v1alpha1 <-> v1beta1) and the EventBasedAddOn reconciler make
//! the Service of the document produce the NetworkPolicy the document shows.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use sveltos_events_e2e as common;

use common::{eventually, items, kubectl, start};

fn seed(file: &str) -> String {
    common::example("seeds", file)
}

#[test]
fn the_seed_documents_network_policy_example_works_as_written() {
    let sandbox = start(1);
    let dir = sandbox.dir.clone();
    kubectl(
        &dir,
        "mgmt",
        &[
            "apply",
            "-f",
            &seed("001-05-eventsource-label-filters.yaml"),
            "-f",
            &seed("001-08-networkpolicy-eventbasedaddon.yaml"),
        ],
    );
    kubectl(
        &dir,
        "cluster-1",
        &["apply", "-f", &seed("001-09-service-my-service.yaml")],
    );

    // Read back in both versions: the same object.
    let alpha = items(
        &dir,
        "mgmt",
        &["get", "eventsources.v1alpha1.lib.projectsveltos.io"],
    )
    .pop()
    .unwrap();
    assert_eq!(alpha["apiVersion"], "lib.projectsveltos.io/v1alpha1");
    let beta = items(
        &dir,
        "mgmt",
        &["get", "eventsources.v1beta1.lib.projectsveltos.io"],
    )
    .pop()
    .unwrap();
    assert_eq!(beta["spec"]["resourceSelectors"][0]["kind"], "Service");
    assert_eq!(
        beta["spec"]["resourceSelectors"][0]["labelFilters"][0]["key"],
        "sveltos"
    );

    // The document's result: NetworkPolicy front-my-service in the Service's cluster.
    let policy = eventually("NetworkPolicy from the seed", || {
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
    assert_eq!(
        policy["metadata"]["annotations"]["projectsveltos.io/reference-namespace"],
        "projectsveltos"
    );

    // Deleting the EventBasedAddOn removes everything it caused.
    kubectl(
        &dir,
        "mgmt",
        &["delete", "eventbasedaddon", "service-network-policy"],
    );
    eventually("withdrawal", || {
        let policies = items(&dir, "cluster-1", &["get", "networkpolicies", "-A"]);
        let triggers = items(&dir, "mgmt", &["get", "eventtriggers"]);
        (policies.is_empty() && triggers.is_empty()).then_some(())
    });
}
