//! Events are one resource served by two APIs, as in kube-apiserver: `v1` `events` and
//! `events.k8s.io/v1` `events` share their storage (the core form), and each read or write
//! through the other API converts field by field (`regarding` is `involvedObject`, `note` is
//! `message`, ...), so an Event a controller records through `events.k8s.io` is what
//! `kubectl get events` and `kubectl describe` show.

use serde_json::{Map, Value};

use crate::registry::{GroupResource, ResourceInfo};

/// The API group of the newer Events API.
pub const EVENTS_GROUP: &str = "events.k8s.io";

/// `(events.k8s.io/v1 field, core v1 field)` for the fields whose names differ.
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// Whether `info` is `events.k8s.io` `events`.
pub fn is_events_api(info: &ResourceInfo) -> bool {
    info.group == EVENTS_GROUP && info.plural == "events"
}

/// Where both Events APIs keep their objects: the core resource.
pub fn storage() -> GroupResource {
    GroupResource {
        group: String::new(),
        resource: "events".to_owned(),
    }
}

/// A field path of the `events.k8s.io/v1` form (`regarding.name`) in the core form
/// (`involvedObject.name`), as kube-apiserver maps field selectors between the two APIs.
pub fn core_field(path: &str) -> String {
    let (head, rest) = path
        .split_once('.')
        .map_or((path, None), |(h, r)| (h, Some(r)));
    let head = RENAMED
        .iter()
        .find(|(new, _)| *new == head)
        .map_or(head, |(_, old)| old);
    match rest {
        Some(rest) => format!("{head}.{rest}"),
        None => head.to_owned(),
    }
}

/// An `events.k8s.io/v1` Event in its core `v1` form.
pub fn to_core(event: &Value) -> Value {
    convert(event, "v1", |name| {
        RENAMED
            .iter()
            .find(|(new, _)| *new == name)
            .map_or(name, |(_, old)| old)
    })
}

/// A core `v1` Event in its `events.k8s.io/v1` form.
pub fn from_core(event: &Value) -> Value {
    convert(event, "events.k8s.io/v1", |name| {
        RENAMED
            .iter()
            .find(|(_, old)| *old == name)
            .map_or(name, |(new, _)| new)
    })
}

fn convert(event: &Value, api_version: &str, rename: impl Fn(&str) -> &str) -> Value {
    let Some(fields) = event.as_object() else {
        return event.clone();
    };
    let mut out: Map<String, Value> = fields
        .iter()
        .map(|(name, value)| (rename(name).to_owned(), value.clone()))
        .collect();
    out.insert(
        "apiVersion".to_owned(),
        Value::String(api_version.to_owned()),
    );
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_form_converts_to_the_other_and_back() {
        let new = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "regarding": {"kind": "EventTrigger", "name": "t"},
            "note": "cannot generate", "reason": "GenerationFailed", "type": "Warning",
            "reportingController": "sveltos-events-manager", "reportingInstance": "m-1",
            "eventTime": "2026-11-24T17:00:00.000000Z", "action": "Reconcile",
            "series": {"count": 2, "lastObservedTime": "2026-11-24T17:01:00.000000Z"}
        });
        let core = to_core(&new);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "t");
        assert_eq!(core["message"], "cannot generate");
        assert_eq!(core["reportingComponent"], "sveltos-events-manager");
        assert_eq!(core["reason"], "GenerationFailed");
        assert!(core.get("regarding").is_none() && core.get("note").is_none());
        assert_eq!(from_core(&core), new);
        assert_eq!(core_field("regarding.name"), "involvedObject.name");
        assert_eq!(core_field("reportingController"), "reportingComponent");
        assert_eq!(core_field("metadata.name"), "metadata.name");
    }
}
