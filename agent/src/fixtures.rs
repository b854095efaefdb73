//! Sveltos' fixture layout: a folder with `eventsource.yaml`, optional `matching.yaml` and
//! `non-matching.yaml`; this project adds `expect-error.txt` (the evaluation must fail with
//! an error containing its text).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::evaluate::evaluate_fixtures;
use crate::runtime::LuaRuntime;
use crate::select::describe;

/// Largest input file read (YAML input is size-limited).
pub const MAX_FILE: u64 = 8 << 20;

/// Reads a text file, refusing files larger than [`MAX_FILE`].
pub fn read_text(path: &Path) -> Result<String> {
    let meta =
        std::fs::metadata(path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    if meta.len() > MAX_FILE {
        return Err(Error::Input(format!(
            "{}: larger than {MAX_FILE} bytes",
            path.display()
        )));
    }
    std::fs::read_to_string(path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))
}

/// Reads every non-empty YAML document of a file as JSON values.
pub fn read_objects(path: &Path) -> Result<Vec<Value>> {
    let text = read_text(path)?;
    let (docs, notes) = api::load::documents_noting(&text)
        .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    for note in notes {
        tracing::warn!("{}: {note}", path.display());
    }
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Reads the single EventSource (v1beta1 or v1alpha1) of a file.
pub fn read_event_source(path: &Path) -> Result<api::v1beta1::EventSource> {
    let text = read_text(path)?;
    api::load::event_source_from_yaml(&text)
        .map_err(|e| Error::Input(format!("{}: {e}", path.display())))
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

/// Checks one case; returns the list of failures (empty when it passes).
pub fn check_case(runtime: &LuaRuntime, dir: &Path) -> Vec<String> {
    match check_case_inner(runtime, dir) {
        Ok(failures) => failures,
        Err(e) => vec![e.to_string()],
    }
}

fn optional_objects(path: PathBuf) -> Result<Vec<Value>> {
    if path.exists() {
        read_objects(&path)
    } else {
        Ok(Vec::new())
    }
}

fn check_case_inner(runtime: &LuaRuntime, dir: &Path) -> Result<Vec<String>> {
    let source = read_event_source(&dir.join("eventsource.yaml"))?;
    let matching = optional_objects(dir.join("matching.yaml"))?;
    let non_matching = optional_objects(dir.join("non-matching.yaml"))?;
    let expected_error = dir.join("expect-error.txt");
    let expected_error = if expected_error.exists() {
        Some(read_text(&expected_error)?.trim().to_owned())
    } else {
        None
    };
    let objects: Vec<Value> = matching.iter().chain(&non_matching).cloned().collect();
    let result = evaluate_fixtures(runtime, &source, &objects);
    let mut failures = Vec::new();
    match (result, expected_error) {
        (Err(e), Some(text)) if e.to_string().contains(&text) => {}
        (Err(e), Some(text)) => failures.push(format!("error `{e}` does not contain `{text}`")),
        (Err(e), None) => failures.push(e.to_string()),
        (Ok(_), Some(text)) => failures.push(format!(
            "expected an error containing `{text}`, evaluation succeeded"
        )),
        (Ok(evaluation), None) => {
            for (i, (object, outcome)) in objects.iter().zip(&evaluation.outcomes).enumerate() {
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
            }
        }
    }
    Ok(failures)
}
