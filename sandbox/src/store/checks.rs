//! Checks and error words shared by the store's operations.

use super::*;

pub(super) fn not_found(info: &ResourceInfo, name: &str) -> Error {
    Error::NotFound(format!("{} \"{name}\" not found", info.qualified()))
}

pub(super) fn conflict(info: &ResourceInfo, name: &str) -> Error {
    Error::Conflict {
        message: format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            info.qualified()
        ),
        fields: Vec::new(),
    }
}

pub(super) fn namespaces_gr() -> GroupResource {
    GroupResource {
        group: String::new(),
        resource: "namespaces".into(),
    }
}

pub(super) fn is_crd(info: &ResourceInfo) -> bool {
    info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions"
}

/// `Kind` (core) or `Kind.group`: how kube-apiserver names a kind in validation and
/// precondition messages.
pub fn qualified_kind(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.kind.clone()
    } else {
        format!("{}.{}", info.kind, info.group)
    }
}

/// 422 unless `name` suits the kind (Namespaces: DNS-1123 label; Services: DNS-1035
/// label; everything else: DNS-1123 subdomain).
pub(super) fn validate_name(info: &ResourceInfo, name: &str) -> Result<()> {
    if info.plural == "customresourcedefinitions" {
        return Ok(());
    }
    let invalid = |why: &str| {
        Err(Error::Invalid(format!(
            "{} \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": {why}",
            qualified_kind(info)
        )))
    };
    if info.group == crate::auth::RBAC_GROUP {
        // RBAC names are path segments (`system:discovery`).
        return match name {
            "." | ".." => invalid(&format!("may not be '{name}'")),
            _ if name.contains('/') => invalid("may not contain '/'"),
            _ if name.contains('%') => invalid("may not contain '%'"),
            _ => Ok(()),
        };
    }
    let (valid, limit, rule) = match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => (meta::is_dns1123_label(name), 63, meta::DNS1123_LABEL_RULE),
        ("", "services") => (meta::is_dns1035_label(name), 63, meta::DNS1035_LABEL_RULE),
        _ => (
            meta::is_dns1123_subdomain(name),
            253,
            meta::DNS1123_SUBDOMAIN_RULE,
        ),
    };
    if valid {
        return Ok(());
    }
    if name.len() > limit {
        invalid(&format!("must be no more than {limit} characters"))
    } else {
        invalid(rule)
    }
}

/// 422 on the first label whose key or value kube-apiserver would refuse.
pub(super) fn validate_labels(info: &ResourceInfo, name: &str, obj: &Value) -> Result<()> {
    let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, value) in labels {
        let problem = match (meta::label_key_problem(key), value.as_str()) {
            (Some(problem), _) => format!("\"{key}\": {problem}"),
            (None, Some(text)) if !meta::is_label_value(text) => {
                format!("\"{text}\": {}", meta::LABEL_VALUE_RULE)
            }
            _ => continue,
        };
        return Err(Error::Invalid(format!(
            "{} \"{name}\" is invalid: metadata.labels: Invalid value: {problem}",
            qualified_kind(info)
        )));
    }
    Ok(())
}
