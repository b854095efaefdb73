//! One `fmt` directive applied to one operand: the verbs, flags, width and precision Go's
//! `printArg` honours for the value kinds templates have.

use crate::gofmt::{format_float_e, format_float_g, quote, special_float, to_v};
use crate::value::Value;

/// One `%` directive's flags, width and precision.
#[derive(Debug, Default, Clone, Copy)]
pub struct Spec {
    /// `-`: pad on the right.
    pub minus: bool,
    /// `+`: always print a sign.
    pub plus: bool,
    /// `#`: alternate form (`0x`, `0`, `0b` prefixes).
    pub sharp: bool,
    /// ` `: a space where a plus sign would go.
    pub space: bool,
    /// `0`: pad numbers with leading zeros.
    pub zero: bool,
    /// Minimum width in runes.
    pub width: Option<usize>,
    /// Precision (digits, or runes of a string).
    pub precision: Option<usize>,
}

impl Spec {
    /// `body` padded to the width (with zeros after the sign when `numeric` and `0` is set).
    pub fn pad(&self, body: String, numeric: bool) -> String {
        let Some(width) = self.width else { return body };
        let len = body.chars().count();
        if len >= width {
            return body;
        }
        let fill = width - len;
        if self.minus {
            return body + &" ".repeat(fill);
        }
        if self.zero && numeric {
            let (sign, digits) = match body.strip_prefix(['-', '+', ' ']) {
                Some(rest) => (&body[..1], rest),
                None => ("", body.as_str()),
            };
            return format!("{sign}{}{digits}", "0".repeat(fill));
        }
        " ".repeat(fill) + &body
    }

    fn sign(&self, negative: bool) -> &'static str {
        if negative {
            "-"
        } else if self.plus {
            "+"
        } else if self.space {
            " "
        } else {
            ""
        }
    }
}

/// `%!verb(type=value)`: Go's report of a verb that does not fit its operand; the value is
/// printed with `%v` under the directive's flags and width, as `badVerb` does.
fn bad_verb(spec: &Spec, verb: char, arg: &Value) -> String {
    match arg {
        Value::Null => format!("%!{verb}(<nil>)"),
        _ => format!(
            "%!{verb}({}={})",
            arg.type_name(),
            format_one(spec, 'v', arg)
        ),
    }
}

fn format_int(spec: &Spec, verb: char, i: i64) -> Option<String> {
    let negative = i < 0;
    let magnitude = i.unsigned_abs();
    let mut digits = match verb {
        'd' | 'v' => magnitude.to_string(),
        'x' => format!("{magnitude:x}"),
        'X' => format!("{magnitude:X}"),
        'o' | 'O' => format!("{magnitude:o}"),
        'b' => format!("{magnitude:b}"),
        'c' => {
            return Some(spec.pad(
                char::from_u32(i as u32).unwrap_or('\u{fffd}').to_string(),
                false,
            ));
        }
        'q' => {
            return Some(spec.pad(
                format!("'{}'", char::from_u32(i as u32).unwrap_or('\u{fffd}')),
                false,
            ));
        }
        'U' => return Some(spec.pad(format!("U+{:04X}", magnitude), false)),
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => return None,
        _ => return None,
    };
    if let Some(precision) = spec.precision {
        while digits.len() < precision {
            digits.insert(0, '0');
        }
        if precision == 0 && i == 0 {
            digits.clear();
        }
    }
    let prefix = match (spec.sharp, verb) {
        (true, 'x') => "0x",
        (true, 'X') => "0X",
        (true, 'o') => "0",
        (_, 'O') => "0o",
        (true, 'b') => "0b",
        _ => "",
    };
    let zero_ok = spec.precision.is_none();
    let body = format!("{}{prefix}{digits}", spec.sign(negative));
    Some(
        Spec {
            zero: spec.zero && zero_ok,
            ..*spec
        }
        .pad(body, true),
    )
}

fn format_float(spec: &Spec, verb: char, f: f64) -> Option<String> {
    let negative = f.is_sign_negative() && !f.is_nan();
    let magnitude = f.abs();
    let body = match verb {
        'v' | 'g' => format_float_g(magnitude, spec.precision, false),
        'G' => format_float_g(magnitude, spec.precision, true),
        'e' => format_float_e(magnitude, spec.precision.unwrap_or(6), false),
        'E' => format_float_e(magnitude, spec.precision.unwrap_or(6), true),
        'f' | 'F' => match special_float(magnitude) {
            Some(s) => s.to_string(),
            None => format!("{:.*}", spec.precision.unwrap_or(6), magnitude),
        },
        _ => return None,
    };
    let body = body.trim_start_matches('+').to_string();
    let sign = if f.is_nan() { "" } else { spec.sign(negative) };
    Some(spec.pad(format!("{sign}{body}"), !f.is_nan() && !f.is_infinite()))
}

fn format_str(spec: &Spec, verb: char, s: &str) -> Option<String> {
    let truncated: String = match spec.precision {
        Some(p) => s.chars().take(p).collect(),
        None => s.to_string(),
    };
    let body = match verb {
        's' | 'v' => truncated,
        'q' => quote(&truncated),
        'x' => truncated.bytes().map(|b| format!("{b:02x}")).collect(),
        'X' => truncated.bytes().map(|b| format!("{b:02X}")).collect(),
        _ => return None,
    };
    Some(spec.pad(body, false))
}

/// `arg` formatted by one directive (Go's `printArg`).
pub fn format_one(spec: &Spec, verb: char, arg: &Value) -> String {
    if verb == 'T' {
        return spec.pad(arg.type_name().to_owned(), false);
    }
    let formatted = match arg {
        Value::Int(i) | Value::Int64(i) => format_int(spec, verb, *i),
        Value::Float(f) => format_float(spec, verb, f.get()),
        Value::String(s) => format_str(spec, verb, s),
        Value::Bool(b) => match verb {
            't' | 'v' => Some(spec.pad(b.get().to_string(), false)),
            _ => None,
        },
        // A nil operand prints only under %v (and %T); any other verb reports it.
        Value::Null => match verb {
            'v' => Some(spec.pad("<nil>".into(), false)),
            _ => None,
        },
        Value::List(_) | Value::Map(_) => match verb {
            'v' | 's' => Some(spec.pad(to_v(arg), false)),
            _ => None,
        },
        // Go's handleMethods: the verbs a string takes print the String method's text.
        Value::Object(object) => match verb {
            'v' | 's' | 'x' | 'X' | 'q' => format_str(spec, verb, &object.text()),
            _ => None,
        },
    };
    formatted.unwrap_or_else(|| bad_verb(spec, verb, arg))
}
