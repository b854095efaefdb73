//! The values templates compute with: Go's dynamic types as they appear when JSON data is
//! decoded with integers kept apart from floats.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::object::Object;

/// A template value. Lists and maps are shared (`Arc`) so passing them around is cheap.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Go's nil interface (JSON `null`).
    Null,
    /// `bool`.
    Bool(bool),
    /// Go `int`: integer literals and what `len` and most functions return.
    Int(i64),
    /// Go `int64`: integers in JSON data (kept apart because typed parameters tell them apart).
    Int64(i64),
    /// `float64`.
    Float(f64),
    /// `string`.
    String(Arc<str>),
    /// `[]interface{}`.
    List(Arc<Vec<Value>>),
    /// `map[string]interface{}`, iterated in key order as Go does.
    Map(Arc<BTreeMap<String, Value>>),
    /// A Go value with methods (sprig's `*semver.Version`); `==` is `reflect.DeepEqual`, while
    /// the template `eq` compares pointers as Go does.
    Object(Arc<dyn Object>),
}

impl Value {
    /// A string value.
    pub fn string(s: impl Into<Arc<str>>) -> Value {
        Value::String(s.into())
    }

    /// A list value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(items))
    }

    /// A map value.
    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Arc::new(entries))
    }

    /// Go's type name, as error messages show it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::List(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
            Value::Object(object) => object.type_name(),
        }
    }

    /// Go's truth: false, 0, "", empty list/map and nil are false (objects are true).
    pub fn is_true(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Object(_) => true,
        }
    }

    /// The integer inside an `Int` or `Int64`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) | Value::Int64(i) => Some(*i),
            _ => None,
        }
    }

    /// The text of a `String`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl From<serde_json::Value> for Value {
    fn from(value: serde_json::Value) -> Self {
        Value::from(&value)
    }
}

impl From<&serde_json::Value> for Value {
    /// JSON integers that fit `i64` become `Int64`; every other number is a `Float`.
    fn from(value: &serde_json::Value) -> Self {
        match value {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int64(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::string(s.as_str()),
            serde_json::Value::Array(items) => Value::list(items.iter().map(Value::from).collect()),
            serde_json::Value::Object(map) => Value::map(
                map.iter()
                    .map(|(k, v)| (k.clone(), Value::from(v)))
                    .collect(),
            ),
        }
    }
}

impl From<&Value> for serde_json::Value {
    /// Back to JSON; non-finite floats become `null`, objects what their `MarshalJSON` gives.
    fn from(value: &Value) -> Self {
        match value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::List(items) => serde_json::Value::Array(items.iter().map(Into::into).collect()),
            Value::Map(map) => serde_json::Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::from(v)))
                    .collect(),
            ),
            Value::Object(object) => object.json(),
        }
    }
}
