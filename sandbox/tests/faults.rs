//! Faults injected into a cluster's API server reach clients as a real server's would: a
//! share of requests answered 429 (with `Retry-After`), 503 or 500, updates answered 409,
//! latency, watches dropped or told their version is gone; kube-rs' retries and
//! kube-runtime's watcher ride through them; only cluster admins may inject them.
#![allow(clippy::unwrap_used)] // test code

use futures_util::StreamExt;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use sveltos_events_sandbox::faults::Fault;
use sveltos_events_sandbox::{Sandbox, SandboxOptions};

async fn sandbox() -> Sandbox {
    Sandbox::start(SandboxOptions {
        managed_clusters: 0,
        ..Default::default()
    })
    .await
    .unwrap()
}

/// A client that tells every answer as it came (no retries).
fn raw_client(sb: &Sandbox) -> kube::Client {
    let mut config = sb.clusters()[0].config().unwrap();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// A request to the faults endpoint: its status code and body.
async fn faults(client: &kube::Client, method: &str, body: Value) -> (u16, Value) {
    let request = axum::http::Request::builder()
        .method(method)
        .uri("/sandbox/faults")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let response = client.send(request.map(Into::into)).await.unwrap();
    let code = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

fn status_code(error: &kube::Error) -> u16 {
    match error {
        kube::Error::Api(status) => status.code,
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn injected_faults_are_answered_as_a_real_server_answers_them() {
    let sb = sandbox().await;
    let client = raw_client(&sb);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    maps.create(&pp, &config_map("a")).await.unwrap();

    let (code, said) = faults(
        &client,
        "POST",
        json!({"kind": "errors", "code": 429, "share": 0.5, "seconds": 30}),
    )
    .await;
    assert_eq!(code, 201, "{said}");
    assert_eq!(said["items"][0]["kind"], "errors");
    let mut answers = Vec::new();
    for _ in 0..20 {
        answers.push(
            maps.list(&ListParams::default())
                .await
                .err()
                .map(|e| status_code(&e)),
        );
    }
    let shed = answers.iter().filter(|a| **a == Some(429)).count();
    assert!(
        (5..=15).contains(&shed),
        "{shed} of 20 lists shed, not about half"
    );
    assert_eq!(answers.iter().flatten().count(), shed, "nothing else fails");
    let request = axum::http::Request::get("/api/v1/namespaces/default/configmaps")
        .body(Vec::new())
        .unwrap();
    let mut shed = None;
    for _ in 0..20 {
        let response = client.send(request.clone().map(Into::into)).await.unwrap();
        if response.status() == 429 {
            shed = response.headers().get("retry-after").cloned();
        }
    }
    assert_eq!(shed.unwrap(), "1");

    // With its default retries, a kube-rs client rides through a 503 every other request.
    faults(&client, "DELETE", json!({})).await;
    faults(
        &client,
        "POST",
        json!({"kind": "errors", "code": 503, "share": 0.5, "seconds": 30}),
    )
    .await;
    let retrying: Api<ConfigMap> = Api::namespaced(sb.clusters()[0].client().unwrap(), "default");
    for _ in 0..6 {
        retrying.get("a").await.unwrap();
    }
    let (_, listed) = faults(&client, "GET", json!({})).await;
    assert_eq!(listed["items"][0]["code"], 503);

    // Updates conflict; creates and reads do not.
    faults(&client, "DELETE", json!({})).await;
    faults(
        &client,
        "POST",
        json!({"kind": "conflicts", "share": 1, "seconds": 30}),
    )
    .await;
    let current = maps.get("a").await.unwrap();
    let refused = maps.replace("a", &pp, &current).await.unwrap_err();
    assert_eq!(status_code(&refused), 409);
    maps.create(&pp, &config_map("b")).await.unwrap();

    // Latency, for its time only.
    faults(&client, "DELETE", json!({})).await;
    faults(
        &client,
        "POST",
        json!({"kind": "latency", "millis": 300, "seconds": 1}),
    )
    .await;
    let started = Instant::now();
    maps.get("a").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    maps.get("a").await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(300));

    // What is not a fault is refused, and only admins may inject one.
    let (code, said) = faults(
        &client,
        "POST",
        json!({"kind": "errors", "code": 404, "share": 1, "seconds": 5}),
    )
    .await;
    assert_eq!(code, 400, "{said}");
    assert!(
        said["message"]
            .as_str()
            .unwrap()
            .contains("500, 503 or 429")
    );
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    accounts
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "tenant"}})).unwrap(),
        )
        .await
        .unwrap();
    let token = accounts
        .create_token_request("tenant", &pp, &TokenRequest::default())
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let mut config = sb.clusters()[0].config().unwrap();
    config.auth_info.token = Some(token.into());
    let tenant = kube::Client::try_from(config).unwrap();
    let (code, _) = faults(
        &tenant,
        "POST",
        json!({"kind": "dropWatches", "seconds": 5}),
    )
    .await;
    assert_eq!(code, 403);
    let (_, listed) = faults(&client, "GET", json!({})).await;
    assert_eq!(listed["items"], json!([]));
    sb.shutdown().await;
}

#[tokio::test]
async fn watches_end_when_dropped_and_a_watcher_lists_again_and_misses_nothing() {
    let sb = sandbox().await;
    let cluster = &sb.clusters()[0];
    let client = raw_client(&sb);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    let first = maps.create(&pp, &config_map("first")).await.unwrap();
    let rv = first.metadata.resource_version.clone().unwrap();

    let mut open = maps
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    cluster
        .store
        .faults()
        .inject(Fault::DropWatches, Duration::from_millis(500));
    let ended = tokio::time::timeout(Duration::from_secs(5), open.next()).await;
    assert!(matches!(ended, Ok(None)), "the open watch ended");
    let mut fresh = maps
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let ended = tokio::time::timeout(Duration::from_secs(5), fresh.next()).await;
    assert!(matches!(ended, Ok(None)), "a new watch ends at once");

    tokio::time::sleep(Duration::from_millis(600)).await;
    cluster
        .store
        .faults()
        .inject(Fault::ExpireWatches, Duration::from_secs(1));
    let mut resumed = maps
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match resumed.next().await {
        Some(Ok(WatchEvent::Error(status))) => assert_eq!(status.code, 410),
        other => panic!("not a 410: {other:?}"),
    }

    // kube-runtime's watcher starts by listing, resumes, meets the 410 and the dropped
    // watches, lists again, and still sees every object.
    let names = watcher(maps.clone(), watcher::Config::default())
        .applied_objects()
        .filter_map(|object| async move { object.ok()?.metadata.name });
    let mut names = Box::pin(names);
    assert_eq!(names.next().await.unwrap(), "first");
    cluster
        .store
        .faults()
        .inject(Fault::DropWatches, Duration::from_millis(300));
    maps.create(&pp, &config_map("second")).await.unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if names.next().await.unwrap() == "second" {
                break;
            }
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "the watcher never saw the object made while watches dropped"
    );
    sb.shutdown().await;
}
