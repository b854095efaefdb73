//! Identity of generated objects: the `eventtrigger.lib.projectsveltos.io/*` labels that say
//! which trigger, cluster, EventSource and resource an object was generated for, and the
//! deterministic `sveltos-<20 [0-9a-z]>` names derived from them.
//!
//! Upstream draws the 20 characters at random and finds objects again by their labels; here
//! they come from a hash of the identity labels, so the same event always maps to the same
//! name and a restart can never create a duplicate.

use std::collections::BTreeMap;

use api::labels;
use sha2::{Digest, Sha256};

use crate::kept::Labelled;

pub use api::cluster_ref::ClusterRef;

/// What one generated object stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity<'a> {
    /// EventTrigger that generates the object.
    pub trigger: &'a str,
    /// Source cluster of the event.
    pub cluster: &'a ClusterRef,
    /// EventSource whose report produced the object.
    pub event_source: &'a str,
    /// The matching resource, for `oneForEvent` objects: (namespace, name).
    pub resource: Option<(&'a str, &'a str)>,
    /// The CloudEvent, for CloudEvent-born objects: (source, subject).
    pub cloud_event: Option<(&'a str, &'a str)>,
}

/// The source cluster a generated object's identity labels name.
pub fn source_cluster(labels: impl Labelled) -> Option<ClusterRef> {
    let cluster_type = labels
        .label(labels::CLUSTER_TYPE_LABEL)
        .and_then(api::v1beta1::ClusterType::parse)
        .unwrap_or_default();
    Some(ClusterRef {
        namespace: labels.label(labels::CLUSTER_NAMESPACE_LABEL)?.to_owned(),
        name: labels.label(labels::CLUSTER_NAME_LABEL)?.to_owned(),
        cluster_type,
    })
}

/// Labels every generated object of `identity` carries (ClusterProfiles, instantiated
/// ConfigMaps/Secrets, generator outputs), plus the tenant labels copied from the trigger.
pub fn identity_labels(
    identity: &Identity<'_>,
    trigger_labels: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut put = |key: &str, value: &str| {
        out.insert(key.to_string(), value.to_string());
    };
    put(labels::EVENT_TRIGGER_NAME_LABEL, identity.trigger);
    put(labels::CLUSTER_NAMESPACE_LABEL, &identity.cluster.namespace);
    put(labels::CLUSTER_NAME_LABEL, &identity.cluster.name);
    put(
        labels::CLUSTER_TYPE_LABEL,
        identity.cluster.cluster_type.as_str(),
    );
    put(labels::EVENT_REPORT_NAME_LABEL, identity.event_source);
    put(labels::EVENT_SOURCE_LABEL, identity.event_source);
    if let Some((namespace, name)) = identity.resource {
        put(labels::RESOURCE_NAME_LABEL, name);
        if !namespace.is_empty() {
            put(labels::RESOURCE_NAMESPACE_LABEL, namespace);
        }
    }
    if let Some((source, subject)) = identity.cloud_event {
        put(labels::CLOUD_EVENT_SOURCE_LABEL, &source.replace('/', "-"));
        put(
            labels::CLOUD_EVENT_SUBJECT_LABEL,
            &subject.replace('/', "-"),
        );
    }
    for key in [
        labels::SERVICE_ACCOUNT_NAME_LABEL,
        labels::SERVICE_ACCOUNT_NAMESPACE_LABEL,
    ] {
        if let Some(value) = trigger_labels.get(key) {
            put(key, value);
        }
    }
    out
}

/// Adds the labels naming the template ConfigMap/Secret an instantiated object came from.
pub fn with_reference(
    mut identity_labels: BTreeMap<String, String>,
    reference_namespace: &str,
    reference_name: &str,
) -> BTreeMap<String, String> {
    identity_labels.insert(
        labels::REFERENCE_NAMESPACE_LABEL.into(),
        reference_namespace.into(),
    );
    identity_labels.insert(labels::REFERENCE_NAME_LABEL.into(), reference_name.into());
    identity_labels
}

/// The selector that finds every object a trigger generated for one cluster.
pub fn trigger_cluster_selector(trigger: &str, cluster: &ClusterRef) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            labels::EVENT_TRIGGER_NAME_LABEL.to_string(),
            trigger.to_string(),
        ),
        (
            labels::CLUSTER_NAMESPACE_LABEL.to_string(),
            cluster.namespace.clone(),
        ),
        (labels::CLUSTER_NAME_LABEL.to_string(), cluster.name.clone()),
        (
            labels::CLUSTER_TYPE_LABEL.to_string(),
            cluster.cluster_type.as_str().to_string(),
        ),
    ])
}

/// Number of characters after `sveltos-` in generated names, as upstream.
const NAME_SUFFIX_LEN: usize = 20;

/// `sveltos-` + 20 `[0-9a-z]` derived from the identity labels.
pub fn generated_name(labels: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (key, value) in labels {
        hasher.update(key.as_bytes());
        hasher.update([0]);
        hasher.update(value.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut name = String::with_capacity(8 + NAME_SUFFIX_LEN);
    name.push_str("sveltos-");
    // Each byte picks one character; 256 is not a multiple of 36, and the slight bias this
    // leaves does not matter for a 20-character name.
    name.extend(
        digest
            .iter()
            .take(NAME_SUFFIX_LEN)
            .map(|b| ALPHABET[usize::from(*b) % 36] as char),
    );
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::v1beta1::ClusterType;

    fn cluster() -> ClusterRef {
        ClusterRef {
            namespace: "default".into(),
            name: "c1".into(),
            cluster_type: ClusterType::Sveltos,
        }
    }

    #[test]
    fn the_identity_labels_name_the_source_cluster_back() {
        for cluster_type in [ClusterType::Sveltos, ClusterType::Capi] {
            let cluster = ClusterRef {
                cluster_type,
                ..cluster()
            };
            let identity = Identity {
                trigger: "t",
                cluster: &cluster,
                event_source: "s",
                resource: None,
                cloud_event: None,
            };
            let labels = identity_labels(&identity, &BTreeMap::new());
            assert_eq!(source_cluster(Some(&labels)), Some(cluster));
        }
        assert_eq!(source_cluster(None::<&BTreeMap<String, String>>), None);
        let hand_written = BTreeMap::from([("app".to_owned(), "x".to_owned())]);
        assert_eq!(source_cluster(Some(&hand_written)), None);
    }

    #[test]
    fn labels_match_the_upstream_worked_example() {
        let cluster = cluster();
        let identity = Identity {
            trigger: "service-network-policy",
            cluster: &cluster,
            event_source: "sveltos-service",
            resource: Some(("default", "my-service")),
            cloud_event: None,
        };
        let got = identity_labels(&identity, &BTreeMap::new());
        let want: BTreeMap<String, String> = [
            (
                "eventtrigger.lib.projectsveltos.io/eventtriggername",
                "service-network-policy",
            ),
            (
                "eventtrigger.lib.projectsveltos.io/clusterNamespace",
                "default",
            ),
            ("eventtrigger.lib.projectsveltos.io/clustername", "c1"),
            ("eventtrigger.lib.projectsveltos.io/clustertype", "Sveltos"),
            (
                "eventtrigger.lib.projectsveltos.io/eventreportname",
                "sveltos-service",
            ),
            (
                "eventtrigger.lib.projectsveltos.io/eventsourcename",
                "sveltos-service",
            ),
            (
                "eventtrigger.lib.projectsveltos.io/resourcename",
                "my-service",
            ),
            (
                "eventtrigger.lib.projectsveltos.io/resourcenamespace",
                "default",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn cluster_scoped_resources_have_no_namespace_label_and_tenants_are_copied() {
        let cluster = cluster();
        let identity = Identity {
            trigger: "t",
            cluster: &cluster,
            event_source: "s",
            resource: Some(("", "node-1")),
            cloud_event: Some(("my/source", "a/b")),
        };
        let trigger_labels = BTreeMap::from([
            (
                labels::SERVICE_ACCOUNT_NAME_LABEL.to_string(),
                "eng".to_string(),
            ),
            (
                labels::SERVICE_ACCOUNT_NAMESPACE_LABEL.to_string(),
                "tenants".to_string(),
            ),
            ("unrelated".to_string(), "x".to_string()),
        ]);
        let got = identity_labels(&identity, &trigger_labels);
        assert!(!got.contains_key(labels::RESOURCE_NAMESPACE_LABEL));
        assert_eq!(got[labels::CLOUD_EVENT_SOURCE_LABEL], "my-source");
        assert_eq!(got[labels::CLOUD_EVENT_SUBJECT_LABEL], "a-b");
        assert_eq!(got[labels::SERVICE_ACCOUNT_NAME_LABEL], "eng");
        assert!(!got.contains_key("unrelated"));
    }

    #[test]
    fn names_have_upstream_shape_and_are_deterministic() {
        let cluster = cluster();
        let a = Identity {
            trigger: "t",
            cluster: &cluster,
            event_source: "s",
            resource: Some(("ns", "a")),
            cloud_event: None,
        };
        let b = Identity {
            resource: Some(("ns", "b")),
            ..a.clone()
        };
        let name_a = generated_name(&identity_labels(&a, &BTreeMap::new()));
        assert_eq!(name_a.len(), 28);
        assert!(name_a.starts_with("sveltos-"));
        assert!(
            name_a[8..]
                .chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        );
        assert_eq!(
            name_a,
            generated_name(&identity_labels(&a, &BTreeMap::new()))
        );
        assert_ne!(
            name_a,
            generated_name(&identity_labels(&b, &BTreeMap::new()))
        );
        let referenced = with_reference(
            identity_labels(&a, &BTreeMap::new()),
            "default",
            "network-policy",
        );
        assert_ne!(
            generated_name(&referenced),
            name_a,
            "instantiated objects get their own names"
        );
    }
}
