//! Sveltos' own template functions: libsveltos' encoders and the resource helpers of the
//! event-manager (which take an object) and of the addon-controller (which take an identifier).
//!
//! The event-manager's helpers change the map they are given, as upstream's do: `getResource`
//! and `copy` strip server-owned metadata from it, `setField`, `removeField` and the `chain*`
//! helpers edit it. The addon-controller's helpers work on a copy of the fetched object.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::dict::Dict;
use crate::funcs::{FuncError, FuncMap, Function, Param};
use crate::sprig::conv::str_arg;
use crate::sprig::json::{encode as json_encode, floats};
use crate::value::{MAX_DEPTH, TooDeep, Value};
use crate::yaml::{self, Flavour, SIGS_K8S_YAML, YAML_V3};

/// Fetched objects by TemplateResourceRef identifier, as the API server sent them: each
/// lookup makes a fresh map of one (upstream hands out a copy too).
pub type Resources = Arc<BTreeMap<String, serde_json::Value>>;

/// libsveltos' extras (`toYaml`, `fromYaml`, `toJson`, ...) plus event-manager's
/// object-taking `getResource`, `copy`, `getField`, `setField`, `removeField`, `chain*`.
pub fn sveltos_event_funcs() -> FuncMap {
    let mut map = libsveltos_funcs();
    map.insert(
        "getResource",
        Function::new(&[Param::Any], |a| Ok(cleaned(&a[0]))),
    );
    map.insert(
        "copy",
        Function::new(&[Param::Any], |a| Ok(yaml_text(&cleaned(&a[0]), YAML_V3))),
    );
    insert_field_helpers(&mut map, |v: &Value| Ok(v.clone()), YAML_V3);
    map
}

/// The addon-controller's variants of the resource helpers, which take a
/// TemplateResourceRef identifier looked up in `resources`.
pub fn sveltos_addon_funcs(resources: Resources) -> FuncMap {
    let mut map = libsveltos_funcs();
    let lookup = move |id: &Value| -> Result<Value, FuncError> {
        match resources.get(str_arg(id)) {
            Some(object) => Ok(cleaned(&Value::from(object))),
            None => Ok(Value::Null),
        }
    };
    let get = lookup.clone();
    map.insert(
        "getResource",
        Function::new(&[Param::String], move |a| get(&a[0])),
    );
    let get = lookup.clone();
    map.insert(
        "copy",
        Function::new(&[Param::String], move |a| {
            Ok(yaml_text(&get(&a[0])?, SIGS_K8S_YAML))
        }),
    );
    // getField, setField and removeField name the object by identifier; the chain helpers
    // take the map itself, as upstream.
    let mut by_identifier = FuncMap::new();
    insert_field_helpers(&mut by_identifier, lookup, SIGS_K8S_YAML);
    let mut by_map = FuncMap::new();
    insert_field_helpers(&mut by_map, |v: &Value| Ok(v.clone()), SIGS_K8S_YAML);
    for (source, name) in [
        (&by_identifier, "getField"),
        (&by_identifier, "setField"),
        (&by_identifier, "removeField"),
        (&by_map, "chainSetField"),
        (&by_map, "chainRemoveField"),
    ] {
        if let Some(function) = source.get(name) {
            map.insert(name, function.clone());
        }
    }
    map
}

/// `getField`, `setField`, `removeField`, `chainSetField`, `chainRemoveField`, with the first
/// argument resolved to an object by `object`.
fn insert_field_helpers(
    registry: &mut FuncMap,
    object: impl Fn(&Value) -> Result<Value, FuncError> + Clone + Send + Sync + 'static,
    flavour: Flavour,
) {
    let get = object.clone();
    registry.insert(
        "getField",
        Function::new(&[Param::Any, Param::String], move |a| {
            let object = get(&a[0])?;
            // NestedFieldCopy: a Go int inside fails the copy, and the render.
            match field(&object, str_arg(&a[1])) {
                Some(value) => {
                    json_like(&value, 0)?;
                    Ok(value.deep_copy()?)
                }
                None => Ok(Value::string("")),
            }
        }),
    );
    let get = object.clone();
    registry.insert(
        "setField",
        Function::new(&[Param::Any, Param::String, Param::Any], move |a| {
            json_like(&a[2], 0)?;
            // Set, then clean only when the set worked, as upstream.
            let object = get(&a[0])?;
            Ok(
                match set_field(&object, str_arg(&a[1]), a[2].deep_copy()?) {
                    Some(()) => yaml_text(&cleaned(&object), flavour),
                    None => Value::string(""),
                },
            )
        }),
    );
    let get = object.clone();
    registry.insert(
        "removeField",
        Function::new(&[Param::Any, Param::String], move |a| {
            let object = cleaned(&get(&a[0])?);
            remove_field(&object, str_arg(&a[1]));
            Ok(yaml_text(&object, flavour))
        }),
    );
    registry.insert(
        "chainSetField",
        Function::new(&[Param::Any, Param::String, Param::Any], |a| {
            json_like(&a[2], 0)?;
            Ok(match set_field(&a[0], str_arg(&a[1]), a[2].deep_copy()?) {
                Some(()) => a[0].clone(),
                None => Value::Null,
            })
        }),
    );
    registry.insert(
        "chainRemoveField",
        Function::new(&[Param::Any, Param::String], |a| {
            remove_field(&a[0], str_arg(&a[1]));
            Ok(a[0].clone())
        }),
    );
}

/// libsveltos' encoders, shared by both sides.
fn libsveltos_funcs() -> FuncMap {
    let mut map = FuncMap::new();
    map.insert(
        "toYaml",
        Function::new(&[Param::Any], |a| Ok(yaml_text(&a[0], SIGS_K8S_YAML))),
    );
    type Parser = fn(&str) -> Result<Value, String>;
    let decoders: [(&str, Parser, &str); 2] = [
        // sigs.k8s.io/yaml (1.4 and later) wraps encoding/json's error twice.
        (
            "Yaml",
            yaml::decode,
            "error unmarshaling JSON: while decoding JSON: ",
        ),
        ("Json", parse_json, ""),
    ];
    for (format, parse, prefix) in decoders {
        map.insert(
            format!("from{format}"),
            Function::new(&[Param::String], move |a| {
                Ok(match parse(str_arg(&a[0])) {
                    Ok(map @ Value::Map(_)) => map,
                    Ok(Value::Null) => Value::Map(Default::default()),
                    Ok(other) => {
                        error_map(&unmarshal_error(prefix, &other, "map[string]interface {}"))
                    }
                    Err(e) => error_map(&e),
                })
            }),
        );
        map.insert(
            format!("from{format}Array"),
            Function::new(&[Param::String], move |a| {
                let message = match parse(str_arg(&a[0])) {
                    Ok(list @ Value::List(_)) => return Ok(list),
                    Ok(Value::Null) => return Ok(Value::list(Vec::new())),
                    Ok(other) => unmarshal_error(prefix, &other, "[]interface {}"),
                    Err(e) => e,
                };
                Ok(Value::list(vec![Value::string(message)]))
            }),
        );
    }
    map.insert(
        "toJson",
        Function::new(&[Param::Any], |a| {
            Ok(Value::string(
                json_encode(&a[0], true, None).unwrap_or_default(),
            ))
        }),
    );
    map.insert(
        "toToml",
        Function::new(&[Param::Any], |a| {
            let json = a[0].to_json()?;
            Ok(Value::string(
                toml::to_string(&json).unwrap_or_else(|e| e.to_string()),
            ))
        }),
    );
    map.insert(
        "fromToml",
        Function::new(&[Param::String], |a| {
            Ok(match toml::from_str::<serde_json::Value>(str_arg(&a[0])) {
                Ok(json) => Value::from(&json),
                Err(e) => error_map(&e.to_string()),
            })
        }),
    );
    map
}

/// A map holding only `Error`, as libsveltos' decoders return on failure.
fn error_map(message: &str) -> Value {
    Value::map(BTreeMap::from([(
        "Error".to_owned(),
        Value::string(message.to_owned()),
    )]))
}

/// encoding/json's error for decoding `value`'s kind into `go_type`, after `prefix`.
fn unmarshal_error(prefix: &str, value: &Value, go_type: &str) -> String {
    format!(
        "{prefix}json: cannot unmarshal {} into Go value of type {go_type}",
        json_kind(value)
    )
}

/// Go's JSON name of a decoded value's kind, for unmarshal errors.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Map(_) => "object",
        Value::List(_) => "array",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        _ => "number",
    }
}

/// JSON into Go's `interface{}` shapes (numbers float64).
fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str::<serde_json::Value>(text)
        .map(|json| floats(&json))
        .map_err(|e| e.to_string())
}

/// YAML text of `value` without its final newline; "" when it cannot be encoded.
fn yaml_text(value: &Value, flavour: Flavour) -> Value {
    let text = yaml::encode(value, flavour).unwrap_or_default();
    Value::string(text.strip_suffix('\n').unwrap_or(&text).to_owned())
}

/// The object, with the server-owned metadata upstream strips (`managedFields`,
/// `resourceVersion`, `uid`) removed from it in place; other values pass unchanged.
fn cleaned(object: &Value) -> Value {
    for key in ["managedFields", "resourceVersion", "uid"] {
        remove_path(object, &["metadata", key]);
    }
    object.clone()
}

/// Rejects what Kubernetes' unstructured setters cannot deep-copy (Go `int`s from template
/// literals), as upstream's render fails.
fn json_like(value: &Value, depth: usize) -> Result<(), FuncError> {
    if depth > MAX_DEPTH {
        return Err(TooDeep.into());
    }
    match value {
        Value::Int(_) => Err("cannot deep copy int".into()),
        Value::List(items) => items.iter().try_for_each(|v| json_like(v, depth + 1)),
        Value::Map(map) => map
            .read()
            .values()
            .try_for_each(|v| json_like(v, depth + 1)),
        _ => Ok(()),
    }
}

/// The value at the dotted `path`.
fn field(object: &Value, path: &str) -> Option<Value> {
    walk(object, path.split('.'))
}

/// The value reached from `object` through the map keys `keys`.
fn walk<'k>(object: &Value, keys: impl IntoIterator<Item = &'k str>) -> Option<Value> {
    keys.into_iter()
        .try_fold(object.clone(), |current, key| match &current {
            Value::Map(map) => map.get(key),
            _ => None,
        })
}

/// Sets `value` (a deep copy of the caller's) at the dotted `path` of `object`, creating missing maps on the
/// way (unstructured's `SetNestedField`); `None` when `object` or a step holds something other
/// than a map.
fn set_field(object: &Value, path: &str, value: Value) -> Option<()> {
    let Value::Map(map) = object else {
        return None;
    };
    let mut map = map.clone();
    let keys: Vec<&str> = path.split('.').collect();
    let (last, steps) = keys.split_last()?;
    for key in steps {
        map = match &map.get(key) {
            Some(Value::Map(next)) => next.clone(),
            Some(_) => return None,
            None => {
                let next = Dict::default();
                map.insert((*key).to_owned(), Value::Map(next.clone()))
                    .ok()?;
                next
            }
        };
    }
    map.insert((*last).to_owned(), value).ok()
}

/// Removes the dotted `path` from `object` (unstructured's `RemoveNestedField`); nothing
/// happens when it is absent.
fn remove_field(object: &Value, path: &str) {
    let keys: Vec<&str> = path.split('.').collect();
    remove_path(object, &keys);
}

fn remove_path(object: &Value, keys: &[&str]) {
    let Some((last, steps)) = keys.split_last() else {
        return;
    };
    if let Some(Value::Map(map)) = &walk(object, steps.iter().copied()) {
        map.remove(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Options, Template};
    use serde_json::json;

    fn render(funcs: FuncMap, text: &str, data: serde_json::Value) -> Result<String, String> {
        let mut all = crate::sprig::sprig_funcs();
        all.extend(&funcs);
        let template = Template::parse("t", text, Arc::new(all), Options::default())
            .map_err(|e| e.to_string())?;
        template
            .execute(&Value::from(&data))
            .map_err(|e| e.to_string())
    }

    fn secret() -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "u-1", "resourceVersion": "7", "managedFields": [{}]},
            "data": {"token": "abc", "server": "https://x:6443"}})
    }

    fn addon() -> FuncMap {
        let resources = BTreeMap::from([("Config".to_owned(), secret())]);
        sveltos_addon_funcs(Arc::new(resources))
    }

    #[test]
    fn get_resource_by_identifier_reads_the_fetched_object_cleaned() {
        let out = render(
            addon(),
            r#"{{ (getResource "Config").data.token }} {{ (getResource "Config").metadata }} {{ getResource "Nope" }}"#,
            json!({}),
        );
        assert_eq!(out.as_deref(), Ok("abc map[name:c] <no value>"));
    }

    #[test]
    fn copy_and_field_helpers_by_identifier() {
        assert_eq!(
            render(addon(), r#"{{ copy "Config" }}"#, json!({})).as_deref(),
            Ok(
                "apiVersion: v1\ndata:\n  server: https://x:6443\n  token: abc\nkind: ConfigMap\nmetadata:\n  name: c"
            )
        );
        assert_eq!(
            render(
                addon(),
                r#"{{ getField "Config" "data.server" }}|{{ getField "Config" "no.such" }}|"#,
                json!({})
            )
            .as_deref(),
            Ok("https://x:6443||")
        );
        assert_eq!(
            render(
                addon(),
                r#"{{ setField "Config" "metadata.name" "d" }}"#,
                json!({})
            )
            .as_deref(),
            Ok(
                "apiVersion: v1\ndata:\n  server: https://x:6443\n  token: abc\nkind: ConfigMap\nmetadata:\n  name: d"
            )
        );
        assert_eq!(
            render(addon(), r#"{{ removeField "Config" "data" }}"#, json!({})).as_deref(),
            Ok("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c")
        );
    }

    #[test]
    fn event_helpers_take_the_object_and_write_yaml_v3() {
        let data = json!({"Resource": {"metadata": {"name": "web", "uid": "x"},
            "spec": {"ports": [{"port": 80}]}}});
        assert_eq!(
            render(sveltos_event_funcs(), "{{ copy .Resource }}", data.clone()).as_deref(),
            Ok("metadata:\n    name: web\nspec:\n    ports:\n        - port: 80")
        );
        assert_eq!(
            render(
                sveltos_event_funcs(),
                r#"{{ (getResource .Resource).metadata }}"#,
                data.clone()
            )
            .as_deref(),
            Ok("map[name:web]")
        );
        assert_eq!(
            render(
                sveltos_event_funcs(),
                r#"{{ $r := chainSetField .Resource "metadata.labels.app" "web" }}{{ $r.metadata.labels.app }} {{ (chainRemoveField $r "spec").spec }}"#,
                data.clone()
            )
            .as_deref(),
            Ok("web <no value>")
        );
        let error = render(
            sveltos_event_funcs(),
            r#"{{ setField .Resource "spec.replicas" 3 }}"#,
            data,
        )
        .err()
        .unwrap_or_default();
        assert!(error.contains("cannot deep copy int"), "{error}");
    }

    #[test]
    fn libsveltos_decoders_return_errors_as_values() {
        let funcs = sveltos_event_funcs;
        assert_eq!(
            render(
                funcs(),
                r#"{{ (fromYaml "a: 1\nb: [x]").b }} {{ (fromYaml "a: 1").a }}"#,
                json!({})
            )
            .as_deref(),
            Ok("[x] 1")
        );
        assert!(
            render(funcs(), r#"{{ (fromYaml "- a").Error }}"#, json!({}))
                .is_ok_and(|s| s.contains("cannot unmarshal array"))
        );
        assert_eq!(
            render(
                funcs(),
                r#"{{ fromYamlArray "- a\n- b" }} {{ fromJsonArray "[1]" }}"#,
                json!({})
            )
            .as_deref(),
            Ok("[a b] [1]")
        );
        assert!(
            render(funcs(), r#"{{ (fromJson "[1]").Error }}"#, json!({}))
                .is_ok_and(|s| s.contains("cannot unmarshal array"))
        );
        assert_eq!(
            render(
                funcs(),
                r#"{{ toJson .x }} {{ toYaml .x }}"#,
                json!({"x": {"b": [1], "a": "<"}})
            )
            .as_deref(),
            Ok("{\"a\":\"\\u003c\",\"b\":[1]} a: <\nb:\n- 1")
        );
        assert_eq!(
            render(
                funcs(),
                r#"{{ (fromToml "[server]\nport = 8080").server.port }}|{{ toToml .x }}"#,
                json!({"x": {"name": "web"}})
            )
            .as_deref(),
            Ok("8080|name = \"web\"\n")
        );
    }
}
