//! The "apply" step: make the management cluster hold exactly a trigger's planned objects.
//! Writes only what differs from the cache (server-side apply, Sveltos' field manager):
//! generated ConfigMaps/Secrets before the ClusterProfiles naming them, and deletes stale
//! ClusterProfiles first and stale ConfigMaps/Secrets once those are gone.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use api::labels::{AGENT_SOURCES_LABEL, CLUSTER_PROFILE_SECRET_TYPE, SVELTOS_NAMESPACE};
use api::v1beta1::{
    ClusterProfile, agent_sources_cluster, agent_sources_config_map_name, agent_sources_key,
};
use futures_util::{StreamExt, stream};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client};

use crate::answer;
use crate::identity::{ClusterRef, source_cluster};
use crate::instantiate::Generated;
use crate::kept::{HasMeta, Labelled, Meta};
use crate::manager::caches::{Caches, confirmation_key, generated_by};
use crate::manager::owned::Object;
use crate::plan::Plan;
use crate::settled::Stamp;

/// Field manager of every write, as Sveltos' event-manager.
pub const FIELD_MANAGER: &str = "application/apply-patch";

/// Requests of one phase a pass keeps in flight: a fleet's first pass writes two objects per
/// event (and a trigger's deletion deletes them), and one at a time it waits a round trip
/// for each.
const IN_FLIGHT: usize = 16;

/// What a pass did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Objects created or updated.
    pub written: usize,
    /// Objects deleted.
    pub deleted: usize,
    /// Stale ClusterProfiles still terminating: ConfigMaps/Secrets wait for a later pass.
    pub waiting: bool,
    /// The source clusters whose writes the pass's time left for the next pass (none: every
    /// write was made).
    pub left: BTreeSet<Option<ClusterRef>>,
    /// Someone else changed an object while the pass wrote it: the trigger needs a whole
    /// pass.
    pub disturbed: bool,
}

impl Applied {
    /// Adds what another part of the same pass did.
    pub fn add(&mut self, other: Applied) {
        self.written += other.written;
        self.deleted += other.deleted;
        self.waiting |= other.waiting;
        self.left.extend(other.left);
        self.disturbed |= other.disturbed;
    }
}

/// Runs `write` of `kind` object `namespace/name` announced to the caches, so that its watch
/// event, which may come before the answer, waits for it rather than plan the trigger again.
/// Sets `disturbed` when a failed write had events meanwhile.
async fn announced<T>(
    caches: &Caches,
    (kind, namespace, name): (&str, &str, &str),
    write: impl Future<Output = kube::Result<T>>,
    disturbed: &AtomicBool,
) -> kube::Result<T> {
    caches.writing(kind, namespace, name);
    let result = write.await;
    if result.is_err() && caches.write_failed(kind, namespace, name) {
        disturbed.store(true, Ordering::Relaxed);
    }
    result
}

/// The source clusters whose generated objects a pass makes as its plan says.
#[derive(Clone, Copy)]
pub enum Scope<'a> {
    /// Every cluster (objects naming none included).
    All,
    /// These clusters only, which the plan covers.
    Only(&'a BTreeSet<ClusterRef>),
    /// Every cluster but these, which passes over them apply.
    AllBut(&'a BTreeSet<ClusterRef>),
}

impl<'a> Scope<'a> {
    /// The clusters of a pass over some clusters.
    fn only(self) -> Option<&'a BTreeSet<ClusterRef>> {
        match self {
            Scope::Only(clusters) => Some(clusters),
            Scope::All | Scope::AllBut(_) => None,
        }
    }
}

/// Whether an existing object of source `cluster` belongs to a cluster this pass leaves as it
/// is: outside its scope, its pass failed, it is paused, or another shard's manager handles
/// it.
fn untouched(cluster: Option<&ClusterRef>, plan: &Plan, scope: Scope, caches: &Caches) -> bool {
    cluster.is_some_and(|cluster| {
        matches!(scope, Scope::AllBut(others) if others.contains(cluster))
            || plan.failures.contains_key(cluster)
            || plan.held.contains_key(cluster)
            || caches.fleet.handled_elsewhere(cluster)
    })
}

/// Whether `existing` has every wanted label (or annotation).
fn labels_hold(existing: impl Labelled, wanted: &BTreeMap<String, String>) -> bool {
    wanted.iter().all(|(k, v)| existing.label(k) == Some(v))
}

/// Whether a stored Secret's data is the generated data, as bytes.
fn same_bytes(
    current: Option<&BTreeMap<String, ByteString>>,
    wanted: &BTreeMap<String, String>,
) -> bool {
    let current_len = current.map_or(0, BTreeMap::len);
    current_len == wanted.len()
        && current
            .into_iter()
            .flatten()
            .zip(wanted)
            .all(|((k1, v1), (k2, v2))| k1 == k2 && v1.0 == v2.as_bytes())
}

/// Whether the cache holds `wanted` as object `kind`/`name` (`current`): known from an
/// earlier pass while neither changed (same wanted object, same resourceVersion), else by
/// `same`, whose answer is kept.
fn holds<T: Any + Send + Sync, K: HasMeta>(
    caches: &Caches,
    (kind, name): (&str, &str),
    wanted: &Arc<T>,
    current: Option<&Arc<K>>,
    same: impl FnOnce(&K) -> bool,
) -> bool {
    let key = confirmation_key(kind, name);
    let version = current.and_then(|c| c.metadata().resource_version());
    if version.is_some_and(|v| caches.is_confirmed(&key, wanted, v)) {
        return true;
    }
    let same = current.is_some_and(|c| same(c));
    let confirmed = current.filter(|_| same).map(|c| {
        (
            Arc::clone(wanted) as Arc<dyn Any + Send + Sync>,
            Stamp::of(kind, c.metadata()),
        )
    });
    caches.confirm(&key, confirmed);
    same
}

/// Confirms `wanted` as `kind` object `written` as the server answered its write: a
/// forced apply leaves the object holding every field the pass wanted, so the echo need not
/// be compared, and the unit may settle at once.
fn confirm_written<T: Any + Send + Sync>(
    caches: &Caches,
    kind: &str,
    wanted: &Arc<T>,
    written: &ObjectMeta,
) {
    let name = written.name.as_deref().unwrap_or_default();
    let wanted = Arc::clone(wanted) as Arc<dyn Any + Send + Sync>;
    caches.confirm(
        &confirmation_key(kind, name),
        Some((wanted, Stamp::of(kind, written))),
    );
}

/// How long a pass goes on starting writes at least; what is left goes to the next pass,
/// planned anew at once, whose first writes are then those of the freshest reports.
pub const BUDGET: Duration = Duration::from_millis(200);

/// Writes of one chunk (of one cluster or several), [`IN_FLIGHT`] at a time.
const CHUNK: usize = 4 * IN_FLIGHT;

/// One write of a pass.
#[derive(Clone, Copy)]
enum Item<'a> {
    Generated(&'a Arc<Generated>),
    Profile(&'a Arc<ClusterProfile>),
}

/// When the event of each planned object was first seen, where known, by kind and name: a
/// profile's own, and the newest of those of the profiles naming a generated object.
fn event_times(plan: &Plan) -> HashMap<(&str, &str), Instant> {
    let mut times = HashMap::new();
    for profile in &plan.desired.profiles {
        let name = profile.metadata.name.as_deref().unwrap_or_default();
        let Some(&at) = plan.desired.seen.get(name) else {
            continue;
        };
        times.insert(("ClusterProfile", name), at);
        let generated = profile.spec.policy_refs.iter();
        for reference in generated.filter(|r| r.namespace == SVELTOS_NAMESPACE) {
            let time = times.entry((reference.kind.as_str(), reference.name.as_str()));
            let newest = time.or_insert(at);
            *newest = (*newest).max(at);
        }
    }
    times
}

/// Orders one cluster's writes: the newest events' objects first (as `times` dates them),
/// generated objects before the profiles of their time. Undated generated objects (a
/// profile may name one other than through its policyRefs) go before everything and
/// undated profiles after, so no profile is written before an object it may name.
fn newest_first(items: &mut [Item], times: &HashMap<(&str, &str), Instant>) {
    items.sort_by_key(|item| {
        let (kind, name) = match item {
            Item::Generated(generated) => (generated.kind.as_str(), generated.name.as_str()),
            Item::Profile(profile) => (
                "ClusterProfile",
                profile.metadata.name.as_deref().unwrap_or_default(),
            ),
        };
        let profile = matches!(item, Item::Profile(_));
        let time = times.get(&(kind, name)).copied();
        let undated_generated = time.is_none() && !profile;
        (!undated_generated, std::cmp::Reverse(time), profile)
    });
}

/// Whether the cache holds `generated` as it is wanted.
fn generated_holds(caches: &Caches, generated: &Arc<Generated>) -> bool {
    let name = generated.name.as_str();
    if generated.kind == "Secret" {
        let current = caches
            .secrets
            .get(&ObjectRef::new(name).within(SVELTOS_NAMESPACE));
        holds(caches, ("Secret", name), generated, current.as_ref(), |c| {
            same_bytes(c.data.as_ref(), &generated.data)
                && c.type_.as_deref() == Some(CLUSTER_PROFILE_SECRET_TYPE)
                && meta_holds(&c.metadata, generated)
        })
    } else {
        let current = caches
            .config_maps
            .get(&ObjectRef::new(name).within(SVELTOS_NAMESPACE));
        holds(
            caches,
            ("ConfigMap", name),
            generated,
            current.as_ref(),
            |c| c.data.iter().eq(pairs(&generated.data)) && meta_holds(&c.metadata, generated),
        )
    }
}

/// Applies `plan` for `trigger` in the source clusters of `scope`, starting no write chunk
/// after `budget` of writing or once a report changed meanwhile.
pub async fn apply(
    client: &Client,
    caches: &Caches,
    trigger: &str,
    plan: &Plan,
    scope: Scope<'_>,
    budget: Duration,
) -> kube::Result<Applied> {
    let mut applied = Applied::default();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), SVELTOS_NAMESPACE);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SVELTOS_NAMESPACE);
    let profiles: Api<ClusterProfile> = Api::all(client.clone());

    // What differs from the cache, by source cluster: its generated objects (found first)
    // before its profiles.
    let mut wanted: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut differing: BTreeMap<Option<ClusterRef>, Vec<Item>> = BTreeMap::new();
    for generated in &plan.desired.generated {
        wanted.insert((generated.kind.as_str(), generated.name.as_str()));
        if !generated_holds(caches, generated) {
            let cluster = source_cluster(Some(&generated.labels));
            differing
                .entry(cluster)
                .or_default()
                .push(Item::Generated(generated));
        }
    }
    for (kind, name) in &plan.desired.settled {
        wanted.insert((kind, name));
    }
    for profile in &plan.desired.profiles {
        let name = profile.metadata.name.as_deref().unwrap_or_default();
        wanted.insert(("ClusterProfile", name));
        if !profile_holds(caches, profile, name) {
            let cluster = source_cluster(profile.metadata.labels.as_ref());
            differing
                .entry(cluster)
                .or_default()
                .push(Item::Profile(profile));
        }
    }
    // The freshest clusters' objects first, a chunk at a time, until the pass's time is up:
    // an event in a busy fleet then waits for a chunk, not for the whole fleet's writes.
    // Within a cluster, the newest events' objects go first, and each event's generated
    // ConfigMaps and Secrets before its profile, so a profile never names one not yet there.
    let times = event_times(plan);
    for items in differing.values_mut() {
        newest_first(items, &times);
    }
    let mut groups: Vec<_> = differing.into_iter().collect();
    groups.sort_by_cached_key(|(cluster, _)| {
        let changed = cluster.as_ref().and_then(|c| caches.fresh.at(c));
        (cluster.is_some(), std::cmp::Reverse(changed))
    });
    let items: Vec<(&Option<ClusterRef>, Item)> = groups
        .iter()
        .flat_map(|(cluster, items)| items.iter().map(move |item| (cluster, *item)))
        .collect();
    let started = Instant::now();
    let disturbed = AtomicBool::new(false);
    for (n, chunk) in items.chunks(CHUNK).enumerate() {
        // A report that changed meanwhile goes first: the next pass starts with it.
        if n > 0 && (started.elapsed() >= budget || caches.fresh.since(started)) {
            let rest = items[n * CHUNK..]
                .iter()
                .map(|(cluster, _)| (*cluster).clone());
            applied.left = rest.collect();
            break;
        }
        let writes = chunk.iter().filter_map(|(_, item)| match item {
            Item::Generated(generated) => {
                let place = (
                    generated.kind.as_str(),
                    SVELTOS_NAMESPACE,
                    generated.name.as_str(),
                );
                let write = write_generated(client, &params, generated);
                let write = async move { Ok((write.await?, *generated)) };
                Some(announced(caches, place, write, &disturbed))
            }
            Item::Profile(_) => None,
        });
        applied.written += in_flight(writes.collect(), |((kind, metadata), generated)| {
            let version = metadata.resource_version.clone();
            if caches.wrote(trigger, kind, &metadata, version) {
                disturbed.store(true, Ordering::Relaxed);
            }
            confirm_written(caches, kind, generated, &metadata);
        })
        .await?;
        let writes = chunk.iter().filter_map(|(_, item)| match item {
            Item::Profile(profile) => {
                let params = &params;
                let name = profile.metadata.name.as_deref().unwrap_or_default();
                if let Some(at) = plan.desired.seen.get(name) {
                    // The deployer deploys it before profiles of older events.
                    caches.fresh.profile_event(name, *at);
                }
                let write = async move {
                    let body = Patch::Apply(profile.as_ref());
                    let place = (None, name);
                    let written =
                        answer::patch::<ClusterProfile>(client, place, None, params, &body).await;
                    Ok((written?, *profile))
                };
                Some(announced(
                    caches,
                    ("ClusterProfile", "", name),
                    write,
                    &disturbed,
                ))
            }
            Item::Generated(_) => None,
        });
        applied.written += in_flight(writes.collect(), |(written, profile)| {
            let version = written.generation.map(|g| g.to_string());
            if caches.wrote(trigger, "ClusterProfile", &written, version) {
                disturbed.store(true, Ordering::Relaxed);
            }
            confirm_written(caches, "ClusterProfile", profile, &written);
        })
        .await?;
    }
    applied.disturbed = disturbed.load(Ordering::Relaxed);

    // Stale profiles go first; their ConfigMaps and Secrets once they are gone.
    let stale = stale(caches, trigger, plan, scope, &wanted);
    let deletions = stale.iter().filter(|(kind, _)| *kind == "ClusterProfile");
    let deletions = deletions.map(|(_, name)| {
        caches.confirm(&confirmation_key("ClusterProfile", name), None);
        let profiles = &profiles;
        async move {
            match profiles.delete(name, &DeleteParams::background()).await {
                // Deleted, or still there (finalizers), or gone already.
                Ok(either) => Ok((name, Some(either.is_right()))),
                Err(kube::Error::Api(status)) if status.code == 404 => Ok((name, None)),
                Err(error) => Err(error),
            }
        }
    });
    in_flight(deletions.collect(), |(name, deleted)| {
        applied.deleted += usize::from(deleted.is_some());
        if deleted == Some(false) {
            // Still there: generated objects wait for a later pass.
            applied.waiting = true;
        } else {
            caches.forget_written(trigger, "ClusterProfile", name);
        }
    })
    .await?;

    applied.written += source_lists(client, caches, trigger, plan, scope.only()).await?;
    if applied.waiting {
        return Ok(applied);
    }
    let deletions = stale.iter().filter(|(kind, _)| *kind != "ClusterProfile");
    let deletions = deletions.map(|(kind, name)| {
        caches.confirm(&confirmation_key(kind, name), None);
        let (config_maps, secrets) = (&config_maps, &secrets);
        async move {
            let deleted = match *kind {
                "Secret" => delete(secrets, name).await?,
                _ => delete(config_maps, name).await?,
            };
            Ok((*kind, name, deleted))
        }
    });
    in_flight(deletions.collect(), |(kind, name, deleted)| {
        applied.deleted += deleted;
        caches.forget_written(trigger, kind, name);
    })
    .await?;
    Ok(applied)
}

/// Whether the cache holds `profile` (named `name`) as it is wanted.
fn profile_holds(caches: &Caches, profile: &Arc<ClusterProfile>, name: &str) -> bool {
    let current = caches.profiles.get(&ObjectRef::new(name));
    holds(
        caches,
        ("ClusterProfile", name),
        profile,
        current.as_ref(),
        |c| {
            let labels = profile.metadata.labels.as_ref();
            labels_hold(&c.metadata, labels.unwrap_or(&BTreeMap::new())) && c.spec_is(&profile.spec)
        },
    )
}

/// The objects `trigger` generated that the caches hold, with their source clusters.
fn cached_of(caches: &Caches, trigger: &str) -> Vec<(Option<ClusterRef>, Object)> {
    let (mut found, profiles) = (Vec::new(), caches.profiles.state());
    let config_maps = caches.config_maps.state();
    generated_of(&mut found, trigger, "ClusterProfile", &profiles);
    generated_of(&mut found, trigger, "ConfigMap", &config_maps);
    generated_of(&mut found, trigger, "Secret", &caches.secrets.state());
    found
}

/// Adds to `found` the `kind` objects among `objects` that `trigger` generated (ConfigMaps and
/// Secrets in Sveltos' namespace only, where generated ones live).
fn generated_of<K: HasMeta>(
    found: &mut Vec<(Option<ClusterRef>, Object)>,
    trigger: &str,
    kind: &'static str,
    objects: &[Arc<K>],
) {
    let place =
        |meta: &K::Meta| kind == "ClusterProfile" || meta.namespace() == Some(SVELTOS_NAMESPACE);
    let metas = objects.iter().map(|o| o.metadata());
    for meta in metas.filter(|meta| place(meta) && generated_by(meta, trigger)) {
        found.push((source_cluster(meta), (kind, meta.name().to_owned())));
    }
}

/// The objects `trigger` generated in the clusters of `scope` that the plan does not want:
/// those the caches hold and those written but not shown yet, but none of a cluster this
/// pass leaves as it is. Sorted by kind and name.
fn stale(
    caches: &Caches,
    trigger: &str,
    plan: &Plan,
    scope: Scope,
    wanted: &BTreeSet<(&str, &str)>,
) -> BTreeSet<Object> {
    let within = scope.only();
    let mut found = match within {
        // The caches themselves: at start the index may not have caught up with them.
        None => cached_of(caches, trigger),
        Some(clusters) => caches
            .owned
            .lock()
            .map(|owned| owned.of(trigger, clusters))
            .unwrap_or_default()
            .into_iter()
            .map(|(cluster, object)| (Some(cluster), object))
            .collect(),
    };
    found.extend(caches.written_by(trigger, within));
    found
        .into_iter()
        .filter(|(cluster, (kind, name))| {
            !wanted.contains(&(*kind, name.as_str()))
                && !untouched(cluster.as_ref(), plan, scope, caches)
        })
        .map(|(_, object)| object)
        .collect()
}

/// Runs `writes` (or deletions) [`IN_FLIGHT`] at a time, handing each answer to `done`;
/// returns how many succeeded. After a failure no further one starts, those under way are
/// awaited (what they did is recorded), and the first failure is returned.
async fn in_flight<T>(
    writes: Vec<impl Future<Output = kube::Result<T>>>,
    mut done: impl FnMut(T),
) -> kube::Result<usize> {
    let failed = AtomicBool::new(false);
    let failed = &failed;
    let started = writes.into_iter().map(|write| async move {
        if failed.load(Ordering::Relaxed) {
            return None;
        }
        let result = write.await;
        if result.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        Some(result)
    });
    let mut answers = stream::iter(started).buffer_unordered(IN_FLIGHT);
    let (mut succeeded, mut failure) = (0, None);
    while let Some(answer) = answers.next().await {
        match answer {
            Some(Ok(written)) => {
                done(written);
                succeeded += 1;
            }
            Some(Err(error)) => {
                failure.get_or_insert(error);
            }
            None => {}
        }
    }
    failure.map_or(Ok(succeeded), Err)
}

/// Writes (server-side apply) one generated ConfigMap or Secret; its kind and metadata as the
/// server answered.
async fn write_generated(
    client: &Client,
    params: &PatchParams,
    generated: &Generated,
) -> kube::Result<(&'static str, ObjectMeta)> {
    let place = (Some(SVELTOS_NAMESPACE), generated.name.as_str());
    if generated.kind == "Secret" {
        let body = Patch::Apply(secret(generated));
        let written = answer::patch::<Secret>(client, place, None, params, &body).await?;
        Ok(("Secret", written))
    } else {
        let body = Patch::Apply(config_map(generated));
        let written = answer::patch::<ConfigMap>(client, place, None, params, &body).await?;
        Ok(("ConfigMap", written))
    }
}

/// Deletes `name`; returns 1, or 0 when it was already gone.
async fn delete<K>(api: &Api<K>, name: &str) -> kube::Result<usize>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(1),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(0),
        Err(error) => Err(error),
    }
}

fn meta_holds(metadata: &impl Meta, generated: &Generated) -> bool {
    labels_hold(metadata, &generated.labels)
        && labels_hold(metadata.annotations(), &generated.annotations)
}

/// The pairs of `map` as borrowed strings.
fn pairs(map: &BTreeMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
    map.iter().map(|(k, v)| (k.as_str(), v.as_str()))
}

fn metadata(generated: &Generated) -> ObjectMeta {
    ObjectMeta {
        name: Some(generated.name.clone()),
        namespace: Some(SVELTOS_NAMESPACE.to_string()),
        labels: Some(generated.labels.clone()),
        annotations: (!generated.annotations.is_empty()).then(|| generated.annotations.clone()),
        ..Default::default()
    }
}

/// The ConfigMap for a generated object.
pub fn config_map(generated: &Generated) -> ConfigMap {
    ConfigMap {
        metadata: metadata(generated),
        data: Some(generated.data.clone()),
        ..Default::default()
    }
}

/// The Secret (Sveltos' ClusterProfile type) for a generated object.
pub fn secret(generated: &Generated) -> Secret {
    Secret {
        metadata: metadata(generated),
        type_: Some(CLUSTER_PROFILE_SECRET_TYPE.to_string()),
        data: Some(
            generated
                .data
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
                .collect(),
        ),
        ..Default::default()
    }
}

/// Whether an agent source list belongs to a cluster another shard's manager handles.
fn list_of_other_shard(caches: &Caches, metadata: &impl Meta) -> bool {
    agent_sources_cluster(metadata.name()).is_some_and(|(cluster, cluster_type)| {
        caches.fleet.handled_elsewhere(&ClusterRef {
            namespace: metadata.namespace().unwrap_or_default().to_owned(),
            name: cluster.to_owned(),
            cluster_type,
        })
    })
}

/// Field manager of one trigger's entries in the agents' per-cluster source lists: each
/// trigger owns its keys, so dropping a key from its apply removes just that key.
fn source_list_manager(trigger: &str) -> String {
    format!("sveltos-events-manager/{trigger}")
}

/// Makes the per-cluster lists of EventSources the hub-mode agent evaluates hold exactly this
/// trigger's planned (cluster, source) entries: every cluster's, or those of the clusters
/// `within` (which the plan covers). Returns the number of lists written.
pub(super) async fn source_lists(
    client: &Client,
    caches: &Caches,
    trigger: &str,
    plan: &Plan,
    within: Option<&BTreeSet<ClusterRef>>,
) -> kube::Result<usize> {
    let mut wanted: BTreeMap<(String, String), BTreeMap<String, String>> = BTreeMap::new();
    for (cluster, source) in &plan.sources {
        let list = agent_sources_config_map_name(&cluster.name, cluster.cluster_type);
        wanted
            .entry((cluster.namespace.clone(), list))
            .or_default()
            .insert(agent_sources_key(trigger, source), source.clone());
    }
    // Lists holding an entry of this trigger that the plan no longer wants are emptied of it.
    let mut own_list = |namespace: String, name: String| {
        wanted.entry((namespace, name)).or_default();
    };
    match within {
        Some(clusters) => {
            for cluster in clusters {
                if !caches.fleet.handled_elsewhere(cluster) {
                    let list = agent_sources_config_map_name(&cluster.name, cluster.cluster_type);
                    own_list(cluster.namespace.clone(), list);
                }
            }
        }
        None => {
            for existing in caches.config_maps.state() {
                let meta = &existing.metadata;
                let ours = meta.label(AGENT_SOURCES_LABEL).is_some()
                    && (existing.data.iter())
                        .any(|(key, source)| key == agent_sources_key(trigger, source));
                if ours && !list_of_other_shard(caches, meta) {
                    own_list(
                        meta.namespace().unwrap_or_default().to_owned(),
                        meta.name().to_owned(),
                    );
                }
            }
        }
    }
    let params = PatchParams::apply(&source_list_manager(trigger)).force();
    let params = &params;
    // A fleet's first pass writes one list per cluster: each waits its round trip alongside
    // others, not behind every list before it (they tell the agent what to evaluate there).
    let writes = wanted
        .into_iter()
        .filter_map(|((namespace, name), entries)| {
            let current = caches
                .config_maps
                .get(&ObjectRef::new(&name).within(&namespace));
            let (current_entries, others): (BTreeMap<String, String>, BTreeMap<String, String>) =
                current
                    .as_ref()
                    .map(|c| c.data.to_map())
                    .unwrap_or_default()
                    .into_iter()
                    .partition(|(key, source)| *key == agent_sources_key(trigger, source));
            if current.is_some() && current_entries == entries {
                return None;
            }
            // The last entry goes: so does the list (no leftovers once a cluster is gone).
            let emptied = entries.is_empty() && others.is_empty();
            if emptied && current.is_none() {
                return None;
            }
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
            let list = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace),
                    labels: Some(BTreeMap::from([(
                        AGENT_SOURCES_LABEL.to_string(),
                        "true".to_string(),
                    )])),
                    ..Default::default()
                },
                data: (!entries.is_empty()).then_some(entries),
                ..Default::default()
            };
            Some(async move {
                if emptied {
                    delete(&api, &name).await
                } else {
                    api.patch(&name, params, &Patch::Apply(&list)).await?;
                    Ok(1)
                }
            })
        });
    let mut written = 0;
    in_flight(writes.collect(), |count| written += count).await?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_newer_events_objects_are_written_first_and_its_configmap_before_its_profile() {
        let generated = |name: &str| {
            Arc::new(Generated {
                kind: "ConfigMap".into(),
                name: name.into(),
                labels: BTreeMap::new(),
                annotations: BTreeMap::new(),
                data: BTreeMap::new(),
            })
        };
        let profile = |name: &str, config_map: &str| {
            let mut profile = ClusterProfile::default();
            profile.metadata.name = Some(name.into());
            profile.spec.policy_refs = vec![api::v1beta1::PolicyRef {
                kind: "ConfigMap".into(),
                namespace: SVELTOS_NAMESPACE.into(),
                name: config_map.into(),
                ..Default::default()
            }];
            Arc::new(profile)
        };
        let then = Instant::now();
        let now = then + Duration::from_secs(1);
        let mut plan = Plan::default();
        plan.desired.profiles = vec![
            profile("old", "cm-old"),
            profile("undated", "cm-undated"),
            profile("new", "cm-new"),
        ];
        plan.desired.generated = vec![
            generated("cm-old"),
            generated("cm-undated"),
            generated("cm-new"),
        ];
        plan.desired.seen = [("old".into(), then), ("new".into(), now)].into();
        let mut items: Vec<Item> = plan.desired.generated.iter().map(Item::Generated).collect();
        items.extend(plan.desired.profiles.iter().map(Item::Profile));
        newest_first(&mut items, &event_times(&plan));
        let names: Vec<&str> = items
            .iter()
            .map(|item| match item {
                Item::Generated(g) => g.name.as_str(),
                Item::Profile(p) => p.metadata.name.as_deref().unwrap_or_default(),
            })
            .collect();
        assert_eq!(
            names,
            ["cm-undated", "cm-new", "new", "cm-old", "old", "undated"]
        );
    }

    #[tokio::test]
    async fn after_a_failed_write_no_other_starts_and_what_was_written_is_told() {
        let started = AtomicUsize::new(0);
        let writes: Vec<_> = (0..IN_FLIGHT * 3)
            .map(|i| {
                let started = &started;
                async move {
                    started.fetch_add(1, Ordering::Relaxed);
                    tokio::task::yield_now().await;
                    if i == 2 {
                        let status = kube::core::Status::failure("refused", "Invalid");
                        return Err(kube::Error::Api(Box::new(status)));
                    }
                    Ok(i)
                }
            })
            .collect();
        let mut told = Vec::new();
        let outcome = in_flight(writes, |i| told.push(i)).await;
        assert!(matches!(outcome, Err(kube::Error::Api(s)) if s.message == "refused"));
        let started = started.load(Ordering::Relaxed);
        assert!(started <= IN_FLIGHT, "{started} writes started");
        // Every write that started and succeeded is told, the failed one is not.
        assert_eq!(told.len(), started - 1);
        assert!(!told.contains(&2));

        let all: Vec<_> = (0..40)
            .map(|i| async move { kube::Result::Ok(i) })
            .collect();
        let mut count = 0;
        assert_eq!(in_flight(all, |_| count += 1).await.ok(), Some(40));
        assert_eq!(count, 40);
    }
}
