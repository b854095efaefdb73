//! The values templates compute with: Go's dynamic types as they appear when JSON data is
//! decoded with integers kept apart from floats.

use std::cell::Cell;
use std::collections::HashSet;
use std::rc::Rc;

use crate::dict::Dict;
use crate::key::{Key, KeyStr};
use crate::object::Object;
use crate::text::Text;

/// How deeply lists and maps may nest for the functions that walk them recursively (copies,
/// encoders, merges). Templates can build deeper values (a loop wrapping a map in a map);
/// those are freed, compared and printed without recursion, and refused by the rest.
pub const MAX_DEPTH: usize = 200;

/// How many values a copy or a conversion may make. One map may sit in many places
/// (`dict "a" $d "b" $d`), so a value of a few maps can unfold into billions of copies.
pub const MAX_NODES: usize = 1 << 20;

/// How much text `%v` and the encoders write of one value (the output limit of a template
/// is smaller; this bounds what a function builds before that limit is checked).
pub const MAX_TEXT: usize = 16 << 20;

/// A value nested deeper than [`MAX_DEPTH`], or unfolding into more than [`MAX_NODES`]
/// values, refused by a recursive walk.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("value nested deeper than {MAX_DEPTH} levels or holding more than {MAX_NODES} values")]
pub struct TooDeep;

/// A template value. Lists are shared (`Rc`) so passing them around is cheap; maps are
/// references, as in Go (see [`Dict`]).
///
/// Every payload is one word, an integer or a pointer ([`Flag`], [`F64`]), so a value is a
/// pair of words: calls return it in two registers and copies move it as two words. (A
/// one-byte `bool` or an `f64` payload made it a 16-byte block, copied with loads that
/// stalled on the smaller stores just before them; a cached render took 23% longer.)
#[derive(Debug, Clone)]
pub enum Value {
    /// Go's nil interface (JSON `null`).
    Null,
    /// `bool`.
    Bool(Flag),
    /// Go `int`: integer literals and what `len` and most functions return.
    Int(i64),
    /// Go `int64`: integers in JSON data (kept apart because typed parameters tell them apart).
    Int64(i64),
    /// `float64`.
    Float(F64),
    /// `string`.
    String(Text),
    /// `[]interface{}`.
    List(Rc<Vec<Value>>),
    /// `map[string]interface{}`, iterated in key order as Go does.
    Map(Dict),
    /// A Go value with methods (sprig's `*semver.Version`); `==` is `reflect.DeepEqual`, while
    /// the template `eq` compares pointers as Go does.
    Object(Rc<Box<dyn Object>>),
}

// Two words, so evaluation results are small to move (see `text`).
const _: () = assert!(std::mem::size_of::<Value>() == 16);
const _: () = assert!(std::mem::size_of::<Option<Value>>() == 16);

/// A `bool` in a whole word, so that a [`Value`] is a pair of words (see there).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Flag(u64);

impl Flag {
    /// The `bool`.
    #[inline]
    pub fn get(self) -> bool {
        self.0 != 0
    }
}

impl From<bool> for Flag {
    #[inline]
    fn from(b: bool) -> Self {
        Flag(u64::from(b))
    }
}

impl std::fmt::Debug for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// A `float64` kept as its bits, so that a [`Value`] is a pair of words; compared as a float.
#[derive(Clone, Copy)]
pub struct F64(u64);

impl F64 {
    /// The float.
    #[inline]
    pub fn get(self) -> f64 {
        f64::from_bits(self.0)
    }
}

impl From<f64> for F64 {
    #[inline]
    fn from(f: f64) -> Self {
        F64(f.to_bits())
    }
}

impl PartialEq for F64 {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl PartialOrd for F64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.get().partial_cmp(&other.get())
    }
}

impl std::fmt::Debug for F64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Value {
    /// A `bool` value.
    #[inline]
    pub fn bool(b: bool) -> Value {
        Value::Bool(Flag::from(b))
    }

    /// A `float64` value.
    #[inline]
    pub fn float(f: f64) -> Value {
        Value::Float(F64::from(f))
    }

    /// A string value.
    pub fn string(s: impl Into<Text>) -> Value {
        Value::String(s.into())
    }

    /// A list value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(items))
    }

    /// A map value.
    pub fn map<K: Into<Key>>(entries: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Map(Dict::new(
            entries.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        ))
    }

    /// The value with new copies of every map and list inside it (sprig's `deepCopy`).
    pub fn deep_copy(&self) -> Result<Value, TooDeep> {
        self.deep_copy_at(0, &mut { MAX_NODES })
    }

    pub(crate) fn deep_copy_at(&self, depth: usize, budget: &mut usize) -> Result<Value, TooDeep> {
        spend(depth, budget)?;
        Ok(match self {
            Value::List(items) => Value::list(
                items
                    .iter()
                    .map(|item| item.deep_copy_at(depth + 1, budget))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Map(map) => Value::Map(map.deep_copy_at(depth, budget)?),
            other => other.clone(),
        })
    }

    /// The value as JSON; non-finite floats become `null`, objects what their `MarshalJSON`
    /// gives.
    pub fn to_json(&self) -> Result<serde_json::Value, TooDeep> {
        self.to_json_at(0, &mut { MAX_NODES })
    }

    fn to_json_at(&self, depth: usize, budget: &mut usize) -> Result<serde_json::Value, TooDeep> {
        spend(depth, budget)?;
        Ok(match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(b.get()),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(f.get())
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::List(items) => serde_json::Value::Array(
                items
                    .iter()
                    .map(|item| item.to_json_at(depth + 1, budget))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Map(map) => serde_json::Value::Object(
                map.read()
                    .iter()
                    .map(|(k, v)| Ok((k.to_string(), v.to_json_at(depth + 1, budget)?)))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(object) => object.json(),
        })
    }

    /// The address of a list or map, the same for every holder of it.
    pub fn identity(&self) -> Option<usize> {
        match self {
            Value::List(items) => Some(Rc::as_ptr(items).addr()),
            Value::Map(map) => Some(map.identity()),
            _ => None,
        }
    }

    /// Whether this is a list or a map (which may hold other values).
    pub fn has_children(&self) -> bool {
        matches!(self, Value::List(_) | Value::Map(_))
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
            Value::Bool(b) => b.get(),
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => f.get() != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Object(_) => true,
        }
    }

    /// The value under `path` (`.a.b.c`) when every step is a map holding the key, read
    /// without copying the maps on the way; `None` otherwise, and for paths longer than 16.
    pub fn at_path(&self, path: &[String]) -> Option<Value> {
        const MAX_PATH: usize = 16;
        if path.len() > MAX_PATH {
            return None;
        }
        self.at_path_unbounded(path)
    }

    fn at_path_unbounded(&self, path: &[String]) -> Option<Value> {
        let (Value::Map(map), Some((key, rest))) = (self, path.split_first()) else {
            return None;
        };
        let entries = map.read();
        let found = entries.get(KeyStr::new(key))?;
        if rest.is_empty() {
            Some(found.clone())
        } else {
            found.at_path_unbounded(rest)
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
            serde_json::Value::Bool(b) => Value::bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int64(i),
                None => Value::float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::string(s.as_str()),
            serde_json::Value::Array(items) => Value::list(items.iter().map(Value::from).collect()),
            serde_json::Value::Object(map) => {
                Value::map(map.iter().map(|(k, v)| (k.as_str(), Value::from(v))))
            }
        }
    }
}

/// Counts one more value of a copy or conversion at `depth` against the limits.
fn spend(depth: usize, budget: &mut usize) -> Result<(), TooDeep> {
    if depth > MAX_DEPTH || *budget == 0 {
        return Err(TooDeep);
    }
    *budget -= 1;
    Ok(())
}

impl PartialEq for Value {
    /// `reflect.DeepEqual`, walking nested lists and maps without recursion and, as Go does,
    /// comparing a pair of lists or maps met twice only once.
    fn eq(&self, other: &Value) -> bool {
        let mut pending = Vec::new();
        let mut seen = HashSet::new();
        if !shallow_eq(self, other, &mut pending) {
            return false;
        }
        while let Some((a, b)) = pending.pop() {
            if let (Some(x), Some(y)) = (a.identity(), b.identity())
                && !seen.insert((x, y))
            {
                continue;
            }
            if !shallow_eq(&a, &b, &mut pending) {
                return false;
            }
        }
        true
    }
}

/// Compares `a` and `b` but for their children, which it adds to `pending`.
fn shallow_eq(a: &Value, b: &Value, pending: &mut Vec<(Value, Value)>) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) | (Value::Int64(x), Value::Int64(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Object(x), Value::Object(y)) => ***x == ***y,
        (Value::List(x), Value::List(y)) => {
            if Rc::ptr_eq(x, y) {
                return true;
            }
            pending.extend(x.iter().cloned().zip(y.iter().cloned()));
            x.len() == y.len()
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.same(y) {
                return true;
            }
            let (x, y) = (x.read(), y.read());
            pending.extend(x.values().cloned().zip(y.values().cloned()));
            x.len() == y.len() && x.keys().eq(y.keys())
        }
        _ => false,
    }
}

thread_local! {
    /// How many [`Value::drop`]s are under way on this thread, one inside the other.
    static DROP_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// How deep drops recurse before freeing the rest one level at a time (a few KiB of stack).
const RECURSIVE_DROP_DEPTH: usize = 64;

impl Drop for Value {
    /// Frees nested lists and maps by recursion up to [`RECURSIVE_DROP_DEPTH`] levels, then
    /// one level at a time, so a value nested deeper than the stack allows is freed too.
    fn drop(&mut self) {
        // Most drops are of scalars and of clones whose original lives on: nothing to walk.
        match self {
            Value::List(items) if Rc::strong_count(items) == 1 => {}
            Value::Map(map) if !map.shared() => {}
            _ => return,
        }
        // A value dropped while its thread is torn down finds no counter: it walks.
        let depth = DROP_DEPTH
            .try_with(Cell::get)
            .unwrap_or(RECURSIVE_DROP_DEPTH);
        if depth < RECURSIVE_DROP_DEPTH {
            DROP_DEPTH.with(|d| d.set(depth + 1));
            free_children(self);
            DROP_DEPTH.with(|d| d.set(depth));
            return;
        }
        let mut pending = Vec::new();
        take_children(self, &mut pending);
        while let Some(mut value) = pending.pop() {
            take_children(&mut value, &mut pending);
        }
    }
}

/// Frees the children of a list or map held nowhere else, each by its own `drop`.
fn free_children(value: &mut Value) {
    match value {
        Value::List(items) => {
            if let Some(items) = Rc::get_mut(items) {
                drop(std::mem::take(items));
            }
        }
        Value::Map(map) => {
            if let Some(entries) = map.unique_entries() {
                drop(std::mem::take(entries));
            }
        }
        _ => {}
    }
}

/// Moves the children of a list or map about to be freed (held nowhere else) into `pending`.
fn take_children(value: &mut Value, pending: &mut Vec<Value>) {
    match value {
        // A value held elsewhere too (most: field reads are clones) is not freed here.
        Value::List(items) if Rc::strong_count(items) > 1 => {}
        Value::Map(map) if map.shared() => {}
        Value::List(items) => {
            if let Some(items) = Rc::get_mut(items) {
                pending.extend(items.drain(..).filter(Value::has_children));
            }
        }
        Value::Map(map) => {
            if let Some(entries) = map.unique_entries() {
                pending.extend(
                    std::mem::take(entries)
                        .into_values()
                        .filter(Value::has_children),
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn floats_and_bools_held_as_words_compare_as_themselves() {
        assert_ne!(Value::float(f64::NAN), Value::float(f64::NAN));
        assert_eq!(Value::float(0.0), Value::float(-0.0));
        assert!(F64::from(-1.5) < F64::from(2.0));
        assert_eq!(F64::from(-1.5).get(), -1.5);
        assert!(Flag::from(true).get() && !Flag::from(false).get());
        assert_ne!(Value::bool(true), Value::bool(false));
        assert_ne!(Value::bool(false), Value::Int(0));
    }

    #[test]
    fn at_path_reads_nested_maps_and_declines_the_rest() {
        let value = Value::from(serde_json::json!({
            "metadata": {"name": "web", "labels": null},
            "spec": {"ports": [{"port": 443}]}
        }));
        let name = value.at_path(&path(&["metadata", "name"]));
        assert_eq!(name.as_ref().and_then(Value::as_str), Some("web"));
        // A key holding null is found (the executor turns it into no value).
        assert!(matches!(
            value.at_path(&path(&["metadata", "labels"])),
            Some(Value::Null)
        ));
        // Missing keys, lists and scalars on the way are left to the executor's walk.
        assert!(value.at_path(&path(&["metadata", "uid"])).is_none());
        assert!(value.at_path(&path(&["spec", "ports", "port"])).is_none());
        assert!(value.at_path(&path(&["metadata", "name", "x"])).is_none());
        // So are paths longer than the walk holds locks for.
        let mut deep = Value::Int(1);
        for _ in 0..17 {
            deep = Value::map([("a", deep)]);
        }
        assert!(deep.at_path(&path(&["a"; 16])).is_some());
        assert!(deep.at_path(&path(&["a"; 17])).is_none());
    }
}
