//! Which registered clusters a manager handles (SveltosClusters and Cluster API Clusters of its
//! shard) and which of them a selector picks: those ready and not being deleted. A paused cluster is picked (what
//! was made for it stays) but neither deployed to nor collected from. Unlike a plain label
//! selector, an empty cluster selector picks no cluster (Sveltos' rule).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use api::capi::CapiCluster;
use api::cluster_ref::{CAPI_DEFAULT_API_VERSION, SVELTOS_CLUSTER_API_VERSION};
use api::labels::SHARD_ANNOTATION;
use api::selector::{self, SelectorError};
use api::v1beta1::{ClusterType, ConnectionStatus, SveltosCluster};
use clusters::registry::{Registration, Registry};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

use crate::identity::ClusterRef;

/// A registered cluster with what selection needs to know about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Namespace, name and type.
    pub reference: ClusterRef,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Ready and not being deleted.
    pub selectable: bool,
    /// Being deleted.
    pub deleting: bool,
    /// `spec.paused` (or Cluster API's paused annotation): keep its state, change nothing.
    pub paused: bool,
    /// A SveltosCluster whose connection is `Down` (ClusterSets replace it).
    pub connection_down: bool,
    /// Value of `sharding.projectsveltos.io/key` ("" when absent).
    pub shard: String,
    /// The object as templates see it in `.Cluster` (apiVersion and kind set).
    pub object: Value,
}

impl Cluster {
    /// From a SveltosCluster.
    pub fn from_sveltos(cluster: &SveltosCluster) -> Result<Self, serde_json::Error> {
        let mut object = serde_json::to_value(cluster)?;
        set_type(&mut object, SVELTOS_CLUSTER_API_VERSION, "SveltosCluster");
        Ok(Cluster {
            reference: ClusterRef {
                namespace: cluster.metadata.namespace.clone().unwrap_or_default(),
                name: cluster.metadata.name.clone().unwrap_or_default(),
                cluster_type: ClusterType::Sveltos,
            },
            labels: cluster.metadata.labels.clone().unwrap_or_default(),
            selectable: cluster.is_selectable(),
            deleting: cluster.metadata.deletion_timestamp.is_some(),
            paused: cluster.spec.paused,
            connection_down: cluster
                .status
                .as_ref()
                .is_some_and(|s| s.connection_status == Some(ConnectionStatus::Down)),
            shard: annotation(&cluster.metadata.annotations, SHARD_ANNOTATION),
            object,
        })
    }

    /// From a registered cluster's object (`None` for a SveltosCluster that does not
    /// serialise).
    pub fn from_registration(cluster: &Registration) -> Option<Self> {
        match cluster {
            Registration::Sveltos(cluster) => Cluster::from_sveltos(cluster).ok(),
            Registration::Capi(cluster) => Some(Cluster::from_capi(cluster)),
        }
    }

    /// From a Cluster API `Cluster`, given as JSON (any `cluster.x-k8s.io` version).
    pub fn from_capi(object: &Value) -> Self {
        let cluster = CapiCluster(object);
        Cluster {
            reference: ClusterRef {
                namespace: cluster.namespace().to_owned(),
                name: cluster.name().to_owned(),
                cluster_type: ClusterType::Capi,
            },
            labels: cluster.labels(),
            selectable: cluster.selectable(),
            deleting: cluster.deleting(),
            paused: cluster.paused(),
            connection_down: false,
            shard: cluster
                .annotations()
                .remove(SHARD_ANNOTATION)
                .unwrap_or_default(),
            object: object.clone(),
        }
    }
}

impl Cluster {
    /// How other objects refer to this cluster (a Cluster API cluster by its own apiVersion).
    pub fn object_reference(&self) -> ObjectReference {
        let capi_api_version = self
            .object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or(CAPI_DEFAULT_API_VERSION);
        self.reference.object_reference(capi_api_version)
    }
}

fn set_type(object: &mut Value, api_version: &str, kind: &str) {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(api_version.into()));
        map.insert("kind".into(), Value::String(kind.into()));
    }
}

fn annotation(annotations: &Option<BTreeMap<String, String>>, key: &str) -> String {
    annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .cloned()
        .unwrap_or_default()
}

/// Which clusters one manager handles: those of its shard (Cluster API clusters are also
/// limited by the onboarding annotation their watch was given).
#[derive(Debug, Clone, Default)]
pub struct ClusterScope {
    /// Value of `sharding.projectsveltos.io/key` this manager handles ("" = clusters without
    /// the annotation).
    pub shard: String,
}

/// The registered clusters as one process sees them and the scope it handles.
#[derive(Clone)]
pub struct Fleet {
    /// SveltosClusters and Cluster API clusters, kept current by watches.
    pub registry: Registry,
    /// The clusters this process handles.
    pub scope: ClusterScope,
    /// The clusters last made from the registry: every pass of every controller reads them,
    /// and making them (each object turned into its template value) cost more than the pass.
    made: Arc<Mutex<Made>>,
    /// The SveltosCluster watch's count of changes, when it keeps one: while it and the
    /// Cluster API watch's count stay the same, the registry need not be read again.
    versions: Option<Arc<AtomicU64>>,
}

/// Clusters made from registered objects, kept with those objects (the same `Arc`s while
/// nothing changed: a watch replaces an object's `Arc` when it changes).
#[derive(Default)]
struct Made {
    /// The watches' counts of changes when `from` was read.
    versions: Option<(u64, u64)>,
    from: Vec<Registration>,
    all: Arc<[Cluster]>,
    in_scope: Arc<[Cluster]>,
}

fn same(a: &Registration, b: &Registration) -> bool {
    match (a, b) {
        (Registration::Sveltos(a), Registration::Sveltos(b)) => Arc::ptr_eq(a, b),
        (Registration::Capi(a), Registration::Capi(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

impl Fleet {
    /// The clusters of `registry`, this process handling those of `scope`.
    pub fn new(registry: Registry, scope: ClusterScope) -> Self {
        Fleet {
            registry,
            scope,
            made: Arc::default(),
            versions: None,
        }
    }

    /// This fleet, with `sveltos` counting the changes its SveltosCluster store showed (see
    /// `Shared::version`): the clusters are then made again only after one of the watches
    /// counted a change, instead of after comparing every registered object on each read.
    pub fn counting(mut self, sveltos: Arc<AtomicU64>) -> Self {
        self.versions = Some(sveltos);
        self
    }

    /// Every registered cluster, whatever its shard.
    pub fn all(&self) -> Arc<[Cluster]> {
        self.current(|made| Arc::clone(&made.all))
    }

    /// The registered clusters of this process's shard.
    pub fn in_scope(&self) -> Arc<[Cluster]> {
        self.current(|made| Arc::clone(&made.in_scope))
    }

    /// Reads the clusters made from the registry as it is now, making them again if any
    /// registered object changed since.
    fn current(&self, read: impl Fn(&Made) -> Arc<[Cluster]>) -> Arc<[Cluster]> {
        // Read before the registry: a change counted after this makes them again next time.
        let versions = self.versions.as_ref().map(|sveltos| {
            (
                sveltos.load(Ordering::Acquire),
                self.registry.capi.version(),
            )
        });
        let Ok(mut made) = self.made.lock() else {
            return read(&self.make(versions, self.registry.all().collect()));
        };
        if versions.is_some() && made.versions == versions {
            return read(&made);
        }
        let now: Vec<Registration> = self.registry.all().collect();
        let unchanged =
            made.from.len() == now.len() && made.from.iter().zip(&now).all(|(a, b)| same(a, b));
        if unchanged {
            made.versions = versions;
        } else {
            *made = self.make(versions, now);
        }
        read(&made)
    }

    fn make(&self, versions: Option<(u64, u64)>, from: Vec<Registration>) -> Made {
        let all: Arc<[Cluster]> = from.iter().filter_map(Cluster::from_registration).collect();
        let in_scope = all
            .iter()
            .filter(|c| c.shard == self.scope.shard)
            .cloned()
            .collect();
        Made {
            versions,
            from,
            all,
            in_scope,
        }
    }

    /// Whether `cluster` exists but belongs to another shard: what was made for it is
    /// another process's to keep or remove.
    pub fn handled_elsewhere(&self, cluster: &ClusterRef) -> bool {
        self.registry
            .get(cluster)
            .is_some_and(|c| c.annotation(SHARD_ANNOTATION).unwrap_or_default() != self.scope.shard)
    }

    /// Waits until both caches are filled; false if a watch ended first.
    pub async fn ready(&self) -> bool {
        self.registry.ready().await
    }
}

/// The clusters `cluster_selector` picks, sorted; empty selector = none.
pub fn select<'a>(
    clusters: &'a [Cluster],
    cluster_selector: &LabelSelector,
) -> Result<Vec<&'a Cluster>, SelectorError> {
    if selector::is_empty(cluster_selector) {
        return Ok(Vec::new());
    }
    let mut picked = Vec::new();
    for cluster in clusters {
        if cluster.selectable && selector::matches(cluster_selector, &cluster.labels)? {
            picked.push(cluster);
        }
    }
    picked.sort_by(|a, b| a.reference.cmp(&b.reference));
    Ok(picked)
}
#[cfg(test)]
mod tests {
    use super::*;
    use clusters::capi::CapiClusters;
    use serde_json::json;

    fn sveltos(name: &str, labels: Value, ready: bool) -> Cluster {
        let cluster: SveltosCluster = serde_json::from_value(json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {}, "status": {"ready": ready}
        }))
        .unwrap();
        Cluster::from_sveltos(&cluster).unwrap()
    }

    #[test]
    fn selects_ready_matching_clusters_only() {
        let clusters = vec![
            sveltos("b", json!({"env": "fv"}), true),
            sveltos("a", json!({"env": "fv"}), true),
            sveltos("c", json!({"env": "prod"}), true),
            sveltos("d", json!({"env": "fv"}), false),
        ];
        let picked = select(&clusters, &selector::parse("env=fv").unwrap()).unwrap();
        let names: Vec<_> = picked.iter().map(|c| c.reference.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(picked[0].object["kind"], "SveltosCluster");
    }

    #[test]
    fn empty_selector_selects_nothing() {
        let clusters = vec![sveltos("a", json!({"env": "fv"}), true)];
        assert!(
            select(&clusters, &LabelSelector::default())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn capi_clusters_need_an_initialized_control_plane() {
        let capi = |status: Value, paused: bool| {
            Cluster::from_capi(&json!({
                "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                "metadata": {"name": "w", "namespace": "default", "labels": {"env": "fv"}},
                "spec": {"paused": paused}, "status": status
            }))
        };
        let ready = capi(
            json!({"conditions": [{"type": "ControlPlaneInitialized", "status": "True"}]}),
            false,
        );
        assert!(ready.selectable);
        assert_eq!(ready.reference.cluster_type, ClusterType::Capi);
        assert!(
            capi(
                json!({"initialization": {"controlPlaneInitialized": true}}),
                false
            )
            .selectable
        );
        assert!(
            !capi(
                json!({"conditions": [{"type": "ControlPlaneInitialized", "status": "False"}]}),
                false
            )
            .selectable
        );
        let paused = capi(
            json!({"initialization": {"controlPlaneInitialized": true}}),
            true,
        );
        assert!(paused.selectable && paused.paused);
        assert!(!ready.paused);
    }

    #[test]
    fn a_scope_holds_the_clusters_of_its_shard() {
        let (store, mut writer) = kube::runtime::reflector::store::<SveltosCluster>();
        for (name, annotations) in [("s", json!({SHARD_ANNOTATION: "blue"})), ("u", json!({}))] {
            let cluster = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "annotations": annotations},
                "spec": {}
            }))
            .unwrap();
            writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(cluster));
        }
        let names = |shard: &str| -> Vec<String> {
            let scope = ClusterScope {
                shard: shard.to_owned(),
            };
            let registry = Registry {
                sveltos: store.clone(),
                capi: CapiClusters::none(),
            };
            Fleet::new(registry, scope)
                .in_scope()
                .iter()
                .map(|c| c.reference.name.clone())
                .collect()
        };
        assert_eq!(names(""), ["u"]);
        assert_eq!(names("blue"), ["s"]);
        assert!(names("green").is_empty());
    }

    /// A registry of one SveltosCluster `default/c` labelled `env: dev`, and its store's writer.
    fn one_cluster_registry() -> (
        Registry,
        kube::runtime::reflector::store::Writer<SveltosCluster>,
    ) {
        let (store, mut writer) = kube::runtime::reflector::store::<SveltosCluster>();
        relabel(&mut writer, json!({"env": "dev"}));
        let registry = Registry {
            sveltos: store,
            capi: CapiClusters::none(),
        };
        (registry, writer)
    }

    /// Applies `default/c` with `labels` to the store of `writer`.
    fn relabel(
        writer: &mut kube::runtime::reflector::store::Writer<SveltosCluster>,
        labels: Value,
    ) {
        let cluster = serde_json::from_value(json!({
            "metadata": {"name": "c", "namespace": "default", "labels": labels},
            "spec": {}
        }))
        .unwrap();
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(cluster));
    }

    #[test]
    fn the_fleet_is_made_again_when_a_cluster_changes_and_only_then() {
        let (registry, mut writer) = one_cluster_registry();
        let mut apply = |labels: Value| relabel(&mut writer, labels);
        let fleet = Fleet::new(registry, ClusterScope::default());
        let first = fleet.all();
        assert!(
            Arc::ptr_eq(&first, &fleet.all()),
            "nothing changed: the same clusters"
        );
        apply(json!({"env": "prod"}));
        let second = fleet.in_scope();
        assert_eq!(second[0].labels["env"], "prod");
        assert_eq!(first[0].labels["env"], "dev");
        assert_eq!(fleet.all()[0].labels["env"], "prod");
    }

    #[test]
    fn a_counting_fleet_reads_the_registry_again_only_after_a_counted_change() {
        let (registry, mut writer) = one_cluster_registry();
        let mut apply = |labels: Value| relabel(&mut writer, labels);
        let count = Arc::new(AtomicU64::new(0));
        let fleet = Fleet::new(registry, ClusterScope::default()).counting(Arc::clone(&count));
        let first = fleet.all();
        // The store changed but the watch has not counted it yet: the clusters made stand.
        apply(json!({"env": "prod"}));
        assert!(Arc::ptr_eq(&first, &fleet.all()));
        count.fetch_add(1, Ordering::Release);
        assert_eq!(fleet.in_scope()[0].labels["env"], "prod");
        // Counted, but nothing registered changed: the same clusters, not made again.
        let second = fleet.all();
        count.fetch_add(1, Ordering::Release);
        assert!(Arc::ptr_eq(&second, &fleet.all()));
    }
}
