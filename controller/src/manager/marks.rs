//! What each watch event asks of the manager: which triggers to plan again. Pure functions
//! of the event and what the caches say; `start_watches` marks the answer in the queue.

use std::collections::{BTreeSet, HashMap};

use api::labels::{AGENT_SOURCES_LABEL, EVENT_SOURCE_NAME_LABEL, EVENT_TRIGGER_NAME_LABEL};
use api::secret_data::SECRET_DATA_LABEL;
use api::v1beta1::{EventReport, EventTrigger};
use kube::api::ObjectMeta;

use crate::identity::ClusterRef;
use crate::kept::{Labelled, Meta};
use crate::memo::{Digest, digest};
use crate::queue;

/// What part of a trigger a pass plans again: the whole trigger, or its work in some source
/// clusters (whose reports changed) as its last whole pass found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Everything: the trigger, its clusters, sources or referenced objects changed.
    Whole,
    /// The trigger's work in these source clusters only, and its status if `status`.
    Clusters {
        /// Source clusters whose reports changed.
        clusters: BTreeSet<ClusterRef>,
        /// Whether what the status tells besides the clusters changed (an EventSource's
        /// readiness).
        status: bool,
    },
}

impl Part {
    /// The trigger's work in source `cluster`.
    pub fn cluster(cluster: ClusterRef) -> Self {
        Part::Clusters {
            clusters: BTreeSet::from([cluster]),
            status: false,
        }
    }

    /// The trigger's status only.
    pub fn status() -> Self {
        Part::Clusters {
            clusters: BTreeSet::new(),
            status: true,
        }
    }
}

impl queue::Part for Part {
    fn whole() -> Self {
        Part::Whole
    }

    fn join(&mut self, other: Self) {
        match (self, other) {
            (
                Part::Clusters { clusters, status },
                Part::Clusters {
                    clusters: more,
                    status: also,
                },
            ) => {
                clusters.extend(more);
                *status |= also;
            }
            (this, Part::Whole) => *this = Part::Whole,
            (Part::Whole, Part::Clusters { .. }) => {}
        }
    }
}

/// The triggers an event asks to plan again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// None: an echo of the manager's own write, or an object nothing reads.
    Nothing,
    /// The trigger that generated the object.
    Trigger(String),
    /// The triggers that read EventSource `.0` (by name, or through a templated name).
    Source(String),
    /// The status of the same triggers: EventSource `.0`'s status changed, which they tell
    /// but do not plan from.
    SourceStatus(String),
    /// The status of trigger `.0`: its status changed, by the manager or by someone else.
    TriggerStatus(String),
    /// The same triggers, in one source cluster only: its report of the source changed.
    Report {
        /// The EventSource the report answers.
        source: String,
        /// The report's cluster.
        cluster: ClusterRef,
    },
    /// Every trigger: an object any of them may reference (templateResourceRefs, policyRefs)
    /// changed.
    Referenced,
    /// Every trigger: the clusters or the cluster sets changed.
    Every,
    /// Every trigger, in one source cluster: its registration changed.
    Cluster(ClusterRef),
}

/// The trigger `labels` name as the generator of an object, if any.
pub fn owner(labels: impl Labelled) -> Work {
    match labels.label(EVENT_TRIGGER_NAME_LABEL) {
        Some(trigger) => Work::Trigger(trigger.to_owned()),
        None => Work::Nothing,
    }
}

/// The names of the `triggers` that read EventSource `source`: by name, or through a
/// templated `eventSourceName` (which may name any source).
pub fn triggers_of_source<'a>(
    triggers: impl IntoIterator<Item = &'a EventTrigger>,
    source: &str,
) -> Vec<String> {
    triggers
        .into_iter()
        .filter(|t| {
            let wanted = &t.spec.event_source_name;
            wanted == source || wanted.contains("{{")
        })
        .map(|t| t.metadata.name.clone().unwrap_or_default())
        .collect()
}

/// The EventSource a report answers: its label, else its spec.
pub fn report_source(report: &EventReport) -> &str {
    report
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(EVENT_SOURCE_NAME_LABEL))
        .map_or(report.spec.event_source_name.as_str(), String::as_str)
}

/// The generation of each EventReport last planned: a report's status (the agent's failure,
/// the manager's own conditions) plans nothing; its spec (a new generation) or its deletion
/// does.
#[derive(Debug, Default)]
pub struct ReportGenerations(HashMap<(String, String), Option<i64>>);

impl ReportGenerations {
    /// The work of an event of `report`, which the cache holds (`present`) or no longer does.
    pub fn work(&mut self, report: &EventReport, present: bool) -> Work {
        let key = (
            report.metadata.namespace.clone().unwrap_or_default(),
            report.metadata.name.clone().unwrap_or_default(),
        );
        let generation = report.metadata.generation;
        let seen = if present {
            self.0.insert(key, generation)
        } else {
            self.0.remove(&key);
            None
        };
        if !present || seen != Some(generation) {
            Work::Report {
                source: report_source(report).to_owned(),
                cluster: ClusterRef {
                    namespace: report.spec.cluster_namespace.clone(),
                    name: report.spec.cluster_name.clone(),
                    cluster_type: report.spec.cluster_type,
                },
            }
        } else {
            Work::Nothing
        }
    }
}

/// What planning last read of each object of one kind besides its spec and status: its
/// generation (which follows the spec), labels, annotations, and whether it is being deleted.
/// An event that changes none of these (a status write, most often the manager's own) plans
/// nothing but a look at the status.
#[derive(Debug, Default)]
pub struct Planned(HashMap<String, Digest>);

impl Planned {
    /// Whether an event of the object `meta` names (which the cache holds, `present`, or no
    /// longer does) changed what planning reads of it.
    pub fn changed(&mut self, meta: &ObjectMeta, present: bool) -> bool {
        let name = meta.name.clone().unwrap_or_default();
        if !present {
            self.0.remove(&name);
            return true;
        }
        let read = digest(&(
            meta.generation,
            &meta.labels,
            &meta.annotations,
            meta.deletion_timestamp.is_some(),
        ));
        self.0.insert(name, read) != Some(read)
    }
}

/// The work of a ConfigMap or Secret that is not a report's companion: a generated one
/// belongs to its trigger, an agent source list to none, any other may be referenced by any
/// trigger. `echo`: the event is the echo of the manager's own write.
pub fn config_object(meta: &impl Meta, echo: bool) -> Work {
    if echo {
        Work::Nothing
    } else if meta.label(EVENT_TRIGGER_NAME_LABEL).is_some() {
        owner(meta)
    } else if meta.label(AGENT_SOURCES_LABEL).is_some() {
        Work::Nothing
    } else {
        Work::Referenced
    }
}

/// The EventSource whose report a Secret completes (a report's companion holds the collected
/// Secrets' data and counts as part of the report), if it is one.
pub fn companion_source(meta: &ObjectMeta) -> Option<Work> {
    let labels = meta.labels.as_ref()?;
    labels.contains_key(SECRET_DATA_LABEL).then(|| {
        labels
            .get(EVENT_SOURCE_NAME_LABEL)
            .map_or(Work::Nothing, |source| Work::Source(source.clone()))
    })
}

/// The work of a generated ClusterProfile's event: its trigger's, unless it is the echo of
/// the manager's own write (or of the deployer's status write, which leaves the generation).
pub fn profile(meta: &impl Meta, echo: bool) -> Work {
    if echo { Work::Nothing } else { owner(meta) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn meta(labels: serde_json::Value) -> ObjectMeta {
        serde_json::from_value(json!({"name": "x", "namespace": "ns", "labels": labels})).unwrap()
    }

    fn trigger(name: &str, source: &str) -> EventTrigger {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"eventSourceName": source, "sourceClusterSelector": {}}
        }))
        .unwrap()
    }

    fn report(generation: i64, labels: serde_json::Value) -> EventReport {
        serde_json::from_value(json!({
            "metadata": {"name": "r", "namespace": "ns", "generation": generation,
                         "labels": labels},
            "spec": {"eventSourceName": "from-spec", "clusterNamespace": "ns",
                     "clusterName": "c", "clusterType": "Sveltos"}
        }))
        .unwrap()
    }

    #[test]
    fn a_source_concerns_the_triggers_naming_it_or_a_template() {
        let triggers = [
            trigger("by-name", "https"),
            trigger("other", "http"),
            trigger("templated", "{{ .Cluster.metadata.name }}-https"),
        ];
        assert_eq!(
            triggers_of_source(&triggers, "https"),
            ["by-name", "templated"]
        );
        assert_eq!(triggers_of_source(&triggers, "none"), ["templated"]);
    }

    #[test]
    fn a_report_plans_again_on_a_new_generation_or_deletion_only() {
        let mut seen = ReportGenerations::default();
        let labelled = report(1, json!({EVENT_SOURCE_NAME_LABEL: "https"}));
        let cluster = ClusterRef {
            namespace: "ns".into(),
            name: "c".into(),
            cluster_type: api::v1beta1::ClusterType::Sveltos,
        };
        let of = |source: &str| Work::Report {
            source: source.into(),
            cluster: cluster.clone(),
        };
        assert_eq!(seen.work(&labelled, true), of("https"));
        // The same generation again: a status write.
        assert_eq!(seen.work(&labelled, true), Work::Nothing);
        assert_eq!(
            seen.work(&report(2, json!({EVENT_SOURCE_NAME_LABEL: "https"})), true),
            of("https")
        );
        assert_eq!(seen.work(&labelled, false), of("https"));
        // Without the label, the spec names the source.
        assert_eq!(seen.work(&report(1, json!({})), true), of("from-spec"));
    }

    #[test]
    fn marks_of_a_trigger_join_and_the_whole_absorbs_its_parts() {
        use crate::queue::Part as _;
        let cluster = |name: &str| ClusterRef {
            namespace: "ns".into(),
            name: name.into(),
            cluster_type: api::v1beta1::ClusterType::Sveltos,
        };
        let mut part = Part::cluster(cluster("a"));
        part.join(Part::cluster(cluster("b")));
        let both = BTreeSet::from([cluster("a"), cluster("b")]);
        assert_eq!(
            part,
            Part::Clusters {
                clusters: both.clone(),
                status: false
            }
        );
        part.join(Part::status());
        assert_eq!(
            part,
            Part::Clusters {
                clusters: both,
                status: true
            }
        );
        part.join(Part::Whole);
        assert_eq!(part, Part::Whole);
        part.join(Part::cluster(cluster("c")));
        assert_eq!(part, Part::Whole, "a cluster's mark stays within the whole");
    }

    #[test]
    fn an_object_plans_again_unless_only_its_status_changed() {
        let object = |generation: i64, labels: serde_json::Value| -> ObjectMeta {
            serde_json::from_value(json!({"name": "s", "generation": generation, "labels": labels}))
                .unwrap()
        };
        let mut planned = Planned::default();
        let first = object(1, json!({}));
        assert!(planned.changed(&first, true));
        assert!(!planned.changed(&first, true), "a status write");
        // Relabelled (a tenant's), annotated, edited, being deleted, deleted: each plans.
        let tenant = object(1, json!({"projectsveltos.io/serviceaccount-name": "ops"}));
        assert!(planned.changed(&tenant, true));
        let mut annotated = tenant.clone();
        annotated.annotations = Some(BTreeMap::from([("a".into(), "b".into())]));
        assert!(planned.changed(&annotated, true));
        assert!(planned.changed(&object(2, json!({})), true));
        let mut deleting = object(2, json!({}));
        deleting.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        assert!(planned.changed(&deleting, true));
        assert!(planned.changed(&deleting, false));
    }

    #[test]
    fn config_objects_concern_their_trigger_no_one_or_everyone() {
        let generated = meta(json!({EVENT_TRIGGER_NAME_LABEL: "t"}));
        assert_eq!(config_object(&generated, false), Work::Trigger("t".into()));
        assert_eq!(config_object(&generated, true), Work::Nothing);
        let source_list = meta(json!({AGENT_SOURCES_LABEL: "ok"}));
        assert_eq!(config_object(&source_list, false), Work::Nothing);
        // The trigger's label wins, as it did before the mapping was a function.
        let both = meta(json!({AGENT_SOURCES_LABEL: "ok", EVENT_TRIGGER_NAME_LABEL: "t"}));
        assert_eq!(config_object(&both, false), Work::Trigger("t".into()));
        assert_eq!(config_object(&meta(json!({})), false), Work::Referenced);
        assert_eq!(config_object(&meta(json!({})), true), Work::Nothing);
    }

    #[test]
    fn a_companion_secret_concerns_its_source() {
        let companion = meta(json!({SECRET_DATA_LABEL: "ok", EVENT_SOURCE_NAME_LABEL: "s"}));
        assert_eq!(companion_source(&companion), Some(Work::Source("s".into())));
        let nameless = meta(json!({SECRET_DATA_LABEL: "ok"}));
        assert_eq!(companion_source(&nameless), Some(Work::Nothing));
        assert_eq!(companion_source(&meta(json!({"app": "x"}))), None);
    }

    #[test]
    fn a_profile_concerns_its_trigger_unless_it_is_an_echo() {
        let generated = meta(json!({EVENT_TRIGGER_NAME_LABEL: "t"}));
        assert_eq!(profile(&generated, false), Work::Trigger("t".into()));
        assert_eq!(profile(&generated, true), Work::Nothing);
        assert_eq!(profile(&meta(json!({})), false), Work::Nothing);
    }
}
