//! `render` equals live: for every example, what `kubectl sveltos-events render` prints from the
//! example's files (the management side), the live SveltosCluster and the live resources of
//! the source cluster is what the manager running in the sandbox wrote: the same
//! ClusterProfiles (name, labels, spec) and generated ConfigMaps and Secrets (name, labels,
//! data).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sveltos_events_e2e as common;

use common::{TIMEOUT, apply_example, example, kubectl, plugin, start};

/// The label the manager puts on what it generates for a source cluster.
const CLUSTER_LABEL: &str = "eventtrigger.lib.projectsveltos.io/clustername";

/// One example run live, then rendered.
struct Case {
    scenario: &'static str,
    clusters: usize,
    /// The cluster the example's `managed/` files go to.
    source: &'static str,
    /// Those files.
    managed: &'static [&'static str],
}

/// The example's top-level files: what goes to the management cluster.
fn management_files(scenario: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(example(scenario, ""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// What render compares of an object: kind, name, labels, and its spec or data.
fn essence(object: &Value) -> Value {
    let kind = object["kind"].as_str().unwrap_or_default();
    let content = match kind {
        "ClusterProfile" => object["spec"].clone(),
        "Secret" => json!({"type": object["type"], "data": object["data"]}),
        _ => object["data"].clone(),
    };
    json!({
        "kind": kind,
        "name": object["metadata"]["name"],
        "labels": object["metadata"]["labels"],
        "content": content,
    })
}

/// The manager's output for `source`, live, by kind and name.
fn live(dir: &Path, source: &str) -> BTreeMap<String, Value> {
    let selector = format!("{CLUSTER_LABEL}={source}");
    let mut objects = common::items(dir, "mgmt", &["get", "clusterprofiles", "-l", &selector]);
    for (kind, list) in [("ConfigMap", "configmaps"), ("Secret", "secrets")] {
        for mut object in common::items(
            dir,
            "mgmt",
            &["get", list, "-n", "projectsveltos", "-l", &selector],
        ) {
            object["kind"] = json!(kind);
            objects.push(object);
        }
    }
    keyed(&objects)
}

fn keyed(objects: &[Value]) -> BTreeMap<String, Value> {
    objects
        .iter()
        .map(essence)
        .map(|e| (format!("{}/{}", e["kind"], e["name"]), e))
        .collect()
}

/// What render prints for `case`, from the live cluster and resources, by kind and name.
fn rendered(dir: &Path, case: &Case) -> BTreeMap<String, Value> {
    let cluster = kubectl(
        dir,
        "mgmt",
        &[
            "get",
            "sveltoscluster",
            "-n",
            "default",
            case.source,
            "-o",
            "json",
        ],
    );
    let cluster_file = dir.join("render-cluster.json");
    std::fs::write(&cluster_file, cluster).unwrap();
    let resources_file = dir.join("render-resources.json");
    let mut resources = Vec::new();
    for file in case.managed {
        let path = example(case.scenario, &format!("managed/{file}"));
        resources.push(kubectl(
            dir,
            case.source,
            &["get", "-f", &path, "-o", "json"],
        ));
    }
    std::fs::write(&resources_file, resources.join("\n---\n")).unwrap();
    let mut args = vec!["render".to_owned()];
    for file in management_files(case.scenario)
        .into_iter()
        .chain([cluster_file, resources_file])
    {
        args.extend(["-f".to_owned(), file.display().to_string()]);
    }
    args.extend(["-o", "json"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = plugin(dir, &args).ok();
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    keyed(list["items"].as_array().unwrap())
}

fn render_equals_live(case: Case) {
    let sandbox = start(case.clusters);
    let dir = &sandbox.dir;
    apply_example(dir, "mgmt", case.scenario, "");
    for file in case.managed {
        apply_example(dir, case.source, case.scenario, &format!("managed/{file}"));
    }
    if case.scenario == "cross-cluster" {
        // Not an event until the load balancer has an address (as the example's README says).
        common::give_load_balancer_an_address(dir, case.source);
    }
    // The live side converges; render is a function of what it reads. Compare until they
    // agree, and show the last difference if they never do.
    let start = Instant::now();
    loop {
        let live = live(dir, case.source);
        let rendered = rendered(dir, &case);
        if !live.is_empty() && live == rendered {
            return;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "{}: render never equalled live.\nlive: {}\nrendered: {}",
            case.scenario,
            serde_json::to_string_pretty(&live).unwrap(),
            serde_json::to_string_pretty(&rendered).unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn network_policy() {
    render_equals_live(Case {
        scenario: "network-policy",
        clusters: 1,
        source: "cluster-1",
        managed: &["service.yaml"],
    });
}

#[test]
fn ingress() {
    render_equals_live(Case {
        scenario: "ingress",
        clusters: 1,
        source: "cluster-1",
        managed: &["services.yaml"],
    });
}

#[test]
fn cross_cluster() {
    render_equals_live(Case {
        scenario: "cross-cluster",
        clusters: 2,
        source: "cluster-2",
        managed: &["service.yaml"],
    });
}

#[test]
fn http_route_from_a_v1alpha1_event_based_add_on() {
    render_equals_live(Case {
        scenario: "http-route",
        clusters: 1,
        source: "cluster-1",
        managed: &["services.yaml"],
    });
}

#[test]
fn kubeconfig_secret() {
    render_equals_live(Case {
        scenario: "kubeconfig-secret",
        clusters: 2,
        source: "cluster-1",
        managed: &["token-secret.yaml"],
    });
}
