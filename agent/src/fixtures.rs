//! Sveltos' fixture layout (sveltos-agent `pkg/evaluation/events`): a folder with
//! `eventsource.yaml`, optional `matching.yaml` and `non-matching.yaml`. This project adds
//! `expect-error.txt` (the evaluation must fail with an error containing its text) and, on any
//! fixture object, the annotation [`EXPECTED_MESSAGE`]: the message the evaluation must give
//! that object (the annotation is taken off before the script sees the object).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::evaluate::evaluate_fixtures;
use crate::files::{name, read_resources, read_text};
use crate::runtime::LuaRuntime;
use crate::select::describe;

/// The annotation of a fixture object stating the message its evaluation must give.
pub const EXPECTED_MESSAGE: &str = "sveltos-events.io/expected-message";

/// Reads the single EventSource (v1beta1 or v1alpha1; a List of one too) of a file, or of
/// standard input for `-`.
pub fn read_event_source(path: &Path) -> Result<api::v1beta1::EventSource> {
    let text = read_text(path)?;
    api::load::event_source_from_yaml(&text)
        .map_err(|e| Error::Input(format!("{}: {e}", name(path))))
}

/// Every folder under `root` (itself included) holding an `eventsource.yaml`, sorted.
pub fn find_cases(root: &Path) -> Result<Vec<PathBuf>> {
    let mut cases = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| Error::Input(format!("{}: {e}", dir.display())))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::Input(format!("{}: {e}", dir.display())))?;
            let kind = entry.file_type().map_err(|e| Error::Input(e.to_string()))?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if entry.file_name() == "eventsource.yaml" {
                cases.push(dir.clone());
            }
        }
    }
    cases.sort();
    Ok(cases)
}

/// The verdict on one case.
#[derive(Debug, Default)]
pub struct Checked {
    /// Why the case fails; empty when it passes.
    pub failures: Vec<String>,
    /// What the reader let pass that the user should know (a repeated key).
    pub warnings: Vec<String>,
}

/// Checks one case.
pub fn check_case(runtime: &LuaRuntime, dir: &Path) -> Checked {
    let mut checked = Checked::default();
    if let Err(e) = check_case_inner(runtime, dir, &mut checked) {
        checked.failures.push(e.to_string());
    }
    checked
}

/// The objects of `path`, none when it does not exist; a file that exists holds some.
fn optional_objects(path: PathBuf, warnings: &mut Vec<String>) -> Result<Vec<Value>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let read = read_resources(&path)?;
    warnings.extend(read.notes);
    if read.objects.is_empty() {
        return Err(Error::Input(crate::files::hold_nothing(&[name(&path)])));
    }
    Ok(read.objects)
}

/// Takes the [`EXPECTED_MESSAGE`] annotation off `object` (and `annotations` with it when it
/// was the only one), returning its value.
fn take_expected_message(object: &mut Value) -> Option<String> {
    let annotations = object
        .pointer_mut("/metadata/annotations")?
        .as_object_mut()?;
    let expected = annotations.remove(EXPECTED_MESSAGE)?;
    if annotations.is_empty()
        && let Some(metadata) = object["metadata"].as_object_mut()
    {
        metadata.remove("annotations");
    }
    Some(match expected {
        Value::String(text) => text,
        other => other.to_string(),
    })
}

fn check_case_inner(runtime: &LuaRuntime, dir: &Path, checked: &mut Checked) -> Result<()> {
    let source = read_event_source(&dir.join("eventsource.yaml"))?;
    let warnings = &mut checked.warnings;
    let matching = optional_objects(dir.join("matching.yaml"), warnings)?;
    let non_matching = optional_objects(dir.join("non-matching.yaml"), warnings)?;
    let expected_error = dir.join("expect-error.txt");
    let expected_error = if expected_error.exists() {
        Some(read_text(&expected_error)?.trim().to_owned())
    } else {
        None
    };
    let mut objects: Vec<Value> = matching.iter().chain(&non_matching).cloned().collect();
    let messages: Vec<Option<String>> = objects.iter_mut().map(take_expected_message).collect();
    let result = evaluate_fixtures(runtime, &source, &objects);
    let failures = &mut checked.failures;
    match (result, expected_error) {
        (Err(e), Some(text)) if e.to_string().contains(&text) => {}
        (Err(e), Some(text)) => failures.push(format!("error `{e}` does not contain `{text}`")),
        (Err(e), None) => failures.push(e.to_string()),
        (Ok(_), Some(text)) => failures.push(format!(
            "expected an error containing `{text}`, evaluation succeeded"
        )),
        (Ok(evaluation), None) => {
            let verdicts = objects.iter().zip(&evaluation.outcomes).zip(&messages);
            for (i, ((object, outcome), message)) in verdicts.enumerate() {
                let expected = i < matching.len();
                if outcome.matching != expected {
                    failures.push(format!(
                        "{}: expected {}, got {} ({})",
                        describe(object),
                        if expected { "matching" } else { "non-matching" },
                        if outcome.matching {
                            "matching"
                        } else {
                            "non-matching"
                        },
                        outcome.message
                    ));
                }
                if let Some(message) = message.as_ref().filter(|m| **m != outcome.message) {
                    failures.push(format!(
                        "{}: expected message {message:?}, got {:?}",
                        describe(object),
                        outcome.message
                    ));
                }
            }
        }
    }
    Ok(())
}
