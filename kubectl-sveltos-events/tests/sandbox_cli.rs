//! `kubectl-sveltos_events sandbox`: kubeconfigs, READY, and exit 0 on SIGTERM.
#![allow(clippy::unwrap_used)] // test code

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
        assert!(kc.contains("server: http://127.0.0.1:"), "{kc}");
        assert!(kc.contains(&format!("current-context: {name}")));
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
