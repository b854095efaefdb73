//! v1alpha1 EventSource in both historical shapes: the 2023 one with top-level
//! group/version/kind/`script` (and the documentation's `labelsFilters` spelling), and the
//! later one with `resourceSelectors`.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

use crate::v1beta1::{self, LabelFilter, ResourceSelector};

/// Union of the two v1alpha1 EventSource shapes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "lib.projectsveltos.io",
    version = "v1alpha1",
    kind = "EventSource",
    plural = "eventsources",
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct EventSourceSpec {
    /// Shape A: API group of the watched kind ("" = core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Shape A: API version of the watched kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Shape A: the watched kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Shape A: only objects in this namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Shape A: label filters (`labelsFilters`, as the documentation spells it, is accepted).
    #[serde(
        default,
        alias = "labelsFilters",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub label_filters: Vec<LabelFilter>,
    /// Shape A: Lua `evaluate()` per object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub script: String,
    /// Shape B: selectors, as in v1beta1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_selectors: Vec<ResourceSelector>,
    /// Shape B: Lua over all selected objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub aggregated_selection: String,
    /// Ship the matching objects in the EventReport.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub collect_resources: bool,
}

impl EventSourceSpec {
    /// The Shape A selector, when the top-level kind is set.
    fn top_level_selector(&self) -> Option<ResourceSelector> {
        let kind = self.kind.clone().filter(|k| !k.is_empty())?;
        Some(ResourceSelector {
            group: self.group.clone().unwrap_or_default(),
            version: self.version.clone().unwrap_or_default(),
            kind,
            label_filters: self.label_filters.clone(),
            namespace: self.namespace.clone(),
            evaluate: self.script.clone(),
            ..Default::default()
        })
    }
}

impl From<EventSourceSpec> for v1beta1::EventSourceSpec {
    fn from(spec: EventSourceSpec) -> Self {
        let resource_selectors = spec
            .top_level_selector()
            .into_iter()
            .chain(spec.resource_selectors)
            .collect();
        v1beta1::EventSourceSpec {
            resource_selectors,
            aggregated_selection: spec.aggregated_selection,
            collect_resources: spec.collect_resources,
            messaging_match_criteria: Vec::new(),
        }
    }
}

impl From<EventSource> for v1beta1::EventSource {
    fn from(source: EventSource) -> Self {
        v1beta1::EventSource {
            metadata: source.metadata,
            spec: source.spec.into(),
            status: None,
        }
    }
}

impl From<v1beta1::EventSource> for EventSource {
    /// The later (resourceSelectors) shape; CloudEvent criteria have no v1alpha1 field and are
    /// dropped, as the upstream conversion does.
    fn from(source: v1beta1::EventSource) -> Self {
        EventSource {
            metadata: source.metadata,
            spec: EventSourceSpec {
                resource_selectors: source.spec.resource_selectors,
                aggregated_selection: source.spec.aggregated_selection,
                collect_resources: source.spec.collect_resources,
                ..Default::default()
            },
        }
    }
}
