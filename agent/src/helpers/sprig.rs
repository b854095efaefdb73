//! `require("sprig")`: the string functions of Sprig that make sense in a filter, called
//! through the template engine's own Sprig (one implementation, Go's behaviour: a template
//! and a script given the same arguments get the same answer).

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
    let sprig = template::sprig::sprig_funcs();
    let m = lua.create_table()?;
    for name in FUNCTIONS {
        let Some(function) = sprig.get(name).cloned() else {
            continue;
        };
        m.set(
            name,
            lua.create_function(move |lua, args: MultiValue| call(lua, name, &function, args))?,
        )?;
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
    match (function.body)(&values) {
        Ok(Value::String(s)) => {
            check_size(s.len())?;
            Ok(MultiValue::from_iter([LuaValue::String(
                lua.create_string(s.as_bytes())?,
            )]))
        }
        Ok(value) => {
            let json = serde_json::Value::from(&value);
            Ok(MultiValue::from_iter([crate::convert::to_lua(lua, &json)?]))
        }
        Err(error) => fail(lua, &format!("sprig.{name}: {error}")),
    }
}

/// `arg` as a value of Go type `param`.
fn argument(lua: &Lua, param: Param, arg: LuaValue) -> Result<Value, String> {
    let plain = |e: mlua::Error| match e {
        mlua::Error::FromLuaConversionError { from, to, .. } => {
            format!("{from} is not a {to}")
        }
        other => other.to_string(),
    };
    Ok(match param {
        Param::String => match &arg {
            // Lua's own coercion: numbers read as strings where strings are wanted.
            LuaValue::String(s) => Value::string(s.to_string_lossy()),
            _ => Value::string(String::from_lua(arg, lua).map_err(plain)?),
        },
        Param::Int => Value::Int(i64::from_lua(arg, lua).map_err(plain)?),
        Param::Int64 => Value::Int64(i64::from_lua(arg, lua).map_err(plain)?),
        Param::Float => Value::Float(f64::from_lua(arg, lua).map_err(plain)?),
        Param::Bool => Value::Bool(bool::from_lua(arg, lua).map_err(plain)?),
        Param::Any | Param::List | Param::Map | Param::Object(_) => {
            Value::from(crate::convert::from_lua(&arg)?)
        }
    })
}
