//! EventReports in the management cluster: what an evaluation reports, written only when it
//! changes, with Sveltos' names and labels.

use std::collections::BTreeMap;

use api::labels::{
    EVENT_REPORT_CLUSTER_NAME_LABEL, EVENT_REPORT_CLUSTER_TYPE_LABEL, EVENT_SOURCE_NAME_LABEL,
};
use api::v1beta1::{
    ClusterType, EventReport, EventReportSpec, EventSource, event_report_name,
    join_collected_resources,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::Value;

/// Field manager of the agent's writes.
pub const FIELD_MANAGER: &str = "sveltos-events-agent";

/// A registered cluster, as reports name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterId {
    /// Namespace of the SveltosCluster.
    pub namespace: String,
    /// Name of the SveltosCluster.
    pub name: String,
}

impl std::fmt::Display for ClusterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The reference a report gives one matching object.
fn reference(object: &Value) -> ObjectReference {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    ObjectReference {
        api_version: text("/apiVersion"),
        kind: text("/kind"),
        namespace: text("/metadata/namespace").filter(|n| !n.is_empty()),
        name: text("/metadata/name"),
        ..Default::default()
    }
}

/// The report `source`'s matching objects make for `cluster`.
pub fn report_spec(
    cluster: &ClusterId,
    source: &EventSource,
    matching: &[Value],
) -> EventReportSpec {
    let resources = (source.spec.collect_resources && !matching.is_empty()).then(|| {
        let documents: Vec<String> = matching.iter().map(Value::to_string).collect();
        ByteString(join_collected_resources(
            documents.iter().map(String::as_bytes),
        ))
    });
    EventReportSpec {
        cluster_namespace: cluster.namespace.clone(),
        cluster_name: cluster.name.clone(),
        cluster_type: ClusterType::Sveltos,
        event_source_name: source.metadata.name.clone().unwrap_or_default(),
        matching_resources: matching.iter().map(reference).collect(),
        resources,
        cloud_events: Vec::new(),
    }
}

/// Labels of a management-cluster report.
fn labels(cluster: &ClusterId, source: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (EVENT_SOURCE_NAME_LABEL.to_owned(), source.to_owned()),
        (
            EVENT_REPORT_CLUSTER_NAME_LABEL.to_owned(),
            cluster.name.clone(),
        ),
        (
            EVENT_REPORT_CLUSTER_TYPE_LABEL.to_owned(),
            ClusterType::Sveltos.lowercase().to_owned(),
        ),
    ])
}

/// Writes (server-side apply) the report of `spec`.
pub async fn write(mgmt: &Client, cluster: &ClusterId, spec: &EventReportSpec) -> kube::Result<()> {
    let api: Api<EventReport> = Api::namespaced(mgmt.clone(), &cluster.namespace);
    let name = event_report_name(&spec.event_source_name, &cluster.name, ClusterType::Sveltos);
    let report = EventReport {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(cluster.namespace.clone()),
            labels: Some(labels(cluster, &spec.event_source_name)),
            ..Default::default()
        },
        spec: spec.clone(),
        status: None,
    };
    let mut body = serde_json::to_value(&report).map_err(kube::Error::SerdeError)?;
    if let Some(object) = body.as_object_mut() {
        object.insert("apiVersion".into(), "lib.projectsveltos.io/v1beta1".into());
        object.insert("kind".into(), "EventReport".into());
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(&name, &params, &Patch::Apply(&body)).await?;
    Ok(())
}

/// Deletes the report of `source` for `cluster` (absent is fine).
pub async fn delete(mgmt: &Client, cluster: &ClusterId, source: &str) -> kube::Result<()> {
    let api: Api<EventReport> = Api::namespaced(mgmt.clone(), &cluster.namespace);
    let name = event_report_name(source, &cluster.name, ClusterType::Sveltos);
    match api.delete(&name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Deletes every hub-written report, in any namespace, for which `keep(cluster, source)` is false.
pub async fn delete_stale(
    mgmt: &Client,
    keep: impl Fn(&ClusterId, &str) -> bool,
) -> kube::Result<()> {
    let api: Api<EventReport> = Api::all(mgmt.clone());
    let selector = format!(
        "{EVENT_REPORT_CLUSTER_TYPE_LABEL}={}",
        ClusterType::Sveltos.lowercase()
    );
    for report in api.list(&ListParams::default().labels(&selector)).await? {
        let cluster = ClusterId {
            namespace: report.metadata.namespace.clone().unwrap_or_default(),
            name: report.spec.cluster_name.clone(),
        };
        let source = &report.spec.event_source_name;
        if !keep(&cluster, source) {
            tracing::info!(%cluster, %source, "deleting a stale EventReport");
            delete(mgmt, &cluster, source).await?;
        }
    }
    Ok(())
}

/// Deletes every report of `cluster` (the cluster went away).
pub async fn delete_all(mgmt: &Client, cluster: &ClusterId) -> kube::Result<()> {
    let api: Api<EventReport> = Api::namespaced(mgmt.clone(), &cluster.namespace);
    let selector = format!(
        "{EVENT_REPORT_CLUSTER_NAME_LABEL}={},{EVENT_REPORT_CLUSTER_TYPE_LABEL}={}",
        cluster.name,
        ClusterType::Sveltos.lowercase()
    );
    for report in api.list(&ListParams::default().labels(&selector)).await? {
        let source = report.spec.event_source_name.clone();
        delete(mgmt, cluster, &source).await?;
    }
    Ok(())
}
