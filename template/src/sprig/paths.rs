//! Slash-separated path functions (Go's `path`, and `path/filepath` on Linux for the `os*`
//! names) and `urlParse`/`urlJoin`.

use std::collections::BTreeMap;

use crate::dict::Entries;
use crate::funcs::{FuncMap, FuncResult, Function, Param};
use crate::key::KeyStr;
use crate::sprig::conv::{StrFn, ok_str, str_arg, strval};
use crate::sprig::dicts::entries;
use crate::value::Value;

/// Registers the path and URL functions.
pub fn register(map: &mut FuncMap) {
    let string_fns: [(&str, StrFn); 4] =
        [("base", base), ("dir", dir), ("clean", clean), ("ext", ext)];
    for (name, f) in string_fns {
        let function = Function::new(&[Param::String], move |a| ok_str(f(str_arg(&a[0]))));
        map.insert(
            format!("os{}{}", name[..1].to_uppercase(), &name[1..]),
            function.clone(),
        );
        map.insert(name, function);
    }
    let is_abs = Function::new(&[Param::String], |a| {
        Ok(Value::bool(str_arg(&a[0]).starts_with('/')))
    });
    map.insert("isAbs", is_abs.clone());
    map.insert("osIsAbs", is_abs);
    map.insert(
        "urlParse",
        Function::new(&[Param::String], |a| url_parse(str_arg(&a[0]))),
    );
    map.insert(
        "urlJoin",
        Function::new(&[Param::Map], |a| ok_str(url_join(&entries(&a[0])))),
    );
}

/// Go's `path.Clean`.
pub fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

fn base(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

fn dir(path: &str) -> String {
    let cut = path.rfind('/').map_or(0, |i| i + 1);
    clean(&path[..cut])
}

fn ext(path: &str) -> String {
    for (i, c) in path.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return path[i..].to_string();
        }
    }
    String::new()
}

fn url_parse(text: &str) -> FuncResult {
    let (rest, fragment) = text.split_once('#').unwrap_or((text, ""));
    let (mut rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut scheme = "";
    if let Some(colon) = rest.find(':') {
        let candidate = &rest[..colon];
        if !candidate.is_empty()
            && candidate.starts_with(|c: char| c.is_ascii_alphabetic())
            && candidate
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            scheme = candidate;
            rest = &rest[colon + 1..];
        } else if colon == 0 {
            return Err(
                format!("unable to parse url: parse {text:?}: missing protocol scheme").into(),
            );
        }
    }
    let (mut userinfo, mut host, mut path, mut opaque) = ("", "", rest, "");
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find('/').unwrap_or(after.len());
        let authority = &after[..end];
        path = &after[end..];
        match authority.rfind('@') {
            Some(at) => {
                userinfo = &authority[..at];
                host = &authority[at + 1..];
            }
            None => host = authority,
        }
    } else if !scheme.is_empty() && !rest.starts_with('/') {
        opaque = rest;
        path = "";
    }
    let hostname = match host.strip_prefix('[') {
        Some(inner) => inner.split(']').next().unwrap_or(inner),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    let fields = [
        ("scheme", scheme),
        ("host", host),
        ("hostname", hostname),
        ("path", path),
        ("query", query),
        ("opaque", opaque),
        ("fragment", fragment),
        ("userinfo", userinfo),
    ];
    Ok(Value::map(
        fields
            .iter()
            .map(|(k, v)| (k.to_string(), Value::string(unescape(v))))
            .collect::<BTreeMap<_, _>>(),
    ))
}

/// Percent-decoding (invalid escapes left as they are).
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(hi * 16 + lo);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

fn escape_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/;:@&=+$,!'()*".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn url_join(d: &Entries) -> String {
    let get = |key: &str| d.get(KeyStr::new(key)).map(strval).unwrap_or_default();
    let (scheme, host, path) = (get("scheme"), get("host"), get("path"));
    let (query, opaque, fragment, userinfo) = (
        get("query"),
        get("opaque"),
        get("fragment"),
        get("userinfo"),
    );
    let mut out = String::new();
    if !scheme.is_empty() {
        out.push_str(&scheme);
        out.push(':');
    }
    if !opaque.is_empty() {
        out.push_str(&opaque);
    } else {
        if !scheme.is_empty() || !host.is_empty() || !userinfo.is_empty() {
            if !host.is_empty() || !path.is_empty() || !userinfo.is_empty() {
                out.push_str("//");
            }
            if !userinfo.is_empty() {
                out.push_str(&userinfo);
                out.push('@');
            }
            out.push_str(&host);
        }
        if !path.is_empty() && !path.starts_with('/') && !host.is_empty() {
            out.push('/');
        }
        out.push_str(&escape_path(&path));
    }
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&escape_path(&fragment));
    }
    out
}
