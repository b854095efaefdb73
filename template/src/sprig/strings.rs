//! String functions: case, trimming, quoting, padding, substrings, splitting and joining.

use crate::funcs::{FuncError, FuncMap, FuncResult, Function, Param};
use crate::sprig::conv::{check_size, int_arg, ok_str, str_arg, string_list, strval};
use crate::value::Value;

use Param::{Any, Int, String as Str};

/// Registers the string functions.
pub fn register(map: &mut FuncMap) {
    map.insert("hello", Function::new(&[], |_| ok_str("Hello!")));
    unary(map, "upper", str::to_uppercase);
    unary(map, "lower", str::to_lowercase);
    unary(map, "title", title);
    unary(map, "untitle", untitle);
    unary(map, "trim", |s| s.trim().to_string());
    unary(map, "nospace", |s| {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    });
    unary(map, "initials", initials);
    unary(map, "swapcase", swapcase);
    for name in ["trimAll", "trimall"] {
        binary(map, name, |cutset, s| {
            s.trim_matches(|c| cutset.contains(c)).to_string()
        });
    }
    binary(map, "trimSuffix", |suffix, s| {
        s.strip_suffix(suffix).unwrap_or(s).to_string()
    });
    binary(map, "trimPrefix", |prefix, s| {
        s.strip_prefix(prefix).unwrap_or(s).to_string()
    });
    predicate(map, "contains", |needle, s| s.contains(needle));
    predicate(map, "hasPrefix", |prefix, s| s.starts_with(prefix));
    predicate(map, "hasSuffix", |suffix, s| s.ends_with(suffix));
    map.insert(
        "substr",
        Function::new(&[Int, Int, Str], |a| {
            substr(int_arg(&a[0]), int_arg(&a[1]), str_arg(&a[2]))
        }),
    );
    map.insert(
        "trunc",
        Function::new(&[Int, Str], |a| {
            ok_str(trunc(int_arg(&a[0]), str_arg(&a[1])))
        }),
    );
    map.insert(
        "abbrev",
        Function::new(&[Int, Str], |a| {
            ok_str(abbreviate(str_arg(&a[1]), 0, int_arg(&a[0])).unwrap_or_default())
        }),
    );
    map.insert(
        "abbrevboth",
        Function::new(&[Int, Int, Str], |a| {
            let s = str_arg(&a[2]);
            ok_str(abbreviate(s, int_arg(&a[0]), int_arg(&a[1])).unwrap_or_default())
        }),
    );
    map.insert(
        "repeat",
        Function::new(&[Int, Str], |a| repeat(&a[0], &a[1])),
    );
    map.insert(
        "wrap",
        Function::new(&[Int, Str], |a| {
            ok_str(wrap(str_arg(&a[1]), int_arg(&a[0]), "\n", false))
        }),
    );
    map.insert(
        "wrapWith",
        Function::new(&[Int, Str, Str], |a| {
            ok_str(wrap(str_arg(&a[2]), int_arg(&a[0]), str_arg(&a[1]), true))
        }),
    );
    map.insert(
        "quote",
        Function::variadic(&[], Any, |a| ok_str(quoted(a, |s| crate::gofmt::quote(&s)))),
    );
    map.insert(
        "squote",
        Function::variadic(&[], Any, |a| ok_str(quoted(a, |s| format!("'{s}'")))),
    );
    map.insert(
        "cat",
        Function::variadic(&[], Any, |a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !matches!(v, Value::Null))
                .map(crate::gofmt::to_v)
                .collect();
            ok_str(parts.join(" "))
        }),
    );
    map.insert(
        "indent",
        Function::new(&[Int, Str], |a| indent(&a[0], &a[1], false)),
    );
    map.insert(
        "nindent",
        Function::new(&[Int, Str], |a| indent(&a[0], &a[1], true)),
    );
    map.insert(
        "replace",
        Function::new(&[Str, Str, Str], |a| {
            let (old, new, src) = (str_arg(&a[0]), str_arg(&a[1]), str_arg(&a[2]));
            replace(old, new, src)
        }),
    );
    map.insert(
        "plural",
        Function::new(&[Str, Str, Int], |a| {
            Ok(if int_arg(&a[2]) == 1 {
                a[0].clone()
            } else {
                a[1].clone()
            })
        }),
    );
    map.insert("toString", Function::new(&[Any], |a| ok_str(strval(&a[0]))));
    map.insert(
        "split",
        Function::new(&[Str, Str], |a| {
            Ok(indexed(go_split(str_arg(&a[1]), str_arg(&a[0]), -1)))
        }),
    );
    map.insert(
        "splitn",
        Function::new(&[Str, Int, Str], |a| {
            Ok(indexed(go_split(
                str_arg(&a[2]),
                str_arg(&a[0]),
                int_arg(&a[1]),
            )))
        }),
    );
    map.insert(
        "splitList",
        Function::new(&[Str, Str], |a| {
            Ok(string_list(go_split(str_arg(&a[1]), str_arg(&a[0]), -1)))
        }),
    );
    map.insert(
        "join",
        Function::new(&[Str, Any], |a| {
            ok_str(to_strings(&a[1]).join(str_arg(&a[0])))
        }),
    );
    map.insert(
        "toStrings",
        Function::new(&[Any], |a| Ok(string_list(to_strings(&a[0])))),
    );
}

fn unary(map: &mut FuncMap, name: &str, f: fn(&str) -> String) {
    map.insert(
        name,
        Function::new(&[Str], move |a| ok_str(f(str_arg(&a[0])))),
    );
}

fn binary(map: &mut FuncMap, name: &str, f: fn(&str, &str) -> String) {
    map.insert(
        name,
        Function::new(&[Str, Str], move |a| {
            ok_str(f(str_arg(&a[0]), str_arg(&a[1])))
        }),
    );
}

fn predicate(map: &mut FuncMap, name: &str, f: fn(&str, &str) -> bool) {
    map.insert(
        name,
        Function::new(&[Str, Str], move |a| {
            Ok(Value::bool(f(str_arg(&a[0]), str_arg(&a[1]))))
        }),
    );
}

/// sprig's `strslice`: a list's non-nil items as strings; nil is empty; anything else one item.
pub fn to_strings(value: &Value) -> Vec<String> {
    match value {
        Value::List(items) => items
            .iter()
            .filter(|v| !matches!(v, Value::Null))
            .map(strval)
            .collect(),
        Value::Null => Vec::new(),
        other => vec![strval(other)],
    }
}

fn quoted(args: &[Value], f: impl Fn(String) -> String) -> String {
    args.iter()
        .filter(|v| !matches!(v, Value::Null))
        .map(|v| f(strval(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Go's `strings.Title`: upper-cases the first letter of each word.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut previous = ' ';
    for c in s.chars() {
        if is_title_separator(previous) {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        previous = c;
    }
    out
}

fn is_title_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    if c.is_alphanumeric() {
        return false;
    }
    c.is_whitespace()
}

/// Applies `f` to the first character of each whitespace-separated word.
fn map_word_starts(s: &str, f: impl Fn(char) -> String) -> String {
    let mut out = String::with_capacity(s.len());
    let mut at_start = true;
    for c in s.chars() {
        if c.is_whitespace() {
            at_start = true;
            out.push(c);
        } else if at_start {
            out.push_str(&f(c));
            at_start = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn untitle(s: &str) -> String {
    map_word_starts(s, |c| c.to_lowercase().collect())
}

fn initials(s: &str) -> String {
    s.split(char::is_whitespace)
        .filter_map(|word| word.chars().next())
        .collect()
}

fn swapcase(s: &str) -> String {
    s.chars()
        .flat_map(|c| -> Vec<char> {
            if c.is_uppercase() {
                c.to_lowercase().collect()
            } else if c.is_lowercase() {
                c.to_uppercase().collect()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// Bytes `start..end` of `s` as Go slices them (invalid UTF-8 at a cut is replaced).
fn byte_slice(s: &str, start: usize, end: usize) -> String {
    String::from_utf8_lossy(&s.as_bytes()[start..end]).into_owned()
}

fn substr(start: i64, end: i64, s: &str) -> FuncResult {
    let len = s.len() as i64;
    let out_of_range = || FuncError("runtime error: slice bounds out of range".into());
    if start < 0 {
        if end < 0 || end > len {
            return Err(out_of_range());
        }
        return ok_str(byte_slice(s, 0, end as usize));
    }
    if end < 0 || end > len {
        if start > len {
            return Err(out_of_range());
        }
        return ok_str(byte_slice(s, start as usize, s.len()));
    }
    if start > end {
        return Err(out_of_range());
    }
    ok_str(byte_slice(s, start as usize, end as usize))
}

fn trunc(c: i64, s: &str) -> String {
    let len = s.len() as i64;
    if c < 0 && len + c > 0 {
        return byte_slice(s, (len + c) as usize, s.len());
    }
    if c >= 0 && len > c {
        return byte_slice(s, 0, c as usize);
    }
    s.to_string()
}

/// goutils' `AbbreviateFull`: `None` where goutils returns an error.
fn abbreviate(s: &str, offset: i64, max_width: i64) -> Option<String> {
    if s.is_empty() {
        return Some(String::new());
    }
    if max_width < 4 {
        return None;
    }
    let len = s.len() as i64;
    if len <= max_width {
        return Some(s.to_string());
    }
    let mut offset = offset.min(len);
    if len - offset < max_width - 3 {
        offset = len - (max_width - 3);
    }
    if offset <= 4 {
        return Some(byte_slice(s, 0, (max_width - 3) as usize) + "...");
    }
    if max_width < 7 {
        return None;
    }
    if offset + max_width - 3 < len {
        let rest = byte_slice(s, offset as usize, s.len());
        return Some(format!("...{}", abbreviate(&rest, 0, max_width - 3)?));
    }
    Some(format!(
        "...{}",
        byte_slice(s, (len - (max_width - 3)) as usize, s.len())
    ))
}

fn repeat(count: &Value, s: &Value) -> FuncResult {
    let count = int_arg(count);
    let s = str_arg(s);
    if count < 0 {
        return Err("strings: negative Repeat count".into());
    }
    check_size((count as usize).saturating_mul(s.len()), "repeat")?;
    ok_str(s.repeat(count as usize))
}

/// goutils' `WrapCustom` (byte based, as in Go).
fn wrap(s: &str, width: i64, newline: &str, wrap_long: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let newline = if newline.is_empty() { "\n" } else { newline };
    let width = width.max(1) as usize;
    let bytes = s.as_bytes();
    let len = bytes.len();
    let mut offset = 0;
    let mut out: Vec<u8> = Vec::with_capacity(len);
    while len - offset > width {
        if bytes[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (width + offset + 1).min(len);
        match bytes[offset..end].iter().rposition(|&b| b == b' ') {
            Some(space) => {
                out.extend_from_slice(&bytes[offset..offset + space]);
                out.extend_from_slice(newline.as_bytes());
                offset += space + 1;
            }
            None if wrap_long => {
                out.extend_from_slice(&bytes[offset..offset + width]);
                out.extend_from_slice(newline.as_bytes());
                offset += width;
            }
            None => {
                let end = width + offset;
                match bytes[end..].iter().position(|&b| b == b' ') {
                    None => {
                        out.extend_from_slice(&bytes[offset..]);
                        offset = len;
                    }
                    Some(index) => {
                        out.extend_from_slice(&bytes[offset..end + index]);
                        out.extend_from_slice(newline.as_bytes());
                        offset = end + index + 1;
                    }
                }
            }
        }
    }
    out.extend_from_slice(&bytes[offset..]);
    String::from_utf8_lossy(&out).into_owned()
}

fn indent(spaces: &Value, s: &Value, leading_newline: bool) -> FuncResult {
    let spaces = int_arg(spaces).max(0) as usize;
    let s = str_arg(s);
    let lines = s.matches('\n').count() + 1;
    check_size(
        spaces.saturating_mul(lines).saturating_add(s.len()),
        "indent",
    )?;
    let pad = " ".repeat(spaces);
    let body = format!("{pad}{}", s.replace('\n', &format!("\n{pad}")));
    ok_str(if leading_newline {
        format!("\n{body}")
    } else {
        body
    })
}

fn replace(old: &str, new: &str, src: &str) -> FuncResult {
    if old.is_empty() {
        let count = src.chars().count() + 1;
        check_size(count.saturating_mul(new.len()) + src.len(), "replace")?;
        let mut out = String::from(new);
        for c in src.chars() {
            out.push(c);
            out.push_str(new);
        }
        return ok_str(out);
    }
    let count = src.matches(old).count();
    check_size(count.saturating_mul(new.len()) + src.len(), "replace")?;
    ok_str(src.replace(old, new))
}

/// Go's `strings.SplitN` (`n < 0`: all; `n == 0`: none).
pub fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(String::from).collect();
        if n > 0 && chars.len() > n as usize {
            let mut head: Vec<String> = chars[..n as usize - 1].to_vec();
            let used: usize = head.iter().map(String::len).sum();
            head.push(s[used..].to_string());
            return head;
        }
        return chars;
    }
    if n < 0 {
        s.split(sep).map(String::from).collect()
    } else {
        s.splitn(n as usize, sep).map(String::from).collect()
    }
}

fn indexed(parts: Vec<String>) -> Value {
    Value::map(
        parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), Value::string(p))),
    )
}
