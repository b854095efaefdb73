//! `eval` (and `render`'s reading) as a user meets it: files read as kubectl reads them (Lists
//! as their items, `-` as standard input, quoted values go-yaml takes), what cannot be read
//! said in one sentence with the file's name and exit 2, and what scripts print kept off the
//! results.
#![allow(clippy::unwrap_used)] // test code

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

fn file(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/files")
        .join(name)
        .display()
        .to_string()
}

fn example(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/network-policy")
        .join(path)
        .display()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("eval-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Exit code, stdout and stderr of the plugin with `args`, `input` on its standard input.
fn plugin(args: &[&str], input: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-sveltos_events"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The rows of `eval -o json`: resource name, matching, message.
fn rows(out: &str) -> Vec<(String, bool, String)> {
    let rows: Vec<Value> = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    rows.iter()
        .map(|row| {
            (
                row["name"].as_str().unwrap().to_owned(),
                row["matching"].as_bool().unwrap(),
                row["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_list_from_kubectl_get_is_evaluated_item_by_item() {
    let source = example("eventsource.yaml");
    let (code, out, err) = plugin(
        &[
            "eval",
            "-f",
            &source,
            &file("services-list.yaml"),
            "-o",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let rows = rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!((rows[0].0.as_str(), rows[0].1), ("my-service", true));
    assert_eq!((rows[1].0.as_str(), rows[1].1), ("kubernetes", false));
    assert!(rows[1].2.contains("label filter sveltos"), "{out}");
}

#[test]
fn dash_reads_standard_input_for_the_event_source_or_the_resources_but_only_once() {
    let source = example("eventsource.yaml");
    let list = std::fs::read_to_string(file("services-list.yaml")).unwrap();
    let (code, out, err) = plugin(&["eval", "-f", &source, "-", "-o", "json"], &list);
    assert_eq!(code, 0, "{err}");
    assert_eq!(rows(&out).len(), 2, "{out}");

    let text = std::fs::read_to_string(&source).unwrap();
    let services = file("services-list.yaml");
    let (code, out, err) = plugin(&["eval", "-f", "-", &services, "-o", "json"], &text);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        rows(&out)[0],
        ("my-service".to_owned(), true, String::new())
    );

    let (code, out, err) = plugin(&["eval", "-f", "-", "-"], &text);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(
        err,
        "error: - (standard input) is named more than once: it can be read only once\n"
    );
}

#[test]
fn an_empty_resource_file_is_said_and_exits_2() {
    let dir = scratch("empty");
    let empty = dir.join("empty.yaml");
    std::fs::write(&empty, "# nothing here yet\n---\n").unwrap();
    let empty = empty.to_str().unwrap();
    let source = example("eventsource.yaml");
    let (code, out, err) = plugin(&["eval", "-f", &source, empty], "");
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(out, "");
    assert_eq!(err, format!("error: {empty} holds no resources\n"));
    // Empty standard input, or an empty List, is the same.
    let (code, _, err) = plugin(&["eval", "-f", &source, "-"], "");
    assert_eq!(
        (code, err.as_str()),
        (2, "error: standard input holds no resources\n")
    );
    let list = "apiVersion: v1\nkind: List\nitems: []\n";
    let (code, _, err) = plugin(&["eval", "-f", &source, "-"], list);
    assert_eq!(
        (code, err.as_str()),
        (2, "error: standard input holds no resources\n")
    );
    // Beside a file that holds resources, it is a warning.
    let service = example("managed/service.yaml");
    let (code, out, err) = plugin(&["eval", "-f", &source, empty, &service], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Service/default/my-service"), "{out}");
    assert_eq!(err, format!("warning: {empty} holds no resources\n"));
    // No resource file at all is said too.
    let (code, _, err) = plugin(&["eval", "-f", &source], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: no resources to evaluate"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_readers_limits_are_said_in_words_with_the_file_and_line() {
    let dir = scratch("limits");
    let deep = dir.join("deep.yaml");
    let mut text =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n");
    for level in 0..70 {
        text.push_str(&format!("{}k{level}:\n", "  ".repeat(level + 1)));
    }
    std::fs::write(&deep, text).unwrap();
    let many = dir.join("many.yaml");
    let text: String = (0..1100)
        .map(|i| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n"))
        .collect();
    std::fs::write(&many, text).unwrap();
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n",
    )
    .unwrap();
    let source = example("eventsource.yaml");
    for (path, said) in [
        (&deep, "line 69: nested deeper than 64 levels"),
        (&many, "line 5121: more than 1024 documents"),
        (
            &bad,
            "cannot parse YAML: line 4 column 9: unclosed bracket '['",
        ),
    ] {
        let path = path.to_str().unwrap();
        let (code, out, err) = plugin(&["eval", "-f", &source, path], "");
        assert_eq!(code, 2, "{out}{err}");
        assert_eq!(err, format!("error: {path}: {said}\n"));
        // render reads files with the same reader.
        let (code, out, err) = plugin(&["render", "-f", path], "");
        assert_eq!(code, 2, "{out}{err}");
        assert_eq!(err, format!("error: {path}: {said}\n"));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn quoted_values_continued_at_the_keys_indentation_read_as_kubectl_reads_them() {
    let (code, out, err) = plugin(
        &[
            "eval",
            "-f",
            &file("annotation-eventsource.yaml"),
            &file("configmap-annotation.yaml"),
            &file("helmrelease-values.yaml"),
            "-o",
            "json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    // What kubectl 1.32's reader (sigs.k8s.io/yaml v1.4.0, go-yaml) reads from these files.
    assert_eq!(
        rows(&out),
        [
            (
                "billing-settings".to_owned(),
                true,
                "Settings of the billing service; change them only with the payments team on \
                 call.|https://runbooks.example.com/billing #settings"
                    .to_owned()
            ),
            (
                "ingress-nginx".to_owned(),
                true,
                "$remote_addr - $request_id - [$proxy_add_x_forwarded_for] - $remote_user \
                 [$time_local] \"$request\" $status $body_bytes_sent"
                    .to_owned()
            ),
        ]
    );
}

#[test]
fn what_scripts_print_goes_to_standard_error_and_the_results_stay_parseable() {
    let dir = scratch("print");
    let source = dir.join("printing.yaml");
    std::fs::write(
        &source,
        r#"apiVersion: lib.projectsveltos.io/v1beta1
kind: EventSource
metadata:
  name: printing
spec:
  resourceSelectors:
  - group: ""
    version: v1
    kind: Service
    evaluate: |
      print("compiled")
      function evaluate()
        print("checking", obj.metadata.name, 2.0, nil, true)
        return {matching = obj.metadata.name == "my-service"}
      end
"#,
    )
    .unwrap();
    let source = source.to_str().unwrap();
    for format in ["json", "yaml", "table"] {
        let (code, out, err) = plugin(
            &[
                "eval",
                "-f",
                source,
                &file("services-list.yaml"),
                "-o",
                format,
            ],
            "",
        );
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            err,
            "compiled\nchecking\tmy-service\t2\tnil\ttrue\nchecking\tkubernetes\t2\tnil\ttrue\n"
        );
        assert!(!out.contains("checking"), "{out}");
        if format == "json" {
            assert_eq!(rows(&out).len(), 2, "{out}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn render_reads_a_list_from_standard_input_and_says_an_empty_file_it_was_given() {
    let dir = scratch("render");
    let empty = dir.join("empty.yaml");
    std::fs::write(&empty, "").unwrap();
    let empty = empty.to_str().unwrap();
    let list = std::fs::read_to_string(file("services-list.yaml")).unwrap();
    let args = [
        "render",
        "-f",
        &example("eventtrigger.yaml"),
        "-f",
        &example("eventsource.yaml"),
        "-f",
        &example("configmap.yaml"),
        "-f",
        "-",
        "-f",
        empty,
        "--cluster-labels",
        "env=fv",
    ];
    let (code, out, err) = plugin(&args, &list);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("name: front-my-service"), "{out}");
    assert_eq!(err, format!("warning: {empty} holds no resources\n"));
    let (code, _, err) = plugin(&["render", "-f", "-", "-f", "-"], &list);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("named more than once"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_fixture_states_the_message_it_expects_and_a_different_one_fails_the_case() {
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/fixtures/messages");
    let (code, out, err) = plugin(&["eval", "--fixtures", own.to_str().unwrap()], "");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out, "PASS expected-message\n1 passed, 0 failed\n");

    let dir = scratch("fixture");
    let case = own.join("expected-message");
    for name in ["eventsource.yaml", "matching.yaml", "non-matching.yaml"] {
        let text = std::fs::read_to_string(case.join(name)).unwrap();
        let text = text.replace("expected-message: https on 443", "expected-message: https");
        std::fs::write(dir.join(name), text).unwrap();
    }
    let (code, out, err) = plugin(&["eval", "--fixtures", dir.to_str().unwrap()], "");
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        "FAIL .\n  Service default/web: expected message \"https\", got \"https on 443\"\n\
         0 passed, 1 failed\n"
    );
    // A fixture file that holds nothing fails its case, as in Sveltos' harness.
    std::fs::write(dir.join("non-matching.yaml"), "---\n").unwrap();
    let (code, out, err) = plugin(&["eval", "--fixtures", dir.to_str().unwrap()], "");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("non-matching.yaml holds no resources"),
        "{out}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_repeated_key_in_a_resource_file_is_a_warning_on_standard_error() {
    let service = std::fs::read_to_string(example("managed/service.yaml")).unwrap();
    let twice = service.replace("  name: my-service\n", "  name: old\n  name: my-service\n");
    assert_ne!(twice, service);
    let source = example("eventsource.yaml");
    let (code, out, err) = plugin(&["eval", "-f", &source, "-", "-o", "json"], &twice);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        rows(&out)[0],
        ("my-service".to_owned(), true, String::new())
    );
    assert_eq!(
        err,
        "warning: standard input: line 6: key \"name\" appears twice in one mapping; the last \
         value is used, as kubectl does\n"
    );
}
