//! Regular expressions with Go's RE2 syntax (`regexMatch`, `regexFindAll`, `regexReplaceAll`,
//! `regexSplit`...). Go's `\d`, `\w`, `\s` and `\b` are ASCII-only, so they are rewritten to
//! their ASCII classes before compiling with the `regex` crate.

use regex::{NoExpand, Regex, RegexBuilder};

use crate::funcs::{FuncError, FuncMap, FuncResult, Function, Param};
use crate::sprig::conv::{int_arg, ok_str, str_arg, string_list};
use crate::value::Value;

use Param::{Int, String as Str};

/// Largest compiled program a template may ask for.
const SIZE_LIMIT: usize = 1 << 20;

/// Registers the regular expression functions.
pub fn register(map: &mut FuncMap) {
    both(
        map,
        "regexMatch",
        &[Str, Str],
        |a| Ok(Value::bool(compile(&a[0])?.is_match(str_arg(&a[1])))),
        |_| Value::bool(false),
    );
    both(
        map,
        "regexFindAll",
        &[Str, Str, Int],
        |a| {
            let re = compile(&a[0])?;
            let n = int_arg(&a[2]);
            Ok(string_list(
                find_all(&re, str_arg(&a[1]), n)
                    .into_iter()
                    .map(|(s, e)| str_arg(&a[1])[s..e].to_string()),
            ))
        },
        |_| Value::list(Vec::new()),
    );
    both(
        map,
        "regexFind",
        &[Str, Str],
        |a| {
            let re = compile(&a[0])?;
            let s = str_arg(&a[1]);
            ok_str(re.find(s).map_or("", |m| m.as_str()))
        },
        |_| Value::string(""),
    );
    both(
        map,
        "regexReplaceAll",
        &[Str, Str, Str],
        |a| {
            let re = compile(&a[0])?;
            ok_str(re.replace_all(str_arg(&a[1]), str_arg(&a[2])).into_owned())
        },
        |_| Value::string(""),
    );
    both(
        map,
        "regexReplaceAllLiteral",
        &[Str, Str, Str],
        |a| {
            let re = compile(&a[0])?;
            ok_str(
                re.replace_all(str_arg(&a[1]), NoExpand(str_arg(&a[2])))
                    .into_owned(),
            )
        },
        |_| Value::string(""),
    );
    both(
        map,
        "regexSplit",
        &[Str, Str, Int],
        |a| {
            let re = compile(&a[0])?;
            Ok(string_list(split(
                &re,
                str_arg(&a[0]),
                str_arg(&a[1]),
                int_arg(&a[2]),
            )))
        },
        |_| Value::list(Vec::new()),
    );
    map.insert(
        "regexQuoteMeta",
        Function::new(&[Str], |a| ok_str(quote_meta(str_arg(&a[0])))),
    );
}

/// Registers `name` (which, like sprig, answers `fallback` when the pattern does not compile)
/// and `mustName` (which fails).
fn both(
    map: &mut FuncMap,
    name: &str,
    params: &[Param],
    body: fn(&[Value]) -> FuncResult,
    fallback: fn(&[Value]) -> Value,
) {
    map.insert(
        format!("must{}{}", name[..1].to_uppercase(), &name[1..]),
        Function::new(params, body),
    );
    map.insert(
        name,
        Function::new(params, move |a| Ok(body(a).unwrap_or_else(|_| fallback(a)))),
    );
}

/// Compiles a Go pattern.
pub fn compile(pattern: &Value) -> Result<Regex, FuncError> {
    RegexBuilder::new(&translate(str_arg(pattern)))
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| FuncError(format!("error parsing regexp: {e}")))
}

/// Rewrites Go's ASCII-only Perl classes for the Unicode-aware `regex` crate.
fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let replacement = match (next, in_class) {
                    ('d', false) => "[0-9]",
                    ('D', false) => "[^0-9]",
                    ('w', false) => "[0-9A-Za-z_]",
                    ('W', false) => "[^0-9A-Za-z_]",
                    ('s', false) => "[\\t\\n\\f\\r ]",
                    ('S', false) => "[^\\t\\n\\f\\r ]",
                    ('b', false) => "(?-u:\\b)",
                    ('B', false) => "(?-u:\\B)",
                    ('d', true) => "0-9",
                    ('D', true) => "[^0-9]",
                    ('w', true) => "0-9A-Za-z_",
                    ('W', true) => "[^0-9A-Za-z_]",
                    ('s', true) => "\\t\\n\\f\\r ",
                    ('S', true) => "[^\\t\\n\\f\\r ]",
                    _ => {
                        out.push('\\');
                        out.push(next);
                        continue;
                    }
                };
                out.push_str(replacement);
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // A `]` or `^]` right after the opening bracket is literal.
                let rest = chars.as_str();
                for prefix in ["^]", "]", "^"] {
                    if let Some(after) = rest.strip_prefix(prefix) {
                        out.push_str(prefix);
                        chars = after.chars();
                        break;
                    }
                }
            }
            '[' if in_class && chars.as_str().starts_with(':') => {
                let rest = chars.as_str();
                match rest.find(":]") {
                    Some(end) => {
                        out.push('[');
                        out.push_str(&rest[..end + 2]);
                        chars = rest[end + 2..].chars();
                    }
                    None => out.push_str("\\["),
                }
            }
            '[' => out.push_str("\\["),
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

/// Go's `FindAllStringIndex(s, n)`.
fn find_all(re: &Regex, s: &str, n: i64) -> Vec<(usize, usize)> {
    let matches = re.find_iter(s).map(|m| (m.start(), m.end()));
    if n < 0 {
        matches.collect()
    } else {
        matches.take(n as usize).collect()
    }
}

/// Go's `Regexp.Split`.
fn split(re: &Regex, pattern: &str, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !pattern.is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let mut out = Vec::new();
    let (mut begin, mut end) = (0, 0);
    for (start, stop) in find_all(re, s, n) {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = start;
        if stop != 0 {
            out.push(s[begin..end].to_string());
        }
        begin = stop;
    }
    if end != s.len() {
        out.push(s[begin..].to_string());
    }
    out
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
