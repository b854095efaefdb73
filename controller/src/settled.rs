//! Units whose objects the management cluster was seen to hold as planned. The planner's memo
//! keeps such a unit as names and stamps instead of its objects: a fleet's generated
//! ClusterProfiles, ConfigMaps and Secrets are then held once (by the caches), not twice.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::kept::{Meta, labels_digest};
use crate::memo::Digest;

/// What an object was when it was seen to hold what a pass wanted: while the cache shows the
/// same, it still does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stamp {
    /// The resourceVersion.
    pub version: String,
    /// For a ClusterProfile, its generation (which moves with its spec, not with the status
    /// the deployer writes) and the digest of its labels.
    pub spec: Option<(Option<i64>, Digest)>,
    /// The last version at which `spec` was found to hold.
    pub held: Held,
}

/// The last resourceVersion (when a number, as kube-apiserver writes them; 0: none) at which a
/// ClusterProfile was found to hold by its generation and labels. One version is one state of
/// the object, so a later look at the same version need not digest the labels again: after
/// the deployer's status write, every pass over the profile's trigger would (7% of the CPU of
/// the quiet end-to-end run at 1,000 profiles). A cache, so stamps equal whatever it holds.
#[derive(Debug, Default)]
pub struct Held(AtomicU64);

impl Clone for Held {
    fn clone(&self) -> Self {
        Held(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

impl PartialEq for Held {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Held {}

impl Stamp {
    /// The stamp of a `kind` object as `meta` shows it.
    pub fn of(kind: &str, meta: &impl Meta) -> Stamp {
        Stamp {
            version: meta.resource_version().unwrap_or_default().to_owned(),
            spec: (kind == "ClusterProfile").then(|| (meta.generation(), labels_digest(meta))),
            held: Held::default(),
        }
    }

    /// Whether an object shown as `meta` is still what was stamped: the same version, or (a
    /// ClusterProfile) the same generation and labels, as after a status write.
    pub fn holds(&self, meta: &impl Meta) -> bool {
        let version = meta.resource_version();
        if version == Some(self.version.as_str()) {
            return true;
        }
        let Some(spec) = self.spec else {
            return false;
        };
        let number = version.and_then(|v| v.parse::<u64>().ok());
        let number = number.filter(|&n| n != 0);
        if number.is_some_and(|n| self.held.0.load(Ordering::Relaxed) == n) {
            return true;
        }
        let holds = spec == (meta.generation(), labels_digest(meta));
        if let Some(n) = number.filter(|_| holds) {
            self.held.0.store(n, Ordering::Relaxed);
        }
        holds
    }
}

/// One object of a settled unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettledObject {
    /// `ClusterProfile`, `ConfigMap` or `Secret`.
    pub kind: &'static str,
    /// Its name (ConfigMaps and Secrets are in `projectsveltos`).
    pub name: String,
    /// What it was when it held the planned object.
    pub stamp: Stamp,
}

/// A unit (a profile and its generated objects) the cluster held as planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Its objects.
    pub objects: Vec<SettledObject>,
}

impl Settled {
    /// Whether each object is still as stamped, as `holds` tells.
    pub fn holds(&self, holds: &dyn Fn(&SettledObject) -> bool) -> bool {
        self.objects.iter().all(holds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::collections::BTreeMap;

    fn meta(version: &str, generation: Option<i64>, label: &str) -> ObjectMeta {
        ObjectMeta {
            resource_version: Some(version.into()),
            generation,
            labels: Some(BTreeMap::from([("a".to_owned(), label.to_owned())])),
            ..Default::default()
        }
    }

    #[test]
    fn a_stamp_holds_while_the_version_or_the_generation_and_labels_do() {
        let profile = Stamp::of("ClusterProfile", &meta("7", Some(1), "x"));
        assert!(profile.holds(&meta("7", Some(1), "x")));
        // A status write: new version, same generation and labels.
        assert!(profile.holds(&meta("9", Some(1), "x")));
        // A spec edit, or a label edit.
        assert!(!profile.holds(&meta("9a", Some(2), "x")));
        assert!(!profile.holds(&meta("9b", Some(1), "y")));
        // Found to hold at a version, it holds there without a look at the labels; the
        // next status write is looked at again.
        assert!(profile.holds(&meta("10", Some(1), "x")));
        assert_eq!(profile.held.0.load(Ordering::Relaxed), 10);
        assert!(profile.holds(&meta("10", Some(1), "x")));
        assert!(!profile.holds(&meta("11", Some(2), "x")));
        assert!(profile.holds(&meta("12", Some(1), "x")));
        assert_eq!(profile.held.0.load(Ordering::Relaxed), 12);
        // A version that is not a number is looked at each time.
        assert!(profile.holds(&meta("v13", Some(1), "x")));
        assert!(!profile.holds(&meta("v13", Some(1), "y")));
        // For other kinds only the version counts, whatever the generation says.
        let config_map = Stamp::of("ConfigMap", &meta("7", Some(1), "x"));
        assert!(config_map.holds(&meta("7", Some(1), "x")));
        assert!(!config_map.holds(&meta("8", Some(1), "x")));
    }
}
