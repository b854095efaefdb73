//! The agent's health and metrics: `/healthz`, `/readyz` (once the hub's caches are filled)
//! and `/metrics` (Prometheus text) for evaluations, matches, errors, latency and report
//! writes. One registry per process, as Prometheus clients keep it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Resident memory of this process in MiB, from `/proc/self/status` (0 where there is none);
/// what the benchmarks report.
pub fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A benchmark's setting: environment variable `name` as a number, else `default`.
pub fn bench_setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p` quantile (0 to 1) of `sorted` samples, nearest rank; zero when there are none.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// A duration in milliseconds, as the benchmarks print it (`12.34 ms`).
pub fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Labels of the counters that split by result.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: &'static str,
}

const OK: Outcome = Outcome { outcome: "ok" };
const ERROR: Outcome = Outcome { outcome: "error" };

/// The agent's metrics and readiness.
pub struct Metrics {
    registry: Registry,
    evaluations: Family<Outcome, Counter>,
    matches: Counter,
    evaluation_seconds: Histogram,
    report_writes: Family<Outcome, Counter>,
    clusters: Gauge,
    ready: AtomicBool,
}

/// The process' metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("sveltos_events_agent");
        let evaluations = Family::<Outcome, Counter>::default();
        registry.register(
            "evaluations",
            "EventSource evaluations over one cluster's objects, by outcome (ok, error)",
            evaluations.clone(),
        );
        let matches = Counter::default();
        registry.register(
            "matches",
            "Matching resources found, summed over evaluations",
            matches.clone(),
        );
        // 100 us .. ~1.6 s.
        let evaluation_seconds = Histogram::new(exponential_buckets(0.0001, 2.0, 15));
        registry.register(
            "evaluation_seconds",
            "Time to evaluate one EventSource in one cluster (Lua included)",
            evaluation_seconds.clone(),
        );
        let report_writes = Family::<Outcome, Counter>::default();
        registry.register(
            "report_writes",
            "EventReport writes to the management cluster, by outcome (ok, error)",
            report_writes.clone(),
        );
        let clusters = Gauge::default();
        registry.register(
            "clusters",
            "Registered clusters the hub serves",
            clusters.clone(),
        );
        Metrics {
            registry,
            evaluations,
            matches,
            evaluation_seconds,
            report_writes,
            clusters,
            ready: AtomicBool::new(false),
        }
    }

    /// Records one evaluation: `matching` resources when it succeeded, `None` when it failed.
    pub fn evaluated(&self, matching: Option<usize>, elapsed: Duration) {
        self.evaluation_seconds.observe(elapsed.as_secs_f64());
        match matching {
            Some(count) => {
                self.evaluations.get_or_create(&OK).inc();
                self.matches.inc_by(count as u64);
            }
            None => {
                self.evaluations.get_or_create(&ERROR).inc();
            }
        }
    }

    /// Records one EventReport write.
    pub fn report_written(&self, ok: bool) {
        self.report_writes
            .get_or_create(if ok { &OK } else { &ERROR })
            .inc();
    }

    /// Sets the number of clusters served.
    pub fn set_clusters(&self, count: usize) {
        self.clusters.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Marks the hub ready (its caches are filled).
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// Whether the hub is ready.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// The metrics in Prometheus' text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(metrics): State<&'static Metrics>) -> impl IntoResponse {
    if metrics.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches are still filling")
    }
}

async fn metrics_text(State(metrics): State<&'static Metrics>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.encode(),
    )
}

/// `/healthz`, `/readyz` and `/metrics` of the process' metrics.
pub fn router() -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(metrics())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluations_matches_and_writes_are_counted() {
        let metrics = Metrics::new();
        metrics.evaluated(Some(3), Duration::from_millis(2));
        metrics.evaluated(Some(2), Duration::from_millis(1));
        metrics.evaluated(None, Duration::from_millis(1));
        metrics.report_written(true);
        metrics.set_clusters(4);
        let text = metrics.encode();
        for line in [
            r#"sveltos_events_agent_evaluations_total{outcome="ok"} 2"#,
            r#"sveltos_events_agent_evaluations_total{outcome="error"} 1"#,
            "sveltos_events_agent_matches_total 5",
            "sveltos_events_agent_evaluation_seconds_count 3",
            r#"sveltos_events_agent_report_writes_total{outcome="ok"} 1"#,
            "sveltos_events_agent_clusters 4",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
        assert!(!metrics.is_ready());
        metrics.set_ready();
        assert!(metrics.is_ready());
    }
}
