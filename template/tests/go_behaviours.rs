//! Runs this crate's own vectors (`tests/vectors/go_behaviours.json`): Go behaviours the shared
//! vectors do not pin, each expected output taken from Go's documented behaviour and tests, and
//! each vector's `source` naming the Go or go-yaml file it comes from.

use std::path::PathBuf;

use sveltos_events_template::conformance::{load, run_all};

#[test]
fn every_go_behaviour_vector_passes() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/go_behaviours.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let vectors = load(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    assert!(vectors.len() >= 121, "only {} vectors", vectors.len());
    let report = run_all(&vectors);
    let failures: Vec<String> = report
        .failures
        .iter()
        .map(|f| format!("{}: {}", f.name, f.reason))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        vectors.len(),
        failures.join("\n")
    );
}
