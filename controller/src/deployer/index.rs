//! The deployer's indexes over its caches: the summaries of a profile, and the profiles that
//! may read a ConfigMap or Secret. Scanning whole stores for them made each pass and each
//! event cost grow with the fleet (10,000 profiles spent most of their convergence comparing
//! labels). An index only narrows the search: the stores stay the truth, and every candidate
//! is checked against them.

use std::collections::{BTreeSet, HashMap};
use std::slice;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use api::v1beta1::ClusterProfileSpec;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::Event;

use super::summaries::Summary;
use crate::kept::profile::KeptProfile;
use crate::kept::{Meta, intern};

/// Takes a lock whatever a panicking holder left: every index's maps are whole between
/// statements, so what it holds is still right.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `(namespace, name)` of a summary, shared with its record.
type Place = (Arc<str>, Arc<str>);

/// A small sorted set: most keys of these indexes have one member (a oneForEvent profile has
/// one summary, a generated ConfigMap one profile), which a `BTreeSet` keeps in a node of
/// eleven slots (~0.5 KiB a profile at 100,000 profiles); this keeps it in one.
#[derive(Debug, Default)]
struct Few<T>(Vec<T>);

impl<T: Ord> Few<T> {
    fn insert(&mut self, item: T) {
        if let Err(at) = self.0.binary_search(&item) {
            if self.0.len() == self.0.capacity() && self.0.len() < 4 {
                self.0.reserve_exact(1);
            }
            self.0.insert(at, item);
        }
    }

    fn remove<Q>(&mut self, item: &Q)
    where
        T: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        if let Ok(at) = self.0.binary_search_by(|held| held.borrow().cmp(item)) {
            self.0.remove(at);
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn iter(&self) -> slice::Iter<'_, T> {
        self.0.iter()
    }
}

/// The summaries the store holds, by profile: it follows the watch's applies and deletions
/// and is made anew from the store at the end of each list (a list's objects reach the
/// store only then, so until then the index, like the store, shows the state before it).
#[derive(Clone, Default)]
pub struct ByProfile(Arc<Mutex<HashMap<Arc<str>, Few<Place>>>>);

impl ByProfile {
    /// Follows one event of the summary watch; `store` is the reflector's, which has
    /// applied it.
    pub fn follow(&self, event: &Event<Summary>, store: &Store<Summary>) {
        let mut index = lock(&self.0);
        match event {
            Event::Apply(summary) => {
                index
                    .entry(Arc::clone(&summary.profile))
                    .or_default()
                    .insert(summary.place());
            }
            Event::Delete(summary) => {
                let profile = &*summary.profile;
                if let Some(places) = index.get_mut(profile) {
                    places.remove(&summary.place());
                    if places.is_empty() {
                        index.remove(profile);
                    }
                }
            }
            Event::InitDone => {
                index.clear();
                for summary in store.state() {
                    index
                        .entry(Arc::clone(&summary.profile))
                        .or_default()
                        .insert(summary.place());
                }
            }
            Event::Init | Event::InitApply(_) => {}
        }
    }

    /// The summaries of `profile` that `store` holds now, by namespace and name.
    pub fn of(&self, store: &Store<Summary>, profile: &str) -> Vec<Arc<Summary>> {
        let index = lock(&self.0);
        let places = index.get(profile).into_iter().flat_map(Few::iter);
        places
            .filter_map(|(namespace, name)| store.get(&ObjectRef::new(name).within(namespace)))
            .filter(|s| *s.profile == *profile)
            .collect()
    }
}

/// `(kind, name)` of an object a profile names (the kind shared by all, the name by the
/// index's two maps).
type Named = (Arc<str>, Arc<str>);

/// Profiles by the `(kind, name)` their policyRefs and templateResourceRefs name, and those
/// whose references are templates (which may name any object), as the store holds them:
/// kept like [`ByProfile`].
#[derive(Clone, Default)]
pub struct ByReference(Arc<Mutex<References>>);

/// Profiles by the name of what they name.
type ByName = HashMap<Arc<str>, Few<Arc<str>>>;

#[derive(Default)]
struct References {
    /// Profiles by kind, then name, of what they name (profile names shared: see [`intern`]).
    exact: HashMap<Arc<str>, ByName>,
    templated: BTreeSet<Arc<str>>,
    /// What each indexed profile named, to forget when it changes or goes.
    named: HashMap<Arc<str>, Box<[Named]>>,
}

/// What `spec` names exactly, and whether any of its references is a template.
fn names(spec: &ClusterProfileSpec) -> (Vec<Named>, bool) {
    let policies = spec.policy_refs.iter().map(|r| (&r.kind, &r.name));
    let resources = spec.template_resource_refs.iter().map(|r| {
        let resource = &r.resource;
        (
            resource.kind.as_deref().unwrap_or_default(),
            resource.name.as_deref().unwrap_or_default(),
        )
    });
    let all: Vec<(&str, &str)> = policies
        .map(|(kind, name)| (kind.as_str(), name.as_str()))
        .chain(resources)
        .collect();
    let templated = all.iter().any(|(_, name)| name.contains("{{"));
    let exact = all
        .into_iter()
        .filter(|(_, name)| !name.contains("{{"))
        .map(|(kind, name)| (intern(kind), Arc::from(name)))
        .collect();
    (exact, templated)
}

impl References {
    /// Indexes profile `name` as its spec `now` names things (`None`: it is gone; a spec
    /// that cannot be read may name anything).
    fn reindex(&mut self, name: &str, now: Option<&serde_json::Result<ClusterProfileSpec>>) {
        for (kind, object) in self.named.remove(name).unwrap_or_default() {
            let Some(of_kind) = self.exact.get_mut(&kind) else {
                continue;
            };
            if let Some(profiles) = of_kind.get_mut(&object) {
                profiles.remove(name);
                if profiles.is_empty() {
                    of_kind.remove(&object);
                }
            }
            if of_kind.is_empty() {
                self.exact.remove(&kind);
            }
        }
        self.templated.remove(name);
        let Some(spec) = now else {
            return;
        };
        let (keys, templated) = spec.as_ref().map_or_else(|_| (Vec::new(), true), names);
        let name = intern(name);
        for (kind, object) in &keys {
            let of_kind = self.exact.entry(Arc::clone(kind)).or_default();
            let profiles = of_kind.entry(Arc::clone(object)).or_default();
            profiles.insert(Arc::clone(&name));
        }
        if templated {
            self.templated.insert(Arc::clone(&name));
        }
        self.named.insert(name, keys.into());
    }
}

impl ByReference {
    /// Follows a profile the store shows changed: indexed as the store holds it now, or
    /// forgotten when the store no longer does.
    pub fn follow(&self, changed: &KeptProfile, store: &Store<KeptProfile>) {
        let name = changed.metadata.name();
        let now = store.get(&ObjectRef::new(name)).map(|p| p.spec());
        lock(&self.0).reindex(name, now.as_ref());
    }

    /// The profiles that may read the `kind` object named `name` (in some namespace).
    pub fn candidates(&self, kind: &str, name: &str) -> BTreeSet<String> {
        let index = lock(&self.0);
        let exact = index.exact.get(kind).and_then(|names| names.get(name));
        let found = index
            .templated
            .iter()
            .chain(exact.into_iter().flat_map(Few::iter));
        found.map(|profile| profile.to_string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::v1beta1::ClusterProfile;
    use kube::runtime::reflector::store;

    fn summary(namespace: &str, name: &str, profile: &str) -> Summary {
        let object = serde_json::from_value(serde_json::json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
            "metadata": {"name": name, "namespace": namespace,
                "labels": {api::labels::CLUSTER_PROFILE_NAME_LABEL: profile}},
            "spec": {"clusterNamespace": namespace, "clusterName": "c", "clusterType": "Sveltos",
                "clusterProfileSpec": {}}
        }))
        .unwrap();
        Summary::new(object)
    }

    /// Applies `event` to the store, then lets the index follow it, as the watch does.
    fn deliver<K, I>(
        writer: &mut kube::runtime::reflector::store::Writer<K>,
        reader: &Store<K>,
        event: Event<K>,
        index: &I,
        follow: fn(&I, &Event<K>, &Store<K>),
    ) where
        K: kube::runtime::reflector::Lookup<DynamicType = ()> + Clone + 'static,
    {
        writer.apply_watcher_event(&event);
        follow(index, &event, reader);
    }

    #[test]
    fn a_small_set_keeps_each_member_once_in_order() {
        let mut few = Few::default();
        for name in ["b", "a", "c", "a", "b"] {
            few.insert(name.to_owned());
        }
        assert_eq!(few.iter().collect::<Vec<_>>(), ["a", "b", "c"]);
        few.remove("b");
        few.remove("z");
        assert_eq!(few.iter().collect::<Vec<_>>(), ["a", "c"]);
        few.remove("a");
        few.remove("c");
        assert!(few.is_empty());
    }

    #[test]
    fn a_profile_reads_its_own_summaries_through_lists_and_relists() {
        let (reader, mut writer) = store::<Summary>();
        let index = ByProfile::default();
        let mut send = |event| deliver(&mut writer, &reader, event, &index, ByProfile::follow);
        let [a1, a2, b1] = [
            summary("ns1", "a-sveltos-c1", "a"),
            summary("ns2", "a-sveltos-c2", "a"),
            summary("ns1", "b-sveltos-c1", "b"),
        ];
        let names = |profile| -> Vec<String> {
            index
                .of(&reader, profile)
                .iter()
                .map(|s| s.name().to_owned())
                .collect()
        };
        // The first list: objects reach the store at its end.
        send(Event::Init);
        send(Event::InitApply(a1.clone()));
        send(Event::InitApply(b1.clone()));
        assert!(names("a").is_empty(), "not in the store before InitDone");
        send(Event::InitDone);
        assert_eq!(names("a"), ["a-sveltos-c1"]);
        send(Event::Apply(a2.clone()));
        assert_eq!(names("a"), ["a-sveltos-c1", "a-sveltos-c2"]);
        assert_eq!(names("b"), ["b-sveltos-c1"]);
        assert!(names("c").is_empty());

        // A relist: a2 is gone without a delete event, c1 came while the watch was down and
        // is read (a pass may run mid-list) before the list ends; it must not be lost.
        let c1 = summary("ns1", "c-sveltos-c1", "c");
        send(Event::Init);
        send(Event::InitApply(a1.clone()));
        send(Event::InitApply(c1.clone()));
        assert!(names("c").is_empty());
        assert_eq!(
            names("a"),
            ["a-sveltos-c1", "a-sveltos-c2"],
            "mid-list: as the store"
        );
        send(Event::InitApply(b1.clone()));
        send(Event::InitDone);
        assert_eq!(names("a"), ["a-sveltos-c1"]);
        assert_eq!(names("c"), ["c-sveltos-c1"]);

        send(Event::Delete(b1.clone()));
        assert!(names("b").is_empty());
        assert!(lock(&index.0).get("b").is_none());
    }

    fn profile(name: &str, spec: serde_json::Value) -> KeptProfile {
        let object: ClusterProfile = serde_json::from_value(serde_json::json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
            "metadata": {"name": name}, "spec": spec
        }))
        .unwrap();
        object.into()
    }

    #[test]
    fn profiles_are_found_by_what_they_name_and_templates_by_anything() {
        let (reader, mut writer) = store::<KeptProfile>();
        let index = ByReference::default();
        // As the shared watch passes them on: the objects each event settled in the store.
        let mut settled = clusters::watch::Settled::default();
        let mut send = |event: Event<KeptProfile>| {
            writer.apply_watcher_event(&event);
            for profile in settled.take(event, &reader) {
                index.follow(&profile, &reader);
            }
        };
        let names_policies = serde_json::json!({"policyRefs": [
            {"kind": "ConfigMap", "name": "policies", "namespace": "default"}]});
        let names_creds = serde_json::json!({"templateResourceRefs": [
            {"identifier": "x", "resource": {"kind": "Secret", "name": "creds"}}]});
        let templated = profile(
            "templated",
            serde_json::json!({"policyRefs": [
                {"kind": "ConfigMap", "name": "{{ .Cluster.metadata.name }}-policies"}]}),
        );
        // Indexed from the list's objects when the list ends.
        send(Event::Init);
        send(Event::InitApply(profile("exact", names_policies.clone())));
        send(Event::InitApply(profile("resource", names_creds.clone())));
        send(Event::InitApply(templated.clone()));
        send(Event::InitDone);
        let found = |kind, name| index.candidates(kind, name).into_iter().collect::<Vec<_>>();
        assert_eq!(found("ConfigMap", "policies"), ["exact", "templated"]);
        assert_eq!(found("Secret", "creds"), ["resource", "templated"]);
        assert_eq!(found("Secret", "policies"), ["templated"]);

        // A changed profile names what it names now; a gone one names nothing.
        send(Event::Apply(profile("exact", names_creds.clone())));
        assert_eq!(found("ConfigMap", "policies"), ["templated"]);
        assert_eq!(found("Secret", "creds"), ["exact", "resource", "templated"]);
        send(Event::Delete(templated));
        assert_eq!(found("Secret", "creds"), ["exact", "resource"]);

        // A relist: "exact" was deleted while the watch was down and "resource" changed its
        // reference; until the list ends the store, and so the index, holds them as before.
        send(Event::Init);
        send(Event::InitApply(profile("resource", names_policies)));
        assert_eq!(found("Secret", "creds"), ["exact", "resource"]);
        assert!(found("ConfigMap", "policies").is_empty());
        send(Event::InitDone);
        assert_eq!(found("ConfigMap", "policies"), ["resource"]);
        assert!(found("Secret", "creds").is_empty());
        assert!(found("ConfigMap", "anything").is_empty());
    }
}
