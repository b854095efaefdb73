//! Label, annotation, finalizer and naming constants Sveltos objects carry, spelled exactly as
//! upstream so that objects written by either implementation are recognised by the other.

/// Group of EventSource, EventTrigger, EventReport and SveltosCluster.
pub const LIB_GROUP: &str = "lib.projectsveltos.io";
/// Group of ClusterProfile and ClusterSummary.
pub const CONFIG_GROUP: &str = "config.projectsveltos.io";
/// Namespace where Sveltos keeps its own objects (generated ConfigMaps/Secrets, agent reports).
pub const SVELTOS_NAMESPACE: &str = "projectsveltos";

/// Marks a ConfigMap/Secret whose data is instantiated with event data by the manager.
pub const INSTANTIATE_ANNOTATION: &str = "projectsveltos.io/instantiate";
/// Marks a ConfigMap/Secret whose data is a template rendered at deployment with cluster data.
pub const TEMPLATE_ANNOTATION: &str = "projectsveltos.io/template";
/// Marks a ConfigMap/Secret whose data is a Lua program producing the resources to deploy.
pub const LUA_ANNOTATION: &str = "projectsveltos.io/lua";
/// Set on EventSource copies the manager puts into managed clusters; the agent ignores others.
pub const DEPLOYED_BY_SVELTOS_ANNOTATION: &str = "projectsveltos.io/deployed-by-sveltos";
/// Selects sprig's text function map for an EventTrigger or ClusterProfile (no visible effect).
pub const TEX_TEMPLATE_ANNOTATION: &str = "projectsveltos.io/tex-template";
/// Pauses a ClusterProfile or Profile.
pub const PROFILE_PAUSED_ANNOTATION: &str = "profile.projectsveltos.io/paused";
/// Cluster API's pause annotation, honoured on clusters and EventTriggers.
pub const CAPI_PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";
/// kubectl's copy of the object it applied (`kubectl apply`), data included.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Assigns a cluster to the manager instance started with the same shard key.
pub const SHARD_ANNOTATION: &str = "sharding.projectsveltos.io/key";
/// Our own marker: the object was converted from v1alpha1 and keeps the old rule that every
/// referenced ConfigMap/Secret is instantiated with event data (DESIGN.md section 3, decision 2).
pub const LEGACY_INSTANTIATION_ANNOTATION: &str =
    "eventtrigger.sveltos-events.io/legacy-instantiation";
/// Our own mark on a ClusterSummary: the kinds its last pass set out to deploy (comma
/// separated), written with the spec before anything is deployed.
pub const INTENDED_KINDS_ANNOTATION: &str = "clustersummary.sveltos-events.io/intended-kinds";
/// Our own marker on an EventTrigger that was generated from an EventBasedAddOn.
pub const CONVERTED_FROM_ANNOTATION: &str = "eventtrigger.sveltos-events.io/converted-from";

/// Tenant identity: name of the ServiceAccount acting for the tenant.
pub const SERVICE_ACCOUNT_NAME_LABEL: &str = "projectsveltos.io/serviceaccount-name";
/// Tenant identity: namespace of the ServiceAccount acting for the tenant.
pub const SERVICE_ACCOUNT_NAMESPACE_LABEL: &str = "projectsveltos.io/serviceaccount-namespace";
/// Tenant identity label of 2023 releases (read by nothing today; kept for recognition).
pub const LEGACY_ADMIN_NAME_LABEL: &str = "projectsveltos.io/admin-name";

/// Names the EventSource an EventReport belongs to.
pub const EVENT_SOURCE_NAME_LABEL: &str = "projectsveltos.io/eventsource-name";
/// Names the cluster a management-cluster EventReport copy came from.
pub const EVENT_REPORT_CLUSTER_NAME_LABEL: &str = "eventreport.projectsveltos.io/cluster-name";
/// Type (`capi` or `sveltos`, lowercase) of the cluster a management EventReport came from.
pub const EVENT_REPORT_CLUSTER_TYPE_LABEL: &str = "eventreport.projectsveltos.io/cluster-type";

/// Prefix of the identity labels on objects an EventTrigger generates.
pub const EVENT_TRIGGER_LABEL_PREFIX: &str = "eventtrigger.lib.projectsveltos.io/";
/// EventTrigger that generated the object.
pub const EVENT_TRIGGER_NAME_LABEL: &str = "eventtrigger.lib.projectsveltos.io/eventtriggername";
/// Namespace of the source cluster (note the capital N, as upstream).
pub const CLUSTER_NAMESPACE_LABEL: &str = "eventtrigger.lib.projectsveltos.io/clusterNamespace";
/// Name of the source cluster.
pub const CLUSTER_NAME_LABEL: &str = "eventtrigger.lib.projectsveltos.io/clustername";
/// Type (`Capi` or `Sveltos`) of the source cluster.
pub const CLUSTER_TYPE_LABEL: &str = "eventtrigger.lib.projectsveltos.io/clustertype";
/// Legacy key that holds the EventSource name.
pub const EVENT_REPORT_NAME_LABEL: &str = "eventtrigger.lib.projectsveltos.io/eventreportname";
/// EventSource whose report produced the object.
pub const EVENT_SOURCE_LABEL: &str = "eventtrigger.lib.projectsveltos.io/eventsourcename";
/// Name of the matching resource (oneForEvent objects).
pub const RESOURCE_NAME_LABEL: &str = "eventtrigger.lib.projectsveltos.io/resourcename";
/// Namespace of the matching resource (oneForEvent objects; absent for cluster-scoped ones).
pub const RESOURCE_NAMESPACE_LABEL: &str = "eventtrigger.lib.projectsveltos.io/resourcenamespace";
/// CloudEvent source, `/` replaced by `-`.
pub const CLOUD_EVENT_SOURCE_LABEL: &str = "eventtrigger.lib.projectsveltos.io/cesource";
/// CloudEvent subject, `/` replaced by `-`.
pub const CLOUD_EVENT_SUBJECT_LABEL: &str = "eventtrigger.lib.projectsveltos.io/cesubject";
/// Namespace of the template ConfigMap/Secret an instantiated object came from.
pub const REFERENCE_NAMESPACE_LABEL: &str = "eventtrigger.lib.projectsveltos.io/refnamespace";
/// Name of the template ConfigMap/Secret an instantiated object came from.
pub const REFERENCE_NAME_LABEL: &str = "eventtrigger.lib.projectsveltos.io/refname";
/// Set to `ok` on ConfigMaps/Secrets produced by a configMapGenerator or secretGenerator.
pub const FROM_GENERATOR_LABEL: &str = "eventtrigger.lib.projectsveltos.io/fromgenerator";

/// ClusterProfile a ClusterSummary belongs to.
pub const CLUSTER_PROFILE_NAME_LABEL: &str = "projectsveltos.io/cluster-profile-name";
/// Cluster a ClusterSummary is for.
pub const CLUSTER_SUMMARY_CLUSTER_NAME_LABEL: &str = "projectsveltos.io/cluster-name";
/// Type of the cluster a ClusterSummary is for.
pub const CLUSTER_SUMMARY_CLUSTER_TYPE_LABEL: &str = "projectsveltos.io/cluster-type";

/// Feature that deployed an object (`Resources`, `Helm`, `Kustomize`).
pub const REASON_LABEL: &str = "projectsveltos.io/reason";
/// Kind of the ConfigMap/Secret a deployed object came from.
pub const REFERENCE_KIND_ANNOTATION: &str = "projectsveltos.io/reference-kind";
/// Name of the ConfigMap/Secret a deployed object came from.
pub const REFERENCE_NAME_ANNOTATION: &str = "projectsveltos.io/reference-name";
/// Namespace of the ConfigMap/Secret a deployed object came from.
pub const REFERENCE_NAMESPACE_ANNOTATION: &str = "projectsveltos.io/reference-namespace";
/// Tier of the policyRef a deployed object came from.
pub const REFERENCE_TIER_ANNOTATION: &str = "projectsveltos.io/reference-tier";
/// `sha256:<hex>` of a deployed object as applied.
pub const HASH_ANNOTATION: &str = "projectsveltos.io/hash";
/// Kind of the profile owning a deployed object.
pub const OWNER_KIND_ANNOTATION: &str = "projectsveltos.io/owner-kind";
/// Name of the profile owning a deployed object.
pub const OWNER_NAME_ANNOTATION: &str = "projectsveltos.io/owner-name";
/// Tier of the profile owning a deployed object.
pub const OWNER_TIER_ANNOTATION: &str = "projectsveltos.io/owner-tier";
/// ClusterSummary that deployed an object.
pub const CLUSTER_SUMMARY_ANNOTATION: &str = "projectsveltos.io/clustersummary";
/// `Local` or `Remote`: where an object was deployed.
pub const DEPLOYMENT_TYPE_ANNOTATION: &str = "projectsveltos.io/deploymenttype";
/// Excludes a deployed object from drift detection.
pub const DRIFT_DETECTION_IGNORE_ANNOTATION: &str = "projectsveltos.io/driftDetectionIgnore";
/// Deletes and recreates a deployed object when an update hits an immutable field.
pub const FORCE_RECREATE_ANNOTATION: &str = "projectsveltos.io/forceRecreate";

/// Marks the per-cluster ConfigMap listing the EventSources a hub-mode agent evaluates
/// (Sveltos' agent-in-management-cluster list; the label is this project's, for watching).
pub const AGENT_SOURCES_LABEL: &str = "sveltos-events.io/agent-eventsources";
/// Prefix of the keys of that ConfigMap: `eventsource-<eventTrigger>-<eventSource>`.
pub const AGENT_SOURCES_KEY_PREFIX: &str = "eventsource-";
/// SveltosCluster annotation: `spoke` when an agent runs inside the cluster (spoke mode); the
/// hub then copies EventSources in and relays the cluster's EventReports instead of evaluating.
pub const AGENT_MODE_ANNOTATION: &str = "sveltos-events.io/agent-mode";
/// Value of [`AGENT_MODE_ANNOTATION`] for spoke mode.
pub const AGENT_MODE_SPOKE: &str = "spoke";
/// SveltosCluster annotation that changes whenever `register cluster` writes new credentials:
/// the hub agent reconnects at once instead of waiting out its retry delay or keeping a
/// connection made with the old ones.
pub const KUBECONFIG_REVISION_ANNOTATION: &str = "sveltos-events.io/kubeconfig-revision";

/// Finalizer the manager puts on EventTriggers.
pub const EVENT_TRIGGER_FINALIZER: &str = "eventtrigger.finalizer.projectsveltos.io";
/// Finalizer the agent puts on EventSources it handles.
pub const EVENT_SOURCE_FINALIZER: &str = "eventsource.finalizer.projectsveltos.io";
/// Finalizer constant for EventReports (declared upstream, effectively unused).
pub const EVENT_REPORT_FINALIZER: &str = "eventreport.finalizer.projectsveltos.io";

/// Secret type a Secret referenced by a profile must have.
pub const CLUSTER_PROFILE_SECRET_TYPE: &str = "addons.projectsveltos.io/cluster-profile";
