//! JSON as Go's `encoding/json` writes and reads it for `interface{}` values: sorted map keys,
//! HTML-safe escaping unless raw, Go's float formatting, and every decoded number a float64.

use std::fmt::Write;

use crate::funcs::{FuncMap, FuncResult, Function, Param};
use crate::sprig::conv::str_arg;
use crate::value::{MAX_DEPTH, MAX_TEXT, TooDeep, Value};

/// Registers `toJson`, `fromJson` and their variants.
pub fn register(map: &mut FuncMap) {
    let encoders: [(&str, bool, Option<&str>); 3] = [
        ("Json", true, None),
        ("PrettyJson", true, Some("  ")),
        ("RawJson", false, None),
    ];
    for (suffix, html, indent) in encoders {
        map.insert(
            format!("to{suffix}"),
            Function::new(&[Param::Any], move |a| {
                Ok(Value::string(
                    encode(&a[0], html, indent).unwrap_or_default(),
                ))
            }),
        );
        map.insert(
            format!("mustTo{suffix}"),
            Function::new(&[Param::Any], move |a| {
                encode(&a[0], html, indent)
                    .map(Value::string)
                    .map_err(Into::into)
            }),
        );
    }
    map.insert(
        "fromJson",
        Function::new(&[Param::String], |a| {
            Ok(decode(str_arg(&a[0])).unwrap_or(Value::Null))
        }),
    );
    map.insert(
        "mustFromJson",
        Function::new(&[Param::String], |a| -> FuncResult {
            decode(str_arg(&a[0])).map_err(Into::into)
        }),
    );
}

/// Decodes JSON as Go does into `interface{}`: numbers become float64.
pub fn decode(text: &str) -> Result<Value, String> {
    let json: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(floats(&json))
}

/// A JSON value with every number as a float.
pub fn floats(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Number(n) => Value::float(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::Array(items) => Value::list(items.iter().map(floats).collect()),
        serde_json::Value::Object(map) => {
            Value::map(map.iter().map(|(k, v)| (k.clone(), floats(v))))
        }
        other => Value::from(other),
    }
}

/// `json.Marshal` (`html` escaping of `<>&`) or `MarshalIndent` with `indent`.
pub fn encode(value: &Value, html: bool, indent: Option<&str>) -> Result<String, String> {
    let mut out = String::new();
    write_value(&mut out, value, html, indent, 0)?;
    Ok(out)
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(indent) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    }
}

fn write_value(
    out: &mut String,
    value: &Value,
    html: bool,
    indent: Option<&str>,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH || out.len() > MAX_TEXT {
        return Err(TooDeep.to_string());
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if b.get() { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        // Its MarshalJSON.
        Value::Object(object) => {
            write_value(out, &Value::from(&object.json()), html, indent, depth)?;
        }
        Value::Float(f) => out.push_str(&format_float(f.get())?),
        Value::String(s) => write_string(out, s, html),
        Value::List(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_value(out, item, html, indent, depth + 1)?;
            }
            newline(out, indent, depth);
            out.push(']');
        }
        Value::Map(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (k, v)) in map.read().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_string(out, k, html);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_value(out, v, html, indent, depth + 1)?;
            }
            newline(out, indent, depth);
            out.push('}');
        }
    }
    Ok(())
}

/// Go's JSON float: shortest digits, exponent form below 1e-6 and from 1e21.
pub fn format_float(f: f64) -> Result<String, String> {
    if !f.is_finite() {
        return Err(format!(
            "json: unsupported value: {}",
            crate::gofmt::format_float_g(f, None, false)
        ));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        let digits = if exp < 0 {
            format!("{}", exp.unsigned_abs())
        } else {
            format!("{exp:02}")
        };
        return Ok(format!("{mantissa}e{sign}{digits}"));
    }
    Ok(format!("{f}"))
}

/// A JSON string literal as Go writes it.
pub fn write_string(out: &mut String, s: &str, html: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if html => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
