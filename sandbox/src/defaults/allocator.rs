//! The cluster IPs and node ports kube-apiserver hands out to Services, and their keeping
//! across updates.

use serde_json::{Value, json};

use crate::registry::ResourceInfo;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn services_get_cluster_ips_and_node_ports_that_updates_keep() {
        let info = Registry::builtin()
            .get("", "v1", "services")
            .unwrap_or_else(|| panic!("services are built in"));
        let mut allocator = Allocator::default();
        let mut first = json!({"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}});
        let mut second = json!({"metadata": {"name": "b"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let mut headless = json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}});
        let mut external = json!({"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "x.example.com"}});
        for svc in [&mut first, &mut second, &mut headless, &mut external] {
            super::super::apply(&info, svc);
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
}
