//! Sveltos' `evaluate()` contracts: what a script must return, checked strictly.

use std::borrow::Borrow;

use mlua::Value as LuaValue;
use serde_json::Value;

use crate::convert::{fill_shell, from_lua};
use crate::lazy::with_shells;
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
    with_shells(runtime, &[object], |mut args| {
        let arg = args.pop().unwrap_or(LuaValue::Nil);
        let out = runtime.call_evaluate(script, "obj", arg)?;
        let LuaValue::Table(table) = out else {
            return Err("lua script output is not a lua table".into());
        };
        fill_shell(runtime.lua(), &table).map_err(|e| e.to_string())?;
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
    })
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
    let objects: Vec<&Value> = objects.iter().map(Borrow::borrow).collect();
    with_shells(runtime, &objects, |args| {
        let list = runtime.convert(|lua| lua.create_sequence_from(args))?;
        let out = runtime.call_evaluate(script, "resources", LuaValue::Table(list))?;
        let LuaValue::Table(table) = out else {
            return Err("lua script output is not a lua table".into());
        };
        fill_shell(runtime.lua(), &table).map_err(|e| e.to_string())?;
        let message = message(&table)?;
        let resources = resources(runtime, &table)?;
        Ok(Aggregated { resources, message })
    })
}

/// The objects an aggregated script returned in `resources`.
fn resources(runtime: &LuaRuntime, table: &mlua::Table) -> Result<Vec<Value>, String> {
    match table
        .raw_get::<LuaValue>("resources")
        .map_err(|e| e.to_string())?
    {
        LuaValue::Nil => Ok(Vec::new()),
        LuaValue::Table(list) => {
            fill_shell(runtime.lua(), &list).map_err(|e| e.to_string())?;
            let len = list.raw_len();
            let mut out = Vec::with_capacity(len);
            for i in 1..=len {
                let item: LuaValue = list.raw_get(i).map_err(|e| e.to_string())?;
                match from_lua(runtime.lua(), &item)? {
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
            Ok(out)
        }
        other => Err(format!(
            "returned `resources` must be a table, not a {}",
            other.type_name()
        )),
    }
}
