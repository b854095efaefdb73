//! Field sets: the leaves of a JSON object, and their `FieldsV1` encoding in managedFields.

use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// A path of map keys from the object root to a leaf.
pub type FieldPath = Vec<String>;

/// A set of owned leaf paths.
pub type FieldSet = BTreeSet<FieldPath>;

/// Fields the server owns and that no manager can own.
fn excluded(path: &[String]) -> bool {
    match path {
        [first] => first == "apiVersion" || first == "kind",
        [md, key, ..] if md == "metadata" => matches!(
            key.as_str(),
            "name"
                | "namespace"
                | "uid"
                | "resourceVersion"
                | "generation"
                | "creationTimestamp"
                | "deletionTimestamp"
                | "deletionGracePeriodSeconds"
                | "managedFields"
                | "selfLink"
        ),
        _ => false,
    }
}

/// Every leaf of `value` (non-empty maps are descended; lists are atomic leaves).
pub fn leaves(value: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    let mut path = Vec::new();
    collect(value, &mut path, &mut out);
    out
}

fn collect(value: &Value, path: &mut FieldPath, out: &mut FieldSet) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                path.push(k.clone());
                if !excluded(path) {
                    collect(v, path, out);
                }
                path.pop();
            }
        }
        _ if !path.is_empty() => {
            out.insert(path.clone());
        }
        _ => {}
    }
}

/// Encode a set as `FieldsV1` (`{"f:spec":{"f:size":{}}}`).
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for key in path {
            let entry = cur
                .entry(format!("f:{key}"))
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            let Value::Object(next) = entry else { break };
            cur = next;
        }
    }
    Value::Object(root)
}

/// Decode `FieldsV1`; list-item keys (`k:`, `v:`, `i:`) make their list an atomic leaf.
pub fn from_fields_v1(value: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    let mut path = Vec::new();
    decode(value, &mut path, &mut out);
    out
}

fn decode(value: &Value, path: &mut FieldPath, out: &mut FieldSet) {
    let Some(map) = value.as_object() else { return };
    let children: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| k.as_str() != ".").collect();
    if children.is_empty() || children.iter().any(|(k, _)| !k.starts_with("f:")) {
        if !path.is_empty() {
            out.insert(path.clone());
        }
        return;
    }
    for (k, v) in children {
        path.push(k[2..].to_owned());
        decode(v, path, out);
        path.pop();
    }
}

/// The value at a path, if present.
pub fn get<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, k| v.get(k))
}

/// Remove the value at a path (no-op when absent).
pub fn remove(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = value;
    for k in parents {
        match cur.get_mut(k) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(map) = cur.as_object_mut() {
        map.remove(last);
    }
}

/// Do two sets overlap at `path` (same path, or one is a prefix of the other)?
pub fn overlaps(set: &FieldSet, path: &FieldPath) -> bool {
    set.contains(path)
        || (1..path.len()).any(|n| set.contains(&path[..n].to_vec()))
        || set
            .range(path.clone()..)
            .next()
            .is_some_and(|p| p.len() > path.len() && p.starts_with(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leaves_skip_server_fields_and_roundtrip() {
        let v = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "labels": {"x": "1"}},
                       "spec": {"a": [1, 2], "b": {"c": null}, "e": {}}});
        let set = leaves(&v);
        let want: FieldSet = [
            vec!["metadata", "labels", "x"],
            vec!["spec", "a"],
            vec!["spec", "b", "c"],
            vec!["spec", "e"],
        ]
        .into_iter()
        .map(|p| p.into_iter().map(String::from).collect())
        .collect();
        assert_eq!(set, want);
        assert_eq!(from_fields_v1(&to_fields_v1(&set)), set);
    }

    #[test]
    fn list_keys_become_atomic() {
        let f = json!({"f:spec": {"f:ports": {"k:{\"port\":80}": {".": {}}}}});
        let set = from_fields_v1(&f);
        assert!(set.contains(&vec!["spec".to_owned(), "ports".to_owned()]));
    }

    #[test]
    fn overlap_by_prefix() {
        let set: FieldSet = [vec!["spec".to_owned(), "a".to_owned()]]
            .into_iter()
            .collect();
        assert!(overlaps(&set, &vec!["spec".to_owned()]));
        assert!(overlaps(
            &set,
            &vec!["spec".to_owned(), "a".to_owned(), "b".to_owned()]
        ));
        assert!(!overlaps(&set, &vec!["spec".to_owned(), "b".to_owned()]));
    }
}
