//! Add-on references shared by EventTrigger and ClusterProfile: policyRefs, Helm charts,
//! Kustomizations, template resources, patches, health checks and the enums that tune them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ObjectReference, SecretReference};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CelRule, LabelFilter};

/// `true` default for a few Helm flags.
fn yes() -> Option<bool> {
    Some(true)
}

/// Default tier (lower wins conflicts).
pub(crate) fn default_tier() -> i32 {
    100
}

/// How a profile keeps its add-ons in step.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum SyncMode {
    /// Deploy once; later changes are ignored.
    OneTime,
    /// Re-deploy whenever the profile or referenced content changes.
    #[default]
    Continuous,
    /// As Continuous, and also repair changes made in the cluster.
    ContinuousWithDriftDetection,
    /// Only report what would change.
    DryRun,
}

/// Where a referenced add-on is deployed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum DeploymentType {
    /// In the management cluster.
    Local,
    /// In the matching managed cluster.
    #[default]
    Remote,
}

/// What happens to deployed add-ons when a cluster stops matching a profile.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum StopMatchingBehavior {
    /// Remove them.
    #[default]
    WithdrawPolicies,
    /// Leave them, stripped of Sveltos' ownership metadata.
    LeavePolicies,
}

/// Install or uninstall a Helm release.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum HelmChartAction {
    /// Install or upgrade.
    #[default]
    Install,
    /// Uninstall.
    Uninstall,
}

/// Feature of a profile.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum FeatureId {
    /// policyRefs.
    Resources,
    /// helmCharts.
    Helm,
    /// kustomizationRefs.
    Kustomize,
}

/// A ConfigMap, Secret or Flux source holding add-ons to deploy.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "has(self.remoteURL) != has(self.kind)", "message": "either remoteURL or kind must be set, but not both"}
]))]
pub struct PolicyRef {
    /// Namespace; "" = the cluster's namespace. A template in EventTriggers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name; a template in EventTriggers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `ConfigMap`, `Secret`, `GitRepository`, `OCIRepository` or `Bucket`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "crate::schema::policy_ref_kind")]
    pub kind: String,
    /// Path inside a Flux source.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Local (management cluster) or Remote.
    #[serde(default)]
    pub deployment_type: DeploymentType,
    /// Missing object is not an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Arbitrates between references producing the same object: lower wins.
    #[serde(default = "default_tier")]
    #[schemars(range(min = 1))]
    pub tier: i32,
    /// Do not create missing namespaces.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_namespace_creation: bool,
    /// Delete and recreate objects whose update hits an immutable field.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// Fetch the content from a URL instead of `kind`.
    #[serde(default, rename = "remoteURL", skip_serializing_if = "Option::is_none")]
    pub remote_url: Option<RemoteUrl>,
}

impl Default for PolicyRef {
    fn default() -> Self {
        PolicyRef {
            namespace: Default::default(),
            name: Default::default(),
            kind: Default::default(),
            path: Default::default(),
            deployment_type: Default::default(),
            optional: Default::default(),
            tier: default_tier(),
            skip_namespace_creation: Default::default(),
            force: Default::default(),
            remote_url: Default::default(),
        }
    }
}

/// Add-on content fetched over HTTP(S) or OCI.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteUrl {
    /// `http(s)://` or `oci://` URL.
    #[schemars(regex(pattern = r"^(https?|oci)://"))]
    pub url: String,
    /// How often to fetch it again (Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// Credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// The content is a template.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub template: bool,
    /// Skip TLS verification.
    #[serde(
        default,
        rename = "insecureSkipTLSVerify",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub insecure_skip_tls_verify: bool,
    /// Use plain HTTP.
    #[serde(
        default,
        rename = "plainHTTP",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub plain_http: bool,
}

/// A ConfigMap or Secret whose data supplies values or patches.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValueFrom {
    /// Namespace; "" = the cluster's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// `ConfigMap` or `Secret`.
    #[schemars(schema_with = "crate::schema::config_map_or_secret")]
    pub kind: String,
    /// Missing object is not an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

/// A management-cluster resource fetched at deployment and exposed to templates.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateResourceRef {
    /// The resource (name and namespace may be templates).
    pub resource: ObjectReference,
    /// Key templates use to reach it (`getResource "Id"`).
    pub identifier: String,
    /// Missing resource is not an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Status changes do not trigger a redeploy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_status_changes: bool,
    /// Only changes to these dot paths trigger a redeploy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watch_fields: Vec<String>,
}

/// A Helm chart to install in matching clusters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "self.repositoryURL.startsWith('http') ? size(self.chartName) >= 1 : true", "message": "ChartName must be defined"},
    {"rule": "self.repositoryURL.startsWith('oci') ? size(self.chartName) >= 1 : true", "message": "ChartName must be defined"},
    {"rule": "self.repositoryURL.startsWith('http') ? size(self.chartVersion) >= 1 : true", "message": "ChartVersion must be defined"},
    {"rule": "self.repositoryURL.startsWith('oci') ? size(self.chartVersion) >= 1 : true", "message": "ChartVersion must be defined"},
    {"rule": "self.repositoryURL.startsWith('http') ? size(self.repositoryName) >= 1 : true", "message": "RepositoryName must be defined"},
    {"rule": "self.repositoryURL.startsWith('oci') ? size(self.repositoryName) >= 1 : true", "message": "RepositoryName must be defined"}
]))]
pub struct HelmChart {
    /// Repository URL (`https://`, `oci://`).
    #[serde(rename = "repositoryURL")]
    #[schemars(length(min = 1))]
    pub repository_url: String,
    /// Repository name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repository_name: String,
    /// Chart name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chart_name: String,
    /// Chart version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chart_version: String,
    /// Release name.
    #[schemars(length(min = 1))]
    pub release_name: String,
    /// Release namespace.
    #[schemars(length(min = 1))]
    pub release_namespace: String,
    /// Values (YAML, may be a template).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub values: String,
    /// ConfigMaps/Secrets with more values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_from: Vec<ValueFrom>,
    /// Install or uninstall.
    #[serde(default)]
    pub helm_chart_action: HelmChartAction,
    /// Helm options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<HelmOptions>,
    /// Registry credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_credentials_config: Option<RegistryCredentialsConfig>,
    /// Cosign signature verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_verification: Option<CosignVerification>,
    /// Helm provenance verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance_verification: Option<ProvenanceVerification>,
}

/// Registry access for charts.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryCredentialsConfig {
    /// Secret with credentials.
    #[serde(
        default,
        rename = "credentials",
        skip_serializing_if = "Option::is_none"
    )]
    pub credentials_secret_ref: Option<SecretReference>,
    /// Key in that Secret.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// Secret with the registry CA.
    #[serde(default, rename = "ca", skip_serializing_if = "Option::is_none")]
    pub ca_secret_ref: Option<SecretReference>,
    /// Skip TLS verification.
    #[serde(
        default,
        rename = "insecureSkipTLSVerify",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub insecure_skip_tls_verify: bool,
    /// Use plain HTTP.
    #[serde(
        default,
        rename = "plainHTTP",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub plain_http: bool,
}

/// Helm options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmOptions {
    /// Skip CRDs.
    #[serde(
        default,
        rename = "skipCRDs",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub skip_crds: bool,
    /// Skip schema validation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_schema_validation: bool,
    /// Wait for resources to be ready.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait: bool,
    /// Wait for jobs to complete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait_for_jobs: bool,
    /// Timeout (Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Disable hooks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_hooks: bool,
    /// Disable OpenAPI validation.
    #[serde(
        default,
        rename = "disableOpenAPIValidation",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub disable_open_api_validation: bool,
    /// Roll back on failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub atomic: bool,
    /// Update dependencies first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dependency_update: bool,
    /// Labels of the release.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Cache clients.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enable_client_cache: bool,
    /// Release description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Pass credentials to all domains.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pass_credentials_all: bool,
    /// Run the chart's tests.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_tests: bool,
    /// Whether hooks go through the patch post-renderer; unset = Helm's `combined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_render_strategy: Option<PostRenderStrategy>,
    /// Install options.
    #[serde(default)]
    #[schemars(transform = no_object_default)]
    pub install_options: HelmInstallOptions,
    /// Upgrade options.
    #[serde(default)]
    #[schemars(transform = no_object_default)]
    pub upgrade_options: HelmUpgradeOptions,
    /// Uninstall options.
    #[serde(default)]
    #[schemars(transform = no_object_default)]
    pub uninstall_options: HelmUninstallOptions,
}

/// Drops the schema default of a nested options object: the API server fills the fields
/// inside it, never the object itself.
pub(super) fn no_object_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

/// Helm install options.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmInstallOptions {
    /// Create the release namespace.
    #[serde(default = "yes", skip_serializing_if = "Option::is_none")]
    pub create_namespace: Option<bool>,
    /// Reuse a deleted release's name.
    #[serde(default = "yes", skip_serializing_if = "Option::is_none")]
    pub replace: Option<bool>,
    /// Disable hooks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_hooks: bool,
    /// Adopt existing resources.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub take_ownership: bool,
    /// Failed installs before recovering.
    #[serde(default = "five")]
    pub recover_after_consecutive_failures: i64,
}

fn five() -> i64 {
    5
}

impl Default for HelmInstallOptions {
    fn default() -> Self {
        HelmInstallOptions {
            create_namespace: yes(),
            replace: yes(),
            disable_hooks: false,
            take_ownership: false,
            recover_after_consecutive_failures: five(),
        }
    }
}

/// Helm upgrade options.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmUpgradeOptions {
    /// Force resource updates.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// Reset values to the chart's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset_values: bool,
    /// Reuse the last release's values.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reuse_values: bool,
    /// Reset, then reuse values.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset_then_reuse_values: bool,
    /// Recreate pods.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recreate: bool,
    /// Revisions kept.
    #[serde(default = "two")]
    pub max_history: i64,
    /// Delete new resources on failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cleanup_on_fail: bool,
    /// Render subchart notes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sub_notes: bool,
    /// Upgrade CRDs.
    #[serde(
        default,
        rename = "upgradeCRDs",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub upgrade_crds: bool,
    /// Disable hooks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_hooks: bool,
    /// Adopt existing resources.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub take_ownership: bool,
}

fn two() -> i64 {
    2
}

impl Default for HelmUpgradeOptions {
    fn default() -> Self {
        HelmUpgradeOptions {
            force: false,
            reset_values: false,
            reuse_values: false,
            reset_then_reuse_values: false,
            recreate: false,
            max_history: two(),
            cleanup_on_fail: false,
            sub_notes: false,
            upgrade_crds: false,
            disable_hooks: false,
            take_ownership: false,
        }
    }
}

/// Helm uninstall options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmUninstallOptions {
    /// Keep the release history.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_history: bool,
    /// How dependents of removed objects are deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_propagation: Option<DeletionPropagation>,
    /// Disable hooks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_hooks: bool,
}

/// How hooks are fed to the post-renderer that applies patches to a chart.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PostRenderStrategy {
    /// Hooks and templates in one stream (Helm's default).
    Combined,
    /// Hooks and templates in separate runs.
    Separate,
    /// Templates only; hooks are left as they are.
    #[serde(rename = "nohooks")]
    NoHooks,
}

/// Deletion propagation used when a release is uninstalled.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeletionPropagation {
    /// Leave dependents in place.
    Orphan,
    /// Delete dependents before the owner.
    Foreground,
    /// Delete the owner, then dependents in the background.
    Background,
}

/// Where the key that checks a chart's Cosign signature comes from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum CosignProvider {
    /// A PEM public key stored in a Secret.
    PublicKey,
    /// Sigstore keyless signing (Fulcio certificate and transparency log).
    Keyless,
}

/// Cosign verification of a chart.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CosignVerification {
    /// Public key or keyless.
    pub provider: CosignProvider,
    /// Secret with the public key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// Accepted keyless identities.
    #[serde(
        default,
        rename = "matchOIDCIdentity",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_oidc_identity: Vec<OidcIdentityMatcher>,
}

/// An accepted OIDC identity (regular expressions).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcIdentityMatcher {
    /// Issuer.
    #[schemars(length(min = 1))]
    pub issuer: String,
    /// Subject.
    #[schemars(length(min = 1))]
    pub subject: String,
}

/// Helm provenance verification.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvenanceVerification {
    /// Secret with the keyring.
    pub keyring_secret_ref: SecretReference,
}

/// A Kustomization to build and deploy.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "has(self.remoteURL) != has(self.kind)", "message": "either remoteURL or kind must be set, but not both"}
]))]
pub struct KustomizationRef {
    /// Namespace of the source; "" = the cluster's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the source.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `ConfigMap`, `Secret`, `GitRepository`, `OCIRepository` or `Bucket`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "crate::schema::policy_ref_kind")]
    pub kind: String,
    /// Path of the kustomization in the source.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Kustomize components.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    /// Missing source is not an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Namespace to put namespaced objects in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(min = 1, max = 63))]
    pub target_namespace: String,
    /// Local or Remote.
    #[serde(default)]
    pub deployment_type: DeploymentType,
    /// Values substituted into the output.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    /// ConfigMaps/Secrets with more values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_from: Vec<ValueFrom>,
    /// Conflict tier.
    #[serde(default = "default_tier")]
    #[schemars(range(min = 1))]
    pub tier: i32,
    /// Do not create missing namespaces.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_namespace_creation: bool,
    /// Recreate on immutable-field errors.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// Fetch the kustomization from a URL.
    #[serde(default, rename = "remoteURL", skip_serializing_if = "Option::is_none")]
    pub remote_url: Option<RemoteKustomizeUrl>,
}

impl Default for KustomizationRef {
    fn default() -> Self {
        KustomizationRef {
            namespace: Default::default(),
            name: Default::default(),
            kind: Default::default(),
            path: Default::default(),
            components: Default::default(),
            optional: Default::default(),
            target_namespace: Default::default(),
            deployment_type: Default::default(),
            values: Default::default(),
            values_from: Default::default(),
            tier: default_tier(),
            skip_namespace_creation: Default::default(),
            force: Default::default(),
            remote_url: Default::default(),
        }
    }
}

/// A Kustomization fetched over HTTP(S) or OCI.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteKustomizeUrl {
    /// URL.
    #[schemars(regex(pattern = r"^(https?|oci)://"))]
    pub url: String,
    /// Refresh interval (Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// Credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// Skip TLS verification.
    #[serde(
        default,
        rename = "insecureSkipTLSVerify",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub insecure_skip_tls_verify: bool,
    /// Use plain HTTP.
    #[serde(
        default,
        rename = "plainHTTP",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub plain_http: bool,
}

/// Which deployed objects a patch or drift exclusion applies to.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchSelector {
    /// API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// API group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name (regular expression).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Annotation selector.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub annotation_selector: String,
    /// Label selector.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
}

/// A strategic-merge or JSON6902 patch applied to deployed objects.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Patch {
    /// The patch text (may be a template).
    pub patch: String,
    /// Objects it applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<PatchSelector>,
}

/// Fields drift detection ignores.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftExclusion {
    /// JSON pointer paths.
    pub paths: Vec<String>,
    /// Objects it applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<PatchSelector>,
}

/// A health condition checked before, after or around deployment.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.jobCheck) || (!has(self.script) && !has(self.evaluateCEL))", "message": "jobCheck cannot be set together with script or evaluateCEL"}
]))]
pub struct ValidateHealth {
    /// Check name.
    pub name: String,
    /// Feature after whose deployment (or removal) the check runs.
    #[serde(rename = "featureID")]
    pub feature_id: FeatureId,
    /// API group of the checked resources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Label filters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub label_filters: Vec<LabelFilter>,
    /// Namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Prometheus-style metric source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_source: Option<MetricSource>,
    /// Metric queries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metric_queries: Vec<MetricQuery>,
    /// Lua `evaluate()` over the resources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub script: String,
    /// CEL rules.
    #[serde(default, rename = "evaluateCEL", skip_serializing_if = "Vec::is_empty")]
    pub evaluate_cel: Vec<CelRule>,
    /// A Job whose success is the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_check: Option<JobHealthCheck>,
}

/// Where metrics are read.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricSource {
    /// Base URL.
    #[schemars(length(min = 1))]
    pub url: String,
    /// Path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

/// A named metric query.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricQuery {
    /// Name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Query.
    #[schemars(length(min = 1))]
    pub query: String,
}

/// A ConfigMap or Secret by kind, namespace and name (libsveltos' plain policy reference).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapOrSecretRef {
    /// Namespace; "" = the cluster's namespace.
    pub namespace: String,
    /// Name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// `Secret` or `ConfigMap`.
    #[schemars(schema_with = "secret_or_config_map")]
    pub kind: String,
}

/// Schema of a `kind` that is `Secret` or `ConfigMap`.
fn secret_or_config_map(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["Secret", "ConfigMap"]})
}

/// A Job run as a health check.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobHealthCheck {
    /// ConfigMap/Secret holding the Job.
    pub job_ref: ConfigMapOrSecretRef,
    /// How long to wait (Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Serializes and reads back, checking nothing is lost.
    fn round_trip<T>(value: &T) -> serde_json::Value
    where
        T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
    {
        let json = serde_json::to_value(value).unwrap();
        let back: T = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(&back, value);
        json
    }

    #[test]
    fn policy_ref_defaults_and_round_trip() {
        let policy: PolicyRef = serde_json::from_value(
            json!({"name": "np", "namespace": "default", "kind": "ConfigMap"}),
        )
        .unwrap();
        assert_eq!(policy.tier, 100);
        assert_eq!(policy.deployment_type, DeploymentType::Remote);
        assert_eq!(
            policy,
            PolicyRef {
                name: "np".into(),
                namespace: "default".into(),
                kind: "ConfigMap".into(),
                ..PolicyRef::default()
            }
        );
        let json = round_trip(&policy);
        assert_eq!(json["deploymentType"], "Remote");
        assert!(json.get("optional").is_none(), "false flags are omitted");
    }

    #[test]
    fn remote_url_policy_ref_reads() {
        let policy: PolicyRef = serde_saphyr::from_str(
            "remoteURL:\n  url: oci://ghcr.io/org/addons:v1\n  interval: 10m\n  plainHTTP: true\n\
             deploymentType: Local\ntier: 50\nforce: true\n",
        )
        .unwrap();
        let remote = policy.remote_url.as_ref().unwrap();
        assert_eq!(remote.interval.as_deref(), Some("10m"));
        assert!(remote.plain_http);
        assert!(!remote.insecure_skip_tls_verify);
        assert_eq!(policy.deployment_type, DeploymentType::Local);
        assert_eq!(policy.tier, 50);
        let json = round_trip(&policy);
        assert_eq!(json["remoteURL"]["plainHTTP"], true);
    }

    #[test]
    fn helm_chart_with_options_round_trips() {
        let chart: HelmChart = serde_json::from_value(json!({
            "repositoryURL": "https://kyverno.github.io/kyverno/",
            "repositoryName": "kyverno", "chartName": "kyverno/kyverno", "chartVersion": "v2.6.0",
            "releaseName": "kyverno-latest", "releaseNamespace": "kyverno",
            "options": {"skipCRDs": true, "upgradeOptions": {"upgradeCRDs": true}},
            "valuesFrom": [{"kind": "ConfigMap", "name": "values"}]
        }))
        .unwrap();
        assert_eq!(chart.helm_chart_action, HelmChartAction::Install);
        let options = chart.options.as_ref().unwrap();
        assert!(options.skip_crds);
        assert!(options.upgrade_options.upgrade_crds);
        assert_eq!(options.upgrade_options.max_history, 2);
        assert_eq!(options.install_options.create_namespace, Some(true));
        assert_eq!(options.install_options.replace, Some(true));
        assert_eq!(
            options.install_options.recover_after_consecutive_failures,
            5
        );
        let json = round_trip(&chart);
        assert_eq!(json["options"]["skipCRDs"], true);
        assert_eq!(json["helmChartAction"], "Install");
    }

    #[test]
    fn helm_chart_yaml_with_every_option_kind_reads() {
        let chart: HelmChart = serde_saphyr::from_str(
            r#"
repositoryURL: oci://registry-1.docker.io/bitnamicharts
repositoryName: bitnami
chartName: bitnamicharts/nginx
chartVersion: 15.1.0
releaseName: web
releaseNamespace: web
helmChartAction: Uninstall
values: |
  replicaCount: {{ .Cluster.metadata.labels.replicas }}
options:
  wait: true
  timeout: 10m
  labels: {team: a}
  postRenderStrategy: nohooks
  installOptions: {createNamespace: false, takeOwnership: true}
  upgradeOptions: {maxHistory: 5, disableHooks: true}
  uninstallOptions: {keepHistory: true, deletionPropagation: foreground}
registryCredentialsConfig:
  credentials: {name: creds, namespace: default}
  ca: {name: ca}
  insecureSkipTLSVerify: true
  plainHTTP: true
signatureVerification:
  provider: Keyless
  matchOIDCIdentity:
  - {issuer: "https://token.actions.githubusercontent.com", subject: ".*"}
"#,
        )
        .unwrap();
        assert_eq!(chart.helm_chart_action, HelmChartAction::Uninstall);
        let options = chart.options.as_ref().unwrap();
        assert_eq!(options.timeout.as_deref(), Some("10m"));
        assert_eq!(
            options.post_render_strategy,
            Some(PostRenderStrategy::NoHooks)
        );
        assert_eq!(options.install_options.create_namespace, Some(false));
        assert_eq!(options.install_options.replace, Some(true));
        assert_eq!(options.upgrade_options.max_history, 5);
        assert_eq!(
            options.uninstall_options.deletion_propagation,
            Some(DeletionPropagation::Foreground)
        );
        let registry = chart.registry_credentials_config.as_ref().unwrap();
        assert_eq!(
            registry
                .credentials_secret_ref
                .as_ref()
                .unwrap()
                .name
                .as_deref(),
            Some("creds")
        );
        let cosign = chart.signature_verification.as_ref().unwrap();
        assert_eq!(cosign.provider, CosignProvider::Keyless);
        let json = round_trip(&chart);
        assert_eq!(json["options"]["postRenderStrategy"], "nohooks");
        assert_eq!(json["registryCredentialsConfig"]["ca"]["name"], "ca");
        assert_eq!(
            json["registryCredentialsConfig"]["insecureSkipTLSVerify"],
            true
        );
        assert_eq!(
            json["signatureVerification"]["matchOIDCIdentity"][0]["subject"],
            ".*"
        );
    }

    #[test]
    fn kustomization_ref_defaults_and_round_trip() {
        let kustomization: KustomizationRef = serde_json::from_value(json!({
            "kind": "GitRepository", "namespace": "flux-system", "name": "flux-system",
            "path": "./helloWorld/", "targetNamespace": "eng", "values": {"region": "west"}
        }))
        .unwrap();
        assert_eq!(kustomization.tier, 100);
        assert_eq!(kustomization.deployment_type, DeploymentType::Remote);
        round_trip(&kustomization);
    }

    #[test]
    fn validate_health_patches_and_drift_exclusions_read() {
        let health: ValidateHealth = serde_json::from_value(json!({
            "name": "deployment-health", "featureID": "Helm",
            "group": "apps", "version": "v1", "kind": "Deployment", "namespace": "kyverno",
            "labelFilters": [{"key": "app", "operation": "Equal", "value": "kyverno"}],
            "evaluateCEL": [{"name": "ready", "rule": "resource.status.readyReplicas > 0"}],
            "metricSource": {"url": "http://prometheus.monitoring.svc:9090"},
            "metricQueries": [{"name": "errors", "query": "sum(rate(errors[5m]))"}]
        }))
        .unwrap();
        assert_eq!(health.feature_id, FeatureId::Helm);
        assert_eq!(health.evaluate_cel.len(), 1);
        round_trip(&health);
        let job: ValidateHealth = serde_json::from_value(json!({
            "name": "smoke", "featureID": "Resources",
            "jobCheck": {"jobRef": {"kind": "ConfigMap", "namespace": "", "name": "smoke-job"}, "timeout": "2m"}
        }))
        .unwrap();
        let check = job.job_check.as_ref().unwrap();
        assert_eq!(check.job_ref.name, "smoke-job");
        let json = round_trip(&job);
        assert_eq!(
            json["jobCheck"]["jobRef"]["namespace"], "",
            "namespace is always written"
        );
        assert!(
            serde_json::from_value::<ValidateHealth>(json!({"name": "x", "featureID": "Other"}))
                .is_err()
        );

        let patch: Patch = serde_json::from_value(json!({
            "patch": "- op: add\n  path: /metadata/labels/env\n  value: prod",
            "target": {"kind": "Deployment", "labelSelector": "app=web"}
        }))
        .unwrap();
        round_trip(&patch);
        let exclusion: DriftExclusion = serde_json::from_value(json!({
            "paths": ["/spec/replicas"], "target": {"kind": "Deployment", "namespace": "web"}
        }))
        .unwrap();
        round_trip(&exclusion);
    }

    #[test]
    fn enums_use_sveltos_spelling_and_defaults() {
        assert_eq!(SyncMode::default(), SyncMode::Continuous);
        assert_eq!(
            StopMatchingBehavior::default(),
            StopMatchingBehavior::WithdrawPolicies
        );
        assert_eq!(DeploymentType::default(), DeploymentType::Remote);
        assert_eq!(
            serde_json::to_value(SyncMode::ContinuousWithDriftDetection).unwrap(),
            "ContinuousWithDriftDetection"
        );
        assert_eq!(
            serde_json::to_value(FeatureId::Kustomize).unwrap(),
            "Kustomize"
        );
        assert_eq!(
            serde_json::to_value(StopMatchingBehavior::LeavePolicies).unwrap(),
            "LeavePolicies"
        );
    }

    #[test]
    fn schema_carries_defaults_and_rules() {
        let schema = serde_json::to_value(schemars::schema_for!(PolicyRef)).unwrap();
        assert_eq!(schema["properties"]["tier"]["default"], 100);
        assert_eq!(schema["properties"]["deploymentType"]["default"], "Remote");
        assert_eq!(
            schema["x-kubernetes-validations"][0]["rule"],
            "has(self.remoteURL) != has(self.kind)"
        );
        let chart = serde_json::to_value(schemars::schema_for!(HelmChart)).unwrap();
        assert_eq!(
            chart["x-kubernetes-validations"].as_array().unwrap().len(),
            6
        );
    }
}
