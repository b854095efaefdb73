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
mod pass;
pub mod scripts;
pub mod status;
mod trigger_status;

pub use pass::TriggerMemo;
pub use trigger_status::status_of;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use api::v1beta1::{EventReport, EventSource, EventTrigger};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client};

use crate::engine::GoTemplates;
use crate::kept::Meta;
use crate::queue::{Queue, Retries};
use crate::serve::Telemetry;
use crate::watches::Watches;
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
    let (triggers, trigger_events) = reflect::<EventTrigger>(client, all());
    let (fleet, fleet_events) = (shared.fleet.clone(), shared.fleet_changes());
    let (cluster_sets, cluster_set_events) =
        (shared.cluster_sets.store(), shared.cluster_sets.objects());
    let (sources, source_events) = reflect::<EventSource>(client, all());
    let (reports, report_events) = reflect::<EventReport>(client, all());
    let (config_maps, config_map_events) =
        (shared.config_maps.store(), shared.config_maps.objects());
    let (secrets, secret_events) = (shared.secrets.store(), shared.secrets.objects());
    let (profiles, profile_events) = (shared.profiles.store(), shared.profiles.objects());
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
        listed: Arc::default(),
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
            caches.outdate(&r);
            if let Work::Report { cluster, .. } = &work {
                caches.list(&r);
                caches.fresh.changed(cluster.clone());
            }
            mark(work);
            async {}
        })
    };
    // Keeps the generated objects' index; one that leaves its trigger (deleted, or its
    // labels edited away) is that trigger's work too, as the watch no longer shows it as the
    // trigger's. Before `is_echo`, which lets the record of the manager's own write go.
    let saw_generated = {
        let mark = mark.clone();
        move |left: Option<String>| {
            if let Some(trigger) = left {
                mark(Work::Trigger(trigger));
            }
        }
    };
    let config_map_task = {
        let (mark, caches, saw) = (mark.clone(), caches.clone(), saw_generated.clone());
        config_map_events.for_each(move |c| {
            let version = c.metadata.resource_version();
            let present = cached(&caches.config_maps, &c.metadata);
            saw(caches.saw_generated("ConfigMap", &c.metadata, present));
            let echo = caches.is_echo("ConfigMap", &c.metadata, present, version);
            mark(marks::config_object(&c.metadata, echo));
            async {}
        })
    };
    let secret_task = {
        let (mark, caches, saw) = (mark.clone(), caches.clone(), saw_generated.clone());
        secret_events.for_each(move |s| {
            let work = marks::companion_source(&s.metadata).unwrap_or_else(|| {
                let version = s.metadata.resource_version.as_deref();
                let present = cached(&caches.secrets, &s.metadata);
                saw(caches.saw_generated("Secret", &s.metadata, present));
                let echo = caches.is_echo("Secret", &s.metadata, present, version);
                marks::config_object(&s.metadata, echo)
            });
            mark(work);
            async {}
        })
    };
    let profile_task = {
        let (caches, saw) = (caches.clone(), saw_generated);
        profile_events.for_each(move |p| {
            let present = cached(&caches.profiles, &p.metadata);
            saw(caches.saw_generated("ClusterProfile", &p.metadata, present));
            let generation = p.metadata.generation().map(|g| g.to_string());
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
fn cached<K>(store: &kube::runtime::reflector::Store<K>, meta: &impl Meta) -> bool
where
    K: kube::runtime::reflector::Lookup<DynamicType = ()> + Clone,
{
    let mut object = ObjectRef::new(meta.name());
    if let Some(namespace) = meta.namespace() {
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
    let recorder = Recorder::new(client.clone(), trigger_status::reporter());
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
            let pass = pass::Reconcile {
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
