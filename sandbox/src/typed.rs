//! Built-in objects decoded as kube-apiserver decodes them into their Go types: a value of
//! the wrong type is refused (400), and a field the type does not have is dropped, told as a
//! warning, or refused, as the request's `fieldValidation` says. The types are
//! k8s-openapi's, which read what the Go types read; the object kept is the one written, less
//! the fields the type skipped while reading it (a round trip through the typed value would
//! rewrite what it keeps, and costs a second copy of the object).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::registry::ResourceInfo;

/// What to do with fields the schema does not know (`fieldValidation`; `Warn` unless said).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and say so in `Warning` headers.
    #[default]
    Warn,
    /// Refuse the write.
    Strict,
}

impl FieldValidation {
    /// Reads the `fieldValidation` query parameter.
    pub fn parse(value: Option<&str>) -> Result<Self> {
        match value.unwrap_or_default() {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(Error::BadRequest(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \
                 \"Strict\", \"Warn\""
            ))),
        }
    }
}

/// Reads an object as a built-in type would: the paths of the fields it skipped, or why it
/// cannot be read.
type Read = fn(&Value) -> std::result::Result<Vec<Path>, serde_json::Error>;

/// Where a field is in an object: its keys and list indices from the top.
type Path = Vec<Step>;

/// One step of a [`Path`].
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

fn read_as<T: serde::de::DeserializeOwned>(
    object: &Value,
) -> std::result::Result<Vec<Path>, serde_json::Error> {
    let mut skipped = Vec::new();
    let _: T = serde_ignored::deserialize(object, |path| skipped.push(steps(&path)))?;
    Ok(skipped)
}

/// The steps of a path as serde_ignored gives it (leaf first, each step naming its parent).
fn steps(path: &serde_ignored::Path) -> Path {
    use serde_ignored::Path as P;
    let mut steps = Vec::new();
    let mut at = path;
    loop {
        at = match at {
            P::Root => break,
            P::Seq { parent, index } => {
                steps.push(Step::Index(*index));
                parent
            }
            P::Map { parent, key } => {
                steps.push(Step::Key(key.clone()));
                parent
            }
            P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
                parent
            }
        };
    }
    steps.reverse();
    steps
}

/// How Go's strict decoder writes a path: `spec.template.spec.containers[0].imagePullPolice`.
fn go_path(path: &[Step]) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    for step in path {
        match step {
            Step::Key(key) if text.is_empty() => text.push_str(key),
            Step::Key(key) => {
                text.push('.');
                text.push_str(key);
            }
            Step::Index(index) => {
                let _ = write!(text, "[{index}]");
            }
        }
    }
    text
}

/// Removes the field at `path` from `object` unless it is null (Go keeps a null it skips);
/// whether it removed it.
fn remove(object: &mut Value, path: &[Step]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut at = object;
    for step in parents {
        let next = match step {
            Step::Key(key) => at.get_mut(key.as_str()),
            Step::Index(index) => at.get_mut(*index),
        };
        let Some(next) = next else { return false };
        at = next;
    }
    match (at, last) {
        (Value::Object(fields), Step::Key(key))
            if fields.get(key).is_some_and(|v| !v.is_null()) =>
        {
            fields.shift_remove(key).is_some()
        }
        _ => false,
    }
}

macro_rules! kinds {
    ($(($group:literal, $version:literal, $kind:literal) => $ty:ty,)*) => {
        /// How built-in kind `group/version kind` is read, if it is one.
        fn typed(group: &str, version: &str, kind: &str) -> Option<Read> {
            match (group, version, kind) {
                $(($group, $version, $kind) => Some(read_as::<$ty>),)*
                _ => None,
            }
        }
    };
}

use k8s_openapi::api;
kinds! {
    ("", "v1", "ConfigMap") => api::core::v1::ConfigMap,
    ("", "v1", "Secret") => api::core::v1::Secret,
    ("", "v1", "Service") => api::core::v1::Service,
    ("", "v1", "Pod") => api::core::v1::Pod,
    ("", "v1", "Namespace") => api::core::v1::Namespace,
    ("", "v1", "ServiceAccount") => api::core::v1::ServiceAccount,
    ("", "v1", "Endpoints") => api::core::v1::Endpoints,
    ("", "v1", "PersistentVolumeClaim") => api::core::v1::PersistentVolumeClaim,
    ("", "v1", "PersistentVolume") => api::core::v1::PersistentVolume,
    ("", "v1", "ResourceQuota") => api::core::v1::ResourceQuota,
    ("", "v1", "LimitRange") => api::core::v1::LimitRange,
    ("", "v1", "ReplicationController") => api::core::v1::ReplicationController,
    ("", "v1", "PodTemplate") => api::core::v1::PodTemplate,
    ("apps", "v1", "Deployment") => api::apps::v1::Deployment,
    ("apps", "v1", "StatefulSet") => api::apps::v1::StatefulSet,
    ("apps", "v1", "DaemonSet") => api::apps::v1::DaemonSet,
    ("apps", "v1", "ReplicaSet") => api::apps::v1::ReplicaSet,
    ("batch", "v1", "Job") => api::batch::v1::Job,
    ("batch", "v1", "CronJob") => api::batch::v1::CronJob,
    ("networking.k8s.io", "v1", "NetworkPolicy") => api::networking::v1::NetworkPolicy,
    ("networking.k8s.io", "v1", "Ingress") => api::networking::v1::Ingress,
    ("networking.k8s.io", "v1", "IngressClass") => api::networking::v1::IngressClass,
    ("rbac.authorization.k8s.io", "v1", "Role") => api::rbac::v1::Role,
    ("rbac.authorization.k8s.io", "v1", "ClusterRole") => api::rbac::v1::ClusterRole,
    ("rbac.authorization.k8s.io", "v1", "RoleBinding") => api::rbac::v1::RoleBinding,
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding") => api::rbac::v1::ClusterRoleBinding,
    ("policy", "v1", "PodDisruptionBudget") => api::policy::v1::PodDisruptionBudget,
    ("autoscaling", "v2", "HorizontalPodAutoscaler") => api::autoscaling::v2::HorizontalPodAutoscaler,
    ("storage.k8s.io", "v1", "StorageClass") => api::storage::v1::StorageClass,
    ("scheduling.k8s.io", "v1", "PriorityClass") => api::scheduling::v1::PriorityClass,
    ("coordination.k8s.io", "v1", "Lease") => api::coordination::v1::Lease,
    ("discovery.k8s.io", "v1", "EndpointSlice") => api::discovery::v1::EndpointSlice,
    ("storage.k8s.io", "v1", "CSIDriver") => api::storage::v1::CSIDriver,
    ("storage.k8s.io", "v1", "CSINode") => api::storage::v1::CSINode,
    ("storage.k8s.io", "v1", "VolumeAttachment") => api::storage::v1::VolumeAttachment,
    ("storage.k8s.io", "v1", "CSIStorageCapacity") => api::storage::v1::CSIStorageCapacity,
    ("node.k8s.io", "v1", "RuntimeClass") => api::node::v1::RuntimeClass,
    ("certificates.k8s.io", "v1", "CertificateSigningRequest") => api::certificates::v1::CertificateSigningRequest,
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration") => api::admissionregistration::v1::MutatingWebhookConfiguration,
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration") => api::admissionregistration::v1::ValidatingWebhookConfiguration,
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy") => api::admissionregistration::v1::ValidatingAdmissionPolicy,
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding") => api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema") => api::flowcontrol::v1::FlowSchema,
    ("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration") => api::flowcontrol::v1::PriorityLevelConfiguration,
}

/// Decodes `object` as kind `info` would be: a built-in kind refuses a value of the wrong type
/// and drops the fields its type does not have, a custom resource is pruned and defaulted by
/// its schema; returns the dropped fields' paths as Go's strict decoder names them
/// (`spec.template.spec.containers[0].imagePullPolice`). Other kinds pass unchanged.
pub fn decode(info: &ResourceInfo, object: &mut Value) -> Result<Vec<String>> {
    if info.custom {
        // A custom resource is pruned and defaulted by its structural schema as it is decoded,
        // as kube-apiserver's decoder does; its unknown fields are those pruned.
        return Ok(info
            .schema
            .as_ref()
            .map(|schema| crate::structural::admit(schema, object))
            .unwrap_or_default());
    }
    let Some(read) = typed(&info.group, &info.version, &info.kind) else {
        return Ok(Vec::new());
    };
    let skipped = read(object).map_err(|e| {
        let kind = &info.kind;
        Error::BadRequest(format!(
            "{kind} in version {:?} cannot be handled as a {kind}: {e}",
            info.version
        ))
    })?;
    Ok(skipped
        .iter()
        .filter(|path| remove(object, path))
        .map(|path| go_path(path))
        .collect())
}

/// Decodes `object` as [`decode`] does and applies `validation` to its unknown fields:
/// refused under `Strict`, returned as warnings under `Warn`.
pub fn admit(
    info: &ResourceInfo,
    object: &mut Value,
    validation: FieldValidation,
) -> Result<Vec<String>> {
    let unknown = decode(info, object)?;
    match validation {
        _ if unknown.is_empty() => Ok(unknown),
        FieldValidation::Strict => Err(strict_error(info, &unknown)),
        FieldValidation::Warn => Ok(unknown.iter().map(|f| unknown_field(f)).collect()),
        FieldValidation::Ignore => Ok(Vec::new()),
    }
}

/// How Go's strict decoder names an unknown field: `unknown field "spec.replica"`.
fn unknown_field(path: &str) -> String {
    format!("unknown field {path:?}")
}

/// The refusal of a write with unknown fields under `Strict`.
pub fn strict_error(info: &ResourceInfo, unknown: &[String]) -> Error {
    let fields: Vec<String> = unknown.iter().map(|f| unknown_field(f)).collect();
    let kind = &info.kind;
    Error::BadRequest(format!(
        "{kind} in version {:?} cannot be handled as a {kind}: strict decoding error: {}",
        info.version,
        fields.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> ResourceInfo {
        let store = crate::store::Store::new();
        let info = store.resolve("apps", "v1", "deployments").expect("served");
        (*info).clone()
    }

    #[test]
    fn unknown_fields_are_dropped_and_named_as_go_names_them() {
        let mut object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"any": "label"}, "colour": "red"},
            "spec": {"replicas": 2, "replica": 3, "shade": null,
                     "selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [
                                      {"name": "c", "image": "x", "imagePullPolice": "Always"}]}}},
            "status": null,
        });
        let unknown = decode(&deployment(), &mut object).expect("well typed");
        assert_eq!(
            unknown,
            [
                "metadata.colour",
                "spec.replica",
                "spec.template.spec.containers[0].imagePullPolice"
            ]
        );
        assert_eq!(object["spec"]["replicas"], 2);
        assert!(object["spec"].get("replica").is_none());
        assert_eq!(object["metadata"]["labels"]["any"], "label");
        assert!(
            object["spec"]["template"]["spec"]["containers"][0]
                .get("imagePullPolice")
                .is_none()
        );
        // An unknown null is kept and not told, as Go's decoder does.
        assert!(object["spec"].get("shade").is_some_and(Value::is_null));
        // What the type knows is kept as written (an absent list is not filled in).
        assert!(object["spec"]["template"]["spec"].get("volumes").is_none());
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused() {
        let mut object = json!({"spec": {"replicas": "two"}});
        let error = decode(&deployment(), &mut object).expect_err("replicas is an integer");
        assert!(
            error
                .to_string()
                .starts_with("Deployment in version \"v1\" cannot be handled as a Deployment: "),
            "{error}"
        );
        assert_eq!(error.code(), 400);
    }

    #[test]
    fn strictness_is_read_from_the_query_and_refuses_in_go_words() {
        assert_eq!(
            FieldValidation::parse(None).ok(),
            Some(FieldValidation::Warn)
        );
        assert_eq!(
            FieldValidation::parse(Some("Strict")).ok(),
            Some(FieldValidation::Strict)
        );
        assert!(FieldValidation::parse(Some("strict")).is_err());
        let error = strict_error(&deployment(), &["spec.replica".into(), "spec.x".into()]);
        assert_eq!(
            error.to_string(),
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding \
             error: unknown field \"spec.replica\", unknown field \"spec.x\""
        );
    }
}
