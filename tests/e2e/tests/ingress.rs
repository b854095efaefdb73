//! End to end: the seed documents' Ingress scenario (oneForEvent: false). Every https Service
//! of namespace eng in cluster-1 is routed by one Ingress, re-rendered as Services come and go.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use sveltos_events_e2e as common;

use common::{apply_example, eventually, items, kubectl, profiles_of, start};
use serde_json::Value;

fn paths(ingress: &Value) -> Vec<(String, i64)> {
    ingress["spec"]["rules"][0]["http"]["paths"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let backend = &p["backend"]["service"];
            (
                backend["name"].as_str().unwrap_or_default().to_owned(),
                backend["port"]["number"].as_i64().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn one_ingress_routes_every_https_service_and_follows_them() {
    let sandbox = start(1);
    let dir = sandbox.dir.clone();
    apply_example(&dir, "mgmt", "ingress", "");
    apply_example(&dir, "cluster-1", "ingress", "managed/services.yaml");

    let ingress = eventually("the Ingress with both https Services", || {
        let ingress = items(&dir, "cluster-1", &["get", "ingresses", "-n", "default"]).pop()?;
        (paths(&ingress).len() == 2).then_some(ingress)
    });
    assert_eq!(
        paths(&ingress),
        [
            ("my-service".to_owned(), 443),
            ("my-service-2".to_owned(), 8443)
        ]
    );
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][0]["path"],
        "/my-service"
    );
    assert_eq!(ingress["spec"]["ingressClassName"], "http-ingress");
    // One event for all Services: one ClusterProfile.
    let profiles = profiles_of(&dir, "ingress-configuration");
    assert_eq!(profiles.len(), 1);

    // One https Service goes: the Ingress is rendered again without it.
    kubectl(
        &dir,
        "cluster-1",
        &["delete", "service", "my-service-2", "-n", "eng"],
    );
    eventually("the Ingress without my-service-2", || {
        let ingress = items(&dir, "cluster-1", &["get", "ingresses", "-n", "default"]).pop()?;
        (paths(&ingress) == [("my-service".to_owned(), 443)]).then_some(())
    });

    // The last one goes: no event, no Ingress.
    kubectl(
        &dir,
        "cluster-1",
        &["delete", "service", "my-service", "-n", "eng"],
    );
    eventually("no Ingress", || {
        items(&dir, "cluster-1", &["get", "ingresses", "-A"])
            .is_empty()
            .then_some(())
    });
}
