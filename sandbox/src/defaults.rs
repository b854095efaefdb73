//! Defaulting of built-in kinds that the real API server applies on every write, so readers
//! (Lua scripts, templates) see the fields they see on a real cluster.

use crate::registry::ResourceInfo;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

/// Fills the defaults kube-apiserver sets on `obj` of resource `info`; other kinds pass unchanged.
pub fn apply(info: &ResourceInfo, obj: &mut Value) {
    if !info.group.is_empty() {
        return;
    }
    match info.plural.as_str() {
        "services" => service(obj),
        "secrets" => secret(obj),
        _ => {}
    }
}

/// A Secret: `type: Opaque` when unset, and `stringData` folded into `data` (base64, winning
/// over a `data` key of the same name) and dropped, as the API server's conversion does.
fn secret(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    root.entry("type").or_insert_with(|| json!("Opaque"));
    let Some(Value::Object(plain)) = root.remove("stringData") else {
        return;
    };
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

/// The object under `key`, created empty when absent; `None` when it holds something else.
fn object_entry<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    map.entry(key).or_insert_with(|| json!({})).as_object_mut()
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
