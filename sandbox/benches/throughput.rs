//! Sandbox throughput on loopback: writes/s (concurrent creates over HTTP) and watch events/s
//! delivered to several concurrent watchers. Prints the figures.
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark binary

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use std::time::Instant;
use sveltos_events_sandbox::{Sandbox, SandboxOptions};

const WRITERS: usize = 16;

#[tokio::main]
async fn main() {
    let writes: usize = std::env::var("SANDBOX_BENCH_WRITES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let watchers: usize = std::env::var("SANDBOX_BENCH_WATCHERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let sb = Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: 0,
        ..Default::default()
    })
    .await
    .unwrap();
    let client = sb.clusters()[0].client().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");

    // Watchers attached from the start; each must see every write.
    let mut handles = Vec::new();
    for _ in 0..watchers {
        let api = api.clone();
        handles.push(tokio::spawn(async move {
            let mut seen = 0usize;
            let mut stream = api
                .watch(&WatchParams::default().timeout(290), "0")
                .await
                .unwrap()
                .boxed();
            while let Some(ev) = stream.next().await {
                if let Ok(WatchEvent::Added(_)) = ev {
                    seen += 1;
                    if seen == writes {
                        break;
                    }
                }
            }
            seen
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let api = api.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..writes).step_by(WRITERS) {
                let cm: ConfigMap = serde_json::from_value(
                    json!({"metadata": {"name": format!("cm-{i}")}, "data": {"i": i.to_string()}}),
                )
                .unwrap();
                api.create(&PostParams::default(), &cm).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let write_secs = start.elapsed().as_secs_f64();
    let mut delivered = 0;
    for h in handles {
        delivered += h.await.unwrap();
    }
    let watch_secs = start.elapsed().as_secs_f64();
    println!(
        "writes: {writes} in {write_secs:.3}s = {:.0} writes/s ({WRITERS} concurrent HTTP clients)",
        writes as f64 / write_secs
    );
    println!(
        "watch events: {delivered} to {watchers} watchers in {watch_secs:.3}s = {:.0} events/s",
        delivered as f64 / watch_secs
    );
    sb.shutdown().await;
}
