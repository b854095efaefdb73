//! A durable sandbox stopped and started again on the same folder: the objects, the
//! resourceVersions, the served custom resources, the allocated addresses, the tokens, the
//! ports and the watch history are all still there.
#![allow(clippy::unwrap_used)] // test code

use futures_util::StreamExt;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;
use std::path::{Path, PathBuf};
use sveltos_events_sandbox::{Sandbox, SandboxOptions};

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sbx-durable-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// One durable cluster whose state `dir` keeps.
fn durable(dir: &Path) -> SandboxOptions {
    SandboxOptions {
        dir: Some(dir.to_owned()),
        managed_clusters: 0,
        durable: true,
        ..Default::default()
    }
}

async fn start(dir: &Path) -> Sandbox {
    Sandbox::start(durable(dir)).await.unwrap()
}

fn rv(meta: &kube::api::ObjectMeta) -> u64 {
    meta.resource_version.as_deref().unwrap().parse().unwrap()
}

fn crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

fn widgets(client: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk(&gvk))
}

#[tokio::test]
async fn a_restarted_sandbox_has_everything_it_answered() {
    let dir = folder("restart");
    let sb = start(&dir).await;
    let addr = sb.clusters()[0].addr;
    let client = sb.clusters()[0].client().unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    let first = maps
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "a"}})).unwrap(),
        )
        .await
        .unwrap();
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        )),
    );
    crds.create(&pp, &serde_json::from_value(crd()).unwrap())
        .await
        .unwrap();
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 3}
    }))
    .unwrap();
    widgets(&client).create(&pp, &widget).await.unwrap();
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let service = |name: &str| -> Service {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}),
        )
        .unwrap()
    };
    let before = services.create(&pp, &service("before")).await.unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    accounts
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap(),
        )
        .await
        .unwrap();
    let token = accounts
        .create_token_request(
            "robot",
            &pp,
            &TokenRequest {
                spec: TokenRequestSpec::default(),
                ..TokenRequest::default()
            },
        )
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let deleted = maps
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "gone"}})).unwrap(),
        )
        .await
        .unwrap();
    maps.delete("gone", &Default::default()).await.unwrap();
    let last = maps.list(&ListParams::default()).await.unwrap().metadata;
    sb.shutdown().await;

    let sb = start(&dir).await;
    assert_eq!(sb.clusters()[0].addr, addr, "the port was free: it is kept");
    let client = sb.clusters()[0].client().unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let again = maps.get("a").await.unwrap();
    assert_eq!(again.metadata.uid, first.metadata.uid);
    assert_eq!(rv(&again.metadata), rv(&first.metadata));
    assert!(maps.get_opt("gone").await.unwrap().is_none());
    let w = widgets(&client).get("w").await.unwrap();
    assert_eq!(w.data["spec"]["size"], 3, "the CRD is served again");
    // resourceVersions go on upward, and allocated cluster IPs are not handed out twice.
    let list_rv: u64 = maps
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(Some(list_rv.to_string()), last.resource_version);
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let after = services.create(&pp, &service("after")).await.unwrap();
    assert!(rv(&after.metadata) > list_rv);
    let ip = |s: &Service| s.spec.as_ref().unwrap().cluster_ip.clone().unwrap();
    assert_ne!(ip(&after), ip(&before));
    // A token issued before the restart still signs its account in.
    let mut config = sb.clusters()[0].config().unwrap();
    config.auth_info.token = Some(token.into());
    let robot = kube::Client::try_from(config).unwrap();
    let refused = Api::<ConfigMap>::namespaced(robot, "default")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    // 403: known, and not allowed to list; an unknown token would get 401.
    assert!(
        matches!(&refused, kube::Error::Api(s) if s.code == 403 && s.message.contains("system:serviceaccount:default:robot")),
        "{refused:?}"
    );
    // A watch from before the restart resumes: it is told of the deletion it missed.
    let mut events = maps
        .watch(&WatchParams::default(), &rv(&deleted.metadata).to_string())
        .await
        .unwrap()
        .boxed();
    match events.next().await.unwrap().unwrap() {
        WatchEvent::Deleted(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("gone")),
        other => panic!("expected the deletion, got {other:?}"),
    }
    sb.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_second_sandbox_on_the_folder_is_refused_naming_the_first() {
    let dir = folder("lock");
    let sb = start(&dir).await;
    let error = Sandbox::start(durable(&dir)).await.unwrap_err().to_string();
    assert!(
        error.contains(&format!(
            "is in use by another sandbox (process {})",
            std::process::id()
        )),
        "{error}"
    );
    sb.shutdown().await;
    let again = start(&dir).await;
    again.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_compacted_journal_loads_back_the_same_cluster() {
    use sveltos_events_sandbox::Store;
    use sveltos_events_sandbox::store::{DeleteOptions, WriteOptions};
    let dir = folder("compact");
    let store = Store::open(&dir).unwrap();
    let info = store.resolve("", "v1", "configmaps").unwrap();
    let opts = WriteOptions {
        manager: "test".into(),
        ..WriteOptions::default()
    };
    // Large enough that the journal outgrows the compaction floor (16 MiB) twice over.
    let filler = "x".repeat(100_000);
    for i in 0..400 {
        let name = format!("cm-{}", i % 150);
        let object = json!({"metadata": {"name": name}, "data": {"i": i.to_string(), "f": filler}});
        if i < 150 {
            store.create(&info, "default", object, &opts).unwrap();
        } else {
            store
                .update(&info, "default", &name, object, &opts)
                .unwrap();
        }
    }
    for i in 0..20 {
        store
            .delete(
                &info,
                "default",
                &format!("cm-{i}"),
                &DeleteOptions::default(),
            )
            .unwrap();
    }
    store.persisted().await.unwrap();
    let everything = |store: &Store| -> Vec<serde_json::Value> {
        store
            .all_objects()
            .into_iter()
            .map(|(_, o)| (*o).clone())
            .collect()
    };
    let before = (everything(&store), store.resource_version());
    drop(store);
    assert!(dir.join("snapshot").exists(), "the journal was compacted");
    let records = std::fs::read(dir.join("journal"))
        .unwrap()
        .iter()
        .filter(|b| **b == b'\n')
        .count();
    assert!(
        records < 420,
        "the journal was emptied once: {records} records of 420"
    );
    let store = Store::open(&dir).unwrap();
    assert_eq!((everything(&store), store.resource_version()), before);
    // The compacted past is gone as from a compacted etcd: 410; what the journal still holds
    // is replayed.
    use sveltos_events_sandbox::store::WatchFrom;
    let error = store.watch(&info, None, WatchFrom::After(5)).unwrap_err();
    assert_eq!(error.code(), 410, "{error}");
    let (replay, _, _) = store
        .watch(&info, None, WatchFrom::After(before.1 - 3))
        .unwrap();
    assert_eq!(replay.len(), 3, "the last three deletions");
    let _ = std::fs::remove_dir_all(&dir);
}
