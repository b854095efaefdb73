//! The generated objects the caches hold, by trigger and source cluster: a pass over a
//! trigger's work in one cluster finds that cluster's stale objects without a look at the
//! fleet's. (A whole pass reads the caches themselves, which the index may lag at a start.)

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use api::labels::EVENT_TRIGGER_NAME_LABEL;

use crate::identity::{ClusterRef, source_cluster};
use crate::kept::{Labelled, intern};

/// A generated object: its kind (`ClusterProfile`, `ConfigMap` or `Secret`) and name.
pub type Object = (&'static str, String);

/// Where a generated object belongs: its trigger and its source cluster, each shared by the
/// objects they own (a fleet's are hundreds of thousands).
type Owner = (Arc<str>, Arc<ClusterRef>);

/// An [`Object`] as the index keeps it: its name shared by the index's two maps.
type Kept = (&'static str, Arc<str>);

/// Generated objects by owner, kept as the watches show them; those whose labels name no
/// source cluster are left out (no pass over some clusters looks for them).
#[derive(Debug, Default)]
pub struct Owned {
    owners: HashMap<Kept, Owner>,
    objects: HashMap<Arc<str>, BTreeMap<Arc<ClusterRef>, BTreeSet<Kept>>>,
}

impl Owned {
    /// Records what a watch event shows of generated object `object`: `labels` while the
    /// cache holds it (`present`), else that it is gone. Returns the trigger it belonged to
    /// when it no longer does (gone, or its labels name another trigger or none).
    pub fn seen(&mut self, object: Object, labels: impl Labelled, present: bool) -> Option<String> {
        let trigger = labels.label(EVENT_TRIGGER_NAME_LABEL);
        let owner = match (trigger, source_cluster(&labels)) {
            (Some(trigger), Some(cluster)) if present => Some((trigger, cluster)),
            _ => None,
        };
        let object: Kept = (object.0, object.1.into());
        let known = self.owners.get(&object);
        let unchanged = match (known, &owner) {
            (Some((t, c)), Some((trigger, cluster))) => **t == **trigger && **c == *cluster,
            (known, owner) => known.is_none() && owner.is_none(),
        };
        if unchanged {
            return None;
        }
        let former = self.owners.remove(&object).map(|(trigger, cluster)| {
            self.remove(&trigger, &cluster, &object);
            trigger
        });
        let left = former
            .filter(|former| owner.as_ref().is_none_or(|(now, _)| **former != **now))
            .map(|former| former.to_string());
        if let Some((trigger, cluster)) = owner {
            let trigger = intern(trigger);
            let clusters = self.objects.entry(Arc::clone(&trigger)).or_default();
            let cluster = match clusters.get_key_value(&cluster) {
                Some((shared, _)) => Arc::clone(shared),
                None => Arc::new(cluster),
            };
            let objects = clusters.entry(Arc::clone(&cluster)).or_default();
            objects.insert(object.clone());
            self.owners.insert(object, (trigger, cluster));
        }
        left
    }

    fn remove(&mut self, trigger: &str, cluster: &ClusterRef, object: &Kept) {
        let Some(clusters) = self.objects.get_mut(trigger) else {
            return;
        };
        if let Some(objects) = clusters.get_mut(cluster) {
            objects.remove(object);
            if objects.is_empty() {
                clusters.remove(cluster);
            }
        }
        if clusters.is_empty() {
            self.objects.remove(trigger);
        }
    }

    /// The objects `trigger` generated for source `clusters`, with their clusters.
    pub fn of(&self, trigger: &str, clusters: &BTreeSet<ClusterRef>) -> Vec<(ClusterRef, Object)> {
        let Some(by_cluster) = self.objects.get(trigger) else {
            return Vec::new();
        };
        clusters
            .iter()
            .filter_map(|cluster| Some((cluster, by_cluster.get(cluster)?)))
            .flat_map(|(cluster, objects)| {
                objects
                    .iter()
                    .map(|(kind, name)| (cluster.clone(), (*kind, name.to_string())))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{Identity, identity_labels};
    use api::v1beta1::ClusterType;

    fn cluster(name: &str) -> ClusterRef {
        ClusterRef {
            namespace: "fleet".into(),
            name: name.into(),
            cluster_type: ClusterType::Sveltos,
        }
    }

    fn labels(trigger: &str, cluster: &ClusterRef) -> BTreeMap<String, String> {
        let identity = Identity {
            trigger,
            cluster,
            event_source: "es",
            resource: Some(("default", "web")),
            cloud_event: None,
        };
        identity_labels(&identity, &BTreeMap::new())
    }

    fn object(name: &str) -> Object {
        ("ClusterProfile", name.to_owned())
    }

    #[test]
    fn objects_are_found_by_trigger_and_cluster_as_the_watches_show_them() {
        let mut owned = Owned::default();
        let (a, b) = (cluster("a"), cluster("b"));
        owned.seen(object("p1"), Some(&labels("t", &a)), true);
        owned.seen(object("p2"), Some(&labels("t", &b)), true);
        owned.seen(object("p3"), Some(&labels("other", &a)), true);
        let both = BTreeSet::from([a.clone(), b.clone()]);
        let names = |found: Vec<(ClusterRef, Object)>| -> Vec<String> {
            found.into_iter().map(|(_, (_, name))| name).collect()
        };
        assert_eq!(names(owned.of("t", &both)), ["p1", "p2"]);
        assert_eq!(names(owned.of("t", &BTreeSet::from([b.clone()]))), ["p2"]);
        assert_eq!(owned.of("t", &BTreeSet::from([b.clone()]))[0].0, b.clone());

        // Relabelled to another cluster, then to no trigger: it moves, then leaves.
        assert_eq!(owned.seen(object("p1"), Some(&labels("t", &b)), true), None);
        assert_eq!(
            names(owned.of("t", &BTreeSet::from([a.clone()]))),
            Vec::<String>::new()
        );
        assert_eq!(
            names(owned.of("t", &BTreeSet::from([b.clone()]))),
            ["p1", "p2"]
        );
        let left = owned.seen(object("p1"), Some(&BTreeMap::new()), true);
        assert_eq!(left.as_deref(), Some("t"), "the trigger it left is told");
        assert_eq!(names(owned.of("t", &both)), ["p2"]);
        assert_eq!(owned.seen(object("p1"), Some(&BTreeMap::new()), true), None);

        // Deleted: gone, and nothing of the trigger is kept once its last object goes.
        let left = owned.seen(object("p2"), Some(&labels("t", &b)), false);
        assert_eq!(left.as_deref(), Some("t"));
        assert!(owned.of("t", &both).is_empty());
        assert!(!owned.objects.contains_key("t"));
        assert_eq!(names(owned.of("other", &both)), ["p3"]);

        // An object whose labels name no cluster is not kept.
        let trigger_only = BTreeMap::from([(EVENT_TRIGGER_NAME_LABEL.to_owned(), "t".to_owned())]);
        owned.seen(("ConfigMap", "c".into()), Some(&trigger_only), true);
        assert!(owned.of("t", &both).is_empty());
        assert!(!owned.owners.contains_key(&("ConfigMap", "c".into())));
    }
}
