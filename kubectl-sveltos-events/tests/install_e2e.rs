//! `install` and `version` against the sandbox (API servers only, no controllers): the export
//! passes a server-side dry run, install creates everything and waits for it, a second run
//! changes nothing and says so, a changed flag changes only what it touches, and bad input
//! ends in one sentence with exit code 2.
#![allow(clippy::unwrap_used)] // test code

mod common;

use common::{kubectl, plugin};
use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn export_passes_a_server_dry_run_and_install_is_idempotent() {
    let sandbox = common::start_bare(0);
    let dir = &sandbox.dir;

    // `--export | kubectl apply --dry-run=server -f -` (the namespace must exist for a server
    // dry run of what goes in it, on a real server as here).
    let export = plugin(dir, &["install", "--export"]).ok();
    kubectl(dir, "mgmt", &["create", "namespace", "projectsveltos"]);
    let mut apply = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(dir.join("mgmt.kubeconfig"))
        .args(["apply", "--dry-run=server", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    apply
        .stdin
        .take()
        .unwrap()
        .write_all(export.stdout.as_bytes())
        .unwrap();
    let applied = apply.wait_with_output().unwrap();
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    assert!(
        String::from_utf8_lossy(&applied.stdout)
            .contains("deployment.apps/sveltos-events-manager created (server dry run)")
    );

    // Our own server dry run changes nothing either.
    let dry = plugin(dir, &["install", "--dry-run=server"]).ok();
    assert!(dry.stdout.contains("nothing was changed"), "{}", dry.stdout);
    assert!(
        kubectl(dir, "mgmt", &["get", "crd", "-o", "name"])
            .trim()
            .is_empty()
    );

    // The real install: every object created, the CRDs Established, the Deployments
    // available (the sandbox completes rollouts at once: it runs no pods).
    let first = plugin(dir, &["install", "--timeout", "30s"]).ok();
    assert!(
        first
            .stdout
            .contains("deployment.apps/sveltos-events-agent created"),
        "{}",
        first.stdout
    );
    assert!(
        first.stdout.contains("is installed and running"),
        "{}",
        first.stdout
    );
    let crds = kubectl(dir, "mgmt", &["get", "crd", "-o", "name"]);
    assert!(
        crds.contains("eventtriggers.lib.projectsveltos.io"),
        "{crds}"
    );
    let sa = kubectl(
        dir,
        "mgmt",
        &[
            "get",
            "serviceaccounts",
            "-n",
            "projectsveltos",
            "-o",
            "name",
        ],
    );
    assert!(
        sa.contains("sveltos-events-manager") && sa.contains("sveltos-events-agent"),
        "{sa}"
    );

    // Again: nothing changes, and it says so.
    let again = plugin(dir, &["install", "--wait=false"]).ok();
    assert!(
        again.stdout.contains("nothing to change"),
        "{}",
        again.stdout
    );
    assert!(!again.stdout.contains(" configured"), "{}", again.stdout);

    // An upgrade of one setting touches only the object it is in.
    let scaled = plugin(dir, &["install", "--replicas", "2", "--wait=false"]).ok();
    let changed: Vec<&str> = scaled
        .stdout
        .lines()
        .filter(|l| l.ends_with(" configured"))
        .collect();
    assert_eq!(
        changed,
        ["deployment.apps/sveltos-events-manager configured"],
        "{}",
        scaled.stdout
    );
    let replicas = kubectl(
        dir,
        "mgmt",
        &[
            "get",
            "deployment",
            "-n",
            "projectsveltos",
            "sveltos-events-manager",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
    );
    assert_eq!(replicas, "2");

    // version finds both controllers.
    let version = plugin(dir, &["version"]).ok();
    let plugin_version = env!("CARGO_PKG_VERSION");
    assert!(
        version
            .stdout
            .contains(&format!("plugin: v{plugin_version}")),
        "{}",
        version.stdout
    );
    for name in ["sveltos-events-manager", "sveltos-events-agent"] {
        assert!(
            version
                .stdout
                .contains(&format!("projectsveltos/{name}: v{plugin_version}")),
            "{}",
            version.stdout
        );
    }
}

#[test]
fn bad_input_is_one_sentence_and_exit_code_2() {
    let sandbox = common::start_bare(0);
    let dir = &sandbox.dir;
    plugin(dir, &["install", "--kubeconfig", "/nonexistent/kubeconfig"])
        .fails_saying("reading kubeconfig /nonexistent/kubeconfig");

    plugin(dir, &["version", "--context", "no-such-context"]).fails_saying("no-such-context");

    // A server that is not there: the kubeconfig of a port nobody listens on.
    let kubeconfig = std::fs::read_to_string(dir.join("mgmt.kubeconfig")).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let start = kubeconfig.find("https://127.0.0.1:").unwrap();
    let end = start + kubeconfig[start..].find('\n').unwrap();
    let dead = format!(
        "{}https://127.0.0.1:{port}{}",
        &kubeconfig[..start],
        &kubeconfig[end..]
    );
    let dead_path = dir.join("dead.kubeconfig");
    std::fs::write(&dead_path, dead).unwrap();
    plugin(
        dir,
        &["install", "--kubeconfig", dead_path.to_str().unwrap()],
    )
    .fails_saying("cannot reach the Kubernetes API server at https://127.0.0.1:");

    // A server dry run before the namespace exists names what it could not check.
    let dry = plugin(dir, &["install", "--dry-run=server"]).ok();
    assert!(dry.stdout.contains("deployment.apps/sveltos-events-manager not checked: namespace projectsveltos does not exist yet"), "{}", dry.stdout);
    assert!(
        kubectl(dir, "mgmt", &["get", "namespaces", "-o", "name"])
            .lines()
            .all(|l| l != "namespace/projectsveltos")
    );

    let bad_namespace = plugin(dir, &["install", "--export", "-n", "Not_A_Name"])
        .fails_saying("--namespace \"Not_A_Name\" is not a valid name");
    assert!(bad_namespace.stdout.is_empty());
}
