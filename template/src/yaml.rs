//! YAML as Go's encoders write it for `interface{}` values: block style, sorted keys, strings
//! quoted exactly when reading them back would give another type or break the syntax, and
//! multi-line strings as literal blocks. Two flavours: sigs.k8s.io/yaml (libsveltos' `toYaml`,
//! the addon-controller's `copy`: 2-space indent, sequences level with their key) and
//! gopkg.in/yaml.v3 (event-manager's `copy`: 4-space indent, sequences indented).

use crate::gofmt::format_float_g;
use crate::sprig::json::format_float;
use crate::value::Value;

/// How one Go YAML encoder lays documents out.
#[derive(Debug, Clone, Copy)]
pub struct Flavour {
    indent: usize,
    indent_sequences: bool,
    json_numbers: bool,
}

/// sigs.k8s.io/yaml (yaml.v2 behind a JSON round trip).
pub const SIGS_K8S_YAML: Flavour = Flavour {
    indent: 2,
    indent_sequences: false,
    json_numbers: true,
};

/// gopkg.in/yaml.v3's `Marshal`.
pub const YAML_V3: Flavour = Flavour {
    indent: 4,
    indent_sequences: true,
    json_numbers: false,
};

/// Nesting beyond this is refused rather than risking the stack.
const MAX_DEPTH: usize = 200;

/// `value` as a YAML document (with its final newline).
pub fn encode(value: &Value, flavour: Flavour) -> Result<String, String> {
    let mut out = String::new();
    write_node(&mut out, value, flavour, 0, 0)?;
    Ok(out)
}

fn pad(out: &mut String, width: usize) {
    out.extend(std::iter::repeat_n(' ', width));
}

/// Writes `value` starting on the current line (after `key: ` or `- `), block collections
/// continuing at `column`, and ends with a newline.
fn write_node(
    out: &mut String,
    value: &Value,
    flavour: Flavour,
    column: usize,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("value nested too deeply for YAML".to_owned());
    }
    match value {
        Value::Map(map) if !map.is_empty() => {
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    pad(out, column);
                }
                write_string(out, key, column)?;
                out.push(':');
                let inner = match item {
                    Value::Map(m) if !m.is_empty() => Some(column + flavour.indent),
                    Value::List(l) if !l.is_empty() && flavour.indent_sequences => {
                        Some(column + flavour.indent)
                    }
                    Value::List(l) if !l.is_empty() => Some(column),
                    _ => None,
                };
                match inner {
                    Some(inner) => {
                        out.push('\n');
                        pad(out, inner);
                        write_node(out, item, flavour, inner, depth + 1)?;
                    }
                    None => {
                        out.push(' ');
                        write_node(out, item, flavour, column + flavour.indent, depth + 1)?;
                    }
                }
            }
        }
        Value::List(items) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    pad(out, column);
                }
                out.push_str("- ");
                write_node(out, item, flavour, column + 2, depth + 1)?;
            }
        }
        scalar => {
            write_scalar(out, scalar, flavour, column)?;
            out.push('\n');
        }
    }
    Ok(())
}

/// A scalar (or an empty collection) on the current line; block strings continue below at
/// `column`.
fn write_scalar(
    out: &mut String,
    value: &Value,
    flavour: Flavour,
    column: usize,
) -> Result<(), String> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) | Value::Int64(n) => out.push_str(&n.to_string()),
        Value::Float(f) => out.push_str(&float(*f, flavour)?),
        Value::String(s) => write_string(out, s, column)?,
        Value::Map(_) => out.push_str("{}"),
        Value::List(_) => out.push_str("[]"),
        Value::Object(object) => {
            write_scalar(out, &Value::from(&object.json()), flavour, column)?;
        }
    }
    Ok(())
}

fn float(f: f64, flavour: Flavour) -> Result<String, String> {
    if flavour.json_numbers {
        // The JSON round trip: json.Marshal's text, read back as YAML.
        return format_float(f);
    }
    Ok(if f.is_nan() {
        ".nan".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 { ".inf" } else { "-.inf" }.to_owned()
    } else {
        format_float_g(f, None, false)
    })
}

fn write_string(out: &mut String, s: &str, column: usize) -> Result<(), String> {
    if s.contains('\n') && literal_block_allowed(s) {
        let chomp = if !s.ends_with('\n') {
            "-"
        } else if s.ends_with("\n\n") {
            "+"
        } else {
            ""
        };
        out.push('|');
        out.push_str(chomp);
        let body = s.strip_suffix('\n').unwrap_or(s);
        for line in body.split('\n') {
            out.push('\n');
            if !line.is_empty() {
                pad(out, column);
                out.push_str(line);
            }
        }
        return Ok(());
    }
    if resolves_to_other_type(s) || needs_escapes(s) {
        double_quoted(out, s);
    } else if plain_allowed(s) {
        out.push_str(s);
    } else {
        out.push('\'');
        out.push_str(&s.replace('\'', "''"));
        out.push('\'');
    }
    Ok(())
}

/// A literal block keeps the text only when its first line does not start with a space and no
/// line has characters a block cannot hold.
fn literal_block_allowed(s: &str) -> bool {
    !s.starts_with(' ') && !needs_escapes(s) && !s.contains(" \n")
}

/// Control characters other than newline (tab included, as libyaml counts it unprintable)
/// only survive double quotes.
fn needs_escapes(s: &str) -> bool {
    s.chars()
        .any(|c| (c.is_control() && c != '\n') || c == '\u{feff}')
}

/// Whether YAML (1.1 as yaml.v2 reads, or 1.2) would read `s` as null, a bool or a number.
fn resolves_to_other_type(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", "y",
        "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
        "OFF", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
        ".nan", ".NaN", ".NAN",
    ];
    WORDS.contains(&s) || looks_numeric(s)
}

fn looks_numeric(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() {
        return false;
    }
    let digits =
        |t: &str, radix: u32| !t.is_empty() && t.chars().all(|c| c == '_' || c.is_digit(radix));
    if let Some(hex) = body.strip_prefix("0x") {
        return digits(hex, 16);
    }
    if let Some(oct) = body.strip_prefix("0o") {
        return digits(oct, 8);
    }
    if let Some(bin) = body.strip_prefix("0b") {
        return digits(bin, 2);
    }
    if digits(body, 10) {
        return true;
    }
    // Sexagesimal (yaml.v2): 1:20, 190:20:30.
    if body.contains(':')
        && body.split(':').all(|p| digits(p, 10))
        && body.chars().next().is_some_and(|c| c.is_ascii_digit())
    {
        return true;
    }
    // Floats: digits, one dot, an exponent.
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let mantissa_ok = {
        let mut parts = mantissa.splitn(2, '.');
        let whole = parts.next().unwrap_or_default();
        let fraction = parts.next();
        let whole_ok = whole.chars().all(|c| c.is_ascii_digit() || c == '_');
        let fraction_ok = fraction.is_none_or(|f| f.chars().all(|c| c.is_ascii_digit()));
        whole_ok
            && fraction_ok
            && (whole.chars().any(|c| c.is_ascii_digit())
                || fraction.is_some_and(|f| !f.is_empty()))
            && (fraction.is_some() || exponent.is_some())
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
    });
    mantissa_ok && exponent_ok
}

/// Whether `s` may be written unquoted (the emitter's plain-scalar analysis).
fn plain_allowed(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if s.starts_with(' ') || s.ends_with(' ') || s.starts_with('\t') || s.ends_with('\t') {
        return false;
    }
    let second = s.chars().nth(1);
    let indicator = match first {
        ',' | '[' | ']' | '{' | '}' | '#' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%'
        | '@' | '`' => true,
        '-' | '?' | ':' => second.is_none_or(|c| c == ' ' || c == '\t'),
        _ => false,
    };
    if indicator || s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    !(s.contains(": ") || s.contains(" #") || s.ends_with(':') || s.contains(":\t"))
}

fn double_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() || c == '\u{feff}' => {
                let code = c as u32;
                if code <= 0xff {
                    out.push_str(&format!("\\x{code:02X}"));
                } else {
                    out.push_str(&format!("\\u{code:04X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(value: serde_json::Value, flavour: Flavour) -> String {
        encode(&Value::from(&value), flavour).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn sigs_k8s_layout_keeps_sequences_level_with_their_key() {
        let object = json!({"metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"ports": [{"port": 80, "name": "http"}], "selector": {}, "empty": []}});
        assert_eq!(
            yaml(object, SIGS_K8S_YAML),
            "metadata:\n  labels:\n    app: web\n  name: web\nspec:\n  empty: []\n  ports:\n  - name: http\n    port: 80\n  selector: {}\n"
        );
    }

    #[test]
    fn yaml_v3_layout_indents_four_and_indents_sequences() {
        let object = json!({"spec": {"ports": [{"port": 80, "name": "http"}, 443]}});
        assert_eq!(
            yaml(object, YAML_V3),
            "spec:\n    ports:\n        - name: http\n          port: 80\n        - 443\n"
        );
    }

    #[test]
    fn strings_are_quoted_when_they_would_read_back_as_something_else() {
        let object = json!({"a": "true", "b": "443", "c": "", "d": "yes", "e": "1.5",
            "f": "plain text", "g": "- item", "h": "key: value", "i": "it's", "j": "0x1F",
            "k": "*ref", "l": "tab\there", "m": "bell\u{7}", "n": "1e3", "o": "~"});
        assert_eq!(
            yaml(object, SIGS_K8S_YAML),
            "a: \"true\"\nb: \"443\"\nc: \"\"\nd: \"yes\"\ne: \"1.5\"\nf: plain text\ng: '- item'\nh: 'key: value'\ni: it's\nj: \"0x1F\"\nk: '*ref'\nl: \"tab\\there\"\nm: \"bell\\x07\"\n\"n\": \"1e3\"\no: \"~\"\n"
        );
    }

    #[test]
    fn multi_line_strings_become_literal_blocks() {
        let object = json!({"data": {"script": "line one\nline two\n", "raw": "a\nb"}});
        assert_eq!(
            yaml(object, SIGS_K8S_YAML),
            "data:\n  raw: |-\n    a\n    b\n  script: |\n    line one\n    line two\n"
        );
    }

    #[test]
    fn scalars_and_numbers() {
        assert_eq!(yaml(json!(null), SIGS_K8S_YAML), "null\n");
        assert_eq!(
            yaml(json!({"f": 1.5, "g": 2000000.0}), YAML_V3),
            "f: 1.5\ng: 2e+06\n"
        );
        assert_eq!(
            yaml(json!({"f": 1.5, "i": 7}), SIGS_K8S_YAML),
            "f: 1.5\ni: 7\n"
        );
    }
}
