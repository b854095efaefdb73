//! EventReports in the management cluster: what an evaluation reports, written only when it
//! changes, with Sveltos' names and labels.

use std::collections::BTreeMap;

use api::labels::{
    EVENT_REPORT_CLUSTER_NAME_LABEL, EVENT_REPORT_CLUSTER_TYPE_LABEL, EVENT_SOURCE_NAME_LABEL,
};
use api::secret_data;
use api::v1beta1::{
    ClusterType, EventReport, EventReportSpec, EventSource, event_report_name,
    join_collected_resources,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
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

/// What the agent publishes for one (cluster, EventSource): the report and, when it collects
/// Secrets, their data, which goes to the report's companion Secret instead of the report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Publication {
    /// The EventReport's spec.
    pub spec: EventReportSpec,
    /// Companion data: what was removed from each collected Secret, by document key.
    pub sealed: BTreeMap<String, Vec<u8>>,
}

/// The publication `source`'s matching objects make for `cluster`.
pub fn publication(cluster: &ClusterId, source: &EventSource, matching: &[Value]) -> Publication {
    let mut sealed = BTreeMap::new();
    let resources = (source.spec.collect_resources && !matching.is_empty()).then(|| {
        let documents: Vec<String> = matching
            .iter()
            .map(|object| {
                if !secret_data::is_secret(object) {
                    return object.to_string();
                }
                let mut shown = object.clone();
                let removed = secret_data::seal(&mut shown);
                let document = shown.to_string();
                if let Some(removed) = removed {
                    sealed.insert(
                        secret_data::document_key(document.as_bytes()),
                        removed.to_string().into_bytes(),
                    );
                }
                document
            })
            .collect();
        ByteString(join_collected_resources(
            documents.iter().map(String::as_bytes),
        ))
    });
    let spec = EventReportSpec {
        cluster_namespace: cluster.namespace.clone(),
        cluster_name: cluster.name.clone(),
        cluster_type: ClusterType::Sveltos,
        event_source_name: source.metadata.name.clone().unwrap_or_default(),
        matching_resources: matching.iter().map(reference).collect(),
        resources,
        cloud_events: Vec::new(),
    };
    Publication { spec, sealed }
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

/// Writes (server-side apply) `publication`: its companion Secret first, so the report never
/// names data the manager cannot find, then the report. `previous` is what this process wrote
/// last (`None`: nothing yet); a companion no longer needed is deleted after the report.
pub async fn write(
    mgmt: &Client,
    cluster: &ClusterId,
    publication: &Publication,
    previous: Option<&Publication>,
) -> kube::Result<()> {
    let spec = &publication.spec;
    let name = event_report_name(&spec.event_source_name, &cluster.name, ClusterType::Sveltos);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let digest =
        (!publication.sealed.is_empty()).then(|| secret_data::data_digest(&publication.sealed));
    let annotations = digest.as_ref().map(|digest| {
        BTreeMap::from([(
            secret_data::SECRET_DATA_ANNOTATION.to_owned(),
            digest.clone(),
        )])
    });
    if let Some(annotations) = &annotations {
        let mut labels = labels(cluster, &spec.event_source_name);
        labels.insert(secret_data::SECRET_DATA_LABEL.to_owned(), "ok".to_owned());
        let companion = Secret {
            metadata: ObjectMeta {
                name: Some(secret_data::companion_name(&name)),
                namespace: Some(cluster.namespace.clone()),
                labels: Some(labels),
                annotations: Some(annotations.clone()),
                ..Default::default()
            },
            type_: Some("Opaque".to_owned()),
            data: Some(
                publication
                    .sealed
                    .iter()
                    .map(|(key, value)| (key.clone(), ByteString(value.clone())))
                    .collect(),
            ),
            ..Default::default()
        };
        let mut body = serde_json::to_value(&companion).map_err(kube::Error::SerdeError)?;
        typed(&mut body, "v1", "Secret");
        let api: Api<Secret> = Api::namespaced(mgmt.clone(), &cluster.namespace);
        api.patch(
            &secret_data::companion_name(&name),
            &params,
            &Patch::Apply(&body),
        )
        .await?;
    }
    let report = EventReport {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(cluster.namespace.clone()),
            labels: Some(labels(cluster, &spec.event_source_name)),
            annotations,
            ..Default::default()
        },
        spec: spec.clone(),
        status: None,
    };
    let mut body = serde_json::to_value(&report).map_err(kube::Error::SerdeError)?;
    typed(&mut body, "lib.projectsveltos.io/v1beta1", "EventReport");
    let api: Api<EventReport> = Api::namespaced(mgmt.clone(), &cluster.namespace);
    api.patch(&name, &params, &Patch::Apply(&body)).await?;
    if digest.is_none() && previous.is_none_or(|p| !p.sealed.is_empty()) {
        delete_companion(mgmt, &cluster.namespace, &name).await?;
    }
    Ok(())
}

/// Records in the report's status why `source` could not be evaluated for `cluster` (`None`
/// clears it). A report not written yet is left alone: the Kubernetes Event says it instead.
pub async fn record_failure(
    mgmt: &Client,
    cluster: &ClusterId,
    source: &str,
    failure: Option<&str>,
) -> kube::Result<()> {
    let api: Api<EventReport> = Api::namespaced(mgmt.clone(), &cluster.namespace);
    let name = event_report_name(source, &cluster.name, ClusterType::Sveltos);
    let patch = serde_json::json!({ "status": { "agentFailureMessage": failure } });
    match api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Sets `apiVersion` and `kind` on a server-side apply body.
fn typed(body: &mut Value, api_version: &str, kind: &str) {
    if let Some(object) = body.as_object_mut() {
        object.insert("apiVersion".into(), api_version.into());
        object.insert("kind".into(), kind.into());
    }
}

/// Deletes the companion Secret of report `report` (absent is fine).
async fn delete_companion(mgmt: &Client, namespace: &str, report: &str) -> kube::Result<()> {
    let api: Api<Secret> = Api::namespaced(mgmt.clone(), namespace);
    match api
        .delete(
            &secret_data::companion_name(report),
            &DeleteParams::background(),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Deletes the report of `source` for `cluster` and its companion Secret (absent is fine).
pub async fn delete(mgmt: &Client, cluster: &ClusterId, source: &str) -> kube::Result<()> {
    let api: Api<EventReport> = Api::namespaced(mgmt.clone(), &cluster.namespace);
    let name = event_report_name(source, &cluster.name, ClusterType::Sveltos);
    match api.delete(&name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(error) => return Err(error),
    }
    delete_companion(mgmt, &cluster.namespace, &name).await
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
