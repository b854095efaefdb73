//! EventReport: what matched an EventSource in one cluster (lib.projectsveltos.io/v1beta1).

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The resources of one cluster that match one EventSource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "lib.projectsveltos.io",
    version = "v1beta1",
    kind = "EventReport",
    plural = "eventreports",
    namespaced,
    status = "EventReportStatus",
    category = "sveltos",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct EventReportSpec {
    /// Namespace of the cluster the report is about ("" in the managed cluster's own copy).
    #[serde(default)]
    pub cluster_namespace: String,
    /// Name of the cluster the report is about ("" in the managed cluster's own copy).
    #[serde(default)]
    pub cluster_name: String,
    /// `Capi` or `Sveltos`.
    #[serde(default)]
    pub cluster_type: ClusterType,
    /// EventSource the report answers.
    #[serde(default)]
    pub event_source_name: String,
    /// One reference per matching object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub matching_resources: Vec<ObjectReference>,
    /// Collected objects: each object's JSON followed by `\n---` (base64 on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub resources: Option<ByteString>,
    /// Matching CloudEvents, each a JSON document (base64 on the wire).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::bytes_list")]
    pub cloud_events: Vec<ByteString>,
}

/// Delivery state of a report and the last error met while acting on it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventReportStatus {
    /// Where the report is in its delivery to the manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ReportPhase>,
    /// Last error while generating ClusterProfiles from this report; cleared on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// Why the agent could not evaluate the EventSource in this cluster; the spec keeps the last
    /// good result. Cleared on the next successful evaluation (an extension of this project).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_failure_message: Option<String>,
    /// `Evaluated` (by the agent) and `Processed` (by the manager), in words (an extension of
    /// this project).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<crate::condition::Condition>,
}

/// Delivery phase of a report.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum ReportPhase {
    /// Written by the agent, not yet collected.
    WaitingForDelivery,
    /// Being collected.
    Delivering,
    /// The manager acted on it.
    Processed,
}

/// How a cluster is registered.
#[derive(
    Serialize,
    Deserialize,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    JsonSchema,
)]
pub enum ClusterType {
    /// A Cluster API `Cluster`.
    Capi,
    /// A `SveltosCluster`.
    #[default]
    Sveltos,
}

impl ClusterType {
    /// The form used in names and labels: `capi` or `sveltos`.
    pub fn lowercase(self) -> &'static str {
        match self {
            ClusterType::Capi => "capi",
            ClusterType::Sveltos => "sveltos",
        }
    }

    /// The type a name says: `Capi`/`capi` or `Sveltos`/`sveltos`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "Capi" | "capi" => Some(ClusterType::Capi),
            "Sveltos" | "sveltos" => Some(ClusterType::Sveltos),
            _ => None,
        }
    }

    /// The JSON form: `Capi` or `Sveltos`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterType::Capi => "Capi",
            ClusterType::Sveltos => "Sveltos",
        }
    }
}

impl std::fmt::Display for ClusterType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An EventReport read for the names of the objects it lists: its collected objects (most of
/// a large report) are skipped, not decoded. For readers that need no more.
pub type ReportNames = kube::core::Object<MatchingNames, kube::core::NotUsed>;

/// The spec of a [`ReportNames`]: the objects the report lists.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MatchingNames {
    /// The listed objects, by name.
    #[serde(default)]
    pub matching_resources: Vec<ListedName>,
}

/// An object a report lists, by name.
#[derive(Clone, Debug, Deserialize)]
pub struct ListedName {
    /// Its name.
    pub name: Option<String>,
}

/// Name of the management-cluster copy of a report: `<capi|sveltos>--<eventSource>--<cluster>`.
pub fn event_report_name(
    event_source: &str,
    cluster_name: &str,
    cluster_type: ClusterType,
) -> String {
    format!(
        "{}--{event_source}--{cluster_name}",
        cluster_type.lowercase()
    )
}

/// Name of the per-cluster ConfigMap (in the cluster's namespace) listing the EventSources a
/// hub-mode agent evaluates for it: `<clusterName>-<capi|sveltos>`, as Sveltos names it.
pub fn agent_sources_config_map_name(cluster_name: &str, cluster_type: ClusterType) -> String {
    format!("{cluster_name}-{}", cluster_type.lowercase())
}

/// The cluster (name and type) an agent source list named `name` is for: the inverse of
/// [`agent_sources_config_map_name`].
pub fn agent_sources_cluster(name: &str) -> Option<(&str, ClusterType)> {
    let (cluster, suffix) = name.rsplit_once('-')?;
    Some((cluster, ClusterType::parse(suffix)?))
}

/// The key of one (trigger, source) entry of that ConfigMap.
pub fn agent_sources_key(event_trigger: &str, event_source: &str) -> String {
    format!(
        "{}{event_trigger}-{event_source}",
        crate::labels::AGENT_SOURCES_KEY_PREFIX
    )
}

/// Splits collected `resources` bytes into the JSON documents the agent joined with `\n---`.
pub fn split_collected_resources(bytes: &[u8]) -> Vec<&[u8]> {
    collected_resource_ranges(bytes)
        .into_iter()
        .map(|range| &bytes[range])
        .collect()
}

/// Where each document of [`split_collected_resources`] lies in `bytes`.
pub fn collected_resource_ranges(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut documents = Vec::new();
    let mut start = 0;
    loop {
        let rest = &bytes[start..];
        let end = find(rest, b"\n---").unwrap_or(rest.len());
        let part = &rest[..end];
        let leading = part.len() - part.trim_ascii_start().len();
        let document = part.trim_ascii();
        if !document.is_empty() {
            let from = start + leading;
            documents.push(from..from + document.len());
        }
        if end >= rest.len() {
            return documents;
        }
        start += end + 4;
    }
}

/// Joins objects the way the agent encodes `resources`: `<json>\n---` for each.
pub fn join_collected_resources<'a>(documents: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for document in documents {
        out.extend_from_slice(document);
        out.extend_from_slice(b"\n---");
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_read_for_its_names_skips_what_it_collected() {
        let report = serde_json::json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventReport",
            "metadata": {"name": "r", "namespace": "fleet"},
            "spec": {
                "clusterNamespace": "fleet", "clusterName": "c1", "clusterType": "Sveltos",
                "eventSourceName": "es", "resources": "c2VydmljZXM=",
                "matchingResources": [{"kind": "Service", "name": "web"}, {"kind": "Service"}]
            },
            "status": {"phase": "Processed"}
        });
        let read: ReportNames = serde_json::from_value(report).unwrap();
        let names: Vec<_> = read
            .spec
            .matching_resources
            .iter()
            .map(|m| m.name.as_deref())
            .collect();
        assert_eq!(names, [Some("web"), None]);
    }

    #[test]
    fn names_follow_upstream_shape() {
        assert_eq!(
            event_report_name("sveltos-service", "c1", ClusterType::Sveltos),
            "sveltos--sveltos-service--c1"
        );
        assert_eq!(event_report_name("s", "w", ClusterType::Capi), "capi--s--w");
        let list = agent_sources_config_map_name("my-cluster", ClusterType::Capi);
        assert_eq!(
            agent_sources_cluster(&list),
            Some(("my-cluster", ClusterType::Capi))
        );
        assert_eq!(agent_sources_cluster("my-cluster-other"), None);
    }

    #[test]
    fn collected_resources_round_trip() {
        let a = br#"{"kind":"Service","metadata":{"name":"a"}}"#.as_slice();
        let b = br#"{"kind":"Service","metadata":{"name":"b"}}"#.as_slice();
        let joined = join_collected_resources([a, b]);
        assert!(joined.ends_with(b"\n---"));
        assert_eq!(split_collected_resources(&joined), vec![a, b]);
        assert!(split_collected_resources(b"").is_empty());
        // Blank space around a document is not part of it; empty documents are none.
        let spaced = b" \n{\"a\":1}\n---\n---\n\t{\"b\":2} \n---  ";
        let ranges = collected_resource_ranges(spaced);
        assert_eq!(ranges, [2..9, 19..26]);
        let documents: Vec<&[u8]> = ranges.into_iter().map(|r| &spaced[r]).collect();
        assert_eq!(documents, [br#"{"a":1}"#.as_slice(), br#"{"b":2}"#]);
    }

    #[test]
    fn seed_report_resources_decode() {
        // The resources field of the EventReport shown in the seed documents.
        let report: EventReport = serde_json::from_value(serde_json::json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1",
            "kind": "EventReport",
            "metadata": {"name": "capi--sveltos-service--w", "namespace": "default"},
            "spec": {
                "clusterName": "w", "clusterNamespace": "default", "clusterType": "Capi",
                "eventSourceName": "sveltos-service",
                "resources": "eyJhIjoxfQotLS0="
            }
        }))
        .unwrap();
        let bytes = report.spec.resources.unwrap().0;
        assert_eq!(
            split_collected_resources(&bytes),
            vec![br#"{"a":1}"#.as_slice()]
        );
    }
}
