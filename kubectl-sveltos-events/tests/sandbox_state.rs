//! `kubectl sveltos-events sandbox` as a daily tool: state that survives kill -9 and restarts,
//! the folder's lock, `status`/`stop`/`reset`, `DIR/kubeconfig`'s contexts, the user's own
//! kubeconfig merged and cleaned, refusals before anything starts, and plain or JSON logs.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-sveltos_events");

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sbx-state-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Starts a sandbox on `dir` with `flags`, its standard error in `dir.stderr`; waits for
/// READY.
fn start(dir: &Path, flags: &[&str]) -> Child {
    start_with_kubeconfig(dir, flags, None)
}

/// [`start`], with `KUBECONFIG` set to `kubeconfig` when given.
fn start_with_kubeconfig(dir: &Path, flags: &[&str], kubeconfig: Option<&Path>) -> Child {
    // A sandbox killed with -9 had no chance to remove it.
    let _ = std::fs::remove_file(dir.join("READY"));
    let log = std::fs::File::create(dir.with_extension("stderr")).unwrap();
    let mut command = Command::new(PLUGIN);
    command
        .arg("sandbox")
        .arg("--dir")
        .arg(dir)
        .args(flags)
        .stdout(Stdio::null())
        .stderr(log);
    if let Some(path) = kubeconfig {
        command.env("KUBECONFIG", path);
    }
    let mut child = command.spawn().unwrap();
    let start = Instant::now();
    while !dir.join("READY").exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the sandbox exited ({status}): {}", stderr_of(dir));
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "READY never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn stderr_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.with_extension("stderr")).unwrap_or_default()
}

fn plugin(args: &[&str]) -> Output {
    Command::new(PLUGIN).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl is installed")
}

fn kubectl_ok(kubeconfig: &Path, args: &[&str]) -> String {
    let out = kubectl(kubeconfig, args);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The resourceVersion of `cluster`'s namespace list: it moves with every write.
fn cluster_rv(dir: &Path, cluster: &str) -> String {
    let raw = kubectl_ok(
        &dir.join(format!("{cluster}.kubeconfig")),
        &["get", "--raw", "/api/v1/namespaces"],
    );
    let list: serde_json::Value = serde_json::from_str(&raw).unwrap();
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn client(dir: &Path) -> kube::Client {
    let file = kube::config::Kubeconfig::read_from(dir.join("mgmt.kubeconfig")).unwrap();
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_survives_kill_9_and_nothing_is_doubled() {
    let dir = folder("kill9");
    let mut child = start(&dir, &["--clusters", "0", "--no-controllers"]);
    let maps: Api<ConfigMap> = Api::namespaced(client(&dir).await, "default");
    let acknowledged: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let mut writers = Vec::new();
    for w in 0..8 {
        let (maps, acknowledged) = (maps.clone(), acknowledged.clone());
        writers.push(tokio::spawn(async move {
            for i in 0.. {
                let name = format!("w{w}-{i}");
                let map: ConfigMap = serde_json::from_value(
                    serde_json::json!({"metadata": {"name": name}, "data": {"i": i.to_string()}}),
                )
                .unwrap();
                match maps.create(&PostParams::default(), &map).await {
                    Ok(made) => {
                        let uid = made.metadata.uid.unwrap();
                        acknowledged.lock().unwrap().insert(name, uid);
                    }
                    Err(_) => return,
                }
            }
        }));
    }
    while acknowledged.lock().unwrap().len() < 300 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().unwrap(); // SIGKILL, in the middle of the burst
    child.wait().unwrap();
    for writer in writers {
        writer.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();

    let mut child = start(&dir, &["--clusters", "0", "--no-controllers"]);
    let maps: Api<ConfigMap> = Api::namespaced(client(&dir).await, "default");
    let stored = maps.list(&ListParams::default()).await.unwrap();
    let uids: BTreeMap<String, String> = stored
        .items
        .iter()
        .map(|m| {
            (
                m.metadata.name.clone().unwrap(),
                m.metadata.uid.clone().unwrap(),
            )
        })
        .collect();
    for (name, uid) in &acknowledged {
        assert_eq!(uids.get(name), Some(uid), "{name} was answered, then lost");
    }
    let versions: BTreeSet<&str> = stored
        .items
        .iter()
        .map(|m| m.metadata.resource_version.as_deref().unwrap())
        .collect();
    assert_eq!(
        versions.len(),
        stored.items.len(),
        "a record was replayed twice"
    );
    let newest = versions
        .iter()
        .map(|v| v.parse::<u64>().unwrap())
        .max()
        .unwrap();
    let map: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "after"}})).unwrap();
    let after = maps.create(&PostParams::default(), &map).await.unwrap();
    let after: u64 = after.metadata.resource_version.unwrap().parse().unwrap();
    assert!(
        after > newest,
        "resourceVersions go on upward: {after} after {newest}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_restart_keeps_the_scenario_and_the_controllers_rewrite_nothing() {
    let dir = folder("restart");
    let mut child = start(&dir, &["--clusters", "1", "--demo"]);
    // The controllers are done once nothing is written for two seconds: their statuses too
    // (the manager acknowledges a burst of report generations up to a second later).
    let mut before = (cluster_rv(&dir, "mgmt"), cluster_rv(&dir, "cluster-1"));
    let mut quiet_since = std::time::Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(200));
        let now = (cluster_rv(&dir, "mgmt"), cluster_rv(&dir, "cluster-1"));
        if now != before {
            (before, quiet_since) = (now, std::time::Instant::now());
        }
    }
    let stop = plugin(&["sandbox", "stop", "--dir", dir.to_str().unwrap()]);
    assert!(stop.status.success(), "{}", text(&stop.stderr));
    assert!(child.wait().unwrap().success());
    assert!(!dir.join("READY").exists(), "READY outlived the sandbox");

    let mut child = start(&dir, &["--clusters", "1"]);
    // The controllers' first passes over what they find.
    std::thread::sleep(Duration::from_secs(2));
    let after = (cluster_rv(&dir, "mgmt"), cluster_rv(&dir, "cluster-1"));
    assert_eq!(
        after, before,
        "something was written again after the restart"
    );
    kubectl_ok(
        &dir.join("cluster-1.kubeconfig"),
        &["get", "networkpolicy", "front-my-service"],
    );
    let profiles = kubectl_ok(
        &dir.join("mgmt.kubeconfig"),
        &["get", "clusterprofiles", "-o", "name"],
    );
    assert!(profiles.contains("clusterprofile"), "{profiles}");
    let _ = plugin(&["sandbox", "stop", "--dir", dir.to_str().unwrap()]);
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_folder_is_locked_and_status_stop_reset_tell_and_do_what_they_say() {
    let dir = folder("control");
    let d = dir.to_str().unwrap();
    let mut child = start(&dir, &["--clusters", "1", "--no-controllers"]);
    let pid = child.id().to_string();

    let status = plugin(&["sandbox", "status", "--dir", d]);
    assert_eq!(status.status.code(), Some(0));
    let said = text(&status.stdout);
    assert!(
        said.contains(&format!("running (process {pid}), ready")),
        "{said}"
    );
    assert!(said.contains("cluster-1  https://127.0.0.1:"), "{said}");
    let json: serde_json::Value =
        serde_json::from_slice(&plugin(&["sandbox", "status", "--dir", d, "-o", "json"]).stdout)
            .unwrap();
    assert_eq!(json["running"], true);
    assert_eq!(json["pid"].as_u64().unwrap().to_string(), pid);
    assert_eq!(json["clusters"].as_array().unwrap().len(), 2);

    let second = plugin(&["sandbox", "--dir", d, "--clusters", "1", "--no-controllers"]);
    assert_eq!(second.status.code(), Some(2));
    let refusal = text(&second.stderr);
    assert!(
        refusal.contains(&format!("is in use by another sandbox (process {pid})")),
        "{refusal}"
    );
    assert!(
        dir.join("READY").exists(),
        "the refused start touched the running one"
    );
    cluster_rv(&dir, "cluster-1");

    let refused = plugin(&["sandbox", "reset", "--dir", d]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("stop it first"));

    let stop = plugin(&["sandbox", "stop", "--dir", d]);
    assert!(stop.status.success(), "{}", text(&stop.stderr));
    assert!(text(&stop.stdout).contains(&format!("stopped the sandbox on {d} (process {pid})")));
    // The lock is let go as the process ends; its exit may come a moment later.
    let exited = (0..200).find_map(|_| {
        let status = child.try_wait().unwrap();
        if status.is_none() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        status
    });
    assert!(exited.is_some_and(|s| s.success()), "{exited:?}");
    assert!(!dir.join("READY").exists());
    let status = plugin(&["sandbox", "status", "--dir", d]);
    assert_eq!(status.status.code(), Some(3));
    assert!(text(&status.stdout).contains("not running"));

    let reset = plugin(&["sandbox", "reset", "--dir", d]);
    assert!(reset.status.success(), "{}", text(&reset.stderr));
    for gone in [
        "state",
        "kubeconfig",
        "mgmt.kubeconfig",
        "cluster-1.kubeconfig",
    ] {
        assert!(!dir.join(gone).exists(), "{gone} is still there");
    }
    // Logs are plain text off a terminal.
    let logs = stderr_of(&dir);
    assert!(logs.contains("cluster started"), "{logs}");
    assert!(
        !logs.contains('\u{1b}'),
        "colour codes in a log file: {logs}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubectl_moves_between_clusters_by_the_folders_contexts() {
    let dir = folder("contexts");
    let mut child = start(
        &dir,
        &["--clusters", "1", "--no-controllers", "--ephemeral"],
    );
    let all = dir.join("kubeconfig");
    let transcript = [
        (
            vec!["config", "get-contexts", "-o", "name"],
            "cluster-1\nmgmt\n",
        ),
        (vec!["config", "current-context"], "mgmt\n"),
        (
            vec!["create", "configmap", "here", "--from-literal=k=v"],
            "configmap/here created\n",
        ),
        (
            vec!["config", "use-context", "cluster-1"],
            "Switched to context \"cluster-1\".\n",
        ),
        (
            vec![
                "get",
                "configmaps",
                "--field-selector=metadata.name=here",
                "-o",
                "name",
            ],
            "",
        ),
        (
            vec![
                "--context",
                "mgmt",
                "get",
                "configmap",
                "here",
                "-o",
                "jsonpath={.data.k}",
            ],
            "v",
        ),
    ];
    for (args, expected) in transcript {
        assert_eq!(kubectl_ok(&all, &args), expected, "kubectl {args:?}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn merged_contexts_join_the_users_kubeconfig_and_reset_takes_them_out() {
    let dir = folder("merge");
    std::fs::create_dir_all(&dir).unwrap();
    // The user's kubeconfig is a link to the real file, with a path relative to it.
    let real = dir.with_extension("real-kubeconfig");
    let own = dir.with_extension("kubeconfig");
    let _ = std::fs::remove_file(&own);
    std::os::unix::fs::symlink(&real, &own).unwrap();
    std::fs::write(
        &real,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster: {server: 'https://prod:6443', certificate-authority: prod-ca.pem}\n\
         contexts:\n- name: prod\n  context: {cluster: prod, user: me}\ncurrent-context: prod\n\
         users:\n- name: me\n  user: {token: abc}\n",
    )
    .unwrap();
    let mut child = start_with_kubeconfig(
        &dir,
        &["--clusters", "0", "--no-controllers", "--merge-kubeconfig"],
        Some(&own),
    );
    assert_eq!(
        kubectl_ok(&own, &["config", "get-contexts", "-o", "name"]),
        "prod\nsveltos-sandbox-mgmt\n"
    );
    assert_eq!(kubectl_ok(&own, &["config", "current-context"]), "prod\n");
    assert!(
        std::fs::symlink_metadata(&own)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let written = std::fs::read_to_string(&real).unwrap();
    assert!(
        written.contains("certificate-authority: prod-ca.pem"),
        "{written}"
    );
    kubectl_ok(
        &own,
        &[
            "--context",
            "sveltos-sandbox-mgmt",
            "get",
            "namespace",
            "default",
        ],
    );
    let d = dir.to_str().unwrap();
    assert!(plugin(&["sandbox", "stop", "--dir", d]).status.success());
    child.wait().unwrap();
    let reset = plugin(&["sandbox", "reset", "--dir", d]);
    assert!(text(&reset.stdout).contains("removed the sandbox's contexts from"));
    assert_eq!(
        kubectl_ok(&own, &["config", "get-contexts", "-o", "name"]),
        "prod\n"
    );
    assert_eq!(
        kubectl_ok(&own, &["config", "view", "-o", "jsonpath={.users[*].name}"]),
        "me"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&own);
    let _ = std::fs::remove_file(&real);
}

#[test]
fn what_cannot_start_is_refused_in_words_before_anything_starts() {
    let no_folder = plugin(&["sandbox", "--dir", "/proc/nowhere/sbx"]);
    assert_eq!(no_folder.status.code(), Some(2));
    let said = text(&no_folder.stderr);
    assert!(
        said.contains("cannot create the folder /proc/nowhere/sbx: No such file or directory"),
        "{said}"
    );

    let dir = folder("refusals");
    let demo = plugin(&[
        "sandbox",
        "--dir",
        dir.to_str().unwrap(),
        "--demo",
        "--clusters",
        "0",
    ]);
    assert_eq!(demo.status.code(), Some(2));
    assert!(text(&demo.stderr).contains("--demo needs at least one managed cluster"));
    assert!(!dir.exists(), "files were left behind");

    // A folder that was never a sandbox's keeps its own kubeconfig.
    let foreign = folder("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("kubeconfig"), "mine").unwrap();
    let f = foreign.to_str().unwrap();
    for args in [
        vec!["sandbox", "--dir", f],
        vec!["sandbox", "reset", "--dir", f],
    ] {
        let refused = plugin(&args);
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
        assert!(
            text(&refused.stderr).contains("is not a sandbox's folder (it has no lock file)"),
            "{args:?}: {}",
            text(&refused.stderr)
        );
    }
    assert_eq!(
        std::fs::read_to_string(foreign.join("kubeconfig")).unwrap(),
        "mine"
    );
    let _ = std::fs::remove_dir_all(&foreign);

    let journal = dir.join("state").join("mgmt").join("journal");
    std::fs::create_dir_all(journal.parent().unwrap()).unwrap();
    std::fs::write(&journal, "not a journal\nat all\n").unwrap();
    let damaged = plugin(&["sandbox", "--dir", dir.to_str().unwrap(), "--clusters", "0"]);
    assert_eq!(damaged.status.code(), Some(2));
    let said = text(&damaged.stderr);
    assert!(
        said.contains(&format!("{} is damaged at byte 0", journal.display())),
        "{said}"
    );
    assert!(!dir.join("READY").exists());
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        "not a journal\nat all\n",
        "a damaged journal is left as it was"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn log_lines_are_json_when_asked() {
    let dir = folder("json");
    let mut child = start(
        &dir,
        &[
            "--clusters",
            "0",
            "--no-controllers",
            "--ephemeral",
            "--log-format",
            "json",
        ],
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let logs = stderr_of(&dir);
    assert!(!logs.is_empty());
    for line in logs.lines() {
        let parsed: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(parsed["level"].is_string(), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn faults_are_injected_listed_and_cleared_cluster_by_cluster() {
    let dir = folder("faults");
    let d = dir.to_str().unwrap();
    // `sandbox fault --dir <the folder>` and `args`.
    let fault = |args: &[&str]| plugin(&[&["sandbox", "fault", "--dir", d], args].concat());
    let not_running = fault(&["list"]);
    assert_ne!(not_running.status.code(), Some(0));
    assert!(text(&not_running.stderr).contains("no sandbox runs on"));
    let mut child = start(
        &dir,
        &["--clusters", "1", "--no-controllers", "--ephemeral"],
    );

    let injected = fault(&["errors", "--code", "503", "--share", "0.5", "--for", "1m"]);
    assert!(injected.status.success(), "{}", text(&injected.stderr));
    let said = text(&injected.stdout);
    for cluster in ["mgmt", "cluster-1"] {
        assert!(
            said.contains(&format!(
                "{cluster}: errors (code 503, share 0.5), 60s left"
            )),
            "{said}"
        );
    }
    let latency = fault(&["--cluster", "cluster-1", "latency", "--delay", "50ms"]);
    assert!(latency.status.success(), "{}", text(&latency.stderr));
    let listed = text(&fault(&["--cluster", "cluster-1", "list"]).stdout);
    assert!(
        listed.contains("cluster-1: errors (code 503, share 0.5)"),
        "{listed}"
    );
    assert!(listed.contains("latency (millis 50), 30s left"), "{listed}");
    assert!(!listed.contains("mgmt"), "{listed}");
    // What kubectl meets: the cluster faulted answers 500, the other one serves.
    let failing = fault(&["--cluster", "cluster-1", "errors", "--code", "500"]);
    assert!(failing.status.success(), "{}", text(&failing.stderr));
    let refused = kubectl(
        &dir.join("cluster-1.kubeconfig"),
        &["get", "--raw", "/api/v1/namespaces/default/configmaps"],
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("Internal error occurred: injected fault"),
        "{}",
        text(&refused.stderr)
    );
    let mgmt = fault(&["--cluster", "mgmt", "clear"]);
    assert_eq!(text(&mgmt.stdout), "mgmt: no fault in force\n");
    kubectl_ok(&dir.join("mgmt.kubeconfig"), &["get", "configmaps"]);

    let unknown = fault(&["--cluster", "nope", "clear"]);
    assert_ne!(unknown.status.code(), Some(0));
    assert!(text(&unknown.stderr).contains("has no cluster \"nope\""));
    let bad = fault(&["errors", "--code", "404"]);
    assert_ne!(bad.status.code(), Some(0));
    assert!(
        text(&bad.stderr).contains("500, 503 or 429"),
        "{}",
        text(&bad.stderr)
    );
    let cleared = text(&fault(&["clear"]).stdout);
    assert_eq!(
        cleared,
        "mgmt: no fault in force\ncluster-1: no fault in force\n"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
