//! kube-rs against the sandbox: CRUD, patches, apply, watch, finalizers, GC, token Secrets,
//! namespaces, CRDs.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;
use std::time::Duration;
use sveltos_events_sandbox::{Sandbox, SandboxOptions};

async fn start() -> (Sandbox, kube::Client) {
    let sb = Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: 0,
        ..Default::default()
    })
    .await
    .unwrap();
    let client = sb.clusters()[0].client().unwrap();
    (sb, client)
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"app": "demo"}}, "data": {"k": "v"}}),
    )
    .unwrap()
}

async fn eventually<F: Fn() -> Fut, Fut: std::future::Future<Output = bool>>(f: F) {
    for _ in 0..200 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached");
}

#[tokio::test]
async fn crud_and_optimistic_concurrency() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let md = &created.metadata;
    assert!(md.uid.as_ref().unwrap().len() == 36);
    assert!(md.creation_timestamp.is_some());
    assert!(md.generation.is_none());
    let err = api
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err:?}"
    );

    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh.data = Some([("k".to_owned(), "w".to_owned())].into());
    let updated = api
        .replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_ne!(
        updated.metadata.resource_version,
        created.metadata.resource_version
    );
    stale.data = Some([("k".to_owned(), "x".to_owned())].into());
    let err = api
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "Conflict"),
        "{err:?}"
    );

    let mut gen_cm = cm("");
    gen_cm.metadata.name = None;
    gen_cm.metadata.generate_name = Some("g-".into());
    let g = api.create(&PostParams::default(), &gen_cm).await.unwrap();
    assert_eq!(g.metadata.name.as_ref().unwrap().len(), 7);

    let list = api
        .list(&ListParams::default().labels("app=demo"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 2);
    let list = api
        .list(&ListParams::default().fields("metadata.name=a"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let page = api.list(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(page.items.len(), 1);
    let next = api
        .list(
            &ListParams::default()
                .limit(1)
                .continue_token(page.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(next.items.len(), 1);
    assert_ne!(next.items[0].metadata.name, page.items[0].metadata.name);

    // dryRun never persists.
    let dry = api
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &cm("dry"),
        )
        .await
        .unwrap();
    assert_eq!(dry.metadata.name.as_deref(), Some("dry"));
    assert!(api.get_opt("dry").await.unwrap().is_none());

    api.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(api.get_opt("a").await.unwrap().is_none());
    let missing: Api<ConfigMap> = Api::namespaced(client, "nope");
    let err = missing
        .create(&PostParams::default(), &cm("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err:?}"
    );
    sb.shutdown().await;
}

#[tokio::test]
async fn patches_and_server_side_apply() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("p")).await.unwrap();
    let p = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"m": "1", "k": null}})),
        )
        .await
        .unwrap();
    assert_eq!(p.data.unwrap(), [("m".to_owned(), "1".to_owned())].into());
    let jp: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["x/y"]}]))
    .unwrap();
    let p = api
        .patch("p", &PatchParams::default(), &Patch::<()>::Json(jp))
        .await
        .unwrap();
    assert_eq!(p.metadata.finalizers.unwrap(), vec!["x/y".to_owned()]);
    let p = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x/y"]}}),
            ),
        )
        .await
        .unwrap();
    assert!(p.metadata.finalizers.unwrap_or_default().is_empty());

    let apply = |v| Patch::Apply(v);
    let a = api.patch("s", &PatchParams::apply("mgr-a"), &apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"size": "1", "shape": "round"}}))).await.unwrap();
    assert_eq!(a.data.as_ref().unwrap().len(), 2);
    let a = api
        .patch(
            "s",
            &PatchParams::apply("mgr-a"),
            &apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"size": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        a.data.unwrap(),
        [("size".to_owned(), "1".to_owned())].into()
    );
    let err = api
        .patch(
            "s",
            &PatchParams::apply("mgr-b"),
            &apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"size": "2"}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.message.contains("conflict with \"mgr-a\": .data.size")),
        "{err:?}"
    );
    let b = api
        .patch(
            "s",
            &PatchParams::apply("mgr-b").force(),
            &apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"size": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(b.data.unwrap()["size"], "2");
    let managers: Vec<String> = b
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(managers.contains(&"mgr-b".to_owned()));
    sb.shutdown().await;
}

#[tokio::test]
async fn watch_replays_history_and_reports_410_in_stream() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let first = api.create(&PostParams::default(), &cm("w1")).await.unwrap();
    let rv0 = first.metadata.resource_version.clone().unwrap();
    api.create(&PostParams::default(), &cm("w2")).await.unwrap();
    api.delete("w1", &DeleteParams::default()).await.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(1), &rv0)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    while let Some(ev) = stream.next().await {
        match ev.unwrap() {
            WatchEvent::Added(o) => seen.push(format!("ADDED {}", o.metadata.name.unwrap())),
            WatchEvent::Deleted(o) => seen.push(format!("DELETED {}", o.metadata.name.unwrap())),
            WatchEvent::Bookmark(_) => {}
            other => seen.push(format!("{other:?}")),
        }
    }
    assert_eq!(seen, ["ADDED w2", "DELETED w1"]);
    let mut stream = api
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    let ev = stream.next().await.unwrap().unwrap();
    assert!(matches!(ev, WatchEvent::Added(_)));
    // Force the history window past rv 1.
    for i in 0..(sveltos_events_sandbox::store::HISTORY + 5) {
        api.patch(
            "w2",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"i": i.to_string()}})),
        )
        .await
        .unwrap();
    }
    let mut stream = api
        .watch(&WatchParams::default().timeout(1), "1")
        .await
        .unwrap()
        .boxed();
    match stream.next().await.unwrap().unwrap() {
        WatchEvent::Error(e) => assert_eq!(e.code, 410),
        other => panic!("expected 410, got {other:?}"),
    }
    sb.shutdown().await;
}

#[tokio::test]
async fn finalizers_and_namespace_lifecycle() {
    let (sb, client) = start().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "t1"}})).unwrap(),
    )
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "t1");
    let mut c = cm("f");
    c.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &c).await.unwrap();
    api.create(&PostParams::default(), &cm("plain"))
        .await
        .unwrap();
    nss.delete("t1", &DeleteParams::default()).await.unwrap();
    let ns = nss.get("t1").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    let err = api
        .create(&PostParams::default(), &cm("late"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403),
        "{err:?}"
    );
    eventually(|| async { api.get_opt("plain").await.unwrap().is_none() }).await;
    let held = api.get("f").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually(|| async { nss.get_opt("t1").await.unwrap().is_none() }).await;
    sb.shutdown().await;
}

#[tokio::test]
async fn garbage_collection_policies() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for policy in ["bg", "fg", "orphan"] {
        let owner = api
            .create(&PostParams::default(), &cm(&format!("{policy}-owner")))
            .await
            .unwrap();
        let mut dep = cm(&format!("{policy}-dep"));
        dep.metadata.owner_references = Some(vec![serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name, "uid": owner.metadata.uid,
            "blockOwnerDeletion": true}))
        .unwrap()]);
        api.create(&PostParams::default(), &dep).await.unwrap();
    }
    api.delete("bg-owner", &DeleteParams::background())
        .await
        .unwrap();
    eventually(|| async { api.get_opt("bg-dep").await.unwrap().is_none() }).await;
    api.delete("fg-owner", &DeleteParams::foreground())
        .await
        .unwrap();
    eventually(|| async { api.get_opt("fg-owner").await.unwrap().is_none() }).await;
    assert!(api.get_opt("fg-dep").await.unwrap().is_none());
    api.delete("orphan-owner", &DeleteParams::orphan())
        .await
        .unwrap();
    eventually(|| async { api.get_opt("orphan-owner").await.unwrap().is_none() }).await;
    let orphan = api.get("orphan-dep").await.unwrap();
    assert!(
        orphan
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
    sb.shutdown().await;
}

/// Creates the CRD of `(plural, singular, kind)` in `example.com`, v1, namespaced, schema-less
/// (its objects keep every field), with a status subresource when `status`.
async fn create_crd(
    client: &kube::Client,
    (plural, singular, kind): (&str, &str, &str),
    status: bool,
) -> DynamicObject {
    let subresources = if status {
        json!({"status": {}})
    } else {
        json!({})
    };
    let crd: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": plural, "singular": singular, "kind": kind},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "subresources": subresources,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})).unwrap();
    crds(client)
        .create(&PostParams::default(), &crd)
        .await
        .unwrap()
}

/// The CustomResourceDefinitions of `client`'s cluster.
fn crds(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    )
}

#[tokio::test]
async fn crd_registration_status_subresource_and_discovery() {
    let (sb, client) = start().await;
    let created = create_crd(&client, ("widgets", "widget", "Widget"), true).await;
    let conds = created.data["status"]["conditions"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        conds
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    );

    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    let (ar, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
        .unwrap();
    assert_eq!(ar.plural, "widgets");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    let agg = kube::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    assert!(
        agg.resolve_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"))
            .is_some()
    );

    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let w: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 1}, "status": {"ready": true}}))
        .unwrap();
    let w = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(w.metadata.generation, Some(1));
    assert!(w.data.get("status").is_none());
    let w = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}, "status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(2));
    assert!(w.data.get("status").is_none());
    let w = widgets
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 9}, "status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(2));
    assert_eq!(w.data["status"]["ready"], true);
    assert_eq!(w.data["spec"]["size"], 5);
    let err = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 1}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 415),
        "{err:?}"
    );
    crds(&client)
        .delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    assert!(widgets.list(&ListParams::default()).await.is_err());
    sb.shutdown().await;
}

#[tokio::test]
async fn controller_with_finalizer_and_watcher_streaming_lists() {
    use kube::runtime::controller::{Action, Controller};
    use kube::runtime::finalizer::{Event as Fin, finalizer};
    use kube::runtime::{WatchStreamExt, watcher};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cleaned = Arc::new(AtomicUsize::new(0));
    let ctx = Arc::new((api.clone(), cleaned.clone()));
    let reconcile = |obj: Arc<ConfigMap>, ctx: Arc<(Api<ConfigMap>, Arc<AtomicUsize>)>| async move {
        let counter = ctx.1.clone();
        finalizer(&ctx.0, "example.com/cleanup", obj, |ev| async move {
            if let Fin::Cleanup(_) = ev {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            Ok::<_, kube::Error>(Action::await_change())
        })
        .await
        .map_err(|e| kube::Error::Service(e.to_string().into()))
    };
    let ctrl = tokio::spawn(
        Controller::new(api.clone(), watcher::Config::default())
            .run(reconcile, |_, _, _| Action::await_change(), ctx)
            .for_each(|_| async {}),
    );
    api.create(&PostParams::default(), &cm("ctl"))
        .await
        .unwrap();
    eventually(|| async {
        api.get("ctl")
            .await
            .unwrap()
            .metadata
            .finalizers
            .unwrap_or_default()
            == ["example.com/cleanup"]
    })
    .await;
    api.delete("ctl", &DeleteParams::default()).await.unwrap();
    eventually(|| async { api.get_opt("ctl").await.unwrap().is_none() }).await;
    assert_eq!(cleaned.load(Ordering::SeqCst), 1);
    ctrl.abort();

    // Streaming lists: initial events end with the initial-events-end bookmark.
    api.create(&PostParams::default(), &cm("keep"))
        .await
        .unwrap();
    let objs: Vec<ConfigMap> = watcher(api.clone(), watcher::Config::default().streaming_lists())
        .applied_objects()
        .take(1)
        .map(|o| o.unwrap())
        .collect()
        .await;
    assert_eq!(objs.len(), 1);
    sb.shutdown().await;
}

#[tokio::test]
async fn token_secrets_are_filled_and_follow_their_service_account() {
    use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
    let (sb, client) = start().await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let token_secret = |name: &str, account: &str| -> Secret {
        serde_json::from_value(json!({
            "metadata": {"name": name,
                         "annotations": {"kubernetes.io/service-account.name": account}},
            "type": "kubernetes.io/service-account-token"}))
        .unwrap()
    };
    let account = accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap(),
        )
        .await
        .unwrap();
    secrets
        .create(
            &PostParams::default(),
            &token_secret("robot-token", "robot"),
        )
        .await
        .unwrap();
    eventually(|| async {
        let s = secrets.get("robot-token").await.unwrap();
        s.data.is_some_and(|d| {
            d.contains_key("token")
                && d.get("namespace").is_some_and(|n| n.0 == b"default")
                && d.get("ca.crt")
                    .is_some_and(|c| c.0.starts_with(b"-----BEGIN"))
        })
    })
    .await;
    let filled = secrets.get("robot-token").await.unwrap();
    assert_eq!(
        filled.metadata.annotations.unwrap()["kubernetes.io/service-account.uid"],
        account.metadata.uid.unwrap()
    );
    // A token for an account that does not exist is deleted, as kube-controller-manager does.
    secrets
        .create(
            &PostParams::default(),
            &token_secret("ghost-token", "ghost"),
        )
        .await
        .unwrap();
    eventually(|| async { secrets.get_opt("ghost-token").await.unwrap().is_none() }).await;
    // Deleting the account takes its tokens with it.
    accounts
        .delete("robot", &DeleteParams::default())
        .await
        .unwrap();
    eventually(|| async { secrets.get_opt("robot-token").await.unwrap().is_none() }).await;
    sb.shutdown().await;
}

/// kube-rs' metadata watcher (a watcher of `PartialObjectMeta`: metadata-only lists and
/// watches, as client-go's metadata informers use) and a label-filtered watcher: objects arrive as PartialObjectMetadata, and
/// one that stops matching the selector is deleted from the watcher's view.
#[tokio::test]
async fn metadata_watcher_and_selector_transitions() {
    use kube::runtime::watcher::{self, Event};
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("m1")).await.unwrap();
    let config = watcher::Config::default().labels("app=demo");
    let metadata: Api<kube::core::PartialObjectMeta<ConfigMap>> =
        Api::namespaced(client.clone(), "default");
    let mut events = watcher::watcher(metadata, config).boxed();
    let mut listed = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.next()).await {
            Ok(Some(Ok(Event::InitApply(object)))) => listed.push(object),
            Ok(Some(Ok(Event::InitDone))) => break,
            Ok(Some(Ok(_))) => {}
            other => panic!("metadata watcher: {other:?}"),
        }
    }
    let names: Vec<_> = listed
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    assert_eq!(names, ["m1"]);
    assert_eq!(
        listed[0].types.as_ref().unwrap().kind,
        "PartialObjectMetadata"
    );
    // m1 leaves the selection: the watcher hears a delete, not a change.
    let relabel = json!({"metadata": {"labels": {"app": "other"}}});
    api.patch("m1", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.next()).await {
            Ok(Some(Ok(Event::Delete(object)))) => {
                assert_eq!(object.metadata.name.as_deref(), Some("m1"));
                break;
            }
            Ok(Some(Ok(Event::Apply(object)))) => panic!("a change, not a delete: {object:?}"),
            Ok(Some(Ok(_))) => {}
            other => panic!("metadata watcher: {other:?}"),
        }
    }
    sb.shutdown().await;
}

/// Server-side apply of a typed Deployment by two managers, as controllers do it: the second
/// manager's container joins the first's (containers merge by name), each manager owns its
/// own, a change of the other's field conflicts on that field alone, and a manager that stops
/// applying its container removes only that one.
#[tokio::test]
async fn two_managers_apply_one_deployment() {
    use k8s_openapi::api::apps::v1::Deployment;
    let (sb, client) = start().await;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let deployment = |containers: serde_json::Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": containers}}}})
    };
    let names = |d: &Deployment| -> Vec<String> {
        d.spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers
            .iter()
            .map(|c| c.name.clone())
            .collect()
    };
    let web = json!([{"name": "web", "image": "nginx:1"}]);
    let mesh = json!([{"name": "proxy", "image": "envoy:1"}]);
    api.patch(
        "web",
        &PatchParams::apply("app"),
        &Patch::Apply(deployment(web)),
    )
    .await
    .unwrap();
    let both = api
        .patch(
            "web",
            &PatchParams::apply("mesh"),
            &Patch::Apply(deployment(mesh)),
        )
        .await
        .unwrap();
    assert_eq!(names(&both), ["web", "proxy"]);

    let bumped = json!([{"name": "web", "image": "nginx:2"}]);
    let err = api
        .patch(
            "web",
            &PatchParams::apply("mesh"),
            &Patch::Apply(deployment(bumped)),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409
            && s.message.contains(r#".spec.template.spec.containers[name="web"].image"#)),
        "{err:?}"
    );
    // The mesh's configuration with no container of its own (checked against kube-apiserver
    // 1.20: no conflict, the other manager's container stays).
    let gone = api
        .patch(
            "web",
            &PatchParams::apply("mesh"),
            &Patch::Apply(deployment(json!([]))),
        )
        .await
        .unwrap();
    assert_eq!(names(&gone), ["web"]);
    sb.shutdown().await;
}

/// kube-rs pages a list with `limit` and continue tokens; every page is read at the first
/// one's resourceVersion, whatever changes in between.
#[tokio::test]
async fn paged_lists_are_consistent() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for name in ["a", "b", "c", "d"] {
        api.create(&PostParams::default(), &cm(name)).await.unwrap();
    }
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    let at = first.metadata.resource_version.clone();
    api.delete("d", &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &cm("e")).await.unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    let rest = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    let names: Vec<String> = first
        .items
        .iter()
        .chain(&rest.items)
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    assert_eq!(rest.metadata.resource_version, at);
    sb.shutdown().await;
}

#[tokio::test]
async fn objects_larger_than_etcd_stores_are_refused_and_nothing_changes() {
    let (sb, client) = start().await;
    create_crd(&client, ("blobs", "blob", "Blob"), false).await;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Blob"),
        "blobs",
    );
    let blobs: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let blob = |name: &str, bytes: usize| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Blob",
            "metadata": {"name": name}, "data": "x".repeat(bytes)}))
        .unwrap()
    };
    let refused = |result: kube::Result<DynamicObject>| match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 500);
            assert_eq!(status.message, "etcdserver: request is too large");
        }
        other => panic!("expected etcd's refusal, got {other:?}"),
    };
    // Under kube-apiserver's 3 MiB body limit, over etcd's 1.5 MiB. The bound is where
    // kube-apiserver 1.20 with etcd 3.4 has it, for `kubectl create` of a Blob `<name>`
    // holding `n` bytes of data: stored whole for n = 1,572,300; stored without its
    // managedFields (kube-apiserver tries again without them) for n = 1,572,524; refused for
    // one byte more.
    let kubectl = PostParams {
        field_manager: Some("kubectl-create".into()),
        ..Default::default()
    };
    let managers = |blob: &DynamicObject| blob.metadata.managed_fields.clone().unwrap_or_default();
    let whole = blobs
        .create(&kubectl, &blob("m1572300", 1_572_300))
        .await
        .unwrap();
    assert_eq!(managers(&whole).len(), 1);
    let stripped = blobs
        .create(&kubectl, &blob("b1572524", 1_572_524))
        .await
        .unwrap();
    assert!(managers(&stripped).is_empty());
    refused(blobs.create(&kubectl, &blob("b1572525", 1_572_525)).await);
    assert!(blobs.get_opt("b1572525").await.unwrap().is_none());

    // A body over kube-apiserver's 3 MiB is refused before it is read, as there.
    match blobs
        .create(&PostParams::default(), &blob("huge", 3_200_000))
        .await
    {
        Err(kube::Error::Api(status)) => {
            assert_eq!(
                (status.code, status.reason.as_str(), status.message.as_str()),
                (
                    413,
                    "RequestEntityTooLarge",
                    "Request entity too large: limit is 3145728"
                )
            );
        }
        other => panic!("expected a 413, got {other:?}"),
    }

    let kept = blobs
        .create(&PostParams::default(), &blob("grows", 1_000_000))
        .await
        .unwrap();
    let more = json!({"more": "y".repeat(700_000)});
    refused(
        blobs
            .patch("grows", &PatchParams::default(), &Patch::Merge(&more))
            .await,
    );
    let after = blobs.get("grows").await.unwrap();
    assert_eq!(
        after.metadata.resource_version,
        kept.metadata.resource_version
    );
    assert!(after.data.get("more").is_none());
    sb.shutdown().await;
}
