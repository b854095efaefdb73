//! ClusterProfile: add-ons to deploy to the clusters it matches (config.projectsveltos.io/v1beta1,
//! cluster-scoped). The manager generates them from EventTriggers; users may also write them.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    DriftExclusion, HelmChart, KustomizationRef, Patch, PolicyRef, StopMatchingBehavior, SyncMode,
    TemplateResourceRef, ValidateHealth, ValueFrom,
};

/// Which clusters get which add-ons, and how.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "config.projectsveltos.io",
    version = "v1beta1",
    kind = "ClusterProfile",
    plural = "clusterprofiles",
    status = "ClusterProfileStatus",
    category = "sveltos",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileSpec {
    /// Clusters matching this selector get the add-ons.
    #[serde(default, skip_serializing_if = "crate::selector::is_empty")]
    pub cluster_selector: LabelSelector,
    /// These clusters get the add-ons too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_refs: Vec<ObjectReference>,
    /// ClusterSets whose selected clusters get the add-ons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_refs: Vec<String>,
    /// How add-ons are kept in step.
    #[serde(default)]
    pub sync_mode: SyncMode,
    /// Conflict tier: lower wins.
    #[serde(default = "super::addons::default_tier")]
    #[schemars(range(min = 1))]
    pub tier: i32,
    /// Deploy the rest when an object is owned by another profile.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continue_on_conflict: bool,
    /// Deploy the rest when one add-on fails.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continue_on_error: bool,
    /// Clusters updated at once (count or percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::max_update")]
    pub max_update: Option<IntOrString>,
    /// What happens to deployed add-ons when a cluster stops matching.
    #[serde(default)]
    pub stop_matching_behavior: StopMatchingBehavior,
    /// Restart workloads whose mounted ConfigMaps/Secrets change.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reloader: bool,
    /// Resources fetched at deployment for templates (`getResource "Id"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["identifier"]))]
    pub template_resource_refs: Vec<TemplateResourceRef>,
    /// Profiles that must be deployed first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// ConfigMaps/Secrets/Flux sources with the add-ons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub policy_refs: Vec<PolicyRef>,
    /// Helm charts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub helm_charts: Vec<HelmChart>,
    /// Kustomizations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub kustomization_refs: Vec<KustomizationRef>,
    /// Checks before deploying.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub pre_deploy_checks: Vec<ValidateHealth>,
    /// Checks after deploying.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub validate_healths: Vec<ValidateHealth>,
    /// Patches applied to deployed objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub patches: Vec<Patch>,
    /// ConfigMaps/Secrets holding more patches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub patches_from: Vec<ValueFrom>,
    /// Fields drift detection ignores.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub drift_exclusions: Vec<DriftExclusion>,
    /// Failures before the profile stops retrying a cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_consecutive_failures: Option<u32>,
    /// Checks before withdrawing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub pre_delete_checks: Vec<ValidateHealth>,
    /// Checks after withdrawing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub post_delete_checks: Vec<ValidateHealth>,
    /// Labels added to every deployed object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_labels: BTreeMap<String, String>,
    /// Annotations added to every deployed object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_annotations: BTreeMap<String, String>,
}

impl Default for ClusterProfileSpec {
    fn default() -> Self {
        ClusterProfileSpec {
            cluster_selector: Default::default(),
            cluster_refs: Default::default(),
            set_refs: Default::default(),
            sync_mode: Default::default(),
            tier: super::addons::default_tier(),
            continue_on_conflict: Default::default(),
            continue_on_error: Default::default(),
            max_update: Default::default(),
            stop_matching_behavior: Default::default(),
            reloader: Default::default(),
            template_resource_refs: Default::default(),
            depends_on: Default::default(),
            policy_refs: Default::default(),
            helm_charts: Default::default(),
            kustomization_refs: Default::default(),
            pre_deploy_checks: Default::default(),
            validate_healths: Default::default(),
            patches: Default::default(),
            patches_from: Default::default(),
            drift_exclusions: Default::default(),
            max_consecutive_failures: Default::default(),
            pre_delete_checks: Default::default(),
            post_delete_checks: Default::default(),
            extra_labels: Default::default(),
            extra_annotations: Default::default(),
        }
    }
}

/// Deployment progress of a profile over its clusters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileStatus {
    /// Clusters currently matching.
    #[serde(
        default,
        rename = "matchingClusters",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub matching_cluster_refs: Vec<ObjectReference>,
    /// Clusters being updated (maxUpdate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updating_clusters: Option<Clusters>,
    /// Clusters updated to the current spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_clusters: Option<Clusters>,
    /// Clusters where deployment failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_clusters: Vec<FailedCluster>,
    /// Hash of the profiles this one depends on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub dependencies_hash: Option<ByteString>,
    /// Reconciliation stopped (e.g. too many failures).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconciliation_suspended: bool,
    /// Why reconciliation stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension_reason: Option<String>,
}

/// A set of clusters and the spec hash it was computed for.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Clusters {
    /// Spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub hash: Option<ByteString>,
    /// The clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<ObjectReference>,
}

/// A cluster where deployment failed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedCluster {
    /// The cluster.
    pub cluster_ref: ObjectReference,
    /// What went wrong.
    pub failure_message: String,
    /// When.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure_time: Option<Time>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generated_profile_shape_round_trips() {
        let profile: ClusterProfile = serde_json::from_value(json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
            "metadata": {"name": "sveltos-abc"},
            "spec": {
                "clusterRefs": [{"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster", "namespace": "default", "name": "c1"}],
                "policyRefs": [{"kind": "ConfigMap", "namespace": "projectsveltos", "name": "sveltos-xyz", "deploymentType": "Remote"}]
            }
        }))
        .unwrap();
        assert_eq!(profile.spec.sync_mode, SyncMode::Continuous);
        assert_eq!(profile.spec.tier, 100);
        assert_eq!(
            profile.spec.stop_matching_behavior,
            StopMatchingBehavior::WithdrawPolicies
        );
        let json = serde_json::to_value(&profile).unwrap();
        assert!(
            json["spec"].get("clusterSelector").is_none(),
            "empty selector omitted"
        );
        let back: ClusterProfile = serde_json::from_value(json).unwrap();
        assert_eq!(back, profile);
    }
}
