//! Conversions sprig applies to its `interface{}` arguments: `strval` (fmt's `%v`), spf13/cast's
//! `ToInt64`/`ToFloat64`, reflection's emptiness, and the shared bounds.

use crate::funcs::{FuncError, FuncResult};
use crate::gofmt;
use crate::value::Value;

/// Largest string or list a function builds (the executor's default output limit, 8 MiB).
pub const MAX_OUTPUT: usize = 8 << 20;

/// sprig's `strval`: strings as they are, anything else through `fmt.Sprintf("%v")`.
pub fn strval(value: &Value) -> String {
    match value {
        Value::String(s) => s.to_string(),
        other => gofmt::to_v(other),
    }
}

/// The `i64` of a parameter declared `int`/`int64` (already checked by the executor).
pub fn int_arg(value: &Value) -> i64 {
    value.as_int().unwrap_or(0)
}

/// The text of a parameter declared `string`.
pub fn str_arg(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// Removes a trailing `.000` fraction, as cast does before parsing an integer.
fn trim_zero_decimal(s: &str) -> &str {
    match s.split_once('.') {
        Some((int, frac)) if !int.is_empty() && frac.bytes().all(|b| b == b'0') => int,
        _ => s,
    }
}

/// `strconv.ParseInt(s, 0, 64)`: optional sign, `0x`/`0o`/`0b`/leading-`0` prefixes, `_`s.
pub fn parse_int_base0(s: &str) -> Option<i64> {
    let (negative, magnitude) = parse_go_integer(s)?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// The sign and 64-bit magnitude of an integer as `strconv` reads it with base 0: optional
/// sign, `0x`/`0o`/`0b`/leading-`0` prefixes, `_`s between the digits of a prefixed number.
pub fn parse_go_integer(s: &str) -> Option<(bool, u64)> {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest.to_string())
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest.to_string())
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest.to_string())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string())
    } else {
        (10, lower.clone())
    };
    let digits = if radix == 10 {
        digits
    } else {
        digits.trim_start_matches('_').replace('_', "")
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    Some((negative, u64::from_str_radix(&digits, radix).ok()?))
}

/// spf13/cast `ToInt64`: numbers truncated, strings parsed (base prefixes allowed), bools 0/1,
/// anything else 0.
pub fn to_int64(value: &Value) -> i64 {
    match value {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Float(f) => {
            if f.get().is_nan() {
                i64::MIN
            } else {
                f.get() as i64
            }
        }
        Value::Bool(b) => i64::from(b.get()),
        Value::String(s) => parse_int_base0(trim_zero_decimal(s)).unwrap_or(0),
        _ => 0,
    }
}

/// spf13/cast `ToFloat64`: numbers, parsed strings, bools 0/1, anything else 0.
pub fn to_float64(value: &Value) -> f64 {
    match value {
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Float(f) => f.get(),
        Value::Bool(b) => f64::from(u8::from(b.get())),
        Value::String(s) => parse_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// `strconv.ParseFloat(s, 64)` for the forms Go accepts that matter here.
pub fn parse_float(s: &str) -> Option<f64> {
    let t = s.replace('_', "");
    let lower = t.to_ascii_lowercase();
    match lower.trim_start_matches(['+', '-']) {
        "inf" | "infinity" => {
            return Some(if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        "nan" => return Some(f64::NAN),
        _ => {}
    }
    if lower.contains("inf") || lower.contains("nan") {
        return None;
    }
    t.parse::<f64>().ok()
}

/// sprig's `empty`: nil, false, 0, "" and empty lists and maps are empty.
pub fn is_empty(value: &Value) -> bool {
    !value.is_true()
}

/// The items of a list argument, or an error naming what sprig's `must*` variant reports.
pub fn list_items<'v>(value: &'v Value, what: &str) -> Result<&'v [Value], FuncError> {
    match value {
        Value::List(items) => Ok(items),
        Value::Null => Err(FuncError(format!("Cannot find {what} on type <nil>"))),
        other => Err(FuncError(format!(
            "Cannot find {what} on type {}",
            kind_name(other)
        ))),
    }
}

/// reflect's `Kind` name of a value.
pub fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Int64(_) => "int64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Object(object) => object.kind_name(),
    }
}

/// Fails when a result would exceed [`MAX_OUTPUT`].
pub fn check_size(size: usize, what: &str) -> Result<(), FuncError> {
    if size > MAX_OUTPUT {
        return Err(FuncError(format!(
            "{what} would produce {size} bytes, more than the {MAX_OUTPUT}-byte limit"
        )));
    }
    Ok(())
}

/// A list of strings.
pub fn string_list<I: IntoIterator<Item = String>>(items: I) -> Value {
    Value::list(items.into_iter().map(Value::string).collect())
}

/// A plain string-to-string function.
pub type StrFn = fn(&str) -> String;

/// Shorthand for returning a string.
pub fn ok_str(s: impl Into<crate::text::Text>) -> FuncResult {
    Ok(Value::string(s))
}
