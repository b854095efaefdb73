//! ClusterSet (cluster-scoped) and Set (namespaced): a pool of clusters picked by selector and
//! references, of which at most `maxReplicas` are selected (lib.projectsveltos.io/v1beta1).
//! Selected clusters that stay healthy stay selected; a failed one is replaced from the pool.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pool of a ClusterSet and how many of its clusters to select.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "lib.projectsveltos.io",
    version = "v1beta1",
    kind = "ClusterSet",
    plural = "clustersets",
    status = "SetStatus",
    category = "sveltos",
    derive = "PartialEq",
    derive = "Default"
)]
pub struct ClusterSetSpec {
    /// The pool (every namespace) and how many to select.
    #[serde(flatten)]
    pub pool: Pool,
}

/// A Set: a ClusterSet whose pool is limited to its own namespace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "lib.projectsveltos.io",
    version = "v1beta1",
    kind = "Set",
    plural = "sets",
    namespaced,
    status = "SetStatus",
    category = "sveltos",
    derive = "PartialEq",
    derive = "Default"
)]
pub struct SetSpec {
    /// The pool (the Set's namespace only) and how many to select.
    #[serde(flatten)]
    pub pool: Pool,
}

/// A pool of clusters and how many of them to select.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pool {
    /// Ready clusters whose labels match (empty selector: none) ...
    #[serde(default)]
    pub cluster_selector: LabelSelector,
    /// ... and these clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_refs: Vec<ObjectReference>,
    /// How many clusters of the pool to select (0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_replicas: i32,
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// The pool and the selected clusters of a ClusterSet or Set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetStatus {
    /// Every cluster of the pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matching_cluster_refs: Vec<ObjectReference>,
    /// The selected clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected_cluster_refs: Vec<ObjectReference>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn reads_sveltos_yaml() {
        let set: ClusterSet = serde_json::from_value(serde_json::json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "ClusterSet",
            "metadata": {"name": "prod"},
            "spec": {"clusterSelector": {"matchLabels": {"env": "prod"}}, "maxReplicas": 1},
            "status": {"selectedClusterRefs": [{"apiVersion": "lib.projectsveltos.io/v1beta1",
                "kind": "SveltosCluster", "namespace": "default", "name": "c1"}]}
        }))
        .unwrap();
        assert_eq!(set.spec.pool.max_replicas, 1);
        assert_eq!(
            set.status.unwrap().selected_cluster_refs[0].name.as_deref(),
            Some("c1")
        );
    }
}
