//! Functions templates call: their Go signatures (so arguments are checked as Go's reflection
//! checks them) and the maps that name them.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::value::Value;

/// A Go parameter type; an argument must be assignable to it, as in Go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// `interface{}`: anything, nil included.
    Any,
    /// `string`.
    String,
    /// `int` (integer constants, `len` results).
    Int,
    /// `int64` (integer constants, JSON integers).
    Int64,
    /// `float64` (number constants, JSON floats).
    Float,
    /// `bool`.
    Bool,
    /// `[]interface{}`.
    List,
    /// `map[string]interface{}`.
    Map,
    /// A Go object type by name (`*semver.Version`): only objects of that type fit.
    Object(&'static str),
}

impl Param {
    /// Go's spelling of the type, as error messages show it.
    pub fn go_name(self) -> &'static str {
        match self {
            Param::Any => "interface {}",
            Param::String => "string",
            Param::Int => "int",
            Param::Int64 => "int64",
            Param::Float => "float64",
            Param::Bool => "bool",
            Param::List => "[]interface {}",
            Param::Map => "map[string]interface {}",
            Param::Object(name) => name,
        }
    }

    /// Whether a value of this Go type can be nil (so a nil argument is its zero value).
    pub fn can_be_nil(self) -> bool {
        match self {
            Param::Any | Param::List | Param::Map => true,
            Param::Object(name) => name.starts_with('*'),
            _ => false,
        }
    }

    /// The zero value of the type, given for a missing argument.
    pub fn zero(self) -> Value {
        match self {
            Param::Any => Value::Null,
            Param::String => Value::string(""),
            Param::Int => Value::Int(0),
            Param::Int64 => Value::Int64(0),
            Param::Float => Value::float(0.0),
            Param::Bool => Value::bool(false),
            Param::List => Value::list(Vec::new()),
            Param::Map => Value::Map(Default::default()),
            Param::Object(_) => Value::Null,
        }
    }

    /// Whether `value` is assignable to this type without conversion.
    pub fn accepts(self, value: &Value) -> bool {
        if let (Param::Object(name), Value::Object(object)) = (self, value) {
            return object.type_name() == name;
        }
        matches!(
            (self, value),
            (Param::Any, _)
                | (Param::String, Value::String(_))
                | (Param::Int, Value::Int(_))
                | (Param::Int64, Value::Int64(_))
                | (Param::Float, Value::Float(_))
                | (Param::Bool, Value::Bool(_))
                | (Param::List, Value::List(_))
                | (Param::Map, Value::Map(_))
        )
    }
}

/// The error a function reports; the executor wraps it as `error calling NAME: MESSAGE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncError(pub String);

impl fmt::Display for FuncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<T: Into<String>> From<T> for FuncError {
    fn from(message: T) -> Self {
        FuncError(message.into())
    }
}

impl From<crate::dict::Cycle> for FuncError {
    fn from(cycle: crate::dict::Cycle) -> Self {
        FuncError(cycle.to_string())
    }
}

impl From<crate::value::TooDeep> for FuncError {
    fn from(too_deep: crate::value::TooDeep) -> Self {
        FuncError(too_deep.to_string())
    }
}

/// What a function returns: a value, or the error Go's function would return (or panic with).
pub type FuncResult<T = Value> = Result<T, FuncError>;

/// The body of a function: receives arguments already checked against its signature.
pub type NativeFn = dyn Fn(&[Value]) -> FuncResult + Send + Sync;

/// A callable function with its Go signature.
#[derive(Clone)]
pub struct Function {
    /// Types of the fixed parameters.
    pub params: Vec<Param>,
    /// Element type of a trailing `...T` parameter, if any.
    pub variadic: Option<Param>,
    /// The body.
    pub body: Arc<NativeFn>,
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function")
            .field("params", &self.params)
            .field("variadic", &self.variadic)
            .finish_non_exhaustive()
    }
}

impl Function {
    /// A function of fixed parameters.
    pub fn new(
        params: &[Param],
        body: impl Fn(&[Value]) -> FuncResult + Send + Sync + 'static,
    ) -> Self {
        Function {
            params: params.to_vec(),
            variadic: None,
            body: Arc::new(body),
        }
    }

    /// A function whose last parameter is `...variadic`.
    pub fn variadic(
        params: &[Param],
        variadic: Param,
        body: impl Fn(&[Value]) -> FuncResult + Send + Sync + 'static,
    ) -> Self {
        Function {
            params: params.to_vec(),
            variadic: Some(variadic),
            body: Arc::new(body),
        }
    }

    /// The type of argument `index`, or `None` past the end of a fixed signature.
    pub fn param(&self, index: usize) -> Option<Param> {
        self.params.get(index).copied().or(self.variadic)
    }
}

/// Functions by name, as Go's `template.FuncMap`.
#[derive(Debug, Clone, Default)]
pub struct FuncMap {
    functions: HashMap<String, Function>,
}

impl FuncMap {
    /// An empty map.
    pub fn new() -> Self {
        FuncMap::default()
    }

    /// Adds or replaces `name`.
    pub fn insert(&mut self, name: impl Into<String>, function: Function) {
        self.functions.insert(name.into(), function);
    }

    /// Adds every function of `other`, replacing those of the same name.
    pub fn extend(&mut self, other: &FuncMap) {
        for (name, function) in &other.functions {
            self.functions.insert(name.clone(), function.clone());
        }
    }

    /// Removes `name`.
    pub fn remove(&mut self, name: &str) {
        self.functions.remove(name);
    }

    /// The function called `name`.
    pub fn get(&self, name: &str) -> Option<&Function> {
        self.functions.get(name)
    }

    /// Whether `name` is defined.
    pub fn contains(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }
}
