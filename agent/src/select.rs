//! Resource selection without a server: what a LIST with selectors would have returned.

use std::collections::BTreeMap;

use api::v1beta1::{LabelFilter, LabelFilterOperation, ResourceSelector};
use serde_json::Value;

/// `(group, version, kind)` of an object, from its `apiVersion` and `kind`.
pub fn gvk(object: &Value) -> (&str, &str, &str) {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    (group, version, kind)
}

fn metadata_str<'a>(object: &'a Value, field: &str) -> &'a str {
    api::fields::text(object, &["metadata", field]).unwrap_or_default()
}

/// `Kind namespace/name` of an object, for messages and tables.
pub fn describe(object: &Value) -> String {
    let (_, _, kind) = gvk(object);
    let (namespace, name) = (
        metadata_str(object, "namespace"),
        metadata_str(object, "name"),
    );
    if namespace.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind} {namespace}/{name}")
    }
}

/// Identity used to recognise an object returned by an aggregation script.
pub fn identity(object: &Value) -> (String, String, String, String) {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (_, _, kind) = gvk(object);
    let (namespace, name) = (
        metadata_str(object, "namespace"),
        metadata_str(object, "name"),
    );
    (
        api_version.to_owned(),
        kind.to_owned(),
        namespace.to_owned(),
        name.to_owned(),
    )
}

/// The object's labels (non-string values are ignored).
pub fn labels(object: &Value) -> BTreeMap<String, String> {
    api::fields::at(object, &["metadata", "labels"])
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the object is being deleted (non-empty `metadata.deletionTimestamp`).
pub fn is_deleting(object: &Value) -> bool {
    api::fields::at(object, &["metadata", "deletionTimestamp"])
        .is_some_and(|v| !v.is_null() && v != "")
}

/// Whether one label filter accepts the labels.
pub fn filter_accepts(filter: &LabelFilter, labels: &BTreeMap<String, String>) -> bool {
    let value = labels.get(&filter.key);
    match filter.operation {
        LabelFilterOperation::Equal => value == Some(&filter.value),
        LabelFilterOperation::Different => value != Some(&filter.value),
        LabelFilterOperation::Has => value.is_some(),
        LabelFilterOperation::DoesNotHave => value.is_none(),
    }
}

/// Why the selector does not select the object, or `None` when it does (before any Lua). An
/// object being deleted is never selected, as sveltos-agent skips it in a cluster.
pub fn rejection(selector: &ResourceSelector, object: &Value) -> Result<Option<String>, String> {
    select(selector, object, false)
}

/// Why the selector does not select the object, whether or not it is being deleted (what
/// Sveltos' fixture harness checks: its scripts look at `metadata.deletionTimestamp`).
pub fn rejection_of_any(
    selector: &ResourceSelector,
    object: &Value,
) -> Result<Option<String>, String> {
    select(selector, object, true)
}

fn select(
    selector: &ResourceSelector,
    object: &Value,
    deleting_too: bool,
) -> Result<Option<String>, String> {
    let (group, version, kind) = gvk(object);
    if (group, version, kind)
        != (
            selector.group.as_str(),
            selector.version.as_str(),
            selector.kind.as_str(),
        )
    {
        return Ok(Some("group/version/kind differs".into()));
    }
    if !selector.namespace.is_empty() && metadata_str(object, "namespace") != selector.namespace {
        return Ok(Some(format!("not in namespace {}", selector.namespace)));
    }
    if !selector.name.is_empty() && metadata_str(object, "name") != selector.name {
        return Ok(Some(format!("name is not {}", selector.name)));
    }
    if !deleting_too && is_deleting(object) {
        return Ok(Some("being deleted".into()));
    }
    let labels = labels(object);
    if let Some(filter) = selector
        .label_filters
        .iter()
        .find(|f| !filter_accepts(f, &labels))
    {
        return Ok(Some(format!(
            "label filter {} {:?} {} fails",
            filter.key, filter.operation, filter.value
        )));
    }
    if let Some(label_selector) = &selector.selector
        && !api::selector::matches(label_selector, &labels).map_err(|e| e.to_string())?
    {
        return Ok(Some("label selector does not match".into()));
    }
    Ok(None)
}
