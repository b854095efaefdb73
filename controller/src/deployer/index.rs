//! The deployer's indexes over its caches: the summaries of a profile, and the profiles that
//! may read a ConfigMap or Secret. Scanning whole stores for them made each pass and each
//! event cost grow with the fleet (10,000 profiles spent most of their convergence comparing
//! labels). An index only narrows the search: the stores stay the truth, and every candidate
//! is checked against them.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use api::labels::CLUSTER_PROFILE_NAME_LABEL;
use api::v1beta1::{ClusterProfile, ClusterProfileSpec, ClusterSummary};
use kube::runtime::reflector::{ObjectRef, Store};

/// The profile a summary belongs to (its `projectsveltos.io/cluster-profile-name` label).
pub fn profile_of(summary: &ClusterSummary) -> &str {
    summary
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CLUSTER_PROFILE_NAME_LABEL))
        .map_or("", String::as_str)
}

/// `(namespace, name)` of every summary the watch delivered, by profile. It may name
/// summaries that are gone (a relist drops objects without an event): readers check each
/// against the store, which stays the truth, and forget the ones it no longer holds.
#[derive(Clone, Default)]
pub struct ByProfile(Arc<Mutex<HashMap<String, BTreeSet<Place>>>>);

/// `(namespace, name)` of a summary.
type Place = (String, String);

impl ByProfile {
    /// Notes a summary the watch delivered (applied or deleted).
    pub fn saw(&self, summary: &ClusterSummary) {
        let place = (
            summary.metadata.namespace.clone().unwrap_or_default(),
            summary.metadata.name.clone().unwrap_or_default(),
        );
        if let Ok(mut index) = self.0.lock() {
            index
                .entry(profile_of(summary).to_owned())
                .or_default()
                .insert(place);
        }
    }

    /// The summaries of `profile` that `store` holds now, by namespace and name.
    pub fn of(&self, store: &Store<ClusterSummary>, profile: &str) -> Vec<Arc<ClusterSummary>> {
        let Ok(mut index) = self.0.lock() else {
            return Vec::new();
        };
        let Some(places) = index.get_mut(profile) else {
            return Vec::new();
        };
        let mut found = Vec::with_capacity(places.len());
        places.retain(|(namespace, name)| {
            let summary = store
                .get(&ObjectRef::new(name).within(namespace))
                .filter(|s| profile_of(s) == profile);
            found.extend(summary.clone());
            summary.is_some()
        });
        if places.is_empty() {
            index.remove(profile);
        }
        found
    }
}

/// `(kind, name)` of an object a profile names.
type Named = (String, String);

/// Profiles by the `(kind, name)` their policyRefs and templateResourceRefs name, and those
/// whose references are templates (which may name any object).
#[derive(Clone, Default)]
pub struct ByReference(Arc<Mutex<References>>);

#[derive(Default)]
struct References {
    exact: HashMap<Named, BTreeSet<String>>,
    templated: BTreeSet<String>,
    /// What each indexed profile named, to forget when it changes or goes.
    named: HashMap<String, Vec<Named>>,
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
        .map(|(kind, name)| (kind.to_owned(), name.to_owned()))
        .collect();
    (exact, templated)
}

impl ByReference {
    /// Notes a profile the watch delivered; `now` is what the store holds under its name
    /// (`None` once it is gone).
    pub fn saw(&self, name: &str, now: Option<&ClusterProfile>) {
        let Ok(mut index) = self.0.lock() else {
            return;
        };
        let References {
            exact,
            templated,
            named,
        } = &mut *index;
        for key in named.remove(name).unwrap_or_default() {
            if let Some(profiles) = exact.get_mut(&key) {
                profiles.remove(name);
                if profiles.is_empty() {
                    exact.remove(&key);
                }
            }
        }
        templated.remove(name);
        let Some(profile) = now else {
            return;
        };
        let (keys, is_templated) = names(&profile.spec);
        for key in &keys {
            exact
                .entry(key.clone())
                .or_default()
                .insert(name.to_owned());
        }
        if is_templated {
            templated.insert(name.to_owned());
        }
        named.insert(name.to_owned(), keys);
    }

    /// The profiles that may read the `kind` object named `name` (in some namespace).
    pub fn candidates(&self, kind: &str, name: &str) -> BTreeSet<String> {
        let Ok(index) = self.0.lock() else {
            return BTreeSet::new();
        };
        let mut found = index.templated.clone();
        if let Some(exact) = index.exact.get(&(kind.to_owned(), name.to_owned())) {
            found.extend(exact.iter().cloned());
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector::store;
    use kube::runtime::watcher::Event;

    fn summary(namespace: &str, name: &str, profile: &str) -> ClusterSummary {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
            "metadata": {"name": name, "namespace": namespace,
                "labels": {CLUSTER_PROFILE_NAME_LABEL: profile}},
            "spec": {"clusterNamespace": namespace, "clusterName": "c", "clusterType": "Sveltos",
                "clusterProfileSpec": {}}
        }))
        .unwrap()
    }

    #[test]
    fn a_profile_reads_its_own_summaries_and_forgets_the_gone() {
        let (reader, mut writer) = store::<ClusterSummary>();
        let index = ByProfile::default();
        let [a1, a2, b1] = [
            summary("ns1", "a-sveltos-c1", "a"),
            summary("ns2", "a-sveltos-c2", "a"),
            summary("ns1", "b-sveltos-c1", "b"),
        ];
        for s in [&a1, &a2, &b1] {
            writer.apply_watcher_event(&Event::Apply(s.clone()));
            index.saw(s);
        }
        let names = |profile| -> Vec<String> {
            index
                .of(&reader, profile)
                .iter()
                .map(|s| s.metadata.name.clone().unwrap_or_default())
                .collect()
        };
        assert_eq!(names("a"), ["a-sveltos-c1", "a-sveltos-c2"]);
        assert_eq!(names("b"), ["b-sveltos-c1"]);
        assert!(names("c").is_empty());

        // A relist that no longer holds a2 drops it without a delete event.
        writer.apply_watcher_event(&Event::Init);
        for s in [&a1, &b1] {
            writer.apply_watcher_event(&Event::InitApply(s.clone()));
        }
        writer.apply_watcher_event(&Event::InitDone);
        assert_eq!(names("a"), ["a-sveltos-c1"]);

        // A deletion is seen and the store no longer has it.
        writer.apply_watcher_event(&Event::Delete(b1.clone()));
        index.saw(&b1);
        assert!(names("b").is_empty());
        assert!(index.0.lock().unwrap().get("b").is_none());
    }

    fn profile(refs: serde_json::Value) -> ClusterProfile {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
            "metadata": {"name": "p"}, "spec": refs
        }))
        .unwrap()
    }

    #[test]
    fn profiles_are_found_by_what_they_name_and_templates_by_anything() {
        let index = ByReference::default();
        let exact = profile(serde_json::json!({"policyRefs": [
            {"kind": "ConfigMap", "name": "policies", "namespace": "default"}]}));
        let resource = profile(serde_json::json!({"templateResourceRefs": [
            {"identifier": "x", "resource": {"kind": "Secret", "name": "creds"}}]}));
        let templated = profile(serde_json::json!({"policyRefs": [
            {"kind": "ConfigMap", "name": "{{ .Cluster.metadata.name }}-policies"}]}));
        index.saw("exact", Some(&exact));
        index.saw("resource", Some(&resource));
        index.saw("templated", Some(&templated));
        let found = |kind, name| index.candidates(kind, name).into_iter().collect::<Vec<_>>();
        assert_eq!(found("ConfigMap", "policies"), ["exact", "templated"]);
        assert_eq!(found("Secret", "creds"), ["resource", "templated"]);
        assert_eq!(found("Secret", "policies"), ["templated"]);

        // A changed profile names what it names now; a gone one names nothing.
        index.saw("exact", Some(&resource));
        assert_eq!(found("ConfigMap", "policies"), ["templated"]);
        assert_eq!(found("Secret", "creds"), ["exact", "resource", "templated"]);
        index.saw("templated", None);
        index.saw("exact", None);
        assert_eq!(found("Secret", "creds"), ["resource"]);
        assert!(found("ConfigMap", "anything").is_empty());
    }
}
