//! Every example, run live in the sandbox, then checked two ways.
//!
//! `render` equals live: for every example, what `kubectl sveltos-events render --addons`
//! prints from the example's files (the management side), the live SveltosClusters (and
//! ClusterSet) and the live resources of the source cluster is what the controllers running in
//! the sandbox wrote: the same ClusterProfiles (name, labels, spec) and generated ConfigMaps and
//! Secrets (name, labels, data), and the same add-ons in the same clusters (every one the
//! deployer applied, each holding what render printed: the API server only adds defaults).
//!
//! `explain` and `trace` print what the golden files in `tests/e2e/golden/` hold: the example's
//! add-on explained up to its event, and the event's resource traced down to its add-ons, with
//! ages and generated names normalised. `SVELTOS_EVENTS_UPDATE_GOLDEN=1` rewrites them (read
//! the diff before committing it).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sveltos_events_e2e as common;

use common::{TIMEOUT, apply_example, example, kubectl, plugin, start};

/// The label the manager puts on what it generates for a source cluster.
const CLUSTER_LABEL: &str = "eventtrigger.lib.projectsveltos.io/clustername";

/// The label the deployer puts on what it applies.
const REASON_LABEL: &str = "projectsveltos.io/reason=Resources";

/// One example run live, then rendered.
struct Case {
    scenario: &'static str,
    /// The management side's files (`scenario/file`), when not the scenario's top-level ones.
    management: &'static [&'static str],
    clusters: usize,
    /// The cluster the example's `managed/` files go to.
    source: &'static str,
    /// Those files.
    managed: &'static [&'static str],
    /// What `explain` starts from: `KIND/NAME`, namespace, cluster (the add-on).
    explain: [&'static str; 3],
    /// What `trace` starts from (the event's resource, in the source cluster).
    trace: [&'static str; 3],
}

/// The example's management side: its top-level files, or those the case names.
fn management_files(case: &Case) -> Vec<PathBuf> {
    if !case.management.is_empty() {
        return case
            .management
            .iter()
            .map(|file| common::repo_root().join("examples").join(file))
            .collect();
    }
    let scenario = case.scenario;
    let mut files: Vec<PathBuf> = std::fs::read_dir(example(scenario, ""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// What render compares of an object: kind, name, labels, and its spec or data; of an add-on
/// also its namespace, annotations and everything else it holds, keyed by its ClusterSummary
/// (which names the destination cluster).
fn essence(object: &Value) -> (String, Value) {
    let kind = object["kind"].as_str().unwrap_or_default();
    let metadata = &object["metadata"];
    if is_addon(object) {
        let mut content = object.clone();
        for field in ["apiVersion", "kind", "metadata", "status"] {
            content.as_object_mut().unwrap().remove(field);
        }
        let summary = &metadata["annotations"]["projectsveltos.io/clustersummary"];
        let key = format!(
            "{}: {kind} {}/{}",
            summary.as_str().unwrap(),
            metadata["namespace"].as_str().unwrap_or_default(),
            metadata["name"].as_str().unwrap()
        );
        let essence = json!({
            "labels": metadata["labels"],
            "annotations": metadata["annotations"],
            "content": content,
        });
        return (key, essence);
    }
    let content = match kind {
        "ClusterProfile" => object["spec"].clone(),
        "Secret" => json!({"type": object["type"], "data": object["data"]}),
        _ => object["data"].clone(),
    };
    let key = format!("{kind}/{}", metadata["name"].as_str().unwrap());
    (
        key,
        json!({"labels": metadata["labels"], "content": content}),
    )
}

fn is_addon(object: &Value) -> bool {
    object["metadata"]["labels"]["projectsveltos.io/reason"] == "Resources"
}

/// Whether `part` is within `whole`: every field of an object (recursively), every item of an
/// array of the same length, every other value equal. What the API server adds (defaults,
/// server-side fields) is in `whole` only.
fn within(part: &Value, whole: &Value) -> bool {
    match (part, whole) {
        (Value::Object(part), Value::Object(whole)) => part
            .iter()
            .all(|(key, value)| whole.get(key).is_some_and(|w| within(value, w))),
        (Value::Array(part), Value::Array(whole)) => {
            part.len() == whole.len() && part.iter().zip(whole).all(|(p, w)| within(p, w))
        }
        _ => part == whole,
    }
}

/// The controllers' output for `source`, live, by key: the manager's objects, and every
/// add-on the deployer applied in any cluster.
fn live(dir: &Path, case: &Case) -> BTreeMap<String, Value> {
    let selector = format!("{CLUSTER_LABEL}={}", case.source);
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
    // Every kind the deployer recorded in a ClusterSummary, in the cluster it names.
    for summary in common::items(dir, "mgmt", &["get", "clustersummaries", "-A"]) {
        let cluster = summary["spec"]["clusterName"].as_str().unwrap().to_owned();
        let kinds = summary["status"]["deployedGVKs"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|d| {
                d["deployedGroupVersionKind"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            });
        for kind in kinds {
            let kind = kind
                .as_str()
                .unwrap()
                .split('.')
                .next()
                .unwrap()
                .to_lowercase();
            objects.extend(common::items(
                dir,
                &cluster,
                &["get", &kind, "-A", "-l", REASON_LABEL],
            ));
        }
    }
    objects.iter().map(essence).collect()
}

/// What render prints for `case`, from the live clusters and resources, by key.
fn rendered(dir: &Path, case: &Case) -> BTreeMap<String, Value> {
    let clusters = kubectl(
        dir,
        "mgmt",
        &["get", "sveltosclusters", "-n", "default", "-o", "json"],
    );
    let cluster_file = dir.join("render-clusters.json");
    std::fs::write(&cluster_file, clusters).unwrap();
    let mut files = management_files(case);
    files.push(cluster_file);
    if !case.management.is_empty() {
        // The live ClusterSet: its status holds the selection render keeps.
        let sets = kubectl(dir, "mgmt", &["get", "clustersets", "-o", "json"]);
        let sets_file = dir.join("render-sets.json");
        std::fs::write(&sets_file, sets).unwrap();
        files.push(sets_file);
    }
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
    files.push(resources_file);
    let source = format!("default/{}", case.source);
    let mut args = vec!["render", "--addons", "--cluster", &source, "-o", "json"];
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    for file in &files {
        args.extend(["-f", file]);
    }
    let run = plugin(dir, &args).ok();
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(essence)
        .collect()
}

/// Whether render equals live: the same keys, each rendered object within the live one.
fn agree(live: &BTreeMap<String, Value>, rendered: &BTreeMap<String, Value>) -> bool {
    live.keys().eq(rendered.keys())
        && rendered
            .iter()
            .all(|(key, object)| within(object, &live[key]))
}

fn example_checks(case: Case) {
    let sandbox = start(case.clusters);
    let dir = &sandbox.dir;
    if case.management.is_empty() {
        apply_example(dir, "mgmt", case.scenario, "");
    } else {
        // Both clusters ready first, so the set's first pick is the first of its pool.
        common::eventually("the clusters ready", || {
            let clusters = common::items(dir, "mgmt", &["get", "sveltosclusters", "-A"]);
            (clusters.len() == case.clusters
                && clusters.iter().all(|c| c["status"]["ready"] == true))
            .then_some(())
        });
        for file in case.management {
            let path = common::repo_root().join("examples").join(file);
            kubectl(dir, "mgmt", &["apply", "-f", path.to_str().unwrap()]);
        }
    }
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
        let live = live(dir, &case);
        let rendered = rendered(dir, &case);
        if live.keys().any(|k| k.contains(": ")) && agree(&live, &rendered) {
            break;
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
    golden(dir, &case);
}

/// `explain` and `trace` of the case, once the chain is whole, against the golden file.
fn golden(dir: &Path, case: &Case) {
    let transcript = common::eventually("explain and trace of a whole chain", || {
        let mut transcript = String::new();
        for (command, [target, namespace, cluster]) in
            [("explain", case.explain), ("trace", case.trace)]
        {
            let cluster = format!("default/{cluster}");
            let args = [
                command,
                target,
                "-n",
                namespace,
                "--cluster",
                &cluster,
                "-o",
                "wide",
            ];
            let run = plugin(dir, &args);
            if run.code != 0 {
                return None;
            }
            transcript.push_str(&format!(
                "$ kubectl sveltos-events {}\n{}\n",
                args.join(" "),
                normalise(&run.stdout)
            ));
        }
        Some(transcript)
    });
    let name = case.name();
    let file = common::repo_root().join(format!("tests/e2e/golden/{name}.txt"));
    if std::env::var_os("SVELTOS_EVENTS_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &transcript).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; SVELTOS_EVENTS_UPDATE_GOLDEN=1 writes it",
            file.display()
        )
    });
    assert_eq!(
        transcript,
        expected,
        "{name}: explain/trace differ from {} (SVELTOS_EVENTS_UPDATE_GOLDEN=1 rewrites it)",
        file.display()
    );
}

/// The table with what changes from run to run made stable: each generated name
/// (`sveltos-` and 20 characters) numbered by first appearance, ages as `<age>`, and the
/// columns' padding (which follows those widths) as two spaces; the tree's indentation kept.
fn normalise(table: &str) -> String {
    let generated = regex::Regex::new(r"sveltos-[a-z0-9]{20}").unwrap();
    let age = regex::Regex::new(r"  (\d+[smhd])+  ").unwrap();
    let padding = regex::Regex::new(r" {2,}").unwrap();
    let mut names: Vec<String> = Vec::new();
    let mut out = String::new();
    for line in table.lines() {
        let line = generated.replace_all(line, |found: &regex::Captures| {
            let name = found[0].to_owned();
            let index = names.iter().position(|n| *n == name).unwrap_or_else(|| {
                names.push(name);
                names.len() - 1
            });
            format!("sveltos-<generated-{}>", index + 1)
        });
        let line = age.replace(&line, "  <age>  ");
        // The tree's indentation stays; the padding between columns shrinks.
        let rest = line.trim_start_matches([' ', '│', '├', '└', '─']);
        let indent = &line[..line.len() - rest.len()];
        out.push_str(indent);
        out.push_str(padding.replace_all(rest.trim_end(), "  ").as_ref());
        out.push('\n');
    }
    out
}

impl Case {
    /// The golden file's name: the scenario, or the ClusterSet example for its case.
    fn name(&self) -> &'static str {
        if self.management.is_empty() {
            self.scenario
        } else {
            "cluster-set"
        }
    }
}

#[test]
fn network_policy() {
    example_checks(Case {
        scenario: "network-policy",
        management: &[],
        clusters: 1,
        source: "cluster-1",
        managed: &["service.yaml"],
        explain: ["netpol/front-my-service", "default", "cluster-1"],
        trace: ["svc/my-service", "default", "cluster-1"],
    });
}

#[test]
fn ingress() {
    example_checks(Case {
        scenario: "ingress",
        management: &[],
        clusters: 1,
        source: "cluster-1",
        managed: &["services.yaml"],
        explain: ["ingress/ingress", "default", "cluster-1"],
        trace: ["svc/my-service", "eng", "cluster-1"],
    });
}

#[test]
fn cross_cluster() {
    example_checks(Case {
        scenario: "cross-cluster",
        management: &[],
        clusters: 2,
        source: "cluster-2",
        managed: &["service.yaml"],
        explain: ["svc/external-my-lb-service", "external", "cluster-1"],
        trace: ["svc/my-lb-service", "test", "cluster-2"],
    });
}

#[test]
fn http_route_from_a_v1alpha1_event_based_add_on() {
    example_checks(Case {
        scenario: "http-route",
        management: &[],
        clusters: 1,
        source: "cluster-1",
        managed: &["gateway-api-crd.yaml", "services.yaml"],
        explain: ["httproute/web", "eng", "cluster-1"],
        trace: ["svc/web", "eng", "cluster-1"],
    });
}

#[test]
fn kubeconfig_secret() {
    example_checks(Case {
        scenario: "kubeconfig-secret",
        management: &[],
        clusters: 2,
        source: "cluster-1",
        managed: &["token-secret.yaml"],
        explain: [
            "secret/remote-cluster-secret-name",
            "calico-system",
            "cluster-2",
        ],
        trace: [
            "secret/tigera-federation-remote-cluster",
            "kube-system",
            "cluster-1",
        ],
    });
}

#[test]
fn cluster_set() {
    example_checks(Case {
        scenario: "network-policy",
        management: &[
            "network-policy/eventsource.yaml",
            "network-policy/configmap.yaml",
            "cluster-set/clusterset.yaml",
            "cluster-set/eventtrigger.yaml",
        ],
        clusters: 2,
        source: "cluster-1",
        managed: &["service.yaml"],
        explain: ["netpol/front-my-service", "default", "cluster-1"],
        trace: ["svc/my-service", "default", "cluster-1"],
    });
}
