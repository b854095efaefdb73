//! `kubectl-sveltos_events eval`: evaluate an EventSource over resource files, offline.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::evaluate::evaluate_event_source;
use crate::files::{hold_nothing, name, read_resources, stdin_at_most_once};
use crate::fixtures::{check_case, find_cases, read_event_source};
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
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events eval -f eventsource.yaml services.yaml\n  \
    kubectl get services -A -o yaml | kubectl sveltos-events eval -f eventsource.yaml -\n  \
    kubectl sveltos-events eval --fixtures tests/eventsources\n\n\
    Resource files are read as `kubectl apply -f` reads them: YAML or JSON, several documents\n\
    per file, a List (what `kubectl get -o yaml` writes) as its items; `-` is standard input.\n\
    What scripts `print` goes to standard error.\n\n\
    Fixtures (--fixtures DIR): every folder under DIR holding an eventsource.yaml is a case, as\n\
    in Sveltos' sveltos-agent (pkg/evaluation/events):\n  \
    eventsource.yaml    one EventSource (v1beta1 or v1alpha1)\n  \
    matching.yaml       objects the EventSource must match (optional)\n  \
    non-matching.yaml   objects it must not match (optional)\n  \
    expect-error.txt    the evaluation must fail with an error containing this text (optional)\n\
    An object may state the message its evaluation must give in the annotation\n\
    sveltos-events.io/expected-message (taken off before the script sees the object).\n\n\
    Exit 0 the evaluation ran (whatever the verdicts) or every case passed, 1 a script failed\n\
    or a case failed, 2 bad input (unreadable or empty file, invalid YAML, not an EventSource).")]
pub struct EvalArgs {
    /// The EventSource (v1beta1 or v1alpha1 YAML; `-` reads standard input).
    #[arg(short = 'f', long = "filename", required_unless_present = "fixtures")]
    pub event_source: Option<PathBuf>,
    /// Files with the resources to evaluate (YAML or JSON, several documents or a List per
    /// file; `-` reads standard input).
    #[arg(conflicts_with = "fixtures")]
    pub resources: Vec<PathBuf>,
    /// Check every fixture folder under DIR (eventsource.yaml, matching.yaml, non-matching.yaml,
    /// expect-error.txt).
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
    runtime.keep_printed();
    let mut out = Streams { stdout, stderr };
    let code = match (&args.fixtures, &args.event_source) {
        (Some(dir), _) => run_fixtures(&runtime, dir, &mut out),
        (None, Some(source)) => run_eval(&runtime, source, &args.resources, args.output, &mut out),
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

/// Where `eval` writes: results on `stdout`; warnings and what scripts print on `stderr`.
struct Streams<'a> {
    stdout: &'a mut dyn Write,
    stderr: &'a mut dyn Write,
}

impl Streams<'_> {
    /// `warning: TEXT` on standard error.
    fn warn(&mut self, text: &str) -> Result<(), Error> {
        writeln!(self.stderr, "warning: {text}").map_err(writing)
    }

    /// What scripts printed since the last call, on standard error.
    fn printed(&mut self, runtime: &LuaRuntime) -> Result<(), Error> {
        self.stderr
            .write_all(runtime.take_printed().as_bytes())
            .map_err(writing)
    }
}

fn writing(e: std::io::Error) -> Error {
    Error::Input(format!("writing output: {e}"))
}

fn run_eval(
    runtime: &LuaRuntime,
    source: &std::path::Path,
    files: &[PathBuf],
    format: Format,
    out: &mut Streams<'_>,
) -> Result<u8, Error> {
    stdin_at_most_once(std::iter::once(source).chain(files.iter().map(PathBuf::as_path)))?;
    if files.is_empty() {
        return Err(Error::Input(
            "no resources to evaluate: name files of resources after -f EVENTSOURCE.yaml \
             (- reads standard input)"
                .into(),
        ));
    }
    let source = read_event_source(source)?;
    let mut objects = Vec::new();
    let mut empty = Vec::new();
    for file in files {
        let read = read_resources(file)?;
        for note in &read.notes {
            out.warn(note)?;
        }
        if read.objects.is_empty() && !empty.contains(&name(file)) {
            empty.push(name(file));
        }
        objects.extend(read.objects);
    }
    if objects.is_empty() {
        return Err(Error::Input(hold_nothing(&empty)));
    }
    if !empty.is_empty() {
        out.warn(&hold_nothing(&empty))?;
    }
    if let Some(bad) = objects.iter().find(|o| !o.is_object()) {
        return Err(Error::Input(format!("not a Kubernetes object: {bad}")));
    }
    let evaluation = evaluate_event_source(runtime, &source, &objects);
    out.printed(runtime)?;
    let evaluation = evaluation?;
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
    write_rows(&rows, format, out.stdout).map_err(writing)?;
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
    out: &mut Streams<'_>,
) -> Result<u8, Error> {
    let cases = find_cases(dir)?;
    if cases.is_empty() {
        return Err(Error::Input(format!(
            "{}: no eventsource.yaml found",
            dir.display()
        )));
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    for case in &cases {
        let name = case.strip_prefix(dir).unwrap_or(case).display().to_string();
        let name = if name.is_empty() {
            ".".to_owned()
        } else {
            name
        };
        let checked = check_case(runtime, case);
        out.printed(runtime)?;
        for warning in &checked.warnings {
            out.warn(warning)?;
        }
        let stdout = &mut *out.stdout;
        if checked.failures.is_empty() {
            passed += 1;
            writeln!(stdout, "PASS {name}").map_err(writing)?;
        } else {
            failed += 1;
            writeln!(stdout, "FAIL {name}").map_err(writing)?;
            for failure in checked.failures {
                writeln!(stdout, "  {failure}").map_err(writing)?;
            }
        }
    }
    writeln!(out.stdout, "{passed} passed, {failed} failed").map_err(writing)?;
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
