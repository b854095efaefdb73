//! The TUI in a real terminal (tmux) against the sandbox: a matching Service in `cluster-1`
//! shows up as its report, profile and deployed add-on; views, filter, help, YAML and the
//! trace answer their keys; a resize is followed; `q` leaves the terminal sane. Without the
//! CRDs it says to install instead of failing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use e2e as common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{apply_example, eventually, start};

/// A detached tmux session; killed when dropped.
struct Tmux(String);

impl Tmux {
    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(args)
            .output()
            .expect("tmux is installed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Sends keys one at a time, as a person types (an Escape followed at once by a key reads
    /// as Alt+key in any terminal).
    fn keys(&self, keys: &[&str]) {
        for key in keys {
            self.tmux(&["send-keys", "-t", &self.0, key]);
            std::thread::sleep(Duration::from_millis(80));
        }
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.0])
    }

    /// Waits until the screen shows every one of `texts` (on failure, shows the screen).
    fn shows(&self, texts: &[&str]) -> String {
        let start = std::time::Instant::now();
        loop {
            let screen = self.screen();
            // A text wrapped over rows (the activity feed wraps) reads as one line.
            let flat = flat(&screen);
            if texts
                .iter()
                .all(|t| screen.contains(t) || flat.contains(&self::flat(t)))
            {
                return screen;
            }
            assert!(
                start.elapsed() < common::TIMEOUT,
                "the screen never showed {texts:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `text` without the boxes' side borders and with every run of white space one space.
fn flat(text: &str) -> String {
    text.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-session", "-t", &self.0]);
    }
}

fn open(dir: &Path, tag: &str) -> Tmux {
    let session = format!("tui-e2e-{tag}-{}", std::process::id());
    let command = format!(
        "KUBECONFIG={} NO_COLOR=1 {} tui; stty -a > {}; sleep 60",
        dir.join("mgmt.kubeconfig").display(),
        env!("CARGO_BIN_EXE_kubectl-sveltos_events"),
        dir.join("stty.txt").display()
    );
    let tmux = Tmux(session.clone());
    tmux.tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "100",
        "-y",
        "30",
        &command,
    ]);
    tmux
}

#[test]
fn the_tui_follows_an_event_to_its_add_on_and_answers_its_keys() {
    let sandbox = start(1);
    let dir = sandbox.dir.clone();
    let tui = open(&dir, "chain");
    tui.shows(&["sveltos-events", "overview", "clusters       1  1 ok"]);

    apply_example(&dir, "mgmt", "network-policy", "");
    apply_example(&dir, "cluster-1", "network-policy", "managed/service.yaml");
    tui.shows(&[
        "EventReport default/sveltos--sveltos-service--cluster-1: sveltos-service matches 1",
        "ClusterProfile sveltos-",
        // The event's whole path, each hop timed.
        "default/my-service in default/cluster-1 → EventReport → ClusterProfile +0.",
        "s → deployed in default/cluster-1 +0.",
        "summaries      1  1 ok",
    ]);

    tui.keys(&[":", "s", "u", "m", "Enter"]);
    tui.shows(&["summaries (1)", "NAMESPACE/NAME", "Provisioned"]);
    tui.keys(&["/", "n", "o", "p", "e", "Enter"]);
    tui.shows(&["summaries (0)", "filter /nope"]);
    tui.keys(&["BSpace"]);
    tui.shows(&["summaries (1)"]);

    tui.keys(&["?"]);
    tui.shows(&["help (Esc closes)", "filter rows by regex"]);
    tui.keys(&["Escape", "y"]);
    tui.shows(&["kind: ClusterSummary"]);
    tui.keys(&["Escape", "t"]);
    tui.shows(&[
        "chain of ClusterSummary",
        "NetworkPolicy default/front-my-service",
    ]);
    tui.keys(&["Escape"]);

    // Enter on the profile: its origin, its policy, its cluster, then what it deployed there,
    // read live in cluster-1.
    tui.keys(&[":", "p", "r", "o", "f", "Enter", "Enter"]);
    tui.shows(&[
        "Made by EventTrigger service-network-policy",
        "for default/my-service in cluster default/cluster-1",
        "(instantiated for the event)",
        "default/cluster-1  Provisioned",
        "in default/cluster-1:",
        "NetworkPolicy default/front-my-service",
    ]);
    tui.keys(&["Escape", ":", "s", "u", "m", "Enter"]);

    tui.tmux(&["resize-window", "-t", &tui.0, "-x", "80", "-y", "24"]);
    let screen = tui.shows(&["summaries (1)"]);
    assert!(screen.lines().all(|l| l.chars().count() <= 80), "{screen}");

    tui.keys(&["q"]);
    let stty = eventually("the TUI to exit", || {
        std::fs::read_to_string(dir.join("stty.txt"))
            .ok()
            .filter(|s| !s.is_empty())
    });
    let words: Vec<&str> = stty
        .split(|c: char| c.is_whitespace() || c == ';')
        .collect();
    assert!(
        words.contains(&"icanon") && words.contains(&"echo"),
        "terminal left raw: {stty}"
    );
}

#[test]
fn without_the_crds_the_tui_says_to_install_rather_than_fail() {
    let sandbox = common::start_bare(0);
    let tui = open(&sandbox.dir, "bare");
    tui.shows(&[
        "sveltos-events is not installed in this cluster: run `kubectl sveltos-events install`",
        "overview",
    ]);
    // The same line once, not once per kind.
    let screen = tui.screen();
    assert_eq!(screen.matches("is not installed").count(), 1, "{screen}");
    tui.keys(&["q"]);
    eventually("the TUI to exit", || {
        std::fs::read_to_string(sandbox.dir.join("stty.txt"))
            .ok()
            .filter(|s| !s.is_empty())
    });
}
