//! Runner of the Go text/template conformance vectors (format of
//! `shared/conformance/gotemplate/README.md`), shared by the crate's tests and its
//! `conformance` example.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use crate::funcs::FuncMap;
use crate::sprig::sprig_funcs;
use crate::sveltos::{sveltos_addon_funcs, sveltos_event_funcs};
use crate::template::{Error, MissingKey, Options, Template};
use crate::value::{TooDeep, Value};

/// One vector of a conformance file.
#[derive(Debug, Clone, Deserialize)]
pub struct Vector {
    /// Unique name within its file.
    pub name: String,
    /// Function set: `builtin`, `sprig`, `sveltos` or `sveltos-event`.
    pub funcs: String,
    /// `default`, `zero` or `error`.
    #[serde(default)]
    pub missingkey: Option<String>,
    /// Custom delimiters.
    #[serde(default)]
    pub delims: Option<(String, String)>,
    /// Name given to the template.
    #[serde(default)]
    pub template_name: Option<String>,
    /// The template text.
    pub template: String,
    /// The dot.
    #[serde(default)]
    pub data: serde_json::Value,
    /// The exact output when Go succeeds.
    #[serde(default)]
    pub expected: Option<String>,
    /// True when Go fails.
    #[serde(default)]
    pub expected_error: bool,
    /// `parse` or `exec`.
    #[serde(default)]
    pub error_phase: Option<String>,
    /// A substring the message should contain.
    #[serde(default)]
    pub error_contains: Option<String>,
    /// Go's message, for reference.
    #[serde(default)]
    pub go_error: Option<String>,
}

/// The outcome of one vector that did not pass.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The vector's name.
    pub name: String,
    /// What went wrong.
    pub reason: String,
}

/// Results of a file.
#[derive(Debug, Default)]
pub struct Report {
    /// Vectors that passed.
    pub passed: usize,
    /// Vectors that failed, with reasons.
    pub failures: Vec<Failure>,
}

/// Parses a vector file.
pub fn load(text: &str) -> Result<Vec<Vector>, serde_json::Error> {
    serde_json::from_str(text)
}

/// The function map a vector names, or an error for an unknown set.
pub fn function_set(name: &str, data: &Value) -> Result<FuncMap, String> {
    let mut map = FuncMap::new();
    match name {
        "builtin" => {}
        "sprig" => map.extend(&sprig_funcs()),
        "sveltos" => {
            map.extend(&sprig_funcs());
            map.extend(&sveltos_event_funcs());
            let resources = match data {
                Value::Map(top) => match &top.get("MgmtResources") {
                    Some(Value::Map(resources)) => resources
                        .entries()
                        .into_iter()
                        .map(|(id, object)| Ok((id.into(), object.to_json()?)))
                        .collect::<Result<_, TooDeep>>()
                        .map_err(|e| e.to_string())?,
                    _ => BTreeMap::new(),
                },
                _ => BTreeMap::new(),
            };
            map.extend(&sveltos_addon_funcs(Arc::new(resources)));
        }
        "sveltos-event" => {
            map.extend(&sprig_funcs());
            map.extend(&sveltos_event_funcs());
        }
        other => return Err(format!("unknown function set {other:?}")),
    }
    Ok(map)
}

/// Runs one vector; `Err` says why it failed.
pub fn run_vector(vector: &Vector) -> Result<(), String> {
    let data = Value::from(&vector.data);
    let funcs = Arc::new(function_set(&vector.funcs, &data)?);
    let missing_key = match vector.missingkey.as_deref() {
        None | Some("default") | Some("invalid") => MissingKey::Default,
        Some("zero") => MissingKey::Zero,
        Some("error") => MissingKey::Error,
        Some(other) => return Err(format!("unknown missingkey {other:?}")),
    };
    let (left_delim, right_delim) = vector.delims.clone().unwrap_or_default();
    let options = Options {
        left_delim,
        right_delim,
        missing_key,
        // The vectors were recorded with Go 1.23, before templates could range over ints.
        range_over_int: false,
        ..Options::default()
    };
    let name = vector.template_name.as_deref().unwrap_or("tmpl");
    let result = Template::parse(name, &vector.template, funcs, options)
        .and_then(|template| template.execute(&data));
    match (&vector.expected, result) {
        (Some(expected), Ok(output)) if *expected == output => Ok(()),
        (Some(expected), Ok(output)) => Err(format!("expected {expected:?}, got {output:?}")),
        (Some(_), Err(error)) => Err(format!("unexpected error: {error}")),
        (None, Ok(output)) => Err(format!(
            "expected an error ({}), got output {output:?}",
            vector.go_error.as_deref().unwrap_or("?")
        )),
        (None, Err(error)) => check_error(vector, &error),
    }
}

fn check_error(vector: &Vector, error: &Error) -> Result<(), String> {
    let phase = match error {
        Error::Parse(_) => "parse",
        Error::Exec(_) | Error::Limit(_) => "exec",
    };
    if let Some(expected_phase) = &vector.error_phase
        && expected_phase != phase
    {
        return Err(format!(
            "expected a {expected_phase} error, got a {phase} error: {error} (Go: {})",
            vector.go_error.as_deref().unwrap_or("?")
        ));
    }
    if let Some(needle) = &vector.error_contains
        && !error.to_string().contains(needle.as_str())
    {
        return Err(format!("error {error:?} does not contain {needle:?}"));
    }
    Ok(())
}

/// Runs every vector of a file's text.
pub fn run_all(vectors: &[Vector]) -> Report {
    let mut report = Report::default();
    for vector in vectors {
        match run_vector(vector) {
            Ok(()) => report.passed += 1,
            Err(reason) => report.failures.push(Failure {
                name: vector.name.clone(),
                reason,
            }),
        }
    }
    report
}
