//! `require("runes")`: Unicode character helpers (a rune is one Unicode scalar value).

use mlua::{Lua, Table};

fn first(s: &str) -> Option<char> {
    s.chars().next()
}

/// Builds the module table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    let class = |f: fn(char) -> bool| move |_: &Lua, s: String| Ok(first(&s).is_some_and(f));
    m.set(
        "isdigit",
        lua.create_function(class(|c| c.is_ascii_digit()))?,
    )?;
    m.set("isnumber", lua.create_function(class(char::is_numeric))?)?;
    m.set("isletter", lua.create_function(class(char::is_alphabetic))?)?;
    m.set("islower", lua.create_function(class(char::is_lowercase))?)?;
    m.set("isupper", lua.create_function(class(char::is_uppercase))?)?;
    m.set("isspace", lua.create_function(class(char::is_whitespace))?)?;
    m.set("iscontrol", lua.create_function(class(char::is_control))?)?;
    m.set(
        "ispunct",
        lua.create_function(class(|c| c.is_ascii_punctuation()))?,
    )?;
    m.set("isprint", lua.create_function(class(|c| !c.is_control()))?)?;
    m.set(
        "runecount",
        lua.create_function(|_, s: String| Ok(s.chars().count()))?,
    )?;
    m.set(
        "isvalidutf8",
        lua.create_function(
            |_, s: mlua::LuaString| Ok(std::str::from_utf8(&s.as_bytes()).is_ok()),
        )?,
    )?;
    m.set(
        "reverserunes",
        lua.create_function(|_, s: String| Ok(s.chars().rev().collect::<String>()))?,
    )?;
    m.set(
        "tolower",
        lua.create_function(|_, s: String| Ok(s.to_lowercase()))?,
    )?;
    m.set(
        "toupper",
        lua.create_function(|_, s: String| Ok(s.to_uppercase()))?,
    )?;
    m.set(
        "totitle",
        lua.create_function(|_, s: String| Ok(s.to_uppercase()))?,
    )?;
    m.set(
        "runeat",
        lua.create_function(|_, (s, i): (String, usize)| Ok(s.chars().nth(i).map(String::from)))?,
    )?;
    m.set(
        "containsrune",
        lua.create_function(|_, (s, r): (String, String)| {
            Ok(first(&r).is_some_and(|c| s.contains(c)))
        })?,
    )?;
    m.set(
        "runeslice",
        lua.create_function(|_, (s, from, to): (String, usize, usize)| {
            Ok(s.chars()
                .skip(from)
                .take(to.saturating_sub(from))
                .collect::<String>())
        })?,
    )?;
    Ok(m)
}
