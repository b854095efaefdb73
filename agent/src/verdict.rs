//! Sveltos' `evaluate()` contracts: what a script must return, checked strictly.

use std::borrow::Borrow;

use mlua::Value as LuaValue;
use serde_json::Value;

use crate::convert::{from_lua, to_lua};
use crate::runtime::{LuaRuntime, Script};

/// The answer of a per-object `evaluate()`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    /// Whether the object is an event.
    pub matching: bool,
    /// The script's optional message.
    pub message: String,
}

/// The answer of an `aggregatedSelection` script.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Aggregated {
    /// The objects the script returned (they replace the selected ones).
    pub resources: Vec<Value>,
    /// The script's optional message.
    pub message: String,
}

/// Runs the per-object contract: global `obj` and first argument, returns `{matching, message}`.
pub fn evaluate_object(
    runtime: &LuaRuntime,
    script: &Script,
    object: &Value,
) -> Result<Verdict, String> {
    let arg = runtime.guarded(|lua| to_lua(lua, object))?;
    let out = runtime.call_evaluate(script, "obj", arg)?;
    let LuaValue::Table(table) = out else {
        return Err("lua script output is not a lua table".into());
    };
    let matching = match table
        .raw_get::<LuaValue>("matching")
        .map_err(|e| e.to_string())?
    {
        LuaValue::Nil => false,
        LuaValue::Boolean(b) => b,
        other => {
            return Err(format!(
                "returned `matching` must be a boolean, not a {}",
                other.type_name()
            ));
        }
    };
    let message = message(&table)?;
    Ok(Verdict { matching, message })
}

fn message(table: &mlua::Table) -> Result<String, String> {
    match table
        .raw_get::<LuaValue>("message")
        .map_err(|e| e.to_string())?
    {
        LuaValue::Nil => Ok(String::new()),
        LuaValue::String(s) => Ok(s.to_string_lossy()),
        other => Err(format!(
            "returned `message` must be a string, not a {}",
            other.type_name()
        )),
    }
}

/// Runs the aggregated contract: global `resources` and first argument, returns
/// `{resources = {...}, message}`; every returned resource must be an object.
pub fn evaluate_aggregated(
    runtime: &LuaRuntime,
    script: &Script,
    objects: &[impl Borrow<Value>],
) -> Result<Aggregated, String> {
    let arg = runtime.guarded(|lua| {
        let table = lua.create_table_with_capacity(objects.len(), 0)?;
        for (i, object) in objects.iter().enumerate() {
            table.raw_set(i + 1, to_lua(lua, object.borrow())?)?;
        }
        Ok(LuaValue::Table(table))
    })?;
    let out = runtime.call_evaluate(script, "resources", arg)?;
    let LuaValue::Table(table) = out else {
        return Err("lua script output is not a lua table".into());
    };
    let message = message(&table)?;
    let resources = match table
        .raw_get::<LuaValue>("resources")
        .map_err(|e| e.to_string())?
    {
        LuaValue::Nil => Vec::new(),
        LuaValue::Table(list) => {
            let len = list.raw_len();
            let mut out = Vec::with_capacity(len);
            for i in 1..=len {
                let item: LuaValue = list.raw_get(i).map_err(|e| e.to_string())?;
                match from_lua(&item)? {
                    Value::Object(map) => out.push(Value::Object(map)),
                    _ => {
                        return Err(format!(
                            "returned resources[{i}] is a {}, not an object",
                            item.type_name()
                        ));
                    }
                }
            }
            if len == 0 && !list.is_empty() {
                return Err("returned `resources` must be an array of objects".into());
            }
            out
        }
        other => {
            return Err(format!(
                "returned `resources` must be a table, not a {}",
                other.type_name()
            ));
        }
    };
    Ok(Aggregated { resources, message })
}
