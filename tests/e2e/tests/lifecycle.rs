//! The product's lifecycle with the real binaries as separate processes: `install` into the
//! sandbox's bare API servers, the two controller binaries started as the rendered
//! Deployments say (command, args, env), each signed in with its own ServiceAccount's token;
//! `check` before and after they run; `register cluster --service-account`; the
//! network-policy example through them; `uninstall` withdrawing the add-on before it removes
//! the controllers; `deregister` taking what `register` made; `uninstall --crds` leaving
//! nothing behind. In spoke mode, `register`
//! deploys the agent into the managed cluster and the example runs through that agent.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use sveltos_events_e2e as common;

use common::{Run, apply_example, eventually, items, kubectl, plugin, start_controller};
use serde_json::Value;
use std::path::Path;

/// Publishes the manager's conversion webhook as its Service's Endpoints, as the endpoints
/// controller would for a ready pod: the port the process bound, read from its log.
fn publish_webhook(dir: &Path) {
    let log = dir.join("mgmt-sveltos-events-manager.log");
    let port = eventually("the manager serving its webhook", || {
        let text = std::fs::read_to_string(&log).ok()?;
        let line = text
            .lines()
            .find(|l| l.contains("serving the conversion webhook"))?;
        let rest = &line[line.find("127.0.0.1:")? + "127.0.0.1:".len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u16>().ok()
    });
    let endpoints = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{{\"name\":\"sveltos-events-manager\",\
         \"namespace\":\"projectsveltos\"}},\"subsets\":[{{\"addresses\":[{{\"ip\":\"127.0.0.1\"}}],\
         \"ports\":[{{\"name\":\"webhook\",\"port\":{port}}}]}}]}}"
    );
    let path = dir.join("manager-endpoints.json");
    std::fs::write(&path, endpoints).unwrap();
    kubectl(dir, "mgmt", &["apply", "-f", path.to_str().unwrap()]);
}

/// Scales the manager Deployment (the sandbox completes the rollout at once).
fn scale_manager(dir: &Path, replicas: u32) {
    let replicas = format!("--replicas={replicas}");
    let args = [
        "-n",
        "projectsveltos",
        "scale",
        "deployment",
        "sveltos-events-manager",
    ];
    let mut args = args.to_vec();
    args.push(&replicas);
    kubectl(dir, "mgmt", &args);
}

fn check(dir: &Path) -> (Run, Value) {
    let run = plugin(dir, &["check", "-o", "json"]);
    let report = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    (run, report)
}

fn failing(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["status"] != "ok" && c["status"] != "warning")
        .map(|c| format!("{}: {}", c["name"], c["message"]))
        .collect()
}

#[test]
fn install_run_check_register_and_uninstall_with_the_real_binaries() {
    let sandbox = common::start_bare(1);
    let dir = &sandbox.dir;
    plugin(dir, &["check", "--pre"]).ok();
    common::install(dir, &[]);

    // Installed, but no process runs the manager: no leader, so check finds a problem.
    let (run, report) = check(dir);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        failing(&report).iter().any(|f| f.contains("leader")),
        "{report:#}"
    );

    // With a trigger and no manager available, uninstall stops and says what it would leave.
    scale_manager(dir, 0);
    apply_example(dir, "mgmt", "network-policy", "");
    plugin(dir, &["uninstall"]).fails_saying("the manager is not running");
    scale_manager(dir, 1);

    let manager = start_controller(dir, "mgmt", "sveltos-events-manager");
    publish_webhook(dir);
    let agent = start_controller(dir, "mgmt", "sveltos-events-agent");
    // The manager and the plugin (serving the sandbox) run without transparent huge pages.
    for (name, pid) in [("manager", manager.id()), ("sandbox", sandbox.id())] {
        eventually(&format!("the {name} without huge pages"), || {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            status
                .lines()
                .any(|line| line.split_whitespace().eq(["THP_enabled:", "0"]))
                .then_some(())
        });
    }
    // First registered by mistake with the management cluster's kubeconfig: the agent
    // connects there. Registering again with the right one moves it, though the old
    // connection never failed.
    common::register_cluster_1_as(dir, "mgmt", &["--labels", "env=fv"]).ok();
    eventually("cluster-1 connected (to the wrong cluster)", || {
        (common::sveltos_cluster_1(dir)["status"]["ready"] == true).then_some(())
    });
    common::register_cluster_1(dir, &["--service-account", "--labels", "env=fv"]).ok();
    let healthy = eventually("check to pass", || {
        let (run, report) = check(dir);
        (run.code == 0).then_some(report)
    });
    assert_eq!(healthy["healthy"], true);

    // A manager killed for lack of memory (the sandbox runs no pods: one stands in for it,
    // its status written as the kubelet would) is a warning that names the flag to raise.
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "sveltos-events-manager-x", "namespace": "projectsveltos",
        "labels": {"app.kubernetes.io/name": "sveltos-events-manager",
            "app.kubernetes.io/part-of": "sveltos-events"}},
        "spec": {"containers": [{"name": "manager", "image": "sveltos-events"}]}});
    let pod_file = dir.join("oom-pod.json");
    std::fs::write(&pod_file, pod.to_string()).unwrap();
    kubectl(dir, "mgmt", &["create", "-f", pod_file.to_str().unwrap()]);
    let oom = serde_json::json!({"status": {"containerStatuses": [{"name": "manager",
        "image": "sveltos-events", "imageID": "", "ready": true, "restartCount": 3,
        "state": {"running": {}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}});
    kubectl(
        dir,
        "mgmt",
        &[
            "-n",
            "projectsveltos",
            "patch",
            "pod",
            "sveltos-events-manager-x",
            "--subresource=status",
            "--type=merge",
            "-p",
            &oom.to_string(),
        ],
    );
    let (run, report) = check(dir);
    assert_eq!(run.code, 0, "a warning: {}{}", run.stdout, run.stderr);
    let memory = report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == "memory")
        .cloned()
        .unwrap_or_default();
    assert_eq!(memory["status"], "warning", "{report:#}");
    let message = memory["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("pod sveltos-events-manager-x (3 restarts)")
            && message.contains("--manager-memory"),
        "{message}"
    );
    kubectl(
        dir,
        "mgmt",
        &[
            "-n",
            "projectsveltos",
            "delete",
            "pod",
            "sveltos-events-manager-x",
        ],
    );

    // A v1alpha1 EventSource in its oldest form goes through the manager's HTTPS webhook
    // (the sandbox reaches it through the Service's Endpoints, as kube-apiserver would, and
    // without them refuses the write): stored as v1beta1, read back in either version.
    let seed = common::example("seeds", "001-06-eventsource-lua-labels.yaml");
    kubectl(dir, "mgmt", &["apply", "-f", &seed]);
    let v1beta1 = kubectl(
        dir,
        "mgmt",
        &[
            "get",
            "--raw",
            "/apis/lib.projectsveltos.io/v1beta1/eventsources/sveltos-service",
        ],
    );
    assert!(v1beta1.contains("\"resourceSelectors\""), "{v1beta1}");
    let v1alpha1 = kubectl(
        dir,
        "mgmt",
        &[
            "get",
            "--raw",
            "/apis/lib.projectsveltos.io/v1alpha1/eventsources/sveltos-service",
        ],
    );
    let v1alpha1: Value = serde_json::from_str(&v1alpha1).unwrap();
    assert_eq!(
        v1alpha1["apiVersion"], "lib.projectsveltos.io/v1alpha1",
        "{v1alpha1}"
    );
    assert!(
        v1alpha1["spec"]["resourceSelectors"].is_array(),
        "{v1alpha1}"
    );
    // So does a v1alpha1 EventTrigger: its selector strings become label selectors.
    let seed = common::example("seeds", "002-19-service-policy-eventtrigger.yaml");
    kubectl(dir, "mgmt", &["apply", "-f", &seed]);
    let trigger: Value = serde_json::from_str(&kubectl(
        dir,
        "mgmt",
        &[
            "get",
            "--raw",
            "/apis/lib.projectsveltos.io/v1beta1/eventtriggers/service-policy",
        ],
    ))
    .unwrap();
    let selector = &trigger["spec"]["sourceClusterSelector"]["matchLabels"]["env"];
    assert_eq!(selector, "production", "{trigger}");
    kubectl(dir, "mgmt", &["delete", "-f", &seed]);

    // The example's trigger in its oldest form, seed 004's v1alpha1 EventBasedAddOn (a kind
    // upstream dropped, with a string selector): the manager writes the EventTrigger it owns.
    kubectl(
        dir,
        "mgmt",
        &["delete", "eventtrigger", "service-network-policy"],
    );
    let seed = common::example(
        "seeds",
        "004-29-networkpolicy-eventbasedaddon-source-selector.yaml",
    );
    kubectl(dir, "mgmt", &["apply", "-f", &seed]);
    let trigger = eventually("the EventTrigger of the EventBasedAddOn", || {
        items(dir, "mgmt", &["get", "eventtriggers"])
            .into_iter()
            .find(|t| t["metadata"]["ownerReferences"][0]["kind"] == "EventBasedAddOn")
    });
    let selector = &trigger["spec"]["sourceClusterSelector"]["matchLabels"]["env"];
    assert_eq!(selector, "fv", "{trigger}");

    // The example through the processes: the Service becomes a NetworkPolicy in cluster-1.
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    eventually("the NetworkPolicy in cluster-1", || {
        let policies = items(dir, "cluster-1", &["get", "networkpolicies", "-A"]);
        (!policies.is_empty()).then_some(())
    });

    // The manifests granted every request the controllers made.
    for name in ["sveltos-events-manager", "sveltos-events-agent"] {
        let log = std::fs::read_to_string(dir.join(format!("mgmt-{name}.log"))).unwrap();
        assert!(!log.to_lowercase().contains("forbidden"), "{name}: {log}");
    }

    // Uninstall withdraws the add-on before it removes the controllers.
    let out = plugin(dir, &["uninstall", "--timeout", "60s"]).ok().stdout;
    let withdrawn = out
        .find("every EventTrigger and its add-ons withdrawn")
        .expect(&out);
    let removed = out
        .find("deployment.apps/sveltos-events-manager deleted")
        .expect(&out);
    assert!(withdrawn < removed, "{out}");
    assert!(items(dir, "cluster-1", &["get", "networkpolicies", "-A"]).is_empty());
    assert!(items(dir, "mgmt", &["get", "clusterprofiles"]).is_empty());
    assert!(items(dir, "mgmt", &["-n", "projectsveltos", "get", "deployments"]).is_empty());
    // The Deployments are gone, so are their pods.
    drop((manager, agent));
    // The clusters' last recorded status is not taken for a live one.
    let (_, report) = check(dir);
    assert!(
        failing(&report)
            .iter()
            .any(|f| f.contains("the agent is not running")),
        "{report:#}"
    );

    // Run again, it finds nothing left to withdraw; --crds takes the rest.
    let again = plugin(dir, &["uninstall"]).ok().stdout;
    assert!(again.contains("no EventTriggers to withdraw"), "{again}");
    // Deregistering takes what register made: the SveltosCluster and its kubeconfig Secret in
    // the management cluster, the account and its rights in cluster-1 (its namespace,
    // Sveltos' own, stays: other things may live there).
    let secret = common::sveltos_cluster_1(dir)["spec"]["kubeconfigName"]
        .as_str()
        .filter(|name| !name.is_empty())
        // Sveltos' name for a registration's kubeconfig Secret when the spec names none.
        .map_or("cluster-1-sveltos-kubeconfig".to_owned(), str::to_owned);
    let secrets = kubectl(
        dir,
        "mgmt",
        &["get", "secrets", "-n", "default", "-o", "name"],
    );
    assert!(secrets.contains(&secret), "{secret} not in {secrets}");
    common::deregister_cluster_1(dir).ok();
    assert!(items(dir, "mgmt", &["get", "sveltosclusters", "-A"]).is_empty());
    let secrets = kubectl(
        dir,
        "mgmt",
        &["get", "secrets", "-n", "default", "-o", "name"],
    );
    assert!(!secrets.contains(&secret), "{secrets}");
    let (key, value) = ("app.kubernetes.io/part-of", "sveltos-events");
    let left = kubectl(
        dir,
        "cluster-1",
        &[
            "get",
            "clusterrolebindings,serviceaccounts,secrets",
            "-A",
            "-l",
            &format!("{key}={value}"),
            "-o",
            "name",
        ],
    );
    assert!(left.trim().is_empty(), "{left}");
    plugin(dir, &["uninstall", "--crds"]).fails_saying("confirm with --yes");
    plugin(dir, &["uninstall", "--crds", "--yes"]).ok();
    let crds = kubectl(dir, "mgmt", &["get", "crd", "-o", "name"]);
    assert!(!crds.contains("projectsveltos.io"), "{crds}");
    let labelled = kubectl(
        dir,
        "mgmt",
        &[
            "get",
            "clusterroles,clusterrolebindings,namespaces",
            "-l",
            &format!("{key}={value}"),
            "-o",
            "name",
        ],
    );
    assert!(labelled.trim().is_empty(), "{labelled}");
}

#[test]
fn a_spoke_cluster_gets_its_own_agent_and_the_example_runs_through_it() {
    let sandbox = common::start_bare(1);
    let dir = &sandbox.dir;
    common::install(dir, &["--agent-mode", "spoke"]);
    let _manager = start_controller(dir, "mgmt", "sveltos-events-manager");
    let _hub = start_controller(dir, "mgmt", "sveltos-events-agent");
    let registered = common::register_cluster_1(dir, &["--labels", "env=fv"]).ok();
    assert!(
        registered
            .stdout
            .contains("spoke agent sveltos-events:test deployed"),
        "{}",
        registered.stdout
    );
    let cluster = common::sveltos_cluster_1(dir);
    assert_eq!(
        cluster["metadata"]["annotations"]["sveltos-events.io/agent-mode"],
        "spoke"
    );

    // The agent runs in cluster-1, as the Deployment register put there says.
    let _spoke = start_controller(dir, "cluster-1", "sveltos-events-agent");
    apply_example(dir, "mgmt", "network-policy", "");
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    eventually("the spoke's own EventReport", || {
        let reports = items(
            dir,
            "cluster-1",
            &["-n", "projectsveltos", "get", "eventreports"],
        );
        (!reports.is_empty()).then_some(())
    });
    eventually("the NetworkPolicy in cluster-1", || {
        let policies = items(dir, "cluster-1", &["get", "networkpolicies", "-A"]);
        (!policies.is_empty()).then_some(())
    });

    let gone = common::deregister_cluster_1(dir).ok();
    assert!(
        gone.stdout
            .contains("deployment.apps/sveltos-events-agent deleted"),
        "{}",
        gone.stdout
    );
    assert!(
        items(
            dir,
            "cluster-1",
            &["-n", "projectsveltos", "get", "deployments"]
        )
        .is_empty()
    );
}
