//! Runs Go text/template conformance vector files and prints each failure, then
//! `N passed, M failed`.
//!
//! Usage: `cargo run -p sveltos-events-template --example conformance -- FILE.json...`

use std::process::ExitCode;

use sveltos_events_template::conformance::{load, run_all};

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: conformance FILE.json...");
        return ExitCode::from(2);
    }
    let (mut passed, mut failed) = (0, 0);
    for path in &paths {
        let vectors = match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| load(&text).map_err(|e| e.to_string()))
        {
            Ok(vectors) => vectors,
            Err(error) => {
                eprintln!("cannot read vectors from {path}: {error}");
                return ExitCode::from(2);
            }
        };
        let report = run_all(&vectors);
        for failure in &report.failures {
            println!("FAIL {path} {}: {}", failure.name, failure.reason);
        }
        passed += report.passed;
        failed += report.failures.len();
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
