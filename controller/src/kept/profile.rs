//! The record of a ClusterProfile: its metadata, its spec and status as JSON (decoded by the
//! pass that deploys it, a few microseconds against the kilobyte the decoded spec would
//! hold for the process's life), and the clusters the spec names (read on every cluster's
//! change, across every profile, so kept decoded).

use std::sync::Arc;

use api::selector;
use api::v1beta1::{ClusterProfile, ClusterProfileSpec, ClusterProfileStatus};

use super::{KeptMeta, shared_json};
use crate::identity::ClusterRef;

/// What the controllers keep of a ClusterProfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptProfile {
    /// Its metadata.
    pub metadata: KeptMeta,
    /// Its spec as JSON (see [`shared_json`]).
    spec: Arc<str>,
    /// Its status as JSON (the profiles of one cluster share it: they match the same).
    status: Option<Arc<str>>,
    /// The clusters its spec may select.
    reach: Reach,
}

/// The clusters a profile's spec may select.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// It selects by labels or through ClusterSets: any cluster may join or leave.
    pub selects: bool,
    /// The clusters its clusterRefs name.
    pub named: Box<[ClusterRef]>,
}

impl From<ClusterProfile> for KeptProfile {
    fn from(object: ClusterProfile) -> Self {
        let spec = &object.spec;
        let reach = Reach {
            selects: !selector::is_empty(&spec.cluster_selector) || !spec.set_refs.is_empty(),
            named: (spec.cluster_refs.iter())
                .filter_map(ClusterRef::from_reference)
                .collect(),
        };
        KeptProfile {
            spec: shared_json(spec),
            status: object.status.as_ref().map(shared_json),
            reach,
            metadata: object.metadata.into(),
        }
    }
}

super::lookup!(
    KeptProfile,
    "ClusterProfile",
    "config.projectsveltos.io",
    "v1beta1",
    "clusterprofiles"
);

impl KeptProfile {
    /// Its spec.
    pub fn spec(&self) -> serde_json::Result<ClusterProfileSpec> {
        serde_json::from_str(&self.spec)
    }

    /// Whether its spec is `wanted`.
    pub fn spec_is(&self, wanted: &ClusterProfileSpec) -> bool {
        self.spec().is_ok_and(|spec| spec == *wanted)
    }

    /// The clusters its spec may select.
    pub fn reach(&self) -> &Reach {
        &self.reach
    }

    /// The profile as the API types hold it (its metadata as [`KeptMeta::to_object_meta`]
    /// makes it).
    pub fn profile(&self) -> serde_json::Result<ClusterProfile> {
        let status: Option<ClusterProfileStatus> = match &self.status {
            Some(json) => Some(serde_json::from_str(json)?),
            None => None,
        };
        Ok(ClusterProfile {
            metadata: self.metadata.to_object_meta(),
            spec: self.spec()?,
            status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::{Labelled, Meta};
    use serde_json::json;

    fn profile(value: serde_json::Value) -> ClusterProfile {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_kept_profile_gives_back_its_spec_status_and_metadata() {
        let object = profile(json!({
            "metadata": {"name": "p", "uid": "u", "generation": 2, "resourceVersion": "9",
                         "labels": {"l": "v"}, "annotations": {"a": "b"}},
            "spec": {
                "clusterRefs": [{"kind": "SveltosCluster", "namespace": "n", "name": "c",
                                 "apiVersion": "lib.projectsveltos.io/v1beta1"}],
                "policyRefs": [{"kind": "ConfigMap", "namespace": "ns", "name": "x"}],
                "syncMode": "ContinuousWithDriftDetection"
            },
            "status": {"matchingClusters": [{"kind": "SveltosCluster", "namespace": "n",
                                             "name": "c"}]}
        }));
        let kept = KeptProfile::from(object.clone());
        assert_eq!(kept.spec().unwrap(), object.spec);
        assert!(kept.spec_is(&object.spec));
        let back = kept.profile().unwrap();
        assert_eq!((back.spec, back.status), (object.spec, object.status));
        assert_eq!(back.metadata.uid.as_deref(), Some("u"));
        assert_eq!(kept.metadata.label("l"), Some("v"));
        assert_eq!(kept.metadata.generation(), Some(2));
        assert!(!kept.metadata.deleting());
        assert!(!kept.reach().selects);
        assert_eq!(kept.reach().named.len(), 1);
        assert_eq!(kept.reach().named[0].name, "c");
    }

    #[test]
    fn a_profile_without_status_has_none_and_a_selector_reaches_any_cluster() {
        let kept = KeptProfile::from(profile(json!({
            "metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"clusterSelector": {"matchLabels": {"env": "prod"}}}
        })));
        assert_eq!(kept.profile().unwrap().status, None);
        assert!(kept.reach().selects && kept.reach().named.is_empty());
        assert!(kept.metadata.deleting());
        let mut other = kept.spec().unwrap();
        other.set_refs.push("set".into());
        assert!(!kept.spec_is(&other));
    }
}
