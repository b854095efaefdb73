//! What the deployer writes on every object it deploys, and how it recognises its own: Sveltos'
//! reason label, reference/owner/tier/hash annotations, and the profile's extra labels and
//! annotations.

use std::collections::BTreeMap;

use api::labels::{
    CLUSTER_SUMMARY_ANNOTATION, DEPLOYMENT_TYPE_ANNOTATION, HASH_ANNOTATION, OWNER_KIND_ANNOTATION,
    OWNER_NAME_ANNOTATION, OWNER_TIER_ANNOTATION, REASON_LABEL, REFERENCE_KIND_ANNOTATION,
    REFERENCE_NAME_ANNOTATION, REFERENCE_NAMESPACE_ANNOTATION, REFERENCE_TIER_ANNOTATION,
};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Feature the deployer's objects belong to (Sveltos' featureID).
pub const RESOURCES_FEATURE: &str = "Resources";

/// Who deploys an object, and from where.
#[derive(Debug, Clone)]
pub struct Owner {
    /// Name of the ClusterProfile.
    pub profile: String,
    /// The profile's tier.
    pub tier: i32,
    /// The ClusterSummary's name, written in the clustersummary annotation.
    pub summary: String,
    /// `<type>-<clusterNamespace>-<clusterName>`: what Sveltos and earlier releases wrote there,
    /// still recognised as ours.
    pub legacy_summary: String,
    /// `Local` or `Remote`.
    pub deployment_type: String,
    /// Extra labels of the profile.
    pub extra_labels: BTreeMap<String, String>,
    /// Extra annotations of the profile.
    pub extra_annotations: BTreeMap<String, String>,
}

/// The ConfigMap/Secret an object came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The policyRef's tier.
    pub tier: i32,
}

fn map_at<'a>(object: &'a mut Value, field: &str) -> Option<&'a mut Map<String, Value>> {
    let metadata = object
        .as_object_mut()?
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let entry = metadata
        .as_object_mut()?
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// Sorted-key JSON, the form hashes are taken over.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// `sha256:<hex>` of the object without its hash annotation.
pub fn hash(object: &Value) -> String {
    let mut copy = object.clone();
    if let Some(annotations) = copy
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(HASH_ANNOTATION);
    }
    let digest = Sha256::digest(canonical(&copy).to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Adds Sveltos' deployment metadata to `object`.
pub fn decorate(object: &mut Value, owner: &Owner, reference: &Reference) {
    if let Some(labels) = map_at(object, "labels") {
        labels.insert(REASON_LABEL.into(), RESOURCES_FEATURE.into());
        for (key, value) in &owner.extra_labels {
            labels.insert(key.clone(), value.clone().into());
        }
    }
    if let Some(annotations) = map_at(object, "annotations") {
        let pairs = [
            (REFERENCE_KIND_ANNOTATION, reference.kind.clone()),
            (REFERENCE_NAME_ANNOTATION, reference.name.clone()),
            (REFERENCE_NAMESPACE_ANNOTATION, reference.namespace.clone()),
            (REFERENCE_TIER_ANNOTATION, reference.tier.to_string()),
            (OWNER_KIND_ANNOTATION, "ClusterProfile".to_owned()),
            (OWNER_NAME_ANNOTATION, owner.profile.clone()),
            (OWNER_TIER_ANNOTATION, owner.tier.to_string()),
            (CLUSTER_SUMMARY_ANNOTATION, owner.summary.clone()),
            (DEPLOYMENT_TYPE_ANNOTATION, owner.deployment_type.clone()),
        ];
        for (key, value) in pairs {
            annotations.insert(key.into(), value.into());
        }
        for (key, value) in &owner.extra_annotations {
            annotations.insert(key.clone(), value.clone().into());
        }
    }
    let digest = hash(object);
    if let Some(annotations) = map_at(object, "annotations") {
        annotations.insert(HASH_ANNOTATION.into(), digest.into());
    }
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// The profile and summary annotation that `annotation` (an object's annotation by key)
/// names as the object's owner, when a ClusterProfile owns it.
pub fn owning_pair<'a>(annotation: impl Fn(&str) -> Option<&'a str>) -> Option<(&'a str, &'a str)> {
    (annotation(OWNER_KIND_ANNOTATION) == Some("ClusterProfile")).then(|| {
        (
            annotation(OWNER_NAME_ANNOTATION).unwrap_or_default(),
            annotation(CLUSTER_SUMMARY_ANNOTATION).unwrap_or_default(),
        )
    })
}

impl Owner {
    /// The pairs of [`owning_pair`] that are this owner's: its summary's name, or the name
    /// Sveltos and earlier releases wrote.
    pub fn pairs(&self) -> [(&str, &str); 2] {
        [
            (&self.profile, &self.summary),
            (&self.profile, &self.legacy_summary),
        ]
    }
}

/// Whether `object` was deployed by `owner` (its profile, for its ClusterSummary's cluster).
pub fn deployed_by(object: &Value, owner: &Owner) -> bool {
    owning_pair(|key| annotation(object, key)).is_some_and(|pair| owner.pairs().contains(&pair))
}

/// Why `owner` may not take `existing` over (another profile owns it at a tier at least as
/// strong), or `None` when it may.
pub fn conflict(existing: &Value, owner: &Owner) -> Option<String> {
    if annotation(existing, OWNER_KIND_ANNOTATION) != Some("ClusterProfile") {
        return None;
    }
    let other = annotation(existing, OWNER_NAME_ANNOTATION)?;
    if other == owner.profile {
        return None;
    }
    let other_tier: i32 = annotation(existing, OWNER_TIER_ANNOTATION)
        .and_then(|t| t.parse().ok())
        .unwrap_or(100);
    (owner.tier >= other_tier).then(|| {
        format!("already deployed by ClusterProfile {other} (tier {other_tier}); a lower tier is needed to take it over")
    })
}

/// `object` without Sveltos' ownership metadata (what `LeavePolicies` leaves behind).
pub fn strip(object: &mut Value) {
    if let Some(labels) = object
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(REASON_LABEL);
    }
    if let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        for key in [
            REFERENCE_KIND_ANNOTATION,
            REFERENCE_NAME_ANNOTATION,
            REFERENCE_NAMESPACE_ANNOTATION,
            REFERENCE_TIER_ANNOTATION,
            OWNER_KIND_ANNOTATION,
            OWNER_NAME_ANNOTATION,
            OWNER_TIER_ANNOTATION,
            CLUSTER_SUMMARY_ANNOTATION,
            DEPLOYMENT_TYPE_ANNOTATION,
            HASH_ANNOTATION,
        ] {
            annotations.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn owner(profile: &str, tier: i32) -> Owner {
        Owner {
            profile: profile.into(),
            tier,
            summary: format!("{profile}-sveltos-c1"),
            legacy_summary: "sveltos-default-c1".into(),
            deployment_type: "Remote".into(),
            extra_labels: BTreeMap::from([("team".into(), "a".into())]),
            extra_annotations: BTreeMap::new(),
        }
    }

    fn reference() -> Reference {
        Reference {
            kind: "ConfigMap".into(),
            namespace: "projectsveltos".into(),
            name: "sveltos-x".into(),
            tier: 100,
        }
    }

    #[test]
    fn decorated_objects_carry_sveltos_metadata_and_a_stable_hash() {
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}, "data": {"b": "2", "a": "1"}});
        decorate(&mut object, &owner("p", 100), &reference());
        assert_eq!(
            object["metadata"]["labels"]["projectsveltos.io/reason"],
            "Resources"
        );
        assert_eq!(object["metadata"]["labels"]["team"], "a");
        let annotations = &object["metadata"]["annotations"];
        assert_eq!(annotations["projectsveltos.io/reference-name"], "sveltos-x");
        assert_eq!(annotations["projectsveltos.io/owner-name"], "p");
        // The annotation names the real ClusterSummary; the older form still counts as ours.
        assert_eq!(
            annotations["projectsveltos.io/clustersummary"],
            "p-sveltos-c1"
        );
        assert!(deployed_by(&object, &owner("p", 100)));
        assert!(!deployed_by(&object, &owner("q", 100)));
        let mut legacy = object.clone();
        legacy["metadata"]["annotations"]["projectsveltos.io/clustersummary"] =
            "sveltos-default-c1".into();
        assert!(deployed_by(&legacy, &owner("p", 100)));
        legacy["metadata"]["annotations"]["projectsveltos.io/clustersummary"] =
            "sveltos-default-c2".into();
        assert!(!deployed_by(&legacy, &owner("p", 100)));
        // Key order does not change the hash; the hash annotation itself is excluded.
        let reordered = json!({"data": {"a": "1", "b": "2"}, "kind": "ConfigMap", "apiVersion": "v1", "metadata": object["metadata"].clone()});
        assert_eq!(hash(&object), hash(&reordered));
        assert_eq!(annotations["projectsveltos.io/hash"], hash(&object));
    }

    #[test]
    fn lower_tiers_take_over_and_equal_tiers_conflict() {
        let mut object =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}});
        decorate(&mut object, &owner("first", 100), &reference());
        assert!(conflict(&object, &owner("first", 100)).is_none());
        assert!(
            conflict(&object, &owner("second", 100))
                .unwrap()
                .contains("ClusterProfile first")
        );
        assert!(conflict(&object, &owner("second", 50)).is_none());
        strip(&mut object);
        assert!(conflict(&object, &owner("second", 100)).is_none());
        assert!(
            object["metadata"]["annotations"]
                .as_object()
                .unwrap()
                .is_empty()
        );
    }
}
