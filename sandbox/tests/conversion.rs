//! CRD version conversion: objects are read in the version asked for and stored in the
//! storage version; webhook CRDs go through the installed converter or, without one, call
//! the CRD's webhook over HTTPS as kube-apiserver does (a Service found through its
//! Endpoints, the certificate checked against `caBundle`); with neither, a conversion fails
//! as a real API server's fails when its webhook is unreachable.
#![allow(clippy::unwrap_used)] // test set-up

use std::sync::Arc;

use serde_json::{Value, json};
use sveltos_events_sandbox::store::{Store, WriteOptions};

fn crd(strategy: &str) -> Value {
    crd_with(json!({"strategy": strategy}))
}

fn crd_with(conversion: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "conversion": conversion,
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    })
}

fn set_up(strategy: &str) -> Store {
    set_up_with(crd(strategy))
}

fn set_up_with(crd: Value) -> Store {
    let store = Store::new();
    let crds = store
        .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .unwrap();
    store
        .create(&crds, "", crd, &WriteOptions::default())
        .unwrap();
    let v1 = store.resolve("example.com", "v1", "widgets").unwrap();
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}});
    store
        .create(&v1, "default", widget, &WriteOptions::default())
        .unwrap();
    store
}

/// Reading the stored widget at v2 fails saying `why`; returns v2 and the stored object.
fn fails_to_convert(
    store: &Store,
    why: &str,
) -> (
    Arc<sveltos_events_sandbox::registry::ResourceInfo>,
    Arc<Value>,
) {
    let v2 = store.resolve("example.com", "v2", "widgets").unwrap();
    let stored = store.get(&v2, "default", "w").unwrap();
    let error = store.to_version(&v2, &stored).unwrap_err();
    assert!(error.to_string().contains(why), "{error}");
    (v2, stored)
}

#[test]
fn webhook_crds_convert_through_the_converter_or_fail_without_one() {
    let store = set_up("Webhook");
    let (v2, stored) =
        fails_to_convert(&store, "conversion webhook for widgets.example.com failed");

    store.set_converter(Arc::new(convert));
    let converted = store.to_version(&v2, &stored).unwrap();
    assert_eq!(converted["apiVersion"], "example.com/v2");
    assert_eq!(converted["spec"]["dimensions"]["size"], 3);
    written_at_v2_is_stored_at_v1(&store);
}

/// v1 `spec.size` is v2 `spec.dimensions.size`.
fn convert(object: &Value, to: &str) -> Result<Value, String> {
    let mut out = object.clone();
    out["apiVersion"] = json!(to);
    out["spec"] = if to.ends_with("/v2") {
        json!({"dimensions": {"size": object["spec"]["size"]}})
    } else {
        json!({"size": object["spec"]["dimensions"]["size"]})
    };
    Ok(out)
}

/// A write at v2 starts from the converted object and is stored converted to v1.
fn written_at_v2_is_stored_at_v1(store: &Store) {
    let v2 = store.resolve("example.com", "v2", "widgets").unwrap();
    let opts = WriteOptions::default();
    let written = store
        .modify(&v2, "default", "w", &opts, |old| {
            assert_eq!(old["spec"]["dimensions"]["size"], 3);
            let mut new = old.clone();
            new["spec"]["dimensions"]["size"] = json!(4);
            Ok(new)
        })
        .unwrap();
    assert_eq!(written["apiVersion"], "example.com/v1");
    assert_eq!(written["spec"]["size"], 4);
}

/// A conversion webhook served over HTTPS on loopback with its own CA; returns the CA (PEM)
/// and the port.
async fn serve_webhook() -> (String, u16) {
    let ca = tls::Authority::generate("webhook-ca", std::time::Duration::from_secs(3600)).unwrap();
    let names = vec!["convert.default.svc".to_owned()];
    let serving = ca
        .issue_server(&names, std::time::Duration::from_secs(3600))
        .unwrap();
    let slot = tls::CertSlot::new(&serving.cert_pem, &serving.key_pem).unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    let listener = tls::TlsListener::new(tcp, tls::server_config(slot).unwrap()).unwrap();
    let app = axum::Router::new().route(
        "/convert",
        axum::routing::post(|body: axum::body::Bytes| async move {
            let review: Value = serde_json::from_slice(&body).unwrap();
            let request = &review["request"];
            let to = request["desiredAPIVersion"].as_str().unwrap();
            let objects: Vec<Value> = request["objects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| convert(o, to).unwrap())
                .collect();
            let answer = json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": request["uid"], "result": {"status": "Success"},
                             "convertedObjects": objects},
            });
            ([("content-type", "application/json")], answer.to_string())
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (ca.cert_pem().to_owned(), port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_crds_call_their_webhook_over_https_through_the_services_endpoints() {
    use base64::Engine;
    let (ca, port) = serve_webhook().await;
    let bundle = base64::engine::general_purpose::STANDARD.encode(&ca);
    let store = set_up_with(crd_with(json!({
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "caBundle": bundle,
            "service": {"namespace": "default", "name": "convert", "path": "/convert", "port": 443},
        }},
    })));
    let (v2, stored) = fails_to_convert(
        &store,
        "no endpoints available for service \"default/convert\"",
    );
    let endpoints = store.resolve("", "v1", "endpoints").unwrap();
    let address = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "convert"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port}]}]});
    store
        .create(&endpoints, "default", address, &WriteOptions::default())
        .unwrap();
    let converted = store.to_version(&v2, &stored).unwrap();
    assert_eq!(converted["spec"]["dimensions"]["size"], 3);
    written_at_v2_is_stored_at_v1(&store);
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
