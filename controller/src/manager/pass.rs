//! One pass over a trigger: the whole trigger, or some of its source clusters within its last
//! whole plan; what passes keep for the next; and what a pass tells the status writer.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::time::Instant;

use api::labels::EVENT_TRIGGER_FINALIZER;
use api::v1beta1::{EventTrigger, event_report_name};
use kube::api::{Patch, PatchParams};
use kube::runtime::events::Recorder;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client};
use serde_json::json;

use super::caches::Caches;
use super::marks::Part;
use super::trigger_status::{Outcome, write_status};
use super::{ManagerError, apply, status};
use crate::engine::GoTemplates;
use crate::identity::ClusterRef;
use crate::plan::{Plan, PlanMemo, plan_some, selection};
use crate::queue::Pass;

/// What a trigger's passes keep for the next one.
#[derive(Default)]
pub struct TriggerMemo {
    /// The last plans' units.
    plan: PlanMemo,
    /// The last whole plan, without its objects, as passes over some clusters left it: the
    /// clusters, sources and failures those passes plan within and the status tells.
    last: Option<Plan>,
    /// Source clusters whose writes a pass left for the next.
    pending: BTreeSet<ClusterRef>,
    /// Whether the status waits for the pending writes to tell what changed.
    status_due: bool,
}

/// One pass over a trigger.
pub(super) struct Reconcile<'a> {
    /// The management cluster.
    pub client: &'a Client,
    /// What the manager reads.
    pub caches: &'a Caches,
    /// The template engine.
    pub render: &'a GoTemplates,
    /// Publishes the trigger's Events.
    pub recorder: &'a Recorder,
    /// The trigger's name.
    pub name: &'a str,
}

/// What planning and applying (part of) a trigger did.
struct Step {
    applied: apply::Applied,
    /// Whether some cluster's pass failed.
    failed: bool,
}

impl Reconcile<'_> {
    /// Plans and applies `part` of the trigger; writes its status once no writes are pending.
    pub(super) async fn run(
        &self,
        part: Part,
        memo: &mut TriggerMemo,
    ) -> Result<Pass<Part>, ManagerError> {
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
            let all = apply::Scope::All;
            let applied =
                apply::apply(self.client, caches, name, &nothing, all, apply::BUDGET).await?;
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
        let step = match part {
            Part::Clusters { clusters, status } if memo.last.is_some() => {
                memo.status_due |= status;
                self.some(&trigger, &clusters, memo).await?
            }
            _ => self.whole(&trigger, &triggers, memo).await?,
        };
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

    /// Selects the trigger's source clusters, sweeps away what it generated outside them
    /// (clusters no longer selected, objects naming none) and writes the agents' source
    /// lists; then plans and applies the selected clusters as a pass over some clusters does,
    /// freshest first within the budget, and leaves the others to the next passes: a start
    /// with 1,000 clusters writes its first objects at once, not after planning them all.
    /// The memo keeps the selection as the last whole plan.
    async fn whole(
        &self,
        trigger: &EventTrigger,
        triggers: &Api<EventTrigger>,
        memo: &mut TriggerMemo,
    ) -> Result<Step, ManagerError> {
        let (caches, name) = (self.caches, self.name);
        memo.pending.clear();
        memo.last = None;
        let started = Instant::now();
        let selection = match selection(trigger, caches, self.render, None) {
            Ok(selection) => selection,
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
        // The selected clusters whose objects are planned (the others' stay as they are).
        let clusters: BTreeSet<ClusterRef> = selection
            .matching
            .iter()
            .filter(|c| !selection.held.contains_key(*c) && !selection.failures.contains_key(*c))
            .cloned()
            .collect();
        memo.plan.keep_only(&clusters);
        tracing::debug!(
            trigger = name,
            clusters = selection.matching.len(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "selected"
        );
        // The sweep: the selection (no objects) in every cluster but those to plan.
        let sweep = apply::Scope::AllBut(&clusters);
        let swept = apply::apply(self.client, caches, name, &selection, sweep, apply::BUDGET);
        let swept = swept.await;
        log_failures(name, &selection);
        let failed = !selection.failures.is_empty();
        let selection = memo.last.insert(selection);
        let swept = match swept {
            Ok(swept) => swept,
            Err(error) => {
                let failure = error.to_string();
                record_passes(caches, name, selection, Some(&failure), &memo.pending, true);
                let outcome = Outcome {
                    plan: selection,
                    plan_error: None,
                    failure: Some(&failure),
                };
                write_status(triggers, self.recorder, caches, trigger, &outcome).await?;
                return Err(error.into());
            }
        };
        memo.pending.clone_from(&clusters);
        record_passes(caches, name, selection, None, &memo.pending, true);
        memo.status_due = true;
        let mut step = self.some(trigger, &clusters, memo).await?;
        step.applied.add(swept);
        step.failed |= failed;
        Ok(step)
    }

    /// Plans the trigger again in source `clusters` only, takes that into its last whole
    /// plan and applies it: an event in one cluster costs that cluster's work, not the
    /// fleet's. The freshest clusters go first, a few at a time, until [`apply::BUDGET`] is
    /// spent (planning included: a cluster's first plan renders all its units) or a report
    /// changes meanwhile; the others are left for the next pass.
    async fn some(
        &self,
        trigger: &EventTrigger,
        clusters: &BTreeSet<ClusterRef>,
        memo: &mut TriggerMemo,
    ) -> Result<Step, ManagerError> {
        let (caches, name) = (self.caches, self.name);
        let mut order: Vec<&ClusterRef> = clusters.iter().collect();
        order.sort_by_cached_key(|c| Reverse(caches.fresh.at(c)));
        let started = Instant::now();
        let mut step = Step {
            applied: apply::Applied::default(),
            failed: false,
        };
        // Clusters that have not reported are the least fresh: when the pass may stop before
        // them, their agents learn their EventSources first, or they would not start
        // evaluating until every fresher cluster was planned.
        let mut unreported = BTreeSet::new();
        if clusters.len() > CLUSTERS_AT_ONCE {
            let never = clusters.iter().filter(|c| caches.fresh.at(c).is_none());
            unreported.extend(never.cloned());
        }
        if !unreported.is_empty() {
            let selection = selection(trigger, caches, self.render, Some(&unreported));
            let selection = selection.map_err(ManagerError::Plan)?;
            let lists =
                apply::source_lists(self.client, caches, name, &selection, Some(&unreported));
            step.applied.written += lists.await?;
        }
        for (n, chunk) in order.chunks(CLUSTERS_AT_ONCE).enumerate() {
            let spent = started.elapsed();
            // A report that changed meanwhile goes first: the next pass starts with it.
            let fresher = caches.fresh.since(started);
            if n > 0 && (spent >= apply::BUDGET || fresher || !step.applied.left.is_empty()) {
                let rest = order[n * CLUSTERS_AT_ONCE..].iter();
                step.applied.left.extend(rest.map(|c| Some((*c).clone())));
                break;
            }
            let within: BTreeSet<ClusterRef> = chunk.iter().map(|c| (*c).clone()).collect();
            let planned = plan_some(trigger, caches, self.render, &mut memo.plan, &within);
            let plan = planned.map_err(ManagerError::Plan)?;
            let changed = memo.last.as_mut().is_some_and(|l| l.absorb(&plan, &within));
            memo.status_due |= changed;
            let budget = apply::BUDGET.saturating_sub(spent);
            let only = apply::Scope::Only(&within);
            let applied = apply::apply(self.client, caches, name, &plan, only, budget);
            let applied = applied.await?;
            // What the cluster now holds as planned is kept as names and stamps; then the
            // confirmations of objects gone are let go (not before: a write's echo may be
            // on its way, and its unit settles by the write's confirmation).
            memo.plan.settle(&within, |built| caches.settle(built));
            caches.prune_confirmed();
            memo.pending.retain(|c| !within.contains(c));
            memo.pending.extend(applied.left.iter().flatten().cloned());
            record_passes(caches, name, &plan, None, &memo.pending, false);
            log_failures(name, &plan);
            step.failed |= !plan.failures.is_empty();
            step.applied.add(applied);
        }
        Ok(step)
    }
}

/// Source clusters a pass over some clusters plans and applies at once.
const CLUSTERS_AT_ONCE: usize = 4;

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
    status::ignore_gone(
        triggers
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await,
    )
}
