//! `require("strings")`: the Go `strings` functions scripts use (byte offsets are 0-based,
//! -1 means "not found", as in Go).

use mlua::{Lua, Table};

use super::check_size;

fn go_index(found: Option<usize>) -> i64 {
    found.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX))
}

fn list(lua: &Lua, items: Vec<String>) -> mlua::Result<Table> {
    lua.create_sequence_from(items)
}

/// Go's `strings.SplitN` (n < 0: all; n == 0: none).
fn split_n(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(String::from).collect();
        if n < 0 || chars.len() <= usize::try_from(n).unwrap_or(usize::MAX) {
            return chars;
        }
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        let mut out: Vec<String> = chars[..n - 1].to_vec();
        out.push(chars[n - 1..].concat());
        return out;
    }
    if n < 0 {
        s.split(sep).map(String::from).collect()
    } else {
        s.splitn(usize::try_from(n).unwrap_or(usize::MAX), sep)
            .map(String::from)
            .collect()
    }
}

fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut start = true;
    for c in s.chars() {
        if start && c.is_alphabetic() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        start = !(c.is_alphanumeric() || c == '_' || c == '\'');
    }
    out
}

/// Builds the module table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "Compare",
        lua.create_function(|_, (a, b): (String, String)| Ok(a.cmp(&b) as i64))?,
    )?;
    m.set(
        "Contains",
        lua.create_function(|_, (s, sub): (String, String)| Ok(s.contains(&sub)))?,
    )?;
    m.set(
        "ContainsAny",
        lua.create_function(|_, (s, chars): (String, String)| {
            Ok(s.chars().any(|c| chars.contains(c)))
        })?,
    )?;
    m.set(
        "Count",
        lua.create_function(|_, (s, sub): (String, String)| {
            Ok(if sub.is_empty() {
                s.chars().count() + 1
            } else {
                s.matches(&sub).count()
            })
        })?,
    )?;
    m.set(
        "EqualFold",
        lua.create_function(
            |_, (a, b): (String, String)| Ok(a.to_lowercase() == b.to_lowercase()),
        )?,
    )?;
    m.set(
        "Fields",
        lua.create_function(|lua, s: String| {
            list(lua, s.split_whitespace().map(String::from).collect())
        })?,
    )?;
    m.set(
        "HasPrefix",
        lua.create_function(|_, (s, p): (String, String)| Ok(s.starts_with(&p)))?,
    )?;
    m.set(
        "HasSuffix",
        lua.create_function(|_, (s, p): (String, String)| Ok(s.ends_with(&p)))?,
    )?;
    m.set(
        "Index",
        lua.create_function(|_, (s, sub): (String, String)| Ok(go_index(s.find(&sub))))?,
    )?;
    m.set(
        "IndexAny",
        lua.create_function(|_, (s, chars): (String, String)| {
            Ok(go_index(s.find(|c| chars.contains(c))))
        })?,
    )?;
    m.set(
        "LastIndex",
        lua.create_function(|_, (s, sub): (String, String)| Ok(go_index(s.rfind(&sub))))?,
    )?;
    m.set(
        "Join",
        lua.create_function(|_, (items, sep): (Vec<String>, String)| {
            check_size(items.iter().map(|i| i.len() + sep.len()).sum())?;
            Ok(items.join(&sep))
        })?,
    )?;
    m.set(
        "Repeat",
        lua.create_function(|_, (s, n): (String, usize)| {
            check_size(s.len().saturating_mul(n))?;
            Ok(s.repeat(n))
        })?,
    )?;
    m.set(
        "Replace",
        lua.create_function(|_, (s, old, new, n): (String, String, String, i64)| {
            if new.len() > old.len() {
                check_size(
                    s.len()
                        .saturating_add(new.len().saturating_mul(s.len() + 1)),
                )?;
            }
            Ok(if n < 0 {
                s.replace(&old, &new)
            } else {
                s.replacen(&old, &new, usize::try_from(n).unwrap_or(0))
            })
        })?,
    )?;
    m.set(
        "ReplaceAll",
        lua.create_function(|_, (s, old, new): (String, String, String)| {
            if new.len() > old.len() {
                check_size(s.len().saturating_mul(new.len().max(1)))?;
            }
            Ok(s.replace(&old, &new))
        })?,
    )?;
    m.set(
        "Split",
        lua.create_function(|lua, (s, sep): (String, String)| list(lua, split_n(&s, &sep, -1)))?,
    )?;
    m.set(
        "SplitN",
        lua.create_function(|lua, (s, sep, n): (String, String, i64)| {
            list(lua, split_n(&s, &sep, n))
        })?,
    )?;
    m.set("Title", lua.create_function(|_, s: String| Ok(title(&s)))?)?;
    m.set(
        "ToLower",
        lua.create_function(|_, s: String| Ok(s.to_lowercase()))?,
    )?;
    m.set(
        "ToUpper",
        lua.create_function(|_, s: String| Ok(s.to_uppercase()))?,
    )?;
    m.set(
        "ToTitle",
        lua.create_function(|_, s: String| Ok(s.to_uppercase()))?,
    )?;
    m.set(
        "Trim",
        lua.create_function(|_, (s, cut): (String, String)| {
            Ok(s.trim_matches(|c| cut.contains(c)).to_owned())
        })?,
    )?;
    m.set(
        "TrimLeft",
        lua.create_function(|_, (s, cut): (String, String)| {
            Ok(s.trim_start_matches(|c| cut.contains(c)).to_owned())
        })?,
    )?;
    m.set(
        "TrimRight",
        lua.create_function(|_, (s, cut): (String, String)| {
            Ok(s.trim_end_matches(|c| cut.contains(c)).to_owned())
        })?,
    )?;
    m.set(
        "TrimPrefix",
        lua.create_function(|_, (s, p): (String, String)| {
            Ok(s.strip_prefix(&p).unwrap_or(&s).to_owned())
        })?,
    )?;
    m.set(
        "TrimSuffix",
        lua.create_function(|_, (s, p): (String, String)| {
            Ok(s.strip_suffix(&p).unwrap_or(&s).to_owned())
        })?,
    )?;
    m.set(
        "TrimSpace",
        lua.create_function(|_, s: String| Ok(s.trim().to_owned()))?,
    )?;
    Ok(m)
}
