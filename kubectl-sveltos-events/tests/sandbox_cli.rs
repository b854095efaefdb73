//! `kubectl-sveltos_events sandbox`: kubeconfigs, READY, and exit 0 on SIGTERM.
#![allow(clippy::unwrap_used)] // test code

use e2e as common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sandbox_writes_kubeconfigs_and_exits_cleanly_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("sbx-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-sveltos_events"))
        .args(["sandbox", "--dir"])
        .arg(&dir)
        .args(["--clusters", "1", "--no-controllers"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !dir.join("READY").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "READY never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for name in ["mgmt", "cluster-1"] {
        let kc = std::fs::read_to_string(dir.join(format!("{name}.kubeconfig"))).unwrap();
        assert!(kc.contains("server: https://127.0.0.1:"), "{kc}");
        assert!(kc.contains("certificate-authority-data: "), "{kc}");
        assert!(kc.contains(&format!("current-context: {name}")));
        // kubectl verifies the server's certificate against the kubeconfig's CA, by IP SAN.
        common::kubectl(&dir, name, &["get", "--raw", "/version"]);
    }
    assert!(!dir.join("cluster-2.kubeconfig").exists());
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "did not exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(code.success(), "{code:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_narrates_the_network_policy_scenario_to_the_deployed_policy() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("sbx-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-sveltos_events"))
        .args(["sandbox", "--dir"])
        .arg(&dir)
        .args(["--clusters", "1", "--demo"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let done = line.starts_with("ready:");
        lines.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let text = lines.join("\n");
    assert!(
        text.contains("3. agent: EventReport default/sveltos--sveltos-service--cluster-1"),
        "{text}"
    );
    assert!(
        text.contains("5. deployer: NetworkPolicy default/front-my-service is in cluster-1"),
        "{text}"
    );
}
