//! `render` offline, as a user meets it: the example renders without a cluster; bad input is
//! one sentence and exit 2; a trigger that cannot produce for the cluster says why, exit 1.
#![allow(clippy::unwrap_used)] // test code

use std::path::{Path, PathBuf};
use std::process::Command;

fn example(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/network-policy")
        .join(path)
}

/// Exit code, stdout and stderr of `render ARGS`.
fn render(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-sveltos_events"))
        .arg("render")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_example_renders_its_profile_and_instantiated_policy_offline() {
    let folder = example("");
    let folder = folder.to_str().unwrap();
    let (code, out, err) = render(&["-f", folder, "--cluster-labels", "env=fv"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kind: ClusterProfile"), "{out}");
    assert!(out.contains("name: front-my-service"), "{out}");
    assert!(
        out.contains("eventtrigger.lib.projectsveltos.io/clustername: cluster"),
        "{out}"
    );
    // Without the label the trigger wants, no cluster is a source: said, exit 1.
    let (code, out, err) = render(&["-f", folder]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("no cluster in the files matches its sourceClusterSelector"),
        "{err}"
    );
}

#[test]
fn a_missing_event_source_is_named() {
    let trigger = example("eventtrigger.yaml");
    let template = example("configmap.yaml");
    let (code, _, err) = render(&[
        "-f",
        trigger.to_str().unwrap(),
        "-f",
        template.to_str().unwrap(),
        "--cluster-labels",
        "env=fv",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("EventSource sveltos-service is not in the files"),
        "{err}"
    );
}

#[test]
fn bad_input_is_one_sentence_and_exit_2() {
    let source = example("eventsource.yaml");
    let source = source.to_str().unwrap();
    let trigger = example("eventtrigger.yaml");
    let trigger = trigger.to_str().unwrap();
    for (args, said) in [
        (vec!["-f", source], "no EventTrigger or EventBasedAddOn"),
        (
            vec!["-f", "/no/such/file.yaml"],
            "cannot read /no/such/file.yaml",
        ),
        (
            vec!["-f", trigger, "--cluster-labels", "env"],
            "\"env\" is not key=value",
        ),
        (
            vec!["-f", trigger, "--cluster", "nameonly"],
            "namespace/name",
        ),
    ] {
        let (code, out, err) = render(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.starts_with("error: ") && err.contains(said),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_template_written_without_a_namespace_is_in_default_and_a_folder_named_twice_counts_once() {
    let dir = std::env::temp_dir().join(format!("render-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for file in [
        "eventsource.yaml",
        "eventtrigger.yaml",
        "managed/service.yaml",
    ] {
        let text = std::fs::read_to_string(example(file)).unwrap();
        std::fs::write(dir.join(file.replace('/', "-")), text).unwrap();
    }
    // As written for `kubectl apply -n default`: no namespace in the template.
    let template = std::fs::read_to_string(example("configmap.yaml")).unwrap();
    let template = template.replace("  namespace: default\n", "");
    assert!(!template.contains("namespace: default"), "{template}");
    std::fs::write(dir.join("configmap.yaml"), template).unwrap();
    let folder = dir.to_str().unwrap();
    let trigger = dir.join("eventtrigger.yaml");
    let (code, out, err) = render(&[
        "-f",
        folder,
        "-f",
        trigger.to_str().unwrap(),
        "--cluster-labels",
        "env=fv",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("kind: ClusterProfile").count(), 1, "{out}");
    assert!(out.contains("name: front-my-service"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
