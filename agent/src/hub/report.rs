//! EventReports: what an evaluation reports, written only when it changes, with Sveltos' names
//! and labels: into the management cluster (hub mode) or into the evaluated cluster itself
//! (spoke mode, as Sveltos' in-cluster agent does).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use api::labels::{
    EVENT_REPORT_CLUSTER_NAME_LABEL, EVENT_REPORT_CLUSTER_TYPE_LABEL, EVENT_SOURCE_NAME_LABEL,
    SVELTOS_NAMESPACE,
};
use api::secret_data;
use api::v1beta1::{
    EventReport, EventReportSpec, EventSource, ReportPhase, event_report_name,
    join_collected_resources,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::evaluate::Object;
use crate::select::Facts;

/// Field manager of the agent's writes.
pub const FIELD_MANAGER: &str = "sveltos-events-agent";

/// A registered cluster, as reports name it.
pub use api::cluster_ref::ClusterRef as ClusterId;

/// Where the reports of one evaluated cluster go.
#[derive(Clone)]
pub enum Destination {
    /// The management cluster: `sveltos--<source>--<cluster>` in the cluster's namespace, with
    /// the cluster named in labels and spec (hub mode, and the hub's relay of spoke reports).
    Hub {
        /// Client of the management cluster.
        mgmt: Client,
        /// The cluster reported on.
        cluster: ClusterId,
    },
    /// The evaluated cluster itself: named like the EventSource in `projectsveltos`, cluster
    /// fields empty (spoke mode; Sveltos' in-cluster agent writes the same).
    Local {
        /// Client of the evaluated cluster.
        client: Client,
    },
}

impl Destination {
    /// Client of the cluster the reports are written to.
    pub fn client(&self) -> &Client {
        match self {
            Destination::Hub { mgmt, .. } => mgmt,
            Destination::Local { client } => client,
        }
    }

    /// Namespace of the reports.
    pub fn namespace(&self) -> &str {
        match self {
            Destination::Hub { cluster, .. } => &cluster.namespace,
            Destination::Local { .. } => SVELTOS_NAMESPACE,
        }
    }

    /// The cluster named in reports (none for local reports).
    pub fn cluster(&self) -> Option<&ClusterId> {
        match self {
            Destination::Hub { cluster, .. } => Some(cluster),
            Destination::Local { .. } => None,
        }
    }

    /// Name of the report of `source`.
    pub fn report_name(&self, source: &str) -> String {
        match self {
            Destination::Hub { cluster, .. } => {
                event_report_name(source, &cluster.name, cluster.cluster_type)
            }
            Destination::Local { .. } => source.to_owned(),
        }
    }

    /// Labels of the report of `source`.
    fn labels(&self, source: &str) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([(EVENT_SOURCE_NAME_LABEL.to_owned(), source.to_owned())]);
        if let Some(cluster) = self.cluster() {
            labels.insert(
                EVENT_REPORT_CLUSTER_NAME_LABEL.to_owned(),
                cluster.name.clone(),
            );
            labels.insert(
                EVENT_REPORT_CLUSTER_TYPE_LABEL.to_owned(),
                cluster.cluster_type.lowercase().to_owned(),
            );
        }
        labels
    }
}

/// The reference a report gives one matching object (empty fields left out, as Sveltos'
/// `omitempty` leaves them).
fn reference(object: &Facts) -> ObjectReference {
    let given = |field: &String| Some(field.clone()).filter(|f| !f.is_empty());
    ObjectReference {
        api_version: given(&object.api_version),
        kind: given(&object.kind),
        namespace: given(&object.namespace),
        name: given(&object.name),
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

/// What a writer remembers of a publication it wrote: enough to tell whether the next one
/// differs and whether a companion Secret may exist, without keeping the report's bytes (a
/// hub keeps one per cluster and EventSource).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// SHA-256 of the spec as JSON and of the sealed data.
    digest: [u8; 32],
    /// Whether the publication had a companion Secret.
    companion: bool,
}

/// Feeds what is written to it into a SHA-256.
struct Hashing(Sha256);

impl std::io::Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Publication {
    /// What a writer remembers of this publication. The collected objects' bytes are hashed
    /// as they are, not as the base64 the report's JSON carries: an event at 1,000 collected
    /// objects would encode a megabyte more only to hash it (they are set aside meanwhile,
    /// hence `&mut`).
    pub fn written(&mut self) -> Written {
        let mut hashing = Hashing(Sha256::new());
        let resources = self.spec.resources.take();
        // Serializing a spec into memory cannot fail: it has no map with non-string keys.
        let _ = serde_json::to_writer(&mut hashing, &self.spec);
        self.spec.resources = resources;
        let resources = self.spec.resources.as_ref().map(|r| r.0.as_slice());
        // No collected objects is told apart from an empty collection.
        hashing.0.update([u8::from(resources.is_some())]);
        let mut part = |bytes: &[u8]| {
            hashing.0.update((bytes.len() as u64).to_le_bytes());
            hashing.0.update(bytes);
        };
        part(resources.unwrap_or_default());
        for (key, data) in &self.sealed {
            part(key.as_bytes());
            part(data);
        }
        Written {
            digest: hashing.0.finalize().into(),
            companion: !self.sealed.is_empty(),
        }
    }
}

/// One collected object as a report carries it: its JSON (a Secret's without its data) and
/// the data sealed away, by document key.
struct Document {
    text: Arc<str>,
    sealed: Option<(String, Vec<u8>)>,
}

impl Document {
    fn of(object: &impl Object, facts: &Facts) -> Result<Document, String> {
        if !facts.is_secret() {
            let text = match object.text() {
                Some(text) => text,
                None => object.value()?.to_string().into(),
            };
            return Ok(Document { text, sealed: None });
        }
        let mut shown = object.value()?.into_owned();
        let removed = secret_data::seal(&mut shown);
        let text = shown.to_string();
        let sealed = removed.map(|removed| {
            (
                secret_data::document_key(text.as_bytes()),
                removed.to_string().into_bytes(),
            )
        });
        Ok(Document {
            text: text.into(),
            sealed,
        })
    }
}

/// The documents of the last publication that cost an encoding (Secrets, and objects not
/// kept as text), by object (uid, resourceVersion, apiVersion: one object served in two
/// versions is two documents): an event then encodes only the objects that changed, not
/// every collected one again.
#[derive(Clone, Default)]
pub struct Documents(HashMap<(String, String, String), Arc<Document>>);

/// The key of an object's document; `None` (never reused) without uid or resourceVersion.
fn document_key(facts: &Facts) -> Option<(String, String, String)> {
    let (uid, version) = facts.version.clone()?;
    Some((uid, version, facts.api_version.clone()))
}

/// The publication `source`'s matching objects make for `cluster` (`None`: a local report).
pub fn publication(
    cluster: Option<&ClusterId>,
    source: &EventSource,
    matching: &[impl Object],
) -> Result<Publication, String> {
    publication_reusing(cluster, source, matching, &mut Documents::default())
}

/// [`publication`], taking the documents of objects unchanged since the last one from
/// `documents`, and leaving there those of this one. Objects an `aggregatedSelection` script
/// returned are its output, which can change while the object does not: those are always
/// encoded.
pub fn publication_reusing(
    cluster: Option<&ClusterId>,
    source: &EventSource,
    matching: &[impl Object],
    documents: &mut Documents,
) -> Result<Publication, String> {
    let mut sealed = BTreeMap::new();
    let reusable = source.spec.aggregated_selection.trim().is_empty();
    let mut kept = HashMap::new();
    let mut resources = None;
    if source.spec.collect_resources && !matching.is_empty() {
        let mut made: Vec<Arc<Document>> = Vec::with_capacity(matching.len());
        for object in matching {
            let facts = object.facts();
            let key = document_key(&facts)
                .filter(|_| reusable && (facts.is_secret() || object.text().is_none()));
            let known = key
                .as_ref()
                .and_then(|k| kept.get(k).cloned().or_else(|| documents.0.remove(k)));
            let document = match known {
                Some(document) => document,
                None => Arc::new(Document::of(object, &facts)?),
            };
            if let Some(key) = key {
                kept.insert(key, Arc::clone(&document));
            }
            made.push(document);
        }
        for document in &made {
            if let Some((key, data)) = &document.sealed {
                sealed.insert(key.clone(), data.clone());
            }
        }
        resources = Some(ByteString(join_collected_resources(
            made.iter().map(|d| d.text.as_bytes()),
        )));
    }
    documents.0 = kept;
    let mut spec = EventReportSpec {
        event_source_name: source.metadata.name.clone().unwrap_or_default(),
        matching_resources: matching.iter().map(|o| reference(&o.facts())).collect(),
        resources,
        ..Default::default()
    };
    name_cluster(&mut spec, cluster);
    Ok(Publication { spec, sealed })
}

/// Fills the cluster fields of `spec` (empty for a local report).
pub fn name_cluster(spec: &mut EventReportSpec, cluster: Option<&ClusterId>) {
    spec.cluster_namespace = cluster.map(|c| c.namespace.clone()).unwrap_or_default();
    spec.cluster_name = cluster.map(|c| c.name.clone()).unwrap_or_default();
    spec.cluster_type = cluster.map(|c| c.cluster_type).unwrap_or_default();
}

/// Why a report was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The API server refused the write or could not be reached.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// The report is larger than the API server stores: retrying cannot help until fewer
    /// objects match.
    #[error(
        "the EventReport of {matching} matching objects is {bytes} bytes, more than the API \
         server stores (etcd takes 1.5 MiB by default), so it still says what it said last; \
         match fewer objects, or set collectResources to false"
    )]
    TooLarge {
        /// Objects the report lists.
        matching: usize,
        /// Its size as JSON.
        bytes: usize,
    },
}

/// Whether the API server refused a write for its size: etcd's words through kube-apiserver
/// (a 500), or kube-apiserver's own limit on a request's body (a 413).
fn too_large(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status)
        if status.code == 413 || status.message.contains("request is too large"))
}

/// Writes (server-side apply) `publication`: its companion Secret first, so the report never
/// names data the manager cannot find, then the report. `previous` is what this process wrote
/// last (`None`: nothing yet); a companion no longer needed is deleted after the report.
/// Returns the `status.agentFailureMessage` the written report carries.
pub async fn write(
    destination: &Destination,
    publication: &Publication,
    previous: Option<&Written>,
) -> Result<Option<String>, WriteError> {
    let spec = &publication.spec;
    let name = destination.report_name(&spec.event_source_name);
    let namespace = destination.namespace();
    let client = destination.client();
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
        let mut labels = destination.labels(&spec.event_source_name);
        labels.insert(secret_data::SECRET_DATA_LABEL.to_owned(), "ok".to_owned());
        let companion = Secret {
            metadata: ObjectMeta {
                name: Some(secret_data::companion_name(&name)),
                namespace: Some(namespace.to_owned()),
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
        let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
        api.patch(
            &secret_data::companion_name(&name),
            &params,
            &Patch::Apply(&body),
        )
        .await?;
    }
    let body = ReportBody {
        api_version: "lib.projectsveltos.io/v1beta1",
        kind: "EventReport",
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.to_owned()),
            labels: Some(destination.labels(&spec.event_source_name)),
            annotations,
            ..Default::default()
        },
        spec,
    };
    let url = <EventReport as kube::Resource>::url_path(&(), Some(namespace));
    let request = kube::core::Request::new(url)
        .patch(&name, &params, &Patch::Apply(&body))
        .map_err(kube::Error::BuildRequest)?;
    let written = match client.request::<Answer>(request).await {
        Ok(written) => written,
        Err(error) if too_large(&error) => {
            return Err(WriteError::TooLarge {
                matching: spec.matching_resources.len(),
                bytes: serde_json::to_vec(&body).map_or(0, |b| b.len()),
            });
        }
        Err(error) => return Err(error.into()),
    };
    if digest.is_none() && previous.is_none_or(|p| p.companion) {
        delete_companion(client, namespace, &name).await?;
    }
    if let Destination::Local { client } = destination {
        // A changed local report waits for the hub's relay, as Sveltos' agent says.
        set_phase(client, &name, ReportPhase::WaitingForDelivery).await?;
    }
    Ok(written.status.and_then(|s| s.agent_failure_message))
}

/// The EventReport the agent applies, borrowing the spec: a report of 1,000 collected
/// objects is a megabyte, which a copy, or a `serde_json::Value` on the way to JSON, would
/// move twice more per event.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportBody<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    spec: &'a EventReportSpec,
}

/// What the agent reads of the report the API server answers a write with: the rest (the
/// whole spec, collected objects included) is skipped, not decoded.
#[derive(serde::Deserialize)]
struct Answer {
    status: Option<AnswerStatus>,
}

/// See [`Answer`].
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerStatus {
    agent_failure_message: Option<String>,
}

/// Sets the delivery phase of local report `name` (in `projectsveltos`).
pub async fn set_phase(client: &Client, name: &str, phase: ReportPhase) -> kube::Result<()> {
    let api: Api<EventReport> = Api::namespaced(client.clone(), SVELTOS_NAMESPACE);
    let patch = serde_json::json!({ "status": { "phase": phase } });
    match api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Records in the report's status why `source` could not be evaluated for `cluster` (`None`
/// clears it). A report not written yet is left alone: the Kubernetes Event says it instead.
pub async fn record_failure(
    destination: &Destination,
    source: &str,
    failure: Option<&str>,
) -> kube::Result<()> {
    let api: Api<EventReport> =
        Api::namespaced(destination.client().clone(), destination.namespace());
    let name = destination.report_name(source);
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

/// Deletes the report of `source` and its companion Secret (absent is fine).
pub async fn delete(destination: &Destination, source: &str) -> kube::Result<()> {
    let (client, namespace) = (destination.client(), destination.namespace());
    let api: Api<EventReport> = Api::namespaced(client.clone(), namespace);
    let name = destination.report_name(source);
    match api.delete(&name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(error) => return Err(error),
    }
    delete_companion(client, namespace, &name).await
}

/// Deletes every report the destination holds for which `keep(source)` is false.
pub async fn delete_unkept(
    destination: &Destination,
    keep: impl Fn(&str) -> bool,
) -> kube::Result<()> {
    let api: Api<EventReport> =
        Api::namespaced(destination.client().clone(), destination.namespace());
    let mut selector = EVENT_SOURCE_NAME_LABEL.to_owned();
    if let Some(cluster) = destination.cluster() {
        selector = format!(
            "{selector},{EVENT_REPORT_CLUSTER_NAME_LABEL}={},{EVENT_REPORT_CLUSTER_TYPE_LABEL}={}",
            cluster.name,
            cluster.cluster_type.lowercase()
        );
    }
    for report in api.list(&ListParams::default().labels(&selector)).await? {
        let source = report.spec.event_source_name.clone();
        if !keep(&source) {
            delete(destination, &source).await?;
        }
    }
    Ok(())
}

/// Deletes every hub-written report, in any namespace, for which `keep(cluster, source)` is false.
pub async fn delete_stale(
    mgmt: &Client,
    keep: impl Fn(&ClusterId, &str) -> bool,
) -> kube::Result<()> {
    let api: Api<EventReport> = Api::all(mgmt.clone());
    let params = ListParams::default().labels(EVENT_REPORT_CLUSTER_TYPE_LABEL);
    for report in api.list(&params).await? {
        let cluster = ClusterId {
            namespace: report.metadata.namespace.clone().unwrap_or_default(),
            name: report.spec.cluster_name.clone(),
            cluster_type: report.spec.cluster_type,
        };
        let source = &report.spec.event_source_name;
        if !keep(&cluster, source) {
            tracing::info!(%cluster, %source, "deleting a stale EventReport");
            let destination = Destination::Hub {
                mgmt: mgmt.clone(),
                cluster,
            };
            delete(&destination, source).await?;
        }
    }
    Ok(())
}

/// Deletes every report of `cluster` (the cluster went away).
pub async fn delete_all(mgmt: &Client, cluster: &ClusterId) -> kube::Result<()> {
    let destination = Destination::Hub {
        mgmt: mgmt.clone(),
        cluster: cluster.clone(),
    };
    delete_unkept(&destination, |_| false).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::Kept;
    use serde_json::json;

    fn collecting() -> EventSource {
        serde_json::from_value(json!({
            "metadata": {"name": "es"},
            "spec": {"collectResources": true,
                     "resourceSelectors": [{"group": "", "version": "v1", "kind": "Secret"}]}
        }))
        .unwrap_or_default()
    }

    fn object(kind: &str, name: &str, version: &str, data: &str) -> Value {
        json!({"apiVersion": "v1", "kind": kind,
               "metadata": {"name": name, "namespace": "ns", "uid": name, "resourceVersion": version},
               "data": {"k": data}})
    }

    /// [`publication_reusing`], which cannot fail for objects held as `Value`.
    fn reusing(
        source: &EventSource,
        objects: &[impl Object],
        documents: &mut Documents,
    ) -> Publication {
        publication_reusing(None, source, objects, documents).unwrap()
    }

    /// [`reusing`] with no documents to reuse: a fresh encoding.
    fn fresh(source: &EventSource, objects: &[impl Object]) -> Publication {
        reusing(source, objects, &mut Documents::default())
    }

    /// A ConfigMap and a Secret, both collected.
    fn map_and_secret() -> Vec<Value> {
        vec![
            object("ConfigMap", "a", "1", "x"),
            object("Secret", "b", "1", "eQ=="),
        ]
    }

    #[test]
    fn reused_documents_publish_what_a_fresh_encoding_would() {
        let source = collecting();
        let mut documents = Documents::default();
        let mut objects = map_and_secret();
        for step in 0..3 {
            let reused = reusing(&source, &objects, &mut documents);
            assert_eq!(reused, fresh(&source, &objects), "step {step}");
            // Both collected, and the Secret's data sealed away.
            assert!(reused.spec.resources.is_some() && reused.sealed.len() == 1);
            assert_eq!(documents.0.len(), objects.len());
            // A changed object comes with a new resourceVersion; a gone one leaves the cache.
            objects[0] = object(
                "ConfigMap",
                "a",
                &format!("{}", step + 2),
                &format!("x{step}"),
            );
        }
        objects.pop();
        reusing(&source, &objects, &mut documents);
        assert_eq!(documents.0.len(), 1);
    }

    #[test]
    fn kept_objects_publish_what_values_do_and_only_secrets_are_remembered() {
        let source = collecting();
        let values = map_and_secret();
        let kept: Vec<Kept> = values.iter().map(Kept::new).collect();
        let mut documents = Documents::default();
        for step in 0..2 {
            let published = reusing(&source, &kept, &mut documents);
            assert_eq!(published, fresh(&source, &values), "step {step}");
            // The ConfigMap's document is its kept text; only the Secret's was encoded.
            assert_eq!(documents.0.len(), 1);
        }
    }

    #[test]
    fn what_is_remembered_of_a_publication_tells_every_change() {
        let source = collecting();
        let publish = |objects: &[Value]| fresh(&source, objects);
        let both = map_and_secret();
        let first = publish(&both).written();
        assert_eq!(first, publish(&both).written());
        assert!(first.companion);
        // Another document, other sealed data, fewer objects: each is another publication.
        let other_map = [both[0].clone(), object("Secret", "b", "1", "eg==")];
        for objects in [
            &both[..1],
            &other_map[..],
            &[object("ConfigMap", "a", "2", "x")][..],
        ] {
            assert_ne!(publish(objects).written(), first, "{objects:?}");
        }
        assert!(!publish(&both[..1]).written().companion);
        // The same references over other collected bytes.
        let changed = [object("ConfigMap", "a", "1", "y")];
        assert_ne!(publish(&changed).written(), publish(&both[..1]).written());
        assert_eq!(
            publish(&changed).spec.matching_resources,
            publish(&both[..1]).spec.matching_resources
        );
    }

    #[test]
    fn one_object_in_two_api_versions_is_two_documents() {
        let source = collecting();
        let mut documents = Documents::default();
        let mut v2 = object("ConfigMap", "a", "1", "x");
        v2["apiVersion"] = json!("example.io/v2");
        let objects = vec![object("ConfigMap", "a", "1", "x"), v2];
        for step in 0..2 {
            let reused = reusing(&source, &objects, &mut documents);
            assert_eq!(reused, fresh(&source, &objects), "step {step}");
        }
    }

    #[test]
    fn what_an_aggregated_selection_returns_is_encoded_every_time() {
        let mut source = collecting();
        source.spec.aggregated_selection = "function evaluate() end".to_owned();
        let mut documents = Documents::default();
        let objects = vec![object("ConfigMap", "a", "1", "x")];
        reusing(&source, &objects, &mut documents);
        assert!(documents.0.is_empty());
    }
}
