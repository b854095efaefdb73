//! Sandbox throughput on loopback: writes/s (concurrent creates over HTTPS) and watch events/s
//! delivered to several concurrent watchers, measured with a light client (`light.rs`: the
//! sandbox's own cost) and with kube-rs (what a Rust controller sees); then what
//! authentication and authorization cost a request, with the bootstrap policy alone and with
//! 500 roles and 500 bindings more. Prints the figures.
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark binary

mod light;

use bytes::Bytes;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use std::time::Instant;
use sveltos_events_sandbox::auth::{self, Attributes, User, jwt, rbac};
use sveltos_events_sandbox::store::WriteOptions;
use sveltos_events_sandbox::{Sandbox, SandboxOptions, Store};

/// Concurrent writers (connections).
const WRITERS: usize = 16;

/// The collection every burst writes into and watches.
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// Which client a burst runs.
#[derive(Clone, Copy)]
enum Client {
    Light,
    Kube,
}

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
    let dir = std::env::temp_dir().join(format!("sandbox-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let memory = burst(None, writes, watchers, Client::Light).await;
    let durable = burst(Some(&dir), writes, watchers, Client::Light).await;
    let _ = std::fs::remove_dir_all(&dir);
    let kube = burst(None, writes, watchers, Client::Kube).await;
    for (name, b) in [
        ("in memory, light client", &memory),
        ("durable, light client", &durable),
        ("in memory, kube-rs client", &kube),
    ] {
        println!(
            "writes ({name}): {writes} in {:.3}s = {:.0} writes/s, latency p50 {:.2} ms p99 {:.2} ms \
             ({WRITERS} concurrent HTTPS connections; target: at least 20,000 writes/s)",
            b.write_secs,
            writes as f64 / b.write_secs,
            b.latency(0.50),
            b.latency(0.99),
        );
        println!(
            "watch events ({name}): {} to {watchers} watchers in {:.3}s = {:.0} events/s \
             (target: at least 200,000 events/s)",
            b.delivered,
            b.watch_secs,
            b.delivered as f64 / b.watch_secs
        );
    }
    println!(
        "durable state costs {:.2}x the in-memory write time (target: at most 3x)",
        durable.write_secs / memory.write_secs
    );
    for extra in [0, 500] {
        authorization(extra);
    }
}

/// What one burst of writes measured.
struct Burst {
    write_secs: f64,
    /// Every write's latency, seconds, sorted.
    latencies: Vec<f64>,
    delivered: usize,
    watch_secs: f64,
}

impl Burst {
    /// The `q` quantile of write latency, milliseconds.
    fn latency(&self, q: f64) -> f64 {
        let at = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
        self.latencies[at] * 1e3
    }
}

/// `writes` concurrent creates of ConfigMaps, watched by `watchers` that each must see every
/// one, on a sandbox in memory or keeping its state in `dir`.
async fn burst(
    dir: Option<&std::path::Path>,
    writes: usize,
    watchers: usize,
    client: Client,
) -> Burst {
    let sb = Sandbox::start(SandboxOptions {
        dir: dir.map(ToOwned::to_owned),
        managed_clusters: 0,
        durable: dir.is_some(),
        ..Default::default()
    })
    .await
    .unwrap();
    let cluster = &sb.clusters()[0];
    let target = light::Target::of(cluster);
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().unwrap(), "default");
    let configmap =
        |i: usize| json!({"metadata": {"name": format!("cm-{i}")}, "data": {"i": i.to_string()}});

    // Watchers attached from the start; each must see every write.
    let mut handles = Vec::new();
    for _ in 0..watchers {
        handles.push(match client {
            Client::Light => {
                let target = target.clone();
                tokio::spawn(async move { target.watch(CONFIGMAPS, writes).await })
            }
            Client::Kube => tokio::spawn(kube_watch(api.clone(), writes)),
        });
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let bodies: Vec<Bytes> = (0..writes)
        .map(|i| Bytes::from(configmap(i).to_string()))
        .collect();
    let start = Instant::now();
    let mut latencies = match client {
        Client::Light => target.create_all(CONFIGMAPS, bodies, WRITERS).await,
        Client::Kube => kube_create_all(&api, writes, &configmap).await,
    };
    latencies.sort_by(f64::total_cmp);
    let write_secs = start.elapsed().as_secs_f64();
    let mut delivered = 0;
    for h in handles {
        delivered += h.await.unwrap();
    }
    let watch_secs = start.elapsed().as_secs_f64();
    sb.shutdown().await;
    Burst {
        write_secs,
        latencies,
        delivered,
        watch_secs,
    }
}

/// A kube-rs watch of `api` that returns once it has seen `writes` additions.
async fn kube_watch(api: Api<ConfigMap>, writes: usize) -> usize {
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
}

/// Creates `configmap(i)` for every `i` below `writes` through kube-rs, `WRITERS` at once;
/// returns each create's latency, seconds.
async fn kube_create_all(
    api: &Api<ConfigMap>,
    writes: usize,
    configmap: &(dyn Fn(usize) -> serde_json::Value + Sync),
) -> Vec<f64> {
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let api = api.clone();
        let objects: Vec<ConfigMap> = (w..writes)
            .step_by(WRITERS)
            .map(|i| serde_json::from_value(configmap(i)).unwrap())
            .collect();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            for cm in objects {
                let sent = Instant::now();
                api.create(&PostParams::default(), &cm).await.unwrap();
                latencies.push(sent.elapsed().as_secs_f64());
            }
            latencies
        }));
    }
    joined(tasks).await
}

/// Every latency the writer `tasks` measured, once all are done.
async fn joined(tasks: Vec<tokio::task::JoinHandle<Vec<f64>>>) -> Vec<f64> {
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    latencies
}

/// Creates `obj` (a `kind` object) in `store`, which must accept it.
fn create(store: &Store, group: &str, plural: &str, namespace: &str, obj: serde_json::Value) {
    let info = store.resolve(group, "v1", plural).unwrap();
    store
        .create(&info, namespace, obj, &WriteOptions::default())
        .unwrap();
}

/// The cost of deciding a request (RBAC alone) and of admitting it (token, impersonation and
/// RBAC) for the admin and for a ServiceAccount, with `extra` more roles and bindings.
fn authorization(extra: usize) {
    const RBAC: &str = "rbac.authorization.k8s.io";
    let store = Store::new();
    auth::bootstrap::install(&store);
    for i in 0..50 {
        create(
            &store,
            "",
            "namespaces",
            "",
            json!({"metadata": {"name": format!("ns{i}")}}),
        );
    }
    create(
        &store,
        "",
        "serviceaccounts",
        "ns0",
        json!({"metadata": {"name": "sa"}}),
    );
    let rule = |resource: String| json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": [resource]});
    create(
        &store,
        RBAC,
        "roles",
        "ns0",
        json!({"metadata": {"name": "reader"}, "rules": [rule("configmaps".into())]}),
    );
    create(
        &store,
        RBAC,
        "rolebindings",
        "ns0",
        json!({"metadata": {"name": "reader"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns0"}]}),
    );
    for i in 0..extra {
        let ns = format!("ns{}", i % 50);
        create(
            &store,
            RBAC,
            "roles",
            &ns,
            json!({"metadata": {"name": format!("r{i}")},
            "rules": [rule(format!("things{i}")), rule("secrets".into())]}),
        );
        // Every tenth binding also names the measured account, as a busy tenant's would.
        let mut subjects =
            vec![json!({"kind": "ServiceAccount", "name": format!("other{i}"), "namespace": ns})];
        if i % 10 == 0 {
            subjects.push(json!({"kind": "ServiceAccount", "name": "sa", "namespace": "ns0"}));
        }
        create(
            &store,
            RBAC,
            "rolebindings",
            &ns,
            json!({"metadata": {"name": format!("b{i}")},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": format!("r{i}")}, "subjects": subjects}),
        );
    }
    let account = store
        .get(
            &store.resolve("", "v1", "serviceaccounts").unwrap(),
            "ns0",
            "sa",
        )
        .unwrap();
    let uid = account["metadata"]["uid"].as_str().unwrap();
    let now = auth::authn::now();
    let token = store.signing_key().sign(&jwt::bound_claims(
        "ns0",
        "sa",
        uid,
        &[jwt::ISSUER.into()],
        now,
        3600,
    ));
    let attrs = Attributes::resource("get", "", "configmaps", "ns0", "x");
    let policy = store.policy();
    let sa = User::service_account("ns0", "sa", uid);
    const N: u32 = 200_000;
    let time = |f: &dyn Fn() -> bool| {
        let start = Instant::now();
        for _ in 0..N {
            assert!(f());
        }
        start.elapsed().as_secs_f64() * 1e6 / f64::from(N)
    };
    let decide_sa = time(&|| rbac::authorize(&policy, &sa, &attrs).allowed);
    let mut admin_headers = axum::http::HeaderMap::new();
    admin_headers.insert(
        "authorization",
        format!("Bearer {}", auth::ADMIN_TOKEN).parse().unwrap(),
    );
    let mut sa_headers = axum::http::HeaderMap::new();
    sa_headers.insert("authorization", format!("Bearer {token}").parse().unwrap());
    let admit_admin = time(&|| auth::admit(&store, &admin_headers, &attrs).is_ok());
    let admit_sa = time(&|| auth::admit(&store, &sa_headers, &attrs).is_ok());
    println!(
        "authorization with {extra} extra roles and bindings: RBAC decision {decide_sa:.2} µs \
         (ServiceAccount); whole admission {admit_admin:.2} µs (admin), {admit_sa:.2} µs \
         (ServiceAccount bound token)"
    );
}
