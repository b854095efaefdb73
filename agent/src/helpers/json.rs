//! `require("json")`: decode, encode, fromYAML, toYAML.

use mlua::{Lua, MultiValue, Table, Value as LuaValue};
use serde_json::Value;

use super::{check_size, fail, one};
use crate::convert::{from_lua, to_lua};

/// Builds the module table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("null", LuaValue::NULL)?;
    m.set(
        "decode",
        lua.create_function(|lua, s: mlua::LuaString| {
            match serde_json::from_slice::<Value>(&s.as_bytes()) {
                Ok(v) => Ok(one(to_lua(lua, &v)?)),
                Err(e) => fail(lua, &e.to_string()),
            }
        })?,
    )?;
    m.set(
        "encode",
        lua.create_function(|lua, v: LuaValue| match from_lua(lua, &v) {
            Ok(v) => text(
                lua,
                serde_json::to_string(&empty_as_array(v)).map_err(|e| e.to_string()),
            ),
            Err(e) => fail(lua, &e),
        })?,
    )?;
    m.set(
        "fromYAML",
        lua.create_function(|lua, s: mlua::LuaString| {
            match serde_saphyr::from_str::<Value>(&s.to_string_lossy()) {
                Ok(v) => Ok(one(to_lua(lua, &v)?)),
                Err(e) => fail(lua, &e.to_string()),
            }
        })?,
    )?;
    m.set(
        "toYAML",
        lua.create_function(|lua, v: LuaValue| match from_lua(lua, &v) {
            Ok(v) => text(
                lua,
                serde_saphyr::to_string(&empty_as_array(v)).map_err(|e| e.to_string()),
            ),
            Err(e) => fail(lua, &e),
        })?,
    )?;
    Ok(m)
}

fn text(lua: &Lua, result: Result<String, String>) -> mlua::Result<MultiValue> {
    match result {
        Ok(s) => {
            check_size(s.len())?;
            Ok(one(LuaValue::String(lua.create_string(s)?)))
        }
        Err(e) => fail(lua, &e),
    }
}

/// Sveltos encodes an empty Lua table as `[]`; so do we, at every depth.
fn empty_as_array(v: Value) -> Value {
    match v {
        Value::Object(map) if map.is_empty() => Value::Array(Vec::new()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, empty_as_array(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(empty_as_array).collect()),
        other => other,
    }
}
