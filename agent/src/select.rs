//! Resource selection without a server: what a LIST with selectors would have returned.

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

/// An object's labels with string values, sorted by key. A hub keeps the labels of every
/// object it watches: a `BTreeMap` node is half a kilobyte however few labels it holds, this
/// is one slice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels(Box<[(Box<str>, Box<str>)]>);

impl Labels {
    /// The labels of `object` (non-string values are ignored).
    pub fn of(object: &Value) -> Labels {
        let Some(labels) =
            api::fields::at(object, &["metadata", "labels"]).and_then(Value::as_object)
        else {
            return Labels::default();
        };
        let mut pairs: Vec<(Box<str>, Box<str>)> = labels
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().into(), v.as_str()?.into())))
            .collect();
        pairs.sort_unstable();
        Labels(pairs.into_boxed_slice())
    }

    /// The value of label `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let at = self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key)).ok()?;
        Some(&self.0[at].1)
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no label.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl api::selector::Labels for Labels {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

/// Whether the object is being deleted (non-empty `metadata.deletionTimestamp`).
pub fn is_deleting(object: &Value) -> bool {
    api::fields::at(object, &["metadata", "deletionTimestamp"])
        .is_some_and(|v| !v.is_null() && v != "")
}

/// What selection reads of an object, taken once: its type, place, labels, whether it is
/// being deleted, and its uid and resourceVersion (what verdicts and documents are kept by).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace` (empty for cluster-scoped objects).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels` (non-string values are ignored).
    pub labels: Labels,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `(uid, resourceVersion)`, when the object has both.
    pub version: Option<(String, String)>,
}

impl Facts {
    /// The facts of `object`.
    pub fn of(object: &Value) -> Facts {
        let text = |field: &str| metadata_str(object, field).to_owned();
        let version = crate::evaluate::version_key(object);
        Facts {
            api_version: object
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            kind: gvk(object).2.to_owned(),
            namespace: text("namespace"),
            name: text("name"),
            labels: Labels::of(object),
            deleting: is_deleting(object),
            version,
        }
    }

    /// `(group, version, kind)`.
    pub fn gvk(&self) -> (&str, &str, &str) {
        let (group, version) = self
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", &self.api_version));
        (group, version, &self.kind)
    }

    /// `Kind namespace/name` (or `Kind name`), for messages.
    pub fn describe(&self) -> String {
        let kind = if self.kind.is_empty() {
            "object"
        } else {
            &self.kind
        };
        let name = if self.name.is_empty() {
            "<unnamed>"
        } else {
            &self.name
        };
        if self.namespace.is_empty() {
            format!("{kind} {name}")
        } else {
            format!("{kind} {}/{name}", self.namespace)
        }
    }

    /// What [`identity`] says of the object.
    pub fn identity(&self) -> (String, String, String, String) {
        (
            self.api_version.clone(),
            self.kind.clone(),
            self.namespace.clone(),
            self.name.clone(),
        )
    }

    /// Whether the object is a core Secret (whose data a report never carries).
    pub fn is_secret(&self) -> bool {
        self.api_version == "v1" && self.kind == "Secret"
    }
}

/// Whether one label filter accepts the labels.
pub fn filter_accepts(filter: &LabelFilter, labels: &Labels) -> bool {
    let value = labels.get(&filter.key);
    match filter.operation {
        LabelFilterOperation::Equal => value == Some(filter.value.as_str()),
        LabelFilterOperation::Different => value != Some(filter.value.as_str()),
        LabelFilterOperation::Has => value.is_some(),
        LabelFilterOperation::DoesNotHave => value.is_none(),
    }
}

/// Why the selector does not select the object, or `None` when it does (before any Lua). An
/// object being deleted is never selected, as sveltos-agent skips it in a cluster.
pub fn rejection(selector: &ResourceSelector, object: &Facts) -> Result<Option<String>, String> {
    select(selector, object, false)
}

/// Why the selector does not select the object, whether or not it is being deleted (what
/// Sveltos' fixture harness checks: its scripts look at `metadata.deletionTimestamp`).
pub fn rejection_of_any(
    selector: &ResourceSelector,
    object: &Facts,
) -> Result<Option<String>, String> {
    select(selector, object, true)
}

fn select(
    selector: &ResourceSelector,
    object: &Facts,
    deleting_too: bool,
) -> Result<Option<String>, String> {
    if object.gvk()
        != (
            selector.group.as_str(),
            selector.version.as_str(),
            selector.kind.as_str(),
        )
    {
        return Ok(Some("group/version/kind differs".into()));
    }
    if !selector.namespace.is_empty() && object.namespace != selector.namespace {
        return Ok(Some(format!("not in namespace {}", selector.namespace)));
    }
    if !selector.name.is_empty() && object.name != selector.name {
        return Ok(Some(format!("name is not {}", selector.name)));
    }
    if !deleting_too && object.deleting {
        return Ok(Some("being deleted".into()));
    }
    let labels = &object.labels;
    if let Some(filter) = selector
        .label_filters
        .iter()
        .find(|f| !filter_accepts(f, labels))
    {
        return Ok(Some(format!(
            "label filter {} {:?} {} fails",
            filter.key, filter.operation, filter.value
        )));
    }
    if let Some(label_selector) = &selector.selector
        && !api::selector::matches(label_selector, labels).map_err(|e| e.to_string())?
    {
        return Ok(Some("label selector does not match".into()));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_are_found_by_key_whatever_order_the_object_lists_them_in() {
        let object = json!({"metadata": {"labels": {
            "zone": "b", "app": "web", "replicas": 3, "tier": "", "m": "x"
        }}});
        let labels = Labels::of(&object);
        assert_eq!(labels.len(), 4, "a non-string value is not a label");
        for (key, value) in [("zone", "b"), ("app", "web"), ("tier", ""), ("m", "x")] {
            assert_eq!(labels.get(key), Some(value), "{key}");
        }
        for absent in ["replicas", "ap", "zzz", ""] {
            assert_eq!(labels.get(absent), None, "{absent}");
        }
        assert!(Labels::of(&json!({"metadata": {}})).is_empty());
        assert!(Labels::of(&json!({"metadata": {"labels": null}})).is_empty());
    }

    #[test]
    fn label_filters_read_the_compact_labels() {
        let facts = Facts::of(&json!({"metadata": {"labels": {"env": "prod", "team": "a"}}}));
        let filter = |key: &str, operation, value: &str| LabelFilter {
            key: key.into(),
            operation,
            value: value.into(),
        };
        use LabelFilterOperation::*;
        for (f, accepted) in [
            (filter("env", Equal, "prod"), true),
            (filter("env", Equal, "dev"), false),
            (filter("env", Different, "dev"), true),
            (filter("env", Different, "prod"), false),
            (filter("team", Has, ""), true),
            (filter("owner", Has, ""), false),
            (filter("owner", DoesNotHave, ""), true),
            (filter("team", DoesNotHave, ""), false),
            (filter("owner", Equal, ""), false),
        ] {
            assert_eq!(filter_accepts(&f, &facts.labels), accepted, "{f:?}");
        }
    }
}
