//! Runs the conformance vectors recorded from Go (shared/conformance/gotemplate).

use std::path::PathBuf;

use sveltos_events_template::conformance::{Report, load, run_all};

fn run(file: &str) -> (usize, Report) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/conformance/gotemplate")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let vectors = load(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    (vectors.len(), run_all(&vectors))
}

fn describe(report: &Report) -> String {
    report
        .failures
        .iter()
        .map(|f| format!("{}: {}", f.name, f.reason))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_go_text_template_vector_passes() {
    let (total, report) = run("exec.json");
    assert!(total >= 537, "exec.json shrank to {total} vectors");
    assert!(report.failures.is_empty(), "{}", describe(&report));
}

#[test]
fn every_sprig_vector_passes() {
    let (total, report) = run("sprig.json");
    assert!(total >= 440, "sprig.json shrank to {total} vectors");
    assert!(report.failures.is_empty(), "{}", describe(&report));
}
