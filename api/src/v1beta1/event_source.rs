//! EventSource: what an event is (lib.projectsveltos.io/v1beta1, cluster-scoped).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which resources make an event, and whether whole objects travel in the EventReport.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "lib.projectsveltos.io",
    version = "v1beta1",
    kind = "EventSource",
    plural = "eventsources",
    status = "EventSourceStatus",
    category = "sveltos",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct EventSourceSpec {
    /// Resources to consider; the kept objects of all selectors are concatenated in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_selectors: Vec<ResourceSelector>,
    /// Lua run once over all selected objects; its returned `resources` become the matches.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub aggregated_selection: String,
    /// Ship the matching objects themselves in the EventReport (not only references).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub collect_resources: bool,
    /// CloudEvents (NATS/JetStream) that count as events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messaging_match_criteria: Vec<MessagingMatchCriteria>,
}

/// Whether the EventSource can be evaluated: `Ready`, in words (an extension of this project;
/// the manager writes it).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventSourceStatus {
    /// `Ready`: its scripts compile and no managed cluster fails to evaluate it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<crate::condition::Condition>,
}

/// Selects objects by group/version/kind, namespace, name, labels and an optional Lua verdict.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSelector {
    /// API group; "" is the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    #[schemars(length(min = 1))]
    pub kind: String,
    /// Label filters, ANDed with each other and with `selector`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub label_filters: Vec<LabelFilter>,
    /// A standard label selector, ANDed with `labelFilters`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Only objects in this namespace; "" means every namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Only the object with this name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Lua defining `evaluate()` that decides, per object, whether it matches.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub evaluate: String,
    /// CEL rules over `resource`; any true rule keeps the object.
    #[serde(default, rename = "evaluateCEL", skip_serializing_if = "Vec::is_empty")]
    pub evaluate_cel: Vec<CelRule>,
}

/// One label condition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelFilter {
    /// Label key.
    pub key: String,
    /// How the label is compared.
    pub operation: LabelFilterOperation,
    /// Value for `Equal` and `Different`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

/// Comparison of a LabelFilter.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum LabelFilterOperation {
    /// The label has the value (`key=value`).
    #[default]
    Equal,
    /// The label is absent or has another value (`key!=value`).
    Different,
    /// The label is present (`key`).
    Has,
    /// The label is absent (`!key`).
    DoesNotHave,
}

/// A named CEL rule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CelRule {
    /// Rule name, for messages.
    pub name: String,
    /// CEL expression over `resource`.
    pub rule: String,
}

/// Regular expressions a CloudEvent must match (empty = anything).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessagingMatchCriteria {
    /// NATS subject.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject: String,
    /// CloudEvent `source`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cloud_event_source: String,
    /// CloudEvent `type`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cloud_event_type: String,
    /// CloudEvent `subject`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cloud_event_subject: String,
}

impl LabelFilter {
    /// The filter in label-selector string form (`k=v`, `k!=v`, `k`, `!k`).
    pub fn to_selector_term(&self) -> String {
        match self.operation {
            LabelFilterOperation::Equal => format!("{}={}", self.key, self.value),
            LabelFilterOperation::Different => format!("{}!={}", self.key, self.value),
            LabelFilterOperation::Has => self.key.clone(),
            LabelFilterOperation::DoesNotHave => format!("!{}", self.key),
        }
    }

    /// Whether a label set passes this filter.
    pub fn matches(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operation {
            LabelFilterOperation::Equal => value == Some(&self.value),
            LabelFilterOperation::Different => value != Some(&self.value),
            LabelFilterOperation::Has => value.is_some(),
            LabelFilterOperation::DoesNotHave => value.is_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn label_filters_follow_selector_semantics() {
        let labels: BTreeMap<String, String> = [("env".to_string(), "fv".to_string())].into();
        let filter = |operation, value: &str| LabelFilter {
            key: "env".into(),
            operation,
            value: value.into(),
        };
        assert!(filter(LabelFilterOperation::Equal, "fv").matches(&labels));
        assert!(!filter(LabelFilterOperation::Equal, "prod").matches(&labels));
        assert!(filter(LabelFilterOperation::Different, "prod").matches(&labels));
        assert!(!filter(LabelFilterOperation::Different, "fv").matches(&labels));
        assert!(filter(LabelFilterOperation::Has, "").matches(&labels));
        assert!(!filter(LabelFilterOperation::DoesNotHave, "").matches(&labels));
        assert!(filter(LabelFilterOperation::Different, "x").matches(&BTreeMap::new()));
        assert_eq!(
            filter(LabelFilterOperation::Different, "x").to_selector_term(),
            "env!=x"
        );
        assert_eq!(
            filter(LabelFilterOperation::DoesNotHave, "").to_selector_term(),
            "!env"
        );
    }

    #[test]
    fn evaluate_cel_keeps_its_json_name() {
        let selector: ResourceSelector = serde_json::from_value(serde_json::json!({
            "group": "", "version": "v1", "kind": "Service",
            "evaluateCEL": [{"name": "lb", "rule": "true"}]
        }))
        .unwrap();
        assert_eq!(selector.evaluate_cel.len(), 1);
        let back = serde_json::to_value(&selector).unwrap();
        assert!(back.get("evaluateCEL").is_some());
        assert!(
            back.get("namespace").is_none(),
            "empty strings are omitted like Go's omitempty"
        );
    }
}
