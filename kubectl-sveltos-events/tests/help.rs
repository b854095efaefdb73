//! The plugin alone prints what to run first; every command's `--help` shows an example.
#![allow(clippy::unwrap_used)] // test code

use std::process::Command;

fn plugin(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-sveltos_events"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn no_command_is_a_guide_and_every_command_has_an_example() {
    let (code, guide) = plugin(&[]);
    assert_eq!(code, 0, "{guide}");
    for first in ["sandbox", "check --pre", "install", "register cluster"] {
        assert!(
            guide.contains(&format!("kubectl sveltos-events {first}")),
            "{guide}"
        );
    }
    let commands: [&[&str]; 16] = [
        &["sandbox"],
        &["install"],
        &["check"],
        &["explain"],
        &["trace"],
        &["tui"],
        &["show", "addons"],
        &["show", "usage"],
        &["show", "dryrun"],
        &["uninstall"],
        &["register", "cluster"],
        &["deregister", "cluster"],
        &["version"],
        &["eval"],
        &["completion"],
        &["render"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let (code, help) = plugin(&args);
        assert_eq!(code, 0, "{command:?}: {help}");
        assert!(
            help.contains("Example"),
            "{command:?} --help has no example:\n{help}"
        );
        assert!(
            help.contains("Usage: kubectl sveltos-events"),
            "{command:?}: {help}"
        );
    }
}
