//! What kube-apiserver does to a custom resource with its CRD's structural schema before it
//! stores it: fields the schema does not name are pruned (unless
//! `x-kubernetes-preserve-unknown-fields` keeps them), `null` where the schema does not allow
//! it is dropped, `default`s fill what is absent, and what is left is validated (types,
//! enums, bounds, lengths, patterns, item counts, required fields). `apiVersion`, `kind` and
//! `metadata` stay at the root and in `x-kubernetes-embedded-resource` objects.

use std::fmt;

use serde_json::{Map, Value, json};

/// Where a node is in the object, told only when an error names it (`spec.parts[0].name`):
/// building the text for every node would cost more than checking it.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Field(&'a Path<'a>, &'a str),
    Item(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Field(Path::Root, name) => f.write_str(name),
            Path::Field(parent, name) => write!(f, "{parent}.{name}"),
            Path::Item(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// The keywords of one schema node that pruning and validation read, gathered in one pass
/// over its members: looking each up by name would hash a score of names for every node of
/// every object written.
#[derive(Default)]
struct Keywords<'s> {
    ty: Option<&'s str>,
    int_or_string: bool,
    embedded: bool,
    preserve: bool,
    properties: Option<&'s Map<String, Value>>,
    additional: Option<&'s Value>,
    items: Option<&'s Value>,
    required: &'s [Value],
    /// `anyOf`, `oneOf`, `allOf` or `not` is there.
    combined: bool,
    /// A constraint [`constraint_error`] checks is there.
    constrained: bool,
}

impl<'s> Keywords<'s> {
    fn of(schema: &'s Value) -> Self {
        let mut found = Keywords::default();
        for (key, value) in schema.as_object().into_iter().flatten() {
            match key.as_str() {
                "type" => found.ty = value.as_str(),
                "x-kubernetes-int-or-string" => found.int_or_string = *value == true,
                "x-kubernetes-embedded-resource" => found.embedded = *value == true,
                "x-kubernetes-preserve-unknown-fields" => found.preserve = *value == true,
                "properties" => found.properties = value.as_object(),
                "additionalProperties" => found.additional = Some(value),
                "items" => found.items = Some(value),
                "required" => found.required = value.as_array().map_or(&[], Vec::as_slice),
                "anyOf" | "oneOf" | "allOf" | "not" => found.combined = true,
                "enum" | "multipleOf" | "minimum" | "maximum" | "maxLength" | "minLength"
                | "pattern" | "format" | "maxProperties" | "minProperties" | "maxItems"
                | "minItems" => found.constrained = true,
                _ => {}
            }
        }
        found
    }

    /// The schema of member `name` of the objects this node describes: its property, or the
    /// additionalProperties schema.
    fn field(&self, name: &str) -> Option<&'s Value> {
        self.properties
            .and_then(|p| p.get(name))
            .or_else(|| self.additional.filter(|a| a.is_object()))
    }

    /// The type this node wants when `value` is not of it.
    fn type_error(&self, value: &Value) -> Option<String> {
        if value.is_null() {
            return None;
        }
        let actual = json_type(value);
        if self.int_or_string {
            return (!matches!(actual, "integer" | "string")).then(|| "integer,string".to_owned());
        }
        let wanted = self.ty?;
        let fits = wanted == actual || (wanted == "number" && actual == "integer");
        (!fits).then(|| wanted.to_owned())
    }
}

/// Prunes and defaults `object` (a whole custom resource) by `schema`, its version's
/// `openAPIV3Schema`; the paths of the unknown fields it pruned (`spec.parts[0].extra`), for
/// `fieldValidation`.
pub fn admit(schema: &Value, object: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    walk(schema, object, true, Path::Root, &mut pruned);
    pruned
}

fn walk(schema: &Value, value: &mut Value, resource: bool, path: Path, pruned: &mut Vec<String>) {
    let keywords = Keywords::of(schema);
    let resource = resource || keywords.embedded;
    match value {
        Value::Object(fields) => object(&keywords, fields, resource, path, pruned),
        Value::Array(items) => {
            if let Some(items_schema) = keywords.items {
                for (index, item) in items.iter_mut().enumerate() {
                    walk(items_schema, item, false, Path::Item(&path, index), pruned);
                }
            }
        }
        _ => {}
    }
}

/// `path.name` (`name` at the root): a field's path as Go's decoders name it.
pub fn joined(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn object(
    keywords: &Keywords,
    fields: &mut Map<String, Value>,
    resource: bool,
    path: Path,
    pruned: &mut Vec<String>,
) {
    let Keywords {
        properties,
        additional,
        preserve,
        ..
    } = *keywords;
    let kept = |name: &str| resource && matches!(name, "apiVersion" | "kind" | "metadata");
    // Unknown fields go (a type-less schema that preserves nothing keeps nothing either).
    let open = preserve || additional.is_some_and(|a| a.is_object() || *a == Value::Bool(true));
    if !open {
        fields.retain(|name, _| {
            let known = kept(name) || properties.is_some_and(|p| p.contains_key(name));
            if !known {
                pruned.push(Path::Field(&path, name).to_string());
            }
            known
        });
    }
    // A null the schema does not allow is as good as absent (and so gets the default).
    fields.retain(|name, value| {
        kept(name) || !value.is_null() || keywords.field(name).is_some_and(nullable)
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
        if let Some(field) = keywords.field(name) {
            walk(field, value, false, Path::Field(&path, name), pruned);
        }
    }
}

/// Refuses a custom resource that breaks its CRD's schema, with the 422 kube-apiserver
/// answers (its first field error).
pub fn validate(info: &crate::registry::ResourceInfo, object: &Value) -> crate::error::Result<()> {
    let Some(schema) = info.schema.as_ref().filter(|_| info.custom) else {
        return Ok(());
    };
    let causes = violations(schema, object);
    if causes.is_empty() {
        return Ok(());
    }
    Err(crate::error::Error::InvalidFields {
        subject: format!(
            "{}.{} \"{}\"",
            info.kind,
            info.group,
            object["metadata"]["name"].as_str().unwrap_or_default()
        ),
        causes,
    })
}

/// Every way `value` breaks `schema` (type, enum, bounds, lengths, pattern, item counts,
/// required fields), as kube-apiserver words a field error: `(field, text)` where text is
/// `Invalid value: ...`, `Unsupported value: ...` or `Required value`, in the object's order
/// (kube-apiserver's follows Go's map order, which varies).
pub fn violations(schema: &Value, value: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    check(schema, value, Path::Root, true, &mut found);
    found
}

fn check(schema: &Value, value: &Value, path: Path, root: bool, found: &mut Vec<(String, String)>) {
    let keywords = Keywords::of(schema);
    let root = root || keywords.embedded;
    if let Some(wanted) = keywords.type_error(value) {
        let field = path.to_string();
        let actual = json_type(value);
        // A value of the wrong type is not looked into.
        found.push((
            field.clone(),
            format!(
                "Invalid value: \"{actual}\": {field} in body must be of type {wanted}: \"{actual}\""
            ),
        ));
        return;
    }
    if keywords.combined {
        combinations(schema, value, path, root, found);
    }
    if keywords.constrained
        && let Some(text) = constraint_error(schema, value, path)
    {
        found.push((path.to_string(), text));
    }
    match value {
        Value::Object(fields) => {
            for required in keywords.required {
                if let Some(name) = required.as_str()
                    && !fields.contains_key(name)
                {
                    let field = Path::Field(&path, name).to_string();
                    found.push((field, "Required value".to_owned()));
                }
            }
            for (name, child) in fields {
                if root && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(child_schema) = keywords.field(name) {
                    check(child_schema, child, Path::Field(&path, name), false, found);
                }
            }
        }
        Value::Array(items) => {
            if let Some(items_schema) = keywords.items {
                for (index, item) in items.iter().enumerate() {
                    check(items_schema, item, Path::Item(&path, index), false, found);
                }
            }
        }
        _ => {}
    }
}

/// The node's `anyOf`, `oneOf`, `allOf` and `not`, told as kube-apiserver tells them: a
/// pathless error naming the field, with the errors of the first alternative that failed
/// (`anyOf`, and `oneOf` when none held) or of every one (`allOf`).
fn combinations(
    schema: &Value,
    value: &Value,
    path: Path,
    root: bool,
    found: &mut Vec<(String, String)>,
) {
    let field = &path.to_string();
    let mut run = |alternative: &Value| {
        let mut broken = Vec::new();
        check(alternative, value, path, root, &mut broken);
        broken
    };
    let mut outcomes = |key: &str| -> Vec<Vec<(String, String)>> {
        let alternatives = schema[key].as_array().map_or(&[][..], Vec::as_slice);
        alternatives.iter().map(&mut run).collect()
    };
    let told = |text: String| ("<nil>".to_owned(), format!("Invalid value: \"\": {text}"));
    let any = outcomes("anyOf");
    if !any.is_empty() && !any.iter().any(Vec::is_empty) {
        found.push(told(format!(
            "{field:?} must validate at least one schema (anyOf)"
        )));
        found.extend(any.into_iter().next().unwrap_or_default());
    }
    let one = outcomes("oneOf");
    let held = one.iter().filter(|broken| broken.is_empty()).count();
    if !one.is_empty() && held != 1 {
        let found_how = match held {
            0 => "Found none valid".to_owned(),
            n => format!("Found {n} valid alternatives"),
        };
        found.push(told(format!(
            "{field:?} must validate one and only one schema (oneOf). {found_how}"
        )));
        if held == 0 {
            found.extend(one.into_iter().next().unwrap_or_default());
        }
    }
    let all = outcomes("allOf");
    let held = all.iter().filter(|broken| broken.is_empty()).count();
    if held != all.len() {
        let none = if held == 0 { ". None validated" } else { "" };
        found.extend(all.into_iter().flatten());
        found.push(told(format!(
            "{field:?} must validate all the schemas (allOf){none}"
        )));
    }
    if let Some(not) = schema.get("not")
        && run(not).is_empty()
    {
        found.push(told(format!(
            "{field:?} must not validate the schema (not)"
        )));
    }
}

/// JSON Schema's name for the type of `value` (`integer` for a whole number).
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as kube-apiserver prints it in `Invalid value: ...`.
fn shown(value: &Value) -> String {
    value.to_string()
}

/// What breaks the node's own constraints, if anything.
fn constraint_error(schema: &Value, value: &Value, path: Path) -> Option<String> {
    let invalid = |what: &Value, text: String| {
        Some(format!(
            "Invalid value: {}: {path} in body {text}",
            shown(what)
        ))
    };
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(shown).collect();
        return Some(format!(
            "Unsupported value: {}: supported values: {}",
            shown(value),
            list.join(", ")
        ));
    }
    match value {
        Value::Number(n) => {
            let n = n.as_f64()?;
            let bound = |key: &str| schema[key].as_f64();
            let exclusive = |key: &str| schema[key] == true;
            if let Some(factor) = bound("multipleOf")
                && factor > 0.0
                && !multiple_of(n, factor)
            {
                return invalid(
                    value,
                    format!("should be a multiple of {}", schema["multipleOf"]),
                );
            }
            if let Some(min) = bound("minimum") {
                if exclusive("exclusiveMinimum") && n <= min {
                    return invalid(
                        value,
                        format!("should be greater than {}", schema["minimum"]),
                    );
                }
                if n < min {
                    return invalid(
                        value,
                        format!("should be greater than or equal to {}", schema["minimum"]),
                    );
                }
            }
            if let Some(max) = bound("maximum") {
                if exclusive("exclusiveMaximum") && n >= max {
                    return invalid(value, format!("should be less than {}", schema["maximum"]));
                }
                if n > max {
                    return invalid(
                        value,
                        format!("should be less than or equal to {}", schema["maximum"]),
                    );
                }
            }
            None
        }
        Value::String(text) => {
            let length = text.chars().count() as u64;
            if let Some(max) = schema["maxLength"].as_u64()
                && length > max
            {
                return invalid(value, format!("should be at most {max} chars long"));
            }
            if let Some(min) = schema["minLength"].as_u64()
                && length < min
            {
                return invalid(value, format!("should be at least {min} chars long"));
            }
            if let Some(pattern) = schema["pattern"].as_str()
                && refuses(pattern, text)
            {
                return invalid(value, format!("should match '{pattern}'"));
            }
            if let Some(format) = schema["format"].as_str()
                && !crate::formats::valid(format, text)
            {
                return invalid(value, format!("must be of type {format}: {}", shown(value)));
            }
            None
        }
        Value::Object(fields) => {
            // Told with the bound, as kube-apiserver tells it, not the count.
            if let Some(max) = schema["maxProperties"].as_u64()
                && fields.len() as u64 > max
            {
                return invalid(&json!(max), format!("should have at most {max} properties"));
            }
            if let Some(min) = schema["minProperties"].as_u64()
                && (fields.len() as u64) < min
            {
                return invalid(
                    &json!(min),
                    format!("should have at least {min} properties"),
                );
            }
            None
        }
        Value::Array(items) => {
            let count = json!(items.len());
            if let Some(max) = schema["maxItems"].as_u64()
                && items.len() as u64 > max
            {
                return invalid(&count, format!("should have at most {max} items"));
            }
            if let Some(min) = schema["minItems"].as_u64()
                && (items.len() as u64) < min
            {
                return invalid(&count, format!("should have at least {min} items"));
            }
            None
        }
        _ => None,
    }
}

/// Whether `text` fails the schema's `pattern` (a pattern that does not compile checks
/// nothing). Each pattern is compiled once: a CRD's schema names the same few on every write.
fn refuses(pattern: &str, text: &str) -> bool {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    /// Enough for every pattern of many CRDs; a schema that names more only recompiles.
    const KEPT: usize = 1024;
    static COMPILED: LazyLock<Mutex<HashMap<String, Option<regex::Regex>>>> =
        LazyLock::new(Mutex::default);
    let compiled = {
        let Ok(mut compiled) = COMPILED.lock() else {
            return regex::Regex::new(pattern).is_ok_and(|re| !re.is_match(text));
        };
        if compiled.len() >= KEPT && !compiled.contains_key(pattern) {
            compiled.clear();
        }
        compiled
            .entry(pattern.to_owned())
            .or_insert_with(|| regex::Regex::new(pattern).ok())
            .clone()
    };
    compiled.is_some_and(|re| !re.is_match(text))
}

/// Whether `n` is a multiple of `factor`, as go-openapi's validator decides it (through the
/// reciprocal for factors below 1, which keeps 1.5 a multiple of 0.5 in floating point).
fn multiple_of(n: f64, factor: f64) -> bool {
    let quotient = if factor < 1.0 {
        (1.0 / factor) * n
    } else {
        n / factor
    };
    quotient == quotient.trunc()
}

fn nullable(schema: &Value) -> bool {
    schema["nullable"] == true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_broken_rule_is_told_in_kube_apiservers_words() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "ratio": {"type": "number"},
                "parts": {"type": "array", "maxItems": 1, "items": {"type": "object",
                    "properties": {"count": {"type": "integer", "exclusiveMinimum": true, "minimum": 0}}}}}}}});
        let cr = |spec: Value| json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec});
        assert_eq!(
            violations(&schema, &cr(json!({"name": "n", "ratio": 2}))),
            []
        );
        assert_eq!(
            violations(&schema, &cr(json!({}))),
            [("spec.name".into(), "Required value".into())]
        );
        let fields =
            |found: Vec<(String, String)>| found.into_iter().map(|f| f.0).collect::<Vec<_>>();
        // A list too long whose item is also wrong, a missing field, a wrong type: all told,
        // and a wrong-typed value is not looked into.
        let several = cr(json!({"ratio": "x", "parts": [{"count": 1}, {"count": 0}]}));
        assert_eq!(
            fields(violations(&schema, &several)),
            [
                "spec.name",
                "spec.ratio",
                "spec.parts",
                "spec.parts[1].count"
            ]
        );
        assert_eq!(
            violations(&schema, &several)[3].1,
            "Invalid value: 0: spec.parts[1].count in body should be greater than 0"
        );
        assert_eq!(
            violations(&schema, &cr(json!({"name": "n", "ratio": "x"})))[0].1,
            r#"Invalid value: "string": spec.ratio in body must be of type number: "string""#
        );
        assert_eq!(
            fields(violations(&schema, &cr(json!({"name": "n", "parts": "x"})))),
            ["spec.parts"]
        );
    }

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
