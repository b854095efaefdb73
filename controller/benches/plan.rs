//! Cost of planning one EventTrigger as its report grows: the NetworkPolicy scenario
//! (`oneForEvent`, one instantiated ConfigMap per Service), against an in-memory world of one
//! cluster whose report collects N Services shaped like the agent sends them.
//!
//!   cargo bench -p sveltos-events-controller --bench plan
//!   PLAN_SIZES=100,1000 (the default) PLAN_ROUNDS=20
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark set-up

use std::sync::Arc;
use std::time::{Duration, Instant};

use api::v1beta1::{
    EventReport, EventTrigger, SveltosCluster, event_report_name, join_collected_resources,
};
use serde_json::{Value, json};
use sveltos_events_controller::engine::GoTemplates;
use sveltos_events_controller::event_data::{DocumentMemo, ReportEvents};
use sveltos_events_controller::fleet::Cluster;
use sveltos_events_controller::identity::ClusterRef;
use sveltos_events_controller::instantiate::{Lookup, Referenced};
use sveltos_events_controller::plan::{PlanMemo, World, plan};

struct Fleet {
    cluster: Cluster,
    template: Referenced,
    report: std::sync::Arc<EventReport>,
}

impl Lookup for Fleet {
    fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Referenced> {
        let t = &self.template;
        (t.kind == kind && t.namespace == namespace && t.name == name).then(|| t.clone())
    }
}

impl World for Fleet {
    fn clusters(&self) -> Arc<[Cluster]> {
        Arc::new([self.cluster.clone()])
    }
    fn event_source_labels(&self, _: &str) -> Option<std::collections::BTreeMap<String, String>> {
        Some(Default::default())
    }
    fn lookup_epoch(&self) -> u64 {
        0
    }
    fn cluster_set(&self, _: &str) -> Vec<ClusterRef> {
        Vec::new()
    }
    fn report(
        &self,
        _: &ClusterRef,
        _: &str,
        documents: &mut DocumentMemo,
    ) -> Result<Option<ReportEvents>, String> {
        ReportEvents::decode(&self.report, documents)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// A Service as a real API server returns it (defaults, managedFields and all).
fn service(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc-{i}"), "namespace": "default",
            "uid": format!("6d1f7c1e-0000-4000-8000-{i:012}"), "resourceVersion": format!("{}", 1000 + i),
            "creationTimestamp": "2026-11-23T00:00:00Z", "labels": {"sveltos": "fv"},
            "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubectl",
                "operation": "Apply", "time": "2026-11-23T00:00:00Z",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:sveltos": {}}},
                    "f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}}},
                        "f:selector": {"f:app": {}}}}}]},
        "spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
            "selector": {"app": format!("svc-{i}")}, "sessionAffinity": "None", "type": "ClusterIP"},
        "status": {"loadBalancer": {}}})
}

fn fleet(size: usize) -> (EventTrigger, Fleet) {
    let text = |path: &str| std::fs::read_to_string(path).unwrap();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/network-policy/");
    let trigger: EventTrigger = first_document(&text(&format!("{root}eventtrigger.yaml")));
    let template: Value = first_document(&text(&format!("{root}configmap.yaml")));
    let template = Referenced {
        kind: "ConfigMap".into(),
        namespace: "default".into(),
        name: "network-policy".into(),
        annotations: serde_json::from_value(template["metadata"]["annotations"].clone()).unwrap(),
        data: serde_json::from_value(template["data"].clone()).unwrap(),
        secret_type: None,
    };
    let cluster: SveltosCluster = serde_json::from_value(json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "metadata": {"name": "cluster-1", "namespace": "default", "labels": {"env": "fv"}},
        "spec": {}, "status": {"ready": true}
    }))
    .unwrap();
    let documents: Vec<Vec<u8>> = (0..size)
        .map(|i| serde_json::to_vec(&service(i)).unwrap())
        .collect();
    let matching: Vec<Value> = (0..size)
        .map(|i| json!({"apiVersion": "v1", "kind": "Service", "namespace": "default", "name": format!("svc-{i}")}))
        .collect();
    let report: EventReport = serde_json::from_value(json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventReport",
        "metadata": {"name": event_report_name("sveltos-service", "cluster-1", api::v1beta1::ClusterType::Sveltos),
            "namespace": "default"},
        "spec": {"clusterNamespace": "default", "clusterName": "cluster-1", "clusterType": "Sveltos",
            "eventSourceName": "sveltos-service", "matchingResources": matching}
    }))
    .unwrap();
    let mut report = report;
    report.spec.resources = Some(k8s_openapi::ByteString(join_collected_resources(
        documents.iter().map(Vec::as_slice),
    )));
    let fleet = Fleet {
        cluster: Cluster::from_sveltos(&cluster).unwrap(),
        template,
        report: std::sync::Arc::new(report),
    };
    (trigger, fleet)
}

/// The first YAML document of `text` as `T`.
fn first_document<T: serde::de::DeserializeOwned>(text: &str) -> T {
    let documents = api::load::documents(text).unwrap();
    serde_json::from_value(documents.into_iter().next().unwrap()).unwrap()
}

/// Median time of `rounds` runs of `f`.
fn median(rounds: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let rounds = env_list("PLAN_ROUNDS", &[20])[0].max(1);
    for size in env_list("PLAN_SIZES", &[100, 1000]) {
        let (trigger, world) = fleet(size);
        let render = GoTemplates::new();
        // Cold: every unit computed (first plan, or after a template change).
        let cold = median(rounds, || {
            let planned = plan(&trigger, &world, &render, &mut PlanMemo::default()).unwrap();
            assert_eq!(
                planned.desired.profiles.len(),
                size,
                "one profile per Service"
            );
        });
        // Warm: the report unchanged but for nothing, every unit taken from the last plan.
        let mut memo = PlanMemo::default();
        plan(&trigger, &world, &render, &mut memo).unwrap();
        let warm = median(rounds, || {
            let planned = plan(&trigger, &world, &render, &mut memo).unwrap();
            assert_eq!(planned.desired.profiles.len(), size);
        });
        for (what, took) in [("cold", cold), ("warm", warm)] {
            println!(
                "plan network-policy trigger, {size} events, {what}: median {:.2} ms per plan, {:.1} µs per event ({rounds} rounds)",
                took.as_secs_f64() * 1e3,
                took.as_secs_f64() * 1e6 / size as f64
            );
        }
    }
}
