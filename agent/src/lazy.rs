//! Objects handed to scripts as shells: tables filled with their members on first touch.
//!
//! Converting a whole API object into Lua tables costs more than most scripts do, and most
//! read a few fields (`metadata.labels`, `spec.ports`), never `managedFields`. A shell is an
//! empty table with the runtime's shell metatable (`shell.lua`); the first read, write,
//! length or iteration fills it with its node's members, nested objects and arrays as shells
//! of their own, and takes the metatable away, so from then on it is the plain table eager
//! conversion would have made. The sandbox's `next`, `rawget`, `rawset`, `rawlen`,
//! `getmetatable` and `setmetatable` fill a shell before they look at it, and
//! [`crate::convert::from_lua`] does too, so no script or helper can tell a shell from the
//! table it stands for.
//!
//! Filling is one level at a time, never recursive, so objects of any depth can be read; only
//! turning a table back into JSON ([`crate::convert::from_lua`]) bounds the depth.
//!
//! Shells reach the borrowed object through a function of the call's [`mlua::Scope`]: once the
//! call is over, a shell a script kept somewhere can no longer be filled, and touching it is a
//! Lua error rather than a read of freed data.

use std::cell::RefCell;
use std::collections::HashMap;

use mlua::{Lua, Table, Value as LuaValue};
use serde_json::Value;

use crate::convert::number_to_lua;
use crate::runtime::LuaRuntime;

/// The nodes of the shells made during one call, by the address of their table.
type Nodes<'a> = RefCell<HashMap<usize, &'a Value>>;

/// Runs `body` with `objects` as shells (in order), filling them on demand until it returns.
pub fn with_shells<R>(
    runtime: &LuaRuntime,
    objects: &[&Value],
    body: impl FnOnce(Vec<LuaValue>) -> Result<R, String>,
) -> Result<R, String> {
    let lua = runtime.lua();
    let nodes: Nodes<'_> = RefCell::new(HashMap::new());
    let shell = runtime.shell_metatable();
    let slot = runtime.shell_slot();
    let scoped = lua.scope(|scope| {
        let fill = scope.create_function(|lua, table: Table| fill(lua, &nodes, shell, &table))?;
        let args = runtime.convert(|lua| {
            slot.raw_set("fill", fill)?;
            objects
                .iter()
                .map(|object| root(lua, &nodes, shell, object))
                .collect::<mlua::Result<Vec<_>>>()
        });
        let out = args.and_then(body);
        let unset = runtime.convert(|_| slot.raw_set("fill", LuaValue::Nil));
        Ok(out.and_then(|out| unset.map(|()| out)))
    });
    scoped.map_err(|e| e.to_string())?
}

/// Fills `table`, a shell made during this call, with its node's members.
fn fill<'a>(lua: &Lua, nodes: &Nodes<'a>, shell: &Table, table: &Table) -> mlua::Result<()> {
    let node = nodes.borrow_mut().remove(&(table.to_pointer() as usize));
    let Some(node) = node else {
        return Err(mlua::Error::runtime(
            "an object handed to evaluate() can be read only during that call",
        ));
    };
    // The members are bounded by the object the agent already holds; see LuaRuntime::convert.
    let limit = lua.set_memory_limit(0)?;
    let filled =
        fill_members(lua, nodes, shell, table, node).and_then(|()| table.set_metatable(None));
    lua.set_memory_limit(limit)?;
    filled
}

fn fill_members<'a>(
    lua: &Lua,
    nodes: &Nodes<'a>,
    shell: &Table,
    table: &Table,
    node: &'a Value,
) -> mlua::Result<()> {
    match node {
        Value::Object(map) => {
            for (key, item) in map {
                let key = key.as_str();
                match item {
                    Value::Null => {}
                    // Strings pushed straight from the object: no handle to make and drop.
                    Value::String(s) => table.raw_set(key, s.as_str())?,
                    _ => table.raw_set(key, member(lua, nodes, shell, item)?)?,
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => table.raw_set(i + 1, s.as_str())?,
                    _ => table.raw_set(i + 1, member(lua, nodes, shell, item)?)?,
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// An object handed to a script: filled at once, as every script reads its top level.
fn root<'a>(
    lua: &Lua,
    nodes: &Nodes<'a>,
    shell: &Table,
    object: &'a Value,
) -> mlua::Result<LuaValue> {
    if !object.is_object() {
        return member(lua, nodes, shell, object);
    }
    let table = sized_table(lua, object)?;
    fill_members(lua, nodes, shell, &table, object)?;
    Ok(LuaValue::Table(table))
}

/// A member as Lua sees it: scalars as values, non-empty objects and arrays as shells.
fn member<'a>(
    lua: &Lua,
    nodes: &Nodes<'a>,
    shell: &Table,
    value: &'a Value,
) -> mlua::Result<LuaValue> {
    Ok(match value {
        Value::Null => LuaValue::NULL,
        Value::Bool(b) => LuaValue::Boolean(*b),
        Value::Number(n) => number_to_lua(n),
        Value::String(s) => LuaValue::String(lua.create_string(s)?),
        Value::Array(items) if items.is_empty() => LuaValue::Table(lua.create_table()?),
        Value::Object(map) if map.is_empty() => LuaValue::Table(lua.create_table()?),
        Value::Array(_) | Value::Object(_) => {
            let table = sized_table(lua, value)?;
            table.set_metatable(Some(shell.clone()))?;
            nodes
                .borrow_mut()
                .insert(table.to_pointer() as usize, value);
            LuaValue::Table(table)
        }
    })
}

/// A table sized as eager conversion sizes it for `value`, so that `pairs` visits its
/// members in the same order once they are in.
fn sized_table(lua: &Lua, value: &Value) -> mlua::Result<Table> {
    match value {
        Value::Array(items) => lua.create_table_with_capacity(items.len(), 0),
        Value::Object(map) => lua.create_table_with_capacity(0, map.len()),
        _ => lua.create_table(),
    }
}
