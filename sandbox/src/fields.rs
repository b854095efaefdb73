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

/// How a list merges under server-side apply (structured-merge-diff's list types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced and owned as a whole.
    Atomic,
    /// Primitive items, each owned on its own (`v:` members).
    Set,
    /// Map items identified by these fields (`k:` members), each merged and owned field by
    /// field.
    Map(Vec<String>),
}

/// Where list types come from: the built-in kinds' OpenAPI (`x-kubernetes-list-type`,
/// `x-kubernetes-list-map-keys`, patch merge keys) as a table by field, or a CRD's
/// structural schema (lists without `x-kubernetes-list-type` are atomic there).
#[derive(Debug, Clone, Copy)]
pub enum Lists<'a> {
    /// A built-in kind.
    Builtin,
    /// A custom resource and its CRD's `openAPIV3Schema`, if it has one.
    Schema(Option<&'a Value>),
}

/// Whether a path element is a list item (`k:{...}` or `v:...`), not a map key.
fn is_item(element: &str) -> bool {
    element.starts_with("k:") || element.starts_with("v:")
}

impl Lists<'_> {
    /// The type of the list at `path` (its last element is the list's field).
    pub fn kind(&self, path: &[String]) -> ListKind {
        match self {
            Lists::Builtin => builtin_list(path),
            Lists::Schema(schema) => schema
                .and_then(|s| schema_at(s, path))
                .map_or(ListKind::Atomic, schema_list),
        }
    }
}

/// The built-in lists server-side apply merges (every other built-in list is atomic).
fn builtin_list(path: &[String]) -> ListKind {
    let Some(field) = path.last() else {
        return ListKind::Atomic;
    };
    let keyed = |keys: &[&str]| ListKind::Map(keys.iter().map(|k| (*k).to_owned()).collect());
    let in_container = path.iter().any(|p| {
        matches!(
            p.as_str(),
            "containers" | "initContainers" | "ephemeralContainers"
        )
    });
    match field.as_str() {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => keyed(&["name"]),
        "volumeMounts" => keyed(&["mountPath"]),
        "volumeDevices" => keyed(&["devicePath"]),
        "hostAliases" => keyed(&["ip"]),
        "conditions" => keyed(&["type"]),
        "ownerReferences" => keyed(&["uid"]),
        "finalizers" => ListKind::Set,
        "ports" if in_container => keyed(&["containerPort", "protocol"]),
        "ports" if path.len() == 2 && path[0] == "spec" => keyed(&["port", "protocol"]),
        _ => ListKind::Atomic,
    }
}

/// The schema of the value at `path` within `schema` (items of lists, properties or
/// additionalProperties of maps).
fn schema_at<'s>(schema: &'s Value, path: &[String]) -> Option<&'s Value> {
    let mut here = schema;
    for element in path {
        here = if is_item(element) {
            here.get("items")?
        } else {
            here.get("properties")
                .and_then(|p| p.get(element))
                .or_else(|| here.get("additionalProperties").filter(|a| a.is_object()))?
        };
    }
    Some(here)
}

fn schema_list(schema: &Value) -> ListKind {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListKind::Set,
        Some("map") => ListKind::Map(
            schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => ListKind::Atomic,
    }
}

/// The `k:` element of a list-map item: its key fields as JSON (sorted by name).
fn key_element(item: &Value, keys: &[String]) -> String {
    let mut key = Map::new();
    for field in keys {
        match item.get(field) {
            Some(value) => {
                key.insert(field.clone(), value.clone());
            }
            // kube-apiserver defaults a port's protocol before it merges: one item either way.
            None if field == "protocol" => {
                key.insert(field.clone(), Value::String("TCP".into()));
            }
            None => {}
        }
    }
    format!("k:{}", Value::Object(key))
}

/// Whether `item` is the one a `k:` element names (a missing `protocol` is `TCP`).
fn has_key(item: &Value, key: &Map<String, Value>) -> bool {
    key.iter().all(|(field, wanted)| match item.get(field) {
        Some(value) => value == wanted,
        None => field == "protocol" && wanted == "TCP",
    })
}

/// Every leaf of `value`, with list-map items (`k:`, the item itself too) and set items
/// (`v:`) as members of their lists; atomic lists are leaves.
pub fn leaves(value: &Value, lists: Lists<'_>) -> FieldSet {
    let mut out = FieldSet::new();
    let mut path = Vec::new();
    collect(value, lists, &mut path, &mut out);
    out
}

fn collect(value: &Value, lists: Lists<'_>, path: &mut FieldPath, out: &mut FieldSet) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                path.push(k.clone());
                if !excluded(path) {
                    collect(v, lists, path, out);
                }
                path.pop();
            }
        }
        // An empty list merged by key or value claims nothing: the other managers' items
        // stay theirs (kube-apiserver applies `containers: []` over another's container
        // without a conflict).
        Value::Array(items)
            if items.is_empty()
                && !path.is_empty()
                && matches!(lists.kind(path), ListKind::Map(_) | ListKind::Set) => {}
        Value::Array(items) if !items.is_empty() && !path.is_empty() => match lists.kind(path) {
            ListKind::Map(keys) if items.iter().all(Value::is_object) => {
                for item in items {
                    path.push(key_element(item, &keys));
                    out.insert(path.clone());
                    collect(item, lists, path, out);
                    path.pop();
                }
            }
            ListKind::Set if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
                for item in items {
                    path.push(format!("v:{item}"));
                    out.insert(path.clone());
                    path.pop();
                }
            }
            _ => {
                out.insert(path.clone());
            }
        },
        _ if !path.is_empty() => {
            out.insert(path.clone());
        }
        _ => {}
    }
}

/// Encode a set as `FieldsV1` (`{"f:spec":{"f:size":{}}}`; list items as `k:`/`v:` members,
/// a list-map item that is a member itself with `.`).
pub fn to_fields_v1(set: &FieldSet) -> Value {
    // Member names are made in one buffer: paths share their prefixes, whose members exist.
    let mut name = String::new();
    let member = |name: &mut String, key: &str| {
        name.clear();
        if !is_item(key) {
            name.push_str("f:");
        }
        name.push_str(key);
    };
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for key in path {
            member(&mut name, key);
            if !cur.get(name.as_str()).is_some_and(Value::is_object) {
                cur.insert(name.clone(), Value::Object(Map::new()));
            }
            let Some(Value::Object(next)) = cur.get_mut(name.as_str()) else {
                break;
            };
            cur = next;
        }
    }
    let mut root = Value::Object(root);
    for path in set
        .iter()
        .filter(|p| p.last().is_some_and(|k| k.starts_with("k:")))
    {
        let node = path.iter().try_fold(&mut root, |cur, key| {
            member(&mut name, key);
            cur.get_mut(name.as_str())
        });
        if let Some(Value::Object(node)) = node
            && !node.is_empty()
        {
            node.insert(".".into(), Value::Object(Map::new()));
        }
    }
    root
}

/// Decode `FieldsV1`; an `i:` (positional) member makes its list an atomic leaf.
pub fn from_fields_v1(value: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    let mut path = Vec::new();
    decode(value, &mut path, &mut out);
    out
}

fn decode(value: &Value, path: &mut FieldPath, out: &mut FieldSet) {
    let Some(map) = value.as_object() else { return };
    if map.contains_key(".") && !path.is_empty() {
        out.insert(path.clone());
    }
    let children: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| k.as_str() != ".").collect();
    let known = |k: &str| k.starts_with("f:") || is_item(k);
    if children.is_empty() || children.iter().any(|(k, _)| !known(k)) {
        if !path.is_empty() {
            out.insert(path.clone());
        }
        return;
    }
    for (k, v) in children {
        path.push(k.strip_prefix("f:").unwrap_or(k).to_owned());
        decode(v, path, out);
        path.pop();
    }
}

/// The item of `list` an item element (`k:{...}` or `v:...`) names, and its index.
fn find_item(list: &[Value], element: &str) -> Option<usize> {
    if let Some(key) = element.strip_prefix("k:") {
        let key: Map<String, Value> = serde_json::from_str(key).ok()?;
        list.iter().position(|item| has_key(item, &key))
    } else {
        let wanted: Value = serde_json::from_str(element.strip_prefix("v:")?).ok()?;
        list.iter().position(|item| *item == wanted)
    }
}

/// The value at a path, if present.
pub fn get<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, k| {
        if is_item(k) {
            let list = v.as_array()?;
            list.get(find_item(list, k)?)
        } else {
            v.get(k)
        }
    })
}

/// Remove the value at a path (no-op when absent): a map key, or a list item.
pub fn remove(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = value;
    for k in parents {
        let next = if is_item(k) {
            let Some(list) = cur.as_array_mut() else {
                return;
            };
            let Some(index) = find_item(list, k) else {
                return;
            };
            list.get_mut(index)
        } else {
            cur.get_mut(k)
        };
        match next {
            Some(next) => cur = next,
            None => return,
        }
    }
    if is_item(last) {
        if let Some(list) = cur.as_array_mut()
            && let Some(index) = find_item(list, last)
        {
            list.remove(index);
        }
    } else if let Some(map) = cur.as_object_mut() {
        map.remove(last);
    }
}

/// Merges an applied configuration into `target`: maps by key, list-map items by their
/// keys (new ones appended), set items by value, anything else replaced.
pub fn merge_applied(target: &mut Value, applied: &Value, lists: Lists<'_>) {
    merge_at(target, applied, lists, &mut Vec::new());
}

fn merge_at(target: &mut Value, applied: &Value, lists: Lists<'_>, path: &mut FieldPath) {
    match (target, applied) {
        (Value::Object(t), Value::Object(a)) => {
            for (k, v) in a {
                path.push(k.clone());
                match t.get_mut(k) {
                    Some(tv)
                        if (tv.is_object() && v.is_object()) || (tv.is_array() && v.is_array()) =>
                    {
                        merge_at(tv, v, lists, path);
                    }
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
                path.pop();
            }
        }
        (Value::Array(t), Value::Array(a)) => match lists.kind(path) {
            ListKind::Map(keys) if a.iter().chain(t.iter()).all(Value::is_object) => {
                for item in a {
                    let element = key_element(item, &keys);
                    match find_item(t, &element) {
                        Some(index) => {
                            path.push(element);
                            merge_at(&mut t[index], item, lists, path);
                            path.pop();
                        }
                        None => t.push(item.clone()),
                    }
                }
            }
            ListKind::Set => {
                for item in a {
                    if !t.contains(item) {
                        t.push(item.clone());
                    }
                }
            }
            _ => *t = a.clone(),
        },
        (t, a) => *t = a.clone(),
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

/// A path as kube-apiserver writes it in conflicts: `.spec.ports[port=80,protocol="TCP"].name`.
pub fn dotted(path: &[String]) -> String {
    path.iter()
        .map(|element| {
            if let Some(key) = element.strip_prefix("k:") {
                let key: Map<String, Value> = serde_json::from_str(key).unwrap_or_default();
                let fields: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("[{}]", fields.join(","))
            } else if let Some(value) = element.strip_prefix("v:") {
                format!("[={value}]")
            } else {
                format!(".{element}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leaves_skip_server_fields_and_roundtrip() {
        let v = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "labels": {"x": "1"}},
                       "spec": {"a": [1, 2], "b": {"c": null}, "e": {}}});
        let set = leaves(&v, Lists::Builtin);
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
    fn list_map_items_and_set_items_are_members_and_round_trip() {
        let v = json!({"metadata": {"finalizers": ["a"]},
                       "spec": {"ports": [{"port": 80, "name": "http"}],
                                "template": {"spec": {"containers": [
                                    {"name": "web", "image": "x", "ports": [{"containerPort": 8080}]}]}}}});
        let set = leaves(&v, Lists::Builtin);
        let path = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<FieldPath>();
        let port = r#"k:{"port":80,"protocol":"TCP"}"#;
        let web = r#"k:{"name":"web"}"#;
        for wanted in [
            path(&["metadata", "finalizers", r#"v:"a""#]),
            path(&["spec", "ports", port]),
            path(&["spec", "ports", port, "name"]),
            path(&["spec", "template", "spec", "containers", web, "image"]),
            path(&[
                "spec",
                "template",
                "spec",
                "containers",
                web,
                "ports",
                r#"k:{"containerPort":8080,"protocol":"TCP"}"#,
                "containerPort",
            ]),
        ] {
            assert!(set.contains(&wanted), "{wanted:?} not in {set:#?}");
        }
        let encoded = to_fields_v1(&set);
        assert_eq!(encoded["f:spec"]["f:ports"][port]["."], json!({}));
        assert_eq!(from_fields_v1(&encoded), set);
        // An item is found by its key (a missing protocol is TCP), and removed by it.
        let image = path(&["spec", "template", "spec", "containers", web, "image"]);
        assert_eq!(get(&v, &image), Some(&json!("x")));
        let mut w = v.clone();
        remove(&mut w, &path(&["spec", "ports", port]));
        assert_eq!(w["spec"]["ports"], json!([]));
        assert_eq!(
            dotted(&image),
            r#".spec.template.spec.containers[name="web"].image"#
        );
    }

    #[test]
    fn applied_lists_merge_by_key_or_value_and_crd_lists_follow_their_schema() {
        let mut live = json!({"spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                                       "finalizers": ["a"], "args": ["x"]}});
        let applied = json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443}],
                                      "finalizers": ["b"], "args": ["y"]}});
        merge_applied(&mut live, &applied, Lists::Builtin);
        assert_eq!(
            live["spec"]["ports"],
            json!([{"port": 80, "protocol": "TCP", "targetPort": 80, "name": "http"}, {"port": 443}])
        );
        assert_eq!(live["spec"]["args"], json!(["y"]));
        let schema = json!({"properties": {"spec": {"properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["id"], "items": {"type": "object"}},
            "tags": {"type": "array", "items": {"type": "string"}}}}}});
        let lists = Lists::Schema(Some(&schema));
        let mut cr = json!({"spec": {"items": [{"id": 1, "a": 1}], "tags": ["x"]}});
        merge_applied(
            &mut cr,
            &json!({"spec": {"items": [{"id": 2}], "tags": ["y"]}}),
            lists,
        );
        assert_eq!(cr["spec"]["items"], json!([{"id": 1, "a": 1}, {"id": 2}]));
        // Without x-kubernetes-list-type a CRD's list is atomic.
        assert_eq!(cr["spec"]["tags"], json!(["y"]));
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
