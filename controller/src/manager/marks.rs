//! What each watch event asks of the manager: which triggers to plan again. Pure functions
//! of the event and what the caches say; `start_watches` marks the answer in the queue.

use std::collections::{BTreeMap, HashMap};

use api::labels::{AGENT_SOURCES_LABEL, EVENT_SOURCE_NAME_LABEL, EVENT_TRIGGER_NAME_LABEL};
use api::secret_data::SECRET_DATA_LABEL;
use api::v1beta1::{EventReport, EventTrigger};
use kube::api::ObjectMeta;

/// The triggers an event asks to plan again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// None: an echo of the manager's own write, or an object nothing reads.
    Nothing,
    /// The trigger that generated the object.
    Trigger(String),
    /// The triggers that read EventSource `.0` (by name, or through a templated name).
    Source(String),
    /// Every trigger: an object any of them may reference (templateResourceRefs, policyRefs)
    /// changed.
    Referenced,
    /// Every trigger: the clusters or the cluster sets changed.
    Every,
}

/// The trigger `labels` name as the generator of an object, if any.
pub fn owner(labels: Option<&BTreeMap<String, String>>) -> Work {
    match labels.and_then(|l| l.get(EVENT_TRIGGER_NAME_LABEL)) {
        Some(trigger) => Work::Trigger(trigger.clone()),
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
            Work::Source(report_source(report).to_owned())
        } else {
            Work::Nothing
        }
    }
}

/// The work of a ConfigMap or Secret that is not a report's companion: a generated one
/// belongs to its trigger, an agent source list to none, any other may be referenced by any
/// trigger. `echo`: the event is the echo of the manager's own write.
pub fn config_object(meta: &ObjectMeta, echo: bool) -> Work {
    let labels = meta.labels.as_ref();
    if echo {
        Work::Nothing
    } else if labels.is_some_and(|l| l.contains_key(EVENT_TRIGGER_NAME_LABEL)) {
        owner(labels)
    } else if labels.is_some_and(|l| l.contains_key(AGENT_SOURCES_LABEL)) {
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
pub fn profile(meta: &ObjectMeta, echo: bool) -> Work {
    if echo {
        Work::Nothing
    } else {
        owner(meta.labels.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(seen.work(&labelled, true), Work::Source("https".into()));
        // The same generation again: a status write.
        assert_eq!(seen.work(&labelled, true), Work::Nothing);
        assert_eq!(
            seen.work(&report(2, json!({EVENT_SOURCE_NAME_LABEL: "https"})), true),
            Work::Source("https".into())
        );
        assert_eq!(seen.work(&labelled, false), Work::Source("https".into()));
        // Without the label, the spec names the source.
        assert_eq!(
            seen.work(&report(1, json!({})), true),
            Work::Source("from-spec".into())
        );
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
