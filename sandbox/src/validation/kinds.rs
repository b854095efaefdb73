//! kube-apiserver's validation of NetworkPolicies, Ingresses, RBAC roles and bindings,
//! and Endpoints: the mistakes people make with them refused in its words and order.

use serde_json::Value;

use super::unsupported;

use crate::formats::cidr;
use crate::meta::{DNS1123_SUBDOMAIN_RULE, LABEL_VALUE_RULE, is_dns1123_subdomain, is_label_value};

/// Field errors, `(field, text)`, in kube-apiserver's order.
type Errors = Vec<(String, String)>;

/// The field errors of `object` (replacing `old` on an update) of resource `group/plural`.
pub fn errors(group: &str, plural: &str, old: Option<&Value>, object: &Value) -> Errors {
    let mut errors = Vec::new();
    match (group, plural) {
        ("networking.k8s.io", "networkpolicies") => network_policy(&object["spec"], &mut errors),
        ("networking.k8s.io", "ingresses") => ingress(&object["spec"], &mut errors),
        ("rbac.authorization.k8s.io", "roles") => rules(object, true, &mut errors),
        // An aggregated ClusterRole's rules are the controller's to fill.
        ("rbac.authorization.k8s.io", "clusterroles") if object["aggregationRule"].is_null() => {
            rules(object, false, &mut errors);
        }
        ("rbac.authorization.k8s.io", "rolebindings") => binding(old, object, true, &mut errors),
        ("rbac.authorization.k8s.io", "clusterrolebindings") => {
            binding(old, object, false, &mut errors);
        }
        ("", "endpoints") => endpoints(object, &mut errors),
        _ => {}
    }
    errors
}

fn push(errors: &mut Errors, field: impl Into<String>, text: impl Into<String>) {
    errors.push((field.into(), text.into()));
}

fn items(value: &Value) -> impl Iterator<Item = (usize, &Value)> {
    value.as_array().into_iter().flatten().enumerate()
}

/// A port number's error (1-65535), or a port name's (an IANA service name).
fn port(value: &Value, field: &str, errors: &mut Errors) {
    match value {
        Value::Number(n) if !n.as_i64().is_some_and(|n| (1..=65535).contains(&n)) => {
            push(
                errors,
                field,
                format!("Invalid value: {n}: must be between 1 and 65535, inclusive"),
            );
        }
        Value::String(name) if !port_name(name) => push(
            errors,
            field,
            format!(
                "Invalid value: {name:?}: must contain only alpha-numeric characters (a-z, 0-9), \
                 and hyphens (-)"
            ),
        ),
        _ => {}
    }
}

/// An IANA service name: 1-15 lower case letters, digits and inner single hyphens, a letter
/// among them.
fn port_name(name: &str) -> bool {
    (1..=15).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn protocol(value: &Value, field: &str, errors: &mut Errors) {
    if !value.is_null() && !matches!(value.as_str(), Some("TCP" | "UDP" | "SCTP")) {
        push(errors, field, unsupported(value, &["TCP", "UDP", "SCTP"]));
    }
}

/// The matchLabels values of a label selector.
fn selector(selector: &Value, field: &str, errors: &mut Errors) {
    for (_, value) in selector["matchLabels"].as_object().into_iter().flatten() {
        let text = value.as_str().unwrap_or_default();
        if !is_label_value(text) {
            push(
                errors,
                format!("{field}.matchLabels"),
                format!("Invalid value: {value}: {LABEL_VALUE_RULE}"),
            );
        }
    }
}

/// Whether CIDR `inner` lies strictly inside CIDR `outer`.
fn strictly_inside(inner: (std::net::IpAddr, u8), outer: (std::net::IpAddr, u8)) -> bool {
    use std::net::IpAddr;
    let prefix = |address: IpAddr, bits: u8| -> u128 {
        let (value, width) = match address {
            IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
            IpAddr::V6(a) => (u128::from(a), 128),
        };
        let shift = width - u32::from(bits);
        if shift >= 128 { 0 } else { value >> shift }
    };
    inner.0.is_ipv4() == outer.0.is_ipv4()
        && inner.1 > outer.1
        && prefix(inner.0, outer.1) == prefix(outer.0, outer.1)
}

fn network_policy(spec: &Value, errors: &mut Errors) {
    selector(&spec["podSelector"], "spec.podSelector", errors);
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in items(&spec[direction]) {
            let here = format!("spec.{direction}[{i}]");
            for (j, p) in items(&rule["ports"]) {
                let at = format!("{here}.ports[{j}]");
                protocol(&p["protocol"], &format!("{at}.protocol"), errors);
                port(&p["port"], &format!("{at}.port"), errors);
            }
            for (j, peer) in items(&rule[peers]) {
                network_peer(peer, &format!("{here}.{peers}[{j}]"), errors);
            }
        }
    }
    let types = spec["policyTypes"].as_array().map_or(0, Vec::len);
    for (i, kind) in items(&spec["policyTypes"]) {
        if !matches!(kind.as_str(), Some("Ingress" | "Egress")) {
            push(
                errors,
                format!("spec.policyTypes[{i}]"),
                unsupported(kind, &["Ingress", "Egress"]),
            );
        }
    }
    if types > 2 {
        push(
            errors,
            "spec.policyTypes",
            format!(
                "Invalid value: {}: may not specify more than two policyTypes",
                spec["policyTypes"]
            ),
        );
    }
}

fn network_peer(peer: &Value, here: &str, errors: &mut Errors) {
    let mut peers = 0;
    if !peer["podSelector"].is_null() {
        peers += 1;
        selector(&peer["podSelector"], &format!("{here}.podSelector"), errors);
    }
    if !peer["namespaceSelector"].is_null() {
        peers += 1;
        selector(
            &peer["namespaceSelector"],
            &format!("{here}.namespaceSelector"),
            errors,
        );
    }
    let block = &peer["ipBlock"];
    if !block.is_null() {
        if peers > 0 {
            push(
                errors,
                here,
                "Forbidden: may not specify both ipBlock and another peer",
            );
            return;
        }
        peers += 1;
        let text = block["cidr"].as_str().unwrap_or_default();
        let field = format!("{here}.ipBlock.cidr");
        let Some(outer) = cidr(text).filter(|_| !text.is_empty()) else {
            let why = if text.is_empty() {
                "Required value".to_owned()
            } else {
                format!("Invalid value: {text:?}: not a valid CIDR")
            };
            push(errors, field, why);
            return;
        };
        for (k, except) in items(&block["except"]) {
            let text = except.as_str().unwrap_or_default();
            let field = format!("{here}.ipBlock.except[{k}]");
            match cidr(text) {
                None => push(
                    errors,
                    field,
                    format!("Invalid value: {text:?}: not a valid CIDR"),
                ),
                Some(inner) if !strictly_inside(inner, outer) => push(
                    errors,
                    field,
                    format!("Invalid value: {text:?}: must be a strict subset of `cidr`"),
                ),
                Some(_) => {}
            }
        }
    }
    if peers == 0 {
        push(errors, here, "Required value: must specify a peer");
    }
}

fn ingress(spec: &Value, errors: &mut Errors) {
    let rules = &spec["rules"];
    let no_rules = rules.as_array().is_none_or(Vec::is_empty);
    if no_rules && spec["defaultBackend"].is_null() {
        let shown = if rules.is_null() {
            "[]networking.IngressRule(nil)"
        } else {
            "[]networking.IngressRule{}"
        };
        push(
            errors,
            "spec",
            format!("Invalid value: {shown}: either `defaultBackend` or `rules` must be specified"),
        );
    }
    if !spec["defaultBackend"].is_null() {
        backend(&spec["defaultBackend"], "spec.defaultBackend", errors);
    }
    for (i, rule) in items(rules) {
        let here = format!("spec.rules[{i}]");
        let host = rule["host"].as_str().unwrap_or_default();
        let bare = host.strip_prefix("*.").unwrap_or(host);
        if !host.is_empty() && !is_dns1123_subdomain(bare) {
            push(
                errors,
                format!("{here}.host"),
                format!("Invalid value: {host:?}: {DNS1123_SUBDOMAIN_RULE}"),
            );
        }
        for (j, path) in items(&rule["http"]["paths"]) {
            let at = format!("{here}.http.paths[{j}]");
            let text = path["path"].as_str().unwrap_or_default();
            match path["pathType"].as_str() {
                None => {
                    push(
                        errors,
                        format!("{at}.pathType"),
                        "Required value: pathType must be specified",
                    );
                    continue;
                }
                Some("Exact" | "Prefix") => {
                    if !text.starts_with('/') {
                        push(
                            errors,
                            format!("{at}.path"),
                            format!("Invalid value: {text:?}: must be an absolute path"),
                        );
                    }
                }
                Some("ImplementationSpecific") => {}
                Some(_) => push(
                    errors,
                    format!("{at}.pathType"),
                    unsupported(
                        &path["pathType"],
                        &["Exact", "ImplementationSpecific", "Prefix"],
                    ),
                ),
            }
            backend(&path["backend"], &format!("{at}.backend"), errors);
        }
    }
}

fn backend(backend: &Value, here: &str, errors: &mut Errors) {
    let service = &backend["service"];
    match (backend["resource"].is_null(), service.is_null()) {
        (false, false) => push(
            errors,
            here,
            "Invalid value: \"\": cannot set both resource and service backends",
        ),
        (false, true) => {}
        (true, false) => {
            if service["name"].as_str().unwrap_or_default().is_empty() {
                push(errors, format!("{here}.service.name"), "Required value");
            }
            let name = service["port"]["name"].as_str().unwrap_or_default();
            let number = service["port"]["number"].as_i64().unwrap_or(0);
            match (name.is_empty(), number == 0) {
                (false, false) => push(
                    errors,
                    format!("{here}.service.port"),
                    "Invalid value: \"\": cannot set both port name & port number",
                ),
                (false, true) => port(
                    &service["port"]["name"],
                    &format!("{here}.service.port.name"),
                    errors,
                ),
                (true, false) => port(
                    &service["port"]["number"],
                    &format!("{here}.service.port.number"),
                    errors,
                ),
                (true, true) => push(
                    errors,
                    here,
                    "Required value: port name or number is required",
                ),
            }
        }
        (true, true) => push(
            errors,
            here,
            "Invalid value: \"\": resource or service backend is required",
        ),
    }
}

fn rules(object: &Value, namespaced: bool, errors: &mut Errors) {
    for (i, rule) in items(&object["rules"]) {
        let here = format!("rules[{i}]");
        let empty = |field: &str| rule[field].as_array().is_none_or(Vec::is_empty);
        if empty("verbs") {
            push(
                errors,
                format!("{here}.verbs"),
                "Required value: verbs must contain at least one value",
            );
        }
        if !empty("nonResourceURLs") {
            let urls = &rule["nonResourceURLs"];
            let go = go_strings(urls);
            if namespaced {
                push(
                    errors,
                    format!("{here}.nonResourceURLs"),
                    format!(
                        "Invalid value: {go}: namespaced rules cannot apply to non-resource URLs"
                    ),
                );
            }
            if !empty("apiGroups") || !empty("resources") {
                push(
                    errors,
                    format!("{here}.nonResourceURLs"),
                    format!(
                        "Invalid value: {go}: rules cannot apply to both regular resources and \
                         non-resource URLs"
                    ),
                );
            }
            continue;
        }
        if empty("apiGroups") {
            push(
                errors,
                format!("{here}.apiGroups"),
                "Required value: resource rules must supply at least one api group",
            );
        }
        if empty("resources") {
            push(
                errors,
                format!("{here}.resources"),
                "Required value: resource rules must supply at least one resource",
            );
        }
    }
}

/// A list of strings as Go's `%#v` prints a `[]string`: `[]string{"a", "b"}`.
pub(super) fn go_strings(list: &Value) -> String {
    let each: Vec<&str> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    format!(
        "[]string{{{}}}",
        each.iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn binding(old: Option<&Value>, object: &Value, namespaced: bool, errors: &mut Errors) {
    let role_ref = &object["roleRef"];
    if role_ref["apiGroup"].as_str() != Some(RBAC_GROUP) {
        push(
            errors,
            "roleRef.apiGroup",
            unsupported(&role_ref["apiGroup"], &[RBAC_GROUP]),
        );
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !role_ref["kind"]
        .as_str()
        .is_some_and(|k| kinds.contains(&k))
    {
        push(
            errors,
            "roleRef.kind",
            unsupported(&role_ref["kind"], kinds),
        );
    }
    if role_ref["name"].as_str().unwrap_or_default().is_empty() {
        push(errors, "roleRef.name", "Required value");
    }
    for (i, subject) in items(&object["subjects"]) {
        let here = format!("subjects[{i}]");
        if subject["name"].as_str().unwrap_or_default().is_empty() {
            push(errors, format!("{here}.name"), "Required value");
        }
        match subject["kind"].as_str() {
            Some("ServiceAccount") => {
                let group = subject["apiGroup"].as_str().unwrap_or_default();
                if !group.is_empty() {
                    push(
                        errors,
                        format!("{here}.apiGroup"),
                        unsupported(&subject["apiGroup"], &[""]),
                    );
                }
                if !namespaced && subject["namespace"].as_str().unwrap_or_default().is_empty() {
                    push(errors, format!("{here}.namespace"), "Required value");
                }
            }
            Some("User" | "Group") => {
                if subject["apiGroup"].as_str() != Some(RBAC_GROUP) {
                    push(
                        errors,
                        format!("{here}.apiGroup"),
                        unsupported(&subject["apiGroup"], &[RBAC_GROUP]),
                    );
                }
            }
            _ => push(
                errors,
                format!("{here}.kind"),
                unsupported(&subject["kind"], &["ServiceAccount", "User", "Group"]),
            ),
        }
    }
    if let Some(old) = old
        && old["roleRef"] != object["roleRef"]
    {
        let text = |key: &str| role_ref[key].as_str().unwrap_or_default().to_owned();
        push(
            errors,
            "roleRef",
            format!(
                "Invalid value: rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}: cannot \
                 change roleRef",
                text("apiGroup"),
                text("kind"),
                text("name")
            ),
        );
    }
}

fn endpoints(object: &Value, errors: &mut Errors) {
    for (i, subset) in items(&object["subsets"]) {
        let here = format!("subsets[{i}]");
        for list in ["addresses", "notReadyAddresses"] {
            for (j, address) in items(&subset[list]) {
                let ip = address["ip"].as_str().unwrap_or_default();
                if ip.parse::<std::net::IpAddr>().is_err() {
                    push(
                        errors,
                        format!("{here}.{list}[{j}].ip"),
                        format!(
                            "Invalid value: {ip:?}: must be a valid IP address, (e.g. 10.9.8.7 \
                             or 2001:db8::ffff)"
                        ),
                    );
                }
            }
        }
        for (j, p) in items(&subset["ports"]) {
            let at = format!("{here}.ports[{j}]");
            port(&p["port"], &format!("{at}.port"), errors);
            protocol(&p["protocol"], &format!("{at}.protocol"), errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_except_must_lie_strictly_inside_its_cidr() {
        let c = |t: &str| cidr(t).unwrap_or_else(|| panic!("{t} is a CIDR"));
        assert!(strictly_inside(c("10.1.0.0/16"), c("10.0.0.0/8")));
        assert!(!strictly_inside(c("192.168.0.0/16"), c("10.0.0.0/8")));
        assert!(!strictly_inside(c("10.0.0.0/8"), c("10.0.0.0/8")));
        assert!(strictly_inside(c("fd00::/16"), c("fd00::/8")));
        assert!(cidr("10.0.0.0/33").is_none());
    }

    #[test]
    fn a_cluster_role_binding_needs_a_service_accounts_namespace() {
        let object = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}]});
        let found = errors(RBAC_GROUP, "clusterrolebindings", None, &object);
        let fields: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["roleRef.kind", "subjects[0].namespace"]);
        assert!(errors(RBAC_GROUP, "rolebindings", None, &object).is_empty());
    }
}
