//! What kube-apiserver does to a custom resource with its CRD's structural schema before it
//! stores it: fields the schema does not name are pruned (unless
//! `x-kubernetes-preserve-unknown-fields` keeps them), `null` where the schema does not allow
//! it is dropped, and `default`s fill what is absent. `apiVersion`, `kind` and `metadata` stay
//! at the root and in `x-kubernetes-embedded-resource` objects.

use serde_json::{Map, Value};

/// Prunes and defaults `object` (a whole custom resource) by `schema`, its version's
/// `openAPIV3Schema`.
pub fn admit(schema: &Value, object: &mut Value) {
    walk(schema, object, true);
}

fn walk(schema: &Value, value: &mut Value, resource: bool) {
    match value {
        Value::Object(fields) => object(schema, fields, resource),
        Value::Array(items) => {
            if let Some(items_schema) = schema.get("items") {
                for item in items {
                    let embedded = embedded(items_schema);
                    walk(items_schema, item, embedded);
                }
            }
        }
        _ => {}
    }
}

fn embedded(schema: &Value) -> bool {
    schema["x-kubernetes-embedded-resource"] == true
}

fn object(schema: &Value, fields: &mut Map<String, Value>, resource: bool) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let preserve = schema["x-kubernetes-preserve-unknown-fields"] == true;
    let kept = |name: &str| resource && matches!(name, "apiVersion" | "kind" | "metadata");
    // Unknown fields go (a type-less schema that preserves nothing keeps nothing either).
    fields.retain(|name, _| {
        kept(name)
            || properties.is_some_and(|p| p.contains_key(name))
            || additional.is_some_and(|a| a.is_object() || *a == Value::Bool(true))
            || preserve
    });
    // A null the schema does not allow is as good as absent (and so gets the default).
    fields.retain(|name, value| {
        kept(name) || !value.is_null() || field_schema(schema, name).is_some_and(nullable)
    });
    if let Some(properties) = properties {
        for (name, property) in properties {
            if !fields.contains_key(name)
                && let Some(default) = property.get("default")
            {
                fields.insert(name.clone(), default.clone());
            }
        }
    }
    for (name, value) in fields.iter_mut() {
        if kept(name) {
            continue;
        }
        if let Some(field) = field_schema(schema, name) {
            walk(field, value, embedded(field));
        }
    }
}

/// The schema of field `name` of an object: its property, or the additionalProperties schema.
fn field_schema<'s>(schema: &'s Value, name: &str) -> Option<&'s Value> {
    schema
        .get("properties")
        .and_then(|p| p.get(name))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

fn nullable(schema: &Value) -> bool {
    schema["nullable"] == true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_pruned_unless_preserved_and_defaults_fill_gaps() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer", "default": 3},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "items": {"type": "array", "items": {"type": "object",
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer", "default": 80}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "note": {"type": "string", "nullable": true},
                "size2": {"type": "integer", "default": 1},
                "pod": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "properties": {"spec": {"type": "object"}}}}},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}});
        let mut cr = json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a", "x": 1},
            "spec": {"colour": "red", "labels": {"a": "b"}, "items": [{"name": "x", "extra": 1}],
                     "free": {"anything": {"goes": true}}, "note": null, "size2": null,
                     "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "bogus": 1}},
            "unknown": true});
        admit(&schema, &mut cr);
        assert_eq!(
            cr,
            json!({
                "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a", "x": 1},
                "spec": {"size": 3, "labels": {"a": "b"}, "items": [{"name": "x", "port": 80}],
                         "free": {"anything": {"goes": true}}, "note": null, "size2": 1,
                         "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}})
        );
    }
}
