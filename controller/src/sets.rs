//! ClusterSets and Sets: which clusters a pool holds and which of them are selected. Sveltos'
//! addon-controller keeps their status; where it does not run, the deployer's process does
//! (`run`). EventTriggers (`clusterSetRefs`) and ClusterProfiles (`setRefs`) read the selection.
//!
//! The pool is the ready clusters the selector matches (a Set: in its namespace only) and the
//! `clusterRefs`; a selected cluster stays selected while it is in the pool, ready and its
//! connection is not down; free places are filled from the pool in its order, up to
//! `maxReplicas` (0 selects none, as upstream; upstream keeps one fewer than `maxReplicas`
//! when it has too many selected, here exactly `maxReplicas` stay).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use api::selector::SelectorError;
use api::v1beta1::{ClusterSet, Pool, Set, SetStatus};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource};
use serde_json::json;
use tokio::sync::Notify;

use crate::fleet::{Cluster, Fleet, select};
use crate::identity::ClusterRef;

/// The status a pool has given the registered `clusters` and the clusters it selected before.
/// `namespace` limits the selector to one namespace (Sets).
pub fn status(
    pool: &Pool,
    namespace: Option<&str>,
    clusters: &[Cluster],
    selected_before: &[ObjectReference],
) -> Result<SetStatus, SelectorError> {
    let mut members: Vec<(ClusterRef, ObjectReference)> = select(clusters, &pool.cluster_selector)?
        .into_iter()
        .filter(|c| namespace.is_none_or(|ns| c.reference.namespace == ns))
        .map(|c| (c.reference.clone(), c.object_reference()))
        .collect();
    for reference in &pool.cluster_refs {
        if let Some(cluster) = ClusterRef::from_reference(reference)
            && namespace.is_none_or(|ns| cluster.namespace == ns)
            && !members.iter().any(|(m, _)| *m == cluster)
        {
            members.push((cluster, reference.clone()));
        }
    }
    let healthy = |wanted: &ClusterRef| {
        clusters
            .iter()
            .any(|c| c.reference == *wanted && c.selectable && !c.connection_down)
    };
    let limit = usize::try_from(pool.max_replicas).unwrap_or(0);
    let mut selected: Vec<&(ClusterRef, ObjectReference)> = Vec::new();
    for before in selected_before
        .iter()
        .filter_map(ClusterRef::from_reference)
    {
        if let Some(member) = members.iter().find(|(m, _)| *m == before)
            && healthy(&member.0)
            && !selected.contains(&member)
        {
            selected.push(member);
        }
    }
    selected.truncate(limit);
    for member in &members {
        if selected.len() >= limit {
            break;
        }
        if healthy(&member.0) && !selected.contains(&member) {
            selected.push(member);
        }
    }
    Ok(SetStatus {
        selected_cluster_refs: selected.iter().map(|(_, r)| r.clone()).collect(),
        matching_cluster_refs: members.into_iter().map(|(_, r)| r).collect(),
    })
}

/// The clusters ClusterSet `name` selected (none when it does not exist).
pub fn selected(sets: &Store<ClusterSet>, name: &str) -> Vec<ClusterRef> {
    sets.get(&ObjectRef::new(name))
        .and_then(|set| set.status.clone())
        .map(|status| selected_refs(&status))
        .unwrap_or_default()
}

/// The clusters a set's status names as selected.
pub fn selected_refs(status: &SetStatus) -> Vec<ClusterRef> {
    status
        .selected_cluster_refs
        .iter()
        .filter_map(ClusterRef::from_reference)
        .collect()
}

/// Keeps the status of every ClusterSet and Set current, over every cluster of `fleet`
/// whatever its shard, once the caches are filled: recomputed whenever `wake` is notified (a
/// cluster, ClusterSet or Set changed), written only where it differs.
pub async fn run(
    client: Client,
    cluster_sets: Store<ClusterSet>,
    sets: Store<Set>,
    fleet: Fleet,
    wake: Arc<Notify>,
) {
    let ready = cluster_sets.wait_until_ready().await.is_ok()
        && sets.wait_until_ready().await.is_ok()
        && fleet.ready().await;
    if !ready {
        return;
    }
    // The status last written per set: the cache may not show it yet, and deciding from an
    // older selection would move a selected cluster for no reason.
    let mut written: Written = HashMap::new();
    loop {
        let registered = fleet.all();
        let mut present = HashSet::new();
        for set in cluster_sets.state() {
            present.insert(written_key(set.meta()));
            let pool = &set.spec.pool;
            write_status(&client, set.as_ref(), pool, None, &registered, &mut written).await;
        }
        for set in sets.state() {
            present.insert(written_key(set.meta()));
            let namespace = set.meta().namespace.clone().unwrap_or_default();
            let pool = &set.spec.pool;
            let within = Some(namespace.as_str());
            write_status(
                &client,
                set.as_ref(),
                pool,
                within,
                &registered,
                &mut written,
            )
            .await;
        }
        written.retain(|key, _| present.contains(key));
        wake.notified().await;
    }
}

/// The status the controller last wrote, per set (namespace, name and uid: a set deleted and
/// created again starts afresh).
type Written = HashMap<(Option<String>, String, Option<String>), SetStatus>;

/// Key of `set` in [`Written`].
fn written_key(meta: &ObjectMeta) -> (Option<String>, String, Option<String>) {
    (
        meta.namespace.clone(),
        meta.name.clone().unwrap_or_default(),
        meta.uid.clone(),
    )
}

/// A ClusterSet or a Set: its status and its API.
trait SetObject:
    Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug
{
    fn current(&self) -> Option<&SetStatus>;
    fn api(&self, client: Client) -> Api<Self>;
}

impl SetObject for ClusterSet {
    fn current(&self) -> Option<&SetStatus> {
        self.status.as_ref()
    }
    fn api(&self, client: Client) -> Api<Self> {
        Api::all(client)
    }
}

impl SetObject for Set {
    fn current(&self) -> Option<&SetStatus> {
        self.status.as_ref()
    }
    fn api(&self, client: Client) -> Api<Self> {
        Api::namespaced(
            client,
            self.metadata.namespace.as_deref().unwrap_or_default(),
        )
    }
}

/// Writes the status `pool` gives `set` (selector limited to `namespace` for Sets) when it
/// differs from the stored one and from what was last written.
async fn write_status<K: SetObject>(
    client: &Client,
    set: &K,
    pool: &Pool,
    namespace: Option<&str>,
    clusters: &[Cluster],
    written: &mut Written,
) {
    let meta = set.meta();
    let name = meta.name.clone().unwrap_or_default();
    let key = written_key(meta);
    let stored = set.current().cloned().unwrap_or_default();
    let before = written.get(&key).cloned().unwrap_or_else(|| stored.clone());
    let status = match status(pool, namespace, clusters, &before.selected_cluster_refs) {
        Ok(status) => status,
        Err(error) => {
            tracing::warn!(kind = %K::kind(&()), %name, %error, "bad clusterSelector");
            return;
        }
    };
    if status == stored || written.get(&key) == Some(&status) {
        written.insert(key, status);
        return;
    }
    let api = set.api(client.clone());
    // Lists are written whole so that a cluster that left disappears.
    let patch = json!({"status": {
        "matchingClusterRefs": status.matching_cluster_refs,
        "selectedClusterRefs": status.selected_cluster_refs,
    }});
    match api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {
            written.insert(key, status);
        }
        Err(error) => {
            tracing::warn!(kind = %K::kind(&()), %name, %error, "cannot write the status");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use api::v1beta1::SveltosCluster;
    use serde_json::{Value, json};

    fn cluster(namespace: &str, name: &str, env: &str, status: Value) -> Cluster {
        let object: SveltosCluster = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": namespace, "labels": {"env": env}},
            "spec": {}, "status": status
        }))
        .unwrap();
        Cluster::from_sveltos(&object).unwrap()
    }

    fn pool(max_replicas: i32) -> Pool {
        Pool {
            cluster_selector: api::selector::parse("env=prod").unwrap(),
            cluster_refs: Vec::new(),
            max_replicas,
        }
    }

    fn names(references: &[ObjectReference]) -> Vec<&str> {
        references
            .iter()
            .map(|r| r.name.as_deref().unwrap_or_default())
            .collect()
    }

    fn fleet() -> Vec<Cluster> {
        vec![
            cluster("a", "c1", "prod", json!({"ready": true})),
            cluster("a", "c2", "prod", json!({"ready": true})),
            cluster("b", "c3", "prod", json!({"ready": true})),
            cluster("a", "c4", "prod", json!({"ready": false})),
            cluster("a", "c5", "dev", json!({"ready": true})),
        ]
    }

    #[test]
    fn selects_up_to_max_replicas_from_the_ready_pool() {
        let clusters = fleet();
        let status = status(&pool(2), None, &clusters, &[]).unwrap();
        assert_eq!(names(&status.matching_cluster_refs), ["c1", "c2", "c3"]);
        assert_eq!(names(&status.selected_cluster_refs), ["c1", "c2"]);
        let none = super::status(&pool(0), None, &clusters, &[]).unwrap();
        assert!(none.selected_cluster_refs.is_empty());
        let all = super::status(&pool(10), None, &clusters, &[]).unwrap();
        assert_eq!(names(&all.selected_cluster_refs), ["c1", "c2", "c3"]);
    }

    #[test]
    fn a_set_pools_its_namespace_only() {
        let mut with_refs = pool(5);
        with_refs.cluster_refs = vec![ObjectReference {
            api_version: Some("lib.projectsveltos.io/v1beta1".into()),
            kind: Some("SveltosCluster".into()),
            namespace: Some("a".into()),
            name: Some("c5".into()),
            ..Default::default()
        }];
        let status = status(&with_refs, Some("b"), &fleet(), &[]).unwrap();
        assert_eq!(names(&status.matching_cluster_refs), ["c3"]);
        assert_eq!(names(&status.selected_cluster_refs), ["c3"]);
    }

    #[test]
    fn a_selected_cluster_stays_until_it_fails_and_is_replaced() {
        let mut clusters = fleet();
        let before = status(&pool(1), None, &clusters, &[]).unwrap();
        let c3 = before.matching_cluster_refs[2].clone();
        let kept = status(&pool(1), None, &clusters, std::slice::from_ref(&c3)).unwrap();
        assert_eq!(names(&kept.selected_cluster_refs), ["c3"]);
        clusters[2] = cluster(
            "b",
            "c3",
            "prod",
            json!({"ready": true, "connectionStatus": "Down"}),
        );
        let replaced = status(&pool(1), None, &clusters, &[c3]).unwrap();
        assert_eq!(names(&replaced.selected_cluster_refs), ["c1"]);
        let fewer = status(&pool(1), None, &fleet(), &before.matching_cluster_refs).unwrap();
        assert_eq!(
            names(&fewer.selected_cluster_refs),
            ["c1"],
            "exactly maxReplicas stay"
        );
    }

    #[test]
    fn cluster_refs_join_the_pool_once() {
        let mut with_refs = pool(5);
        let c5 = ObjectReference {
            api_version: Some("lib.projectsveltos.io/v1beta1".into()),
            kind: Some("SveltosCluster".into()),
            namespace: Some("a".into()),
            name: Some("c5".into()),
            ..Default::default()
        };
        let mut c1 = c5.clone();
        c1.name = Some("c1".into());
        with_refs.cluster_refs = vec![c5, c1];
        let status = status(&with_refs, None, &fleet(), &[]).unwrap();
        assert_eq!(
            names(&status.matching_cluster_refs),
            ["c1", "c2", "c3", "c5"]
        );
        assert_eq!(
            names(&status.selected_cluster_refs),
            ["c1", "c2", "c3", "c5"]
        );
    }
}
