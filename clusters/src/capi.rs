//! The management cluster's Cluster API clusters, kept current by a watch. Cluster API may be
//! installed after us, upgraded to another version or removed: the watch follows its CRD and
//! reads clusters in the version the CRD stores, so no restart is ever needed.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use api::capi;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde_json::Value;
use tokio::sync::watch;

use crate::objects::{KindEvent, ObjectKey, event_queue, watch_kind};

/// The Cluster API clusters of the management cluster: one watch shared by every clone
/// (hub, manager and deployer of one process), kept running while a clone lives.
#[derive(Clone)]
pub struct CapiClusters {
    objects: Arc<RwLock<BTreeMap<ObjectKey, Arc<Value>>>>,
    ready: watch::Receiver<bool>,
    /// Bumped on every change.
    changes: watch::Receiver<u64>,
    onboard_annotation: Option<String>,
}

impl CapiClusters {
    /// An empty set that is ready at once and never changes (Cluster API not watched).
    pub fn none() -> Self {
        let (_, ready) = watch::channel(true);
        let (_, changes) = watch::channel(0);
        CapiClusters {
            objects: Arc::default(),
            ready,
            changes,
            onboard_annotation: None,
        }
    }

    /// Yields once after each change (several quick changes may yield once) from now on.
    pub fn changes(&self) -> BoxStream<'static, ()> {
        let mut changes = self.changes.clone();
        changes.mark_unchanged();
        stream::unfold(changes, |mut changes| async move {
            changes.changed().await.ok().map(|()| ((), changes))
        })
        .boxed()
    }

    /// A count of the changes seen so far (the same while nothing changed).
    pub fn version(&self) -> u64 {
        *self.changes.borrow()
    }

    /// Every cluster (those carrying the onboarding annotation, when one is required).
    pub fn state(&self) -> Vec<Arc<Value>> {
        let Ok(objects) = self.objects.read() else {
            return Vec::new();
        };
        objects
            .values()
            .filter(|o| self.onboarded(o))
            .cloned()
            .collect()
    }

    /// Cluster `namespace/name`, when it exists (and is onboarded).
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let objects = self.objects.read().ok()?;
        objects
            .get(&(namespace.to_owned(), name.to_owned()))
            .filter(|o| self.onboarded(o))
            .cloned()
    }

    fn onboarded(&self, object: &Value) -> bool {
        self.onboard_annotation
            .as_deref()
            .is_none_or(|key| capi::CapiCluster(object).has_annotation(key))
    }

    /// Waits until the set reflects the cluster (Cluster API found absent, or its clusters
    /// listed); false when the watch ended first.
    pub async fn wait_until_ready(&self) -> bool {
        let mut ready = self.ready.clone();
        ready.wait_for(|r| *r).await.is_ok()
    }
}

/// Starts watching the Cluster API clusters of `client`'s cluster (needs a Tokio runtime);
/// with `onboard_annotation`, only clusters carrying that annotation are seen. The watch
/// stops once every clone of the result is dropped.
pub fn watch(client: Client, onboard_annotation: Option<String>) -> CapiClusters {
    let (ready_sender, ready) = watch::channel(false);
    let (changes_sender, changes) = watch::channel(0);
    let clusters = CapiClusters {
        objects: Arc::default(),
        ready,
        changes,
        onboard_annotation,
    };
    tokio::spawn(follow(
        client,
        Arc::clone(&clusters.objects),
        ready_sender,
        changes_sender,
    ));
    clusters
}

/// What the CRD watch says about Cluster API.
enum Crd {
    /// The version clusters are read in (`None`: not installed or nothing served).
    Version(Option<String>),
    /// Nothing to act on.
    Nothing,
}

fn crd_event(event: watcher::Event<CustomResourceDefinition>, listing: &mut Option<String>) -> Crd {
    match event {
        watcher::Event::Init => {
            *listing = None;
            Crd::Nothing
        }
        watcher::Event::InitApply(crd) => {
            *listing = capi::served_version(&crd);
            Crd::Nothing
        }
        watcher::Event::InitDone => Crd::Version(listing.take()),
        watcher::Event::Apply(crd) => Crd::Version(capi::served_version(&crd)),
        watcher::Event::Delete(_) => Crd::Version(None),
    }
}

/// Whether the API server refused the request (403).
fn forbidden(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 403,
        _ => false,
    }
}

/// Follows the CRD and the clusters until nobody holds the set (`changes` is closed).
async fn follow(
    client: Client,
    objects: Arc<RwLock<BTreeMap<ObjectKey, Arc<Value>>>>,
    ready: watch::Sender<bool>,
    changes: watch::Sender<u64>,
) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={}", capi::CRD_NAME));
    let mut crd_events = watcher(crds, config).default_backoff().boxed();
    let mut listing = None;
    let mut version: Option<String> = None;
    let (events, mut incoming) = event_queue();
    let mut task: Option<tokio::task::JoinHandle<()>> = None;
    let replace = |all: BTreeMap<ObjectKey, Arc<Value>>| {
        if let Ok(mut objects) = objects.write() {
            *objects = all;
        }
    };
    let mark_ready = || {
        ready.send_if_modified(|r| !std::mem::replace(r, true));
    };
    loop {
        tokio::select! {
            () = changes.closed() => break,
            event = crd_events.next() => {
                let event = match event {
                    Some(Ok(event)) => event,
                    Some(Err(error)) => {
                        if forbidden(&error) && version.is_none() {
                            // Without the right to read CRDs, Cluster API counts as absent
                            // rather than holding every other cluster back.
                            tracing::error!(%error, "cannot read Cluster API's CRD; Cluster API clusters are ignored until it can be read");
                            mark_ready();
                        } else {
                            tracing::warn!(%error, "watch of Cluster API's CRD failed; retrying");
                        }
                        continue;
                    }
                    None => break,
                };
                let Crd::Version(wanted) = crd_event(event, &mut listing) else {
                    continue;
                };
                if wanted == version && (task.is_some() || wanted.is_none()) {
                    // Unchanged: absent stays absent (ready); a watched version becomes
                    // ready with its list.
                    if wanted.is_none() {
                        mark_ready();
                    }
                    continue;
                }
                if let Some(task) = task.take() {
                    task.abort();
                }
                // Events of the previous watch still queued are of the old version; its
                // objects stay until the new version's list replaces them.
                while incoming.try_recv().is_ok() {}
                version = wanted;
                match &version {
                    Some(version) => {
                        tracing::info!(%version, "watching Cluster API clusters");
                        let gvk = GroupVersionKind::gvk(capi::GROUP, version, capi::KIND);
                        let resource = ApiResource::from_gvk_with_plural(&gvk, capi::PLURAL);
                        task = Some(watch_kind(client.clone(), gvk, resource, events.clone()));
                    }
                    None => {
                        replace(BTreeMap::new());
                        mark_ready();
                    }
                }
                changes.send_modify(|n| *n += 1);
            }
            Some(event) = incoming.recv() => {
                // An aborted watch of the previous version may still have sent something.
                let (KindEvent::Listed(gvk, _)
                | KindEvent::Applied(gvk, ..)
                | KindEvent::Deleted(gvk, _)) = &event;
                if version.as_deref() != Some(gvk.version.as_str()) {
                    continue;
                }
                match event {
                    KindEvent::Listed(_, all) => {
                        replace(all);
                        mark_ready();
                    }
                    KindEvent::Applied(_, key, value) => {
                        if let Ok(mut objects) = objects.write() {
                            objects.insert(key, value);
                        }
                    }
                    KindEvent::Deleted(_, key) => {
                        if let Ok(mut objects) = objects.write() {
                            objects.remove(&key);
                        }
                    }
                }
                changes.send_modify(|n| *n += 1);
            }
        }
    }
    if let Some(task) = task {
        task.abort();
    }
}
