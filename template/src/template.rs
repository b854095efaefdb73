//! The public face of the engine: parse once, execute many times, from any thread.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::ast::Tree;
use crate::builtins::builtin_funcs;
use crate::exec;
use crate::funcs::FuncMap;
use crate::parse::{ParseOptions, parse};
use crate::value::Value;

/// Why a template could not be parsed or executed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The text is not a valid template (Go's parse error text).
    #[error("{0}")]
    Parse(String),
    /// Execution failed (Go's exec error text, with position and context).
    #[error("{0}")]
    Exec(String),
    /// Execution stopped at a limit (output size, steps, depth or time).
    #[error("{0}")]
    Limit(String),
}

/// What to do when a map has no entry for a key (Go's `missingkey=` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissingKey {
    /// Print `<no value>` (Go's `default`/`invalid`).
    #[default]
    Default,
    /// Use the zero value of the map's element type.
    Zero,
    /// Stop with an error.
    Error,
}

/// Bounds that keep a hostile template from hanging or exhausting the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest output, in bytes.
    pub max_output_bytes: usize,
    /// Most evaluation steps (nodes walked, commands run, range iterations).
    pub max_steps: u64,
    /// Deepest `{{template}}` call chain.
    pub max_call_depth: usize,
    /// Deepest nesting of control structures and parentheses at parse time.
    pub max_nesting: usize,
    /// Longest wall time for one execution.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_output_bytes: 8 << 20,
            max_steps: 10_000_000,
            max_call_depth: 200,
            max_nesting: 200,
            timeout: Duration::from_secs(5),
        }
    }
}

/// Parse and execution options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Left delimiter; empty means `{{`.
    pub left_delim: String,
    /// Right delimiter; empty means `}}`.
    pub right_delim: String,
    /// Missing map key behaviour.
    pub missing_key: MissingKey,
    /// Resource bounds.
    pub limits: Limits,
    /// `{{range N}}` over an integer, as Go 1.24 and later (the Go Sveltos builds with)
    /// allow; when false, ranging over an integer is an error as in Go 1.23.
    pub range_over_int: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            left_delim: String::new(),
            right_delim: String::new(),
            missing_key: MissingKey::Default,
            limits: Limits::default(),
            range_over_int: true,
        }
    }
}

/// A parsed template with the templates it defines; cheap to share across threads.
#[derive(Debug, Clone)]
pub struct Template {
    name: String,
    pub(crate) trees: Arc<HashMap<String, Arc<Tree>>>,
    pub(crate) funcs: Arc<FuncMap>,
    pub(crate) options: Options,
}

impl Template {
    /// Parses `text` as template `name`, with `funcs` added to the builtins.
    pub fn parse(
        name: &str,
        text: &str,
        funcs: Arc<FuncMap>,
        options: Options,
    ) -> Result<Template, Error> {
        let has_function = |f: &str| funcs.contains(f) || builtin_funcs().contains(f);
        let parse_options = ParseOptions {
            left: &options.left_delim,
            right: &options.right_delim,
            has_function: &has_function,
            max_nesting: options.limits.max_nesting,
        };
        let trees = parse(name, text, &parse_options).map_err(Error::Parse)?;
        Ok(Template {
            name: name.to_string(),
            trees: Arc::new(trees),
            funcs,
            options,
        })
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Names of every template defined, sorted.
    pub fn defined(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.trees.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// Executes the template with `data` as dot (`Value::Null` is Go's nil).
    pub fn execute(&self, data: &Value) -> Result<String, Error> {
        self.execute_named(&self.name, data)
    }

    /// Executes the template called `name` (the main one or a `define`d one).
    pub fn execute_named(&self, name: &str, data: &Value) -> Result<String, Error> {
        let tree = self.trees.get(name).ok_or_else(|| {
            Error::Exec(format!(
                "template: no template {} associated with template {}",
                crate::gofmt::quote(name),
                crate::gofmt::quote(&self.name)
            ))
        })?;
        let dot = match data {
            Value::Null => None,
            other => Some(other.clone()),
        };
        exec::execute(self, tree, dot)
    }
}
