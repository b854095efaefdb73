//! kube-apiserver's validation of the built-in kinds users write most, in its words: what a
//! real cluster refuses, the sandbox refuses too. So far: ConfigMap and Secret keys and value
//! types, a Secret's type fixed once set, a Service's ports, Pods' and workloads' containers
//! and selectors ([`workloads`]), Jobs and CronJobs ([`batch`]), and NetworkPolicies,
//! Ingresses, RBAC objects and Endpoints ([`kinds`]). Other kinds are stored as sent.

mod batch;
mod cron;
mod kinds;
mod workloads;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::registry::ResourceInfo;

/// Refuses `object` (replacing `old`, on an update) where kube-apiserver would.
pub fn builtin(info: &ResourceInfo, old: Option<&Value>, object: &Value) -> Result<()> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if info.custom {
        return Ok(());
    }
    let mut causes = workloads::errors(&info.group, &info.plural, object);
    causes.extend(kinds::errors(&info.group, &info.plural, old, object));
    if info.group == "batch" {
        causes.extend(batch::errors(&info.plural, old, object));
    }
    if !causes.is_empty() {
        let subject = if info.group.is_empty() {
            format!("{} {name:?}", info.kind)
        } else {
            format!("{}.{} {name:?}", info.kind, info.group)
        };
        return Err(Error::InvalidFields { subject, causes });
    }
    if !info.group.is_empty() {
        return Ok(());
    }
    let invalid = |field: String, text: String| {
        Err(Error::Invalid(format!(
            "{} \"{name}\" is invalid: {field}: {text}",
            info.kind
        )))
    };
    match info.plural.as_str() {
        "configmaps" => {
            for field in ["data", "binaryData"] {
                if let Some(key) = bad_key(object, field) {
                    return invalid(format!("{field}[{key}]"), key_text(&key));
                }
            }
            let binary = object["binaryData"].as_object();
            let both = object["data"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(key, _)| key)
                .find(|key| binary.is_some_and(|b| b.contains_key(*key)));
            if let Some(key) = both {
                return invalid(
                    format!("data[{key}]"),
                    format!("Invalid value: {key:?}: duplicate of key present in binaryData"),
                );
            }
        }
        "secrets" => {
            if let Some(key) = bad_key(object, "data") {
                return invalid(format!("data[{key}]"), key_text(&key));
            }
            if let Some(old) = old
                && old["type"] != object["type"]
            {
                let wanted = object["type"].as_str().unwrap_or_default();
                return invalid(
                    "type".to_owned(),
                    format!("Invalid value: {wanted:?}: field is immutable"),
                );
            }
        }
        "services" => {
            let spec = &object["spec"];
            let no_ports = spec["ports"].as_array().is_none_or(Vec::is_empty);
            let external = spec["type"] == "ExternalName";
            let headless = spec["clusterIP"] == "None";
            if no_ports && !external && !headless {
                return invalid("spec.ports".to_owned(), "Required value".to_owned());
            }
        }
        _ => {}
    }
    Ok(())
}

/// `Unsupported value: "x": supported values: "a", "b"`.
fn unsupported(value: &Value, supported: &[&str]) -> String {
    let listed: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    format!(
        "Unsupported value: {value}: supported values: {}",
        listed.join(", ")
    )
}

/// Refuses, before anything else, a ConfigMap or Secret whose data holds a value that is not
/// a string, in words close to Go's decoder (whose message names the byte offset).
pub fn decodable(info: &ResourceInfo, object: &Value) -> Result<()> {
    if info.custom {
        return Ok(());
    }
    if (info.group.as_str(), info.plural.as_str()) == ("apps", "daemonsets") {
        return template_generation(object);
    }
    if !info.group.is_empty() {
        return Ok(());
    }
    match info.plural.as_str() {
        "configmaps" => {
            strings(info, object, "data")?;
            strings(info, object, "binaryData")
        }
        "secrets" => strings(info, object, "data"),
        _ => Ok(()),
    }
}

/// A DaemonSet's template generation annotation is a number, or apps/v1's conversion
/// cannot read the DaemonSet (a 400).
fn template_generation(object: &Value) -> Result<()> {
    let annotation = &object["metadata"]["annotations"][crate::defaults::TEMPLATE_GENERATION];
    match annotation.as_str() {
        Some(text) if text.parse::<i64>().is_err() => Err(Error::BadRequest(format!(
            "DaemonSet in version \"v1\" cannot be handled as a DaemonSet: strconv.ParseInt: \
             parsing {text:?}: invalid syntax"
        ))),
        _ => Ok(()),
    }
}

/// Every value of map `field` is a string, or the body cannot be decoded (a 400 before any
/// validation, as Go's decoder fails).
fn strings(info: &ResourceInfo, object: &Value, field: &str) -> Result<()> {
    let wrong = object[field]
        .as_object()
        .into_iter()
        .flatten()
        .find(|(_, value)| !value.is_string() && !value.is_null());
    match wrong {
        None => Ok(()),
        Some((key, value)) => Err(Error::BadRequest(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: v1.{kind}.{upper}: ReadString: \
             expects \" or n, but found {value} (key {key:?})",
            kind = info.kind,
            upper = capitalised(field),
        ))),
    }
}

fn capitalised(field: &str) -> String {
    let mut chars = field.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The first key of map `field` that is not a valid config key.
fn bad_key(object: &Value, field: &str) -> Option<String> {
    object[field]
        .as_object()?
        .keys()
        .find(|key| !valid_key(key))
        .cloned()
}

/// `[-._a-zA-Z0-9]+`, at most 253 characters, and neither `.` nor `..`.
fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key != "."
        && key != ".."
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn key_text(key: &str) -> String {
    format!(
        "Invalid value: {key:?}: a valid config key must consist of alphanumeric characters, \
         '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for \
         validation is '[-._a-zA-Z0-9]+')"
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    fn check(plural: &str, old: Option<Value>, object: Value) -> Result<()> {
        let registry = Registry::builtin();
        let info = registry.get("", "v1", plural).unwrap();
        builtin(&info, old.as_ref(), &object)
    }

    #[test]
    fn what_kube_apiserver_refuses_is_refused_in_its_words() {
        let cm = |data: Value| json!({"metadata": {"name": "c"}, "data": data});
        assert!(check("configmaps", None, cm(json!({"a.b-c_D": "x"}))).is_ok());
        let bad = check("configmaps", None, cm(json!({"bad key!": "x"}))).unwrap_err();
        assert!(
            bad.to_string()
                .starts_with("ConfigMap \"c\" is invalid: data[bad key!]: Invalid value: \"bad key!\": a valid config key"),
            "{bad}"
        );
        let registry = Registry::builtin();
        let configmaps = registry.get("", "v1", "configmaps").unwrap();
        let number = decodable(&configmaps, &cm(json!({"a": 1}))).unwrap_err();
        assert!(matches!(number, Error::BadRequest(_)), "{number}");
        let daemon_sets = registry.get("apps", "v1", "daemonsets").unwrap();
        let unreadable = json!({"metadata": {"name": "d", "annotations": {
            "deprecated.daemonset.template.generation": "two"}}});
        assert_eq!(
            decodable(&daemon_sets, &unreadable)
                .unwrap_err()
                .to_string(),
            "DaemonSet in version \"v1\" cannot be handled as a DaemonSet: strconv.ParseInt: \
             parsing \"two\": invalid syntax"
        );
        let secret = |kind: &str| json!({"metadata": {"name": "s"}, "type": kind});
        let changed =
            check("secrets", Some(secret("Opaque")), secret("example.com/x")).unwrap_err();
        assert_eq!(
            changed.to_string(),
            "Secret \"s\" is invalid: type: Invalid value: \"example.com/x\": field is immutable"
        );
        let service = |spec: Value| json!({"metadata": {"name": "s"}, "spec": spec});
        assert_eq!(
            check("services", None, service(json!({"selector": {"a": "b"}})))
                .unwrap_err()
                .to_string(),
            "Service \"s\" is invalid: spec.ports: Required value"
        );
        assert!(
            check(
                "services",
                None,
                service(json!({"type": "ExternalName", "externalName": "x"}))
            )
            .is_ok()
        );
        assert!(check("services", None, service(json!({"clusterIP": "None"}))).is_ok());
    }
}
