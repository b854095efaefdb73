//! Sveltos' own fixture suites and this project's fixtures, through the `eval` command.

use std::path::PathBuf;

use sveltos_events_agent::cli::{EvalArgs, run_with};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fixtures(dir: PathBuf) -> (u8, String, String) {
    let args = EvalArgs {
        fixtures: Some(dir),
        ..EvalArgs::default()
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with(&args, &mut out, &mut err);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

#[test]
fn sveltos_v1beta1_suite_passes() {
    let (code, out, err) = fixtures(workspace().join("../shared/conformance/eventsources"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.ends_with("2 passed, 0 failed\n"), "{out}");
}

#[test]
fn sveltos_v1alpha1_legacy_suite_passes() {
    let (code, out, err) =
        fixtures(workspace().join("../shared/conformance/eventsources-v1alpha1-legacy"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.ends_with("2 passed, 0 failed\n"), "{out}");
}

#[test]
fn own_fixtures_pass() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let (code, out, err) = fixtures(dir);
    assert_eq!(code, 0, "{out}{err}");
    let summary = out.lines().last().unwrap_or_default().to_owned();
    let passed: usize = summary
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 40, "{summary}");
    assert!(summary.ends_with(" 0 failed"), "{out}");
}
