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
    #[schemars(transform = super::addons::no_object_default)]
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
    /// Withdrawn.
    Removed,
    /// Being withdrawn by the agent (pull mode).
    AgentRemoving,
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

/// Whether a ClusterSummary manages a Helm release or another one already does.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum HelmChartStatus {
    /// This ClusterSummary manages the release.
    Managing,
    /// Another ClusterSummary manages the release.
    Conflict,
}

/// A Helm release managed for a profile.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartSummary {
    /// Release name.
    #[schemars(length(min = 1))]
    pub release_name: String,
    /// Release namespace.
    #[schemars(length(min = 1))]
    pub release_namespace: String,
    /// Managed here or in conflict.
    pub status: HelmChartStatus,
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
    use crate::v1beta1::{HelmChart, SyncMode};
    use kube::CustomResourceExt;
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
        assert_eq!(summary.spec.cluster_profile_spec.tier, 100);
        assert_eq!(summary.spec.cluster_profile_spec.policy_refs[0].tier, 100);
        let back: ClusterSummary =
            serde_json::from_value(serde_json::to_value(&summary).unwrap()).unwrap();
        assert_eq!(back, summary);
        assert_eq!(
            cluster_summary_name("p", "c1", ClusterType::Sveltos),
            "p-sveltos-c1"
        );
        assert_eq!(
            cluster_summary_name("p", "c1", ClusterType::Capi),
            "p-capi-c1"
        );
    }

    #[test]
    fn full_status_yaml_reads_and_round_trips() {
        let summary: ClusterSummary = serde_saphyr::from_str(
            r#"
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterSummary
metadata:
  name: deploy-kyverno-capi-workload
  namespace: default
spec:
  clusterNamespace: default
  clusterName: workload
  clusterType: Capi
  clusterProfileSpec:
    syncMode: ContinuousWithDriftDetection
    helmCharts:
    - repositoryURL: https://kyverno.github.io/kyverno/
      repositoryName: kyverno
      chartName: kyverno/kyverno
      chartVersion: v3.3.3
      releaseName: kyverno-latest
      releaseNamespace: kyverno
status:
  dependencies: no dependencies
  featureSummaries:
  - featureID: Helm
    status: Failed
    hash: AAEC
    consecutiveFailures: 3
    failureReason: InstallFailed
    failureMessage: "chart not found"
    lastAppliedTime: "2024-05-01T10:00:00Z"
    resourceSummaryDeployed: true
  - featureID: Kustomize
    status: AgentRemoving
  deployedGVKs:
  - featureID: Helm
    deployedGroupVersionKind: [Deployment.v1.apps]
  helmReleaseSummaries:
  - releaseName: kyverno-latest
    releaseNamespace: kyverno
    status: Conflict
    conflictMessage: "owned by ClusterSummary default/other"
    valuesHash: AQI=
    repoURL: https://kyverno.github.io/kyverno/
    chartVersion: v3.3.3
    latestVersion: v3.4.0
    credentialsSecretRef: {name: creds, namespace: default}
    lastCheckedTime: "2024-05-01T11:00:00Z"
    needsRedeploy: true
  nextReconcileTime: "2024-05-01T10:05:00Z"
  failureMessage: "cluster unreachable"
  reconciliationSuspended: true
  suspensionReason: paused
"#,
        )
        .unwrap();
        assert_eq!(summary.spec.cluster_type, ClusterType::Capi);
        let spec = &summary.spec.cluster_profile_spec;
        assert_eq!(spec.sync_mode, SyncMode::ContinuousWithDriftDetection);
        let chart: &HelmChart = &spec.helm_charts[0];
        assert_eq!(chart.release_name, "kyverno-latest");
        let status = summary.status.as_ref().unwrap();
        let helm = &status.feature_summaries[0];
        assert_eq!(helm.feature_id, FeatureId::Helm);
        assert_eq!(helm.status, Some(FeatureStatus::Failed));
        assert_eq!(helm.consecutive_failures, 3);
        assert_eq!(helm.hash.as_ref().unwrap().0, [0, 1, 2]);
        assert_eq!(helm.resource_summary_deployed, Some(true));
        assert_eq!(
            status.feature_summaries[1].status,
            Some(FeatureStatus::AgentRemoving)
        );
        let release = &status.helm_release_summaries[0];
        assert_eq!(release.status, HelmChartStatus::Conflict);
        assert_eq!(release.values_hash.as_ref().unwrap().0, [1, 2]);
        assert!(release.needs_redeploy);
        assert!(status.reconciliation_suspended);
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["status"]["deployedGVKs"][0]["featureID"], "Helm");
        assert_eq!(
            json["status"]["helmReleaseSummaries"][0]["repoURL"],
            "https://kyverno.github.io/kyverno/"
        );
        assert_eq!(json["status"]["featureSummaries"][0]["hash"], "AAEC");
        let back: ClusterSummary = serde_json::from_value(json).unwrap();
        assert_eq!(back, summary);
    }

    #[test]
    fn feature_status_spelling() {
        for (status, text) in [
            (FeatureStatus::Provisioning, "Provisioning"),
            (FeatureStatus::Provisioned, "Provisioned"),
            (FeatureStatus::Failed, "Failed"),
            (FeatureStatus::FailedNonRetriable, "FailedNonRetriable"),
            (FeatureStatus::Removing, "Removing"),
            (FeatureStatus::AgentRemoving, "AgentRemoving"),
            (FeatureStatus::Removed, "Removed"),
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), text);
        }
    }

    #[test]
    fn crd_is_namespaced_with_sveltos_columns() {
        let crd = ClusterSummary::crd();
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.plural, "clustersummaries");
        let columns: Vec<String> = crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.clone())
            .collect();
        assert_eq!(
            columns,
            ["Age", "HelmCharts", "KustomizeRefs", "PolicyRefs"]
        );
    }
}
