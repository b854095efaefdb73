//! The objects of one kind in one managed cluster, kept current by a watch.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, TypeMeta};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// An object's place in its kind: `(namespace, name)`; list order is this order.
pub type ObjectKey = (String, String);

/// How a cluster's loop keeps a watched object: as a shared `Value` (the default), or in a
/// form of its own (the agent keeps text, parsed on demand).
pub trait Keep: Send + 'static {
    /// Keeps `object` (with apiVersion and kind).
    fn keep(object: Value) -> Self;
}

impl Keep for Arc<Value> {
    fn keep(object: Value) -> Self {
        Arc::new(object)
    }
}

/// What a watch of one kind reports to its cluster's loop, objects kept as `T`.
#[derive(Debug)]
pub enum KindEvent<T = Arc<Value>> {
    /// The full current set (after the initial list, or a relist after 410).
    Listed(GroupVersionKind, BTreeMap<ObjectKey, T>),
    /// One object was created or changed.
    Applied(GroupVersionKind, ObjectKey, T),
    /// One object was deleted.
    Deleted(GroupVersionKind, ObjectKey),
}

/// Events the watches of one cluster may queue for its loop; past this a watch waits for
/// the loop (and the API server's stream for the watch), so a slow loop holds memory flat
/// rather than queueing every change it has not yet taken.
pub const EVENT_QUEUE: usize = 1024;

/// The queue between a cluster's watches ([`watch_kind`]) and its loop.
pub fn event_queue<T>() -> (mpsc::Sender<KindEvent<T>>, mpsc::Receiver<KindEvent<T>>) {
    mpsc::channel(EVENT_QUEUE)
}

/// Where `object` is in its kind.
fn key(object: &DynamicObject) -> ObjectKey {
    (
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

/// Keeps a watched object as the JSON an EventSource script sees (with apiVersion and kind,
/// which list responses may omit).
fn kept<T: Keep>(resource: &ApiResource, mut object: DynamicObject) -> Option<(ObjectKey, T)> {
    object.types = Some(TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    });
    let key = key(&object);
    let value = serde_json::to_value(object).ok()?;
    Some((key, T::keep(value)))
}

/// Starts watching `resource` in `client`'s cluster; events go to `events` (waiting while it
/// is full) until the returned task is aborted or the receiver is dropped. Watch failures are
/// retried with a backoff; a relist after a 410 delivers the whole set again, so no change is
/// lost.
pub fn watch_kind<T: Keep>(
    client: Client,
    gvk: GroupVersionKind,
    resource: ApiResource,
    events: mpsc::Sender<KindEvent<T>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<DynamicObject> = Api::all_with(client, &resource);
        let mut stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut listing: Option<BTreeMap<ObjectKey, T>> = None;
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    tracing::warn!(kind = %resource.kind, %error, "watch failed; retrying");
                    continue;
                }
            };
            let message = match event {
                watcher::Event::Init => {
                    listing = Some(BTreeMap::new());
                    None
                }
                watcher::Event::InitApply(object) => {
                    if let (Some(listing), Some((key, value))) =
                        (listing.as_mut(), kept(&resource, object))
                    {
                        listing.insert(key, value);
                    }
                    None
                }
                watcher::Event::InitDone => Some(KindEvent::Listed(
                    gvk.clone(),
                    listing.take().unwrap_or_default(),
                )),
                watcher::Event::Apply(object) => kept(&resource, object)
                    .map(|(key, value)| KindEvent::Applied(gvk.clone(), key, value)),
                watcher::Event::Delete(object) => {
                    Some(KindEvent::Deleted(gvk.clone(), key(&object)))
                }
            };
            if let Some(message) = message
                && events.send(message).await.is_err()
            {
                return;
            }
        }
    })
}
