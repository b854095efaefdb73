//! `kubectl-sveltos_events eval`: evaluate an EventSource over resource files, offline.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::evaluate::evaluate_event_source;
use crate::fixtures::{check_case, find_cases, read_event_source, read_objects};
use crate::runtime::{Limits, LuaRuntime};
use crate::select::identity;

/// Exit code: the evaluation ran (whatever the verdicts).
pub const EXIT_OK: u8 = 0;
/// Exit code: a script failed, or a fixture check failed.
pub const EXIT_EVAL_ERROR: u8 = 1;
/// Exit code: bad input (unreadable file, invalid YAML, not an EventSource, bad flags).
pub const EXIT_BAD_INPUT: u8 = 2;

/// Output format of `eval`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns.
    #[default]
    Table,
    /// A JSON document.
    Json,
    /// A YAML document.
    Yaml,
}

/// Flags of `eval`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct EvalArgs {
    /// The EventSource (v1beta1 or v1alpha1 YAML).
    #[arg(short = 'f', long = "filename", required_unless_present = "fixtures")]
    pub event_source: Option<PathBuf>,
    /// YAML files with the resources to evaluate (several documents per file allowed).
    #[arg(conflicts_with = "fixtures")]
    pub resources: Vec<PathBuf>,
    /// Check every fixture folder under DIR (eventsource.yaml, matching.yaml, non-matching.yaml).
    #[arg(long, value_name = "DIR", conflicts_with = "event_source")]
    pub fixtures: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
}

/// One row of the output.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
struct Row {
    api_version: String,
    kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    namespace: String,
    name: String,
    selected: bool,
    matching: bool,
    message: String,
}

/// Runs `eval`, writing results to `stdout` and errors to the process' stderr.
pub fn run(args: &EvalArgs, stdout: &mut dyn Write) -> u8 {
    run_with(args, stdout, &mut std::io::stderr())
}

/// Runs `eval` with explicit output streams; returns the exit code.
pub fn run_with(args: &EvalArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> u8 {
    let runtime = match LuaRuntime::new(Limits::default()) {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(stderr, "error: {e}");
            return EXIT_EVAL_ERROR;
        }
    };
    let code = match (&args.fixtures, &args.event_source) {
        (Some(dir), _) => run_fixtures(&runtime, dir, stdout),
        (None, Some(source)) => run_eval(&runtime, source, &args.resources, args.output, stdout),
        (None, None) => Err(Error::Input(
            "either -f EVENTSOURCE.yaml or --fixtures DIR is required".into(),
        )),
    };
    match code {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(stderr, "error: {e}");
            match e {
                Error::Input(_) => EXIT_BAD_INPUT,
                _ => EXIT_EVAL_ERROR,
            }
        }
    }
}

fn run_eval(
    runtime: &LuaRuntime,
    source: &std::path::Path,
    files: &[PathBuf],
    format: Format,
    stdout: &mut dyn Write,
) -> Result<u8, Error> {
    let source = read_event_source(source)?;
    let mut objects = Vec::new();
    for file in files {
        objects.extend(read_objects(file)?);
    }
    if let Some(bad) = objects.iter().find(|o| !o.is_object()) {
        return Err(Error::Input(format!("not a Kubernetes object: {bad}")));
    }
    let evaluation = evaluate_event_source(runtime, &source, &objects)?;
    let rows: Vec<Row> = objects
        .iter()
        .zip(evaluation.outcomes)
        .map(|(object, outcome)| {
            let (api_version, kind, namespace, name) = identity(object);
            Row {
                api_version,
                kind,
                namespace,
                name,
                selected: outcome.selected,
                matching: outcome.matching,
                message: outcome.message,
            }
        })
        .collect();
    write_rows(&rows, format, stdout).map_err(|e| Error::Input(format!("writing output: {e}")))?;
    Ok(EXIT_OK)
}

fn write_rows(rows: &[Row], format: Format, out: &mut dyn Write) -> std::io::Result<()> {
    match format {
        Format::Json => {
            let text = serde_json::to_string_pretty(rows).map_err(std::io::Error::other)?;
            writeln!(out, "{text}")
        }
        Format::Yaml => {
            let value = serde_json::to_value(rows).map_err(std::io::Error::other)?;
            let text = serde_saphyr::to_string(&value).map_err(std::io::Error::other)?;
            write!(out, "{text}")
        }
        Format::Table => {
            let names: Vec<String> = rows
                .iter()
                .map(|r| {
                    if r.namespace.is_empty() {
                        format!("{}/{}", r.kind, r.name)
                    } else {
                        format!("{}/{}/{}", r.kind, r.namespace, r.name)
                    }
                })
                .collect();
            let width = names
                .iter()
                .map(String::len)
                .max()
                .unwrap_or(0)
                .max("RESOURCE".len());
            writeln!(out, "{:<width$}  {:<8}  MESSAGE", "RESOURCE", "MATCHING")?;
            for (row, name) in rows.iter().zip(&names) {
                writeln!(out, "{name:<width$}  {:<8}  {}", row.matching, row.message)?;
            }
            Ok(())
        }
    }
}

fn run_fixtures(
    runtime: &LuaRuntime,
    dir: &std::path::Path,
    stdout: &mut dyn Write,
) -> Result<u8, Error> {
    let cases = find_cases(dir)?;
    if cases.is_empty() {
        return Err(Error::Input(format!(
            "{}: no eventsource.yaml found",
            dir.display()
        )));
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    let io = |e: std::io::Error| Error::Input(format!("writing output: {e}"));
    for case in &cases {
        let name = case.strip_prefix(dir).unwrap_or(case).display().to_string();
        let name = if name.is_empty() {
            ".".to_owned()
        } else {
            name
        };
        let failures = check_case(runtime, case);
        if failures.is_empty() {
            passed += 1;
            writeln!(stdout, "PASS {name}").map_err(io)?;
        } else {
            failed += 1;
            writeln!(stdout, "FAIL {name}").map_err(io)?;
            for failure in failures {
                writeln!(stdout, "  {failure}").map_err(io)?;
            }
        }
    }
    writeln!(stdout, "{passed} passed, {failed} failed").map_err(io)?;
    Ok(if failed == 0 {
        EXIT_OK
    } else {
        EXIT_EVAL_ERROR
    })
}

/// Whether two objects are the same Kubernetes object (apiVersion, kind, namespace, name).
pub fn same_object(a: &Value, b: &Value) -> bool {
    identity(a) == identity(b)
}
