//! The data templates see when an EventTrigger instantiates add-ons: `.Cluster`, and either
//! `.MatchingResource`/`.Resource`/`.CloudEvent` (one object per profile, `oneForEvent`) or
//! `.MatchingResources`/`.Resources`/`.CloudEvents` (one profile for all).
//!
//! Object references keep Go's capitalised struct field names (`.MatchingResource.Name`), and
//! numbers inside collected objects stay integers when the JSON has them as integers (upstream
//! turns them into floats, which breaks `eq .port 443`; see docs/ARCHITECTURE.md).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use api::secret_data;
use api::v1beta1::{EventReport, collected_resource_ranges};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ObjectReference;
use serde_json::{Map, Value, json};

use crate::memo::{Digest, Memo, digest, digest_value};
use crate::{Error, Result};

/// One event as a `oneForEvent` profile sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct SingleEvent<'a> {
    /// Reference to the matching resource.
    pub matching_resource: &'a ObjectReference,
    /// The collected object, when the EventSource collects resources.
    pub resource: Option<&'a Collected>,
}

impl SingleEvent<'_> {
    /// A digest of the event: its collected object's document, else its reference.
    pub fn digest(&self) -> Digest {
        match self.resource {
            Some(collected) => collected.digest,
            None => digest(&format!("{:?}", self.matching_resource)),
        }
    }
}

/// The digest of a reference's apiVersion, kind, namespace and name: the same for a report's
/// matching resource and for the object it collected.
pub fn reference_digest(reference: &ObjectReference) -> Digest {
    let ObjectReference {
        api_version,
        kind,
        namespace,
        name,
        ..
    } = reference;
    digest(&(api_version, kind, namespace, name))
}

/// A collected object and the digest of the document it was decoded from.
#[derive(Debug, Clone)]
pub struct Collected {
    /// The object as JSON, checked when decoded. It is parsed again only where a template
    /// needs it: parsed, an object weighs several times its text, and a fleet's reports
    /// collect a great many.
    document: Text,
    /// Its reference (apiVersion, kind, namespace, name).
    reference: Reference,
    /// Digest of its content.
    pub digest: Digest,
}

/// A collected object's reference: the one its report lists at the object's own position
/// (the agent lists the matching resources in the order it collects them), else its own.
/// Shared with the report, it costs nothing; its own costs a quarter of a kilobyte, for each
/// of a fleet's hundreds of thousands of events.
#[derive(Debug, Clone)]
enum Reference {
    /// The report's matching resource at this index.
    Listed(usize),
    /// Its own.
    Own(Arc<ObjectReference>),
}

/// The reference of an object whose report does not list it where it should (never made).
static NO_REFERENCE: ObjectReference = ObjectReference {
    api_version: None,
    field_path: None,
    kind: None,
    name: None,
    namespace: None,
    resource_version: None,
    uid: None,
};

impl PartialEq for Collected {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest
            && self.document == other.document
            && self.reference() == other.reference()
    }
}

impl Collected {
    /// An object collected outside a report (tests, offline rendering).
    pub fn new(object: Value) -> Self {
        Collected {
            digest: digest_value(&object),
            reference: Reference::Own(Arc::new(reference_of(&object))),
            document: Text::Own(Arc::from(object.to_string())),
        }
    }

    /// Its reference (apiVersion, kind, namespace, name).
    pub fn reference(&self) -> &ObjectReference {
        match (&self.reference, &self.document) {
            (Reference::Own(reference), _) => reference,
            (Reference::Listed(at), Text::InReport(report, _)) => report
                .spec
                .matching_resources
                .get(*at)
                .unwrap_or(&NO_REFERENCE),
            (Reference::Listed(_), Text::Own(_)) => &NO_REFERENCE,
        }
    }

    /// The object.
    pub fn object(&self) -> Value {
        // Parsed once already when decoded, so this parse does not fail.
        serde_json::from_slice(self.document.bytes()).unwrap_or(Value::Null)
    }
}

/// A collected object's JSON.
#[derive(Debug, Clone)]
enum Text {
    /// Where it lies in the collected bytes of its report, shared with the report the caches
    /// hold instead of copied (a fleet's reports collect a great many objects).
    InReport(Arc<EventReport>, Range<usize>),
    /// Its own: a Secret with its data put back, or an object collected outside a report.
    Own(Arc<str>),
}

impl Text {
    fn bytes(&self) -> &[u8] {
        match self {
            Text::InReport(report, range) => report
                .spec
                .resources
                .as_ref()
                .and_then(|bytes| bytes.0.get(range.clone()))
                .unwrap_or_default(),
            Text::Own(text) => text.as_bytes(),
        }
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

/// Collected objects decoded by earlier plans (checked JSON), by digest of their document: the
/// text of those that are not the document itself (Secrets with their data put back), and
/// the [`reference_digest`] of their references (a report lists the reference itself).
pub type DocumentMemo = Memo<(Option<Arc<str>>, Digest)>;

/// Whether `listed` is the reference [`reference_of`] makes, of digest `digest`.
fn lists(listed: &ObjectReference, digest: Digest) -> bool {
    let ObjectReference {
        field_path,
        resource_version,
        uid,
        ..
    } = listed;
    field_path.is_none()
        && resource_version.is_none()
        && uid.is_none()
        && reference_digest(listed) == digest
}

/// References of matching resources: read from the report decoded (which the caches hold
/// anyway: a fleet's reports list hundreds of thousands), or their own.
#[derive(Debug, Clone)]
pub enum References {
    /// The matching resources of this report.
    InReport(Arc<EventReport>),
    /// These.
    Own(Arc<[ObjectReference]>),
}

impl Default for References {
    fn default() -> Self {
        References::Own(Arc::new([]))
    }
}

impl std::ops::Deref for References {
    type Target = [ObjectReference];

    fn deref(&self) -> &[ObjectReference] {
        match self {
            References::InReport(report) => &report.spec.matching_resources,
            References::Own(references) => references,
        }
    }
}

impl PartialEq for References {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl FromIterator<ObjectReference> for References {
    fn from_iter<I: IntoIterator<Item = ObjectReference>>(references: I) -> Self {
        References::Own(references.into_iter().collect())
    }
}

/// The events of one report, decoded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportEvents {
    /// References of every matching resource, in report order.
    pub matching_resources: References,
    /// Collected objects, in report order (empty when not collected).
    pub resources: Arc<[Collected]>,
    /// CloudEvents carried by the report.
    pub cloud_events: Vec<Value>,
    /// When each resource event (by [`SingleEvent::digest`]) was first seen, where known
    /// (see [`ReportEvents::date`]).
    pub seen: Arc<HashMap<Digest, Instant>>,
}

impl ReportEvents {
    /// Decodes a report's references, collected objects and CloudEvents.
    pub fn from_report(report: EventReport) -> Result<Self> {
        Self::decode(&Arc::new(report), &mut DocumentMemo::default())
    }

    /// [`ReportEvents::from_report`], taking collected objects whose document is unchanged
    /// from `documents` instead of decoding them again.
    pub fn decode(report: &Arc<EventReport>, documents: &mut DocumentMemo) -> Result<Self> {
        Self::decode_sealed(report, &BTreeMap::new(), documents)
    }

    /// Keeps this decode's collected objects in `documents` for the plan under way, as a
    /// decode would have: taken from a report decoded earlier, they are still there to reuse
    /// when the report changes.
    pub fn keep_documents(&self, documents: &mut DocumentMemo) {
        for collected in self.resources.iter() {
            let own = match &collected.document {
                Text::Own(text) => Some(Arc::clone(text)),
                Text::InReport(..) => None,
            };
            let reference = reference_digest(collected.reference());
            documents.keep(collected.digest, (own, reference));
        }
    }

    /// [`ReportEvents::decode`], putting back into collected Secrets the data the agent moved
    /// to the report's companion Secret (`sealed`: its data, by document key).
    pub fn decode_sealed(
        report: &Arc<EventReport>,
        sealed: &BTreeMap<String, ByteString>,
        documents: &mut DocumentMemo,
    ) -> Result<Self> {
        let name = report.metadata.name.clone().unwrap_or_default();
        let decode = |bytes: &[u8], what: &str| {
            serde_json::from_slice::<Value>(bytes).map_err(|source| Error::Report {
                report: name.clone(),
                reason: format!("{what} is not valid JSON: {source}"),
            })
        };
        let listed = &report.spec.matching_resources;
        let resources = match &report.spec.resources {
            Some(bytes) => collected_resource_ranges(&bytes.0)
                .into_iter()
                .enumerate()
                .map(|(at, range)| {
                    let document = &bytes.0[range.clone()];
                    let removed = if sealed.is_empty() {
                        None
                    } else {
                        sealed.get(&secret_data::document_key(document))
                    };
                    let key = match removed {
                        None => digest(document),
                        Some(removed) => digest(&(document, &removed.0[..])),
                    };
                    let (own, known) = documents.get_or_try(key, || {
                        let mut object = decode(document, "a collected resource")?;
                        let own = match removed {
                            Some(removed) => {
                                let removed =
                                    decode(&removed.0, "the secret data of a collected Secret")?;
                                secret_data::unseal(&mut object, &removed);
                                Some(Arc::from(object.to_string()))
                            }
                            None => None,
                        };
                        Ok((own, reference_digest(&reference_of(&object))))
                    })?;
                    let reference = match listed.get(at) {
                        Some(listed) if lists(listed, known) => match own {
                            None => Reference::Listed(at),
                            // Its text is its own (a Secret's data put back): so is this.
                            Some(_) => Reference::Own(Arc::new(listed.clone())),
                        },
                        // Not listed where the agent puts it: read from the document.
                        _ => {
                            let object = decode(document, "a collected resource")?;
                            Reference::Own(Arc::new(reference_of(&object)))
                        }
                    };
                    Ok(Collected {
                        document: match own {
                            Some(text) => Text::Own(text),
                            None => Text::InReport(Arc::clone(report), range),
                        },
                        reference,
                        digest: key,
                    })
                })
                .collect::<Result<Vec<_>>>()?,
            None => Vec::new(),
        };
        let cloud_events = report
            .spec
            .cloud_events
            .iter()
            .map(|event| decode(&event.0, "a CloudEvent"))
            .collect::<Result<Vec<_>>>()?;
        Ok(ReportEvents {
            matching_resources: References::InReport(Arc::clone(report)),
            resources: resources.into(),
            cloud_events,
            seen: Arc::default(),
        })
    }

    /// These events read from `report` instead of the report they were decoded from, when
    /// `report` holds the same ones (a newer version with the same spec and companion
    /// annotation: the write of its status); `None` otherwise. The older version can then go:
    /// kept for its events, it would double a fleet's reports once each got its status.
    pub fn rebased(&self, report: &Arc<EventReport>) -> Option<ReportEvents> {
        let References::InReport(decoded) = &self.matching_resources else {
            return None;
        };
        fn companion(report: &EventReport) -> Option<&String> {
            let annotations = report.metadata.annotations.as_ref()?;
            annotations.get(secret_data::SECRET_DATA_ANNOTATION)
        }
        if decoded.spec != report.spec || companion(decoded) != companion(report) {
            return None;
        }
        let resources = self.resources.iter().map(|collected| Collected {
            document: match &collected.document {
                Text::InReport(_, range) => Text::InReport(Arc::clone(report), range.clone()),
                own => own.clone(),
            },
            ..collected.clone()
        });
        Some(ReportEvents {
            matching_resources: References::InReport(Arc::clone(report)),
            resources: resources.collect(),
            cloud_events: self.cloud_events.clone(),
            seen: Arc::clone(&self.seen),
        })
    }

    /// Dates each resource event. After an `earlier` decode of the same report, an event it
    /// dated keeps its time and a new one (a new object, or a new version of one) gets `at`,
    /// the report's last change. A first decode dates each object as `listed` says it was
    /// first listed (by [`reference_digest`]), else `at`.
    pub fn date(
        &mut self,
        earlier: Option<&HashMap<Digest, Instant>>,
        listed: &HashMap<Digest, Instant>,
        at: Instant,
    ) {
        let seen = self
            .singles()
            .iter()
            .map(|event| {
                let digest = event.digest();
                let known = match earlier {
                    Some(earlier) => earlier.get(&digest),
                    None => listed.get(&reference_digest(event.matching_resource)),
                };
                (digest, known.copied().unwrap_or(at))
            })
            .collect();
        self.seen = Arc::new(seen);
    }

    /// When the event of the resource named `name` was first seen, if dated.
    pub fn first_seen(&self, name: &str) -> Option<Instant> {
        let singles = self.singles();
        let event = singles
            .iter()
            .find(|e| e.matching_resource.name.as_deref() == Some(name))?;
        self.seen.get(&event.digest()).copied()
    }

    /// True when the report carries no match and no CloudEvent.
    pub fn is_empty(&self) -> bool {
        self.matching_resources.is_empty()
            && self.resources.is_empty()
            && self.cloud_events.is_empty()
    }

    /// One entry per resource event: the collected objects when there are any (each matched
    /// to its reference), else the references alone.
    pub fn singles(&self) -> Vec<SingleEvent<'_>> {
        if self.resources.is_empty() {
            return self
                .matching_resources
                .iter()
                .map(|r| SingleEvent {
                    matching_resource: r,
                    resource: None,
                })
                .collect();
        }
        self.resources
            .iter()
            .map(|collected| SingleEvent {
                matching_resource: collected.reference(),
                resource: Some(collected),
            })
            .collect()
    }
}

/// The reference (apiVersion, kind, namespace, name) of a JSON object: what upstream's
/// manager makes a collected object's `.MatchingResource` (no uid or resourceVersion), and
/// what the agent lists among the report's matching resources.
pub fn reference_of(object: &Value) -> ObjectReference {
    let text = |path: &[&str]| api::fields::text(object, path).map(str::to_string);
    ObjectReference {
        api_version: text(&["apiVersion"]),
        kind: text(&["kind"]),
        namespace: text(&["metadata", "namespace"]),
        name: text(&["metadata", "name"]),
        ..ObjectReference::default()
    }
}

/// An ObjectReference with Go's field names, every field present (zero value "").
pub fn go_object_reference(reference: &ObjectReference) -> Value {
    let field = |v: &Option<String>| Value::String(v.clone().unwrap_or_default());
    json!({
        "Kind": field(&reference.kind),
        "Namespace": field(&reference.namespace),
        "Name": field(&reference.name),
        "UID": field(&reference.uid),
        "APIVersion": field(&reference.api_version),
        "ResourceVersion": field(&reference.resource_version),
        "FieldPath": field(&reference.field_path),
    })
}

/// Template data for one object of a `oneForEvent` trigger.
pub fn single_event_data(cluster: &Value, event: &SingleEvent<'_>) -> Value {
    let mut data = Map::new();
    data.insert("Cluster".into(), cluster.clone());
    data.insert(
        "MatchingResource".into(),
        go_object_reference(event.matching_resource),
    );
    data.insert(
        "Resource".into(),
        event.resource.map_or(Value::Null, Collected::object),
    );
    data.insert("CloudEvent".into(), Value::Null);
    Value::Object(data)
}

/// Template data for one CloudEvent of a `oneForEvent` trigger.
pub fn cloud_event_data(cluster: &Value, cloud_event: &Value) -> Value {
    json!({
        "Cluster": cluster,
        "MatchingResource": go_object_reference(&ObjectReference::default()),
        "Resource": Value::Null,
        "CloudEvent": cloud_event,
    })
}

/// Template data for the single profile of a trigger without `oneForEvent`.
pub fn all_events_data(cluster: &Value, events: &ReportEvents) -> Value {
    json!({
        "Cluster": cluster,
        "MatchingResources": events.matching_resources.iter().map(go_object_reference).collect::<Vec<_>>(),
        "Resources": events.resources.iter().map(Collected::object).collect::<Vec<_>>(),
        "CloudEvents": events.cloud_events,
    })
}

/// Template data for fields rendered with cluster data only (`eventSourceName`, generator
/// and reference names before any event is known).
pub fn cluster_only_data(cluster: &Value) -> Value {
    let text = |pointer: &str| {
        cluster
            .pointer(pointer)
            .cloned()
            .unwrap_or(Value::String(String::new()))
    };
    json!({
        "Cluster": cluster,
        "ClusterNamespace": text("/metadata/namespace"),
        "ClusterName": text("/metadata/name"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::v1beta1::{EventReportSpec, join_collected_resources};
    use k8s_openapi::ByteString;

    fn service(name: &str, port: i64) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "spec": {"ports": [{"port": port}]}
        })
    }

    fn report(objects: &[Value]) -> EventReport {
        let documents: Vec<Vec<u8>> = objects
            .iter()
            .map(|o| serde_json::to_vec(o).unwrap())
            .collect();
        EventReport::new(
            "sveltos--s--c1",
            EventReportSpec {
                matching_resources: objects.iter().map(reference_of).collect(),
                resources: Some(ByteString(join_collected_resources(
                    documents.iter().map(Vec::as_slice),
                ))),
                ..Default::default()
            },
        )
    }

    #[test]
    fn a_collected_object_reads_its_reference_from_the_report_where_it_lists_it() {
        let objects = [service("a", 443), service("b", 80)];
        let mut documents = DocumentMemo::default();
        let listed = Arc::new(report(&objects));
        let events = ReportEvents::decode(&listed, &mut documents).unwrap();
        for (at, collected) in events.resources.iter().enumerate() {
            let shared = &listed.spec.matching_resources[at];
            assert!(std::ptr::eq(collected.reference(), shared), "{at}");
        }
        // Listed in another order (decoded again from the memo), or not at all: its own.
        let mut swapped = report(&objects);
        swapped.spec.matching_resources.reverse();
        let mut unlisted = report(&objects);
        unlisted.spec.matching_resources.clear();
        for other in [swapped, unlisted] {
            let events = ReportEvents::decode(&Arc::new(other), &mut documents).unwrap();
            let names: Vec<_> = events
                .singles()
                .iter()
                .map(|e| e.matching_resource.name.clone())
                .collect();
            assert_eq!(names, [Some("a".to_owned()), Some("b".to_owned())]);
        }
    }

    #[test]
    fn collected_objects_decode_with_integer_ports() {
        let events =
            ReportEvents::from_report(report(&[service("a", 443), service("b", 80)])).unwrap();
        assert_eq!(events.resources.len(), 2);
        assert!(events.resources[0].object()["spec"]["ports"][0]["port"].is_i64());
        let singles = events.singles();
        assert_eq!(singles[1].matching_resource.name.as_deref(), Some("b"));
        // As upstream's manager makes it: no uid or resourceVersion, though the object has one.
        assert_eq!(singles[1].matching_resource.uid, None);
        assert_eq!(
            singles[1].matching_resource.kind.as_deref(),
            Some("Service")
        );
        assert_eq!(
            singles[1].resource.unwrap().object()["metadata"]["name"],
            "b"
        );
    }

    #[test]
    fn events_keep_the_time_first_seen_and_new_or_changed_objects_get_the_reports() {
        let start = Instant::now();
        let t = |seconds| start + std::time::Duration::from_secs(seconds);
        let when = |events: &ReportEvents, name: &str| events.first_seen(name).unwrap();
        // A first decode: a was listed since t(1); b only in the report's last change, t(2).
        let listed = HashMap::from([(reference_digest(&reference_of(&service("a", 80))), t(1))]);
        let mut first =
            ReportEvents::from_report(report(&[service("a", 80), service("b", 80)])).unwrap();
        first.date(None, &listed, t(2));
        assert_eq!((when(&first, "a"), when(&first, "b")), (t(1), t(2)));
        // The next decode: c is new and a changed (a new version is a new event); b keeps
        // its time, and what was listed counts no more.
        let mut second = ReportEvents::from_report(report(&[
            service("a", 443),
            service("b", 80),
            service("c", 80),
        ]))
        .unwrap();
        second.date(Some(&first.seen), &listed, t(3));
        let times = ["a", "b", "c"].map(|name| when(&second, name));
        assert_eq!(times, [t(3), t(2), t(3)]);
    }

    #[test]
    fn collected_objects_are_read_from_their_current_report_not_copied() {
        let mut documents = DocumentMemo::default();
        let first = Arc::new(report(&[service("a", 80)]));
        let decoded = ReportEvents::decode(&first, &mut documents).unwrap();
        assert_eq!(
            Arc::strong_count(&first),
            3,
            "the object's text and the references are the report's"
        );
        documents.finish();
        // The report changes: a is the same document, found in the memo, and read from the
        // new report, so the old one goes once its own decode does.
        let second = Arc::new(report(&[service("a", 80), service("b", 80)]));
        let redecoded = ReportEvents::decode(&second, &mut documents).unwrap();
        let old = Arc::downgrade(&first);
        drop((first, decoded));
        assert!(old.upgrade().is_none(), "nothing holds the old report");
        let names = redecoded
            .resources
            .iter()
            .map(|c| c.object()["metadata"]["name"].clone());
        assert_eq!(names.collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(redecoded.resources[0].object(), service("a", 80));
    }

    #[test]
    fn references_alone_when_not_collected() {
        let mut r = report(&[service("a", 1)]);
        r.spec.resources = None;
        let events = ReportEvents::from_report(r).unwrap();
        let singles = events.singles();
        assert_eq!(singles.len(), 1);
        assert!(singles[0].resource.is_none());
        let data = single_event_data(&json!({"kind": "SveltosCluster"}), &singles[0]);
        assert_eq!(data["MatchingResource"]["Name"], "a");
        assert_eq!(data["MatchingResource"]["FieldPath"], "");
        assert!(data["Resource"].is_null());
    }

    #[test]
    fn corrupt_collected_resource_is_an_error_naming_the_report() {
        let mut r = report(&[]);
        r.spec.resources = Some(ByteString(b"{not json\n---".to_vec()));
        let error = ReportEvents::from_report(r).unwrap_err().to_string();
        assert!(error.contains("sveltos--s--c1"), "{error}");
    }

    #[test]
    fn plural_data_has_go_names() {
        let events = ReportEvents::from_report(report(&[service("a", 443)])).unwrap();
        let data = all_events_data(&json!({}), &events);
        assert_eq!(data["MatchingResources"][0]["Kind"], "Service");
        assert_eq!(data["Resources"][0]["metadata"]["name"], "a");
        assert!(
            data.get("Resource").is_none(),
            "singular names only with oneForEvent"
        );
    }
}
