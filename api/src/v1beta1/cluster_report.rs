//! ClusterReport: what a `syncMode: DryRun` profile would change in one cluster
//! (config.projectsveltos.io/v1beta1, namespaced in the cluster's namespace).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The cluster one profile's dry run reports on.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "config.projectsveltos.io",
    version = "v1beta1",
    kind = "ClusterReport",
    plural = "clusterreports",
    namespaced,
    status = "ClusterReportStatus",
    category = "sveltos",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterReportSpec {
    /// Namespace of the cluster.
    pub cluster_namespace: String,
    /// Name of the cluster.
    pub cluster_name: String,
}

/// What a dry run found, per feature.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterReportStatus {
    /// Objects of policyRefs and what would happen to each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_reports: Vec<ResourceReport>,
    /// Objects of kustomizationRefs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kustomize_resource_reports: Vec<ResourceReport>,
    /// Objects of Helm charts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub helm_resource_reports: Vec<ResourceReport>,
}

/// One object and the action a deployment would take on it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceReport {
    /// The object.
    pub resource: ReportedResource,
    /// `No Action`, `Create`, `Update`, `Delete`, `Conflict` or `Error`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,
    /// Why, when the action needs explaining.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Identity of a reported object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportedResource {
    /// Name.
    pub name: String,
    /// Namespace ("" for cluster-scoped kinds).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// API version.
    pub version: String,
}
