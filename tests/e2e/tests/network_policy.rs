//! End to end on the sandbox, through the real binary and kubectl: the NetworkPolicy scenario
//! of the seed documents. A labelled Service in a managed cluster becomes an EventReport (agent),
//! then a ClusterProfile and an instantiated ConfigMap (manager); deleting the Service
//! withdraws them. `explain` and `trace` follow that chain both ways, and say where it breaks;
//! `show addons` lists what was deployed, `show usage` where a template reaches.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use sveltos_events_e2e as common;

use common::{apply_example, eventually, items, kubectl, plugin, start};
use serde_json::Value;
use std::path::Path;

const TRIGGER_LABEL: &str =
    "eventtrigger.lib.projectsveltos.io/eventtriggername=service-network-policy";

#[test]
fn a_labelled_service_becomes_a_cluster_profile_and_an_instantiated_network_policy() {
    let sandbox = start(1);
    let dir = sandbox.dir.clone();

    // The sandbox registered cluster-1 and the agent reached it.
    let ready = eventually("cluster-1 ready", || {
        let clusters = items(&dir, "mgmt", &["get", "sveltosclusters", "-A"]);
        clusters
            .iter()
            .find(|c| c["metadata"]["name"] == "cluster-1" && c["status"]["ready"] == true)
            .cloned()
    });
    assert_eq!(ready["metadata"]["labels"]["env"], "fv");

    apply_example(&dir, "mgmt", "network-policy", "");
    apply_example(&dir, "cluster-1", "network-policy", "managed/service.yaml");

    // The agent reports the Service in the management cluster.
    let report = eventually("EventReport", || {
        let reports = items(&dir, "mgmt", &["get", "eventreports", "-n", "default"]);
        reports
            .into_iter()
            .find(|r| r["metadata"]["name"] == "sveltos--sveltos-service--cluster-1")
    });
    assert_eq!(report["spec"]["matchingResources"][0]["name"], "my-service");
    assert_eq!(
        report["metadata"]["labels"]["projectsveltos.io/eventsource-name"],
        "sveltos-service"
    );

    // The manager generates one ClusterProfile and one instantiated ConfigMap.
    let profile = eventually("ClusterProfile", || {
        items(
            &dir,
            "mgmt",
            &["get", "clusterprofiles", "-l", TRIGGER_LABEL],
        )
        .pop()
    });
    let name = profile["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("sveltos-") && name.len() == 28, "{name}");
    let labels = &profile["metadata"]["labels"];
    assert_eq!(
        labels["eventtrigger.lib.projectsveltos.io/resourcename"],
        "my-service"
    );
    assert_eq!(
        labels["eventtrigger.lib.projectsveltos.io/clustername"],
        "cluster-1"
    );
    let policy_ref = &profile["spec"]["policyRefs"][0];
    assert_eq!(policy_ref["namespace"], "projectsveltos");
    let map = eventually("instantiated ConfigMap", || {
        items(
            &dir,
            "mgmt",
            &[
                "get",
                "configmaps",
                "-n",
                "projectsveltos",
                "-l",
                TRIGGER_LABEL,
            ],
        )
        .pop()
    });
    assert_eq!(map["metadata"]["name"], policy_ref["name"]);
    let policy = map["data"]["networkpolicy.yaml"].as_str().unwrap();
    assert!(policy.contains("name: front-my-service"), "{policy}");
    assert!(policy.contains("namespace: default"), "{policy}");
    assert!(policy.contains("app.kubernetes.io/name: MyApp"), "{policy}");
    assert!(policy.contains("- port: 80"), "{policy}");

    // The deployer puts the NetworkPolicy into cluster-1, with Sveltos' metadata.
    let policy = eventually("NetworkPolicy in cluster-1", || {
        items(
            &dir,
            "cluster-1",
            &["get", "networkpolicies", "-n", "default"],
        )
        .pop()
    });
    assert_eq!(policy["metadata"]["name"], "front-my-service");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "MyApp"
    );
    assert_eq!(policy["spec"]["ingress"][0]["ports"][0]["port"], 80);
    let annotations = &policy["metadata"]["annotations"];
    assert_eq!(
        annotations["projectsveltos.io/reference-namespace"],
        "projectsveltos"
    );
    assert_eq!(
        annotations["projectsveltos.io/reference-name"],
        policy_ref["name"]
    );
    assert_eq!(
        annotations["projectsveltos.io/owner-name"],
        profile["metadata"]["name"]
    );
    assert!(
        annotations["projectsveltos.io/hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let summaries = items(&dir, "mgmt", &["get", "clustersummaries", "-n", "default"]);
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    assert_eq!(
        summaries[0]["status"]["featureSummaries"][0]["status"],
        "Provisioned"
    );

    // The Service goes: so do the profile, the ConfigMap and the NetworkPolicy.
    kubectl(&dir, "cluster-1", &["delete", "service", "my-service"]);
    eventually("withdrawal", || {
        let profiles = items(
            &dir,
            "mgmt",
            &["get", "clusterprofiles", "-l", TRIGGER_LABEL],
        );
        let maps = items(
            &dir,
            "mgmt",
            &[
                "get",
                "configmaps",
                "-n",
                "projectsveltos",
                "-l",
                TRIGGER_LABEL,
            ],
        );
        let policies = items(&dir, "cluster-1", &["get", "networkpolicies", "-A"]);
        let summaries = items(&dir, "mgmt", &["get", "clustersummaries", "-A"]);
        (profiles.is_empty() && maps.is_empty() && policies.is_empty() && summaries.is_empty())
            .then_some(())
    });
}

/// The kinds and names of a chain, root first, depth first.
fn links(node: &Value, out: &mut Vec<String>) {
    out.push(format!(
        "{} {} {}",
        node["kind"].as_str().unwrap(),
        node["name"].as_str().unwrap(),
        node["health"].as_str().unwrap()
    ));
    for child in node["children"].as_array().into_iter().flatten() {
        links(child, out);
    }
}

#[test]
fn explain_and_trace_follow_the_chain_both_ways_and_say_where_it_breaks() {
    let sandbox = start(1);
    let dir = sandbox.dir.clone();
    apply_example(&dir, "mgmt", "network-policy", "");
    apply_example(&dir, "cluster-1", "network-policy", "managed/service.yaml");
    eventually("NetworkPolicy in cluster-1", || {
        items(
            &dir,
            "cluster-1",
            &["get", "networkpolicies", "-n", "default"],
        )
        .pop()
    });
    let cluster = [
        "-n",
        "default",
        "--cluster",
        "default/cluster-1",
        "-o",
        "json",
    ];
    let chain = |command: &str, target: &str| {
        let mut args = vec![command, target];
        args.extend(cluster);
        let run = plugin(&dir, &args);
        let mut found = Vec::new();
        links(&serde_json::from_str(&run.stdout).unwrap(), &mut found);
        (run.code, found)
    };

    // Upward from the add-on to the event, every link whole.
    let (code, up) = eventually("a whole chain upward", || {
        let (code, up) = chain("explain", "netpol/front-my-service");
        (code == 0).then_some((code, up))
    });
    assert_eq!(code, 0);
    let kinds: Vec<&str> = up.iter().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "NetworkPolicy",
            "ClusterSummary",
            "ClusterProfile",
            "ConfigMap",
            "EventTrigger",
            "EventReport",
            "EventSource",
            "Service"
        ],
        "{up:#?}"
    );
    assert!(
        up.last()
            .unwrap()
            .starts_with("Service default/my-service ok"),
        "{up:#?}"
    );

    // Downward from the event to the add-on.
    let (code, down) = chain("trace", "svc/my-service");
    assert_eq!(code, 0, "{down:#?}");
    assert!(
        down.first()
            .unwrap()
            .starts_with("Service default/my-service"),
        "{down:#?}"
    );
    assert!(
        down.last()
            .unwrap()
            .starts_with("NetworkPolicy default/front-my-service ok"),
        "{down:#?}"
    );

    // `-o dot` is a graph Graphviz draws: every link a node, every hop an edge.
    let dot = plugin(
        &dir,
        &[
            "trace",
            "svc/my-service",
            "-n",
            "default",
            "--cluster",
            "default/cluster-1",
            "-o",
            "dot",
        ],
    )
    .ok()
    .stdout;
    assert!(
        Path::new("/usr/bin/dot").exists(),
        "Graphviz's dot is missing: install Debian's graphviz (.ci/run does)"
    );
    let mut drawing = std::process::Command::new("dot")
        .arg("-Tjson")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut drawing.stdin.take().unwrap(), dot.as_bytes()).unwrap();
    let drawn = drawing.wait_with_output().unwrap();
    assert!(
        drawn.status.success(),
        "{dot}\n{}",
        String::from_utf8_lossy(&drawn.stderr)
    );
    let graph: Value = serde_json::from_slice(&drawn.stdout).unwrap();
    assert_eq!(
        graph["objects"].as_array().unwrap().len(),
        down.len(),
        "{dot}"
    );
    assert_eq!(
        graph["edges"].as_array().unwrap().len(),
        down.len() - 1,
        "{dot}"
    );

    // From the management cluster's side: an EventSource and an EventTrigger down to the
    // add-on, a report up to its resources; explain says to trace what has no cause upward.
    for (target, first) in [
        ("eventsource/sveltos-service", "EventSource sveltos-service"),
        (
            "eventtrigger/service-network-policy",
            "EventTrigger service-network-policy",
        ),
    ] {
        let run = plugin(&dir, &["trace", target, "-o", "json"]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let mut found = Vec::new();
        links(&serde_json::from_str(&run.stdout).unwrap(), &mut found);
        assert!(found[0].starts_with(first), "{found:#?}");
        assert!(
            found
                .last()
                .unwrap()
                .starts_with("NetworkPolicy default/front-my-service ok"),
            "{found:#?}"
        );
    }
    let report = plugin(
        &dir,
        &[
            "explain",
            "eventreport/sveltos--sveltos-service--cluster-1",
            "-n",
            "default",
        ],
    )
    .ok();
    assert!(
        report.stdout.contains("the event: still there"),
        "{}",
        report.stdout
    );
    plugin(&dir, &["explain", "eventtrigger/service-network-policy"])
        .fails_saying("`trace eventtrigger/service-network-policy` walks down");

    // `show addons`: the deployed NetworkPolicy, read live in its cluster, with its profile.
    let shown = plugin(&dir, &["show", "addons", "--cluster", "default/cluster-1"]).ok();
    let row = shown
        .stdout
        .lines()
        .find(|l| l.contains("front-my-service"))
        .unwrap_or_else(|| panic!("{}", shown.stdout));
    assert!(row.starts_with("default/cluster-1"), "{row}");
    assert!(row.contains("networking.k8s.io:NetworkPolicy"), "{row}");
    assert!(row.contains("ClusterProfile/sveltos-"), "{row}");
    let json = plugin(&dir, &["show", "addons", "-o", "json"]).ok();
    let rows: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows:#}");
    let none = plugin(&dir, &["show", "addons", "--profile", "no-such-profile"]).ok();
    assert_eq!(none.stdout.trim(), "No add-ons found.");

    // `show usage`: the trigger's template reaches cluster-1 through the generated profile.
    let usage = plugin(
        &dir,
        &["show", "usage", "configmap/network-policy", "-n", "default"],
    )
    .ok();
    let row = usage
        .stdout
        .lines()
        .find(|l| l.starts_with("default/cluster-1"))
        .unwrap_or_else(|| panic!("{}", usage.stdout));
    assert!(row.contains("EventTrigger service-network-policy"), "{row}");
    assert!(row.contains("Provisioned"), "{row}");
    let unused = plugin(&dir, &["show", "usage", "secret/nothing"]).ok();
    assert_eq!(unused.stdout.trim(), "Secret nothing affects no cluster.");

    // Why not: a Service no EventSource selects breaks the chain at once, in words.
    let plain = common::example("network-policy", "managed/service.yaml");
    let text = std::fs::read_to_string(plain)
        .unwrap()
        .replace("my-service", "plain")
        .replace("sveltos: fv", "other: x");
    let path = dir.join("plain.yaml");
    std::fs::write(&path, text).unwrap();
    kubectl(&dir, "cluster-1", &["apply", "-f", path.to_str().unwrap()]);
    let run = plugin(
        &dir,
        &[
            "trace",
            "service/plain",
            "-n",
            "default",
            "--cluster",
            "default/cluster-1",
            "-o",
            "wide",
        ],
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("no EventReport of cluster default/cluster-1 lists it"),
        "{}",
        run.stdout
    );
    // Each EventSource of that kind, evaluated now, says why it does not select it.
    assert!(
        run.stdout
            .lines()
            .any(|l| l.contains("EventSource sveltos-service")
                && l.contains("not selected: label filter sveltos Equal fv fails")),
        "{}",
        run.stdout
    );

    // An object Sveltos did not deploy is said to be one.
    let run = plugin(
        &dir,
        &[
            "explain",
            "service/plain",
            "-n",
            "default",
            "--cluster",
            "default/cluster-1",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("not deployed by Sveltos"),
        "{}",
        run.stdout
    );

    // Bad input: one sentence, exit 2.
    plugin(&dir, &["explain", "front-my-service"]).fails_saying("is not KIND/NAME");
    plugin(
        &dir,
        &["trace", "service/x", "--cluster", "default/nowhere"],
    )
    .fails_saying("no SveltosCluster or Cluster API Cluster default/nowhere is registered");
}
