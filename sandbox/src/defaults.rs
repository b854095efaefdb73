//! Defaulting of built-in kinds that the real API server applies on every write, so readers
//! (Lua scripts, templates) see the fields they see on a real cluster.

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
        ("apps", "deployments") => deployment(obj),
        ("", "pods") => pod(obj),
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

/// A Role or ClusterRole always has `rules`: `null` when it grants nothing.
fn role(obj: &mut Value) {
    if let Some(root) = obj.as_object_mut() {
        let rules = root.entry("rules").or_insert(Value::Null);
        if rules.as_array().is_some_and(Vec::is_empty) {
            *rules = Value::Null;
        }
    }
}

/// A Deployment: one replica, a RollingUpdate strategy of 25%/25%, 10 revisions kept, a 600 s
/// progress deadline, and the pod template's defaults.
fn deployment(obj: &mut Value) {
    let Some(spec) = obj
        .as_object_mut()
        .and_then(|root| object_entry(root, "spec"))
    else {
        return;
    };
    spec.entry("replicas").or_insert_with(|| json!(1));
    spec.entry("revisionHistoryLimit")
        .or_insert_with(|| json!(10));
    spec.entry("progressDeadlineSeconds")
        .or_insert_with(|| json!(600));
    if let Some(strategy) = object_entry(spec, "strategy") {
        let kind = strategy
            .entry("type")
            .or_insert_with(|| json!("RollingUpdate"))
            .clone();
        if kind == "RollingUpdate"
            && let Some(rolling) = object_entry(strategy, "rollingUpdate")
        {
            rolling
                .entry("maxUnavailable")
                .or_insert_with(|| json!("25%"));
            rolling.entry("maxSurge").or_insert_with(|| json!("25%"));
        }
    }
    if let Some(template) = object_entry(spec, "template") {
        // Go writes a template's zero creation time as null.
        if let Some(meta) = object_entry(template, "metadata") {
            meta.entry("creationTimestamp").or_insert(Value::Null);
        }
        if let Some(pod) = object_entry(template, "spec") {
            pod_spec(pod);
        }
    }
    // Until the deployment controller writes one, the status is Go's empty struct.
    if let Some(root) = obj.as_object_mut() {
        root.entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// A Pod: its spec's defaults, and a status that says `Pending` with its QoS class (no
/// kubelet ever runs it).
fn pod(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if let Some(spec) = object_entry(root, "spec") {
        pod_spec(spec);
    }
    let qos = qos_class(root.get("spec").unwrap_or(&Value::Null));
    if let Some(status) = object_entry(root, "status") {
        status.entry("phase").or_insert_with(|| json!("Pending"));
        status.entry("qosClass").or_insert_with(|| json!(qos));
    }
}

/// The QoS class of a pod spec: `Guaranteed` when every container limits CPU and memory and
/// requests what it limits, `BestEffort` when none requests or limits either, else
/// `Burstable`.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|list| spec[*list].as_array().into_iter().flatten())
        .collect();
    let resources = ["cpu", "memory"];
    let set = |c: &Value, kind: &str, r: &str| {
        c["resources"][kind][r].is_string() || c["resources"][kind][r].is_number()
    };
    let any = containers.iter().any(|c| {
        resources
            .iter()
            .any(|r| set(c, "requests", r) || set(c, "limits", r))
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        resources.iter().all(|r| {
            let limit = &c["resources"]["limits"][*r];
            let request = &c["resources"]["requests"][*r];
            set(c, "limits", r) && (request.is_null() || request == limit)
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A pod spec's defaults: restart policy, grace period, DNS policy, scheduler, security
/// context, and per container the termination message and pull policy (`Always` for an
/// untagged or `latest` image) and each port's protocol.
fn pod_spec(spec: &mut Map<String, Value>) {
    spec.entry("restartPolicy")
        .or_insert_with(|| json!("Always"));
    spec.entry("terminationGracePeriodSeconds")
        .or_insert_with(|| json!(30));
    spec.entry("dnsPolicy")
        .or_insert_with(|| json!("ClusterFirst"));
    spec.entry("securityContext").or_insert_with(|| json!({}));
    spec.entry("schedulerName")
        .or_insert_with(|| json!("default-scheduler"));
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            container
                .entry("terminationMessagePath")
                .or_insert_with(|| json!("/dev/termination-log"));
            container
                .entry("terminationMessagePolicy")
                .or_insert_with(|| json!("File"));
            container.entry("resources").or_insert_with(|| json!({}));
            let image = container
                .get("image")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let last = image.rsplit('/').next().unwrap_or_default();
            let tag = last.split_once(':').map(|(_, tag)| tag);
            let pull = if image.contains('@') || tag.is_some_and(|t| t != "latest") {
                "IfNotPresent"
            } else {
                "Always"
            };
            container
                .entry("imagePullPolicy")
                .or_insert_with(|| json!(pull));
            if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
                for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                    port.entry("protocol").or_insert_with(|| json!("TCP"));
                }
            }
        }
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

/// Addresses and ports the API server hands out to Services, per cluster.
#[derive(Debug, Clone)]
pub struct Allocator {
    /// Offset in 10.96.0.0/12 of the next cluster IP (10.96.0.1 is the `kubernetes` Service's).
    next_ip: u32,
    /// Next node port, in 30000-32767.
    next_node_port: u16,
}

impl Default for Allocator {
    fn default() -> Self {
        Allocator {
            next_ip: 2,
            next_node_port: 30000,
        }
    }
}

/// Size of 10.96.0.0/12.
const SERVICE_NETWORK_SIZE: u32 = 1 << 20;

impl Allocator {
    fn cluster_ip(&mut self) -> String {
        let offset = self.next_ip;
        self.next_ip = (self.next_ip + 1) % SERVICE_NETWORK_SIZE;
        let address = 0x0A60_0000 + offset;
        std::net::Ipv4Addr::from(address).to_string()
    }

    fn node_port(&mut self) -> u16 {
        let port = self.next_node_port;
        self.next_node_port = if port >= 32767 { 30000 } else { port + 1 };
        port
    }

    /// Takes note of what a stored Service holds, so that a restored cluster does not hand
    /// its cluster IP or node ports out again.
    pub fn observe(&mut self, service: &Value) {
        let spec = &service["spec"];
        let ip = spec["clusterIP"]
            .as_str()
            .and_then(|ip| ip.parse::<std::net::Ipv4Addr>().ok());
        if let Some(offset) = ip.map(|ip| u32::from(ip).wrapping_sub(0x0A60_0000))
            && offset < SERVICE_NETWORK_SIZE
        {
            self.next_ip = self.next_ip.max((offset + 1) % SERVICE_NETWORK_SIZE);
        }
        for port in spec["ports"].as_array().into_iter().flatten() {
            if let Some(port) = port["nodePort"]
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                && (30000..32767).contains(&port)
            {
                self.next_node_port = self.next_node_port.max(port + 1);
            }
        }
    }

    /// Gives a new Service of `info` what the allocators would: a cluster IP (with
    /// `clusterIPs`, `ipFamilies`, `ipFamilyPolicy`) unless headless (`None`) or ExternalName,
    /// and a node port for each port of NodePort and LoadBalancer Services. Values the
    /// request sets are kept (their uniqueness is not checked).
    pub fn allocate(&mut self, info: &ResourceInfo, obj: &mut Value) {
        if !info.group.is_empty() || info.plural != "services" {
            return;
        }
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        let kind = spec
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        if kind == "ExternalName" {
            return;
        }
        let node_ports = kind == "NodePort" || kind == "LoadBalancer";
        let ip = match spec.get("clusterIP").and_then(Value::as_str) {
            Some(ip) if !ip.is_empty() => ip.to_owned(),
            _ => self.cluster_ip(),
        };
        spec.insert("clusterIP".into(), json!(ip));
        spec.entry("clusterIPs").or_insert_with(|| json!([ip]));
        if ip != "None" {
            spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
            spec.entry("ipFamilyPolicy")
                .or_insert_with(|| json!("SingleStack"));
        }
        if node_ports && let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                if !port.contains_key("nodePort") {
                    port.insert("nodePort".into(), json!(self.node_port()));
                }
            }
        }
    }
}

/// On an update of a Service, what the allocators gave stays: a request without `clusterIP`,
/// `clusterIPs`, `ipFamilies`, `ipFamilyPolicy` or a port's `nodePort` keeps the old values;
/// changing an allocated cluster IP is refused, as kube-apiserver does.
pub fn keep_allocated(info: &ResourceInfo, old: &Value, new: &mut Value) -> Result<(), String> {
    if !info.group.is_empty() || info.plural != "services" {
        return Ok(());
    }
    let (Some(before), Some(after)) = (
        old.get("spec").and_then(Value::as_object),
        new.get_mut("spec").and_then(Value::as_object_mut),
    ) else {
        return Ok(());
    };
    let kind = after
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if kind == "ExternalName" {
        return Ok(());
    }
    let old_ip = before
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("");
    match after.get("clusterIP").and_then(Value::as_str) {
        Some(ip) if !ip.is_empty() && !old_ip.is_empty() && ip != old_ip => {
            let name = old
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            return Err(format!(
                "Service \"{name}\" is invalid: spec.clusterIPs[0]: Invalid value: []string{{\"{ip}\"}}: may not change once set"
            ));
        }
        _ => {}
    }
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        let unset = after
            .get(field)
            .is_none_or(|v| v.is_null() || v.as_str() == Some(""));
        if unset && let Some(value) = before.get(field) {
            after.insert(field.into(), value.clone());
        }
    }
    let old_ports: Vec<&Value> = before
        .get("ports")
        .and_then(Value::as_array)
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    if let Some(ports) = after.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            if port.contains_key("nodePort") {
                continue;
            }
            let same = old_ports.iter().find(|o| {
                o.get("port") == port.get("port")
                    && o.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                        == port
                            .get("protocol")
                            .and_then(Value::as_str)
                            .unwrap_or("TCP")
            });
            if let Some(node_port) = same.and_then(|o| o.get("nodePort")) {
                port.insert("nodePort".into(), node_port.clone());
            }
        }
    }
    Ok(())
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
    fn services_get_cluster_ips_and_node_ports_that_updates_keep() {
        let info = services();
        let mut allocator = Allocator::default();
        let mut first = json!({"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}});
        let mut second = json!({"metadata": {"name": "b"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let mut headless = json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}});
        let mut external = json!({"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "x.example.com"}});
        for svc in [&mut first, &mut second, &mut headless, &mut external] {
            apply(&info, svc);
            allocator.allocate(&info, svc);
        }
        assert_eq!(first["spec"]["clusterIP"], "10.96.0.2");
        assert_eq!(first["spec"]["clusterIPs"], json!(["10.96.0.2"]));
        assert_eq!(first["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(first["spec"]["ipFamilyPolicy"], "SingleStack");
        assert!(first["spec"]["ports"][0].get("nodePort").is_none());
        assert_eq!(second["spec"]["clusterIP"], "10.96.0.3");
        assert_eq!(second["spec"]["ports"][0]["nodePort"], 30000);
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        assert!(external["spec"].get("clusterIP").is_none());

        // An update without the allocated fields keeps them; changing the IP is refused.
        let mut update = json!({"metadata": {"name": "b"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        keep_allocated(&info, &second, &mut update).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(update["spec"]["clusterIP"], "10.96.0.3");
        assert_eq!(update["spec"]["ports"][0]["nodePort"], 30000);
        let mut moved = json!({"metadata": {"name": "b"}, "spec": {"clusterIP": "10.96.9.9"}});
        let refused = keep_allocated(&info, &second, &mut moved)
            .err()
            .unwrap_or_default();
        assert!(refused.contains("may not change once set"), "{refused}");
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
    fn a_bare_deployment_gets_the_api_servers_defaults() {
        let info = Registry::builtin()
            .get("apps", "v1", "deployments")
            .unwrap_or_else(|| panic!("deployments are built in"));
        let mut deployment = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "registry:5000/tools:1.2"},
        ]}}}});
        apply(&info, &mut deployment);
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(spec["revisionHistoryLimit"], 10);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(pod["containers"][1]["imagePullPolicy"], "IfNotPresent");
        let mut recreate = json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}});
        apply(&info, &mut recreate);
        assert_eq!(recreate["spec"]["replicas"], 0);
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn a_pod_gets_its_spec_defaults_and_stays_pending_with_its_qos_class() {
        let reg = Registry::builtin();
        let info = reg.get("", "v1", "pods").unwrap();
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}});
        apply(&info, &mut pod);
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        let limited = |requests: Value| {
            let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "x",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": requests}}]}});
            apply(&info, &mut pod);
            pod["status"]["qosClass"].clone()
        };
        assert_eq!(limited(json!({})), "Guaranteed");
        assert_eq!(limited(json!({"cpu": "500m"})), "Burstable");
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
