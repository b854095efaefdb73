//! Strategic merge patch for built-in kinds: list merge keys and the `$patch`,
//! `$setElementOrder`, `$deleteFromPrimitiveList` and `$retainKeys` directives.

use crate::error::{Error, Result};
use serde_json::{Map, Value};

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListStrategy {
    /// Items are maps merged by this key.
    Key(&'static str),
    /// Primitive items, union (patch items first).
    Primitive,
    /// Replaced wholesale (no strategy).
    Replace,
}

/// The strategy of a list field, from its name and (for `ports`) its items.
fn strategy(field: &str, sample: Option<&Value>) -> ListStrategy {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => ListStrategy::Key("name"),
        "volumeMounts" => ListStrategy::Key("mountPath"),
        "volumeDevices" => ListStrategy::Key("devicePath"),
        "hostAliases" => ListStrategy::Key("ip"),
        "conditions" => ListStrategy::Key("type"),
        "ownerReferences" => ListStrategy::Key("uid"),
        "ports" => {
            if sample.is_some_and(|s| s.get("containerPort").is_some()) {
                ListStrategy::Key("containerPort")
            } else {
                ListStrategy::Key("port")
            }
        }
        "finalizers" => ListStrategy::Primitive,
        _ => ListStrategy::Replace,
    }
}

/// Apply a strategic merge patch to a built-in object.
pub fn strategic(target: &mut Value, patch: &Value) -> Result<()> {
    let Value::Object(p) = patch else {
        return Err(Error::BadRequest(
            "strategic merge patch must be an object".into(),
        ));
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        merge_map(t, p)?;
    }
    Ok(())
}

/// Remove every directive key, recursively (values written as-is into new places).
fn clean(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), clean(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .filter(|i| i.get("$patch").and_then(Value::as_str) != Some("delete"))
                .map(clean)
                .collect(),
        ),
        other => other.clone(),
    }
}

fn merge_map(target: &mut Map<String, Value>, patch: &Map<String, Value>) -> Result<()> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = match clean(&Value::Object(patch.clone())) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            return Ok(());
        }
        Some("delete") => {
            target.clear();
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => {
            return Err(Error::BadRequest(format!("unknown patch type {other:?}")));
        }
    }
    for (k, v) in patch {
        if let Some(list) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let remove = v.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(items)) = target.get_mut(list) {
                items.retain(|i| !remove.contains(i));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        match v {
            Value::Null => {
                target.remove(k);
            }
            Value::Object(pm) => {
                if pm.get("$patch").and_then(Value::as_str) == Some("delete") {
                    target.remove(k);
                    continue;
                }
                match target.get_mut(k) {
                    Some(Value::Object(tm)) => merge_map(tm, pm)?,
                    _ => {
                        target.insert(k.clone(), clean(v));
                    }
                }
            }
            Value::Array(pa) => {
                let strat = strategy(
                    k,
                    pa.first().or_else(|| {
                        target
                            .get(k)
                            .and_then(Value::as_array)
                            .and_then(|a| a.first())
                    }),
                );
                let merged = match (strat, target.get(k)) {
                    (ListStrategy::Replace, _) | (_, None | Some(Value::Null)) => {
                        Value::Array(clean(v).as_array().cloned().unwrap_or_default())
                    }
                    (ListStrategy::Primitive, Some(Value::Array(ta))) => {
                        let mut out: Vec<Value> = pa.clone();
                        out.extend(ta.iter().filter(|i| !pa.contains(i)).cloned());
                        Value::Array(out)
                    }
                    (ListStrategy::Key(key), Some(Value::Array(ta))) => merge_list(ta, pa, key)?,
                    (_, Some(_)) => clean(v),
                };
                target.insert(k.clone(), merged);
            }
            other => {
                target.insert(k.clone(), other.clone());
            }
        }
    }
    for (k, v) in patch {
        if let Some(list) = k.strip_prefix("$setElementOrder/")
            && let (Some(Value::Array(items)), Some(order)) = (target.get_mut(list), v.as_array())
        {
            reorder(items, order, strategy(list, order.first()));
        }
    }
    if let Some(Value::Array(keep)) = patch.get("$retainKeys") {
        target.retain(|k, _| keep.iter().any(|x| x.as_str() == Some(k)));
    }
    Ok(())
}

fn merge_list(target: &[Value], patch: &[Value], key: &str) -> Result<Value> {
    if patch
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        return Ok(Value::Array(
            patch
                .iter()
                .filter(|i| i.get("$patch").is_none())
                .map(clean)
                .collect(),
        ));
    }
    let mut existing: Vec<Value> = target.to_vec();
    let mut added = Vec::new();
    for item in patch {
        let Some(kv) = item.get(key) else {
            return Err(Error::BadRequest(format!(
                "map: {item} does not contain declared merge key: {key}"
            )));
        };
        let pos = existing.iter().position(|e| e.get(key) == Some(kv));
        if item.get("$patch").and_then(Value::as_str) == Some("delete") {
            if let Some(p) = pos {
                existing.remove(p);
            }
            continue;
        }
        match (pos, item) {
            (Some(p), Value::Object(pm)) => {
                if let Some(Value::Object(tm)) = existing.get_mut(p) {
                    merge_map(tm, pm)?;
                }
            }
            _ => added.push(clean(item)),
        }
    }
    added.extend(existing);
    Ok(Value::Array(added))
}

fn reorder(items: &mut [Value], order: &[Value], strat: ListStrategy) {
    let rank = |item: &Value| -> usize {
        order
            .iter()
            .position(|o| match strat {
                ListStrategy::Key(k) => o.get(k).is_some() && o.get(k) == item.get(k),
                _ => o == item,
            })
            .unwrap_or(usize::MAX)
    };
    items.sort_by_key(|i| rank(i));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kubectl_three_way_patch_removes_container() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c1", "image": "nginx:1"}, {"name": "c2", "image": "busybox"}]}}}});
        let p = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c1"}],
            "containers": [{"image": "nginx:2", "name": "c1"}, {"$patch": "delete", "name": "c2"}]}}}});
        strategic(&mut d, &p).unwrap();
        assert_eq!(
            d,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "nginx:2"}]}}}})
        );
    }

    #[test]
    fn merges_by_key_new_items_first_and_primitive_union() {
        let mut d = json!({"metadata": {"finalizers": ["a"]}, "spec": {"containers": [{"name": "c1"}, {"name": "c2"}]}});
        let p =
            json!({"metadata": {"finalizers": ["b"]}, "spec": {"containers": [{"name": "c3"}]}});
        strategic(&mut d, &p).unwrap();
        assert_eq!(d["metadata"]["finalizers"], json!(["b", "a"]));
        assert_eq!(
            d["spec"]["containers"],
            json!([{"name": "c3"}, {"name": "c1"}, {"name": "c2"}])
        );
        let p = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}, "spec": {"args": ["x"]}});
        strategic(&mut d, &p).unwrap();
        assert_eq!(d["metadata"]["finalizers"], json!(["b"]));
        assert_eq!(d["spec"]["args"], json!(["x"]));
    }

    #[test]
    fn replace_and_retain_keys_directives() {
        let mut d = json!({"spec": {"a": {"x": 1, "y": 2}, "v": {"k1": 1, "k2": 2}}});
        let p = json!({"spec": {"a": {"$patch": "replace", "z": 3}, "v": {"$retainKeys": ["k2", "k3"], "k3": 3}}});
        strategic(&mut d, &p).unwrap();
        assert_eq!(d["spec"]["a"], json!({"z": 3}));
        assert_eq!(d["spec"]["v"], json!({"k2": 2, "k3": 3}));
    }
}
