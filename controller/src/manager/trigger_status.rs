//! The trigger's status: its matching clusters, each cluster's outcome, its conditions, and
//! the Kubernetes Events that tell when they change.

use api::v1beta1::{ClusterInfo, EventTrigger, EventTriggerStatus, SveltosFeatureStatus};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource};
use serde_json::json;

use super::caches::Caches;
use super::{conditions, status};
use crate::identity::ClusterRef;
use crate::plan::Plan;
use api::cluster_ref::CAPI_DEFAULT_API_VERSION;

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
pub(super) struct Outcome<'a> {
    /// What was planned (nothing, when planning failed).
    pub(super) plan: &'a Plan,
    /// Why the trigger could not be planned at all.
    pub(super) plan_error: Option<&'a str>,
    /// Why applying the plan failed (every cluster's pass).
    pub(super) failure: Option<&'a str>,
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

/// Writes the status `outcome` gives the trigger, and the Events that tell what changed.
pub(super) async fn write_status(
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
    status::ignore_gone(
        triggers
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await,
    )
}

/// Who publishes the manager's Kubernetes Events.
pub(super) fn reporter() -> Reporter {
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
