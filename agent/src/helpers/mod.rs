//! The helpers Sveltos offers to Lua: global functions and `require`-able modules.

mod json;
mod runes;
mod sprig;
mod strings;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use base64::Engine;
use mlua::{Lua, MultiValue, Table, Value as LuaValue};

/// Largest string a helper may build (helpers allocate outside Lua's memory limit).
pub const MAX_OUTPUT: usize = 16 << 20;

/// Errors out when `len` bytes would exceed [`MAX_OUTPUT`].
pub(crate) fn check_size(len: usize) -> mlua::Result<()> {
    if len > MAX_OUTPUT {
        return Err(mlua::Error::runtime(format!(
            "helper output larger than {MAX_OUTPUT} bytes"
        )));
    }
    Ok(())
}

/// Builds `{globals = {...}, preload = {name = constructor}, __exhausted = fn}`.
pub fn register(lua: &Lua, budget: Arc<AtomicI64>) -> mlua::Result<Table> {
    let globals = lua.create_table()?;
    globals.set("base64Encode", lua.create_function(base64_encode)?)?;
    globals.set("base64Decode", lua.create_function(base64_decode)?)?;
    globals.set(
        "getLabel",
        lua.create_function(|lua, args: MultiValue| metadata_entry(lua, args, "labels"))?,
    )?;
    globals.set(
        "getAnnotation",
        lua.create_function(|lua, args: MultiValue| metadata_entry(lua, args, "annotations"))?,
    )?;
    let preload = lua.create_table()?;
    preload.set("json", lua.create_function(|lua, ()| json::module(lua))?)?;
    preload.set(
        "strings",
        lua.create_function(|lua, ()| strings::module(lua))?,
    )?;
    preload.set("runes", lua.create_function(|lua, ()| runes::module(lua))?)?;
    preload.set("sprig", lua.create_function(|lua, ()| sprig::module(lua))?)?;
    let modules = lua.create_table()?;
    modules.set("globals", globals)?;
    modules.set("preload", preload)?;
    modules.set(
        "__exhausted",
        lua.create_function(move |_, ()| Ok(budget.load(Ordering::Relaxed) <= 0))?,
    )?;
    Ok(modules)
}

/// `(nil, message)`, Sveltos' way for helpers to report failure.
pub(crate) fn fail(lua: &Lua, message: &str) -> mlua::Result<MultiValue> {
    Ok(MultiValue::from_iter([
        LuaValue::Nil,
        LuaValue::String(lua.create_string(message)?),
    ]))
}

/// One value as a MultiValue.
pub(crate) fn one(value: LuaValue) -> MultiValue {
    MultiValue::from_iter([value])
}

fn base64_encode(lua: &Lua, s: mlua::LuaString) -> mlua::Result<MultiValue> {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return fail(lua, "provided string is empty");
    }
    check_size(bytes.len() / 3 * 4 + 4)?;
    let out = base64::engine::general_purpose::STANDARD.encode(&*bytes);
    Ok(one(LuaValue::String(lua.create_string(out)?)))
}

fn base64_decode(lua: &Lua, s: mlua::LuaString) -> mlua::Result<MultiValue> {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return fail(lua, "provided string is empty");
    }
    match base64::engine::general_purpose::STANDARD.decode(&*bytes) {
        Ok(out) => Ok(one(LuaValue::String(lua.create_string(out)?))),
        // Sveltos' message, typo included, so scripts comparing it keep working.
        Err(_) => fail(lua, "deconding failed"),
    }
}

fn metadata_entry(lua: &Lua, args: MultiValue, field: &str) -> mlua::Result<MultiValue> {
    if args.len() != 2 {
        return fail(lua, "expected 2 arguments (table, key)");
    }
    let (LuaValue::Table(obj), LuaValue::String(key)) = (&args[0], &args[1]) else {
        return fail(lua, "expected 2 arguments (table, key)");
    };
    let metadata: LuaValue = obj.get("metadata")?;
    let LuaValue::Table(metadata) = metadata else {
        return Ok(one(LuaValue::Nil));
    };
    let entries: LuaValue = metadata.get(field)?;
    let LuaValue::Table(entries) = entries else {
        return Ok(one(LuaValue::Nil));
    };
    let value: LuaValue = entries.get(key.clone())?;
    Ok(one(match value {
        LuaValue::String(_) => value,
        _ => LuaValue::Nil,
    }))
}
