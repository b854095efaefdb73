//! The manager's view of the management cluster: reflector caches kept current by watches, and
//! the [`World`] reads the planner needs, served from them.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use api::labels::{EVENT_TRIGGER_NAME_LABEL, SVELTOS_NAMESPACE};
use api::secret_data;
use api::v1beta1::{ClusterSet, EventReport, EventSource, EventTrigger, event_report_name};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::event_data::{DocumentMemo, ReportEvents, reference_digest};
use crate::fleet::{Cluster, Fleet};
use crate::identity::{ClusterRef, source_cluster};
use crate::instantiate::{Lookup, Referenced};
use crate::kept::config_map::KeptConfigMap;
use crate::kept::profile::KeptProfile;
use crate::kept::{Labelled, Meta};
use crate::manager::owned::{Object, Owned};
use crate::memo::{self, Digest};
use crate::plan::World;
use crate::profiles::{Built, Wanted};
use crate::room;
use crate::settled::{Settled, SettledObject, Stamp};
use crate::watches::Freshness;

/// Reflector stores of everything the manager reads.
#[derive(Clone)]
pub struct Caches {
    /// EventTriggers.
    pub triggers: Store<EventTrigger>,
    /// Registered clusters and the scope this manager handles.
    pub fleet: Fleet,
    /// ClusterSets (triggers' `clusterSetRefs`).
    pub cluster_sets: Store<ClusterSet>,
    /// EventSources.
    pub sources: Store<EventSource>,
    /// EventReports (management-cluster copies, in cluster namespaces).
    pub reports: Store<EventReport>,
    /// ConfigMaps (referenced templates and generated objects).
    pub config_maps: Store<KeptConfigMap>,
    /// Secrets (referenced templates and generated objects).
    pub secrets: Store<Secret>,
    /// Every ClusterProfile (the store the deployer reads too); generated ones carry the
    /// trigger label.
    pub profiles: Store<KeptProfile>,
    /// Bumped after every change of a ConfigMap or Secret the manager did not write itself
    /// (the objects policyRefs and generators may read).
    pub lookup_epoch: Arc<AtomicU64>,
    /// The manager's own writes of generated objects, so the watch event each causes does
    /// not plan the trigger again.
    pub own_writes: Arc<Mutex<OwnWrites>>,
    /// What each trigger's passes wrote (`(kind, name)` of generated objects) and the caches
    /// do not show yet: an object whose watch event is still on the way (and will be taken
    /// for an echo) is still deleted once it goes stale. Let go when the echo arrives (the
    /// cache holds it then) or the object is deleted; each is kept with the source cluster
    /// its labels name.
    pub written: Arc<Mutex<HashMap<String, Written>>>,
    /// EventSources and EventReports whose conditions need a look.
    pub status: Arc<super::status::StatusWork>,
    /// Generated objects found to hold what a pass wanted, by `Kind/name`: the object wanted
    /// and the resourceVersion the cache showed. While both are unchanged, later passes need
    /// not compare them again.
    pub confirmed: Arc<Mutex<Confirmations>>,
    /// When each source cluster's report last changed: a pass writes the freshest clusters'
    /// objects first.
    pub fresh: Freshness,
    /// Each report's events as last decoded, by place, with the resourceVersion decoded: a
    /// pass decodes again only the reports that changed.
    pub decoded: Arc<Mutex<Decoded>>,
    /// When each resource of a report not decoded yet was first listed: its first decode
    /// dates its events by them.
    pub listed: Arc<Mutex<Listed>>,
    /// The generated objects the caches hold, by trigger and source cluster.
    pub owned: Arc<Mutex<Owned>>,
}

/// Reports' events as last decoded: by (namespace, name), with the resourceVersion decoded.
pub type Decoded = HashMap<(String, String), (String, ReportEvents)>;

/// When each matching resource of reports not decoded yet was first listed: by report
/// (namespace, name), then by [`reference_digest`].
pub type Listed = HashMap<(String, String), HashMap<Digest, Instant>>;

/// [`Caches::confirmed`]: the confirmations, and the count at which those of objects gone
/// are let go.
#[derive(Default)]
pub struct Confirmations {
    by_key: HashMap<String, Confirmed>,
    prune_at: usize,
}

/// A generated object the cache showed as wanted (or a write left as wanted): the wanted
/// object (kept, so its address is not reused by another) and the object's stamp.
pub type Confirmed = (Arc<dyn Any + Send + Sync>, Stamp);

/// Generated objects a trigger's passes wrote: `(kind, name)` -> source cluster.
pub type Written = BTreeMap<(String, String), Option<ClusterRef>>;

/// [`Caches::own_writes`].
#[derive(Debug, Default)]
pub struct OwnWrites {
    /// The version each write left (resourceVersion; generation for ClusterProfiles, whose
    /// status the deployer writes), by key, as digests: kept for every generated object (a
    /// fleet's are hundreds of thousands), compared only for equality.
    versions: HashMap<Digest, Digest>,
    /// Objects being written, with the versions their events showed meanwhile (none: a
    /// deletion). A write's event may come before its answer: such events wait for it.
    writing: HashMap<Digest, Vec<Option<String>>>,
}

/// The kinds of objects a trigger generates.
pub const GENERATED_KINDS: [&str; 3] = ["ClusterProfile", "ConfigMap", "Secret"];

/// Key of a generated object in [`Caches::confirmed`]: `Kind/name`.
pub fn confirmation_key(kind: &str, name: &str) -> String {
    format!("{kind}/{name}")
}

/// Key of an object in [`Caches::own_writes`].
fn own_key(kind: &str, namespace: &str, name: &str) -> Digest {
    memo::digest(&(kind, namespace, name))
}

impl Caches {
    /// Notes when each resource `report` lists was first listed, until the report's first
    /// decode (which then dates its events by it, not all as its last change).
    pub fn list(&self, report: &EventReport) {
        let place = report_place(report);
        if self.decoded.lock().is_ok_and(|d| d.contains_key(&place)) {
            return;
        }
        let Ok(mut listed) = self.listed.lock() else {
            return;
        };
        self.forget_gone_reports(&mut listed);
        let now = Instant::now();
        let times = listed.entry(place).or_default();
        let resources = &report.spec.matching_resources;
        *times = resources
            .iter()
            .map(reference_digest)
            .map(|digest| (digest, times.get(&digest).copied().unwrap_or(now)))
            .collect();
    }

    /// Lets the last decode of `report` (a newer version the cache now holds) go but for its
    /// event times, or, when the cache's version holds the same events (its status was
    /// written), makes the decode read from that version: a decode reads its references and
    /// collected objects from the report it decoded, which it would otherwise hold beside the
    /// cache's newer one until its next decode (two versions of every report).
    pub fn outdate(&self, report: &EventReport) {
        let place = report_place(report);
        let current = (self.reports).get(&ObjectRef::new(&place.1).within(&place.0));
        let Ok(mut decoded) = self.decoded.lock() else {
            return;
        };
        if let Some((at, events)) = decoded.get_mut(&place)
            && report.metadata.resource_version.as_ref() != Some(&*at)
        {
            let rebased = current.and_then(|c| Some((events.rebased(&c)?, c)));
            *events = match rebased {
                Some((rebased, current)) => {
                    *at = current
                        .metadata
                        .resource_version
                        .clone()
                        .unwrap_or_default();
                    rebased
                }
                None => ReportEvents {
                    seen: Arc::clone(&events.seen),
                    ..ReportEvents::default()
                },
            };
        }
    }

    /// Forgets the entries of `by_report` (keyed by report namespace and name) whose report
    /// is gone, once it holds many more than the cache has reports.
    fn forget_gone_reports<V>(&self, by_report: &mut HashMap<(String, String), V>) {
        // The store's state is a copy: taken only once the map is not small.
        if by_report.len() <= 16 || by_report.len() <= 2 * self.reports.state().len() + 16 {
            return;
        }
        by_report.retain(|(namespace, name), _| {
            let place = ObjectRef::new(name).within(namespace);
            self.reports.get(&place).is_some()
        });
    }

    /// Whether the cache showed `wanted` as object `key` (`Kind/name`) at `version` in an
    /// earlier pass (or a write left it so).
    pub fn is_confirmed<T>(&self, key: &str, wanted: &Arc<T>, version: &str) -> bool {
        self.confirmed.lock().is_ok_and(|confirmed| {
            confirmed.by_key.get(key).is_some_and(|(object, at)| {
                std::ptr::addr_eq(Arc::as_ptr(object), Arc::as_ptr(wanted)) && at.version == version
            })
        })
    }

    /// The stamp of object `key` (`Kind/name`) if it is confirmed as `wanted` (by address).
    fn confirmed_stamp(&self, key: &str, wanted: &dyn Wanted) -> Option<Stamp> {
        let confirmed = self.confirmed.lock().ok()?;
        let (object, stamp) = confirmed.by_key.get(key)?;
        std::ptr::addr_eq(Arc::as_ptr(object), wanted.address()).then(|| stamp.clone())
    }

    /// `built` settled, if each of its objects is confirmed as the unit wants it; their
    /// confirmations are let go then, and with them the last hold on the unit's objects
    /// besides the memo's.
    pub fn settle(&self, built: &Built) -> Option<Settled> {
        let settled = built.settle(|kind, name, wanted| {
            self.confirmed_stamp(&confirmation_key(kind, name), wanted)
        })?;
        if let Ok(mut confirmed) = self.confirmed.lock() {
            for object in &settled.objects {
                confirmed
                    .by_key
                    .remove(&confirmation_key(object.kind, &object.name));
            }
        }
        Some(settled)
    }

    /// Forgets confirmations of objects the caches no longer hold (deleted by someone else, or
    /// with their trigger) each time the confirmations double: amortised, a pass pays nothing
    /// for it.
    pub fn prune_confirmed(&self) {
        let Ok(mut confirmed) = self.confirmed.lock() else {
            return;
        };
        if confirmed.by_key.len() <= confirmed.prune_at.max(1024) {
            return;
        }
        confirmed.by_key.retain(|key, _| {
            let (kind, name) = key.split_once('/').unwrap_or_default();
            match kind {
                "ClusterProfile" => self.profiles.get(&ObjectRef::new(name)).is_some(),
                "ConfigMap" => self
                    .config_maps
                    .get(&ObjectRef::new(name).within(SVELTOS_NAMESPACE))
                    .is_some(),
                "Secret" => self
                    .secrets
                    .get(&ObjectRef::new(name).within(SVELTOS_NAMESPACE))
                    .is_some(),
                _ => false,
            }
        });
        confirmed.prune_at = 2 * confirmed.by_key.len();
    }

    /// Records that the cache shows the wanted object `key` (`Kind/name`) at a version;
    /// `None` forgets it.
    pub fn confirm(&self, name: &str, confirmed: Option<Confirmed>) {
        if let Ok(mut map) = self.confirmed.lock() {
            match confirmed {
                Some(entry) => map.by_key.insert(name.to_owned(), entry),
                None => map.by_key.remove(name),
            };
        }
    }

    /// Announces a write of generated `kind` object `namespace/name`: its events wait for
    /// the answer ([`Caches::wrote`] or [`Caches::write_failed`]).
    pub fn writing(&self, kind: &str, namespace: &str, name: &str) {
        if let Ok(mut writes) = self.own_writes.lock() {
            writes
                .writing
                .insert(own_key(kind, namespace, name), Vec::new());
        }
    }

    /// Records `trigger`'s write of a generated `kind` object, as the server answered it
    /// (`written`): the version it left (resourceVersion; generation for ClusterProfiles), so
    /// its echo plans nothing, and the object with its labels until the cache holds it.
    /// True when an event that came meanwhile was not the write's own: someone else changed
    /// the object, and the trigger needs a whole pass.
    pub fn wrote(
        &self,
        trigger: &str,
        kind: &str,
        written: &ObjectMeta,
        version: Option<String>,
    ) -> bool {
        let name = written.name.as_deref().unwrap_or_default();
        let namespace = written.namespace.as_deref().unwrap_or_default();
        let key = own_key(kind, namespace, name);
        let held = match self.own_writes.lock() {
            Ok(mut writes) => {
                let held = writes.writing.remove(&key).unwrap_or_default();
                room::give_back(&mut writes.writing);
                if let Some(version) = &version {
                    writes.versions.insert(key, memo::digest(version));
                }
                held
            }
            Err(_) => Vec::new(),
        };
        // Its echo came already: the cache holds it.
        if !held.contains(&version)
            && let Ok(mut objects) = self.written.lock()
        {
            objects
                .entry(trigger.to_owned())
                .or_default()
                .insert((kind.to_owned(), name.to_owned()), source_cluster(written));
        }
        held.iter().any(|seen| *seen != version)
    }

    /// Ends the announced write of `kind` object `namespace/name`, which failed: true when an
    /// event came meanwhile (the trigger needs a whole pass).
    pub fn write_failed(&self, kind: &str, namespace: &str, name: &str) -> bool {
        self.own_writes.lock().is_ok_and(|mut writes| {
            let held = writes.writing.remove(&own_key(kind, namespace, name));
            room::give_back(&mut writes.writing);
            held.is_some_and(|held| !held.is_empty())
        })
    }

    /// Forgets that `trigger` wrote generated object `kind`/`name`: it is gone, or the cache
    /// holds it now.
    pub fn forget_written(&self, trigger: &str, kind: &str, name: &str) {
        if let Ok(mut written) = self.written.lock()
            && let Some(objects) = written.get_mut(trigger)
        {
            objects.remove(&(kind.to_owned(), name.to_owned()));
            if objects.is_empty() {
                written.remove(trigger);
            }
        }
    }

    /// The generated objects `trigger`'s passes wrote that the caches do not show yet, with
    /// their source clusters: all of them, or those of `clusters` only.
    pub fn written_by(
        &self,
        trigger: &str,
        clusters: Option<&BTreeSet<ClusterRef>>,
    ) -> Vec<(Option<ClusterRef>, Object)> {
        let Ok(written) = self.written.lock() else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for ((kind, name), cluster) in written.get(trigger).into_iter().flatten() {
            let Some(kind) = GENERATED_KINDS.iter().find(|k| *k == kind) else {
                continue;
            };
            let cluster = cluster.clone();
            let within =
                clusters.is_none_or(|set| cluster.as_ref().is_some_and(|c| set.contains(c)));
            if within {
                found.push((cluster, (*kind, name.clone())));
            }
        }
        found
    }

    /// Whether a watch event of a `kind` object needs no planning: the object (`present` in
    /// the cache) shows the `version` the manager's own write left, or it is being written
    /// (the event waits for the answer). Forgets the write of an object that is gone, and the
    /// record of a generated one the cache now holds.
    pub fn is_echo(
        &self,
        kind: &str,
        meta: &impl Meta,
        present: bool,
        version: Option<&str>,
    ) -> bool {
        let name = meta.name();
        let key = own_key(kind, meta.namespace().unwrap_or_default(), name);
        let echo = match self.own_writes.lock() {
            Ok(mut writes) => {
                // The last answered write's echo is one even while the next write is on its
                // way; any other event then waits for that write's answer.
                let own = version.is_some_and(|version| {
                    present && writes.versions.get(&key) == Some(&memo::digest(version))
                });
                if !own && let Some(held) = writes.writing.get_mut(&key) {
                    held.push(version.filter(|_| present).map(str::to_owned));
                    return true;
                }
                if !present {
                    writes.versions.remove(&key);
                }
                own
            }
            Err(_) => false,
        };
        if echo && let Some(trigger) = meta.label(EVENT_TRIGGER_NAME_LABEL) {
            self.forget_written(trigger, kind, name);
        }
        echo
    }

    /// Keeps [`Caches::owned`] as a watch event of a `kind` object shows it (`present` in
    /// its cache or gone). ConfigMaps and Secrets count in Sveltos' namespace only, where
    /// generated ones live; call before [`Caches::is_echo`], which lets the record of the
    /// manager's own write go. Returns the trigger the object no longer belongs to, if any
    /// (its labels were edited away, or it is gone), whose pass must see to it.
    pub fn saw_generated(
        &self,
        kind: &'static str,
        meta: &impl Meta,
        present: bool,
    ) -> Option<String> {
        if kind != "ClusterProfile" && meta.namespace() != Some(SVELTOS_NAMESPACE) {
            return None;
        }
        let name = meta.name().to_owned();
        let mut owned = self.owned.lock().ok()?;
        owned.seen((kind, name), meta, present)
    }

    /// Records that a referenced ConfigMap or Secret changed (the stores already hold it).
    pub fn referenced_changed(&self) {
        self.lookup_epoch.fetch_add(1, Ordering::Release);
    }
}

/// Whether `labels` say the object was generated by `trigger`.
pub fn generated_by(labels: impl Labelled, trigger: &str) -> bool {
    labels.label(EVENT_TRIGGER_NAME_LABEL) == Some(trigger)
}

/// Where `report` is: its (namespace, name), as [`Caches::decoded`] and [`Caches::listed`]
/// key it.
fn report_place(report: &EventReport) -> (String, String) {
    (
        report.metadata.namespace.clone().unwrap_or_default(),
        report.metadata.name.clone().unwrap_or_default(),
    )
}

/// A referenced ConfigMap or Secret from the caches (Secret data decoded as text).
pub fn referenced(
    config_maps: &Store<KeptConfigMap>,
    secrets: &Store<Secret>,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Option<Referenced> {
    match kind {
        "ConfigMap" => config_maps
            .get(&ObjectRef::new(name).within(namespace))
            .map(|o| Referenced::from_config_map(&o)),
        "Secret" => secrets
            .get(&ObjectRef::new(name).within(namespace))
            .map(|o| Referenced::from_secret(&o)),
        _ => None,
    }
}

impl Lookup for Caches {
    fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Referenced> {
        referenced(&self.config_maps, &self.secrets, kind, namespace, name)
    }
}

impl Caches {
    /// The data of collected Secrets the agent moved out of `report` (named `name` in
    /// `namespace`) into its companion Secret; an error while the companion the report names
    /// is not (yet) in the cache, so no template sees a Secret without its data.
    fn sealed_data(
        &self,
        report: &EventReport,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, ByteString>, String> {
        let annotation = |meta: &ObjectMeta| {
            meta.annotations
                .as_ref()
                .and_then(|a| a.get(secret_data::SECRET_DATA_ANNOTATION))
                .cloned()
        };
        let Some(wanted) = annotation(&report.metadata) else {
            return Ok(BTreeMap::new());
        };
        let companion = secret_data::companion_name(name);
        self.secrets
            .get(&ObjectRef::new(&companion).within(namespace))
            .filter(|secret| annotation(&secret.metadata).as_ref() == Some(&wanted))
            .map(|secret| secret.data.clone().unwrap_or_default())
            .ok_or_else(|| {
                format!(
                    "EventReport {namespace}/{name} names secret data that Secret \
                     {namespace}/{companion} does not hold yet"
                )
            })
    }
}

impl World for Caches {
    fn clusters(&self) -> Arc<[Cluster]> {
        self.fleet.in_scope()
    }

    fn holds(&self, object: &SettledObject) -> bool {
        let (name, stamp) = (object.name.as_str(), &object.stamp);
        let ours = ObjectRef::new(name).within(SVELTOS_NAMESPACE);
        match object.kind {
            "ClusterProfile" => {
                (self.profiles.get(&ObjectRef::new(name))).is_some_and(|p| stamp.holds(&p.metadata))
            }
            "Secret" => (self.secrets.get(&ours)).is_some_and(|s| stamp.holds(&s.metadata)),
            _ => (self
                .config_maps
                .get(&ObjectRef::new(name).within(SVELTOS_NAMESPACE)))
            .is_some_and(|c| stamp.holds(&c.metadata)),
        }
    }

    fn lookup_epoch(&self) -> u64 {
        self.lookup_epoch.load(Ordering::Acquire)
    }

    fn cluster_set(&self, name: &str) -> Vec<ClusterRef> {
        crate::sets::selected(&self.cluster_sets, name)
    }

    fn event_source_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        let source = self.sources.get(&ObjectRef::new(name))?;
        source
            .metadata
            .deletion_timestamp
            .is_none()
            .then(|| source.metadata.labels.clone().unwrap_or_default())
    }

    fn report(
        &self,
        cluster: &ClusterRef,
        event_source: &str,
        documents: &mut DocumentMemo,
    ) -> Result<Option<ReportEvents>, String> {
        let name = event_report_name(event_source, &cluster.name, cluster.cluster_type);
        let Some(report) = self
            .reports
            .get(&ObjectRef::new(&name).within(&cluster.namespace))
        else {
            return Ok(None);
        };
        if report.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let place = (cluster.namespace.clone(), name);
        let version = report.metadata.resource_version.clone().unwrap_or_default();
        let mut earlier = None;
        if let Ok(decoded) = self.decoded.lock()
            && let Some((at, events)) = decoded.get(&place)
        {
            if *at == version {
                events.keep_documents(documents);
                return Ok(Some(events.clone()));
            }
            earlier = Some(Arc::clone(&events.seen));
        }
        let sealed = self.sealed_data(&report, &cluster.namespace, &place.1)?;
        let mut events =
            ReportEvents::decode_sealed(&report, &sealed, documents).map_err(|e| e.to_string())?;
        // New events are as old as the report's last change, not as this decode, which may
        // come long after in a busy fleet.
        let changed = self.fresh.at(cluster).unwrap_or_else(Instant::now);
        let listed = self.listed.lock().ok().and_then(|mut l| l.remove(&place));
        events.date(earlier.as_deref(), &listed.unwrap_or_default(), changed);
        if let Ok(mut decoded) = self.decoded.lock() {
            self.forget_gone_reports(&mut decoded);
            decoded.insert(place, (version, events.clone()));
        }
        Ok(Some(events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_data::References;
    use crate::fleet::ClusterScope;
    use api::v1beta1::ClusterProfile;
    use clusters::capi::CapiClusters;
    use clusters::registry::Registry;
    use kube::runtime::reflector::store;

    fn caches() -> Caches {
        let registry = Registry {
            sveltos: store().0,
            capi: CapiClusters::none(),
        };
        Caches {
            triggers: store().0,
            fleet: Fleet::new(registry, ClusterScope::default()),
            cluster_sets: store().0,
            sources: store().0,
            reports: store().0,
            config_maps: store().0,
            secrets: store().0,
            profiles: store().0,
            lookup_epoch: Arc::default(),
            own_writes: Arc::default(),
            written: Arc::default(),
            status: Arc::default(),
            confirmed: Arc::default(),
            fresh: Freshness::default(),
            decoded: Arc::default(),
            listed: Arc::default(),
            owned: Arc::default(),
        }
    }

    #[test]
    fn a_first_decode_dates_each_resource_as_first_listed() {
        use api::v1beta1::{ClusterType, EventReportSpec};
        use k8s_openapi::api::core::v1::ObjectReference;
        let (reports, mut writer) = store();
        let caches = Caches {
            reports,
            ..caches()
        };
        let cluster = ClusterRef {
            namespace: "fleet".into(),
            name: "c1".into(),
            cluster_type: ClusterType::Sveltos,
        };
        let report = |names: &[&str], version: &str| {
            let spec = EventReportSpec {
                matching_resources: names
                    .iter()
                    .map(|name| ObjectReference {
                        api_version: Some("v1".into()),
                        kind: Some("Service".into()),
                        namespace: Some("default".into()),
                        name: Some((*name).into()),
                        ..ObjectReference::default()
                    })
                    .collect(),
                ..EventReportSpec::default()
            };
            let mut report =
                EventReport::new(&event_report_name("s", "c1", ClusterType::Sveltos), spec);
            report.metadata.namespace = Some("fleet".into());
            report.metadata.resource_version = Some(version.into());
            report
        };
        // Listed in two versions before the manager got to decode the report.
        caches.list(&report(&["a"], "1"));
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = report(&["a", "b"], "2");
        caches.list(&second);
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(second.clone()));
        let events = caches
            .report(&cluster, "s", &mut DocumentMemo::default())
            .unwrap()
            .unwrap();
        let when = |name: &str| events.first_seen(name).unwrap();
        assert!(when("a") < when("b"), "a was listed first");
        let (b_seen, seen) = (when("b"), Arc::clone(&events.seen));
        // Once decoded, a report is dated by its decodes: nothing more is listed.
        caches.list(&second);
        assert!(caches.listed.lock().unwrap().is_empty());

        // A newer version lets the decode go but for its times; the decoded one does not.
        let place = ("fleet".to_owned(), second.metadata.name.clone().unwrap());
        let decoded = |caches: &Caches| caches.decoded.lock().unwrap()[&place].1.clone();
        caches.outdate(&second);
        assert_eq!(decoded(&caches).matching_resources.len(), 2);
        // Its status written: the same events, read from the cache's version, kept.
        let mut written = second.clone();
        written.metadata.resource_version = Some("3".into());
        written.status = Some(api::v1beta1::EventReportStatus::default());
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(written.clone()));
        let held = Arc::downgrade(&match decoded(&caches).matching_resources {
            References::InReport(report) => report,
            References::Own(_) => panic!("decoded events read their report"),
        });
        caches.outdate(&written);
        let after = decoded(&caches);
        assert_eq!((after.matching_resources.len(), &after.seen), (2, &seen));
        drop((after, events));
        assert!(
            held.upgrade().is_none(),
            "the version before the status write is let go"
        );
        assert_eq!(caches.decoded.lock().unwrap()[&place].0, "3");
        let third = report(&["a", "b", "c"], "4");
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(third.clone()));
        caches.outdate(&third);
        assert!(decoded(&caches).matching_resources.is_empty());
        assert_eq!(decoded(&caches).seen, seen);
        let later = caches
            .report(&cluster, "s", &mut DocumentMemo::default())
            .unwrap()
            .unwrap();
        assert_eq!(later.first_seen("b"), Some(b_seen), "b keeps its time");
        assert!(later.first_seen("c") > Some(b_seen));
    }

    /// The stamp of an object at `version`.
    fn at(version: &str) -> Stamp {
        Stamp {
            version: version.into(),
            ..Stamp::default()
        }
    }

    #[test]
    fn a_confirmed_profile_holds_while_neither_it_nor_the_cache_changes() {
        let caches = caches();
        let wanted = Arc::new(ClusterProfile::default());
        let equal_copy = Arc::new(ClusterProfile::default());
        assert!(!caches.is_confirmed("p", &wanted, "1"));
        caches.confirm(
            "p",
            Some((Arc::clone(&wanted) as Arc<dyn Any + Send + Sync>, at("1"))),
        );
        assert!(caches.is_confirmed("p", &wanted, "1"));
        // Another resourceVersion (an edit by anyone) or another wanted profile: compare again.
        assert!(!caches.is_confirmed("p", &wanted, "2"));
        assert!(!caches.is_confirmed("p", &equal_copy, "1"));
        assert!(!caches.is_confirmed("q", &wanted, "1"));
        caches.confirm("p", None);
        assert!(!caches.is_confirmed("p", &wanted, "1"));
    }

    #[test]
    fn confirmations_of_objects_gone_are_let_go_as_they_pile_up() {
        let caches = caches();
        let confirm = |i: usize| {
            let wanted = Arc::new(ClusterProfile::default()) as Arc<dyn Any + Send + Sync>;
            caches.confirm(&format!("ClusterProfile/p{i}"), Some((wanted, at("1"))));
        };
        let count = || caches.confirmed.lock().map_or(0, |c| c.by_key.len());
        (0..1000).for_each(confirm);
        caches.prune_confirmed();
        assert_eq!(count(), 1000, "a few are kept without a look");
        (1000..1100).for_each(confirm);
        caches.prune_confirmed();
        assert_eq!(count(), 0, "none of these profiles is in the cache");
    }

    /// ConfigMap `projectsveltos/x` of trigger `t` at `version`.
    fn meta(version: &str) -> ObjectMeta {
        let labels = BTreeMap::from([(EVENT_TRIGGER_NAME_LABEL.to_owned(), "t".to_owned())]);
        ObjectMeta {
            name: Some("x".into()),
            namespace: Some("projectsveltos".into()),
            labels: Some(labels),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn a_write_is_remembered_until_its_echo_reaches_the_cache() {
        let caches = caches();
        caches.wrote("t", "ConfigMap", &meta("5"), Some("5".into()));
        let written = || caches.written_by("t", None).len();
        assert_eq!(written(), 1);

        // Someone else's change (another version) plans, and the record stays.
        assert!(!caches.is_echo("ConfigMap", &meta("4"), true, Some("4")));
        assert_eq!(written(), 1);
        // The echo plans nothing, and the cache holds the object from now on.
        assert!(caches.is_echo("ConfigMap", &meta("5"), true, Some("5")));
        assert_eq!(written(), 0);
        assert!(caches.written.lock().unwrap().is_empty());
    }

    #[test]
    fn events_of_an_object_being_written_wait_for_the_answer() {
        let caches = caches();
        // The write's own event came before its answer: nothing to plan, nothing kept.
        caches.writing("ConfigMap", "projectsveltos", "x");
        assert!(caches.is_echo("ConfigMap", &meta("5"), true, Some("5")));
        assert!(!caches.wrote("t", "ConfigMap", &meta("5"), Some("5".into())));
        assert!(
            caches.written_by("t", None).is_empty(),
            "the cache holds it"
        );
        assert!(caches.is_echo("ConfigMap", &meta("5"), true, Some("5")));
        // Someone else's change meanwhile: the trigger needs a whole pass.
        caches.writing("ConfigMap", "projectsveltos", "x");
        assert!(caches.is_echo("ConfigMap", &meta("6"), true, Some("6")));
        assert!(caches.wrote("t", "ConfigMap", &meta("7"), Some("7".into())));
        // So does a deletion meanwhile, even of a write that failed.
        caches.writing("ConfigMap", "projectsveltos", "x");
        assert!(caches.is_echo("ConfigMap", &meta("7"), false, Some("7")));
        assert!(caches.write_failed("ConfigMap", "projectsveltos", "x"));
        // A failed write with nothing meanwhile holds nothing back afterwards.
        caches.writing("ConfigMap", "projectsveltos", "x");
        assert!(!caches.write_failed("ConfigMap", "projectsveltos", "x"));
        assert!(!caches.is_echo("ConfigMap", &meta("8"), true, Some("8")));
    }

    #[test]
    fn an_earlier_writes_echo_during_the_next_write_plans_nothing() {
        let caches = caches();
        // Two passes write the object one after the other; the first's event comes late.
        assert!(!caches.wrote("t", "ConfigMap", &meta("5"), Some("5".into())));
        caches.writing("ConfigMap", "projectsveltos", "x");
        assert!(caches.is_echo("ConfigMap", &meta("5"), true, Some("5")));
        assert!(!caches.wrote("t", "ConfigMap", &meta("6"), Some("6".into())));
        assert!(caches.is_echo("ConfigMap", &meta("6"), true, Some("6")));
        assert!(
            caches.written_by("t", None).is_empty(),
            "the cache holds it"
        );
    }
}
