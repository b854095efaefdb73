//! The conversion webhook over HTTPS on the sandbox: the first replica makes the CA and the
//! certificate in a Secret, a second replica serves the same ones, the CA bundle lands in every
//! converted CRD, an API server's client trusting that bundle converts a v1alpha1
//! EventTrigger through it, and a certificate near its end is renewed under the same CA.
#![allow(clippy::unwrap_used)] // test code

mod support;

use controller::webhook::Webhook;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use rustls_pki_types::ServerName;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn webhook() -> Webhook {
    Webhook {
        namespace: "projectsveltos".into(),
        service: api::crd::CONVERSION_SERVICE.into(),
        secret: "sveltos-events-webhook-tls".into(),
    }
}

/// Starts one replica's webhook; returns its address.
async fn replica(client: &kube::Client) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = controller::serve::webhook_router();
    let client = client.clone();
    tokio::spawn(async move { webhook().serve(client, listener, router).await });
    addr
}

/// POSTs a ConversionReview to `addr` as the API server does: TLS to the Service's DNS name,
/// trusting only the CRD's caBundle.
async fn convert(addr: std::net::SocketAddr, ca_bundle: &[u8], review: &Value) -> Value {
    let config = tls::client_config(std::str::from_utf8(ca_bundle).unwrap()).unwrap();
    let host = "sveltos-events-manager.projectsveltos.svc";
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(config)
        .connect(ServerName::try_from(host).unwrap(), tcp)
        .await
        .unwrap();
    let body = review.to_string();
    let request = format!(
        "POST /convert HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tls.read_to_string(&mut answer).await.unwrap();
    let (_, body) = answer.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap()
}

/// The sandbox with the CRDs and Sveltos' namespace, where the webhook's Secret goes.
async fn sandbox_with_namespace() -> (sandbox::Sandbox, kube::Client) {
    let (sandbox, mgmt) = support::sandbox_with_crds(0).await;
    let namespaces: Api<Namespace> = Api::all(mgmt.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "projectsveltos"}})).unwrap(),
        )
        .await
        .unwrap();
    (sandbox, mgmt)
}

async fn secret(client: &kube::Client) -> Option<Secret> {
    Api::<Secret>::namespaced(client.clone(), "projectsveltos")
        .get_opt("sveltos-events-webhook-tls")
        .await
        .unwrap()
}

fn key(secret: &Secret, k: &str) -> Vec<u8> {
    secret.data.as_ref().unwrap()[k].0.clone()
}

#[tokio::test]
async fn replicas_share_one_ca_whose_bundle_reaches_the_crds_and_converts() {
    let (sandbox, mgmt) = sandbox_with_namespace().await;

    let first = replica(&mgmt).await;
    let crds: Api<CustomResourceDefinition> = Api::all(mgmt.clone());
    let converted = [
        "eventtriggers.lib.projectsveltos.io",
        "eventsources.lib.projectsveltos.io",
    ];
    let bundle_of = |crd: CustomResourceDefinition| {
        crd.spec
            .conversion?
            .webhook?
            .client_config?
            .ca_bundle
            .map(|b| b.0)
    };
    support::eventually("the CA bundle in every converted CRD", || async {
        let Some(secret) = secret(&mgmt).await else {
            return false;
        };
        let ca = key(&secret, "ca.crt");
        for name in converted {
            if bundle_of(crds.get(name).await.unwrap()) != Some(ca.clone()) {
                return false;
            }
        }
        true
    })
    .await;
    let made = secret(&mgmt).await.unwrap();
    let ca = key(&made, "ca.crt");
    // A CRD that does not convert through our webhook is left alone.
    assert_eq!(
        bundle_of(
            crds.get("clusterprofiles.config.projectsveltos.io")
                .await
                .unwrap()
        ),
        None
    );

    // A second replica takes the same CA and certificate: nothing is rewritten.
    let second = replica(&mgmt).await;
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "1", "desiredAPIVersion": "lib.projectsveltos.io/v1beta1",
            "objects": [{"apiVersion": "lib.projectsveltos.io/v1alpha1", "kind": "EventTrigger",
                "metadata": {"name": "t"},
                "spec": {"sourceClusterSelector": "env=fv", "eventSourceName": "s"}}]}
    });
    for addr in [first, second] {
        let answer = convert(addr, &ca, &review).await;
        assert_eq!(
            answer["response"]["result"]["status"], "Success",
            "{answer}"
        );
        let object = &answer["response"]["convertedObjects"][0];
        assert_eq!(object["apiVersion"], "lib.projectsveltos.io/v1beta1");
        assert_eq!(
            object["spec"]["sourceClusterSelector"]["matchLabels"]["env"], "fv",
            "{object}"
        );
    }
    assert_eq!(
        secret(&mgmt).await.unwrap().metadata.resource_version,
        made.metadata.resource_version
    );

    // A CRD whose bundle someone removed gets it back.
    let strip = json!({"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": null}}}}});
    crds.patch(converted[0], &PatchParams::default(), &Patch::Merge(&strip))
        .await
        .unwrap();
    support::eventually("the CA bundle written again", || async {
        bundle_of(crds.get(converted[0]).await.unwrap()) == Some(ca.clone())
    })
    .await;

    // A certificate with a third of its life or less left is renewed, under the same CA.
    let mut aged = made.clone();
    aged.metadata.annotations.as_mut().unwrap().insert(
        "sveltos-events.io/tls-not-after".into(),
        (std::time::SystemTime::now() + std::time::Duration::from_secs(86_400))
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            .to_string(),
    );
    aged.metadata.managed_fields = None;
    Api::<Secret>::namespaced(mgmt.clone(), "projectsveltos")
        .replace("sveltos-events-webhook-tls", &PostParams::default(), &aged)
        .await
        .unwrap();
    let third = replica(&mgmt).await;
    support::eventually("the certificate renewed", || async {
        let now = secret(&mgmt).await.unwrap();
        key(&now, "tls.crt") != key(&made, "tls.crt")
    })
    .await;
    let renewed = secret(&mgmt).await.unwrap();
    assert_eq!(key(&renewed, "ca.crt"), ca);
    let answer = convert(third, &ca, &review).await;
    assert_eq!(
        answer["response"]["result"]["status"], "Success",
        "{answer}"
    );
    sandbox.shutdown().await;
}

#[tokio::test]
async fn a_replica_starting_during_an_outage_waits_it_out() {
    let (sandbox, mgmt) = sandbox_with_namespace().await;
    let outage = sandbox::faults::Fault::Errors {
        code: 503,
        share: 1.0,
    };
    let store = &sandbox.cluster("mgmt").unwrap().store;
    store
        .faults()
        .inject(outage, std::time::Duration::from_millis(1500));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let router = controller::serve::webhook_router();
    let client = mgmt.clone();
    let serving = tokio::spawn(async move { webhook().serve(client, listener, router).await });
    let secrets = Api::<Secret>::namespaced(mgmt.clone(), "projectsveltos");
    support::eventually("the CA and certificate made after the outage", || async {
        let found = secrets.get_opt("sveltos-events-webhook-tls").await;
        found.is_ok_and(|s| s.is_some())
    })
    .await;
    assert!(!serving.is_finished(), "{:?}", serving.await);
    serving.abort();
    sandbox.shutdown().await;
}
