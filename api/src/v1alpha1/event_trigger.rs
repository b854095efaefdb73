//! v1alpha1 EventTrigger and its older name EventBasedAddOn: the same fields as v1beta1, but
//! cluster selectors are strings in label-selector syntax (`env=fv`), and the oldest objects
//! call the source selector `clusterSelector`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::labels::LEGACY_INSTANTIATION_ANNOTATION;
use crate::{Error, Result, selector, v1beta1};

/// Spec of v1alpha1 EventTrigger (and, wrapped, of EventBasedAddOn).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "lib.projectsveltos.io",
    version = "v1alpha1",
    kind = "EventTrigger",
    plural = "eventtriggers",
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct EventTriggerSpec {
    /// Source clusters, e.g. `env=fv` (`clusterSelector` in the oldest releases).
    #[serde(default, alias = "clusterSelector")]
    pub source_cluster_selector: String,
    /// Destination clusters, e.g. `dep=eng`; "" = the source cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub destination_cluster_selector: String,
    /// Every other field, with the same names and shapes as in v1beta1.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// Spec of EventBasedAddOn, the name EventTrigger had until v0.21; the manager reconciles it
/// by converting it into an EventTrigger it owns.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "lib.projectsveltos.io",
    version = "v1alpha1",
    kind = "EventBasedAddOn",
    plural = "eventbasedaddons",
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(transparent)]
pub struct EventBasedAddOnSpec(pub EventTriggerSpec);

impl EventTriggerSpec {
    /// Converts into the v1beta1 spec; a selector with bad syntax or a field of the wrong
    /// shape is an error naming it.
    pub fn to_v1beta1(&self) -> Result<v1beta1::EventTriggerSpec> {
        let mut fields = self.fields.clone();
        let source = selector::parse(&self.source_cluster_selector)?;
        fields.insert("sourceClusterSelector".into(), to_value(&source)?);
        if !self.destination_cluster_selector.is_empty() {
            let destination = selector::parse(&self.destination_cluster_selector)?;
            fields.insert("destinationClusterSelector".into(), to_value(&destination)?);
        }
        serde_json::from_value(Value::Object(fields)).map_err(|source| Error::Convert {
            what: "v1alpha1 EventTrigger spec".into(),
            source,
        })
    }

    /// The v1alpha1 form of a v1beta1 spec.
    pub fn from_v1beta1(spec: &v1beta1::EventTriggerSpec) -> Result<Self> {
        let Value::Object(mut fields) = to_value(spec)? else {
            return Err(Error::Invalid(
                "an EventTrigger spec must serialize to an object".into(),
            ));
        };
        fields.remove("sourceClusterSelector");
        fields.remove("destinationClusterSelector");
        Ok(EventTriggerSpec {
            source_cluster_selector: selector::to_selector_string(&spec.source_cluster_selector),
            destination_cluster_selector: selector::to_selector_string(
                &spec.destination_cluster_selector,
            ),
            fields,
        })
    }
}

fn to_value<T: Serialize>(value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(|source| Error::Convert {
        what: "EventTrigger spec".into(),
        source,
    })
}

/// Marks metadata so the manager keeps v1alpha1's rule of instantiating every referenced
/// ConfigMap/Secret with event data.
fn mark_legacy(mut metadata: ObjectMeta) -> ObjectMeta {
    metadata
        .annotations
        .get_or_insert_default()
        .insert(LEGACY_INSTANTIATION_ANNOTATION.into(), "true".into());
    metadata
}

impl TryFrom<EventTrigger> for v1beta1::EventTrigger {
    type Error = Error;

    fn try_from(trigger: EventTrigger) -> Result<Self> {
        Ok(v1beta1::EventTrigger {
            metadata: mark_legacy(trigger.metadata),
            spec: trigger.spec.to_v1beta1()?,
            status: None,
        })
    }
}

impl TryFrom<v1beta1::EventTrigger> for EventTrigger {
    type Error = Error;

    fn try_from(trigger: v1beta1::EventTrigger) -> Result<Self> {
        let mut metadata = trigger.metadata;
        if let Some(annotations) = metadata.annotations.as_mut() {
            annotations.remove(LEGACY_INSTANTIATION_ANNOTATION);
            if annotations.is_empty() {
                metadata.annotations = None;
            }
        }
        Ok(EventTrigger {
            metadata,
            spec: EventTriggerSpec::from_v1beta1(&trigger.spec)?,
        })
    }
}

impl EventBasedAddOn {
    /// The EventTrigger this EventBasedAddOn stands for: same name and labels, owned by it,
    /// with v1alpha1's instantiation rule.
    pub fn to_event_trigger(&self) -> Result<v1beta1::EventTrigger> {
        use kube::Resource;
        let mut metadata = ObjectMeta {
            name: self.metadata.name.clone(),
            labels: self.metadata.labels.clone(),
            annotations: self.metadata.annotations.clone(),
            ..Default::default()
        };
        metadata.annotations.get_or_insert_default().insert(
            crate::labels::CONVERTED_FROM_ANNOTATION.into(),
            format!(
                "EventBasedAddOn/{}",
                self.metadata.name.as_deref().unwrap_or_default()
            ),
        );
        if let Some(owner) = self.controller_owner_ref(&()) {
            metadata.owner_references = Some(vec![owner]);
        }
        Ok(v1beta1::EventTrigger {
            metadata: mark_legacy(metadata),
            spec: self.spec.0.to_v1beta1()?,
            status: None,
        })
    }
}
