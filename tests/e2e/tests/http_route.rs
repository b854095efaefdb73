//! End to end: the seed documents' HTTPRoute scenario in its 2023 form (v1alpha1 EventSource
//! and EventBasedAddOn, a ConfigMap without the instantiate annotation), applied with kubectl.
//! The HTTPRoute kind arrives in the managed cluster after the event: the deployer says so in
//! the ClusterSummary and deploys once the CRD is there.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use sveltos_events_e2e as common;

use common::{apply_example, eventually, items, kubectl, start};

const SUMMARY_NAMESPACE: &str = "default";

#[test]
fn a_port_80_service_gets_an_http_route_once_its_kind_exists() {
    let sandbox = start(1);
    let dir = sandbox.dir.clone();
    apply_example(&dir, "mgmt", "http-route", "");
    apply_example(&dir, "cluster-1", "http-route", "managed/services.yaml");

    // The event is there, but cluster-1 has no HTTPRoute kind yet: a failure in words.
    let failure = eventually("a ClusterSummary naming the missing kind", || {
        items(&dir, "mgmt", &["get", "clustersummaries", "-A"])
            .into_iter()
            .find_map(|summary| {
                let message = summary["status"]["featureSummaries"][0]["failureMessage"]
                    .as_str()?
                    .to_owned();
                message.contains("HTTPRoute").then_some(message)
            })
    });
    assert!(failure.contains("gateway.networking.k8s.io"), "{failure}");

    apply_example(
        &dir,
        "cluster-1",
        "http-route",
        "managed/gateway-api-crd.yaml",
    );
    let route = eventually("the HTTPRoute for web", || {
        items(&dir, "cluster-1", &["get", "httproutes", "-n", "eng"]).pop()
    });
    assert_eq!(route["metadata"]["name"], "web");
    assert_eq!(route["metadata"]["labels"]["app.kubernetes.io/name"], "web");
    let rule = &route["spec"]["rules"][0];
    assert_eq!(rule["matches"][0]["path"]["value"], "/web");
    assert_eq!(rule["backendRefs"][0]["name"], "web");
    assert_eq!(rule["backendRefs"][0]["port"], 80);
    assert_eq!(route["spec"]["parentRefs"][0]["name"], "contour");
    // Only the port-80 Service is an event.
    assert_eq!(
        items(&dir, "cluster-1", &["get", "httproutes", "-n", "eng"]).len(),
        1
    );
    // The EventBasedAddOn stands for an EventTrigger of its name.
    let triggers = items(&dir, "mgmt", &["get", "eventtriggers"]);
    assert_eq!(triggers.len(), 1);
    assert_eq!(triggers[0]["metadata"]["name"], "service-http-route");
    eventually("a provisioned ClusterSummary", || {
        items(
            &dir,
            "mgmt",
            &["get", "clustersummaries", "-n", SUMMARY_NAMESPACE],
        )
        .into_iter()
        .any(|s| s["status"]["featureSummaries"][0]["status"] == "Provisioned")
        .then_some(())
    });

    // The Service goes: so does its route.
    kubectl(
        &dir,
        "cluster-1",
        &["delete", "service", "web", "-n", "eng"],
    );
    eventually("the HTTPRoute removed", || {
        items(&dir, "cluster-1", &["get", "httproutes", "-n", "eng"])
            .is_empty()
            .then_some(())
    });
}
