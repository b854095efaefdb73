//! Reads users' YAML or JSON (one or many documents) into typed Sveltos objects, converting
//! v1alpha1 forms into v1beta1.

mod limits;
mod list;
mod quoted;
mod read;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use list::{is_list, unwrap_lists};
pub use read::{MAX_INPUT_BYTES, documents_noting};

use crate::{Error, Result, v1alpha1, v1beta1};

/// A document read from user input.
#[derive(Debug, Clone)]
pub enum Object {
    /// An EventSource (either version), as v1beta1.
    EventSource(Box<v1beta1::EventSource>),
    /// An EventTrigger (either version), as v1beta1.
    EventTrigger(Box<v1beta1::EventTrigger>),
    /// An EventBasedAddOn, kept as written: it is reconciled into an EventTrigger it owns.
    EventBasedAddOn(Box<v1alpha1::EventBasedAddOn>),
    /// An EventReport (either version), as v1beta1.
    EventReport(Box<v1beta1::EventReport>),
    /// A SveltosCluster.
    SveltosCluster(Box<v1beta1::SveltosCluster>),
    /// A ClusterProfile.
    ClusterProfile(Box<v1beta1::ClusterProfile>),
    /// A ClusterSummary.
    ClusterSummary(Box<v1beta1::ClusterSummary>),
    /// Any other Kubernetes object (ConfigMap, Service, ...), as JSON.
    Other(Value),
}

/// Splits text into its YAML (or JSON) documents, skipping empty ones.
pub fn documents(text: &str) -> Result<Vec<Value>> {
    documents_noting(text).map(|(documents, _)| documents)
}

/// The objects a user's resource file holds, as `kubectl apply -f` reads them: its documents
/// with every List (`kubectl get -o yaml`) replaced by its items; with what the reader let pass
/// that the user should know (see [`documents_noting`]).
pub fn resources_noting(text: &str) -> Result<(Vec<Value>, Vec<String>)> {
    let (documents, notes) = documents_noting(text)?;
    Ok((unwrap_lists(documents), notes))
}

/// Reads every object of `text` (Lists read as their items) as a typed object.
pub fn objects(text: &str) -> Result<Vec<Object>> {
    let (objects, _) = resources_noting(text)?;
    objects.into_iter().map(object).collect()
}

/// Types one document by its apiVersion and kind.
pub fn object(value: Value) -> Result<Object> {
    let api_version = string_field(&value, "apiVersion");
    let kind = string_field(&value, "kind");
    let (group, version) = api_version
        .rsplit_once('/')
        .unwrap_or(("", api_version.as_str()));
    let object = match (group, version, kind.as_str()) {
        ("lib.projectsveltos.io", "v1beta1", "EventSource") => Object::EventSource(typed(value)?),
        ("lib.projectsveltos.io", "v1alpha1", "EventSource") => {
            let source: v1alpha1::EventSource = typed_plain(value)?;
            Object::EventSource(Box::new(source.into()))
        }
        ("lib.projectsveltos.io", "v1beta1", "EventTrigger") => Object::EventTrigger(typed(value)?),
        ("lib.projectsveltos.io", "v1alpha1", "EventTrigger") => {
            let trigger: v1alpha1::EventTrigger = typed_plain(value)?;
            Object::EventTrigger(Box::new(trigger.try_into()?))
        }
        ("lib.projectsveltos.io", "v1alpha1", "EventBasedAddOn") => {
            let addon: Box<v1alpha1::EventBasedAddOn> = typed(value)?;
            // Surface bad selectors and fields now rather than at reconcile time.
            addon.to_event_trigger()?;
            Object::EventBasedAddOn(addon)
        }
        // v1alpha1 EventReport is v1beta1 minus fields added later.
        ("lib.projectsveltos.io", "v1beta1" | "v1alpha1", "EventReport") => {
            Object::EventReport(typed(with_version(value, "lib.projectsveltos.io/v1beta1"))?)
        }
        ("lib.projectsveltos.io", "v1beta1", "SveltosCluster") => {
            Object::SveltosCluster(typed(value)?)
        }
        ("config.projectsveltos.io", "v1beta1", "ClusterProfile") => {
            Object::ClusterProfile(typed(value)?)
        }
        ("config.projectsveltos.io", "v1beta1", "ClusterSummary") => {
            Object::ClusterSummary(typed(value)?)
        }
        _ => Object::Other(value),
    };
    Ok(object)
}

/// Reads the single EventSource in `text` (either version) as v1beta1.
pub fn event_source_from_yaml(text: &str) -> Result<v1beta1::EventSource> {
    let mut sources = Vec::new();
    for object in objects(text)? {
        match object {
            Object::EventSource(source) => sources.push(*source),
            other => {
                return Err(Error::Invalid(format!(
                    "expected an EventSource, found {}",
                    describe(&other)
                )));
            }
        }
    }
    match sources.len() {
        1 => Ok(sources.remove(0)),
        n => Err(Error::Invalid(format!(
            "expected exactly one EventSource, found {n}"
        ))),
    }
}

/// `Kind/name` of a typed object, for messages.
pub fn describe(object: &Object) -> String {
    let (kind, name) = match object {
        Object::EventSource(o) => ("EventSource", o.metadata.name.clone()),
        Object::EventTrigger(o) => ("EventTrigger", o.metadata.name.clone()),
        Object::EventBasedAddOn(o) => ("EventBasedAddOn", o.metadata.name.clone()),
        Object::EventReport(o) => ("EventReport", o.metadata.name.clone()),
        Object::SveltosCluster(o) => ("SveltosCluster", o.metadata.name.clone()),
        Object::ClusterProfile(o) => ("ClusterProfile", o.metadata.name.clone()),
        Object::ClusterSummary(o) => ("ClusterSummary", o.metadata.name.clone()),
        Object::Other(v) => {
            return format!(
                "{}/{}",
                string_field(v, "kind"),
                v.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            );
        }
    };
    format!("{kind}/{}", name.unwrap_or_default())
}

fn string_field(value: &Value, field: &str) -> String {
    value
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn with_version(mut value: Value, api_version: &str) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.insert("apiVersion".into(), Value::String(api_version.into()));
    }
    value
}

fn typed<T: DeserializeOwned>(value: Value) -> Result<Box<T>> {
    typed_plain(value).map(Box::new)
}

fn typed_plain<T: DeserializeOwned>(value: Value) -> Result<T> {
    let what = format!(
        "{} {:?}",
        string_field(&value, "kind"),
        value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    );
    serde_json::from_value(value).map_err(|source| Error::Convert { what, source })
}
