//! Dictionary functions (`dict`, `get`, `set`, `merge`, `dig`...). `set`, `unset` and the
//! merges change the map they are given, as in Go, and return it.

use crate::dict::{Dict, Entries};
use crate::funcs::{FuncError, FuncMap, FuncResult, Function, Param};
use crate::sprig::conv::{is_empty, str_arg, string_list, strval};
use crate::value::{MAX_DEPTH, TooDeep, Value};

use Param::{Any, Map, String as Str};

/// Registers the dictionary functions.
pub fn register(map: &mut FuncMap) {
    map.insert("dict", Function::variadic(&[], Any, |a| Ok(dict(a))));
    map.insert(
        "get",
        Function::new(&[Map, Str], |a| {
            Ok(dict_arg(&a[0])
                .get(str_arg(&a[1]))
                .unwrap_or_else(|| Value::string("")))
        }),
    );
    map.insert(
        "set",
        Function::new(&[Map, Str, Any], |a| {
            let d = dict_arg(&a[0]);
            d.insert(str_arg(&a[1]).to_string(), a[2].clone())?;
            Ok(Value::Map(d))
        }),
    );
    map.insert(
        "unset",
        Function::new(&[Map, Str], |a| {
            let d = dict_arg(&a[0]);
            d.remove(str_arg(&a[1]));
            Ok(Value::Map(d))
        }),
    );
    map.insert(
        "hasKey",
        Function::new(&[Map, Str], |a| {
            Ok(Value::bool(dict_arg(&a[0]).get(str_arg(&a[1])).is_some()))
        }),
    );
    map.insert(
        "pluck",
        Function::variadic(&[Str], Map, |a| {
            let key = str_arg(&a[0]);
            Ok(Value::list(
                a[1..].iter().filter_map(|d| dict_arg(d).get(key)).collect(),
            ))
        }),
    );
    map.insert(
        "keys",
        Function::variadic(&[], Map, |a| {
            Ok(string_list(
                a.iter()
                    .flat_map(|d| entries(d).into_keys().map(String::from)),
            ))
        }),
    );
    map.insert(
        "values",
        Function::new(&[Map], |a| {
            Ok(Value::list(entries(&a[0]).into_values().collect()))
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
                let dst = dict_arg(&a[0]);
                for src in &a[1..] {
                    merge_into(&dst, &entries(src), overwrite, 0)?;
                }
                Ok(Value::Map(dst))
            }),
        );
    }
    map.insert("dig", Function::variadic(&[], Any, dig));
    for name in ["deepCopy", "mustDeepCopy"] {
        map.insert(
            name,
            Function::new(&[Any], |a| match &a[0] {
                Value::Null => Err("Cannot deep copy nil".into()),
                other => Ok(other.deep_copy()?),
            }),
        );
    }
}

/// The map of a map argument (a new empty map for anything else).
fn dict_arg(value: &Value) -> Dict {
    match value {
        Value::Map(map) => map.clone(),
        _ => Dict::default(),
    }
}

/// A copy of the entries of a map argument (none for anything else).
pub fn entries(value: &Value) -> Entries {
    match value {
        Value::Map(map) => map.entries(),
        _ => Entries::new(),
    }
}

fn dict(args: &[Value]) -> Value {
    let mut out = Entries::new();
    for pair in args.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_else(|| Value::string(""));
        out.insert(strval(&pair[0]).into(), value);
    }
    Value::map(out)
}

fn pick(map: &Value, keys: &[Value], keep: bool) -> Value {
    let keys: Vec<&str> = keys.iter().map(str_arg).collect();
    Value::map(
        entries(map)
            .iter()
            .filter(|(k, _)| keys.contains(&k.as_ref()) == keep)
            .map(|(k, v)| (k.clone(), v.clone())),
    )
}

/// mergo's map merge, in place: maps merge recursively; otherwise a source value fills a
/// missing or empty destination value, or replaces it when `overwrite`. A source map stored
/// into `dst` is shared, not copied, as in Go.
fn merge_into(dst: &Dict, src: &Entries, overwrite: bool, depth: usize) -> FuncResult<()> {
    if depth > MAX_DEPTH {
        return Err(TooDeep.into());
    }
    for (key, value) in src {
        match (&dst.get(key), value) {
            (Some(Value::Map(existing)), Value::Map(inner)) => {
                merge_into(existing, &inner.entries(), overwrite, depth + 1)?;
            }
            (Some(existing), _) if !overwrite && !is_empty(existing) => {}
            _ => dst.insert(key.clone(), value.clone())?,
        }
    }
    Ok(())
}

fn dig(args: &[Value]) -> FuncResult {
    if args.len() < 3 {
        return Err("dig needs at least three arguments".into());
    }
    let (dict, rest) = args.split_last().ok_or(FuncError("dig".into()))?;
    let (default, keys) = rest.split_last().ok_or(FuncError("dig".into()))?;
    let Value::Map(first) = dict else {
        return Err(FuncError(format!(
            "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
            dict.type_name()
        )));
    };
    let mut current = first.clone();
    for (i, key) in keys.iter().enumerate() {
        let Value::String(key) = key else {
            return Err(FuncError(format!(
                "interface conversion: interface {{}} is {}, not string",
                key.type_name()
            )));
        };
        let Some(step) = current.get(key.as_ref()) else {
            return Ok(default.clone());
        };
        if i == keys.len() - 1 {
            return Ok(step);
        }
        match &step {
            Value::Map(next) => current = next.clone(),
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
