//! CRD version conversion: objects are read in the version asked for; webhook CRDs go through
//! the installed converter, and without one a read at another version fails as a real API
//! server fails when its webhook is unreachable.
#![allow(clippy::unwrap_used)] // test set-up

use std::sync::Arc;

use serde_json::{Value, json};
use sveltos_events_sandbox::store::{Store, WriteOptions};

fn crd(strategy: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "conversion": {"strategy": strategy},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    })
}

fn set_up(strategy: &str) -> Store {
    let store = Store::new();
    let crds = store
        .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .unwrap();
    store
        .create(&crds, "", crd(strategy), &WriteOptions::default())
        .unwrap();
    let v1 = store.resolve("example.com", "v1", "widgets").unwrap();
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}});
    store
        .create(&v1, "default", widget, &WriteOptions::default())
        .unwrap();
    store
}

#[test]
fn webhook_crds_convert_through_the_converter_or_fail_without_one() {
    let store = set_up("Webhook");
    let v2 = store.resolve("example.com", "v2", "widgets").unwrap();
    let stored = store.get(&v2, "default", "w").unwrap();
    let error = store.to_version(&v2, &stored).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("conversion webhook for widgets.example.com is not available"),
        "{error}"
    );

    store.set_converter(Arc::new(|object: &Value, to: &str| {
        let mut out = object.clone();
        out["apiVersion"] = json!(to);
        out["spec"] = json!({"dimensions": {"size": object["spec"]["size"]}});
        Ok(out)
    }));
    let converted = store.to_version(&v2, &stored).unwrap();
    assert_eq!(converted["apiVersion"], "example.com/v2");
    assert_eq!(converted["spec"]["dimensions"]["size"], 3);

    // A write at v2 starts from the converted object.
    let opts = WriteOptions::default();
    let written = store
        .modify(&v2, "default", "w", &opts, |old| {
            assert_eq!(old["spec"]["dimensions"]["size"], 3);
            let mut new = old.clone();
            new["spec"]["dimensions"]["size"] = json!(4);
            Ok(new)
        })
        .unwrap();
    assert_eq!(written["apiVersion"], "example.com/v2");
}

#[test]
fn crds_without_a_webhook_are_relabelled() {
    let store = set_up("None");
    let v2 = store.resolve("example.com", "v2", "widgets").unwrap();
    let stored = store.get(&v2, "default", "w").unwrap();
    let read = store.to_version(&v2, &stored).unwrap();
    assert_eq!(read["apiVersion"], "example.com/v2");
    assert_eq!(read["spec"]["size"], 3);
}
