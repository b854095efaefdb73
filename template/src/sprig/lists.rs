//! List functions (`list`, `first`, `append`, `uniq`, `slice`, `until`, `seq`...). Sprig
//! panics on a non-list where the `must*` variant returns an error; a template sees both as an
//! error, so the pairs share one body.

use crate::funcs::{FuncError, FuncMap, FuncResult, Function, Param};
use crate::sprig::conv::{MAX_OUTPUT, int_arg, is_empty, kind_name, list_items, to_int64};
use crate::sprig::strings::to_strings;
use crate::value::Value;

use Param::{Any, Int};

/// Registers the list functions.
pub fn register(map: &mut FuncMap) {
    for name in ["list", "tuple"] {
        map.insert(
            name,
            Function::variadic(&[], Any, |a| Ok(Value::list(a.to_vec()))),
        );
    }
    both(map, "first", Function::new(&[Any], |a| first(&a[0])));
    both(map, "last", Function::new(&[Any], |a| last(&a[0])));
    both(map, "rest", Function::new(&[Any], |a| rest(&a[0])));
    both(map, "initial", Function::new(&[Any], |a| initial(&a[0])));
    both(map, "reverse", Function::new(&[Any], |a| reverse(&a[0])));
    both(map, "uniq", Function::new(&[Any], |a| uniq(&a[0])));
    both(map, "compact", Function::new(&[Any], |a| compact(&a[0])));
    let append = Function::new(&[Any, Any], |a| push(&a[0], &a[1], false));
    for name in ["append", "push", "mustAppend", "mustPush"] {
        map.insert(name, append.clone());
    }
    both(
        map,
        "prepend",
        Function::new(&[Any, Any], |a| push(&a[0], &a[1], true)),
    );
    both(
        map,
        "without",
        Function::variadic(&[Any], Any, |a| without(&a[0], &a[1..])),
    );
    both(
        map,
        "has",
        Function::new(&[Any, Any], |a| has(&a[0], &a[1])),
    );
    both(
        map,
        "slice",
        Function::variadic(&[Any], Any, |a| slice(&a[0], &a[1..])),
    );
    both(
        map,
        "chunk",
        Function::new(&[Int, Any], |a| chunk(int_arg(&a[0]), &a[1])),
    );
    map.insert(
        "concat",
        Function::variadic(&[], Any, |a| {
            let mut out = Vec::new();
            for list in a {
                match list {
                    Value::List(items) => out.extend(items.iter().cloned()),
                    other => {
                        return Err(
                            format!("Cannot concat type {} as list", kind_name(other)).into()
                        );
                    }
                }
            }
            Ok(Value::list(out))
        }),
    );
    map.insert(
        "sortAlpha",
        Function::new(&[Any], |a| {
            let mut items = match &a[0] {
                Value::List(_) => to_strings(&a[0]),
                other => vec![crate::sprig::conv::strval(other)],
            };
            items.sort();
            Ok(crate::sprig::conv::string_list(items))
        }),
    );
    map.insert(
        "until",
        Function::new(&[Int], |a| {
            let count = int_arg(&a[0]);
            let step = if count < 0 { -1 } else { 1 };
            ints(until_step(0, count, step)?)
        }),
    );
    map.insert(
        "untilStep",
        Function::new(&[Int, Int, Int], |a| {
            ints(until_step(int_arg(&a[0]), int_arg(&a[1]), int_arg(&a[2]))?)
        }),
    );
    map.insert("seq", Function::variadic(&[], Int, seq));
}

/// Registers `name` and `mustName` with the same body.
fn both(map: &mut FuncMap, name: &str, function: Function) {
    let mut must = String::from("must");
    must.push_str(&name[..1].to_uppercase());
    must.push_str(&name[1..]);
    map.insert(must, function.clone());
    map.insert(name, function);
}

fn ints(values: Vec<i64>) -> FuncResult {
    Ok(Value::list(values.into_iter().map(Value::Int).collect()))
}

fn first(list: &Value) -> FuncResult {
    Ok(list_items(list, "first")?
        .first()
        .cloned()
        .unwrap_or(Value::Null))
}

fn last(list: &Value) -> FuncResult {
    Ok(list_items(list, "last")?
        .last()
        .cloned()
        .unwrap_or(Value::Null))
}

fn rest(list: &Value) -> FuncResult {
    let items = list_items(list, "rest")?;
    Ok(Value::list(items.get(1..).unwrap_or_default().to_vec()))
}

fn initial(list: &Value) -> FuncResult {
    let items = list_items(list, "initial")?;
    let end = items.len().saturating_sub(1);
    Ok(Value::list(items[..end].to_vec()))
}

fn reverse(list: &Value) -> FuncResult {
    let mut items = list_items(list, "reverse")?.to_vec();
    items.reverse();
    Ok(Value::list(items))
}

fn uniq(list: &Value) -> FuncResult {
    let mut out: Vec<Value> = Vec::new();
    for item in list_items(list, "uniq")? {
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    Ok(Value::list(out))
}

fn compact(list: &Value) -> FuncResult {
    let items = list_items(list, "compact")?;
    Ok(Value::list(
        items.iter().filter(|v| !is_empty(v)).cloned().collect(),
    ))
}

fn push(list: &Value, value: &Value, front: bool) -> FuncResult {
    let what = if front { "prepend" } else { "push" };
    let items = list_items(list, what)?;
    let mut out = Vec::with_capacity(items.len() + 1);
    if front {
        out.push(value.clone());
    }
    out.extend(items.iter().cloned());
    if !front {
        out.push(value.clone());
    }
    Ok(Value::list(out))
}

fn without(list: &Value, omit: &[Value]) -> FuncResult {
    let items = list_items(list, "without")?;
    Ok(Value::list(
        items
            .iter()
            .filter(|item| !omit.contains(item))
            .cloned()
            .collect(),
    ))
}

fn has(needle: &Value, haystack: &Value) -> FuncResult {
    match haystack {
        Value::Null => Ok(Value::bool(false)),
        other => Ok(Value::bool(list_items(other, "has")?.contains(needle))),
    }
}

fn slice(list: &Value, indices: &[Value]) -> FuncResult {
    let items = list_items(list, "slice")?;
    let len = items.len() as i64;
    let (start, end) = match indices {
        [] => (0, len),
        [start] => (to_int64(start), len),
        [start, end, ..] => (to_int64(start), to_int64(end)),
    };
    if start < 0 || end > len || start > end {
        return Err(format!("runtime error: slice bounds out of range [{start}:{end}]").into());
    }
    Ok(Value::list(items[start as usize..end as usize].to_vec()))
}

fn chunk(size: i64, list: &Value) -> FuncResult {
    let items = list_items(list, "chunk")?;
    if size <= 0 {
        return Err("runtime error: integer divide by zero".into());
    }
    Ok(Value::list(
        items
            .chunks(size as usize)
            .map(|c| Value::list(c.to_vec()))
            .collect(),
    ))
}

/// sprig's `untilStep`, refusing ranges longer than the output limit allows.
pub fn until_step(start: i64, stop: i64, step: i64) -> Result<Vec<i64>, FuncError> {
    let count = if step == 0 || (step > 0 && start >= stop) || (step < 0 && start <= stop) {
        0
    } else {
        let span = (i128::from(stop) - i128::from(start)).unsigned_abs();
        span.div_ceil(i128::from(step).unsigned_abs())
    };
    if count > (MAX_OUTPUT / 2) as u128 {
        return Err(format!("a range of {count} numbers is longer than allowed").into());
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut i = start;
    for _ in 0..count {
        out.push(i);
        i = i.wrapping_add(step);
    }
    Ok(out)
}

fn seq(params: &[Value]) -> FuncResult {
    let p: Vec<i64> = params.iter().map(int_arg).collect();
    let (start, end, step) = match p[..] {
        [end] => (1, end, if end < 1 { -1 } else { 1 }),
        [start, end] => (start, end, if end < start { -1 } else { 1 }),
        [start, step, end] => {
            if end < start && step > 0 {
                return Ok(Value::string(""));
            }
            (start, end, step)
        }
        _ => return Ok(Value::string("")),
    };
    let increment = if end < start { -1 } else { 1 };
    let values = until_step(start, end.saturating_add(increment), step)?;
    let text: Vec<String> = values.iter().map(i64::to_string).collect();
    Ok(Value::string(text.join(" ")))
}
