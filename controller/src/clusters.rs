//! Which registered clusters a selector picks: SveltosClusters and Cluster API Clusters that
//! are ready and not being deleted, in this manager's shard. A paused cluster is picked (what
//! was made for it stays) but neither deployed to nor collected from. Unlike a plain label
//! selector, an empty cluster selector picks no cluster (Sveltos' rule).

use std::collections::BTreeMap;

use api::labels::{CAPI_PAUSED_ANNOTATION, SHARD_ANNOTATION};
use api::selector::{self, SelectorError};
use api::v1beta1::{ClusterType, SveltosCluster};
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
    /// `spec.paused` (or Cluster API's paused annotation): keep its state, change nothing.
    pub paused: bool,
    /// Value of `sharding.projectsveltos.io/key` ("" when absent).
    pub shard: String,
    /// The object as templates see it in `.Cluster` (apiVersion and kind set).
    pub object: Value,
}

impl Cluster {
    /// From a SveltosCluster.
    pub fn from_sveltos(cluster: &SveltosCluster) -> Result<Self, serde_json::Error> {
        let mut object = serde_json::to_value(cluster)?;
        set_type(
            &mut object,
            "lib.projectsveltos.io/v1beta1",
            "SveltosCluster",
        );
        Ok(Cluster {
            reference: ClusterRef {
                namespace: cluster.metadata.namespace.clone().unwrap_or_default(),
                name: cluster.metadata.name.clone().unwrap_or_default(),
                cluster_type: ClusterType::Sveltos,
            },
            labels: cluster.metadata.labels.clone().unwrap_or_default(),
            selectable: cluster.is_selectable(),
            paused: cluster.spec.paused,
            shard: annotation(&cluster.metadata.annotations, SHARD_ANNOTATION),
            object,
        })
    }

    /// From a Cluster API `Cluster`, given as JSON (any `cluster.x-k8s.io` version).
    pub fn from_capi(object: &Value) -> Self {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let labels = string_map(object.pointer("/metadata/labels"));
        let annotations = string_map(object.pointer("/metadata/annotations"));
        let control_plane_ready = object
            .pointer("/status/initialization/controlPlaneInitialized")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || object
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|conditions| {
                    conditions.iter().any(|c| {
                        c.get("type").and_then(Value::as_str) == Some("ControlPlaneInitialized")
                            && c.get("status").and_then(Value::as_str) == Some("True")
                    })
                });
        let paused = object
            .pointer("/spec/paused")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || annotations.contains_key(CAPI_PAUSED_ANNOTATION);
        let deleting = object
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null());
        Cluster {
            reference: ClusterRef {
                namespace: text("/metadata/namespace"),
                name: text("/metadata/name"),
                cluster_type: ClusterType::Capi,
            },
            labels,
            selectable: control_plane_ready && !deleting,
            paused,
            shard: annotations
                .get(SHARD_ANNOTATION)
                .cloned()
                .unwrap_or_default(),
            object: object.clone(),
        }
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

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The clusters of `shard` that `cluster_selector` picks, sorted; empty selector = none.
pub fn select<'a>(
    clusters: &'a [Cluster],
    cluster_selector: &LabelSelector,
    shard: &str,
) -> Result<Vec<&'a Cluster>, SelectorError> {
    if selector::is_empty(cluster_selector) {
        return Ok(Vec::new());
    }
    let mut picked = Vec::new();
    for cluster in clusters {
        if cluster.selectable
            && cluster.shard == shard
            && selector::matches(cluster_selector, &cluster.labels)?
        {
            picked.push(cluster);
        }
    }
    picked.sort_by(|a, b| a.reference.cmp(&b.reference));
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let picked = select(&clusters, &selector::parse("env=fv").unwrap(), "").unwrap();
        let names: Vec<_> = picked.iter().map(|c| c.reference.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(picked[0].object["kind"], "SveltosCluster");
    }

    #[test]
    fn empty_selector_selects_nothing() {
        let clusters = vec![sveltos("a", json!({"env": "fv"}), true)];
        assert!(
            select(&clusters, &LabelSelector::default(), "")
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
    fn shards_partition_clusters() {
        let mut sharded = sveltos("s", json!({"env": "fv"}), true);
        sharded.shard = "blue".into();
        let clusters = vec![sharded, sveltos("u", json!({"env": "fv"}), true)];
        let sel = selector::parse("env=fv").unwrap();
        assert_eq!(select(&clusters, &sel, "").unwrap()[0].reference.name, "u");
        assert_eq!(
            select(&clusters, &sel, "blue").unwrap()[0].reference.name,
            "s"
        );
    }
}
