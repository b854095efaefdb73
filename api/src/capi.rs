//! Cluster API `Cluster`s as Sveltos reads them: any served version of `cluster.x-k8s.io`,
//! read as JSON (no Cluster API types are compiled in), their readiness, pause and kubeconfig.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::MissingKubeconfigKey;
use crate::labels::CAPI_PAUSED_ANNOTATION;

/// API group of Cluster API.
pub const GROUP: &str = "cluster.x-k8s.io";
/// Kind of a Cluster API cluster.
pub const KIND: &str = "Cluster";
/// Plural resource name of [`KIND`].
pub const PLURAL: &str = "clusters";
/// Name of the CustomResourceDefinition of Cluster API clusters.
pub const CRD_NAME: &str = "clusters.cluster.x-k8s.io";
/// Key of the kubeconfig in a Cluster API kubeconfig Secret.
pub const KUBECONFIG_KEY: &str = "value";

/// Name of the Secret (in the cluster's namespace) Cluster API writes a cluster's kubeconfig
/// into: `<cluster>-kubeconfig`.
pub fn kubeconfig_secret_name(cluster: &str) -> String {
    format!("{cluster}-kubeconfig")
}

/// The kubeconfig in a Cluster API kubeconfig Secret's `data` (key `value`).
pub fn kubeconfig_from_secret(
    data: &BTreeMap<String, ByteString>,
) -> Result<&[u8], MissingKubeconfigKey> {
    data.get(KUBECONFIG_KEY)
        .map(|b| b.0.as_slice())
        .ok_or_else(|| MissingKubeconfigKey {
            keys: KUBECONFIG_KEY.to_owned(),
        })
}

/// The version of Cluster API clusters to read from their CRD: the stored one when it is
/// served, else the first served one; `None` when no version is served.
pub fn served_version(crd: &CustomResourceDefinition) -> Option<String> {
    let versions = &crd.spec.versions;
    versions
        .iter()
        .find(|v| v.served && v.storage)
        .or_else(|| versions.iter().find(|v| v.served))
        .map(|v| v.name.clone())
}

/// A Cluster API `Cluster` object, read field by field.
#[derive(Debug, Clone, Copy)]
pub struct CapiCluster<'a>(pub &'a Value);

impl<'a> CapiCluster<'a> {
    fn text(&self, pointer: &str) -> &'a str {
        self.0
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> &'a str {
        self.text("/metadata/namespace")
    }

    /// `metadata.name`.
    pub fn name(&self) -> &'a str {
        self.text("/metadata/name")
    }

    /// `metadata.labels` (string values only).
    pub fn labels(&self) -> BTreeMap<String, String> {
        string_map(self.0.pointer("/metadata/labels"))
    }

    /// `metadata.annotations` (string values only).
    pub fn annotations(&self) -> BTreeMap<String, String> {
        string_map(self.0.pointer("/metadata/annotations"))
    }

    /// Whether annotation `key` is set.
    pub fn has_annotation(&self, key: &str) -> bool {
        self.0
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .is_some_and(|a| a.contains_key(key))
    }

    /// `spec.paused`, or Cluster API's paused annotation.
    pub fn paused(&self) -> bool {
        self.0
            .pointer("/spec/paused")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || self.has_annotation(CAPI_PAUSED_ANNOTATION)
    }

    /// Whether the control plane is initialised: `status.initialization.controlPlaneInitialized`
    /// (v1beta2) or condition `ControlPlaneInitialized` true (v1beta1).
    pub fn control_plane_initialized(&self) -> bool {
        let initialized = self
            .0
            .pointer("/status/initialization/controlPlaneInitialized")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        initialized
            || self
                .0
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|conditions| {
                    conditions.iter().any(|c| {
                        c.get("type").and_then(Value::as_str) == Some("ControlPlaneInitialized")
                            && c.get("status").and_then(Value::as_str) == Some("True")
                    })
                })
    }

    /// Whether the cluster is being deleted.
    pub fn deleting(&self) -> bool {
        self.0
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
    }

    /// Ready (control plane initialised) and not being deleted: the only Cluster API clusters
    /// selectors may match.
    pub fn selectable(&self) -> bool {
        self.control_plane_initialized() && !self.deleting()
    }
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn cluster(status: Value, spec: Value) -> Value {
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "w", "namespace": "default", "labels": {"env": "fv"}},
            "spec": spec, "status": status
        })
    }

    #[test]
    fn ready_when_the_control_plane_is_initialized_in_either_version() {
        let v1beta1 = cluster(
            json!({"conditions": [{"type": "ControlPlaneInitialized", "status": "True"}]}),
            json!({}),
        );
        let v1beta2 = cluster(
            json!({"initialization": {"controlPlaneInitialized": true}}),
            json!({}),
        );
        let pending = cluster(
            json!({"conditions": [{"type": "ControlPlaneInitialized", "status": "False"}]}),
            json!({}),
        );
        assert!(CapiCluster(&v1beta1).selectable());
        assert!(CapiCluster(&v1beta2).selectable());
        assert!(!CapiCluster(&pending).selectable());
        assert_eq!(CapiCluster(&v1beta1).labels()["env"], "fv");
        assert_eq!(CapiCluster(&v1beta1).name(), "w");
    }

    #[test]
    fn paused_by_spec_or_annotation() {
        let by_spec = cluster(json!({}), json!({"paused": true}));
        let mut by_annotation = cluster(json!({}), json!({}));
        by_annotation["metadata"]["annotations"] = json!({CAPI_PAUSED_ANNOTATION: ""});
        assert!(CapiCluster(&by_spec).paused());
        assert!(CapiCluster(&by_annotation).paused());
        assert!(!CapiCluster(&cluster(json!({}), json!({}))).paused());
    }

    #[test]
    fn reads_the_stored_served_version() {
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": {"name": CRD_NAME},
            "spec": {"group": GROUP, "scope": "Namespaced",
                "names": {"plural": "clusters", "kind": "Cluster"},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false},
                    {"name": "v1beta2", "served": true, "storage": true},
                ]}
        }))
        .unwrap();
        assert_eq!(served_version(&crd).as_deref(), Some("v1beta2"));
        assert_eq!(kubeconfig_secret_name("w"), "w-kubeconfig");
    }
}
