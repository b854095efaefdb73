//! Verdicts are reused for unchanged objects (same uid and resourceVersion) and recomputed
//! for changed ones; what can be checked without objects is checked before any cluster runs it;
//! objects being deleted are skipped live and evaluated in fixtures.
#![allow(clippy::unwrap_used)] // test set-up

use api::v1beta1::EventSource;
use serde_json::{Value, json};
use sveltos_events_agent::evaluate::{VerdictCache, evaluate_event_source_cached, validate};
use sveltos_events_agent::{Limits, LuaRuntime};

fn source() -> EventSource {
    serde_json::from_value(json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
        "metadata": {"name": "ports"},
        "spec": {"resourceSelectors": [{
            "group": "", "version": "v1", "kind": "Service",
            "evaluate": "function evaluate() local hs = {} hs.matching = obj.spec.port == 443 return hs end"
        }]}
    }))
    .unwrap()
}

fn service(name: &str, port: i64, version: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": "apps", "uid": format!("uid-{name}"), "resourceVersion": version},
           "spec": {"port": port}})
}

fn names(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn unchanged_objects_keep_their_verdict_and_changed_ones_are_evaluated_again() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    let mut cache = VerdictCache::default();
    let objects = vec![service("a", 443, "1"), service("b", 80, "1")];
    let first = evaluate_event_source_cached(&runtime, &source(), &objects, &mut cache).unwrap();
    assert_eq!(names(&first.matching), ["a"]);
    assert_eq!(cache.len(), 2);

    // Same resourceVersion: the remembered verdict stands even though the content differs.
    let same_version = vec![service("a", 80, "1"), service("b", 80, "1")];
    let second =
        evaluate_event_source_cached(&runtime, &source(), &same_version, &mut cache).unwrap();
    assert_eq!(names(&second.matching), ["a"]);

    // A new resourceVersion is evaluated again; a vanished object leaves the cache.
    let changed = vec![service("a", 80, "2")];
    let third = evaluate_event_source_cached(&runtime, &source(), &changed, &mut cache).unwrap();
    assert!(third.matching.is_empty());
    assert_eq!(cache.len(), 1);
}

#[test]
fn validation_finds_what_every_cluster_would_fail_on() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    assert!(validate(&runtime, &source()).is_ok());
    let with = |script: &str| {
        let mut source = source();
        source.spec.resource_selectors[0].evaluate = script.to_owned();
        validate(&runtime, &source).unwrap_err().to_string()
    };
    let broken = with("function evaluate() return {matching = true");
    assert!(
        broken.starts_with("EventSource ports: resourceSelectors[0].evaluate: "),
        "{broken}"
    );
    assert_eq!(
        with("local x = 1"),
        "EventSource ports: resourceSelectors[0].evaluate: the script defines no global function evaluate()"
    );
    let forbidden = with("os.execute('true') function evaluate() end");
    assert!(forbidden.contains("os"), "{forbidden}");
}

/// Live, an object being deleted is not selected (sveltos-agent skips it); fixtures, as
/// Sveltos' harness runs them, evaluate it like any other.
#[test]
fn objects_being_deleted_are_skipped_live_and_evaluated_in_fixtures() {
    use sveltos_events_agent::evaluate::{evaluate_event_source, evaluate_fixtures};
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    let source: api::v1beta1::EventSource = serde_json::from_value(serde_json::json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
        "metadata": {"name": "s"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Service"}]}
    }))
    .unwrap();
    let service = |name: &str, deleting: bool| {
        let mut object = serde_json::json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default"}});
        if deleting {
            object["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z".into();
        }
        object
    };
    let objects = [service("a", false), service("b", true)];
    let live = evaluate_event_source(&runtime, &source, &objects).unwrap();
    assert!(live.outcomes[0].matching);
    assert!(!live.outcomes[1].matching);
    assert_eq!(live.outcomes[1].message, "not selected: being deleted");
    let fixtures = evaluate_fixtures(&runtime, &source, &objects).unwrap();
    assert!(fixtures.outcomes[1].matching);
}
