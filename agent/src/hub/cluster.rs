//! One evaluated cluster: watches the kinds its EventSources select, re-evaluates an EventSource
//! when one of its kinds changes (scripts run again only for changed objects), and writes its
//! EventReport (into the management cluster, or locally in spoke mode) when the result changes.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use api::v1beta1::EventSource;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, GroupVersionKind};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::evaluate::{VerdictCache, evaluate_event_source_cached};
use crate::hub::report::{self, ClusterId, Destination};
use crate::kept::Kept;
use clusters::objects::{KindEvent, ObjectKey, event_queue, watch_kind};

/// Delay before sources that could not be evaluated or reported are tried again.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// The EventSources that apply to a cluster, by name.
pub type Sources = BTreeMap<String, Arc<EventSource>>;

/// A kind some EventSource selects.
enum Kind {
    /// Served: watched; `objects` is `None` until the first list arrived.
    Watched {
        objects: Option<BTreeMap<ObjectKey, Kept>>,
        task: JoinHandle<()>,
    },
    /// Not served by the cluster: selects nothing; resolved again when CRDs change.
    Unknown,
}

/// What tells one version of a source's spec from another: its uid and generation, which a
/// status write leaves alone (the uid tells a source deleted and made again, whose
/// generation starts over), else (an object without one) its resourceVersion. The
/// manager's conditions on a source change as clusters report ("evaluated in 734
/// clusters"); were they a new version, each would evaluate the source again in every
/// cluster from nothing.
fn spec_version(source: &EventSource) -> String {
    let uid = source.metadata.uid.as_deref().unwrap_or_default();
    match source.metadata.generation {
        Some(generation) => format!("{uid}/{generation}"),
        None => source.metadata.resource_version.clone().unwrap_or_default(),
    }
}

/// Tells a cluster task its new `sources`, if they differ from the current ones (another
/// version, or other owners).
pub(crate) fn update_sources(sender: &watch::Sender<Sources>, sources: Sources) {
    sender.send_if_modified(|current| {
        let changed = current.len() != sources.len()
            || current.iter().zip(&sources).any(|((a, x), (b, y))| {
                a != b
                    || spec_version(x) != spec_version(y)
                    || x.metadata.owner_references != y.metadata.owner_references
            });
        if changed {
            *current = sources;
        }
        changed
    });
}

/// The evaluation failure last recorded in a report's status.
#[derive(Clone, Default, PartialEq)]
enum Recorded {
    /// Not known to this process: the first outcome is recorded whatever it is.
    #[default]
    Unknown,
    /// No failure.
    Clear,
    /// This failure.
    Failed(String),
}

/// What the loop remembers of one EventSource.
#[derive(Default)]
struct SourceState {
    /// resourceVersion of the EventSource the cache was built for.
    version: String,
    verdicts: VerdictCache,
    /// The report last written (None: not written by this process yet).
    written: Option<report::Written>,
    /// The collected objects' documents in the last publication.
    documents: report::Documents,
    /// The failure last recorded in the report's status.
    recorded: Recorded,
}

/// Says why `source` could not be evaluated for `cluster` (`None`: it could), once per change:
/// a Warning Event on the EventSource and `status.agentFailureMessage` on the report.
async fn record_failure(
    destination: &Destination,
    recorder: &Recorder,
    cluster: &ClusterId,
    source: &EventSource,
    state: &mut SourceState,
    failure: Option<String>,
) {
    let wanted = failure.clone().map_or(Recorded::Clear, Recorded::Failed);
    if state.recorded == wanted {
        return;
    }
    if let Some(message) = &failure {
        let note = api::event_note::event_note(format!("cluster {cluster}: {message}"));
        let event = Event {
            type_: EventType::Warning,
            reason: "EvaluationFailed".into(),
            note: Some(note),
            action: "Evaluate".into(),
            secondary: None,
        };
        if let Err(error) = recorder.publish(&event, &source.object_ref(&())).await {
            tracing::warn!(%cluster, %error, "cannot publish Kubernetes Event");
        }
    }
    let name = source.metadata.name.as_deref().unwrap_or_default();
    match report::record_failure(destination, name, failure.as_deref()).await {
        Ok(()) => state.recorded = wanted,
        Err(error) => {
            tracing::warn!(%cluster, source = %name, %error, "cannot record the evaluation outcome in the EventReport's status");
        }
    }
}

fn gvks(source: &EventSource) -> Vec<GroupVersionKind> {
    let mut seen = Vec::new();
    for selector in &source.spec.resource_selectors {
        let gvk = GroupVersionKind::gvk(&selector.group, &selector.version, &selector.kind);
        if !seen.contains(&gvk) {
            seen.push(gvk);
        }
    }
    seen
}

fn crd_kind() -> GroupVersionKind {
    GroupVersionKind::gvk(
        &CustomResourceDefinition::group(&()),
        &CustomResourceDefinition::version(&()),
        &CustomResourceDefinition::kind(&()),
    )
}

/// The agent's work for one cluster.
pub struct ClusterAgent {
    id: ClusterId,
    managed: Client,
    destination: Destination,
    recorder: Recorder,
    kinds: HashMap<GroupVersionKind, Kind>,
    states: BTreeMap<String, SourceState>,
    events: mpsc::Sender<KindEvent<Kept>>,
    crds: Option<JoinHandle<()>>,
}

impl Drop for ClusterAgent {
    fn drop(&mut self) {
        for kind in self.kinds.values() {
            if let Kind::Watched { task, .. } = kind {
                task.abort();
            }
        }
        if let Some(task) = &self.crds {
            task.abort();
        }
    }
}

impl ClusterAgent {
    /// Serves `id` (reached through `managed`), writing its reports to `destination`, until
    /// `sources` is closed.
    pub async fn run(
        id: ClusterId,
        managed: Client,
        destination: Destination,
        mut sources: watch::Receiver<Sources>,
    ) {
        let (events, mut incoming) = event_queue();
        let recorder = Recorder::new(
            destination.client().clone(),
            Reporter {
                controller: report::FIELD_MANAGER.into(),
                instance: None,
            },
        );
        let mut agent = ClusterAgent {
            id,
            managed,
            destination,
            recorder,
            kinds: HashMap::new(),
            states: BTreeMap::new(),
            events,
            crds: None,
        };
        let mut current = sources.borrow_and_update().clone();
        let mut dirty: BTreeSet<String> = current.keys().cloned().collect();
        agent.sync_kinds(&current).await;
        loop {
            agent.evaluate(&current, &mut dirty).await;
            tokio::select! {
                changed = sources.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let next = sources.borrow_and_update().clone();
                    dirty.extend(agent.sources_changed(&current, &next).await);
                    current = next;
                    agent.sync_kinds(&current).await;
                }
                () = tokio::time::sleep(RETRY), if !dirty.is_empty() => {}
                Some(event) = incoming.recv() => {
                    let mut changed = HashSet::new();
                    changed.insert(agent.apply(event));
                    while let Ok(event) = incoming.try_recv() {
                        changed.insert(agent.apply(event));
                    }
                    if changed.remove(&crd_kind()) {
                        agent.retry_unknown(&current, &mut dirty).await;
                    }
                    for (name, source) in &current {
                        if gvks(source).iter().any(|g| changed.contains(g)) {
                            dirty.insert(name.clone());
                        }
                    }
                }
            }
        }
    }

    /// Records a watch event; returns the kind it concerns.
    fn apply(&mut self, event: KindEvent<Kept>) -> GroupVersionKind {
        let gvk = match &event {
            KindEvent::Listed(gvk, _)
            | KindEvent::Applied(gvk, ..)
            | KindEvent::Deleted(gvk, _) => gvk.clone(),
        };
        let Some(Kind::Watched { objects, .. }) = self.kinds.get_mut(&gvk) else {
            return gvk;
        };
        match (event, objects) {
            (KindEvent::Listed(_, all), objects) => *objects = Some(all),
            (KindEvent::Applied(_, key, value), Some(objects)) => {
                objects.insert(key, value);
            }
            (KindEvent::Deleted(_, key), Some(objects)) => {
                objects.remove(&key);
            }
            // Changes before the first list are part of it.
            (_, None) => {}
        }
        gvk
    }

    /// Forgets removed sources (deleting their reports) and returns the names to evaluate.
    async fn sources_changed(&mut self, old: &Sources, new: &Sources) -> Vec<String> {
        for name in old.keys().filter(|n| !new.contains_key(*n)) {
            self.states.remove(name);
            if let Err(error) = report::delete(&self.destination, name).await {
                tracing::warn!(cluster = %self.id, source = %name, %error, "cannot delete EventReport");
            }
        }
        new.iter()
            .filter(|(name, source)| {
                old.get(*name)
                    .is_none_or(|o| spec_version(o) != spec_version(source))
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Watches every kind the sources select, and stops watching kinds none selects.
    async fn sync_kinds(&mut self, sources: &Sources) {
        let wanted: HashSet<GroupVersionKind> = sources.values().flat_map(|s| gvks(s)).collect();
        self.kinds.retain(|gvk, kind| {
            let keep = wanted.contains(gvk);
            if let (false, Kind::Watched { task, .. }) = (keep, &kind) {
                task.abort();
            }
            keep
        });
        for gvk in wanted {
            if !self.kinds.contains_key(&gvk) {
                let kind = self.resolve(&gvk).await;
                self.kinds.insert(gvk, kind);
            }
        }
        let any_unknown = self.kinds.values().any(|k| matches!(k, Kind::Unknown));
        if any_unknown && self.crds.is_none() {
            let crds = crd_kind();
            let resource = ApiResource::erase::<CustomResourceDefinition>(&());
            self.crds = Some(watch_kind(
                self.managed.clone(),
                crds,
                resource,
                self.events.clone(),
            ));
        }
    }

    async fn resolve(&self, gvk: &GroupVersionKind) -> Kind {
        match kube::discovery::pinned_kind(&self.managed, gvk).await {
            Ok((resource, _)) => Kind::Watched {
                objects: None,
                task: watch_kind(
                    self.managed.clone(),
                    gvk.clone(),
                    resource,
                    self.events.clone(),
                ),
            },
            Err(error) => {
                tracing::debug!(cluster = %self.id, kind = %gvk.kind, %error, "kind not served; it selects nothing");
                Kind::Unknown
            }
        }
    }

    /// CRDs changed: kinds that were not served may be now.
    async fn retry_unknown(&mut self, sources: &Sources, dirty: &mut BTreeSet<String>) {
        let unknown: Vec<GroupVersionKind> = self
            .kinds
            .iter()
            .filter(|(_, k)| matches!(k, Kind::Unknown))
            .map(|(g, _)| g.clone())
            .collect();
        for gvk in unknown {
            let kind = self.resolve(&gvk).await;
            if matches!(kind, Kind::Watched { .. }) {
                self.kinds.insert(gvk.clone(), kind);
                for (name, source) in sources {
                    if gvks(source).contains(&gvk) {
                        dirty.insert(name.clone());
                    }
                }
            }
        }
    }

    /// The objects `source` selects from, or `None` while one of its kinds is still listing.
    fn objects(&self, source: &EventSource) -> Option<Vec<Kept>> {
        let mut all = Vec::new();
        for gvk in gvks(source) {
            match self.kinds.get(&gvk) {
                Some(Kind::Watched {
                    objects: Some(objects),
                    ..
                }) => all.extend(objects.values().cloned()),
                Some(Kind::Unknown) => {}
                _ => return None,
            }
        }
        Some(all)
    }

    /// Evaluates the dirty sources whose kinds are listed; the others stay dirty.
    async fn evaluate(&mut self, sources: &Sources, dirty: &mut BTreeSet<String>) {
        let names: Vec<String> = dirty.iter().cloned().collect();
        'sources: for name in names {
            let Some(source) = sources.get(&name).cloned() else {
                dirty.remove(&name);
                continue;
            };
            let Some(objects) = self.objects(&source) else {
                continue;
            };
            dirty.remove(&name);
            let state = self.states.entry(name.clone()).or_default();
            let version = spec_version(&source);
            if state.version != version {
                state.version = version;
                state.verdicts = VerdictCache::default();
                state.documents = report::Documents::default();
            }
            let mut verdicts = std::mem::take(&mut state.verdicts);
            let started = std::time::Instant::now();
            let span = tracing::info_span!("evaluate", cluster = %self.id, source = %name, objects = objects.len());
            let evaluated = {
                let source = Arc::clone(&source);
                tokio::task::spawn_blocking(move || {
                    let _span = span.enter();
                    let result = crate::with_thread_runtime(|runtime| {
                        evaluate_event_source_cached(runtime, &source, &objects, &mut verdicts)
                    });
                    (result, verdicts)
                })
                .await
            };
            let Ok((result, verdicts)) = evaluated else {
                tracing::error!(cluster = %self.id, source = %name, "evaluation task failed");
                continue;
            };
            let state = self.states.entry(name.clone()).or_default();
            state.verdicts = verdicts;
            let metrics = crate::observe::metrics();
            let failure = match result {
                Err(error) => {
                    metrics.evaluated(None, started.elapsed());
                    tracing::warn!(cluster = %self.id, source = %name, %error, "EventSource evaluation failed");
                    Some(error.to_string())
                }
                Ok(evaluation) => 'written: {
                    metrics.evaluated(Some(evaluation.matching.len()), started.elapsed());
                    let cluster = self.destination.cluster();
                    let mut publication = match report::publication_reusing(
                        cluster,
                        &source,
                        &evaluation.matching,
                        &mut state.documents,
                    ) {
                        Ok(publication) => publication,
                        Err(error) => break 'written Some(error),
                    };
                    let written = publication.written();
                    if state.written.as_ref() != Some(&written) {
                        let previous = state.written.as_ref();
                        let recorded = match report::write(
                            &self.destination,
                            &publication,
                            previous,
                        )
                        .await
                        {
                            Ok(recorded) => recorded,
                            Err(error @ report::WriteError::TooLarge { .. }) => {
                                metrics.report_written(false);
                                tracing::warn!(cluster = %self.id, source = %name, %error, "EventReport too large to write");
                                // Said on the EventSource and the report; written again when
                                // what matches changes.
                                break 'written Some(error.to_string());
                            }
                            Err(error) => {
                                metrics.report_written(false);
                                tracing::warn!(cluster = %self.id, source = %name, %error, "cannot write EventReport; will retry");
                                dirty.insert(name.clone());
                                continue 'sources;
                            }
                        };
                        metrics.report_written(true);
                        // The write tells what the status says: no extra write to learn it.
                        if state.recorded == Recorded::Unknown {
                            state.recorded = recorded.map_or(Recorded::Clear, Recorded::Failed);
                        }
                        tracing::debug!(cluster = %self.id, source = %name, matching = publication.spec.matching_resources.len(), "EventReport written");
                        state.written = Some(written);
                    }
                    None
                }
            };
            let (destination, recorder) = (&self.destination, &self.recorder);
            record_failure(destination, recorder, &self.id, &source, state, failure).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(uid: &str, generation: Option<i64>, version: &str, namespace: &str) -> Sources {
        let source: EventSource = serde_json::from_value(serde_json::json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1",
            "kind": "EventSource",
            "metadata": {"name": "s", "uid": uid, "generation": generation, "resourceVersion": version},
            "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Service", "namespace": namespace}]},
        }))
        .unwrap();
        Sources::from([("s".to_owned(), Arc::new(source))])
    }

    #[test]
    fn a_status_write_is_not_a_new_source_but_a_spec_change_is() {
        let (sender, mut receiver) = watch::channel(source("u1", Some(1), "10", "a"));
        receiver.borrow_and_update();

        // The manager's conditions changed: a new resourceVersion, the same generation.
        update_sources(&sender, source("u1", Some(1), "11", "a"));
        assert!(!receiver.has_changed().unwrap());

        update_sources(&sender, source("u1", Some(2), "12", "b"));
        assert!(receiver.has_changed().unwrap());
        assert_eq!(spec_version(&receiver.borrow_and_update()["s"]), "u1/2");

        // Deleted and made again with another spec: its generation starts over.
        update_sources(&sender, source("u2", Some(2), "13", "c"));
        assert!(receiver.has_changed().unwrap());
        assert_eq!(spec_version(&receiver.borrow_and_update()["s"]), "u2/2");

        // Without a generation (not from an API server), the resourceVersion tells.
        update_sources(&sender, source("u2", None, "14", "c"));
        update_sources(&sender, source("u2", None, "15", "c"));
        assert!(receiver.has_changed().unwrap());
        assert_eq!(spec_version(&receiver.borrow()["s"]), "15");
    }
}
