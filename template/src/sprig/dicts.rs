//! Dictionary functions (`dict`, `get`, `set`, `merge`, `dig`...). Functions that mutate
//! their map in Go return the new map and are marked [`Function::writing_back`] so a variable
//! passed to them sees the change.

use std::collections::BTreeMap;

use crate::funcs::{FuncError, FuncMap, FuncResult, Function, Param};
use crate::sprig::conv::{is_empty, str_arg, string_list, strval};
use crate::value::Value;

use Param::{Any, Map, String as Str};

type Dict = BTreeMap<String, Value>;

/// Registers the dictionary functions.
pub fn register(map: &mut FuncMap) {
    map.insert("dict", Function::variadic(&[], Any, |a| Ok(dict(a))));
    map.insert(
        "get",
        Function::new(&[Map, Str], |a| {
            Ok(entries(&a[0])
                .get(str_arg(&a[1]))
                .cloned()
                .unwrap_or_else(|| Value::string("")))
        }),
    );
    map.insert(
        "set",
        Function::new(&[Map, Str, Any], |a| {
            let mut d = entries(&a[0]).clone();
            d.insert(str_arg(&a[1]).to_string(), a[2].clone());
            Ok(Value::map(d))
        })
        .writing_back(),
    );
    map.insert(
        "unset",
        Function::new(&[Map, Str], |a| {
            let mut d = entries(&a[0]).clone();
            d.remove(str_arg(&a[1]));
            Ok(Value::map(d))
        })
        .writing_back(),
    );
    map.insert(
        "hasKey",
        Function::new(&[Map, Str], |a| {
            Ok(Value::Bool(entries(&a[0]).contains_key(str_arg(&a[1]))))
        }),
    );
    map.insert(
        "pluck",
        Function::variadic(&[Str], Map, |a| {
            let key = str_arg(&a[0]);
            Ok(Value::list(
                a[1..]
                    .iter()
                    .filter_map(|d| entries(d).get(key).cloned())
                    .collect(),
            ))
        }),
    );
    map.insert(
        "keys",
        Function::variadic(&[], Map, |a| {
            Ok(string_list(
                a.iter().flat_map(|d| entries(d).keys().cloned()),
            ))
        }),
    );
    map.insert(
        "values",
        Function::new(&[Map], |a| {
            Ok(Value::list(entries(&a[0]).values().cloned().collect()))
        }),
    );
    map.insert(
        "pick",
        Function::variadic(&[Map], Str, |a| Ok(pick(&a[0], &a[1..], true))),
    );
    map.insert(
        "omit",
        Function::variadic(&[Map], Str, |a| Ok(pick(&a[0], &a[1..], false))),
    );
    for (name, overwrite) in [
        ("merge", false),
        ("mustMerge", false),
        ("mergeOverwrite", true),
        ("mustMergeOverwrite", true),
    ] {
        map.insert(
            name,
            Function::variadic(&[Map], Map, move |a| {
                let mut dst = entries(&a[0]).clone();
                for src in &a[1..] {
                    merge_into(&mut dst, entries(src), overwrite);
                }
                Ok(Value::map(dst))
            })
            .writing_back(),
        );
    }
    map.insert("dig", Function::variadic(&[], Any, dig));
    for name in ["deepCopy", "mustDeepCopy"] {
        map.insert(
            name,
            Function::new(&[Any], |a| match &a[0] {
                Value::Null => Err("Cannot deep copy nil".into()),
                other => Ok(other.clone()),
            }),
        );
    }
}

fn empty_dict() -> &'static Dict {
    static EMPTY: Dict = BTreeMap::new();
    &EMPTY
}

/// The entries of a map argument (an empty map for anything else).
pub fn entries(value: &Value) -> &Dict {
    match value {
        Value::Map(map) => map,
        _ => empty_dict(),
    }
}

fn dict(args: &[Value]) -> Value {
    let mut out = Dict::new();
    for pair in args.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_else(|| Value::string(""));
        out.insert(strval(&pair[0]), value);
    }
    Value::map(out)
}

fn pick(map: &Value, keys: &[Value], keep: bool) -> Value {
    let keys: Vec<&str> = keys.iter().map(str_arg).collect();
    Value::map(
        entries(map)
            .iter()
            .filter(|(k, _)| keys.contains(&k.as_str()) == keep)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// mergo's map merge: maps merge recursively; otherwise a source value fills a missing or
/// empty destination value, or replaces it when `overwrite`.
pub fn merge_into(dst: &mut Dict, src: &Dict, overwrite: bool) {
    for (key, value) in src {
        match dst.get_mut(key) {
            Some(Value::Map(existing)) if matches!(value, Value::Map(_)) => {
                let mut inner = existing.as_ref().clone();
                merge_into(&mut inner, entries(value), overwrite);
                *existing = std::sync::Arc::new(inner);
            }
            Some(existing) => {
                if overwrite || is_empty(existing) {
                    *existing = value.clone();
                }
            }
            None => {
                dst.insert(key.clone(), value.clone());
            }
        }
    }
}

fn dig(args: &[Value]) -> FuncResult {
    if args.len() < 3 {
        return Err("dig needs at least three arguments".into());
    }
    let (dict, rest) = args.split_last().ok_or(FuncError("dig".into()))?;
    let (default, keys) = rest.split_last().ok_or(FuncError("dig".into()))?;
    let Value::Map(mut current) = dict.clone() else {
        return Err(FuncError(format!(
            "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
            dict.type_name()
        )));
    };
    for (i, key) in keys.iter().enumerate() {
        let Value::String(key) = key else {
            return Err(FuncError(format!(
                "interface conversion: interface {{}} is {}, not string",
                key.type_name()
            )));
        };
        let Some(step) = current.get(key.as_ref()).cloned() else {
            return Ok(default.clone());
        };
        if i == keys.len() - 1 {
            return Ok(step);
        }
        match step {
            Value::Map(next) => current = next,
            other => {
                return Err(FuncError(format!(
                    "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                    other.type_name()
                )));
            }
        }
    }
    Ok(default.clone())
}
