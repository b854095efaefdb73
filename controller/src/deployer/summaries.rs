//! What the deployer keeps of each ClusterSummary: the fields its passes and withdrawals read,
//! not the object. Kept whole, 100,000 summaries were a fifth of the manager's heap at peak
//! (~3.6 KB each: metadata, labels, status and a copy of the profile's spec). A record keeps
//! the spec as its JSON (decoded only where it differs from the profile's, or the profile is
//! gone) and the status as a digest of what the deployer compares.

use std::borrow::Cow;
use std::sync::Arc;

use api::labels::{CLUSTER_PROFILE_NAME_LABEL, INTENDED_KINDS_ANNOTATION};
use api::v1beta1::{ClusterProfileSpec, ClusterSummary, FeatureId, FeatureStatus, SyncMode};
use kube::runtime::reflector::{Lookup, ObjectRef};
use serde_json::Value;

use crate::identity::ClusterRef;
use crate::kept::{intern, shared_json};
use crate::memo::{self, Digest};

/// A ClusterSummary as the deployer keeps it.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Its namespace (shared: a cluster's summaries are all in it).
    namespace: Arc<str>,
    /// Its name (shared: one string for every version the store and the index of summaries
    /// by profile hold).
    name: Arc<str>,
    version: Option<Box<str>>,
    /// The profile it belongs to (its `projectsveltos.io/cluster-profile-name` label; shared
    /// with the profile's other records and indexes).
    pub profile: Arc<str>,
    /// The cluster it records a deployment in.
    pub cluster: ClusterRef,
    /// The profile spec it records, as JSON (shared with the profile's while they are equal:
    /// see [`shared_json`]).
    spec: Arc<str>,
    sync_mode: SyncMode,
    local: bool,
    /// The kinds its last pass set out to deploy, comma-separated (shared: summaries of one
    /// trigger set out to deploy the same kinds).
    intended: Option<Arc<str>>,
    /// The kinds its status says were deployed as resources (shared likewise).
    deployed: Box<[Arc<str>]>,
    provisioned: bool,
    /// Digest of its status' featureSummaries and deployedGVKs (see [`status_digest`]).
    status: Digest,
}

/// Digest of a summary status' `featureSummaries` and `deployedGVKs` as JSON.
pub fn status_digest(features: Option<&Value>, gvks: Option<&Value>) -> Digest {
    let null = Value::Null;
    memo::digest(&(
        memo::digest_value(features.unwrap_or(&null)),
        memo::digest_value(gvks.unwrap_or(&null)),
    ))
}

impl Summary {
    /// The record of `summary`.
    pub fn new(summary: ClusterSummary) -> Self {
        let ClusterSummary {
            metadata,
            spec,
            status,
        } = summary;
        let mut labels = metadata.labels.unwrap_or_default();
        let profile = intern(
            &labels
                .remove(CLUSTER_PROFILE_NAME_LABEL)
                .unwrap_or_default(),
        );
        let intended = metadata
            .annotations
            .and_then(|mut a| a.remove(INTENDED_KINDS_ANNOTATION))
            .map(|kinds| intern(&kinds));
        let recorded = &spec.cluster_profile_spec;
        // A spec that cannot be written as JSON (never seen) cannot be read back either
        // ([`Summary::spec`]): the passes over its profile fail and are retried rather than
        // deploy or withdraw without knowing what it recorded.
        let json = shared_json(recorded);
        let local = super::deploys_locally(recorded);
        let status = status.unwrap_or_default();
        let deployed = status
            .deployed_gvks
            .iter()
            .filter(|d| d.feature_id == FeatureId::Resources)
            .flat_map(|d| d.deployed_group_version_kind.iter())
            .map(|kind| intern(kind))
            .collect();
        let provisioned = status.feature_summaries.iter().any(|f| {
            f.feature_id == FeatureId::Resources && f.status == Some(FeatureStatus::Provisioned)
        });
        let digest = match serde_json::to_value(&status) {
            Ok(json) => status_digest(json.get("featureSummaries"), json.get("deployedGVKs")),
            Err(_) => Digest::default(),
        };
        Summary {
            namespace: intern(metadata.namespace.as_deref().unwrap_or_default()),
            name: intern(metadata.name.as_deref().unwrap_or_default()),
            version: metadata.resource_version.map(Into::into),
            profile,
            cluster: ClusterRef {
                namespace: spec.cluster_namespace,
                name: spec.cluster_name,
                cluster_type: spec.cluster_type,
            },
            spec: json,
            sync_mode: recorded.sync_mode,
            local,
            intended,
            deployed,
            provisioned,
            status: digest,
        }
    }

    /// Its namespace (the cluster's).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its namespace and name, shared.
    pub fn place(&self) -> (Arc<str>, Arc<str>) {
        (Arc::clone(&self.namespace), Arc::clone(&self.name))
    }

    /// Its resourceVersion.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// The profile spec it records: `current` when it records that one (the same JSON, or
    /// failing that, an equal spec), else decoded.
    pub fn spec<'a>(
        &self,
        current: Option<&'a ClusterProfileSpec>,
    ) -> Result<Cow<'a, ClusterProfileSpec>, serde_json::Error> {
        if let Some(current) = current
            && serde_json::to_vec(current).is_ok_and(|json| *json == *self.spec.as_bytes())
        {
            return Ok(Cow::Borrowed(current));
        }
        let recorded: ClusterProfileSpec = serde_json::from_str(&self.spec)?;
        Ok(match current {
            Some(current) if *current == recorded => Cow::Borrowed(current),
            _ => Cow::Owned(recorded),
        })
    }

    /// The syncMode of the spec it records.
    pub fn sync_mode(&self) -> SyncMode {
        self.sync_mode
    }

    /// Whether the spec it records deploys anything into the management cluster.
    pub fn local(&self) -> bool {
        self.local
    }

    /// The kinds its last pass set out to deploy.
    pub fn intended_kinds(&self) -> impl Iterator<Item = &str> {
        self.intended
            .iter()
            .flat_map(|kinds| kinds.split(','))
            .filter(|kind| !kind.is_empty())
    }

    /// The kinds its add-ons may be of: those its status says were deployed and those its
    /// last pass set out to deploy (which it may have, if the pass never wrote its outcome).
    pub fn resources_kinds(&self) -> Vec<String> {
        let deployed = self.deployed.iter().map(AsRef::as_ref);
        let kinds: std::collections::BTreeSet<&str> =
            deployed.chain(self.intended_kinds()).collect();
        kinds.into_iter().map(str::to_owned).collect()
    }

    /// Whether its status says the resources were provisioned.
    pub fn provisioned(&self) -> bool {
        self.provisioned
    }

    /// Whether its status holds these `featureSummaries` and `deployedGVKs`.
    pub fn status_is(&self, features: Option<&Value>, gvks: Option<&Value>) -> bool {
        self.status == status_digest(features, gvks)
    }
}

impl Lookup for Summary {
    type DynamicType = ();

    fn kind(_: &()) -> Cow<'_, str> {
        "ClusterSummary".into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        "config.projectsveltos.io".into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        "v1beta1".into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        "clustersummaries".into()
    }

    fn name(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&self.name))
    }

    fn namespace(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&self.namespace))
    }

    fn resource_version(&self) -> Option<Cow<'_, str>> {
        self.version.as_deref().map(Cow::Borrowed)
    }

    fn uid(&self) -> Option<Cow<'_, str>> {
        None
    }

    fn to_object_ref(&self, _: ()) -> ObjectRef<Self> {
        crate::kept::store_key(&self.name, Some(&self.namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::v1beta1::ClusterProfile;
    use serde_json::json;

    fn profile(tier: i32) -> ClusterProfile {
        serde_json::from_value(json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
            "metadata": {"name": "p"},
            "spec": {"tier": tier, "policyRefs": [{"kind": "ConfigMap", "namespace": "default", "name": "a"}]},
        }))
        .unwrap()
    }

    fn summary(tier: i32, status: Value) -> ClusterSummary {
        serde_json::from_value(json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
            "metadata": {
                "name": "p-sveltos-c", "namespace": "ns", "resourceVersion": "7",
                "labels": {CLUSTER_PROFILE_NAME_LABEL: "p"},
                "annotations": {INTENDED_KINDS_ANNOTATION: "NetworkPolicy.v1.networking.k8s.io,,"},
            },
            "spec": {
                "clusterNamespace": "ns", "clusterName": "c", "clusterType": "Sveltos",
                "clusterProfileSpec": profile(tier).spec,
            },
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_record_keeps_what_passes_read() {
        let status = json!({
            "featureSummaries": [{"featureID": "Resources", "status": "Provisioned"}],
            "deployedGVKs": [
                {"featureID": "Resources", "deployedGroupVersionKind": ["ConfigMap.v1."]},
                {"featureID": "Helm", "deployedGroupVersionKind": ["Secret.v1."]},
            ],
        });
        let record = Summary::new(summary(100, status.clone()));
        assert_eq!((record.namespace(), record.name()), ("ns", "p-sveltos-c"));
        assert_eq!((&*record.profile, record.version()), ("p", Some("7")));
        assert_eq!(record.cluster.name, "c");
        assert!(record.provisioned());
        assert_eq!(
            record.resources_kinds(),
            ["ConfigMap.v1.", "NetworkPolicy.v1.networking.k8s.io"]
        );
        assert_eq!(record.sync_mode(), SyncMode::Continuous);
        assert!(!record.local());
        assert!(record.status_is(status.get("featureSummaries"), status.get("deployedGVKs")));
        assert!(!record.status_is(status.get("featureSummaries"), None));

        let other = Summary::new(summary(100, json!({})));
        assert!(!other.provisioned());
        assert!(other.status_is(None, None));
    }

    #[test]
    fn the_recorded_spec_is_the_profiles_while_equal_and_decoded_after() {
        let record = Summary::new(summary(100, json!({})));
        let same = profile(100).spec;
        assert!(matches!(record.spec(Some(&same)), Ok(Cow::Borrowed(_))));
        // The profile changed since, or is gone: the summary's own spec.
        let changed = profile(200).spec;
        let recorded = record.spec(Some(&changed)).unwrap();
        assert!(matches!(recorded, Cow::Owned(_)));
        assert_eq!(*recorded, same);
        assert_eq!(*record.spec(None).unwrap(), same);
    }
}
