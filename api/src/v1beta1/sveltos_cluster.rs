//! SveltosCluster: a cluster registered through a kubeconfig (lib.projectsveltos.io/v1beta1).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ResourceSelector;

/// How to reach a registered cluster and how it is managed.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "lib.projectsveltos.io",
    version = "v1beta1",
    kind = "SveltosCluster",
    plural = "sveltosclusters",
    namespaced,
    status = "SveltosClusterStatus",
    category = "sveltos",
    derive = "PartialEq",
    derive = "Default",
    printcolumn = r#"{"name": "Ready", "type": "boolean", "jsonPath": ".status.ready", "description": "Whether the cluster is ready to be managed"}"#,
    printcolumn = r#"{"name": "ConnectionStatus", "type": "string", "jsonPath": ".status.connectionStatus", "priority": 1, "description": "Whether the connection is healthy"}"#,
    printcolumn = r#"{"name": "Version", "type": "string", "jsonPath": ".status.version", "description": "Kubernetes version of the cluster"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": "Time since the SveltosCluster was created"}"#,
    printcolumn = r#"{"name": "Shard", "type": "string", "jsonPath": ".metadata.annotations['sharding\\.projectsveltos\\.io/key']", "description": "Cluster shard"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct SveltosClusterSpec {
    /// Secret (in the cluster's namespace) holding the kubeconfig; "" = `<name>-sveltos-kubeconfig`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubeconfig_name: String,
    /// Key of the kubeconfig inside that Secret; "" = the only key, or `value`/`kubeconfig`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubeconfig_key_name: String,
    /// A paused cluster gets no deployments and no event collection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Periodic renewal of the kubeconfig's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_request_renewal_option: Option<TokenRequestRenewalOption>,
    /// Free-form data readable from templates as `.Cluster.spec.data`.
    #[serde(default, rename = "data", skip_serializing_if = "BTreeMap::is_empty")]
    pub arbitrary_data: BTreeMap<String, String>,
    /// Time window (cron expressions) in which the cluster is unpaused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_window: Option<ActiveWindow>,
    /// Failed connection attempts before the cluster is marked Down.
    #[serde(default = "default_failure_threshold")]
    pub consecutive_failure_threshold: i64,
    /// Checks that must pass before the cluster is Ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readiness_checks: Vec<ClusterCheck>,
    /// Checks that keep a Ready cluster Healthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub liveness_checks: Vec<ClusterCheck>,
    /// The cluster pulls its configuration (immutable).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pull_mode: bool,
    /// Cloud workload identity used instead of a kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_identity: Option<WorkloadIdentityConfig>,
}

fn default_failure_threshold() -> i64 {
    3
}

/// What Sveltos last observed of a registered cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SveltosClusterStatus {
    /// Kubernetes version of the cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The cluster can be managed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ready: bool,
    /// `Healthy` or `Down`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_status: Option<ConnectionStatus>,
    /// Last error reaching the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// When the token was last renewed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_reconciled_token_request_at: String,
    /// Last heartbeat of a pull-mode agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_last_report_time: Option<Time>,
    /// Next time the active window unpauses the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_unpause: Option<Time>,
    /// Next time the active window pauses the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_pause: Option<Time>,
    /// Hash of the active window last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub active_window_hash: Option<ByteString>,
    /// Consecutive failed connection attempts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connection_failures: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Whether Sveltos can reach a cluster.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum ConnectionStatus {
    /// Reachable.
    Healthy,
    /// Unreachable for `consecutiveFailureThreshold` attempts.
    Down,
}

/// Cron expressions bounding when a cluster is active.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActiveWindow {
    /// When the window opens (cron).
    #[schemars(length(min = 1))]
    pub from: String,
    /// When the window closes (cron).
    #[schemars(length(min = 1))]
    pub to: String,
}

/// A named Lua condition over selected resources of the managed cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCheck {
    /// Check name.
    pub name: String,
    /// Resources given to the condition.
    pub resource_selectors: Vec<ResourceSelector>,
    /// Lua `evaluate()` returning whether the check passes.
    pub condition: String,
}

/// Token renewal settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenRequestRenewalOption {
    /// How often to renew (a Go duration such as `1h`).
    pub renew_token_request_interval: String,
    /// Lifetime of the requested token.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token_duration: String,
    /// Namespace of the ServiceAccount whose token is requested.
    #[serde(
        default,
        rename = "saNamespace",
        skip_serializing_if = "String::is_empty"
    )]
    pub sa_namespace: String,
    /// Name of the ServiceAccount whose token is requested.
    #[serde(default, rename = "saName", skip_serializing_if = "String::is_empty")]
    pub sa_name: String,
    /// Key to write the renewed kubeconfig under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_key_name: Option<String>,
}

/// Cloud workload identity provider.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum WorkloadIdentityProvider {
    /// Amazon EKS.
    #[serde(rename = "AWS")]
    Aws,
    /// Google GKE.
    #[serde(rename = "GCP")]
    Gcp,
    /// Azure AKS.
    Azure,
}

/// Access to a cluster through cloud workload identity.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadIdentityConfig {
    /// The cloud provider.
    pub provider: WorkloadIdentityProvider,
    /// API server endpoint.
    #[schemars(length(min = 1))]
    pub endpoint: String,
    /// Secret holding the API server's CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_secret_ref: Option<LocalObjectReference>,
    /// AWS settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws: Option<AwsWorkloadIdentityConfig>,
    /// GCP settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcp: Option<GcpWorkloadIdentityConfig>,
    /// Azure settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure: Option<AzureWorkloadIdentityConfig>,
}

/// AWS workload identity settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AwsWorkloadIdentityConfig {
    /// EKS cluster name.
    pub cluster_name: String,
    /// Role to assume.
    #[serde(default, rename = "roleARN", skip_serializing_if = "String::is_empty")]
    pub role_arn: String,
    /// AWS region.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub region: String,
}

/// GCP workload identity settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GcpWorkloadIdentityConfig {
    /// GCP project.
    #[serde(rename = "projectID")]
    pub project_id: String,
    /// GKE cluster name.
    pub cluster_name: String,
    /// GKE location.
    pub location: String,
}

/// Azure workload identity settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureWorkloadIdentityConfig {
    /// Entra tenant.
    #[serde(rename = "tenantID")]
    pub tenant_id: String,
    /// Application (client) id.
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// Subscription.
    #[serde(
        default,
        rename = "subscriptionID",
        skip_serializing_if = "String::is_empty"
    )]
    pub subscription_id: String,
    /// Resource group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_group: String,
    /// AKS cluster name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_name: String,
}

impl SveltosCluster {
    /// Ready and not being deleted: the only clusters selectors may match. A paused cluster
    /// still matches (its profiles stay) but nothing is deployed to or collected from it.
    pub fn is_selectable(&self) -> bool {
        self.metadata.deletion_timestamp.is_none() && self.status.as_ref().is_some_and(|s| s.ready)
    }

    /// The kubeconfig in this cluster's Secret `data`: key `kubeconfigKeyName` when set, else
    /// `kubeconfig`, else `value`, else the Secret's only key; `Err` says which key is missing.
    pub fn kubeconfig_from_secret<'a>(
        &self,
        data: &'a BTreeMap<String, ByteString>,
    ) -> Result<&'a [u8], crate::MissingKubeconfigKey> {
        let wanted = &self.spec.kubeconfig_key_name;
        let found = if wanted.is_empty() {
            data.get("kubeconfig")
                .or_else(|| data.get("value"))
                .or_else(|| (data.len() == 1).then(|| data.values().next()).flatten())
        } else {
            data.get(wanted)
        };
        found
            .map(|b| b.0.as_slice())
            .ok_or_else(|| crate::MissingKubeconfigKey {
                keys: if wanted.is_empty() {
                    "kubeconfig or value".to_owned()
                } else {
                    wanted.clone()
                },
            })
    }

    /// Name of the Secret holding this cluster's kubeconfig.
    pub fn kubeconfig_secret_name(&self) -> String {
        if self.spec.kubeconfig_name.is_empty() {
            format!(
                "{}-sveltos-kubeconfig",
                self.metadata.name.as_deref().unwrap_or_default()
            )
        } else {
            self.spec.kubeconfig_name.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_selectability() {
        let mut cluster: SveltosCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1",
            "kind": "SveltosCluster",
            "metadata": {"name": "c1", "namespace": "default", "labels": {"env": "fv"}},
            "spec": {"data": {"region": "eu"}},
            "status": {"ready": true, "connectionStatus": "Healthy"}
        }))
        .unwrap();
        assert_eq!(cluster.spec.consecutive_failure_threshold, 3);
        assert_eq!(cluster.spec.arbitrary_data["region"], "eu");
        assert_eq!(cluster.kubeconfig_secret_name(), "c1-sveltos-kubeconfig");
        assert!(cluster.is_selectable());
        cluster.spec.paused = true;
        assert!(cluster.is_selectable(), "a paused cluster keeps matching");
        cluster.status = None;
        assert!(!cluster.is_selectable());
    }

    #[test]
    fn a_missing_kubeconfig_key_is_named_in_words() {
        let mut cluster = SveltosCluster::new("c1", SveltosClusterSpec::default());
        let data = BTreeMap::from([
            ("a".to_owned(), ByteString(b"one".to_vec())),
            ("b".to_owned(), ByteString(b"two".to_vec())),
        ]);
        let missing = cluster.kubeconfig_from_secret(&data).unwrap_err();
        assert_eq!(missing.to_string(), "no key kubeconfig or value");
        cluster.spec.kubeconfig_key_name = "custom".to_owned();
        let missing = cluster.kubeconfig_from_secret(&data).unwrap_err();
        assert_eq!(missing.to_string(), "no key custom");
        let missing = crate::capi::kubeconfig_from_secret(&data).unwrap_err();
        assert_eq!(missing.to_string(), "no key value");
    }
}
