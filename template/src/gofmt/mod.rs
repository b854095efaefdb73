//! Go's `fmt` printing of template values: `%v` (what `{{.}}` prints), `Sprint`, `Sprintln`
//! and `Sprintf` (in `printf`, with the verbs in `verbs`).

use std::fmt::Write;

use crate::key::Key;
use crate::value::{MAX_TEXT, Value};

mod printf;
mod verbs;

pub use printf::sprintf;

/// Appends `value` as Go's `%v` prints it (nested lists and maps walked without recursion),
/// at most [`MAX_TEXT`] bytes of it.
pub fn write_v(out: &mut String, value: &Value) {
    if !value.has_children() {
        return write_scalar(out, value);
    }
    let end = out.len().saturating_add(MAX_TEXT);
    let mut pending = vec![Part::Value(value.clone())];
    while let Some(part) = pending.pop() {
        if out.len() > end {
            return;
        }
        match part {
            Part::Text(text) => out.push_str(text),
            Part::Key(key) => {
                out.push_str(&key);
                out.push(':');
            }
            Part::Value(value) => match &value {
                Value::List(items) => {
                    out.push('[');
                    pending.push(Part::Text("]"));
                    for (i, item) in items.iter().enumerate().rev() {
                        pending.push(Part::Value(item.clone()));
                        if i > 0 {
                            pending.push(Part::Text(" "));
                        }
                    }
                }
                Value::Map(map) => {
                    out.push_str("map[");
                    pending.push(Part::Text("]"));
                    for (i, (key, item)) in map.read().iter().enumerate().rev() {
                        pending.push(Part::Value(item.clone()));
                        pending.push(Part::Key(key.clone()));
                        if i > 0 {
                            pending.push(Part::Text(" "));
                        }
                    }
                }
                scalar => write_scalar(out, scalar),
            },
        }
    }
}

/// What is left to print of a list or map.
enum Part {
    Text(&'static str),
    Key(Key),
    Value(Value),
}

fn write_scalar(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if b.get() { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&format_float_g(f.get(), None, false)),
        Value::String(s) => out.push_str(s),
        Value::Object(object) => out.push_str(&object.text()),
        Value::List(_) | Value::Map(_) => write_v(out, value),
    }
}

/// `%v` of one value.
pub fn to_v(value: &Value) -> String {
    let mut out = String::new();
    write_v(&mut out, value);
    out
}

/// `fmt.Sprint`: operands printed with `%v`, a space between two operands when neither is a
/// string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, arg) in args.iter().enumerate() {
        if i > 0 && !matches!(arg, Value::String(_)) && !matches!(args[i - 1], Value::String(_)) {
            out.push(' ');
        }
        write_v(&mut out, arg);
    }
    out
}

/// `fmt.Sprintln`: operands separated by spaces, then a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_v(&mut out, arg);
    }
    out.push('\n');
    out
}

/// Shortest decimal digits and exponent of a finite, non-zero `f` (`d.ddd × 10^exp`).
fn shortest_digits(f: f64) -> (String, i32) {
    let text = format!("{:e}", f.abs());
    let (mantissa, exp) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

/// Digits rounded to `precision` significant digits, and the exponent.
fn rounded_digits(f: f64, precision: usize) -> (String, i32) {
    let text = format!("{:.*e}", precision.saturating_sub(1), f.abs());
    let (mantissa, exp) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

fn exponent_suffix(out: &mut String, exp: i32, upper: bool) {
    out.push(if upper { 'E' } else { 'e' });
    out.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(out, "{:02}", exp.unsigned_abs());
}

pub(crate) fn special_float(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("NaN")
    } else if f == f64::INFINITY {
        Some("+Inf")
    } else if f == f64::NEG_INFINITY {
        Some("-Inf")
    } else {
        None
    }
}

/// Go's `%g` (`precision` None = shortest, as `%v` prints floats).
pub fn format_float_g(f: f64, precision: Option<usize>, upper: bool) -> String {
    if let Some(special) = special_float(f) {
        return special.to_string();
    }
    let mut out = String::new();
    if f.is_sign_negative() && f != 0.0 || (f == 0.0 && f.is_sign_negative()) {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return out;
    }
    let (mut digits, exp) = match precision {
        None => shortest_digits(f),
        Some(p) => rounded_digits(f, p.max(1)),
    };
    if precision.is_some() {
        while digits.len() > 1 && digits.ends_with('0') {
            digits.pop();
        }
    }
    let eprec: i32 = match precision {
        // Shortest form: Go switches to an exponent from 10^6 on (eprec 6).
        None => 6,
        Some(p) => {
            let p = p.max(1) as i32;
            let nd = digits.len() as i32;
            if p > nd && nd > exp { nd } else { p }
        }
    };
    if exp < -4 || exp >= eprec {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        exponent_suffix(&mut out, exp, upper);
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = (exp + 1) as usize;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

/// Go's `%e` with a precision (default 6).
pub(crate) fn format_float_e(f: f64, precision: usize, upper: bool) -> String {
    if let Some(special) = special_float(f) {
        return special.to_string();
    }
    let text = format!("{:.*e}", precision, f);
    let (mantissa, exp) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let mut out = mantissa.to_string();
    exponent_suffix(&mut out, exp.parse().unwrap_or(0), upper);
    out
}

/// `strconv.Quote`: a double-quoted Go string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = if (c as u32) < 0x10000 {
                    write!(out, "\\u{:04x}", c as u32)
                } else {
                    write!(out, "\\U{:08x}", c as u32)
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_go() {
        for (f, want) in [
            (3.5, "3.5"),
            (1.0, "1"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (123456.0, "123456"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1e21, "1e+21"),
        ] {
            assert_eq!(to_v(&Value::float(f)), want, "{f}");
        }
    }

    #[test]
    fn printf_verbs_and_flags() {
        let i = |n| Value::Int(n);
        assert_eq!(sprintf("%04x", &[i(127)]), "007f");
        assert_eq!(
            sprintf("%d|%5d|%-5d|%+d", &[i(1), i(2), i(3), i(4)]),
            "1|    2|3    |+4"
        );
        assert_eq!(
            sprintf(
                "%.2f %e %g",
                &[
                    Value::float(1.23456),
                    Value::float(1234.5),
                    Value::float(3.5)
                ]
            ),
            "1.23 1.234500e+03 3.5"
        );
        assert_eq!(
            sprintf(
                "%q %s %v",
                &[Value::string("a\"b"), Value::string("x"), Value::bool(true)]
            ),
            "\"a\\\"b\" x true"
        );
        assert_eq!(sprintf("%d", &[Value::string("x")]), "%!d(string=x)");
        assert_eq!(sprintf("%d %d", &[i(1)]), "1 %!d(MISSING)");
        assert_eq!(sprintf("%d", &[i(1), i(2)]), "1%!(EXTRA int=2)");
        assert_eq!(sprintf("100%%", &[]), "100%");
        assert_eq!(sprintf("%x", &[Value::string("hi")]), "6869");
    }

    #[test]
    fn sprint_spacing() {
        assert_eq!(sprint(&[Value::Int(1), Value::Int(2)]), "1 2");
        assert_eq!(sprint(&[Value::string("a"), Value::Int(2)]), "a2");
        assert_eq!(sprintln(&[Value::string("a"), Value::Int(2)]), "a 2\n");
        assert_eq!(
            to_v(&Value::list(vec![Value::Int(1), Value::Null])),
            "[1 <nil>]"
        );
    }
}
