//! text/template's own functions: `index`, `slice`, `len`, `not`, the comparisons, the
//! printers and the escapers (`and`/`or` short-circuit in the executor).

use std::cmp::Ordering;
use std::fmt::Write;
use std::rc::Rc;
use std::sync::OnceLock;

use crate::funcs::{FuncError, FuncMap, FuncResult, Function, Param};
use crate::gofmt;
use crate::value::Value;

/// The builtin function map, built once.
pub fn builtin_funcs() -> &'static FuncMap {
    static BUILTINS: OnceLock<FuncMap> = OnceLock::new();
    BUILTINS.get_or_init(|| {
        use Param::{Any, String};
        let mut map = FuncMap::new();
        let short_circuit = |_: &[Value]| -> FuncResult { Err("evaluated by the executor".into()) };
        map.insert("and", Function::variadic(&[Any], Any, short_circuit));
        map.insert("or", Function::variadic(&[Any], Any, short_circuit));
        map.insert(
            "call",
            Function::variadic(&[Any], Any, |args| match args.first() {
                Some(Value::Null) | None => Err("call of nil".into()),
                Some(other) => Err(format!("non-function of type {}", other.type_name()).into()),
            }),
        );
        map.insert(
            "html",
            Function::variadic(&[], Any, |args| {
                Ok(Value::string(html_escape(&eval_args(args))))
            }),
        );
        map.insert(
            "js",
            Function::variadic(&[], Any, |args| {
                Ok(Value::string(js_escape(&eval_args(args))))
            }),
        );
        map.insert(
            "urlquery",
            Function::variadic(&[], Any, |args| {
                Ok(Value::string(query_escape(&eval_args(args))))
            }),
        );
        map.insert(
            "index",
            Function::variadic(&[Any], Any, |args| index(&args[0], &args[1..])),
        );
        map.insert(
            "slice",
            Function::variadic(&[Any], Any, |args| slice(&args[0], &args[1..])),
        );
        map.insert("len", Function::new(&[Any], |args| length(&args[0])));
        map.insert(
            "not",
            Function::new(&[Any], |args| Ok(Value::bool(!args[0].is_true()))),
        );
        map.insert(
            "print",
            Function::variadic(&[], Any, |args| Ok(Value::string(gofmt::sprint(args)))),
        );
        map.insert(
            "printf",
            Function::variadic(&[String], Any, |args| {
                let format = args[0].as_str().unwrap_or_default();
                Ok(Value::string(gofmt::sprintf(format, &args[1..])))
            }),
        );
        map.insert(
            "println",
            Function::variadic(&[], Any, |args| Ok(Value::string(gofmt::sprintln(args)))),
        );
        map.insert(
            "eq",
            Function::variadic(&[Any], Any, |args| {
                eq(&args[0], &args[1..]).map(Value::bool)
            }),
        );
        map.insert(
            "ne",
            Function::new(&[Any, Any], |args| {
                Ok(Value::bool(!eq_one(&args[0], &args[1])?))
            }),
        );
        map.insert(
            "lt",
            Function::new(&[Any, Any], |args| Ok(Value::bool(lt(&args[0], &args[1])?))),
        );
        map.insert(
            "le",
            Function::new(&[Any, Any], |args| Ok(Value::bool(le(&args[0], &args[1])?))),
        );
        map.insert(
            "gt",
            Function::new(&[Any, Any], |args| {
                Ok(Value::bool(!le(&args[0], &args[1])?))
            }),
        );
        map.insert(
            "ge",
            Function::new(&[Any, Any], |args| {
                Ok(Value::bool(!lt(&args[0], &args[1])?))
            }),
        );
        map
    })
}

/// The text of the escapers' arguments: a lone string as is, otherwise `fmt.Sprint`, with
/// nil printed as Go's template printer prints a missing value.
fn eval_args(args: &[Value]) -> String {
    if let [Value::String(s)] = args {
        return s.to_string();
    }
    let printable: Vec<Value> = args
        .iter()
        .map(|arg| match arg {
            Value::Null => Value::string("<no value>"),
            other => other.clone(),
        })
        .collect();
    gofmt::sprint(&printable)
}

/// `template.HTMLEscapeString`.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// `template.JSEscapeString`.
pub fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c if !c.is_ascii() && !is_print(c) => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

fn is_print(c: char) -> bool {
    !c.is_control() && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{AD}')
}

/// `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

fn index_arg(index: &Value, cap: usize) -> Result<usize, FuncError> {
    let x = match index {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Null => return Err("cannot index slice/array with nil".into()),
        other => {
            return Err(format!("cannot index slice/array with type {}", other.type_name()).into());
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(format!("index out of range: {x}").into());
    }
    Ok(x as usize)
}

/// `index item i j ...`.
pub fn index(item: &Value, indexes: &[Value]) -> FuncResult {
    if matches!(item, Value::Null) {
        return Err("index of untyped nil".into());
    }
    let mut item = item.clone();
    for index in indexes {
        item = match &item {
            Value::Null => return Err("index of nil pointer".into()),
            Value::List(list) => {
                let i = index_arg(index, list.len())?;
                list.get(i)
                    .cloned()
                    .ok_or_else(|| FuncError::from("reflect: slice index out of range"))?
            }
            Value::String(s) => {
                let i = index_arg(index, s.len())?;
                let byte = s
                    .as_bytes()
                    .get(i)
                    .ok_or_else(|| FuncError::from("reflect: string index out of range"))?;
                Value::Int(i64::from(*byte))
            }
            Value::Map(map) => match index {
                Value::String(key) => map.get(key.as_ref()).unwrap_or(Value::Null),
                Value::Null => return Err("value is nil; should be of type string".into()),
                other => {
                    return Err(
                        format!("value has type {}; should be string", other.type_name()).into(),
                    );
                }
            },
            other => return Err(format!("can't index item of type {}", other.type_name()).into()),
        };
    }
    Ok(item)
}

/// `slice item i j k`.
pub fn slice(item: &Value, indexes: &[Value]) -> FuncResult {
    if matches!(item, Value::Null) {
        return Err("slice of untyped nil".into());
    }
    if indexes.len() > 3 {
        return Err(format!("too many slice indexes: {}", indexes.len()).into());
    }
    let len = match item {
        Value::String(s) => {
            if indexes.len() == 3 {
                return Err("cannot 3-index slice a string".into());
            }
            s.len()
        }
        Value::List(list) => list.len(),
        other => return Err(format!("can't slice item of type {}", other.type_name()).into()),
    };
    let mut idx = [0, len, len];
    for (i, index) in indexes.iter().enumerate() {
        idx[i] = index_arg(index, len)?;
    }
    if idx[0] > idx[1] {
        return Err(format!("invalid slice index: {} > {}", idx[0], idx[1]).into());
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(format!("invalid slice index: {} > {}", idx[1], idx[2]).into());
    }
    Ok(match item {
        Value::String(s) => Value::string(
            s.get(idx[0]..idx[1])
                .ok_or_else(|| FuncError::from("slice splits a UTF-8 character"))?,
        ),
        Value::List(list) => Value::list(list[idx[0]..idx[1]].to_vec()),
        _ => Value::Null,
    })
}

/// `len item`.
pub fn length(item: &Value) -> FuncResult {
    match item {
        Value::String(s) => Ok(Value::Int(s.len() as i64)),
        Value::List(list) => Ok(Value::Int(list.len() as i64)),
        Value::Map(map) => Ok(Value::Int(map.len() as i64)),
        Value::Null => Err("reflect: call of reflect.Value.Type on zero Value".into()),
        other => Err(format!("len of type {}", other.type_name()).into()),
    }
}

/// Go's comparison kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    String,
}

fn basic_kind(value: &Value) -> Kind {
    match value {
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) | Value::Int64(_) => Kind::Int,
        Value::Float(_) => Kind::Float,
        Value::String(_) => Kind::String,
        _ => Kind::Invalid,
    }
}

/// `eq a b c ...`: whether `a` equals any of the others.
pub fn eq(first: &Value, others: &[Value]) -> Result<bool, FuncError> {
    if others.is_empty() {
        return Err("missing argument for comparison".into());
    }
    for other in others {
        if eq_one(first, other)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn eq_one(a: &Value, b: &Value) -> Result<bool, FuncError> {
    let (ka, kb) = (basic_kind(a), basic_kind(b));
    if ka != kb {
        if !matches!(a, Value::Null) && !matches!(b, Value::Null) {
            return Err("incompatible types for comparison".into());
        }
        return Ok(false);
    }
    Ok(match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (x, y) if ka == Kind::Int => x.as_int() == y.as_int(),
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        // Pointers (*semver.Version) are equal when they are the same pointer; struct values
        // when their fields are.
        (Value::Object(x), Value::Object(y)) if x.type_name() == y.type_name() => {
            if x.kind_name() == "ptr" {
                std::ptr::addr_eq(Rc::as_ptr(x), Rc::as_ptr(y))
            } else {
                x == y
            }
        }
        // Objects of two types, or values of two kinds.
        (x, y)
            if matches!((x, y), (Value::Object(_), Value::Object(_)))
                || std::mem::discriminant(x) != std::mem::discriminant(y) =>
        {
            return Err(format!(
                "non-comparable types {}: {}, {}: {}",
                gofmt::to_v(x),
                x.type_name(),
                y.type_name(),
                gofmt::to_v(y)
            )
            .into());
        }
        (_, y) => {
            return Err(
                format!("non-comparable type {}: {}", gofmt::to_v(y), y.type_name()).into(),
            );
        }
    })
}

fn ordering(a: &Value, b: &Value) -> Result<Option<Ordering>, FuncError> {
    let (ka, kb) = (basic_kind(a), basic_kind(b));
    if ka == Kind::Invalid || kb == Kind::Invalid {
        return Err("invalid type for comparison".into());
    }
    if ka != kb {
        return Err("incompatible types for comparison".into());
    }
    Ok(match (a, b) {
        (Value::Bool(_), _) => return Err("invalid type for comparison".into()),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (x, y) => x.as_int().cmp(&y.as_int()).into(),
    })
}

fn lt(a: &Value, b: &Value) -> Result<bool, FuncError> {
    Ok(ordering(a, b)? == Some(Ordering::Less))
}

fn le(a: &Value, b: &Value) -> Result<bool, FuncError> {
    let less = lt(a, b)?;
    Ok(less || eq_one(a, b)?)
}
