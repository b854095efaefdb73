//! The resource registry: which resources a cluster serves (built-ins and CRDs).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Identity of stored objects: API group and plural resource name (versions share storage).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    /// API group ("" for the core group).
    pub group: String,
    /// Plural resource name.
    pub resource: String,
}

/// Description of one served resource at one version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// API group ("" for core).
    pub group: String,
    /// Version (`v1`).
    pub version: String,
    /// Plural name (`configmaps`).
    pub plural: String,
    /// Singular name (`configmap`).
    pub singular: String,
    /// Kind (`ConfigMap`).
    pub kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names (`cm`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Whether the `/status` subresource exists.
    pub status: bool,
    /// Whether the `/scale` subresource exists.
    pub scale: bool,
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
    /// Custom resource (no strategic merge patch).
    pub custom: bool,
    /// OpenAPI v3 schema of the kind (CRDs only).
    pub schema: Option<Value>,
    /// Printer columns of a CRD (`additionalPrinterColumns`).
    pub printer_columns: Vec<Value>,
    /// The CRD converts between its versions with a webhook (strategy `Webhook`).
    pub conversion_webhook: bool,
    /// The version objects are stored in, when another than this one and converted by the
    /// webhook (writes in this version are converted to it, as kube-apiserver stores them).
    pub storage_version: Option<String>,
    /// Where that webhook is called (`conversion.webhook.clientConfig`).
    pub webhook: Option<std::sync::Arc<crate::webhook::ClientConfig>>,
}

impl ResourceInfo {
    /// `apiVersion` string (`v1`, `apps/v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Storage identity.
    pub fn group_resource(&self) -> GroupResource {
        if crate::events::is_events_api(self) {
            return crate::events::storage();
        }
        GroupResource {
            group: self.group.clone(),
            resource: self.plural.clone(),
        }
    }

    /// `configmaps` or `deployments.apps`, as used in error messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// All resources served by one cluster, keyed by (group, version, plural).
#[derive(Debug, Clone, Default)]
pub struct Registry {
    by_gvr: BTreeMap<(String, String, String), Arc<ResourceInfo>>,
}

/// Built-in resources: (group, version, plural, kind, namespaced, shortnames, status, scale,
/// generation, categories).
type Builtin = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    bool,
    bool,
    bool,
    &'static [&'static str],
);

const BUILTINS: &[Builtin] = &[
    (
        "",
        "v1",
        "namespaces",
        "Namespace",
        false,
        &["ns"],
        true,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "configmaps",
        "ConfigMap",
        true,
        &["cm"],
        false,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "secrets",
        "Secret",
        true,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        true,
        &["sa"],
        false,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "services",
        "Service",
        true,
        &["svc"],
        true,
        false,
        false,
        &["all"],
    ),
    (
        "",
        "v1",
        "endpoints",
        "Endpoints",
        true,
        &["ep"],
        false,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "events",
        "Event",
        true,
        &["ev"],
        false,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "pods",
        "Pod",
        true,
        &["po"],
        true,
        false,
        false,
        &["all"],
    ),
    (
        "",
        "v1",
        "nodes",
        "Node",
        false,
        &["no"],
        true,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        true,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        true,
        &["quota"],
        true,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "limitranges",
        "LimitRange",
        true,
        &["limits"],
        false,
        false,
        false,
        &[],
    ),
    (
        "apps",
        "v1",
        "deployments",
        "Deployment",
        true,
        &["deploy"],
        true,
        true,
        true,
        &["all"],
    ),
    (
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        true,
        &["sts"],
        true,
        true,
        true,
        &["all"],
    ),
    (
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        true,
        &["rs"],
        true,
        true,
        true,
        &["all"],
    ),
    (
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        true,
        &["ds"],
        true,
        false,
        true,
        &["all"],
    ),
    (
        "batch",
        "v1",
        "jobs",
        "Job",
        true,
        &[],
        true,
        false,
        true,
        &["all"],
    ),
    (
        "batch",
        "v1",
        "cronjobs",
        "CronJob",
        true,
        &["cj"],
        true,
        false,
        true,
        &["all"],
    ),
    (
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        true,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        true,
        &["ev"],
        false,
        false,
        false,
        &[],
    ),
    (
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
        &["netpol"],
        false,
        false,
        true,
        &[],
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        true,
        &["ing"],
        true,
        false,
        true,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        true,
        false,
        true,
        &[],
    ),
    (
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
        &["hpa"],
        true,
        false,
        false,
        &["all"],
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        true,
        false,
        true,
        &[],
    ),
    (
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
        &["rc"],
        true,
        true,
        true,
        &["all"],
    ),
    (
        "",
        "v1",
        "podtemplates",
        "PodTemplate",
        true,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        &["pv"],
        true,
        false,
        false,
        &[],
    ),
    (
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        true,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
        &["hpa"],
        true,
        false,
        false,
        &["all"],
    ),
    (
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        true,
        &[],
        false,
        false,
        true,
        &[],
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        false,
        &[],
        false,
        false,
        true,
        &[],
    ),
    (
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
        &["sc"],
        false,
        false,
        false,
        &[],
    ),
    (
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "CSIDriver",
        false,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "storage.k8s.io",
        "v1",
        "csinodes",
        "CSINode",
        false,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        false,
        &[],
        true,
        false,
        false,
        &[],
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
        &["pc"],
        false,
        false,
        false,
        &[],
    ),
    (
        "node.k8s.io",
        "v1",
        "runtimeclasses",
        "RuntimeClass",
        false,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
        &[],
        false,
        false,
        true,
        &["api-extensions"],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
        &[],
        false,
        false,
        true,
        &["api-extensions"],
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        false,
        &[],
        true,
        false,
        false,
        &["api-extensions"],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        false,
        &[],
        true,
        false,
        true,
        &["api-extensions"],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        false,
        &[],
        false,
        false,
        true,
        &["api-extensions"],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "flowschemas",
        "FlowSchema",
        false,
        &[],
        true,
        false,
        true,
        &[],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        false,
        &[],
        true,
        false,
        true,
        &[],
    ),
    (
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        "CSIStorageCapacity",
        true,
        &[],
        false,
        false,
        false,
        &[],
    ),
    (
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        false,
        &["csr"],
        true,
        false,
        false,
        &[],
    ),
];

impl Registry {
    /// The registry of a fresh cluster: all built-in resources.
    pub fn builtin() -> Self {
        let mut reg = Registry::default();
        for &(group, version, plural, kind, namespaced, short, status, scale, generation, cats) in
            BUILTINS
        {
            reg.insert(ResourceInfo {
                group: group.into(),
                version: version.into(),
                plural: plural.into(),
                singular: kind.to_ascii_lowercase(),
                kind: kind.into(),
                namespaced,
                short_names: short.iter().map(|s| (*s).to_owned()).collect(),
                categories: cats.iter().map(|s| (*s).to_owned()).collect(),
                status,
                scale,
                generation,
                custom: false,
                conversion_webhook: false,
                storage_version: None,
                webhook: None,
                schema: None,
                printer_columns: Vec::new(),
            });
        }
        reg
    }

    /// Add or replace a resource.
    pub fn insert(&mut self, info: ResourceInfo) {
        let key = (
            info.group.clone(),
            info.version.clone(),
            info.plural.clone(),
        );
        self.by_gvr.insert(key, Arc::new(info));
    }

    /// Remove every version of a group resource.
    pub fn remove(&mut self, gr: &GroupResource) {
        self.by_gvr
            .retain(|(g, _, p), _| !(g == &gr.group && p == &gr.resource));
    }

    /// Look a resource up by group, version and plural.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.by_gvr
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .cloned()
    }

    /// Any served version of a group resource.
    pub fn by_group_resource(&self, gr: &GroupResource) -> Option<&Arc<ResourceInfo>> {
        self.all()
            .find(|r| r.group == gr.group && r.plural == gr.resource)
    }

    /// Every served resource, ordered by group, version, plural.
    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.by_gvr.values()
    }

    /// Served group versions: (group, versions in preference order).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for (g, v, _) in self.by_gvr.keys() {
            match out.iter_mut().find(|(og, _)| og == g) {
                Some((_, vs)) if !vs.contains(v) => vs.push(v.clone()),
                Some(_) => {}
                None => out.push((g.clone(), vec![v.clone()])),
            }
        }
        for (_, vs) in &mut out {
            vs.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        }
        out
    }

    /// Apply a CRD object: register its served versions. Returns the storage identity.
    pub fn apply_crd(&mut self, crd: &Value) -> Option<GroupResource> {
        let spec = crd.get("spec")?;
        let group = spec.get("group")?.as_str()?.to_owned();
        let names = spec.get("names")?;
        let plural = names.get("plural")?.as_str()?.to_owned();
        let kind = names.get("kind")?.as_str()?.to_owned();
        let singular = names
            .get("singular")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| kind.to_ascii_lowercase());
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let short_names = strings(names.get("shortNames"));
        let categories = strings(names.get("categories"));
        let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
        let conversion_webhook =
            spec.pointer("/conversion/strategy").and_then(Value::as_str) == Some("Webhook");
        let storage = spec
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .and_then(|v| v.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let webhook = conversion_webhook
            .then(|| crate::webhook::ClientConfig::of_crd(spec))
            .flatten()
            .map(std::sync::Arc::new);
        let gr = GroupResource {
            group: group.clone(),
            resource: plural.clone(),
        };
        self.remove(&gr);
        for v in spec.get("versions")?.as_array()? {
            if v.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let Some(version) = v.get("name").and_then(Value::as_str) else {
                continue;
            };
            let subs = v.get("subresources");
            self.insert(ResourceInfo {
                group: group.clone(),
                version: version.to_owned(),
                plural: plural.clone(),
                singular: singular.clone(),
                kind: kind.clone(),
                namespaced,
                short_names: short_names.clone(),
                categories: categories.clone(),
                status: subs.and_then(|s| s.get("status")).is_some(),
                scale: subs.and_then(|s| s.get("scale")).is_some(),
                generation: true,
                custom: true,
                conversion_webhook,
                storage_version: storage
                    .clone()
                    .filter(|s| conversion_webhook && s != version),
                webhook: webhook.clone(),
                schema: v
                    .get("schema")
                    .and_then(|s| s.get("openAPIV3Schema"))
                    .cloned(),
                printer_columns: v
                    .get("additionalPrinterColumns")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            });
        }
        Some(gr)
    }
}

/// Kubernetes version priority: GA > beta > alpha, higher numbers first.
fn version_priority(v: &str) -> (u8, u32, u32) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let level_num = |t: &str| t.parse::<u32>().unwrap_or(0);
    if tail.is_empty() {
        (3, major, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, major, level_num(n))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, major, level_num(n))
    } else {
        (0, major, 0)
    }
}

/// The status written into a CRD once its names are accepted and it is established.
pub fn crd_status(crd: &Value) -> Value {
    crd_status_after(None, crd)
}

/// The status of a CRD written over `old_status`, as the apiextensions controllers keep it: a
/// condition whose status stays keeps its `lastTransitionTime`, and `storedVersions` only
/// grows (a version stays listed until a user removes it). So a write that changes nothing
/// leaves the CRD as it was.
pub fn crd_status_after(old_status: Option<&Value>, crd: &Value) -> Value {
    let mut status = fresh_crd_status(crd);
    let Some(old) = old_status else {
        return status;
    };
    if let Some(conditions) = status["conditions"].as_array_mut() {
        for condition in conditions {
            let kept = old["conditions"].as_array().and_then(|olds| {
                olds.iter()
                    .find(|o| o["type"] == condition["type"] && o["status"] == condition["status"])
            });
            if let Some(kept) = kept {
                condition["lastTransitionTime"] = kept["lastTransitionTime"].clone();
            }
        }
    }
    if let Some(old_stored) = old["storedVersions"].as_array() {
        let mut stored = old_stored.clone();
        for version in status["storedVersions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            if !stored.contains(&version) {
                stored.push(version);
            }
        }
        status["storedVersions"] = Value::Array(stored);
    }
    status
}

fn fresh_crd_status(crd: &Value) -> Value {
    let names = crd
        .get("spec")
        .and_then(|s| s.get("names"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let now = crate::meta::now_rfc3339();
    let stored: Vec<Value> = crd
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    json!({
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now}
        ],
        "storedVersions": stored
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crd_written_again_keeps_its_condition_times_and_stored_versions() {
        let crd = |storage: &str| {
            json!({"spec": {"names": {"plural": "widgets", "kind": "Widget"}, "versions": [
                {"name": "v1", "storage": storage == "v1"},
                {"name": "v2", "storage": storage == "v2"}]}})
        };
        let mut old = crd_status(&crd("v1"));
        for condition in old["conditions"].as_array_mut().unwrap() {
            condition["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        }
        let same = crd_status_after(Some(&old), &crd("v1"));
        assert_eq!(same, old, "a write that changes nothing changes no status");
        let moved = crd_status_after(Some(&old), &crd("v2"));
        assert_eq!(moved["storedVersions"], json!(["v1", "v2"]));
        assert_eq!(moved["conditions"], old["conditions"]);
    }

    #[test]
    fn orders_versions_by_priority() {
        let mut v = vec!["v1alpha1", "v1beta1", "v2", "v1"];
        v.sort_by_key(|x| std::cmp::Reverse(version_priority(x)));
        assert_eq!(v, ["v2", "v1", "v1beta1", "v1alpha1"]);
    }

    #[test]
    fn registers_crd_versions() {
        let mut reg = Registry::builtin();
        let crd = json!({"spec": {"group": "example.com", "scope": "Cluster",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "subresources": {"status": {}}}]}});
        let gr = reg.apply_crd(&crd).unwrap();
        assert_eq!(gr.resource, "widgets");
        let info = reg.get("example.com", "v1", "widgets").unwrap();
        assert!(info.status && !info.namespaced && info.custom);
        assert_eq!(info.singular, "widget");
    }
}
