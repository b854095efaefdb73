//! EventTrigger: which clusters to watch, and which add-ons to deploy where when events occur
//! (lib.projectsveltos.io/v1beta1, cluster-scoped).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    DriftExclusion, HelmChart, KustomizationRef, Patch, PolicyRef, StopMatchingBehavior, SyncMode,
    TemplateResourceRef, ValidateHealth, ValueFrom,
};

/// When events of `eventSourceName` happen in the source clusters, generate ClusterProfiles
/// deploying these add-ons to the destination.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "lib.projectsveltos.io",
    version = "v1beta1",
    kind = "EventTrigger",
    plural = "eventtriggers",
    status = "EventTriggerStatus",
    category = "sveltos",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct EventTriggerSpec {
    /// Clusters where the EventSource is deployed and events are watched (empty = none).
    pub source_cluster_selector: LabelSelector,
    /// ClusterSets whose selected clusters are added to the source clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_set_refs: Vec<String>,
    /// Clusters receiving the add-ons; empty = the cluster where the event happened.
    #[serde(default, skip_serializing_if = "crate::selector::is_empty")]
    pub destination_cluster_selector: LabelSelector,
    /// One cluster receiving the add-ons; every field may be a template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_cluster: Option<ObjectReference>,
    /// One ClusterProfile per matching resource instead of one per cluster (immutable).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "Value is immutable"}]))]
    pub one_for_event: bool,
    /// Template naming the generated ClusterProfiles; "" = a name derived from their identity.
    #[serde(
        default,
        rename = "profileNameFormat",
        skip_serializing_if = "String::is_empty"
    )]
    pub profile_name_format: String,
    /// EventSource defining the event; may be a template over cluster data.
    #[schemars(length(min = 1))]
    pub event_source_name: String,
    /// ConfigMaps instantiated with event data into `projectsveltos` under `nameFormat`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_map_generator: Vec<GeneratorReference>,
    /// Secrets instantiated with event data into `projectsveltos` under `nameFormat`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_generator: Vec<GeneratorReference>,
    /// Copied to the generated ClusterProfiles.
    #[serde(default)]
    pub sync_mode: SyncMode,
    /// Copied to the generated ClusterProfiles: lower wins conflicts.
    #[serde(default = "super::addons::default_tier")]
    #[schemars(range(min = 1))]
    pub tier: i32,
    /// Copied to the generated ClusterProfiles.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continue_on_conflict: bool,
    /// Copied to the generated ClusterProfiles: clusters updated at once (count or percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::max_update")]
    pub max_update: Option<IntOrString>,
    /// Copied to the generated ClusterProfiles.
    #[serde(default)]
    pub stop_matching_behavior: StopMatchingBehavior,
    /// Copied to the generated ClusterProfiles.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reloader: bool,
    /// Copied to the generated ClusterProfiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// Resources fetched at deployment, names and namespaces templated with event data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub template_resource_refs: Vec<TemplateResourceRef>,
    /// ConfigMaps/Secrets with the add-ons, instantiated per `projectsveltos.io/instantiate`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub policy_refs: Vec<PolicyRef>,
    /// Helm charts, every string field templated with event data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub helm_charts: Vec<HelmChart>,
    /// Kustomizations, templated with event data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub kustomization_refs: Vec<KustomizationRef>,
    /// Copied to the generated ClusterProfiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub pre_deploy_checks: Vec<ValidateHealth>,
    /// Copied to the generated ClusterProfiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub validate_healths: Vec<ValidateHealth>,
    /// Copied to the generated ClusterProfiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub pre_delete_checks: Vec<ValidateHealth>,
    /// Copied to the generated ClusterProfiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub post_delete_checks: Vec<ValidateHealth>,
    /// Copied to the generated ClusterProfiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub patches: Vec<Patch>,
    /// Copied to the generated ClusterProfiles (upstream drops them; we keep them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub patches_from: Vec<ValueFrom>,
    /// Copied to the generated ClusterProfiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub drift_exclusions: Vec<DriftExclusion>,
    /// Template evaluating to `Create` or `Delete` for each CloudEvent.
    #[serde(default = "default_cloud_event_action")]
    pub cloud_event_action: String,
    /// Labels added to every deployed object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_labels: BTreeMap<String, String>,
    /// Annotations added to every deployed object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_annotations: BTreeMap<String, String>,
}

impl Default for EventTriggerSpec {
    fn default() -> Self {
        EventTriggerSpec {
            source_cluster_selector: Default::default(),
            cluster_set_refs: Default::default(),
            destination_cluster_selector: Default::default(),
            destination_cluster: Default::default(),
            one_for_event: Default::default(),
            profile_name_format: Default::default(),
            event_source_name: Default::default(),
            config_map_generator: Default::default(),
            secret_generator: Default::default(),
            sync_mode: Default::default(),
            tier: super::addons::default_tier(),
            continue_on_conflict: Default::default(),
            max_update: Default::default(),
            stop_matching_behavior: Default::default(),
            reloader: Default::default(),
            depends_on: Default::default(),
            template_resource_refs: Default::default(),
            policy_refs: Default::default(),
            helm_charts: Default::default(),
            kustomization_refs: Default::default(),
            pre_deploy_checks: Default::default(),
            validate_healths: Default::default(),
            pre_delete_checks: Default::default(),
            post_delete_checks: Default::default(),
            patches: Default::default(),
            patches_from: Default::default(),
            drift_exclusions: Default::default(),
            cloud_event_action: default_cloud_event_action(),
            extra_labels: Default::default(),
            extra_annotations: Default::default(),
        }
    }
}

fn default_cloud_event_action() -> String {
    "Create".to_string()
}

/// A ConfigMap/Secret to instantiate with event data under a templated name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeneratorReference {
    /// Namespace of the source (template); "" = the cluster's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the source (template).
    #[schemars(length(min = 1))]
    pub name: String,
    /// Template giving the generated object's name.
    #[serde(rename = "nameFormat")]
    #[schemars(length(min = 1))]
    pub name_format: String,
    /// Skip instead of failing when the source does not exist.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

/// Which clusters the trigger watches and how its EventSource deployment went in each.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventTriggerStatus {
    /// Source clusters currently matching.
    #[serde(
        default,
        rename = "matchingClusters",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub matching_cluster_refs: Vec<ObjectReference>,
    /// Destination clusters currently matching.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destination_matching_cluster_refs: Vec<ObjectReference>,
    /// Per source cluster: state of the EventSource deployment and of profile generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_info: Vec<ClusterInfo>,
    /// `Ready` and what it rests on: the EventSource exists and is valid, source and
    /// destination clusters match, profiles were generated (an extension of this project).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<crate::condition::Condition>,
}

/// Progress of one trigger in one cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    /// The cluster.
    pub cluster: ObjectReference,
    /// Hash of the configuration last deployed (base64).
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub hash: Option<ByteString>,
    /// Deployment state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SveltosFeatureStatus>,
    /// What went wrong, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
}

/// State of a Sveltos feature in one cluster.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum SveltosFeatureStatus {
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
}

impl EventTriggerSpec {
    /// Rejects the combinations the API documents as exclusive (upstream accepts them silently).
    pub fn validate(&self) -> Result<(), String> {
        if self.destination_cluster.is_some()
            && !crate::selector::is_empty(&self.destination_cluster_selector)
        {
            return Err(
                "destinationCluster and destinationClusterSelector are mutually exclusive: \
                        set one of them"
                    .to_string(),
            );
        }
        if self.tier < 1 {
            return Err(format!("tier must be at least 1, got {}", self.tier));
        }
        Ok(())
    }
}
