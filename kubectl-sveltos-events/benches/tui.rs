//! The TUI's cost of one watch event: apply it to the state and draw a 200x60 frame, with 100
//! clusters and 1,000 each of generated ClusterProfiles, ClusterSummaries and EventReports
//! (issue 18's target: p99 <= 16 ms), on the overview and on the profiles list; and the RSS
//! that state takes (target <= 200 MiB for the whole TUI).
//!
//! Run: `cargo bench -p kubectl-sveltos-events --bench tui`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark

use std::time::Instant;

use kubectl_sveltos_events::tui::feed::Update;
use kubectl_sveltos_events::tui::render::draw;
use kubectl_sveltos_events::tui::state::State;
use kubectl_sveltos_events::tui::view::View;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};

const CLUSTERS: usize = 100;
const PROFILES: usize = 1000;
const ROUNDS: usize = 2000;

fn profile(i: usize) -> Value {
    json!({"metadata": {"name": format!("sveltos-{i:020}"), "resourceVersion": "1",
        "creationTimestamp": "2026-11-23T21:00:00Z",
        "labels": {
            "eventtrigger.lib.projectsveltos.io/eventtriggername": format!("trigger-{}", i % 10),
            "eventtrigger.lib.projectsveltos.io/clusterNamespace": "fleet",
            "eventtrigger.lib.projectsveltos.io/clustername": format!("cluster-{}", i % CLUSTERS),
            "eventtrigger.lib.projectsveltos.io/resourcenamespace": "default",
            "eventtrigger.lib.projectsveltos.io/resourcename": format!("service-{i}")}}})
}

fn loaded() -> State {
    let mut state = State::new("https://127.0.0.1:6443", true);
    let clusters = (0..CLUSTERS)
        .map(|i| json!({"metadata": {"name": format!("cluster-{i}"), "namespace": "fleet"},
                        "status": {"ready": true, "connectionStatus": "Healthy", "version": "v1.30.0"}}))
        .collect();
    let summaries = (0..PROFILES)
        .map(|i| json!({"metadata": {"name": format!("sveltos-{i:020}-sveltos-cluster-{}", i % CLUSTERS),
                                     "namespace": "fleet",
                                     "labels": {"projectsveltos.io/cluster-profile-name": format!("sveltos-{i:020}")}},
                        "spec": {"clusterNamespace": "fleet", "clusterName": format!("cluster-{}", i % CLUSTERS)},
                        "status": {"featureSummaries": [{"featureID": "Resources", "status": "Provisioned"}]}}))
        .collect();
    let reports = (0..PROFILES)
        .map(|i| json!({"metadata": {"name": format!("sveltos--source-{}--cluster-{}", i / CLUSTERS, i % CLUSTERS),
                                     "namespace": "fleet"},
                        "spec": {"clusterNamespace": "fleet", "clusterName": format!("cluster-{}", i % CLUSTERS),
                                 "eventSourceName": format!("source-{}", i / CLUSTERS),
                                 "matchingResources": [{"kind": "Service", "namespace": "default", "name": format!("service-{i}")}]}}))
        .collect();
    state.on_update(Update::Listed("SveltosCluster", clusters), "00:00:00");
    state.on_update(
        Update::Listed("ClusterProfile", (0..PROFILES).map(profile).collect()),
        "00:00:00",
    );
    state.on_update(Update::Listed("ClusterSummary", summaries), "00:00:00");
    state.on_update(Update::Listed("EventReport", reports), "00:00:00");
    state
}

fn main() {
    let mut state = loaded();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    for view in [View::Overview, View::Profiles] {
        state.view = view;
        let mut times = Vec::with_capacity(ROUNDS);
        for i in 0..ROUNDS {
            let mut changed = profile(i % PROFILES);
            changed["metadata"]["resourceVersion"] = json!((i + 2).to_string());
            let start = Instant::now();
            state.on_update(Update::Applied("ClusterProfile", changed), "00:00:01");
            terminal.draw(|frame| draw(frame, &state)).unwrap();
            times.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
        println!(
            "tui {view:?}: one update + one 200x60 frame, {CLUSTERS} clusters, {PROFILES} profiles: \
             p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (target p99 <= 16 ms)",
            at(0.50),
            at(0.99),
            times[times.len() - 1]
        );
    }
    println!(
        "tui state RSS: {:.1} MiB (target <= 200 MiB)",
        agent::observe::rss_mib()
    );
}
