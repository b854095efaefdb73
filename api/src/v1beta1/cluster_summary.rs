//! ClusterSummary: one profile's deployment in one cluster (config.projectsveltos.io/v1beta1,
//! namespaced in the cluster's namespace).

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::SecretReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ClusterProfileSpec, ClusterType, FeatureId};

/// What one profile deploys to one cluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "config.projectsveltos.io",
    version = "v1beta1",
    kind = "ClusterSummary",
    plural = "clustersummaries",
    namespaced,
    status = "ClusterSummaryStatus",
    category = "sveltos",
    derive = "PartialEq",
    derive = "Default",
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": "Time since the ClusterSummary was created"}"#,
    printcolumn = r#"{"name": "HelmCharts", "type": "string", "jsonPath": ".status.featureSummaries[?(@.featureID==\"Helm\")].status", "priority": 2, "description": "Whether all Helm charts are provisioned"}"#,
    printcolumn = r#"{"name": "KustomizeRefs", "type": "string", "jsonPath": ".status.featureSummaries[?(@.featureID==\"Kustomize\")].status", "priority": 2, "description": "Whether all kustomizations are provisioned"}"#,
    printcolumn = r#"{"name": "PolicyRefs", "type": "string", "jsonPath": ".status.featureSummaries[?(@.featureID==\"Resources\")].status", "priority": 2, "description": "Whether all policyRefs are provisioned"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSummarySpec {
    /// Namespace of the cluster.
    pub cluster_namespace: String,
    /// Name of the cluster.
    pub cluster_name: String,
    /// `Capi` or `Sveltos`.
    pub cluster_type: ClusterType,
    /// The profile's spec this summary deploys.
    #[serde(default)]
    pub cluster_profile_spec: ClusterProfileSpec,
}

/// Per-feature deployment state in the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSummaryStatus {
    /// Profiles this one waits for, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<String>,
    /// One entry per feature.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["featureID"]))]
    pub feature_summaries: Vec<FeatureSummary>,
    /// Kinds deployed per feature.
    #[serde(
        default,
        rename = "deployedGVKs",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["featureID"]))]
    pub deployed_gvks: Vec<FeatureDeploymentInfo>,
    /// Helm releases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub helm_release_summaries: Vec<HelmChartSummary>,
    /// When the next reconciliation is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_reconcile_time: Option<Time>,
    /// Last error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// Reconciliation stopped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconciliation_suspended: bool,
    /// Why it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension_reason: Option<String>,
}

/// State of one feature in one cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeatureSummary {
    /// The feature.
    #[serde(rename = "featureID")]
    pub feature_id: FeatureId,
    /// Hash of what was deployed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub hash: Option<ByteString>,
    /// Failures in a row.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub consecutive_failures: u32,
    /// Deployment state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<FeatureStatus>,
    /// Short failure reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// What went wrong, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// Kinds deployed (`Kind.version.group`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployed_group_version_kind: Vec<String>,
    /// When it was last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_time: Option<Time>,
    /// A ResourceSummary was deployed for drift detection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_summary_deployed: Option<bool>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Deployment state of a feature.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum FeatureStatus {
    /// Being deployed.
    Provisioning,
    /// Deployed.
    Provisioned,
    /// Failed; will be retried.
    Failed,
    /// Failed; retrying will not help.
    FailedNonRetriable,
    /// Being withdrawn.
    Removing,
    /// Waiting for the agent to withdraw.
    AgentRemoving,
    /// Withdrawn.
    Removed,
}

/// Kinds a feature deployed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeatureDeploymentInfo {
    /// The feature.
    #[serde(rename = "featureID")]
    pub feature_id: FeatureId,
    /// `Kind.version.group` entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployed_group_version_kind: Vec<String>,
}

/// A Helm release managed for a profile.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartSummary {
    /// Release name.
    pub release_name: String,
    /// Release namespace.
    pub release_namespace: String,
    /// `Managing` or `Conflict`.
    pub status: String,
    /// Hash of the values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub values_hash: Option<ByteString>,
    /// Hash of the patches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub patches_hash: Option<ByteString>,
    /// Who owns the release, when in conflict.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub conflict_message: String,
    /// Last error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// Chart name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chart_name: String,
    /// Repository name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repository_name: String,
    /// Repository URL.
    #[serde(default, rename = "repoURL", skip_serializing_if = "String::is_empty")]
    pub repo_url: String,
    /// Chart version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chart_version: String,
    /// Registry credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret_ref: Option<SecretReference>,
    /// Newest version available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<String>,
    /// Newest patch version available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_patch_version: Option<String>,
    /// When versions were last checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_checked_time: Option<Time>,
    /// The release must be deployed again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_redeploy: bool,
}

/// Name of the ClusterSummary of a profile in a cluster: `<profile>-<capi|sveltos>-<cluster>`.
pub fn cluster_summary_name(
    profile: &str,
    cluster_name: &str,
    cluster_type: ClusterType,
) -> String {
    format!("{profile}-{}-{cluster_name}", cluster_type.lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_with_status_round_trips() {
        let summary: ClusterSummary = serde_json::from_value(json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
            "metadata": {"name": "p-sveltos-c1", "namespace": "default"},
            "spec": {"clusterNamespace": "default", "clusterName": "c1", "clusterType": "Sveltos",
                     "clusterProfileSpec": {"policyRefs": [{"kind": "ConfigMap", "name": "x"}]}},
            "status": {"featureSummaries": [{"featureID": "Resources", "status": "Provisioned", "hash": "YWJj"}],
                       "deployedGVKs": [{"featureID": "Resources", "deployedGroupVersionKind": ["NetworkPolicy.v1.networking.k8s.io"]}]}
        }))
        .unwrap();
        let status = summary.status.as_ref().unwrap();
        assert_eq!(
            status.feature_summaries[0].status,
            Some(FeatureStatus::Provisioned)
        );
        assert_eq!(status.feature_summaries[0].hash.as_ref().unwrap().0, b"abc");
        let back: ClusterSummary =
            serde_json::from_value(serde_json::to_value(&summary).unwrap()).unwrap();
        assert_eq!(back, summary);
        assert_eq!(
            cluster_summary_name("p", "c1", ClusterType::Sveltos),
            "p-sveltos-c1"
        );
    }
}
