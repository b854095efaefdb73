//! `require("sprig")`: the string functions of Sprig that make sense in a filter.

use base64::Engine;
use mlua::{Lua, MultiValue, Table, Value as LuaValue};

use super::{check_size, fail, one};

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Builds the module table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "quote",
        lua.create_function(|_, s: String| Ok(format!("{s:?}")))?,
    )?;
    m.set(
        "squote",
        lua.create_function(|_, s: String| Ok(format!("'{s}'")))?,
    )?;
    m.set(
        "nospace",
        lua.create_function(|_, s: String| Ok(s.split_whitespace().collect::<String>()))?,
    )?;
    m.set(
        "snakecase",
        lua.create_function(|_, s: String| Ok(words(&s).join("_")))?,
    )?;
    m.set(
        "kebabcase",
        lua.create_function(|_, s: String| Ok(words(&s).join("-")))?,
    )?;
    m.set(
        "camelcase",
        lua.create_function(|_, s: String| {
            Ok(words(&s).iter().map(|w| capitalize(w)).collect::<String>())
        })?,
    )?;
    m.set(
        "trunc",
        lua.create_function(|_, (n, s): (i64, String)| {
            let count = s.chars().count();
            let n = usize::try_from(n.unsigned_abs())
                .unwrap_or(usize::MAX)
                .min(count);
            Ok(if n == count {
                s
            } else {
                s.chars().take(n).collect()
            })
        })?,
    )?;
    m.set(
        "substr",
        lua.create_function(|_, (start, end, s): (usize, usize, String)| {
            Ok(s.chars()
                .skip(start)
                .take(end.saturating_sub(start))
                .collect::<String>())
        })?,
    )?;
    m.set(
        "b64enc",
        lua.create_function(|_, s: mlua::LuaString| {
            check_size(s.as_bytes().len() / 3 * 4 + 4)?;
            Ok(base64::engine::general_purpose::STANDARD.encode(&*s.as_bytes()))
        })?,
    )?;
    m.set(
        "b64dec",
        lua.create_function(|lua, s: mlua::LuaString| -> mlua::Result<MultiValue> {
            match base64::engine::general_purpose::STANDARD.decode(&*s.as_bytes()) {
                Ok(out) => Ok(one(LuaValue::String(lua.create_string(out)?))),
                Err(e) => fail(lua, &e.to_string()),
            }
        })?,
    )?;
    m.set(
        "indent",
        lua.create_function(|_, (n, s): (usize, String)| {
            check_size(
                s.len()
                    .saturating_add(n.saturating_mul(s.lines().count() + 1)),
            )?;
            let pad = " ".repeat(n);
            Ok(s.split('\n')
                .map(|l| format!("{pad}{l}"))
                .collect::<Vec<_>>()
                .join("\n"))
        })?,
    )?;
    m.set(
        "ternary",
        lua.create_function(|_, (a, b, c): (LuaValue, LuaValue, bool)| Ok(if c { a } else { b }))?,
    )?;
    m.set(
        "empty",
        lua.create_function(|_, v: LuaValue| {
            Ok(match &v {
                LuaValue::Nil => true,
                LuaValue::Boolean(b) => !b,
                LuaValue::Integer(i) => *i == 0,
                LuaValue::Number(f) => *f == 0.0,
                LuaValue::String(s) => s.as_bytes().is_empty(),
                LuaValue::Table(t) => t.is_empty(),
                _ => v.is_null(),
            })
        })?,
    )?;
    m.set(
        "sortAlpha",
        lua.create_function(|lua, mut items: Vec<String>| {
            items.sort();
            lua.create_sequence_from(items)
        })?,
    )?;
    m.set(
        "uniq",
        lua.create_function(|lua, items: Vec<String>| {
            let mut seen = std::collections::HashSet::new();
            lua.create_sequence_from(items.into_iter().filter(|i| seen.insert(i.clone())))
        })?,
    )?;
    m.set(
        "base",
        lua.create_function(|_, s: String| {
            Ok(s.rsplit('/').next().unwrap_or_default().to_owned())
        })?,
    )?;
    Ok(m)
}
