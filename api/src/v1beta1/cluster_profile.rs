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
    use crate::v1beta1::{DeploymentType, FeatureId, HelmChartAction};
    use kube::CustomResourceExt;
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
        assert_eq!(
            profile.spec,
            ClusterProfileSpec {
                cluster_refs: profile.spec.cluster_refs.clone(),
                policy_refs: profile.spec.policy_refs.clone(),
                ..ClusterProfileSpec::default()
            }
        );
        let json = serde_json::to_value(&profile).unwrap();
        assert!(
            json["spec"].get("clusterSelector").is_none(),
            "empty selector omitted"
        );
        let back: ClusterProfile = serde_json::from_value(json).unwrap();
        assert_eq!(back, profile);
    }

    #[test]
    fn user_profile_yaml_with_every_section_reads() {
        let profile: ClusterProfile = serde_saphyr::from_str(
            r#"
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata:
  name: deploy-kyverno
spec:
  clusterSelector:
    matchLabels: {env: prod}
  setRefs: [prod-set]
  dependsOn: [base]
  syncMode: DryRun
  tier: 10
  continueOnConflict: true
  continueOnError: true
  maxUpdate: 30%
  stopMatchingBehavior: LeavePolicies
  reloader: true
  maxConsecutiveFailures: 4
  templateResourceRefs:
  - resource: {apiVersion: v1, kind: ConfigMap, name: "{{ .Cluster.metadata.name }}"}
    identifier: Info
    watchFields: [data.region]
  policyRefs:
  - kind: Secret
    name: contour
    namespace: default
    deploymentType: Local
  - kind: GitRepository
    name: flux-system
    namespace: flux-system
    path: ./policies
    tier: 5
  helmCharts:
  - repositoryURL: https://kyverno.github.io/kyverno/
    repositoryName: kyverno
    chartName: kyverno/kyverno
    chartVersion: v3.3.3
    releaseName: kyverno-latest
    releaseNamespace: kyverno
    options:
      atomic: true
      installOptions: {replace: false}
  kustomizationRefs:
  - kind: ConfigMap
    name: kustomize
    namespace: default
  validateHealths:
  - name: ready
    featureID: Helm
    group: apps
    version: v1
    kind: Deployment
    script: |
      function evaluate() return {healthy = true} end
  preDeployChecks:
  - {name: pre, featureID: Resources}
  preDeleteChecks:
  - {name: predel, featureID: Kustomize}
  postDeleteChecks:
  - {name: postdel, featureID: Helm}
  patches:
  - patch: |
      - op: add
        path: /metadata/labels/env
        value: prod
    target: {kind: Deployment}
  patchesFrom:
  - {kind: ConfigMap, name: patches, optional: true}
  driftExclusions:
  - paths: [/spec/replicas]
  extraLabels: {team: platform}
  extraAnnotations: {owner: ops}
status:
  matchingClusters:
  - {apiVersion: lib.projectsveltos.io/v1beta1, kind: SveltosCluster, namespace: mgmt, name: mgmt}
  updatingClusters:
    hash: AQID
    clusters:
    - {kind: SveltosCluster, namespace: mgmt, name: mgmt}
  updatedClusters:
    clusters: []
  failedClusters:
  - clusterRef: {kind: SveltosCluster, namespace: mgmt, name: other}
    failureMessage: "cannot create ClusterSummary"
    lastFailureTime: "2024-05-01T10:00:00Z"
  dependenciesHash: BAU=
  reconciliationSuspended: true
  suspensionReason: paused by annotation
"#,
        )
        .unwrap();
        let spec = &profile.spec;
        assert_eq!(spec.sync_mode, SyncMode::DryRun);
        assert_eq!(spec.tier, 10);
        assert_eq!(spec.max_update, Some(IntOrString::String("30%".into())));
        assert_eq!(
            spec.stop_matching_behavior,
            StopMatchingBehavior::LeavePolicies
        );
        assert_eq!(spec.max_consecutive_failures, Some(4));
        assert_eq!(spec.policy_refs[0].deployment_type, DeploymentType::Local);
        assert_eq!(spec.policy_refs[0].tier, 100);
        assert_eq!(spec.policy_refs[1].tier, 5);
        let chart = &spec.helm_charts[0];
        assert_eq!(chart.helm_chart_action, HelmChartAction::Install);
        let options = chart.options.as_ref().unwrap();
        assert_eq!(options.install_options.replace, Some(false));
        assert_eq!(options.install_options.create_namespace, Some(true));
        assert_eq!(spec.kustomization_refs[0].tier, 100);
        assert_eq!(spec.validate_healths[0].feature_id, FeatureId::Helm);
        assert_eq!(spec.post_delete_checks[0].feature_id, FeatureId::Helm);
        assert!(spec.patches_from[0].optional);
        assert_eq!(spec.template_resource_refs[0].identifier, "Info");
        let status = profile.status.as_ref().unwrap();
        assert_eq!(status.matching_cluster_refs.len(), 1);
        let updating = status.updating_clusters.as_ref().unwrap();
        assert_eq!(updating.hash.as_ref().unwrap().0, [1, 2, 3]);
        assert_eq!(
            status.failed_clusters[0].failure_message,
            "cannot create ClusterSummary"
        );
        assert_eq!(status.dependencies_hash.as_ref().unwrap().0, [4, 5]);
        assert_eq!(
            status.suspension_reason.as_deref(),
            Some("paused by annotation")
        );

        let json = serde_json::to_value(&profile).unwrap();
        assert_eq!(json["spec"]["maxUpdate"], "30%");
        assert_eq!(json["status"]["matchingClusters"][0]["name"], "mgmt");
        assert_eq!(json["status"]["dependenciesHash"], "BAU=");
        let back: ClusterProfile = serde_json::from_value(json).unwrap();
        assert_eq!(back, profile);
    }

    #[test]
    fn crd_is_cluster_scoped_and_carries_defaults() {
        let crd = ClusterProfile::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        assert_eq!(crd.spec.group, "config.projectsveltos.io");
        let schema = serde_json::to_value(
            crd.spec.versions[0]
                .schema
                .as_ref()
                .unwrap()
                .open_api_v3_schema
                .as_ref()
                .unwrap(),
        )
        .unwrap();
        let spec = &schema["properties"]["spec"]["properties"];
        assert_eq!(spec["tier"]["default"], 100);
        assert_eq!(spec["syncMode"]["default"], "Continuous");
        assert_eq!(spec["stopMatchingBehavior"]["default"], "WithdrawPolicies");
        assert_eq!(
            spec["policyRefs"]["items"]["properties"]["tier"]["default"],
            100
        );
        assert_eq!(
            spec["templateResourceRefs"]["x-kubernetes-list-map-keys"][0],
            "identifier"
        );
    }
}
