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

/// What a watch of one kind reports to its cluster's loop.
#[derive(Debug)]
pub enum KindEvent {
    /// The full current set (after the initial list, or a relist after 410).
    Listed(GroupVersionKind, BTreeMap<ObjectKey, Arc<Value>>),
    /// One object was created or changed.
    Applied(GroupVersionKind, ObjectKey, Arc<Value>),
    /// One object was deleted.
    Deleted(GroupVersionKind, ObjectKey),
}

/// Events the watches of one cluster may queue for its loop; past this a watch waits for
/// the loop (and the API server's stream for the watch), so a slow loop holds memory flat
/// rather than queueing every change it has not yet taken.
pub const EVENT_QUEUE: usize = 1024;

/// The queue between a cluster's watches ([`watch_kind`]) and its loop.
pub fn event_queue() -> (mpsc::Sender<KindEvent>, mpsc::Receiver<KindEvent>) {
    mpsc::channel(EVENT_QUEUE)
}

/// Turns a watched object into the JSON an EventSource script sees (with apiVersion and kind,
/// which list responses may omit).
fn to_value(resource: &ApiResource, mut object: DynamicObject) -> Option<(ObjectKey, Arc<Value>)> {
    object.types = Some(TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    });
    let key = (
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default(),
    );
    let value = serde_json::to_value(object).ok()?;
    Some((key, Arc::new(value)))
}

/// Starts watching `resource` in `client`'s cluster; events go to `events` (waiting while it
/// is full) until the returned task is aborted or the receiver is dropped. Watch failures are
/// retried with a backoff; a relist after a 410 delivers the whole set again, so no change is
/// lost.
pub fn watch_kind(
    client: Client,
    gvk: GroupVersionKind,
    resource: ApiResource,
    events: mpsc::Sender<KindEvent>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<DynamicObject> = Api::all_with(client, &resource);
        let mut stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut listing: Option<BTreeMap<ObjectKey, Arc<Value>>> = None;
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
                        (listing.as_mut(), to_value(&resource, object))
                    {
                        listing.insert(key, value);
                    }
                    None
                }
                watcher::Event::InitDone => Some(KindEvent::Listed(
                    gvk.clone(),
                    listing.take().unwrap_or_default(),
                )),
                watcher::Event::Apply(object) => to_value(&resource, object)
                    .map(|(key, value)| KindEvent::Applied(gvk.clone(), key, value)),
                watcher::Event::Delete(object) => {
                    to_value(&resource, object).map(|(key, _)| KindEvent::Deleted(gvk.clone(), key))
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
