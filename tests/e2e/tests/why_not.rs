//! Why not: when the chain from an event to its add-on breaks, `trace` names the broken link
//! and says why in one sentence (exit 1), from what the controllers recorded (conditions,
//! statuses) and from the live objects. One test per reason; a selector that does not match
//! (and which field) is in network_policy.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use std::path::Path;

use sveltos_events_e2e as common;

use common::{apply_example, eventually, items, kubectl, plugin, start};

/// Applies `yaml` in `cluster`.
fn apply(dir: &Path, cluster: &str, name: &str, yaml: &str) {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, yaml).unwrap();
    kubectl(dir, cluster, &["apply", "-f", path.to_str().unwrap()]);
}

/// The network-policy example with its trigger's YAML changed by `edit`.
fn example_with_trigger(dir: &Path, edit: impl Fn(String) -> String) {
    for file in ["eventsource.yaml", "configmap.yaml"] {
        apply_example(dir, "mgmt", "network-policy", file);
    }
    let trigger =
        std::fs::read_to_string(common::example("network-policy", "eventtrigger.yaml")).unwrap();
    apply(dir, "mgmt", "trigger", &edit(trigger));
}

/// `trace` of the example's Service in cluster-1, once its output contains `wanted`: the
/// exit code and the output.
fn trace_until(dir: &Path, target: &str, wanted: &str) -> (i32, String) {
    eventually(&format!("trace saying {wanted:?}"), || {
        let run = plugin(
            dir,
            &[
                "trace",
                target,
                "-n",
                "default",
                "--cluster",
                "default/cluster-1",
                "-o",
                "wide",
            ],
        );
        run.stdout
            .contains(wanted)
            .then_some((run.code, run.stdout))
    })
}

/// `trace` of the example's Service, once it says `wanted`, exits 1 with a line naming `link`
/// and saying `why`.
fn broken_link_says(dir: &Path, wanted: &str, link: &str, why: &str) {
    let (code, out) = trace_until(dir, "svc/my-service", wanted);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.lines().any(|l| l.contains(link) && l.contains(why)),
        "{out}"
    );
}

#[test]
fn the_script_says_no_with_its_own_message() {
    let sandbox = start(1);
    let dir = &sandbox.dir;
    apply(
        dir,
        "mgmt",
        "https",
        r#"apiVersion: lib.projectsveltos.io/v1beta1
kind: EventSource
metadata:
  name: https-only
spec:
  resourceSelectors:
  - group: ""
    version: v1
    kind: Service
    evaluate: |
      function evaluate()
        local hs = {matching = false, message = "serves no port 443"}
        for _, p in ipairs(obj.spec.ports or {}) do
          if p.port == 443 then hs.matching = true; hs.message = "" end
        end
        return hs
      end
"#,
    );
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    broken_link_says(
        dir,
        "https-only",
        "EventSource https-only",
        "its script says no: serves no port 443",
    );
}

#[test]
fn a_cluster_no_trigger_watches_is_named_with_the_label_that_differs() {
    let sandbox = start(1);
    let dir = &sandbox.dir;
    example_with_trigger(dir, |t| t.replace("env: fv", "env: prod"));
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    let (code, out) = trace_until(dir, "svc/my-service", "EventSource sveltos-service");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "matches it now, but the agent is not asked to evaluate it in cluster \
             default/cluster-1: EventTrigger service-network-policy: cluster default/cluster-1 \
             does not match its sourceClusterSelector: env=prod is wanted; its label env is \
             \"fv\""
        ),
        "{out}"
    );
    // The trigger says it too, in its Ready condition.
    let trigger = kubectl(
        dir,
        "mgmt",
        &[
            "get",
            "eventtrigger",
            "service-network-policy",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}",
        ],
    );
    assert_eq!(
        trigger,
        "no ready cluster of the 1 registered matches sourceClusterSelector env=prod"
    );
}

#[test]
fn a_manager_failure_is_read_from_the_trigger_and_published_as_an_event() {
    let sandbox = start(1);
    let dir = &sandbox.dir;
    example_with_trigger(dir, |t| t.replace("name: network-policy", "name: absent"));
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    let (code, out) = trace_until(dir, "svc/my-service", "generated no ClusterProfile");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "generated no ClusterProfile for it: cluster default/cluster-1: referenced \
             ConfigMap default/absent does not exist"
        ),
        "{out}"
    );
    // `kubectl get events` shows the manager's Warning on the trigger.
    let events = eventually("the Warning Event", || {
        let events = kubectl(dir, "mgmt", &["get", "events", "-A"]);
        events.contains("GenerationFailed").then_some(events)
    });
    assert!(
        events.contains("eventtrigger/service-network-policy"),
        "{events}"
    );
}

#[test]
fn an_add_on_another_profile_holds_names_that_profile() {
    let sandbox = start(1);
    let dir = &sandbox.dir;
    // A hand-written profile at a stronger tier already deploys front-my-service.
    apply(
        dir,
        "mgmt",
        "holder",
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  namespace: default
data:
  np.yaml: |
    kind: NetworkPolicy
    apiVersion: networking.k8s.io/v1
    metadata:
      name: front-my-service
      namespace: default
    spec:
      podSelector: {}
---
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata:
  name: holder
spec:
  tier: 50
  clusterSelector:
    matchLabels:
      env: fv
  policyRefs:
  - kind: ConfigMap
    namespace: default
    name: held
"#,
    );
    eventually("the held NetworkPolicy", || {
        items(
            dir,
            "cluster-1",
            &["get", "networkpolicies", "-n", "default"],
        )
        .pop()
    });
    apply_example(dir, "mgmt", "network-policy", "");
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    broken_link_says(
        dir,
        "already deployed by",
        "ClusterSummary",
        "already deployed by ClusterProfile holder (tier 50)",
    );
}

#[test]
fn a_paused_cluster_is_said() {
    let sandbox = start(1);
    let dir = &sandbox.dir;
    apply_example(dir, "mgmt", "network-policy", "");
    kubectl(
        dir,
        "mgmt",
        &[
            "-n",
            "default",
            "patch",
            "sveltoscluster",
            "cluster-1",
            "--type=merge",
            "-p",
            r#"{"spec":{"paused":true}}"#,
        ],
    );
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    let (code, out) = trace_until(dir, "svc/my-service", "is paused");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "matches it now, but cluster default/cluster-1 is paused: nothing is evaluated or \
             deployed there until it resumes"
        ),
        "{out}"
    );
    // The trigger says so in Sveltos' words.
    let ready = kubectl(
        dir,
        "mgmt",
        &[
            "get",
            "eventtrigger",
            "service-network-policy",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}",
        ],
    );
    assert_eq!(ready, "ClusterPaused");
}

#[test]
fn a_dry_run_profile_deploys_nothing_and_says_so() {
    let sandbox = start(1);
    let dir = &sandbox.dir;
    example_with_trigger(dir, |t| format!("{}\n  syncMode: DryRun\n", t.trim_end()));
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    let (code, out) = trace_until(dir, "svc/my-service", "in DryRun");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("in DryRun: the deployer changes nothing"),
        "{out}"
    );
    assert!(items(dir, "cluster-1", &["get", "networkpolicies", "-A"]).is_empty());
}

#[test]
fn a_paused_profile_is_said() {
    let sandbox = start(1);
    let dir = &sandbox.dir;
    apply_example(dir, "mgmt", "network-policy", "");
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    let profile = eventually("the generated profile", || {
        let profiles = common::profiles_of(dir, "service-network-policy");
        profiles.first()?["metadata"]["name"]
            .as_str()
            .map(str::to_owned)
    });
    kubectl(
        dir,
        "mgmt",
        &[
            "annotate",
            "clusterprofile",
            &profile,
            "profile.projectsveltos.io/paused=true",
        ],
    );
    broken_link_says(
        dir,
        "paused (profile.projectsveltos.io/paused)",
        &format!("ClusterProfile {profile}"),
        "the deployer changes nothing for it until the annotation is removed",
    );
}

#[test]
fn an_event_source_the_manager_has_not_handed_to_the_agent_is_said() {
    // The API servers with Sveltos installed and cluster-1 registered, but no controller
    // running: the trigger selects the cluster, and nobody tells its agent.
    let sandbox = common::start_bare(1);
    let dir = &sandbox.dir;
    plugin(dir, &["install", "--wait=false"]).ok();
    common::register_cluster_1(dir, &["--labels", "env=fv"]).ok();
    apply_example(dir, "mgmt", "network-policy", "");
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    broken_link_says(
        dir,
        "not asked to evaluate",
        "EventSource sveltos-service",
        "the agent is not asked to evaluate it in cluster default/cluster-1: EventTrigger \
         service-network-policy: the manager has not told the agent yet",
    );
}

#[test]
fn a_deployer_failure_is_read_from_the_summary() {
    let sandbox = start(1);
    let dir = &sandbox.dir;
    // The policy is a kind the managed cluster does not serve.
    let template = std::fs::read_to_string(common::example("network-policy", "configmap.yaml"))
        .unwrap()
        .replace(
            "apiVersion: networking.k8s.io/v1",
            "apiVersion: example.com/v1",
        );
    apply(dir, "mgmt", "template", &template);
    for file in ["eventsource.yaml", "eventtrigger.yaml"] {
        apply_example(dir, "mgmt", "network-policy", file);
    }
    apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    broken_link_says(
        dir,
        "Resources Failed",
        "ClusterSummary default/sveltos-",
        "the cluster does not serve example.com/v1 NetworkPolicy: it has no API example.com/v1 \
         (is its CustomResourceDefinition installed?)",
    );
}
