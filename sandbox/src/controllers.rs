//! Built-in background controllers, reacting to the event stream like the real ones:
//! the garbage collector (background, foreground, orphan), the namespace controller, and a
//! deployment controller that completes rollouts at once (the sandbox runs no pods), and the
//! token controller ([`crate::tokens`]).

use crate::meta::{finalizers, meta_str};
use crate::registry::{GroupResource, ResourceInfo};
use crate::store::{DeleteOptions, Event, EventType, Store, WriteOptions};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

/// Address of a dependent object.
type Dependent = (GroupResource, String, String);

/// Owner uid -> dependents, and the uids of every object, maintained from events.
#[derive(Default)]
struct Index {
    dependents: HashMap<String, HashSet<Dependent>>,
    owners_of: HashMap<Dependent, Vec<String>>,
    uids: HashSet<String>,
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

impl Index {
    fn update(&mut self, gr: &GroupResource, obj: &Value, deleted: bool) {
        let key = (
            gr.clone(),
            meta_str(obj, "namespace").to_owned(),
            meta_str(obj, "name").to_owned(),
        );
        if let Some(old) = self.owners_of.remove(&key) {
            for uid in old {
                if let Some(set) = self.dependents.get_mut(&uid) {
                    set.remove(&key);
                    if set.is_empty() {
                        self.dependents.remove(&uid);
                    }
                }
            }
        }
        let uid = meta_str(obj, "uid");
        if deleted {
            self.uids.remove(uid);
            return;
        }
        self.uids.insert(uid.to_owned());
        let uids = owner_uids(obj);
        if uids.is_empty() {
            return;
        }
        for uid in &uids {
            self.dependents
                .entry(uid.clone())
                .or_default()
                .insert(key.clone());
        }
        self.owners_of.insert(key, uids);
    }
}

/// Run the controllers of one cluster until `stop` turns true; `root_ca` is the cluster's CA
/// certificate (PEM, empty over plain HTTP), which token Secrets carry.
pub async fn run(store: Arc<Store>, root_ca: String, mut stop: watch::Receiver<bool>) {
    let mut rx = store.subscribe();
    crate::auth::aggregation::reconcile(&store);
    let mut index = resync(&store, &root_ca);
    loop {
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    return;
                }
            }
            ev = rx.recv() => match ev {
                Ok(ev) => {
                    handle(&store, &mut index, &ev);
                    crate::tokens::handle(&store, &ev, &root_ca);
                    crate::auth::aggregation::handle(&store, &ev);
                }
                // Events were missed: as an informer relists, everything is looked at again.
                Err(RecvError::Lagged(_)) => index = resync(&store, &root_ca),
                Err(RecvError::Closed) => return,
            }
        }
    }
}

/// Every object looked at as an informer's list shows it, and the index rebuilt: work left
/// pending when the cluster last stopped, or behind events the controllers missed (a
/// namespace terminating, owners gone, finalizers to honour, tokens to issue), is taken up.
fn resync(store: &Store, root_ca: &str) -> Index {
    let mut index = Index::default();
    let objects = store.all_objects();
    for (info, obj) in &objects {
        index.update(&info.group_resource(), obj, false);
    }
    for (info, obj) in objects {
        let ev = Event::synthetic(info.group_resource(), obj);
        handle(store, &mut index, &ev);
        crate::tokens::handle(store, &ev, root_ca);
        crate::auth::aggregation::handle(store, &ev);
    }
    index
}

fn info_of(store: &Store, gr: &GroupResource) -> Option<Arc<ResourceInfo>> {
    store.resolve_group_resource(gr)
}

fn handle(store: &Store, index: &mut Index, ev: &Event) {
    let deleted = ev.kind == EventType::Deleted;
    index.update(&ev.gr, &ev.object, deleted);
    let uid = meta_str(&ev.object, "uid").to_owned();
    let deleting = !meta_str(&ev.object, "deletionTimestamp").is_empty();
    if deleted {
        // Background collection of dependents of a removed owner.
        collect_dependents(store, index, &uid, None);
    } else if !deleting {
        collect_if_owners_absent(store, index, ev);
    }
    if deleting && !deleted {
        let fins = finalizers(&ev.object);
        if fins.iter().any(|f| f == "orphan") {
            orphan_dependents(store, index, &uid);
            drop_finalizer(store, ev, "orphan");
        } else if fins.iter().any(|f| f == "foregroundDeletion") {
            let blocking = index.dependents.get(&uid).is_some_and(|s| !s.is_empty());
            if blocking {
                collect_dependents(store, index, &uid, Some("Foreground"));
            } else {
                drop_finalizer(store, ev, "foregroundDeletion");
            }
        }
    }
    // Foreground owners waiting for this dependent.
    if deleted {
        for owner in owner_uids(&ev.object) {
            if !index.dependents.contains_key(&owner) {
                release_foreground_owner(store, &owner);
            }
        }
    }
    if !deleted && !deleting && ev.gr.group == "apps" && ev.gr.resource == "deployments" {
        complete_rollout(store, ev);
    }
    // Namespace lifecycle.
    if ev.gr.group.is_empty() && ev.gr.resource == "namespaces" {
        if deleting && !deleted {
            namespace_step(store, meta_str(&ev.object, "name"));
        }
    } else if deleted
        && !ev.namespace.is_empty()
        && let Some(ns_info) = store.resolve("", "v1", "namespaces")
        && store
            .get(&ns_info, "", &ev.namespace)
            .is_ok_and(|n| !meta_str(&n, "deletionTimestamp").is_empty())
    {
        namespace_step(store, &ev.namespace);
    }
}

/// The status kube-controller-manager gives a Deployment whose pods all became available:
/// observedGeneration caught up, every replica updated, ready and available, and the
/// Available and Progressing conditions true. No ReplicaSets or Pods are created.
fn rolled_out(deployment: &Value) -> Value {
    let replicas = deployment
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let generation = deployment
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    let now = crate::meta::now_rfc3339();
    let condition = |kind: &str, reason: &str, message: String| {
        json!({"type": kind, "status": "True", "reason": reason, "message": message,
               "lastUpdateTime": now, "lastTransitionTime": now})
    };
    let name = meta_str(deployment, "name");
    let mut status = json!({
        "observedGeneration": generation,
        "conditions": [
            condition("Available", "MinimumReplicasAvailable",
                      "Deployment has minimum availability.".into()),
            condition("Progressing", "NewReplicaSetAvailable",
                      format!("ReplicaSet \"{name}\" has successfully progressed.")),
        ],
    });
    if replicas > 0 {
        for field in [
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
        ] {
            status[field] = json!(replicas);
        }
    }
    status
}

fn complete_rollout(store: &Store, ev: &Event) {
    let generation = ev.object.pointer("/metadata/generation");
    let spec_replicas = ev.object.pointer("/spec/replicas").and_then(Value::as_i64);
    let status = ev.object.get("status");
    let observed = status.and_then(|s| s.get("observedGeneration"));
    let replicas = status
        .and_then(|s| s.get("replicas"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if observed.is_some() && observed == generation && Some(replicas) == spec_replicas {
        return;
    }
    let Some(info) = info_of(store, &ev.gr) else {
        return;
    };
    let name = meta_str(&ev.object, "name");
    let opts = WriteOptions {
        subresource: "status".into(),
        ..controller_opts("kube-controller-manager")
    };
    let res = store.modify(&info, &ev.namespace, name, &opts, |old| {
        let mut new = old.clone();
        new["status"] = rolled_out(old);
        Ok(new)
    });
    if let Err(e) = res {
        tracing::debug!(error = %e, %name, "deployment controller: status update failed");
    }
}

fn controller_opts(manager: &str) -> WriteOptions {
    WriteOptions {
        manager: manager.into(),
        ..WriteOptions::default()
    }
}

/// Owner uids of `obj` that name an object of a kind this cluster serves but that does not
/// exist (an owner of a kind the cluster does not serve cannot be verified, and is kept).
fn absent_owners(store: &Store, index: &Index, obj: &Value) -> Vec<String> {
    let refs = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let unknown: Vec<&Value> = refs
        .iter()
        .filter(|r| {
            r.get("uid")
                .and_then(Value::as_str)
                .is_some_and(|uid| !index.uids.contains(uid))
        })
        .collect();
    if unknown.is_empty() {
        return Vec::new();
    }
    let registry = store.registry();
    unknown
        .into_iter()
        .filter_map(|r| {
            let uid = r.get("uid").and_then(Value::as_str)?;
            let api_version = r.get("apiVersion").and_then(Value::as_str)?;
            let kind = r.get("kind").and_then(Value::as_str)?;
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            let served = registry
                .all()
                .any(|i| i.group == group && i.version == version && i.kind == kind);
            served.then(|| uid.to_owned())
        })
        .collect()
}

/// A dependent whose owners are all gone is deleted; one that keeps a live owner loses the
/// references to the gone ones (kube-controller-manager's garbage collector).
fn collect_if_owners_absent(store: &Store, index: &Index, ev: &Event) {
    let owners = owner_uids(&ev.object);
    if owners.is_empty() {
        return;
    }
    let absent = absent_owners(store, index, &ev.object);
    if absent.is_empty() {
        return;
    }
    let Some(info) = info_of(store, &ev.gr) else {
        return;
    };
    let name = meta_str(&ev.object, "name");
    if absent.len() == owners.len() {
        if let Err(e) = store.delete(&info, &ev.namespace, name, &DeleteOptions::default()) {
            tracing::debug!(error = %e, %name, "garbage collector: delete failed");
        }
        return;
    }
    for uid in absent {
        remove_owner_reference(store, &info, &ev.namespace, name, &uid);
    }
}

fn collect_dependents(store: &Store, index: &Index, uid: &str, policy: Option<&str>) {
    let Some(deps) = index.dependents.get(uid) else {
        return;
    };
    for (gr, ns, name) in deps.clone() {
        let Some(info) = info_of(store, &gr) else {
            continue;
        };
        let others_alive = index
            .owners_of
            .get(&(gr.clone(), ns.clone(), name.clone()))
            .is_some_and(|owners| owners.iter().any(|o| o != uid && index.uids.contains(o)));
        if others_alive {
            remove_owner_reference(store, &info, &ns, &name, uid);
            continue;
        }
        let opts = DeleteOptions {
            propagation: policy.map(str::to_owned),
            ..DeleteOptions::default()
        };
        if let Err(e) = store.delete(&info, &ns, &name, &opts) {
            tracing::debug!(error = %e, %name, "garbage collector: delete failed");
        }
    }
}

fn remove_owner_reference(store: &Store, info: &ResourceInfo, ns: &str, name: &str, uid: &str) {
    let res = store.modify(
        info,
        ns,
        name,
        &controller_opts("garbage-collector"),
        |old| {
            let mut new = old.clone();
            if let Some(refs) = new
                .pointer_mut("/metadata/ownerReferences")
                .and_then(Value::as_array_mut)
            {
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
                if refs.is_empty()
                    && let Some(md) = new.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    md.remove("ownerReferences");
                }
            }
            Ok(new)
        },
    );
    if let Err(e) = res {
        tracing::debug!(error = %e, %name, "garbage collector: owner reference removal failed");
    }
}

fn orphan_dependents(store: &Store, index: &Index, uid: &str) {
    let Some(deps) = index.dependents.get(uid) else {
        return;
    };
    for (gr, ns, name) in deps.clone() {
        if let Some(info) = info_of(store, &gr) {
            remove_owner_reference(store, &info, &ns, &name, uid);
        }
    }
}

fn drop_finalizer(store: &Store, ev: &Event, finalizer: &str) {
    let Some(info) = info_of(store, &ev.gr) else {
        return;
    };
    let name = meta_str(&ev.object, "name");
    let res = store.modify(
        &info,
        &ev.namespace,
        name,
        &controller_opts("garbage-collector"),
        |old| {
            let mut new = old.clone();
            let fins: Vec<String> = finalizers(old)
                .into_iter()
                .filter(|f| f != finalizer)
                .collect();
            new["metadata"]["finalizers"] = json!(fins);
            Ok(new)
        },
    );
    if let Err(e) = res {
        tracing::debug!(error = %e, %name, "garbage collector: finalizer removal failed");
    }
}

fn release_foreground_owner(store: &Store, owner_uid: &str) {
    for (info, obj) in store.all_objects() {
        if meta_str(&obj, "uid") == owner_uid
            && finalizers(&obj).iter().any(|f| f == "foregroundDeletion")
        {
            let ev = Event::synthetic(info.group_resource(), obj.clone());
            drop_finalizer(store, &ev, "foregroundDeletion");
        }
    }
}

fn namespace_step(store: &Store, ns: &str) {
    let contents = store.namespace_contents(ns);
    if contents.is_empty() {
        let Some(info) = store.resolve("", "v1", "namespaces") else {
            return;
        };
        let res = store.modify(
            &info,
            "",
            ns,
            &controller_opts("namespace-controller"),
            |old| {
                let mut new = old.clone();
                new["spec"]["finalizers"] = json!([]);
                Ok(new)
            },
        );
        if let Err(e) = res {
            tracing::debug!(error = %e, %ns, "namespace controller: finalize failed");
        }
        return;
    }
    for (info, name) in contents {
        let Ok(obj) = store.get(&info, ns, &name) else {
            continue;
        };
        if !meta_str(&obj, "deletionTimestamp").is_empty() {
            continue;
        }
        if let Err(e) = store.delete(&info, ns, &name, &DeleteOptions::default()) {
            tracing::debug!(error = %e, %name, "namespace controller: delete failed");
        }
    }
}
