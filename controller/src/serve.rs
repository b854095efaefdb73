//! The manager's HTTP endpoints: `/healthz`, `/readyz` (once every running controller's
//! caches are filled; a standby replica waiting for the leader Lease runs none and is ready,
//! so rolling updates proceed), `/metrics` (Prometheus text) and `/convert` (the CRDs' conversion webhook, which
//! answers ConversionReviews; `webhook.rs` serves it over HTTPS, which API servers require of
//! webhooks).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use serde_json::Value;

/// Labels of the pass counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PassLabels {
    controller: String,
    outcome: String,
}

/// Readiness and metrics shared by the controllers of one process.
pub struct Telemetry {
    expected: Mutex<BTreeSet<String>>,
    ready: Mutex<BTreeSet<String>>,
    passes: Family<PassLabels, Counter>,
    registry: Registry,
}

impl Telemetry {
    /// Telemetry with no controller registered yet.
    pub fn new() -> Arc<Self> {
        let passes = Family::<PassLabels, Counter>::default();
        let mut registry = Registry::with_prefix("sveltos_events");
        registry.register(
            "reconcile_passes",
            "Passes over one EventTrigger or ClusterProfile, by controller and outcome (done, again, error)",
            passes.clone(),
        );
        Arc::new(Telemetry {
            expected: Mutex::new(BTreeSet::new()),
            ready: Mutex::new(BTreeSet::new()),
            passes,
            registry,
        })
    }

    /// Declares a controller `/readyz` waits for.
    pub fn expect(&self, controller: &str) {
        if let Ok(mut expected) = self.expected.lock() {
            expected.insert(controller.to_owned());
        }
    }

    /// Marks a controller ready (its caches are filled).
    pub fn set_ready(&self, controller: &str) {
        if let Ok(mut ready) = self.ready.lock() {
            ready.insert(controller.to_owned());
        }
    }

    /// Whether every expected controller is ready.
    pub fn is_ready(&self) -> bool {
        match (self.expected.lock(), self.ready.lock()) {
            (Ok(expected), Ok(ready)) => expected.is_subset(&ready),
            _ => false,
        }
    }

    /// Counts one pass of `controller` ending in `outcome`.
    pub fn count_pass(&self, controller: &str, outcome: &str) {
        self.passes
            .get_or_create(&PassLabels {
                controller: controller.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
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

async fn readyz(State(telemetry): State<Arc<Telemetry>>) -> impl IntoResponse {
    if telemetry.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches are still filling")
    }
}

async fn metrics(State(telemetry): State<Arc<Telemetry>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        telemetry.encode(),
    )
}

async fn convert(Json(review): Json<Value>) -> Json<Value> {
    Json(api::convert::review(&review))
}

/// The endpoints, ready to serve.
pub fn router(telemetry: Arc<Telemetry>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/convert", post(convert))
        .with_state(telemetry)
}

/// The conversion webhook alone, for its HTTPS listener.
pub fn webhook_router() -> Router {
    Router::new().route("/convert", post(convert))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_once_every_expected_controller_is() {
        let telemetry = Telemetry::new();
        telemetry.expect("manager");
        telemetry.expect("deployer");
        telemetry.set_ready("manager");
        assert!(!telemetry.is_ready());
        telemetry.set_ready("deployer");
        assert!(telemetry.is_ready());
    }

    #[test]
    fn passes_are_counted_by_controller_and_outcome() {
        let telemetry = Telemetry::new();
        telemetry.count_pass("manager", "done");
        telemetry.count_pass("manager", "done");
        telemetry.count_pass("deployer", "error");
        let text = telemetry.encode();
        assert!(
            text.contains(
                r#"sveltos_events_reconcile_passes_total{controller="manager",outcome="done"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"sveltos_events_reconcile_passes_total{controller="deployer",outcome="error"} 1"#
            ),
            "{text}"
        );
    }
}
