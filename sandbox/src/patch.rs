//! Patch application: JSON merge patch, JSON patch, server-side apply and managedFields.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::fields::{self, FieldSet};
use serde_json::{Map, Value};

/// The patch types of the Kubernetes API, by request `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// Map a `Content-Type` header value onto a patch type.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                Some(PatchType::Apply)
            }
            _ => None,
        }
    }
}

/// Apply an RFC 7386 merge patch.
pub fn merge(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// Apply an RFC 6902 JSON patch; a `test` of `null` on a missing path passes, as in Kubernetes.
pub fn json(target: &mut Value, patch: &Value) -> Result<()> {
    let ops = patch
        .as_array()
        .ok_or_else(|| Error::BadRequest("json patch must be an array of operations".into()))?;
    for raw in ops {
        let is_null_test = raw.get("op").and_then(Value::as_str) == Some("test")
            && raw.get("value").is_none_or(Value::is_null);
        if is_null_test {
            let path = raw.get("path").and_then(Value::as_str).unwrap_or("");
            if target.pointer(path).is_none_or(Value::is_null) {
                continue;
            }
        }
        // kube-apiserver says no more than this about a JSON patch that cannot apply.
        let rejected = |e: &dyn std::fmt::Display| {
            tracing::debug!(error = %e, "JSON patch refused");
            Error::Invalid("the server rejected our request due to an error in our request".into())
        };
        let op: json_patch::PatchOperation =
            serde_json::from_value(raw.clone()).map_err(|e| rejected(&e))?;
        json_patch::patch(target, &[op]).map_err(|e| rejected(&e))?;
    }
    Ok(())
}

/// One managedFields entry, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedEntry {
    /// Field manager name.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    /// `apiVersion` the fields were written at.
    pub api_version: String,
    /// Last write time.
    pub time: String,
    /// Subresource (`status`) or "".
    pub subresource: String,
    /// Owned leaves.
    pub fields: FieldSet,
}

/// Read `metadata.managedFields` of an object.
pub fn managed_entries(obj: &Value) -> Vec<ManagedEntry> {
    let Some(list) = obj
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    list.iter()
        .map(|e| ManagedEntry {
            manager: s(e, "manager"),
            operation: s(e, "operation"),
            api_version: s(e, "apiVersion"),
            time: s(e, "time"),
            subresource: s(e, "subresource"),
            fields: e
                .get("fieldsV1")
                .map(fields::from_fields_v1)
                .unwrap_or_default(),
        })
        .collect()
}

/// Write `metadata.managedFields` (dropping entries that own nothing).
pub fn set_managed_entries(obj: &mut Value, entries: &[ManagedEntry]) {
    let text = |s: &str| Value::String(s.to_owned());
    // Built in place: `json!` would copy each encoded field set once more.
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut m = Map::new();
            m.insert("manager".into(), text(&e.manager));
            m.insert("operation".into(), text(&e.operation));
            m.insert("apiVersion".into(), text(&e.api_version));
            m.insert("time".into(), text(&e.time));
            m.insert("fieldsType".into(), text("FieldsV1"));
            m.insert("fieldsV1".into(), fields::to_fields_v1(&e.fields));
            if !e.subresource.is_empty() {
                m.insert("subresource".into(), text(&e.subresource));
            }
            Value::Object(m)
        })
        .collect();
    let md = crate::meta::metadata_mut(obj);
    if list.is_empty() {
        md.remove("managedFields");
    } else {
        md.insert("managedFields".into(), Value::Array(list));
    }
}

/// Who writes, and how, for managedFields bookkeeping.
#[derive(Debug, Clone)]
pub struct Writer<'a> {
    /// Field manager.
    pub manager: &'a str,
    /// apiVersion of the request.
    pub api_version: String,
    /// Subresource written ("" or "status").
    pub subresource: &'a str,
    /// How the kind's lists merge and are owned.
    pub lists: fields::Lists<'a>,
}

/// Record a non-apply write: the writer takes the leaves that changed (from everyone).
pub fn record_update(old: Option<&Value>, new: &mut Value, w: &Writer<'_>) {
    let mut entries = old.map(managed_entries).unwrap_or_default();
    let new_leaves = fields::leaves(new, w.lists);
    let changed: FieldSet = match old {
        None => new_leaves.clone(),
        Some(o) => {
            let old_leaves = fields::leaves(o, w.lists);
            new_leaves
                .iter()
                .filter(|p| fields::get(o, p) != fields::get(new, p))
                .cloned()
                .chain(old_leaves.difference(&new_leaves).cloned())
                .collect()
        }
    };
    // Leaves that no longer exist are owned by nobody.
    for e in &mut entries {
        e.fields
            .retain(|p| new_leaves.contains(p) && !changed.contains(p));
    }
    let taken: FieldSet = changed.intersection(&new_leaves).cloned().collect();
    if !taken.is_empty() {
        let now = crate::meta::now_rfc3339();
        match entries.iter_mut().find(|e| {
            e.manager == w.manager && e.operation == "Update" && e.subresource == w.subresource
        }) {
            Some(e) => {
                e.fields.extend(taken);
                e.time = now;
                e.api_version = w.api_version.clone();
            }
            None => entries.push(ManagedEntry {
                manager: w.manager.to_owned(),
                operation: "Update".into(),
                api_version: w.api_version.clone(),
                time: now,
                subresource: w.subresource.to_owned(),
                fields: taken,
            }),
        }
    }
    set_managed_entries(new, &entries);
}

/// How kube-apiserver names the other side of a conflict: an applier by name, an updater
/// with the apiVersion it wrote.
fn conflict_with(entry: &ManagedEntry) -> String {
    if entry.operation == "Update" {
        format!(
            "conflict with \"{}\" using {}",
            entry.manager, entry.api_version
        )
    } else {
        format!("conflict with \"{}\"", entry.manager)
    }
}

/// Server-side apply of `applied` by `w.manager` onto `live` (None when creating).
///
/// Fields the manager applied before and omits now are removed unless another manager owns
/// them; changing a field another manager owns is a conflict unless `force`.
pub fn apply(live: Option<&Value>, applied: &Value, w: &Writer<'_>, force: bool) -> Result<Value> {
    if !applied.is_object() {
        return Err(Error::BadRequest("apply patch must be an object".into()));
    }
    let mut entries = live.map(managed_entries).unwrap_or_default();
    let mut result = live.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    let mut new_set = fields::leaves(applied, w.lists);
    if w.subresource == "status" {
        new_set.retain(|p| p.first().is_some_and(|k| k == "status"));
    }
    let mine = |e: &ManagedEntry| {
        e.manager == w.manager && e.operation == "Apply" && e.subresource == w.subresource
    };
    // Conflicts with other managers over leaves whose value would change.
    let mut conflicts = Vec::new();
    // A list-map item (`k:`) is structure: its fields conflict, not the item.
    let valued = |p: &&Vec<String>| !p.last().is_some_and(|k| k.starts_with("k:"));
    for e in entries.iter().filter(|e| !mine(e)) {
        for p in new_set.iter().filter(valued) {
            let empty_map = fields::get(applied, p)
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty);
            if !empty_map
                && fields::overlaps(&e.fields, p)
                && live.and_then(|l| fields::get(l, p)) != fields::get(applied, p)
            {
                conflicts.push((conflict_with(e), fields::dotted(p)));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        let msg = if conflicts.len() == 1 {
            format!(
                "Apply failed with 1 conflict: {}: {}",
                conflicts[0].0, conflicts[0].1
            )
        } else {
            let lines: Vec<String> = conflicts
                .iter()
                .map(|(m, f)| format!("- {m}: {f}"))
                .collect();
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                lines.join("\n")
            )
        };
        return Err(Error::Conflict {
            message: msg,
            fields: conflicts,
        });
    }
    // Forced or equal-valued: other managers lose the leaves this apply changes.
    for e in entries.iter_mut().filter(|e| !mine(e)) {
        e.fields.retain(|p| {
            !(new_set.contains(p)
                && valued(&p)
                && live.and_then(|l| fields::get(l, p)) != fields::get(applied, p))
        });
    }
    // Removal of leaves this manager stops applying (unless someone else owns them).
    let previous: FieldSet = entries
        .iter()
        .filter(|e| mine(e))
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    for p in previous.difference(&new_set) {
        let shared = entries
            .iter()
            .filter(|e| !mine(e))
            .any(|e| fields::overlaps(&e.fields, p));
        if !shared && !new_set.iter().any(|n| n.starts_with(p)) {
            fields::remove(&mut result, p);
        }
    }
    // What is merged: the applied configuration (its status alone for the status
    // subresource), without managedFields; copied only when it must change.
    let mut body = if w.subresource == "status" {
        let status = applied.get("status").cloned().unwrap_or(Value::Null);
        Cow::Owned(Value::Object(Map::from_iter([("status".into(), status)])))
    } else {
        Cow::Borrowed(applied)
    };
    if body.pointer("/metadata/managedFields").is_some()
        && let Some(md) = body
            .to_mut()
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
    {
        md.remove("managedFields");
    }
    fields::merge_applied(&mut result, &body, w.lists);
    entries.retain(|e| !mine(e));
    entries.push(ManagedEntry {
        manager: w.manager.to_owned(),
        operation: "Apply".into(),
        api_version: w.api_version.clone(),
        time: crate::meta::now_rfc3339(),
        subresource: w.subresource.to_owned(),
        fields: new_set,
    });
    set_managed_entries(&mut result, &entries);
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn w(m: &str) -> Writer<'_> {
        Writer {
            manager: m,
            api_version: "v1".into(),
            subresource: "",
            lists: fields::Lists::Builtin,
        }
    }

    #[test]
    fn json_patch_null_test_on_missing_path_passes() {
        let mut v = json!({"metadata": {}});
        let p = json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
                       {"op": "add", "path": "/metadata/finalizers", "value": ["x"]}]);
        json(&mut v, &p).unwrap();
        assert_eq!(v["metadata"]["finalizers"], json!(["x"]));
        let bad = json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "y"}]);
        assert!(matches!(json(&mut v, &bad), Err(Error::Invalid(_))));
    }

    #[test]
    fn apply_removes_dropped_fields_and_detects_conflicts() {
        let a1 = json!({"spec": {"size": 1, "shape": "round"}});
        let o = apply(None, &a1, &w("a"), false).unwrap();
        let a2 = json!({"spec": {"size": 1}});
        let o = apply(Some(&o), &a2, &w("a"), false).unwrap();
        assert_eq!(o["spec"], json!({"size": 1}));
        // Same value from another manager: shared, no conflict.
        let o = apply(Some(&o), &json!({"spec": {"size": 1}}), &w("b"), false).unwrap();
        // Different value: conflict with both a... a is the only other owner.
        let err = apply(Some(&o), &json!({"spec": {"size": 2}}), &w("c"), false).unwrap_err();
        assert!(
            err.to_string().contains("conflict with \"a\": .spec.size"),
            "{err}"
        );
        let o = apply(Some(&o), &json!({"spec": {"size": 2}}), &w("c"), true).unwrap();
        assert_eq!(o["spec"]["size"], 2);
        // a no longer owns size; dropping it from a's config keeps c's value.
        let o = apply(Some(&o), &json!({"spec": {}}), &w("a"), false).unwrap();
        assert_eq!(o["spec"]["size"], 2);
    }

    #[test]
    fn list_map_items_are_owned_apart_and_withdrawn_by_their_owner() {
        let config = |containers: Value| json!({"spec": {"replicas": 1, "containers": containers}});
        let web = json!([{"name": "web", "image": "nginx"}]);
        let o = apply(None, &config(web.clone()), &w("a"), false).unwrap();
        let sidecar = json!([{"name": "sidecar", "image": "busybox"}]);
        let o = apply(Some(&o), &config(sidecar), &w("b"), false).unwrap();
        assert_eq!(o["spec"]["containers"].as_array().unwrap().len(), 2);
        // The same item with another value is a conflict on that field only.
        let other = json!([{"name": "web", "image": "alpine"}]);
        let err = apply(Some(&o), &config(other), &w("b"), false).unwrap_err();
        assert!(
            err.to_string()
                .contains(r#"conflict with "a": .spec.containers[name="web"].image"#),
            "{err}"
        );
        // b stops applying its item: it goes; a's stays.
        let o = apply(Some(&o), &json!({"spec": {"replicas": 1}}), &w("b"), false).unwrap();
        assert_eq!(o["spec"]["containers"], web);
        // An updater that changes a field of a's item takes that field, not the list.
        let mut n = o.clone();
        n["spec"]["containers"][0]["image"] = json!("nginx:2");
        record_update(Some(&o), &mut n, &w("kubectl-set"));
        let entries = managed_entries(&n);
        let updater = entries.iter().find(|e| e.manager == "kubectl-set").unwrap();
        let image: Vec<String> = ["spec", "containers", r#"k:{"name":"web"}"#, "image"]
            .map(str::to_owned)
            .to_vec();
        assert!(updater.fields.contains(&image), "{:?}", updater.fields);
    }

    #[test]
    fn update_takes_ownership() {
        let o = apply(None, &json!({"spec": {"size": 1}}), &w("a"), false).unwrap();
        let mut n = o.clone();
        n["spec"]["size"] = json!(5);
        record_update(Some(&o), &mut n, &w("kubectl-patch"));
        let err = apply(Some(&n), &json!({"spec": {"size": 1}}), &w("a"), false).unwrap_err();
        assert!(err.to_string().contains("kubectl-patch"));
    }
}
