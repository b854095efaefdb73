//! JSON <-> Lua conversion (the documented quirks are in README.md, "Conversions").

use mlua::{Function, Lua, Table, Value as LuaValue};
use serde_json::{Map, Number, Value};

use crate::runtime::{FILL_KEY, SHELL_KEY};

/// Deepest nesting accepted in either direction; deeper data is an error, not a stack overflow.
pub const MAX_DEPTH: usize = 128;

/// Converts a JSON value to Lua: integers stay integers, nulls inside arrays become `json.null`,
/// nulls in objects are absent keys.
pub fn to_lua(lua: &Lua, value: &Value) -> mlua::Result<LuaValue> {
    to_lua_depth(lua, value, 0)
}

fn to_lua_depth(lua: &Lua, value: &Value, depth: usize) -> mlua::Result<LuaValue> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime("object nested too deeply"));
    }
    Ok(match value {
        Value::Null => LuaValue::NULL,
        Value::Bool(b) => LuaValue::Boolean(*b),
        Value::Number(n) => number_to_lua(n),
        Value::String(s) => LuaValue::String(lua.create_string(s)?),
        Value::Array(items) => {
            let table = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                table.raw_set(i + 1, to_lua_depth(lua, item, depth + 1)?)?;
            }
            LuaValue::Table(table)
        }
        Value::Object(map) => LuaValue::Table(object_to_lua(lua, map, depth)?),
    })
}

fn object_to_lua(lua: &Lua, map: &Map<String, Value>, depth: usize) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, map.len())?;
    for (key, item) in map {
        if item.is_null() {
            continue;
        }
        table.raw_set(key.as_str(), to_lua_depth(lua, item, depth + 1)?)?;
    }
    Ok(table)
}

/// A JSON number as Lua holds it: an integer when it is one, a float otherwise.
pub(crate) fn number_to_lua(n: &Number) -> LuaValue {
    if let Some(i) = n.as_i64() {
        LuaValue::Integer(i)
    } else {
        LuaValue::Number(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// Converts a Lua value back to JSON; tables with a positive border become arrays (1..n),
/// other tables objects with stringified keys; integral floats become integers. Shells
/// ([`crate::lazy`]) are filled first.
pub fn from_lua(lua: &Lua, value: &LuaValue) -> Result<Value, String> {
    from_lua_depth(lua, value, 0)
}

fn from_lua_depth(lua: &Lua, value: &LuaValue, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err("value nested too deeply (or a table contains itself)".into());
    }
    Ok(match value {
        LuaValue::Nil => Value::Null,
        LuaValue::Boolean(b) => Value::Bool(*b),
        LuaValue::Integer(i) => Value::from(*i),
        LuaValue::Number(f) => float_to_json(*f),
        LuaValue::String(s) => Value::String(s.to_string_lossy()),
        LuaValue::Table(t) => table_to_json(lua, t, depth)?,
        LuaValue::LightUserData(_) if value.is_null() => Value::Null,
        other => {
            return Err(format!(
                "a {} cannot be converted to JSON",
                other.type_name()
            ));
        }
    })
}

/// Integral floats that fit an i64 become JSON integers; others stay floats (NaN/inf -> null).
pub fn float_to_json(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// Fills `table` if it is a shell, so that its raw members are all there.
pub(crate) fn fill_shell(lua: &Lua, table: &Table) -> mlua::Result<()> {
    let Some(metatable) = table.metatable() else {
        return Ok(());
    };
    let shell: Table = lua.named_registry_value(SHELL_KEY)?;
    if metatable != shell {
        return Ok(());
    }
    let fill: Function = lua.named_registry_value(FILL_KEY)?;
    fill.call(table)
}

fn table_to_json(lua: &Lua, table: &Table, depth: usize) -> Result<Value, String> {
    fill_shell(lua, table).map_err(|e| e.to_string())?;
    let len = table.raw_len();
    if len > 0 {
        let mut items = Vec::with_capacity(len);
        for i in 1..=len {
            let item: LuaValue = table.raw_get(i).map_err(|e| e.to_string())?;
            items.push(from_lua_depth(lua, &item, depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    let mut map = Map::new();
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (key, item) = pair.map_err(|e| e.to_string())?;
        let key = match &key {
            LuaValue::String(s) => s.to_string_lossy(),
            LuaValue::Integer(i) => i.to_string(),
            LuaValue::Number(f) => f.to_string(),
            LuaValue::Boolean(b) => b.to_string(),
            other => {
                return Err(format!(
                    "a {} key cannot be converted to JSON",
                    other.type_name()
                ));
            }
        };
        map.insert(key, from_lua_depth(lua, &item, depth + 1)?);
    }
    Ok(Value::Object(map))
}
