//! `require("sprig")`: the string functions of Sprig that make sense in a filter, called
//! through the template engine's own Sprig (one implementation, Go's behaviour: a template
//! and a script given the same arguments get the same answer).

use base64::Engine;
use mlua::{FromLua, Lua, MultiValue, Table, Value as LuaValue};
use template::{Function, Param, Value};

use super::{check_size, fail};

/// The functions the module offers, by Sprig's names.
const FUNCTIONS: [&str; 16] = [
    "quote",
    "squote",
    "nospace",
    "snakecase",
    "kebabcase",
    "camelcase",
    "trunc",
    "substr",
    "b64enc",
    "b64dec",
    "indent",
    "ternary",
    "empty",
    "sortAlpha",
    "uniq",
    "base",
];

/// Builds the module table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    // Made once per process: every script that requires sprig reads the same map.
    static SPRIG: std::sync::OnceLock<template::FuncMap> = std::sync::OnceLock::new();
    let sprig = SPRIG.get_or_init(template::sprig::sprig_funcs);
    let m = lua.create_table()?;
    for name in FUNCTIONS {
        let Some(function) = sprig.get(name).cloned() else {
            continue;
        };
        let call = move |lua: &Lua, args: MultiValue| match (name, args.front()) {
            // Lua strings are bytes, the template engine's are text: base64 of binary data
            // keeps its bytes here (Go's strings are bytes too). Only a refusal is Sprig's.
            ("b64enc", Some(LuaValue::String(s))) if args.len() == 1 => {
                let bytes = s.as_bytes();
                check_size(bytes.len() / 3 * 4 + 4)?;
                let encoded = base64::engine::general_purpose::STANDARD.encode(&*bytes);
                Ok(MultiValue::from_iter([LuaValue::String(
                    lua.create_string(encoded)?,
                )]))
            }
            ("b64dec", Some(LuaValue::String(s))) if args.len() == 1 => {
                match base64::engine::general_purpose::STANDARD.decode(&*s.as_bytes()) {
                    Ok(bytes) => Ok(MultiValue::from_iter([LuaValue::String(
                        lua.create_string(bytes)?,
                    )])),
                    Err(_) => self::call(lua, name, &function, args),
                }
            }
            _ => self::call(lua, name, &function, args),
        };
        m.set(name, lua.create_function(call)?)?;
    }
    Ok(m)
}

/// Calls Sprig's `function` with Lua's `args`, converted to the types of its Go signature
/// (as Lua would coerce them); a refused argument or call is `(nil, message)`.
fn call(lua: &Lua, name: &str, function: &Function, args: MultiValue) -> mlua::Result<MultiValue> {
    let wanted = function.params.len();
    if args.len() < wanted || (function.variadic.is_none() && args.len() > wanted) {
        let message = format!("sprig.{name} wants {wanted} arguments, got {}", args.len());
        return fail(lua, &message);
    }
    let mut values = Vec::with_capacity(args.len());
    for (index, arg) in args.into_iter().enumerate() {
        let param = function.param(index).unwrap_or(Param::Any);
        match argument(lua, param, arg) {
            Ok(value) => values.push(value),
            Err(reason) => {
                let message = format!("sprig.{name}: argument {}: {reason}", index + 1);
                return fail(lua, &message);
            }
        }
    }
    match &(function.body)(&values) {
        Ok(Value::String(s)) => {
            check_size(s.len())?;
            Ok(MultiValue::from_iter([LuaValue::String(
                lua.create_string(s.as_bytes())?,
            )]))
        }
        // Go's nil is Lua's nil (not the JSON null a conversion would make, which is truthy).
        Ok(Value::Null) => Ok(MultiValue::from_iter([LuaValue::Nil])),
        Ok(value) => {
            let json = match value.to_json() {
                Ok(json) => json,
                Err(error) => return fail(lua, &format!("sprig.{name}: {error}")),
            };
            Ok(MultiValue::from_iter([crate::convert::to_lua(lua, &json)?]))
        }
        Err(error) => fail(lua, &format!("sprig.{name}: {error}")),
    }
}

/// `arg` as an integer: a float only when it has no fraction (Go refuses 2.9 for an int, and
/// Lua's own integer functions do too).
fn integer(lua: &Lua, arg: LuaValue) -> mlua::Result<i64> {
    match arg {
        LuaValue::Number(f) if f.fract() != 0.0 || !f.is_finite() => {
            Err(mlua::Error::runtime(format!("{f} is not an integer")))
        }
        other => i64::from_lua(other, lua),
    }
}

/// `arg` as a value of Go type `param`.
fn argument(lua: &Lua, param: Param, arg: LuaValue) -> Result<Value, String> {
    let plain = |e: mlua::Error| match e {
        mlua::Error::FromLuaConversionError { from, to, .. } => {
            format!("{from} is not a {to}")
        }
        mlua::Error::RuntimeError(message) => message,
        other => other.to_string(),
    };
    Ok(match param {
        Param::String => match &arg {
            // Lua's own coercion: numbers read as strings where strings are wanted.
            LuaValue::String(s) => Value::string(s.to_string_lossy()),
            _ => Value::string(String::from_lua(arg, lua).map_err(plain)?),
        },
        Param::Int => Value::Int(integer(lua, arg).map_err(plain)?),
        Param::Int64 => Value::Int64(integer(lua, arg).map_err(plain)?),
        Param::Float => Value::float(f64::from_lua(arg, lua).map_err(plain)?),
        Param::Bool => Value::bool(bool::from_lua(arg, lua).map_err(plain)?),
        Param::Any | Param::List | Param::Map | Param::Object(_) => {
            Value::from(crate::convert::from_lua(lua, &arg)?)
        }
    })
}
