//! The running manager: watches keep the caches current, every change marks the triggers it
//! can affect, and a worker plans and applies each marked trigger. Nothing polls: work is
//! discovered only through watch events (failed passes are retried with a backoff).

pub mod apply;
pub mod caches;
pub mod conditions;
pub mod legacy;
mod lua_rules;
pub mod marks;
pub mod owned;
pub mod scripts;
pub mod status;

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use api::labels::{EVENT_TRIGGER_FINALIZER, EVENT_TRIGGER_NAME_LABEL};
use api::v1beta1::{
    ClusterInfo, ClusterProfile, EventReport, EventSource, EventTrigger, EventTriggerStatus,
    SveltosFeatureStatus, event_report_name,
};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde_json::json;

use crate::engine::GoTemplates;
use crate::identity::ClusterRef;
use crate::plan::{Plan, PlanMemo, plan, plan_some};
use crate::profiles::Desired;
use crate::queue::{Pass, Queue, Retries};
use crate::serve::Telemetry;
use crate::watches::Watches;
use api::cluster_ref::CAPI_DEFAULT_API_VERSION;
use clusters::watch::reflect;

/// Name of this controller in metrics and readiness.
const CONTROLLER: &str = "manager";
use caches::Caches;
use marks::{Part, Work};

/// Errors of the running manager.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// A request to the management cluster failed.
    #[error("request to the management cluster failed: {}", clusters::words::words(.0))]
    Kube(#[from] kube::Error),
    /// The trigger cannot be planned (e.g. a bad selector).
    #[error("{0}")]
    Plan(String),
}

/// Runs the manager against the management cluster until `shutdown` completes.
pub async fn run(
    client: Client,
    shared: Watches,
    telemetry: Arc<Telemetry>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ManagerError> {
    telemetry.expect(CONTROLLER);
    ensure_namespace(&client, api::labels::SVELTOS_NAMESPACE).await?;
    let queue = Arc::new(Queue::default());
    let (caches, watches) = start_watches(&client, &shared, &queue);
    let statuses = status::run(client.clone(), caches.clone());
    let worker = worker(client.clone(), caches, queue, telemetry);
    tokio::select! {
        () = shutdown => {}
        () = watches => {}
        () = worker => {}
        () = statuses => {}
        () = legacy::run(client.clone()) => {}
    }
    Ok(())
}

/// Creates namespace `name` unless it exists; waits out an API server that is briefly away.
pub async fn ensure_namespace(client: &Client, name: &str) -> Result<(), ManagerError> {
    let what = format!("making namespace {name}");
    clusters::process::patiently(&what, clusters::process::transient, || {
        try_namespace(client, name)
    })
    .await?;
    Ok(())
}

async fn try_namespace(client: &Client, name: &str) -> kube::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(name).await?.is_none() {
        let namespace = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        match namespaces.create(&PostParams::default(), &namespace).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

fn start_watches(
    client: &Client,
    shared: &Watches,
    queue: &Arc<Queue<Part>>,
) -> (Caches, impl Future<Output = ()> + use<>) {
    let all = watcher::Config::default;
    let generated = || watcher::Config::default().labels(EVENT_TRIGGER_NAME_LABEL);
    let (triggers, trigger_events) = reflect::<EventTrigger>(client, all());
    let (fleet, fleet_events) = (shared.fleet.clone(), shared.fleet_changes());
    let (cluster_sets, cluster_set_events) =
        (shared.cluster_sets.store(), shared.cluster_sets.objects());
    let (sources, source_events) = reflect::<EventSource>(client, all());
    let (reports, report_events) = reflect::<EventReport>(client, all());
    let (config_maps, config_map_events) =
        (shared.config_maps.store(), shared.config_maps.objects());
    let (secrets, secret_events) = (shared.secrets.store(), shared.secrets.objects());
    let (profiles, profile_events) = reflect::<ClusterProfile>(client, generated());
    let caches = Caches {
        triggers,
        fleet,
        cluster_sets,
        sources,
        reports,
        config_maps,
        secrets,
        profiles,
        lookup_epoch: Arc::default(),
        own_writes: Arc::default(),
        written: Arc::default(),
        status: Arc::default(),
        confirmed: Arc::default(),
        fresh: shared.fresh.clone(),
        decoded: Arc::default(),
        owned: Arc::default(),
    };

    let mark = {
        let (caches, queue) = (caches.clone(), Arc::clone(queue));
        move |work: Work| {
            tracing::trace!(?work, "marks");
            let every = |queue: &Queue<Part>| {
                for trigger in caches.triggers.state() {
                    queue.mark(trigger.metadata.name.clone().unwrap_or_default());
                }
            };
            // `part` of each trigger reading EventSource `source`.
            let readers = |source: &str, part: Part| {
                let triggers = caches.triggers.state();
                let triggers = triggers.iter().map(AsRef::as_ref);
                for name in marks::triggers_of_source(triggers, source) {
                    queue.mark_part(name, part.clone());
                }
            };
            match work {
                Work::Nothing => {}
                Work::Trigger(name) => queue.mark(name),
                Work::TriggerStatus(name) => queue.mark_part(name, Part::status()),
                Work::Source(source) => readers(&source, Part::Whole),
                Work::SourceStatus(source) => readers(&source, Part::status()),
                Work::Report { source, cluster } => readers(&source, Part::cluster(cluster)),
                Work::Referenced => {
                    caches.referenced_changed();
                    every(&queue);
                }
                Work::Every => every(&queue),
                Work::Cluster(cluster) => {
                    for trigger in caches.triggers.state() {
                        let name = trigger.metadata.name.clone().unwrap_or_default();
                        queue.mark_part(name, Part::cluster(cluster.clone()));
                    }
                }
            }
        }
    };
    let trigger_task = {
        let (mark, caches) = (mark.clone(), caches.clone());
        let mut planned = marks::Planned::default();
        trigger_events.for_each(move |t| {
            let changed = planned.changed(&t.metadata, cached(&caches.triggers, &t.metadata));
            let name = t.metadata.name.unwrap_or_default();
            mark(match changed {
                true => Work::Trigger(name),
                false => Work::TriggerStatus(name),
            });
            async {}
        })
    };
    let cluster_task = {
        let mark = mark.clone();
        let sets = cluster_set_events.map(|_| None);
        let changes = futures_util::stream::select(fleet_events, sets);
        changes.for_each(move |cluster| {
            mark(cluster.map_or(Work::Every, Work::Cluster));
            async {}
        })
    };
    let source_task = {
        let (mark, caches) = (mark.clone(), caches.clone());
        let mut planned = marks::Planned::default();
        source_events.for_each(move |s| {
            let changed = planned.changed(&s.metadata, cached(&caches.sources, &s.metadata));
            let name = s.metadata.name.unwrap_or_default();
            caches.status.source_changed(&name);
            mark(match changed {
                true => Work::Source(name),
                false => Work::SourceStatus(name),
            });
            async {}
        })
    };
    let report_task = {
        let (mark, caches) = (mark.clone(), caches.clone());
        let mut generations = marks::ReportGenerations::default();
        report_events.for_each(move |r| {
            let namespace = r.metadata.namespace.as_deref().unwrap_or_default();
            let name = r.metadata.name.as_deref().unwrap_or_default();
            caches.status.source_changed(marks::report_source(&r));
            caches.status.report_changed(namespace, name);
            let work = generations.work(&r, cached(&caches.reports, &r.metadata));
            if let Work::Report { cluster, .. } = &work {
                caches.fresh.changed(cluster.clone());
            }
            mark(work);
            async {}
        })
    };
    let config_map_task = {
        let (mark, caches) = (mark.clone(), caches.clone());
        config_map_events.for_each(move |c| {
            let version = c.metadata.resource_version.as_deref();
            let present = cached(&caches.config_maps, &c.metadata);
            caches.saw_generated("ConfigMap", &c.metadata, present);
            let echo = caches.is_echo("ConfigMap", &c.metadata, present, version);
            mark(marks::config_object(&c.metadata, echo));
            async {}
        })
    };
    let secret_task = {
        let (mark, caches) = (mark.clone(), caches.clone());
        secret_events.for_each(move |s| {
            let work = marks::companion_source(&s.metadata).unwrap_or_else(|| {
                let version = s.metadata.resource_version.as_deref();
                let present = cached(&caches.secrets, &s.metadata);
                caches.saw_generated("Secret", &s.metadata, present);
                let echo = caches.is_echo("Secret", &s.metadata, present, version);
                marks::config_object(&s.metadata, echo)
            });
            mark(work);
            async {}
        })
    };
    let profile_task = {
        let caches = caches.clone();
        profile_events.for_each(move |p| {
            let present = cached(&caches.profiles, &p.metadata);
            caches.saw_generated("ClusterProfile", &p.metadata, present);
            let generation = p.metadata.generation.map(|g| g.to_string());
            let echo = caches.is_echo(
                "ClusterProfile",
                &p.metadata,
                present,
                generation.as_deref(),
            );
            mark(marks::profile(&p.metadata, echo));
            async {}
        })
    };
    let watches = async move {
        tokio::join!(
            trigger_task,
            cluster_task,
            source_task,
            report_task,
            config_map_task,
            secret_task,
            profile_task
        );
    };
    (caches, watches)
}

/// Whether `store` holds the object `meta` names.
fn cached<K>(store: &kube::runtime::reflector::Store<K>, meta: &kube::api::ObjectMeta) -> bool
where
    K: Resource<DynamicType = ()> + Clone,
{
    let mut object = ObjectRef::new(meta.name.as_deref().unwrap_or_default());
    if let Some(namespace) = &meta.namespace {
        object = object.within(namespace);
    }
    store.get(&object).is_some()
}

pub(super) async fn caches_ready(caches: &Caches) -> bool {
    caches.triggers.wait_until_ready().await.is_ok()
        && caches.fleet.ready().await
        && caches.cluster_sets.wait_until_ready().await.is_ok()
        && caches.sources.wait_until_ready().await.is_ok()
        && caches.reports.wait_until_ready().await.is_ok()
        && caches.config_maps.wait_until_ready().await.is_ok()
        && caches.secrets.wait_until_ready().await.is_ok()
        && caches.profiles.wait_until_ready().await.is_ok()
}

async fn worker(
    client: Client,
    caches: Caches,
    queue: Arc<Queue<Part>>,
    telemetry: Arc<Telemetry>,
) {
    if !caches_ready(&caches).await {
        tracing::error!("the manager's caches closed before they were filled");
        return;
    }
    tracing::info!("caches filled; reconciling");
    telemetry.set_ready(CONTROLLER);
    let render = GoTemplates::new();
    let recorder = Recorder::new(client.clone(), reporter());
    let mut retries = Retries::new(CONTROLLER, telemetry);
    for trigger in caches.triggers.state() {
        queue.mark(trigger.metadata.name.clone().unwrap_or_default());
    }
    // Each trigger's units from its last plan, so an event re-plans what it changed only.
    let mut memos: HashMap<String, TriggerMemo> = HashMap::new();
    loop {
        for (name, part) in queue.next_parts().await {
            let clusters = match &part {
                Part::Whole => None,
                Part::Clusters { clusters, .. } => Some(clusters.len()),
            };
            tracing::debug!(trigger = name, ?clusters, "pass");
            let memo = memos.entry(name.clone()).or_default();
            let pass = Reconcile {
                client: &client,
                caches: &caches,
                render: &render,
                recorder: &recorder,
                name: &name,
            };
            let outcome = pass.run(part, memo).await;
            // Whatever came of it: reports waiting for every trigger's first pass go on.
            caches.status.tried(&name);
            if caches.triggers.get(&ObjectRef::new(&name)).is_none() {
                memos.remove(&name);
            }
            retries.record(&queue, "EventTrigger", name, outcome);
        }
    }
}

/// What a trigger's passes keep for the next one.
#[derive(Default)]
pub struct TriggerMemo {
    /// The last plans' units.
    plan: PlanMemo,
    /// What the last pass spent besides writing (planning, comparing, deleting):
    /// the next pass writes for three times that at least, so that a busy fleet's passes
    /// are not mostly that.
    overhead: Duration,
    /// The last whole plan, without its objects, as passes over some clusters left it: the
    /// clusters, sources and failures those passes plan within and the status tells.
    last: Option<Plan>,
    /// Source clusters whose writes a pass left for the next.
    pending: BTreeSet<ClusterRef>,
    /// Whether the status waits for the pending writes to tell what changed.
    status_due: bool,
}

/// One pass over a trigger.
struct Reconcile<'a> {
    client: &'a Client,
    caches: &'a Caches,
    render: &'a GoTemplates,
    recorder: &'a Recorder,
    name: &'a str,
}

/// What planning and applying (part of) a trigger did.
struct Step {
    applied: apply::Applied,
    /// Whether some cluster's pass failed.
    failed: bool,
}

impl Reconcile<'_> {
    /// Plans and applies `part` of the trigger; writes its status once no writes are pending.
    async fn run(&self, part: Part, memo: &mut TriggerMemo) -> Result<Pass<Part>, ManagerError> {
        let (caches, name) = (self.caches, self.name);
        let triggers: Api<EventTrigger> = Api::all(self.client.clone());
        let trigger = caches.triggers.get(&ObjectRef::new(name));
        let deleting = trigger
            .as_ref()
            .is_none_or(|t| t.metadata.deletion_timestamp.is_some());
        if deleting {
            // Withdraw everything the trigger generated, then let it go.
            *memo = TriggerMemo::default();
            let nothing = Plan::default();
            let applied =
                apply::apply(self.client, caches, name, &nothing, None, apply::BUDGET).await?;
            if applied.waiting {
                return Ok(Pass::Again);
            }
            if let Some(trigger) = trigger {
                remove_finalizer(&triggers, &trigger).await?;
            }
            caches.status.processed(name, Vec::new());
            return Ok(Pass::Done);
        }
        let Some(trigger) = trigger else {
            return Ok(Pass::Done);
        };
        add_finalizer(&triggers, &trigger).await?;
        let started = Instant::now();
        let budget = apply::BUDGET.max(memo.overhead * 3);
        let step = match (part, memo.last.take()) {
            (Part::Clusters { clusters, status }, Some(last)) => {
                memo.status_due |= status;
                self.some(&trigger, &clusters, last, budget, memo).await?
            }
            _ => self.whole(&trigger, &triggers, budget, memo).await?,
        };
        memo.overhead = started.elapsed().saturating_sub(step.applied.writing);
        let applied = step.applied;
        if applied.disturbed {
            tracing::debug!(trigger = name, "an object changed while it was written");
            return Ok(Pass::More(Part::Whole));
        }
        if !applied.left.is_empty() {
            // The status tells of passes that made their writes; the next goes on at once.
            tracing::debug!(trigger = name, written = applied.written, "pass goes on");
            let part = match applied
                .left
                .iter()
                .cloned()
                .collect::<Option<BTreeSet<_>>>()
            {
                Some(clusters) => Part::Clusters {
                    clusters,
                    status: false,
                },
                None => Part::Whole,
            };
            return Ok(Pass::More(part));
        }
        if memo.status_due
            && memo.pending.is_empty()
            && let Some(last) = &memo.last
        {
            let outcome = Outcome {
                plan: last,
                plan_error: None,
                failure: None,
            };
            write_status(&triggers, self.recorder, caches, &trigger, &outcome).await?;
            memo.status_due = false;
        }
        if applied.written + applied.deleted > 0 {
            tracing::info!(
                trigger = name,
                written = applied.written,
                deleted = applied.deleted,
                elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
                "applied"
            );
        }
        Ok(if applied.waiting || step.failed {
            Pass::Again
        } else {
            Pass::Done
        })
    }

    /// Plans the whole trigger and applies the plan, which the memo keeps as the last.
    async fn whole(
        &self,
        trigger: &EventTrigger,
        triggers: &Api<EventTrigger>,
        budget: Duration,
        memo: &mut TriggerMemo,
    ) -> Result<Step, ManagerError> {
        let (caches, name) = (self.caches, self.name);
        memo.pending.clear();
        let started = Instant::now();
        let mut plan = match plan(trigger, caches, self.render, &mut memo.plan) {
            Ok(plan) => plan,
            Err(reason) => {
                tracing::warn!(trigger = name, %reason, "cannot plan EventTrigger");
                let outcome = Outcome {
                    plan: &Plan::default(),
                    plan_error: Some(&reason),
                    failure: None,
                };
                write_status(triggers, self.recorder, caches, trigger, &outcome).await?;
                return Err(ManagerError::Plan(reason));
            }
        };
        tracing::debug!(
            trigger = name,
            clusters = plan.matching.len(),
            profiles = plan.desired.profiles.len(),
            generated = plan.desired.generated.len(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "planned"
        );
        let result = apply::apply(self.client, caches, name, &plan, None, budget).await;
        // The last plan keeps what the status and later passes read, not its objects.
        plan.desired = Desired::default();
        log_failures(name, &plan);
        let failed = !plan.failures.is_empty();
        let plan = memo.last.insert(plan);
        let applied = match result {
            Ok(applied) => applied,
            Err(error) => {
                let failure = error.to_string();
                record_passes(caches, name, plan, Some(&failure), &memo.pending, true);
                let outcome = Outcome {
                    plan,
                    plan_error: None,
                    failure: Some(&failure),
                };
                write_status(triggers, self.recorder, caches, trigger, &outcome).await?;
                return Err(error.into());
            }
        };
        memo.pending = applied.left.iter().flatten().cloned().collect();
        record_passes(caches, name, plan, None, &memo.pending, true);
        memo.status_due = true;
        Ok(Step { applied, failed })
    }

    /// Plans the trigger again in source `clusters` only, takes that into the `last` whole
    /// plan and applies it: an event in one cluster costs that cluster's work, not the
    /// fleet's.
    async fn some(
        &self,
        trigger: &EventTrigger,
        clusters: &BTreeSet<ClusterRef>,
        mut last: Plan,
        budget: Duration,
        memo: &mut TriggerMemo,
    ) -> Result<Step, ManagerError> {
        let (caches, name) = (self.caches, self.name);
        let planned = plan_some(trigger, caches, self.render, &mut memo.plan, clusters);
        let plan = planned.map_err(ManagerError::Plan)?;
        memo.status_due |= last.absorb(&plan, clusters);
        memo.last = Some(last);
        let applied =
            apply::apply(self.client, caches, name, &plan, Some(clusters), budget).await?;
        memo.pending.retain(|c| !clusters.contains(c));
        memo.pending.extend(applied.left.iter().flatten().cloned());
        record_passes(caches, name, &plan, None, &memo.pending, false);
        log_failures(name, &plan);
        Ok(Step {
            applied,
            failed: !plan.failures.is_empty(),
        })
    }
}

/// Logs why planning failed in some clusters.
fn log_failures(trigger: &str, plan: &Plan) {
    for (cluster, reason) in &plan.failures {
        tracing::warn!(trigger, cluster = %cluster.name, %reason, "cannot generate profiles");
    }
}

/// Tells the status writer how a pass went for each report of `plan` (the whole trigger's,
/// or some clusters'); those of `pending` clusters wait for their writes.
fn record_passes(
    caches: &Caches,
    trigger: &str,
    plan: &Plan,
    failure: Option<&str>,
    pending: &BTreeSet<ClusterRef>,
    whole: bool,
) {
    let mut passes = Vec::new();
    for (cluster, source) in &plan.sources {
        if plan.held.contains_key(cluster) {
            continue;
        }
        let name = event_report_name(source, &cluster.name, cluster.cluster_type);
        let Some(report) = caches
            .reports
            .get(&ObjectRef::new(&name).within(&cluster.namespace))
        else {
            continue;
        };
        let failure = plan.failures.get(cluster).map(String::as_str).or(failure);
        let pass = status::Processing {
            generation: report
                .metadata
                .generation
                .filter(|_| !pending.contains(cluster)),
            failure: failure.map(str::to_owned),
        };
        passes.push(((cluster.namespace.clone(), name), pass));
    }
    if whole {
        caches.status.processed(trigger, passes);
    } else {
        caches.status.processed_some(trigger, passes);
    }
}

async fn add_finalizer(triggers: &Api<EventTrigger>, trigger: &EventTrigger) -> kube::Result<()> {
    let mut finalizers = trigger.metadata.finalizers.clone().unwrap_or_default();
    if finalizers.iter().any(|f| f == EVENT_TRIGGER_FINALIZER) {
        return Ok(());
    }
    finalizers.push(EVENT_TRIGGER_FINALIZER.to_string());
    let name = trigger.metadata.name.clone().unwrap_or_default();
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": trigger.metadata.resource_version}});
    triggers
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn remove_finalizer(
    triggers: &Api<EventTrigger>,
    trigger: &EventTrigger,
) -> kube::Result<()> {
    let finalizers = trigger.metadata.finalizers.clone().unwrap_or_default();
    if !finalizers.iter().any(|f| f == EVENT_TRIGGER_FINALIZER) {
        return Ok(());
    }
    let kept: Vec<_> = finalizers
        .into_iter()
        .filter(|f| f != EVENT_TRIGGER_FINALIZER)
        .collect();
    let name = trigger.metadata.name.clone().unwrap_or_default();
    let patch = json!({"metadata": {"finalizers": kept, "resourceVersion": trigger.metadata.resource_version}});
    match triggers
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// How the status names `cluster`: as the plan found it, else by its kind's usual version.
fn cluster_reference(plan: &Plan, cluster: &ClusterRef) -> ObjectReference {
    plan.references
        .get(cluster)
        .cloned()
        .unwrap_or_else(|| cluster.object_reference(CAPI_DEFAULT_API_VERSION))
}

/// The status a plan gives the trigger; `failure` applies to every cluster.
pub fn status_of(plan: &Plan, failure: Option<&str>) -> EventTriggerStatus {
    EventTriggerStatus {
        matching_cluster_refs: plan
            .matching
            .iter()
            .map(|c| cluster_reference(plan, c))
            .collect(),
        destination_matching_cluster_refs: Vec::new(),
        cluster_info: plan
            .matching
            .iter()
            .map(|cluster| {
                let message = plan.failures.get(cluster).map(String::as_str).or(failure);
                let (status, message) = match (plan.held.get(cluster), message) {
                    (_, Some(message)) => (SveltosFeatureStatus::Failed, Some(message)),
                    (Some(held), None) => (SveltosFeatureStatus::Provisioning, Some(held.as_str())),
                    (None, None) => (SveltosFeatureStatus::Provisioned, None),
                };
                ClusterInfo {
                    cluster: cluster_reference(plan, cluster),
                    hash: None,
                    status: Some(status),
                    failure_message: message.map(str::to_string),
                }
            })
            .collect(),
        conditions: Vec::new(),
    }
}

/// How a pass over a trigger went.
struct Outcome<'a> {
    /// What was planned (nothing, when planning failed).
    plan: &'a Plan,
    /// Why the trigger could not be planned at all.
    plan_error: Option<&'a str>,
    /// Why applying the plan failed (every cluster's pass).
    failure: Option<&'a str>,
}

/// The facts a trigger's conditions rest on besides its status, read from the caches.
fn facts(caches: &Caches, trigger: &EventTrigger, plan: &Plan) -> conditions::Facts {
    use conditions::SourceState;
    let mut names: Vec<String> = plan.sources.values().cloned().collect();
    let wanted = &trigger.spec.event_source_name;
    if names.is_empty() && !wanted.contains("{{") {
        names.push(wanted.clone());
    }
    names.sort();
    names.dedup();
    let sources = names
        .into_iter()
        .map(|name| {
            let state = match caches.sources.get(&ObjectRef::new(&name)) {
                Some(source) if source.metadata.deletion_timestamp.is_none() => {
                    let conditions = source.status.as_ref().map(|s| &s.conditions[..]);
                    match conditions.and_then(|c| api::condition::find(c, api::condition::READY)) {
                        Some(ready) if ready.status == "False" => {
                            SourceState::NotReady(ready.message.clone())
                        }
                        _ => SourceState::Ready,
                    }
                }
                _ => SourceState::Missing,
            };
            (name, state)
        })
        .collect();
    let all = caches.fleet.all();
    let destination = &trigger.spec.destination_cluster_selector;
    let destinations = (!api::selector::is_empty(destination)).then(|| {
        crate::fleet::select(&all, destination)
            .map(|found| found.len())
            .map_err(|e| e.to_string())
    });
    conditions::Facts {
        sources,
        registered: all.len(),
        destinations,
    }
}

async fn write_status(
    triggers: &Api<EventTrigger>,
    recorder: &Recorder,
    caches: &Caches,
    trigger: &EventTrigger,
    outcome: &Outcome<'_>,
) -> kube::Result<()> {
    let mut status = status_of(outcome.plan, outcome.failure);
    // Clusters of other shards keep the entries their manager wrote; one order for all
    // managers, so that they never rewrite each other's status back and forth.
    if let Some(before) = &trigger.status {
        let elsewhere = |r: &ObjectReference| {
            ClusterRef::from_reference(r).is_some_and(|c| caches.fleet.handled_elsewhere(&c))
        };
        let others = before.matching_cluster_refs.iter().filter(|r| elsewhere(r));
        status.matching_cluster_refs.extend(others.cloned());
        let others = before.cluster_info.iter().filter(|i| elsewhere(&i.cluster));
        status.cluster_info.extend(others.cloned());
    }
    let order = |r: &ObjectReference| (r.namespace.clone(), r.name.clone(), r.kind.clone());
    status.matching_cluster_refs.sort_by_key(order);
    status.cluster_info.sort_by_key(|i| order(&i.cluster));
    let facts = facts(caches, trigger, outcome.plan);
    let verdicts = conditions::trigger_verdicts(trigger, &status, outcome.plan_error, &facts);
    let before = trigger
        .status
        .as_ref()
        .map_or(&[][..], |s| &s.conditions[..]);
    let generation = trigger.metadata.generation;
    status.conditions =
        api::condition::merge(before, &verdicts, generation, &api::condition::now());
    if trigger.status.as_ref() == Some(&status) {
        return Ok(());
    }
    publish_failures(recorder, trigger, &status).await;
    publish_readiness(recorder, trigger, &status).await;
    let name = trigger.metadata.name.clone().unwrap_or_default();
    // Lists are written whole so that a cluster that stopped matching disappears.
    let patch = json!({"status": {
        "matchingClusters": status.matching_cluster_refs,
        "clusterInfo": status.cluster_info,
        "conditions": status.conditions,
    }});
    match triggers
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Who publishes the manager's Kubernetes Events.
fn reporter() -> Reporter {
    Reporter {
        controller: "sveltos-events-manager".into(),
        instance: None,
    }
}

/// Publishes an Event when the trigger's `Ready` changes: Warning with the reason when it
/// breaks (a cluster's failed pass has its own Event), Normal when it is ready again.
async fn publish_readiness(
    recorder: &Recorder,
    trigger: &EventTrigger,
    status: &EventTriggerStatus,
) {
    use api::condition::{READY, find};
    let Some(now) = find(&status.conditions, READY) else {
        return;
    };
    let before = trigger
        .status
        .as_ref()
        .and_then(|s| find(&s.conditions, READY));
    let unchanged = before.is_some_and(|b| {
        (&b.status, &b.reason, &b.message) == (&now.status, &now.reason, &now.message)
    });
    let first_ready = before.is_none() && now.status == "True";
    if unchanged || first_ready || now.reason == conditions::GENERATION_FAILED {
        return;
    }
    let type_ = if now.status == "True" {
        EventType::Normal
    } else {
        EventType::Warning
    };
    let event = Event {
        type_,
        reason: now.reason.clone(),
        note: Some(api::event_note::event_note(now.message.clone())),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(error) = recorder.publish(&event, &trigger.object_ref(&())).await {
        tracing::warn!(%error, "cannot publish Kubernetes Event");
    }
}

/// Publishes a Warning Event on the trigger for each cluster whose failure is new.
async fn publish_failures(
    recorder: &Recorder,
    trigger: &EventTrigger,
    status: &EventTriggerStatus,
) {
    let before = |cluster: &ObjectReference| {
        trigger
            .status
            .iter()
            .flat_map(|s| &s.cluster_info)
            .find(|i| &i.cluster == cluster)
            .and_then(|i| i.failure_message.clone())
    };
    let reference = trigger.object_ref(&());
    for info in &status.cluster_info {
        let Some(message) = &info.failure_message else {
            continue;
        };
        if info.status != Some(SveltosFeatureStatus::Failed) {
            continue;
        }
        if before(&info.cluster).as_ref() == Some(message) {
            continue;
        }
        let cluster = format!(
            "{}/{}",
            info.cluster.namespace.as_deref().unwrap_or_default(),
            info.cluster.name.as_deref().unwrap_or_default()
        );
        let note = api::event_note::event_note(format!("cluster {cluster}: {message}"));
        let event = Event {
            type_: EventType::Warning,
            reason: conditions::GENERATION_FAILED.into(),
            note: Some(note),
            action: "Generate".into(),
            secondary: None,
        };
        if let Err(error) = recorder.publish(&event, &reference).await {
            tracing::warn!(%error, "cannot publish Kubernetes Event");
        }
    }
}
