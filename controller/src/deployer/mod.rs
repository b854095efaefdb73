//! The built-in deployer: puts every ClusterProfile's policyRefs into the clusters it matches
//! and withdraws them when the profile goes or a cluster stops matching. Each (profile,
//! cluster) pair has a ClusterSummary `<profile>-<type>-<cluster>` in the cluster's namespace,
//! as Sveltos' addon-controller keeps; its status records the outcome and the kinds deployed,
//! which is what withdrawal reads (so summaries carry no owner reference: they must outlive
//! their profile until its objects are gone).

pub mod deploy;
pub mod diff;
pub mod documents;
pub mod echoes;
pub mod index;
pub mod listings;
pub mod manifests;
pub mod marks;
pub mod metadata;
pub mod record;
pub mod schedule;
pub mod summaries;
pub mod targets;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use api::labels::{
    CLUSTER_PROFILE_NAME_LABEL, CLUSTER_SUMMARY_CLUSTER_NAME_LABEL,
    CLUSTER_SUMMARY_CLUSTER_TYPE_LABEL, INTENDED_KINDS_ANNOTATION, PROFILE_PAUSED_ANNOTATION,
};
use api::v1beta1::{
    ClusterProfile, ClusterProfileSpec, ClusterReport, ClusterSet, ClusterSummary, DeploymentType,
    FeatureId, FeatureStatus, ResourceReport, Set, SyncMode,
};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, Resource};
use serde_json::{Value, json};

use crate::answer;
use crate::engine::GoTemplates;
use crate::fleet::{Cluster, Fleet, select};
use crate::identity::{ClusterRef, source_cluster};
use crate::instantiate::{Lookup, Referenced};
use crate::kept::config_map::KeptConfigMap;
use crate::kept::profile::KeptProfile;
use crate::kept::{Labelled, Meta};
use crate::manager::caches::referenced;
use crate::queue::{Pass, Queue, Retries};
use crate::serve::Telemetry;
use crate::sets;
use crate::watches::{Freshness, Watches};
use clusters::watch::{Settled, events_as, reflect};
use deploy::{Deployer, Outcome};
use echoes::Echoes;
use index::{ByProfile, ByReference};
use schedule::{Schedule, Start};
use summaries::Summary;
use targets::Targets;
use tokio::sync::Notify;

/// Name of this controller in metrics and readiness.
const CONTROLLER: &str = "deployer";
/// Field manager of the deployer's ClusterSummary and ClusterReport writes.
const SUMMARY_MANAGER: &str = "sveltos-events-deployer";
/// A DryRun profile's feature status message (Sveltos' words).
const DRY_RUN: &str = "mode is DryRun. Nothing is reconciled";

/// Errors of the running deployer.
#[derive(Debug, thiserror::Error)]
pub enum DeployerError {
    /// A request to the management cluster failed.
    #[error("request to the management cluster failed: {}", clusters::words::words(.0))]
    Kube(#[from] kube::Error),
    /// A profile's clusters cannot be selected (e.g. a bad clusterSelector).
    #[error("{0}")]
    Selection(String),
    /// A ClusterSummary's recorded profile spec cannot be read back.
    #[error("a ClusterSummary's recorded profile spec cannot be read: {0}")]
    Record(serde_json::Error),
    /// The kept ClusterProfile cannot be read back (see `KeptProfile`).
    #[error("the kept ClusterProfile cannot be read back: {0}")]
    Kept(serde_json::Error),
}

/// Reflector stores of everything the deployer reads in the management cluster.
#[derive(Clone)]
pub struct Caches {
    /// Every ClusterProfile (generated or written by hand), as its record.
    pub profiles: Store<KeptProfile>,
    /// Registered clusters and the scope this deployer handles.
    pub fleet: Fleet,
    /// ClusterSets (profiles' `setRefs`).
    pub cluster_sets: Store<ClusterSet>,
    /// Sets (their status is kept here too).
    pub sets: Store<Set>,
    /// ConfigMaps (policyRefs content).
    pub config_maps: Store<KeptConfigMap>,
    /// Secrets (policyRefs content, kubeconfigs).
    pub secrets: Store<Secret>,
    /// ClusterSummaries (what the deployer reads of them): the record of what was deployed
    /// where.
    pub summaries: Store<Summary>,
    /// Where each profile's summaries are.
    pub by_profile: ByProfile,
    /// Which profiles name which ConfigMaps and Secrets.
    pub by_reference: ByReference,
    /// Summary and profile writes whose watch events are still on the way.
    pub echoes: Arc<Echoes>,
    /// When each source cluster's report last changed (the manager tells).
    pub fresh: Freshness,
}

impl Caches {
    /// Whether Secret `namespace/name` holds a registered cluster's kubeconfig.
    fn is_kubeconfig(&self, namespace: &str, name: &str) -> bool {
        self.fleet
            .registry
            .all()
            .any(|c| c.id().namespace == namespace && c.secret_name() == name)
    }
}

impl Lookup for Caches {
    fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Referenced> {
        referenced(&self.config_maps, &self.secrets, kind, namespace, name)
    }
}

/// Name of the summary of `profile` in `cluster`.
pub fn summary_name(profile: &str, cluster: &Cluster) -> String {
    api::v1beta1::cluster_summary_name(
        profile,
        &cluster.reference.name,
        cluster.reference.cluster_type,
    )
}

/// Name of the ClusterReport of a DryRun `profile` in cluster `name` of `cluster_type`
/// (Sveltos': `<profile>--<type>--<cluster>`).
pub fn report_name(profile: &str, cluster_type: &str, name: &str) -> String {
    format!("{profile}--{cluster_type}--{name}")
}

fn paused(profile: &KeptProfile) -> bool {
    (profile.metadata.annotations())
        .label(PROFILE_PAUSED_ANNOTATION)
        .is_some()
}

/// Kinds as [`Echoes`] names them.
const SUMMARY: &str = "ClusterSummary";
const PROFILE: &str = "ClusterProfile";

/// Runs the deployer against the management cluster until `shutdown` completes.
pub async fn run(
    client: Client,
    shared: Watches,
    telemetry: Arc<Telemetry>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), DeployerError> {
    telemetry.expect(CONTROLLER);
    let queue = Arc::new(Queue::default());
    let all = watcher::Config::default;
    let (profiles, profile_events) = (shared.profiles.store(), shared.profiles.objects());
    let (fleet, fleet_events) = (shared.fleet.clone(), shared.fleet_changes());
    let (cluster_sets, cluster_set_events) =
        (shared.cluster_sets.store(), shared.cluster_sets.objects());
    let (sets, set_events) = reflect::<Set>(&client, all());
    let (config_maps, config_map_events) =
        (shared.config_maps.store(), shared.config_maps.objects());
    let (secrets, secret_events) = (shared.secrets.store(), shared.secrets.objects());
    let (summaries, summary_events) = events_as(
        Api::<ClusterSummary>::all(client.clone()),
        all().labels(CLUSTER_PROFILE_NAME_LABEL),
        Summary::new,
    );
    let caches = Caches {
        profiles,
        fleet,
        cluster_sets,
        sets,
        config_maps,
        secrets,
        summaries,
        by_profile: ByProfile::default(),
        by_reference: ByReference::default(),
        echoes: Arc::new(Echoes::new(Arc::clone(&queue))),
        fresh: shared.fresh.clone(),
    };

    let mark_all = {
        let caches = caches.clone();
        let queue = Arc::clone(&queue);
        move || {
            let (profiles, summaries) = (caches.profiles.state(), caches.summaries.state());
            for name in marks::every(&profiles, &summaries) {
                queue.mark(name);
            }
        }
    };
    // A ConfigMap or Secret concerns the profiles that reference it; a kubeconfig, every one.
    let mark_referring = {
        let caches = caches.clone();
        let queue = Arc::clone(&queue);
        move |kind: &str, namespace: Option<&str>, name: &str| {
            let object = marks::Object {
                kind,
                namespace: namespace.unwrap_or_default(),
                name,
            };
            let kubeconfig =
                kind == "Secret" && caches.is_kubeconfig(object.namespace, object.name);
            let candidates: Vec<Arc<KeptProfile>> = if kubeconfig {
                caches.profiles.state()
            } else {
                let names = caches.by_reference.candidates(kind, object.name);
                names
                    .iter()
                    .filter_map(|name| caches.profiles.get(&ObjectRef::new(name)))
                    .collect()
            };
            for name in marks::referring(&object, kubeconfig, &candidates) {
                queue.mark(name);
            }
        }
    };
    let profile_task = {
        let queue = Arc::clone(&queue);
        let caches = caches.clone();
        profile_events.for_each(move |profile| {
            caches.by_reference.follow(&profile, &caches.profiles);
            let meta = &profile.metadata;
            let place = (meta.namespace().unwrap_or_default(), meta.name());
            if !caches
                .echoes
                .is_echo(PROFILE, place, meta.resource_version())
            {
                queue.mark(meta.name().to_owned());
            }
            async {}
        })
    };
    let summary_task = {
        let queue = Arc::clone(&queue);
        let caches = caches.clone();
        let mut settled = Settled::default();
        summary_events.for_each(move |event| {
            caches.by_profile.follow(&event, &caches.summaries);
            for summary in settled.take(event, &caches.summaries) {
                let place = (summary.namespace(), summary.name());
                if !caches.echoes.is_echo(SUMMARY, place, summary.version()) {
                    queue.mark(summary.profile.to_string());
                }
            }
            async {}
        })
    };
    // A cluster or set change may move any profile and any set's selection.
    let wake_sets = Arc::new(Notify::new());
    let cluster_task = {
        let wake_sets = Arc::clone(&wake_sets);
        let (caches, queue) = (caches.clone(), Arc::clone(&queue));
        // A SveltosCluster change names its cluster; a Cluster API or set change does not.
        let changes = futures_util::stream::select_all([
            fleet_events.boxed(),
            cluster_set_events.map(|_| None).boxed(),
            set_events.map(|_| None).boxed(),
        ]);
        changes.for_each(move |cluster| {
            match cluster {
                Some(cluster) => {
                    let (profiles, summaries) = (caches.profiles.state(), caches.summaries.state());
                    for name in marks::of_cluster(&cluster, &profiles, &summaries) {
                        queue.mark(name);
                    }
                }
                None => mark_all(),
            }
            wake_sets.notify_one();
            async {}
        })
    };
    let config_map_task = {
        let mark_referring = mark_referring.clone();
        config_map_events.for_each(move |c| {
            mark_referring("ConfigMap", c.metadata.namespace(), c.metadata.name());
            async {}
        })
    };
    let secret_task = secret_events.for_each(move |s| {
        mark_referring("Secret", s.metadata.namespace(), s.metadata.name());
        async {}
    });
    let watches = async {
        tokio::join!(
            profile_task,
            summary_task,
            cluster_task,
            config_map_task,
            secret_task
        );
    };
    // One writer of ClusterSet status, over every shard's clusters: the default shard's.
    let set_status = {
        let (client, caches) = (client.clone(), caches.clone());
        async move {
            if !caches.fleet.scope.shard.is_empty() {
                return std::future::pending().await;
            }
            let Caches {
                cluster_sets,
                sets: namespaced_sets,
                fleet,
                ..
            } = caches;
            sets::run(client, cluster_sets, namespaced_sets, fleet, wake_sets).await;
        }
    };
    tokio::select! {
        () = shutdown => {}
        () = watches => {}
        () = set_status => {}
        () = worker(client, caches, queue, telemetry) => {}
    }
    Ok(())
}

/// `name_any` that is empty rather than absent.
trait NameOrDefault {
    fn name_any_or_default(&self) -> String;
}

impl<K: Resource> NameOrDefault for K {
    fn name_any_or_default(&self) -> String {
        self.meta().name.clone().unwrap_or_default()
    }
}

async fn worker(client: Client, caches: Caches, queue: Arc<Queue>, telemetry: Arc<Telemetry>) {
    let ready = caches.profiles.wait_until_ready().await.is_ok()
        && caches.fleet.ready().await
        && caches.cluster_sets.wait_until_ready().await.is_ok()
        && caches.config_maps.wait_until_ready().await.is_ok()
        && caches.secrets.wait_until_ready().await.is_ok()
        && caches.summaries.wait_until_ready().await.is_ok();
    if !ready {
        tracing::error!("the deployer's caches closed before they were filled");
        return;
    }
    tracing::info!("deployer caches filled; deploying");
    telemetry.set_ready(CONTROLLER);
    let names = GoTemplates::new();
    let targets = Targets::new(client.clone());
    let record = Mutex::new(deploy::Record::default());
    let listings = Mutex::new(listings::Listings::default());
    for profile in caches.profiles.state() {
        queue.mark(profile.metadata.name().to_owned());
    }
    for summary in caches.summaries.state() {
        queue.mark(summary.profile.to_string());
    }
    let retries = Mutex::new(Retries::new(CONTROLLER, telemetry));
    let pass = |name: String, waited: Duration| {
        let (caches, targets, names) = (&caches, &targets, &names);
        let (record, listings) = (&record, &listings);
        let (client, queue, retries) = (&client, &queue, &retries);
        async move {
            let mut deployer = Deployer {
                caches,
                targets,
                names,
                record,
                listings,
            };
            let started = Instant::now();
            let outcome = reconcile(client, &mut deployer, &name).await;
            tracing::debug!(
                profile = name,
                waited_ms = waited.as_secs_f64() * 1000.0,
                elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
                "deployer pass"
            );
            // Retries keep delays only: a panic elsewhere while they were held broke none.
            let mut retries = retries.lock().unwrap_or_else(PoisonError::into_inner);
            retries.record(queue, "ClusterProfile", name, outcome);
        }
    };
    let mut schedule = Schedule::default();
    let mut running = FuturesUnordered::new();
    let mut sweep = tokio::time::interval(clusters::client::IDLE);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        while running.len() < LANES {
            let Some(Start { name, lane, waited }) = schedule.start() else {
                break;
            };
            running.push(async move {
                pass(name.clone(), waited).await;
                (name, lane)
            });
        }
        tokio::select! {
            marked = queue.next_batch() => {
                let clusters = caches.fleet.in_scope();
                for name in marked {
                    let lane = only_cluster(&caches, &clusters, &name);
                    // A generated profile is as fresh as its event, else as the report of its
                    // source cluster.
                    let profile = caches.profiles.get(&ObjectRef::new(&name));
                    let source = profile.and_then(|p| source_cluster(&p.metadata));
                    let fresh = caches.fresh.of_profile(&name, source.as_ref());
                    schedule.mark(name, lane, fresh);
                }
            }
            Some((name, lane)) = running.next(), if !running.is_empty() => {
                schedule.done(&name, &lane);
            }
            _ = sweep.tick() => targets.drop_idle(clusters::client::IDLE),
        }
    }
}

/// Passes that run at once, each in its own lane (destination cluster).
const LANES: usize = 16;

/// Whether `spec` deploys anything into the management cluster (`deploymentType: Local`).
pub fn deploys_locally(spec: &ClusterProfileSpec) -> bool {
    spec.policy_refs
        .iter()
        .any(|r| r.deployment_type == DeploymentType::Local)
}

/// The one cluster a pass over profile `name` may deploy into or withdraw from, if there is
/// exactly one and the management cluster is not a target.
fn only_cluster(caches: &Caches, clusters: &[Cluster], name: &str) -> Option<ClusterRef> {
    // Objects deployed into the management cluster, now or by an earlier spec a summary
    // still records, may be withdrawn there.
    let mut touched = BTreeSet::new();
    if let Some(profile) = caches.profiles.get(&ObjectRef::new(name)) {
        let spec = profile.spec().ok()?;
        if deploys_locally(&spec) {
            return None;
        }
        let selected = |set: &str| sets::selected(&caches.cluster_sets, set);
        let wanted = matching(&spec, clusters, selected).ok()?;
        touched.extend(wanted.into_iter().map(|c| c.reference.clone()));
    }
    for summary in caches.by_profile.of(&caches.summaries, name) {
        if summary.local() {
            return None;
        }
        touched.insert(summary.cluster.clone());
    }
    let mut touched = touched.into_iter();
    match (touched.next(), touched.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

/// The clusters `profile` matches: its clusterSelector, its clusterRefs and the clusters its
/// ClusterSets (`setRefs`) selected, as `selected` says; ready ones only.
pub fn matching<'a>(
    spec: &ClusterProfileSpec,
    clusters: &'a [Cluster],
    selected: impl Fn(&str) -> Vec<ClusterRef>,
) -> Result<Vec<&'a Cluster>, String> {
    let mut picked =
        select(clusters, &spec.cluster_selector).map_err(|e| format!("clusterSelector: {e}"))?;
    let referenced = spec
        .cluster_refs
        .iter()
        .filter_map(ClusterRef::from_reference);
    let in_sets = spec.set_refs.iter().flat_map(|name| selected(name));
    for wanted in referenced.chain(in_sets) {
        let found = clusters
            .iter()
            .find(|c| c.selectable && c.reference == wanted);
        if let Some(cluster) = found
            && !picked.iter().any(|p| p.reference == cluster.reference)
        {
            picked.push(cluster);
        }
    }
    Ok(picked)
}

/// Deploys and withdraws one profile everywhere; `Again` when some cluster failed.
async fn reconcile(
    client: &Client,
    deployer: &mut Deployer<'_>,
    name: &str,
) -> Result<Pass, DeployerError> {
    let caches = deployer.caches;
    let kept = caches
        .profiles
        .get(&ObjectRef::new(name))
        .filter(|p| !p.metadata.deleting());
    if kept.as_ref().is_some_and(|p| paused(p)) {
        tracing::debug!(profile = name, "paused; nothing deployed or withdrawn");
        return Ok(Pass::Done);
    }
    let profile = (kept.map(|p| p.profile()).transpose()).map_err(DeployerError::Kept)?;
    let clusters = caches.fleet.in_scope();
    let wanted = match &profile {
        Some(profile) => matching(&profile.spec, &clusters, |name| {
            sets::selected(&caches.cluster_sets, name)
        })
        .map_err(DeployerError::Selection)?,
        None => Vec::new(),
    };
    let summaries = caches.by_profile.of(&caches.summaries, name);
    let mut again = false;
    let mut wanted_summaries = BTreeSet::new();
    if let Some(profile) = &profile {
        for cluster in &wanted {
            let summary = summary_name(name, cluster);
            wanted_summaries.insert((cluster.reference.namespace.clone(), summary.clone()));
            if cluster.paused {
                // Neither deployed to nor withdrawn from until it resumes.
                continue;
            }
            let previous = summaries
                .iter()
                .find(|s| s.name() == summary && s.namespace() == cluster.reference.namespace);
            if profile.spec.sync_mode == SyncMode::OneTime
                && previous.is_some_and(|p| p.provisioned())
            {
                continue;
            }
            let kinds = previous.map(|p| p.resources_kinds()).unwrap_or_default();
            // The spec the summary records: the profile's, unless it has changed since. It
            // was JSON this process wrote from a spec, so it reads back; if it ever did not,
            // the pass fails (and is retried) rather than deploy without knowing the past.
            let recorded = match previous.map(|p| p.spec(Some(&profile.spec))) {
                Some(Ok(spec)) => Some(spec),
                Some(Err(error)) => return Err(DeployerError::Record(error)),
                None => None,
            };
            let manifests = deployer.manifests(name, &profile.spec, cluster).await;
            let spec_recorded = matches!(recorded, Some(Cow::Borrowed(_)));
            let mut known = Known::Cached {
                previous: previous.map(AsRef::as_ref),
                spec_recorded,
            };
            if let Ok(manifests) = &manifests
                && profile.spec.sync_mode != SyncMode::DryRun
            {
                let intended = deploy::kinds(manifests);
                let unrecorded = !spec_recorded || !intended.iter().all(|k| kinds.contains(k));
                if unrecorded {
                    // The summary says what is about to be deployed before anything is, in
                    // the one write that creates it or changes its spec: if the profile goes
                    // before the outcome is written (or this process dies), the withdrawal
                    // still knows which kinds to look through, and where.
                    apply_summary_spec(
                        client,
                        &caches.echoes,
                        name,
                        &profile.spec,
                        cluster,
                        &intended,
                    )
                    .await?;
                    known = Known::Intent;
                }
            }
            let before = recorded.as_deref().map(|spec| (kinds.as_slice(), spec));
            let outcome = deployer
                .deploy(name, &profile.spec, cluster, before, manifests)
                .await;
            if let Some(failure) = &outcome.failure {
                tracing::warn!(profile = name, cluster = %cluster.reference.name, %failure, "deployment failed");
                again = true;
            }
            write_summary(
                client,
                &caches.echoes,
                name,
                &profile.spec,
                cluster,
                known,
                &outcome,
            )
            .await?;
            if let Some(reports) = &outcome.dry_run {
                write_report(client, profile, cluster, reports).await?;
            } else if previous.is_some_and(|p| p.sync_mode() == SyncMode::DryRun) {
                // Out of DryRun: its report no longer describes anything.
                let report = report_name(
                    name,
                    cluster.reference.cluster_type.lowercase(),
                    &cluster.reference.name,
                );
                delete_if_present::<ClusterReport>(client, &cluster.reference.namespace, &report)
                    .await?;
            }
        }
        write_profile_status(client, caches, profile, &wanted).await?;
    }
    for summary in &summaries {
        let place = (summary.namespace().to_owned(), summary.name().to_owned());
        if wanted_summaries.contains(&place) {
            continue;
        }
        let reference = &summary.cluster;
        if caches.fleet.handled_elsewhere(reference) {
            // Another shard's deployer keeps or withdraws it.
            continue;
        }
        let cluster = clusters.iter().find(|c| c.reference == *reference);
        if cluster.is_some_and(|c| c.paused) {
            // Withdrawn once the cluster resumes (its change marks this profile again).
            continue;
        }
        if let Some(cluster) = cluster {
            let withdrawn = match summary.spec(None) {
                Ok(spec) => {
                    let kinds = summary.resources_kinds();
                    deployer.withdraw(name, &spec, cluster, &kinds).await
                }
                Err(error) => Err(format!("its summary's spec cannot be read: {error}")),
            };
            if let Err(reason) = withdrawn {
                tracing::warn!(profile = name, cluster = %reference.name, %reason, "withdrawal failed");
                again = true;
                continue;
            }
        }
        if summary.sync_mode() == SyncMode::DryRun {
            // Only a DryRun pair has a report (leaving DryRun deletes it in the deploy pass).
            let report = report_name(name, reference.cluster_type.lowercase(), &reference.name);
            delete_if_present::<ClusterReport>(client, &place.0, &report).await?;
        }
        delete_if_present::<ClusterSummary>(client, &place.0, &place.1).await?;
    }
    Ok(if again { Pass::Again } else { Pass::Done })
}

async fn delete_if_present<K>(client: &Client, namespace: &str, name: &str) -> kube::Result<()>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope> + Clone + serde::de::DeserializeOwned,
    K: std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

fn feature(id: FeatureId, status: FeatureStatus, failure: Option<&str>) -> Value {
    json!({"featureID": id, "status": status, "failureMessage": failure})
}

/// Failed when there is a failure, else Provisioned.
fn feature_outcome(id: FeatureId, failure: Option<&str>) -> Value {
    let status = if failure.is_some() {
        FeatureStatus::Failed
    } else {
        FeatureStatus::Provisioned
    };
    feature(id, status, failure)
}

/// Writes the ClusterReport of a DryRun profile in `cluster`: what deploying would do.
async fn write_report(
    client: &Client,
    profile: &ClusterProfile,
    cluster: &Cluster,
    reports: &[ResourceReport],
) -> Result<(), DeployerError> {
    let reference = &cluster.reference;
    let profile_name = profile.name_any_or_default();
    let name = report_name(
        &profile_name,
        reference.cluster_type.lowercase(),
        &reference.name,
    );
    let api: Api<ClusterReport> = Api::namespaced(client.clone(), &reference.namespace);
    let body = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterReport",
        "metadata": {
            "name": name, "namespace": reference.namespace,
            "labels": {
                CLUSTER_PROFILE_NAME_LABEL: profile_name,
                CLUSTER_SUMMARY_CLUSTER_NAME_LABEL: reference.name,
                CLUSTER_SUMMARY_CLUSTER_TYPE_LABEL: reference.cluster_type.lowercase(),
            },
            "ownerReferences": [{
                "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
                "name": profile_name, "uid": profile.metadata.uid,
            }],
        },
        "spec": {"clusterNamespace": reference.namespace, "clusterName": reference.name},
    });
    let params = PatchParams::apply(SUMMARY_MANAGER).force();
    api.patch(&name, &params, &Patch::Apply(&body)).await?;
    let status = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterReport",
        "metadata": {"name": name, "namespace": reference.namespace},
        "status": {"resourceReports": reports},
    });
    api.patch_status(&name, &params, &Patch::Apply(&status))
        .await?;
    Ok(())
}

/// What a pass knows a ClusterSummary holds before it writes it.
#[derive(Clone, Copy)]
enum Known<'a> {
    /// What the cache holds (none when there is no summary yet), and whether it records
    /// the profile's spec.
    Cached {
        previous: Option<&'a Summary>,
        spec_recorded: bool,
    },
    /// The spec (and the intended kinds) as this pass just wrote them.
    Intent,
}

/// Applies the spec of the summary of `profile` in `cluster`, with `intended` as the kinds
/// its pass sets out to deploy.
async fn apply_summary_spec(
    client: &Client,
    echoes: &Echoes,
    profile: &str,
    spec: &ClusterProfileSpec,
    cluster: &Cluster,
    intended: &BTreeSet<String>,
) -> Result<(), DeployerError> {
    let reference = &cluster.reference;
    let name = summary_name(profile, cluster);
    let labels = BTreeMap::from([
        (CLUSTER_PROFILE_NAME_LABEL.to_owned(), profile.to_owned()),
        (
            CLUSTER_SUMMARY_CLUSTER_NAME_LABEL.to_owned(),
            reference.name.clone(),
        ),
        (
            CLUSTER_SUMMARY_CLUSTER_TYPE_LABEL.to_owned(),
            reference.cluster_type.lowercase().to_owned(),
        ),
    ]);
    let mut metadata = json!({"name": name, "namespace": reference.namespace, "labels": labels});
    if !intended.is_empty() {
        let kinds: Vec<&str> = intended.iter().map(String::as_str).collect();
        metadata["annotations"] = json!({INTENDED_KINDS_ANNOTATION: kinds.join(",")});
    }
    let body = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
        "metadata": metadata,
        "spec": {
            "clusterNamespace": reference.namespace, "clusterName": reference.name,
            "clusterType": reference.cluster_type, "clusterProfileSpec": spec,
        }
    });
    let (params, apply) = (
        PatchParams::apply(SUMMARY_MANAGER).force(),
        Patch::Apply(&body),
    );
    let place = (SUMMARY, reference.namespace.as_str(), name.as_str());
    let at = (Some(place.1), place.2);
    let write = answer::patch::<ClusterSummary>(client, at, None, &params, &apply);
    echoes.write(place, profile, write).await?;
    Ok(())
}

/// Writes the summary of `profile` in `cluster`: its spec where `known` says it differs, and
/// the status `outcome` makes where it differs.
async fn write_summary(
    client: &Client,
    echoes: &Echoes,
    profile: &str,
    spec: &ClusterProfileSpec,
    cluster: &Cluster,
    known: Known<'_>,
    outcome: &Outcome,
) -> Result<(), DeployerError> {
    let (previous, spec_recorded) = match known {
        Known::Cached {
            previous,
            spec_recorded,
        } => (previous, spec_recorded),
        Known::Intent => (None, true),
    };
    if !spec_recorded {
        // The kinds an earlier pass set out to deploy stay recorded.
        let intended: BTreeSet<String> = previous
            .map(|p| p.intended_kinds().map(str::to_owned).collect())
            .unwrap_or_default();
        apply_summary_spec(client, echoes, profile, spec, cluster, &intended).await?;
    }
    let name = summary_name(profile, cluster);
    let resources = match (&outcome.dry_run, outcome.failure.as_deref()) {
        (Some(_), None) => feature(
            FeatureId::Resources,
            FeatureStatus::FailedNonRetriable,
            Some(DRY_RUN),
        ),
        (_, failure) => feature_outcome(FeatureId::Resources, failure),
    };
    let mut features = vec![resources];
    const NOT_YET: &str = "not deployed: sveltos-events does not deploy this feature yet";
    if !spec.helm_charts.is_empty() {
        features.push(feature_outcome(FeatureId::Helm, Some(NOT_YET)));
    }
    if !spec.kustomization_refs.is_empty() {
        features.push(feature_outcome(FeatureId::Kustomize, Some(NOT_YET)));
    }
    let status = json!({"status": {
        "featureSummaries": features,
        "deployedGVKs": [{"featureID": FeatureId::Resources, "deployedGroupVersionKind": outcome.gvks}],
    }});
    let wanted = &status["status"];
    let unchanged = previous
        .is_some_and(|p| p.status_is(wanted.get("featureSummaries"), wanted.get("deployedGVKs")));
    if !unchanged {
        let (params, merge) = (PatchParams::default(), Patch::Merge(&status));
        let place = (SUMMARY, cluster.reference.namespace.as_str(), name.as_str());
        let at = (Some(place.1), place.2);
        let write = answer::patch::<ClusterSummary>(client, at, Some("status"), &params, &merge);
        echoes.write(place, profile, write).await?;
    }
    Ok(())
}

/// Writes the clusters `profile` matches into its status, keeping the entries of clusters
/// other shards handle (one order for every shard, so that none undoes another's write).
async fn write_profile_status(
    client: &Client,
    caches: &Caches,
    profile: &ClusterProfile,
    wanted: &[&Cluster],
) -> Result<(), DeployerError> {
    let before = profile
        .status
        .as_ref()
        .map(|s| s.matching_cluster_refs.as_slice())
        .unwrap_or_default();
    let mut refs: Vec<ObjectReference> = wanted.iter().map(|c| c.object_reference()).collect();
    refs.extend(
        before
            .iter()
            .filter(|r| {
                ClusterRef::from_reference(r).is_some_and(|c| caches.fleet.handled_elsewhere(&c))
            })
            .cloned(),
    );
    refs.sort_by_key(|r| (r.namespace.clone(), r.name.clone(), r.kind.clone()));
    if before == refs.as_slice() {
        return Ok(());
    }
    let patch = json!({"status": {"matchingClusters": refs}});
    let name = profile.name_any_or_default();
    let (params, merge) = (PatchParams::default(), Patch::Merge(&patch));
    let write =
        answer::patch::<ClusterProfile>(client, (None, &name), Some("status"), &params, &merge);
    match caches
        .echoes
        .write((PROFILE, "", &name), &name, write)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error.into()),
    }
}
