//! `install` and `version` against the sandbox (API servers only, no controllers): the export
//! passes a server-side dry run, install creates everything and waits for it, a second run
//! changes nothing and says so, a changed flag changes only what it touches, and bad input
//! ends in one sentence with exit code 2. `register`/`deregister cluster` with a
//! ServiceAccount made in the managed cluster.
#![allow(clippy::unwrap_used)] // test code

use e2e as common;

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
    // A field of the manager's Deployment, by JSONPath.
    let manager = |path: &str| {
        let jsonpath = format!("jsonpath={{{path}}}");
        let get = [
            "get",
            "deployment",
            "-n",
            "projectsveltos",
            "sveltos-events-manager",
        ];
        kubectl(
            dir,
            "mgmt",
            &[&get[..], &["-o", jsonpath.as_str()]].concat(),
        )
    };
    assert_eq!(manager(".spec.replicas"), "2");

    // A raised memory limit stays when a later install (an upgrade) does not repeat it.
    let limit = || manager(".spec.template.spec.containers[0].resources.limits.memory");
    let raised = [
        "install",
        "--replicas",
        "2",
        "--manager-memory",
        "2Gi",
        "--wait=false",
    ];
    plugin(dir, &raised).ok();
    assert_eq!(limit(), "2Gi");
    let upgrade = plugin(dir, &["install", "--replicas", "2", "--wait=false"]).ok();
    assert!(
        upgrade
            .stdout
            .contains("keeping the installed memory limits: manager 2Gi, agent 512Mi")
            && upgrade.stdout.contains("nothing to change"),
        "{}",
        upgrade.stdout
    );
    assert_eq!(limit(), "2Gi");

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

    let dead_path = common::dead_kubeconfig(dir, "mgmt");
    plugin(
        dir,
        &["install", "--kubeconfig", dead_path.to_str().unwrap()],
    )
    .fails_saying("cannot reach the Kubernetes API server at https://127.0.0.1:");
    // check could not check: exit 2, not a list of failures.
    let unchecked = plugin(dir, &["check", "--kubeconfig", dead_path.to_str().unwrap()]);
    assert_eq!(
        unchecked.code, 2,
        "{}{}",
        unchecked.stdout, unchecked.stderr
    );

    // A kubeconfig whose user logs in through an exec plugin (as cloud providers' do) works
    // as kubectl takes it: the credential comes from the command; a wrong one is refused.
    let kubeconfig = std::fs::read_to_string(dir.join("mgmt.kubeconfig")).unwrap();
    for (token, code) in [("sandbox", 0), ("wrong", 2)] {
        let helper = dir.join(format!("credential-{token}.sh"));
        std::fs::write(
            &helper,
            format!(
                "#!/bin/sh\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\
                 \"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{token}\"}}}}'\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let exec = kubeconfig.replace(
            "    token: sandbox",
            &format!(
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      \
                 command: {}\n      interactiveMode: Never",
                helper.display()
            ),
        );
        assert_ne!(
            exec, kubeconfig,
            "the sandbox's kubeconfig no longer holds `token: sandbox`"
        );
        let path = dir.join(format!("mgmt-exec-{token}.kubeconfig"));
        std::fs::write(&path, exec).unwrap();
        let run = plugin(dir, &["version", "--kubeconfig", path.to_str().unwrap()]);
        assert_eq!(run.code, code, "{token}: {}{}", run.stdout, run.stderr);
    }

    // A kubeconfig that skips verifying the server's certificate works as with kubectl,
    // which does not remark on it at every connection either.
    let insecure = kubeconfig
        .lines()
        .filter(|line| !line.trim_start().starts_with("certificate-authority-data:"))
        .map(|line| match line.strip_suffix("  cluster:") {
            Some(indent) => {
                format!("{indent}  cluster:\n{indent}    insecure-skip-tls-verify: true")
            }
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(insecure.contains("insecure-skip-tls-verify") && !insecure.contains("authority"));
    let path = dir.join("mgmt-insecure.kubeconfig");
    std::fs::write(&path, insecure).unwrap();
    let run = plugin(
        dir,
        &["check", "--pre", "--kubeconfig", path.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("WARN"), "{}", run.stderr);

    plugin(dir, &["install", "--export", "--manager-memory", "2GB"])
        .fails_saying("\"GB\" is not a unit of memory");

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

/// The kubeconfig registered for `cluster-1` (decoded from its Secret).
fn registered_kubeconfig(dir: &std::path::Path) -> String {
    use base64::Engine;
    let secret: serde_json::Value = serde_json::from_str(&kubectl(
        dir,
        "mgmt",
        &[
            "-n",
            "default",
            "get",
            "secret",
            "cluster-1-sveltos-kubeconfig",
            "-o",
            "json",
        ],
    ))
    .unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["kubeconfig"].as_str().unwrap())
        .unwrap();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn register_and_deregister_a_cluster_with_a_service_account() {
    let sandbox = common::start_bare(1);
    let dir = &sandbox.dir;
    let managed = dir.join("cluster-1.kubeconfig");
    let managed = managed.to_str().unwrap();
    let register = [
        "register",
        "cluster",
        "-n",
        "default",
        "--name",
        "cluster-1",
    ];
    let with = |extra: &[&str]| common::register_cluster_1(dir, extra);
    with(&[]).fails_saying("sveltos-events is not installed there");
    plugin(dir, &["install", "--timeout", "30s"]).ok();
    let mut elsewhere = register.to_vec();
    elsewhere[3] = "fleet";
    elsewhere.extend(["--cluster-kubeconfig", managed]);
    plugin(dir, &elsewhere).fails_saying("namespace fleet does not exist");
    with(&["--labels", "env=fv,Bad Key=x"]).fails_saying("not a valid label key");

    let first = with(&["--service-account", "--labels", "env=fv,dep=eng"]).ok();
    assert!(
        first.stdout.contains("answers: Kubernetes v1."),
        "{}",
        first.stdout
    );
    assert!(
        first
            .stdout
            .contains("sveltoscluster default/cluster-1 registered"),
        "{}",
        first.stdout
    );
    let registered = registered_kubeconfig(dir);
    let token = kubectl(
        dir,
        "cluster-1",
        &[
            "-n",
            "projectsveltos",
            "get",
            "secret",
            "sveltos-events-token",
            "-o",
            "jsonpath={.data.token}",
        ],
    );
    assert!(!token.is_empty());
    assert!(registered.contains("token:"), "{registered}");
    assert!(
        !registered.contains("token: sandbox\n"),
        "the user's own token: {registered}"
    );
    let cluster = common::sveltos_cluster_1(dir);
    assert_eq!(cluster["metadata"]["labels"]["dep"], "eng");
    assert_eq!(
        cluster["metadata"]["annotations"]["sveltos-events.io/service-account"],
        "projectsveltos/sveltos-events"
    );
    let binding = kubectl(
        dir,
        "cluster-1",
        &[
            "get",
            "clusterrolebinding",
            "sveltos-events-managed-cluster",
            "-o",
            "jsonpath={.roleRef.name}",
        ],
    );
    assert_eq!(binding, "cluster-admin");

    // Registered again with the user's own credentials (and a server the controllers reach
    // under another name): updated in place.
    let again = with(&["--cluster-server", "https://cluster-1.internal:6443"]).ok();
    assert!(
        again.stdout.contains("cluster-1 updated"),
        "{}",
        again.stdout
    );
    let registered = registered_kubeconfig(dir);
    assert!(registered.contains("token: sandbox\n"), "{registered}");
    assert!(
        registered.contains("https://cluster-1.internal:6443"),
        "{registered}"
    );

    // A cluster that does not answer is refused in words, unless --no-verify.
    let dead = common::dead_kubeconfig(dir, "cluster-1");
    let mut unreachable = register.to_vec();
    unreachable.extend(["--cluster-kubeconfig", dead.to_str().unwrap()]);
    plugin(dir, &unreachable).fails_saying("does not answer with the credentials to register");
    unreachable.push("--no-verify");
    plugin(dir, &unreachable).ok();

    let gone = common::deregister_cluster_1(dir).ok();
    assert!(
        gone.stdout
            .contains("sveltoscluster default/cluster-1 deleted"),
        "{}",
        gone.stdout
    );
    assert!(
        kubectl(
            dir,
            "mgmt",
            &[
                "-n",
                "default",
                "get",
                "sveltoscluster,secret",
                "-o",
                "name"
            ]
        )
        .lines()
        .all(|l| !l.contains("cluster-1")),
    );
    let left = kubectl(
        dir,
        "cluster-1",
        &[
            "-n",
            "projectsveltos",
            "get",
            "serviceaccount,secret",
            "-o",
            "name",
        ],
    );
    assert!(!left.contains("sveltos-events"), "{left}");
    assert!(
        kubectl(
            dir,
            "cluster-1",
            &["get", "clusterrolebinding", "-o", "name"]
        )
        .lines()
        .all(|l| !l.contains("sveltos-events"))
    );
}

#[test]
fn hostile_ground_is_refused_before_anything_changes() {
    let sandbox = common::start_bare(0);
    let dir = &sandbox.dir;
    let crd = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../api/crds/eventsources.lib.projectsveltos.io.yaml"
    );

    // A CRD another tool installed (Sveltos' own chart): said, and taken over only with --force.
    kubectl(dir, "mgmt", &["apply", "-f", crd]);
    plugin(dir, &["install", "--wait=false"])
        .fails_saying("CRD eventsources.lib.projectsveltos.io was installed by another tool");
    let namespaces = kubectl(dir, "mgmt", &["get", "namespaces", "-o", "name"]);
    assert!(
        !namespaces.contains("projectsveltos"),
        "changed something: {namespaces}"
    );
    let forced = plugin(dir, &["install", "--wait=false", "--force"]).ok();
    assert!(
        forced.stdout.contains("--force: going on although CRD"),
        "{}",
        forced.stdout
    );

    // CRDs of a newer sveltos-events are not downgraded without --force.
    kubectl(
        dir,
        "mgmt",
        &[
            "label",
            "--overwrite",
            "crd",
            "eventsources.lib.projectsveltos.io",
            "app.kubernetes.io/version=99.0.0",
        ],
    );
    plugin(dir, &["install", "--wait=false"])
        .fails_saying("is from sveltos-events v99.0.0, newer than");

    // Sveltos' Go event-manager in the cluster: both would reconcile the same EventTriggers.
    kubectl(
        dir,
        "mgmt",
        &[
            "-n",
            "projectsveltos",
            "create",
            "deployment",
            "event-manager",
            "--image=x",
        ],
    );
    let refused = plugin(dir, &["install", "--wait=false", "--dry-run=server"]).fails_saying(
        "Sveltos' deployment projectsveltos/event-manager would act on the same objects",
    );
    assert!(
        refused.stderr.contains("--force installs anyway"),
        "{}",
        refused.stderr
    );
}

/// A user who may only read (`view` everywhere) is refused before anything changes, each
/// missing right named, as the sandbox's RBAC answers the rights questions a real cluster
/// would.
#[test]
fn a_reader_is_refused_before_anything_changes() {
    let sandbox = common::start_bare(0);
    let dir = &sandbox.dir;
    kubectl(
        dir,
        "mgmt",
        &["-n", "default", "create", "serviceaccount", "reader"],
    );
    kubectl(
        dir,
        "mgmt",
        &[
            "create",
            "clusterrolebinding",
            "reader",
            "--clusterrole=view",
            "--serviceaccount=default:reader",
        ],
    );
    let reader = common::account_kubeconfig(dir, "mgmt", "default", "reader");
    let kubeconfig = format!("--kubeconfig={}", reader.display());

    let pre = plugin(dir, &["check", "--pre", &kubeconfig]);
    assert_eq!(pre.code, 1, "{}{}", pre.stdout, pre.stderr);
    let refused = plugin(dir, &["install", "--wait=false", &kubeconfig])
        .fails_saying("get/create/patch customresourcedefinitions.apiextensions.k8s.io;");
    assert!(
        refused.stderr.contains("clusterroles"),
        "{}",
        refused.stderr
    );
    let crds = kubectl(dir, "mgmt", &["get", "crd", "-o", "name"]);
    assert!(crds.trim().is_empty(), "changed something: {crds}");
}

#[test]
fn an_interrupted_install_finishes_and_uninstall_force_says_what_it_leaves() {
    let sandbox = common::start_bare(0);
    let dir = &sandbox.dir;
    plugin(dir, &["install", "--wait=false"]).ok();
    // Interrupted: part of it never arrived. Run again, install makes just that.
    kubectl(
        dir,
        "mgmt",
        &[
            "delete",
            "deployment",
            "sveltos-events-agent",
            "-n",
            "projectsveltos",
        ],
    );
    kubectl(
        dir,
        "mgmt",
        &["delete", "clusterrole", "sveltos-events-agent"],
    );
    let again = plugin(dir, &["install", "--wait=false"]).ok().stdout;
    let created: Vec<&str> = again.lines().filter(|l| l.ends_with(" created")).collect();
    assert_eq!(
        created,
        [
            "clusterrole.rbac.authorization.k8s.io/sveltos-events-agent created",
            "deployment.apps/sveltos-events-agent created"
        ],
        "{again}"
    );
    assert!(
        !again.lines().any(|l| l.ends_with(" configured")),
        "{again}"
    );

    // The manager scaled to nothing: uninstall will not strand a trigger's add-ons silently.
    kubectl(
        dir,
        "mgmt",
        &[
            "scale",
            "deployment",
            "sveltos-events-manager",
            "-n",
            "projectsveltos",
            "--replicas=0",
        ],
    );
    common::apply_example(dir, "mgmt", "network-policy", "");
    plugin(dir, &["uninstall"]).fails_saying("the manager is not running");
    assert_eq!(
        common::items(dir, "mgmt", &["get", "eventtriggers"]).len(),
        1
    );
    let forced = plugin(dir, &["uninstall", "--force"]).ok().stdout;
    assert!(
        forced.contains("--force: the manager is not running; 0 ClusterProfiles and their add-ons are left behind"),
        "{forced}"
    );
    assert!(common::items(dir, "mgmt", &["get", "eventtriggers"]).is_empty());
    assert!(common::items(dir, "mgmt", &["get", "deployments", "-n", "projectsveltos"]).is_empty());
}
