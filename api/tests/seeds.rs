//! Every YAML example of the seed documents (examples/seeds/) loads into the API types, and the
//! fields each document talks about come out as it says.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use sveltos_events_api::labels::LEGACY_INSTANTIATION_ANNOTATION;
use sveltos_events_api::load::{self, Object};
use sveltos_events_api::v1beta1::{
    ClusterType, EventSource, EventTrigger, LabelFilterOperation, ReportPhase,
};
use sveltos_events_api::{selector, v1alpha1};

fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/seeds")
}

fn load(name: &str) -> Vec<Object> {
    let path = seeds_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    load::objects(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn source(name: &str) -> EventSource {
    match load(name).remove(0) {
        Object::EventSource(source) => *source,
        other => panic!(
            "{name}: expected an EventSource, got {}",
            load::describe(&other)
        ),
    }
}

fn trigger(object: Object) -> EventTrigger {
    match object {
        Object::EventTrigger(trigger) => *trigger,
        Object::EventBasedAddOn(addon) => addon.to_event_trigger().unwrap(),
        other => panic!("expected an EventTrigger, got {}", load::describe(&other)),
    }
}

fn other(object: &Object) -> &Value {
    match object {
        Object::Other(value) => value,
        other => panic!("expected a plain object, got {}", load::describe(other)),
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn every_seed_file_loads() {
    let mut count = 0;
    for entry in std::fs::read_dir(seeds_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let documents =
            load::documents(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!documents.is_empty(), "{} has no document", path.display());
        // Fragments (003-*) are not whole objects; every whole object must type-check.
        if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains("fragment")
        {
            load::objects(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        count += 1;
    }
    assert_eq!(count, 30, "one file per seed example");
}

#[test]
fn instantiate_configmap_carries_the_annotation_and_template() {
    let objects = load("000-01-instantiate-network-policy-configmap.yaml");
    let cm = other(&objects[0]);
    assert_eq!(
        cm["metadata"]["annotations"]["projectsveltos.io/instantiate"],
        "ok"
    );
    let template = cm["data"]["networkpolicy.yaml"].as_str().unwrap();
    assert!(template.contains("name: front-{{ .Resource.metadata.name }}"));
    assert!(template.contains("{{ range $port := .Resource.spec.ports }}"));
}

#[test]
fn tigera_event_source_selects_one_secret_by_name() {
    let source = source("000-02-tigera-eventsource.yaml");
    assert_eq!(
        source.metadata.name.as_deref(),
        Some("tigera-federation-service")
    );
    assert!(source.spec.collect_resources);
    let selector = &source.spec.resource_selectors[0];
    assert_eq!(
        (selector.group.as_str(), selector.version.as_str()),
        ("", "v1")
    );
    assert_eq!(selector.kind, "Secret");
    assert_eq!(selector.namespace, "kube-system");
    assert_eq!(selector.name, "tigera-federation-remote-cluster");
}

#[test]
fn tigera_trigger_has_generator_and_template_resource_refs() {
    let trigger = trigger(load("000-03-tigera-eventtrigger.yaml").remove(0));
    let spec = &trigger.spec;
    assert!(
        selector::matches(
            &spec.source_cluster_selector,
            &labels(&[("federationid", "cluster-a")])
        )
        .unwrap()
    );
    assert!(
        selector::matches(
            &spec.destination_cluster_selector,
            &labels(&[("federationid", "cluster-b")])
        )
        .unwrap()
    );
    assert!(
        !selector::matches(
            &spec.destination_cluster_selector,
            &labels(&[("federationid", "cluster-a")])
        )
        .unwrap()
    );
    assert_eq!(spec.event_source_name, "tigera-federation-service");
    assert!(spec.one_for_event);
    let generator = &spec.config_map_generator[0];
    assert_eq!(generator.name, "calico-sa-token-template");
    assert_eq!(generator.namespace, "default");
    assert_eq!(generator.name_format, "{{ .Cluster.metadata.name }}-token");
    let refs = &spec.template_resource_refs;
    assert_eq!(refs.len(), 2);
    assert_eq!(refs[0].identifier, "ConfigDataToken");
    assert_eq!(
        refs[0].resource.name.as_deref(),
        Some("{{ .Cluster.metadata.name }}-token")
    );
    assert_eq!(
        refs[0].resource.namespace.as_deref(),
        Some("projectsveltos")
    );
    assert_eq!(refs[1].identifier, "ConfigData");
    assert_eq!(
        refs[1].resource.namespace.as_deref(),
        Some("{{ .Cluster.metadata.namespace }}")
    );
    assert_eq!(spec.policy_refs[0].name, "calico-remote-cluster-config");
    // Defaults a user never wrote.
    assert_eq!(spec.tier, 100);
    assert_eq!(spec.cloud_event_action, "Create");
    // A v1beta1 trigger keeps today's instantiation rule.
    assert!(trigger.metadata.annotations.is_none());
}

#[test]
fn calico_config_is_a_deploy_time_template() {
    let objects = load("000-04-calico-remote-cluster-config.yaml");
    let cm = other(&objects[0]);
    assert_eq!(
        cm["metadata"]["annotations"]["projectsveltos.io/template"],
        "ok"
    );
    assert!(
        cm["data"]["secrets.yaml"]
            .as_str()
            .unwrap()
            .contains(r#"getResource "ConfigDataToken""#)
    );
}

#[test]
fn v1alpha1_label_filters_spelling_converts_to_one_selector() {
    let source = source("001-05-eventsource-label-filters.yaml");
    assert!(source.spec.collect_resources);
    let selectors = &source.spec.resource_selectors;
    assert_eq!(selectors.len(), 1);
    assert_eq!(selectors[0].kind, "Service");
    let filter = &selectors[0].label_filters[0];
    assert_eq!(
        (filter.key.as_str(), filter.value.as_str()),
        ("sveltos", "fv")
    );
    assert_eq!(filter.operation, LabelFilterOperation::Equal);
}

#[test]
fn v1alpha1_script_becomes_evaluate() {
    let source = source("001-06-eventsource-lua-labels.yaml");
    let selector = &source.spec.resource_selectors[0];
    assert!(selector.evaluate.starts_with("function evaluate()"));
    assert!(selector.evaluate.contains(r#"if value == "fv" then"#));
    assert!(selector.label_filters.is_empty());
}

#[test]
fn kyverno_policies_load_as_plain_objects() {
    for name in [
        "001-07-kyverno-add-labels.yaml",
        "004-30-kyverno-add-serviceaccount-labels.yaml",
    ] {
        let objects = load(name);
        let policy = other(&objects[0]);
        assert_eq!(policy["kind"], "ClusterPolicy");
        let kinds = policy.pointer("/spec/rules/0/match").unwrap().to_string();
        assert!(kinds.contains("EventBasedAddOn"), "{name}");
    }
}

#[test]
fn event_based_add_on_converts_to_a_legacy_trigger() {
    for name in [
        "001-08-networkpolicy-eventbasedaddon.yaml",
        "004-29-networkpolicy-eventbasedaddon-source-selector.yaml",
    ] {
        let mut objects = load(name);
        assert_eq!(objects.len(), 2, "{name}: EventBasedAddOn and ConfigMap");
        let template = other(&objects[1])["data"]["networkpolicy.yaml"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(template.contains("front-{{ .Resource.metadata.name }}"));
        let trigger = trigger(objects.remove(0));
        assert_eq!(
            trigger.metadata.name.as_deref(),
            Some("service-network-policy")
        );
        assert_eq!(
            trigger.spec.source_cluster_selector.match_labels,
            Some(labels(&[("env", "fv")])),
            "{name}"
        );
        assert!(selector::is_empty(
            &trigger.spec.destination_cluster_selector
        ));
        assert_eq!(trigger.spec.event_source_name, "sveltos-service");
        assert!(trigger.spec.one_for_event);
        let policy = &trigger.spec.policy_refs[0];
        assert_eq!(
            (policy.name.as_str(), policy.namespace.as_str()),
            ("network-policy", "default")
        );
        let annotations = trigger.metadata.annotations.unwrap();
        assert_eq!(annotations[LEGACY_INSTANTIATION_ANNOTATION], "true");
    }
}

#[test]
fn example_service_and_results_load() {
    let service = load("001-09-service-my-service.yaml");
    assert_eq!(other(&service[0])["spec"]["ports"][0]["port"], 80);
    let netpol = load("001-10-networkpolicy-result.yaml");
    assert_eq!(other(&netpol[0])["metadata"]["name"], "front-my-service");
    let ingress = load("001-15-ingress-result.yaml");
    let paths = &other(&ingress[0])["spec"]["rules"][0]["http"]["paths"];
    assert_eq!(paths[0]["backend"]["service"]["port"]["number"], 443);
    assert_eq!(paths[1]["backend"]["service"]["port"]["number"], 8443);
}

#[test]
fn v1alpha1_event_report_decodes_its_collected_service() {
    let report = match load("001-11-eventreport-example.yaml").remove(0) {
        Object::EventReport(report) => *report,
        other => panic!("expected an EventReport, got {}", load::describe(&other)),
    };
    assert_eq!(
        report.metadata.name.as_deref(),
        Some("capi--sveltos-service--sveltos-management-workload")
    );
    assert_eq!(report.spec.cluster_type, ClusterType::Capi);
    assert_eq!(report.spec.event_source_name, "sveltos-service");
    assert_eq!(
        report.spec.matching_resources[0].name.as_deref(),
        Some("my-service")
    );
    let bytes = report.spec.resources.unwrap().0;
    let documents = sveltos_events_api::v1beta1::split_collected_resources(&bytes);
    assert_eq!(documents.len(), 1);
    let service: Value = serde_json::from_slice(documents[0]).unwrap();
    assert_eq!(service["metadata"]["name"], "my-service");
    assert_eq!(
        service["spec"]["ports"][0]["port"], 80,
        "integers stay integers"
    );
    assert!(
        report
            .status
            .is_none_or(|s| s.phase != Some(ReportPhase::Processed))
    );
}

#[test]
fn helm_event_based_add_on_keeps_its_chart() {
    let trigger = trigger(load("001-12-kyverno-helm-eventbasedaddon.yaml").remove(0));
    assert!(!trigger.spec.one_for_event);
    assert_eq!(trigger.spec.event_source_name, "<your eventSource name>");
    let chart = &trigger.spec.helm_charts[0];
    assert_eq!(chart.repository_url, "https://kyverno.github.io/kyverno/");
    assert_eq!(chart.chart_name, "kyverno/kyverno");
    assert_eq!(chart.chart_version, "v2.6.0");
    assert_eq!(chart.release_name, "kyverno-latest");
    assert_eq!(chart.release_namespace, "kyverno");
}

#[test]
fn https_and_http_sources_watch_namespace_eng() {
    for (name, port) in [
        ("001-13-eventsource-https.yaml", "8443"),
        ("001-16-eventsource-eng-http.yaml", "80"),
    ] {
        let source = source(name);
        let selector = &source.spec.resource_selectors[0];
        assert_eq!(selector.namespace, "eng", "{name}");
        assert!(
            selector.evaluate.contains(&format!("p.port == {port}")),
            "{name}"
        );
    }
}

#[test]
fn ingress_add_on_is_one_for_all_resources() {
    let mut objects = load("001-14-ingress-eventbasedaddon.yaml");
    let template = other(&objects[1])["data"]["ingress.yaml"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(template.contains("{{ range $resource := .Resources }}"));
    assert!(template.contains("(eq .port 443 )"));
    let trigger = trigger(objects.remove(0));
    assert!(!trigger.spec.one_for_event);
    assert_eq!(trigger.spec.event_source_name, "https-service");
}

#[test]
fn httproute_add_on_references_its_configmap() {
    let mut objects = load("001-17-httproute-eventbasedaddon.yaml");
    let template = other(&objects[1])["data"]["http-route.yaml"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(template.contains("(index .Resource.spec.ports 0).port"));
    let trigger = trigger(objects.remove(0));
    assert_eq!(trigger.spec.event_source_name, "eng-http-service");
    assert_eq!(trigger.spec.policy_refs[0].name, "http-routes");
}

#[test]
fn cross_cluster_trigger_converts_both_string_selectors() {
    let source = source("002-18-load-balancer-eventsource.yaml");
    assert!(
        source.spec.resource_selectors[0]
            .evaluate
            .contains("obj.status.loadBalancer.ingress")
    );
    let mut objects = load("002-19-service-policy-eventtrigger.yaml");
    let cm = other(&objects[1]).clone();
    assert_eq!(
        cm["metadata"]["annotations"]["projectsveltos.io/template"],
        "ok"
    );
    assert!(
        cm["data"]["endpoint.yaml"]
            .as_str()
            .unwrap()
            .contains("(index .Resource.status.loadBalancer.ingress 0).ip")
    );
    let trigger = trigger(objects.remove(0));
    assert_eq!(
        trigger.spec.source_cluster_selector.match_labels,
        Some(labels(&[("env", "production")]))
    );
    assert_eq!(
        trigger.spec.destination_cluster_selector.match_labels,
        Some(labels(&[("dep", "eng")]))
    );
    assert!(trigger.spec.one_for_event);
    // v1alpha1 objects keep the rule that referenced ConfigMaps are instantiated.
    assert_eq!(
        trigger.metadata.annotations.unwrap()[LEGACY_INSTANTIATION_ANNOTATION],
        "true"
    );
}

#[test]
fn cross_cluster_workloads_load() {
    let objects = load("002-20-gke-deployment-and-service.yaml");
    assert_eq!(objects.len(), 2);
    assert_eq!(other(&objects[1])["spec"]["type"], "LoadBalancer");
    let lb = load("002-21-lb-service-with-status.yaml");
    assert_eq!(
        other(&lb[0])["status"]["loadBalancer"]["ingress"][0]["ip"],
        "34.172.32.172"
    );
    let endpoints = load("002-23-external-endpoints-result.yaml");
    assert_eq!(
        other(&endpoints[0])["subsets"][0]["ports"][0]["port"],
        60000
    );
    assert_eq!(
        other(&load("002-22-external-service-result.yaml")[0])["metadata"]["namespace"],
        "external"
    );
    assert_eq!(
        other(&load("002-24-busybox-pod.yaml")[0])["metadata"]["namespace"],
        "policy-demo"
    );
}

#[test]
fn generator_fragment_reads_as_generator_references() {
    let text = std::fs::read_to_string(seeds_dir().join("003-25-generator-fragment.yaml")).unwrap();
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Fragment {
        config_map_generator: Vec<sveltos_events_api::v1beta1::GeneratorReference>,
    }
    let fragment: Fragment =
        serde_json::from_value(load::documents(&text).unwrap().remove(0)).unwrap();
    let generator = &fragment.config_map_generator[0];
    assert_eq!(
        generator.name,
        "{{ .Resource.metadata.name }}-source-config"
    );
    assert_eq!(generator.namespace, "{{ .Resource.metadata.namespace }}");
    assert!(
        generator
            .name_format
            .ends_with("{{ .Resource.metadata.name }}-generated")
    );
    for (name, field, value) in [
        (
            "003-26-event-resource-fragment.yaml",
            "/metadata/name",
            "workload",
        ),
        (
            "003-27-retrieved-configmap-fragment.yaml",
            "/name",
            "workload-source-config",
        ),
        (
            "003-28-cluster-fragment.yaml",
            "/metadata/namespace",
            "prod",
        ),
    ] {
        let text = std::fs::read_to_string(seeds_dir().join(name)).unwrap();
        let doc = load::documents(&text).unwrap().remove(0);
        assert_eq!(
            doc.pointer(field).and_then(Value::as_str),
            Some(value),
            "{name}"
        );
    }
}

#[test]
fn v1alpha1_trigger_round_trips_through_v1beta1() {
    let text = std::fs::read_to_string(seeds_dir().join("002-19-service-policy-eventtrigger.yaml"))
        .unwrap();
    let value = load::documents(&text).unwrap().remove(0);
    let alpha: v1alpha1::EventTrigger = serde_json::from_value(value).unwrap();
    let beta: EventTrigger = alpha.clone().try_into().unwrap();
    let back: v1alpha1::EventTrigger = beta.try_into().unwrap();
    let normalize = |t: &v1alpha1::EventTrigger| {
        let mut v = serde_json::to_value(t).unwrap();
        // Defaults v1beta1 fills in are the only difference.
        for field in [
            "tier",
            "syncMode",
            "stopMatchingBehavior",
            "cloudEventAction",
        ] {
            v["spec"].as_object_mut().unwrap().remove(field);
        }
        if let Some(refs) = v["spec"]["policyRefs"].as_array_mut() {
            for r in refs {
                r.as_object_mut()
                    .unwrap()
                    .retain(|k, _| ["name", "namespace", "kind"].contains(&k.as_str()));
            }
        }
        v
    };
    assert_eq!(normalize(&back), normalize(&alpha));
}

#[test]
fn v1alpha1_event_source_converts_back_to_the_selector_shape() {
    let source = source("001-13-eventsource-https.yaml");
    let alpha: v1alpha1::EventSource = source.clone().into();
    let again: EventSource = alpha.into();
    assert_eq!(again, source);
}

#[test]
fn bad_string_selector_is_a_clear_error() {
    let text = "apiVersion: lib.projectsveltos.io/v1alpha1\nkind: EventTrigger\nmetadata:\n  name: t\nspec:\n  sourceClusterSelector: env in prod\n  eventSourceName: s\n";
    let error = load::objects(text).unwrap_err().to_string();
    assert!(error.contains("\"prod\""), "{error}");
}
