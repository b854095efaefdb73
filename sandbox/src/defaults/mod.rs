//! Defaulting of built-in kinds that the real API server applies on every write, so readers
//! (Lua scripts, templates) see the fields they see on a real cluster.

mod allocator;
mod pods;
mod workloads;

pub use allocator::{Allocator, keep_allocated};
pub use workloads::TEMPLATE_GENERATION;

use crate::registry::ResourceInfo;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

/// Fills the defaults kube-apiserver sets on built-in `obj` of resource `info`; other kinds
/// pass unchanged (a custom resource was pruned and defaulted by its schema when decoded:
/// [`crate::typed::decode`]).
pub fn apply(info: &ResourceInfo, obj: &mut Value) {
    if info.custom {
        return;
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "services") => service(obj),
        // Go's zero IngressStatus: its loadBalancer is no pointer.
        ("networking.k8s.io", "ingresses") => {
            if let Some(root) = obj.as_object_mut() {
                root.entry("status")
                    .or_insert_with(|| json!({"loadBalancer": {}}));
            }
        }
        ("", "secrets") => secret(obj),
        ("apps", "deployments") => workloads::deployment(obj),
        ("apps", "replicasets") => workloads::replica_set(obj),
        ("apps", "statefulsets") => workloads::stateful_set(obj),
        ("apps", "daemonsets") => workloads::daemon_set(obj),
        ("batch", "jobs") => workloads::job(obj),
        ("batch", "cronjobs") => workloads::cron_job(obj),
        ("", "pods") => pods::pod(obj),
        ("", "persistentvolumeclaims") => pods::claim(obj),
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => role(obj),
        // The quota controller fills it; the registry starts it empty.
        ("", "resourcequotas") => {
            if let Some(root) = obj.as_object_mut() {
                root.entry("status")
                    .or_insert_with(|| Value::Object(Map::new()));
            }
        }
        _ => {}
    }
}

/// What kube-apiserver's registry does to a new built-in `obj` before it is stored, beyond
/// defaulting: a Job's generated selector and labels, a DaemonSet's first template
/// generation. Called before [`apply`], whose defaults are also those of every read of the
/// stored object (a Job without labels shows its template's, generated ones included).
pub fn prepare_create(info: &ResourceInfo, obj: &mut Value) {
    match (info.group.as_str(), info.plural.as_str()) {
        ("batch", "jobs") if !info.custom => workloads::generate_selector(obj),
        ("apps", "daemonsets") if !info.custom => workloads::first_template_generation(obj),
        _ => {}
    }
}

/// What kube-apiserver's registry does to built-in `new` replacing `old` beyond defaulting:
/// a DaemonSet's template generation kept, and bumped when its template changes.
pub fn prepare_update(info: &ResourceInfo, old: &Value, new: &mut Value) {
    if (info.group.as_str(), info.plural.as_str()) == ("apps", "daemonsets") && !info.custom {
        workloads::next_template_generation(old, new);
    }
}

/// A Role or ClusterRole always has `rules`: `null` when it grants nothing.
fn role(obj: &mut Value) {
    if let Some(root) = obj.as_object_mut() {
        let rules = root.entry("rules").or_insert(Value::Null);
        if rules.as_array().is_some_and(Vec::is_empty) {
            *rules = Value::Null;
        }
    }
}

fn secret(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    root.entry("type").or_insert_with(|| json!("Opaque"));
    let Some(Value::Object(plain)) = root.remove("stringData") else {
        return;
    };
    if plain.is_empty() {
        return;
    }
    if let Some(data) = object_entry(root, "data") {
        for (key, value) in plain {
            let text = match value {
                Value::String(text) => text,
                other => other.to_string(),
            };
            data.insert(key, json!(STANDARD.encode(text)));
        }
    }
}

/// A Service: `type: ClusterIP`, `sessionAffinity: None`, `internalTrafficPolicy: Cluster`,
/// each port's `protocol: TCP` and `targetPort` equal to `port`, and `status.loadBalancer: {}`
/// (a Go struct, never omitted, so scripts may read `obj.status.loadBalancer.ingress`).
fn service(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if let Some(spec) = object_entry(root, "spec") {
        let kind = spec
            .entry("type")
            .or_insert_with(|| json!("ClusterIP"))
            .clone();
        if kind != "ExternalName" {
            spec.entry("sessionAffinity")
                .or_insert_with(|| json!("None"));
            spec.entry("internalTrafficPolicy")
                .or_insert_with(|| json!("Cluster"));
        }
        if kind == "NodePort" || kind == "LoadBalancer" {
            spec.entry("externalTrafficPolicy")
                .or_insert_with(|| json!("Cluster"));
        }
        if kind == "LoadBalancer" {
            spec.entry("allocateLoadBalancerNodePorts")
                .or_insert_with(|| json!(true));
        }
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                port.entry("protocol").or_insert_with(|| json!("TCP"));
                if let Some(number) = port.get("port").cloned() {
                    port.entry("targetPort").or_insert(number);
                }
            }
        }
    }
    if let Some(status) = object_entry(root, "status") {
        status.entry("loadBalancer").or_insert_with(|| json!({}));
    }
}

/// Sets each `(field, value)` of `map` that Go reads as a nil pointer: absent or null.
fn fill(map: &mut Map<String, Value>, defaults: &[(&str, Value)]) {
    for (field, value) in defaults {
        let entry = map.entry(*field).or_insert(Value::Null);
        if entry.is_null() {
            *entry = value.clone();
        }
    }
}

/// Sets each `(field, text)` of `map` that Go reads as an empty string (absent, null or
/// `""`): the plain string fields its defaulting fills when they are empty.
fn fill_text(map: &mut Map<String, Value>, defaults: &[(&str, &str)]) {
    for (field, text) in defaults {
        let entry = map.entry(*field).or_insert(Value::Null);
        if entry.is_null() || *entry == "" {
            *entry = json!(text);
        }
    }
}

/// The text of `map`'s `field` ("" when absent or not a string).
fn text<'a>(map: &'a Map<String, Value>, field: &str) -> &'a str {
    map.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// The object under `key`, created empty when absent or null (Go reads `null` as a nil
/// pointer); `None` when it holds something else.
fn object_entry<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let entry = map.entry(key).or_insert(Value::Null);
    if entry.is_null() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn services() -> std::sync::Arc<ResourceInfo> {
        Registry::builtin()
            .get("", "v1", "services")
            .unwrap_or_else(|| panic!("services are built in"))
    }

    #[test]
    fn a_bare_service_gets_the_api_servers_defaults() {
        let mut svc = json!({"metadata": {"name": "web"},
            "spec": {"ports": [{"port": 443}, {"port": 80, "protocol": "UDP", "targetPort": "http"}]}});
        apply(&services(), &mut svc);
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(svc["spec"]["sessionAffinity"], "None");
        assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 443);
        assert_eq!(svc["spec"]["ports"][1]["protocol"], "UDP");
        assert_eq!(svc["spec"]["ports"][1]["targetPort"], "http");
        assert_eq!(svc["status"], json!({"loadBalancer": {}}));
    }

    #[test]
    fn secret_string_data_is_folded_into_data() {
        let secrets = Registry::builtin()
            .get("", "v1", "secrets")
            .unwrap_or_else(|| panic!("secrets are built in"));
        let mut secret = json!({"data": {"a": "b2xk", "keep": "eA=="},
            "stringData": {"a": "new", "token": "t0k"}});
        apply(&secrets, &mut secret);
        assert_eq!(
            secret,
            json!({"type": "Opaque", "data": {"a": "bmV3", "keep": "eA==", "token": "dDBr"}})
        );
        let mut typed = json!({"type": "kubernetes.io/tls"});
        apply(&secrets, &mut typed);
        assert_eq!(typed, json!({"type": "kubernetes.io/tls"}));
    }

    #[test]
    fn set_fields_and_other_kinds_are_left_alone() {
        let mut svc = json!({"spec": {"type": "ExternalName", "externalName": "x.example"},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}});
        apply(&services(), &mut svc);
        assert_eq!(svc["spec"]["type"], "ExternalName");
        assert!(svc["spec"].get("sessionAffinity").is_none());
        assert_eq!(
            svc["status"]["loadBalancer"]["ingress"][0]["ip"],
            "203.0.113.7"
        );
        let config_maps = Registry::builtin()
            .get("", "v1", "configmaps")
            .unwrap_or_else(|| panic!("configmaps are built in"));
        let mut cm = json!({"data": {"a": "b"}});
        apply(&config_maps, &mut cm);
        assert_eq!(cm, json!({"data": {"a": "b"}}));
    }
}
