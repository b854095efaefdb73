//! Reflectors as the hub, the manager and the deployer use them: a store per kind and the
//! changes it saw, in the order the store shows them.

use std::sync::Arc;

use futures_util::TryStreamExt;
use futures_util::stream::{self, Stream, StreamExt};
use kube::api::Api;
use kube::runtime::reflector::{self, Lookup, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

/// What a reflector's store can keep of a watched object: the object itself, or a record
/// of it (see [`events_as`]).
pub trait Kept: Lookup<DynamicType = ()> + Clone + Send + Sync + 'static {}

impl<K> Kept for K where K: Lookup<DynamicType = ()> + Clone + Send + Sync + 'static {}

/// What a controller can watch: a cluster-scoped or namespaced kind of a fixed type.
pub trait Watched:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static
{
}

impl<K> Watched for K where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// A reflector over all objects of `K`, and the stream of objects it saw change.
pub fn reflect<K>(
    client: &Client,
    config: watcher::Config,
) -> (Store<K>, impl Stream<Item = K> + Send + use<K>)
where
    K: Watched,
{
    let (store, events) = events::<K>(Api::all(client.clone()), config);
    let objects = settle(store.clone(), events);
    (store, objects)
}

/// The objects whose change `store` shows, from the events of its reflector (see
/// [`Settled`]).
pub fn settle<K>(
    store: Store<K>,
    events: impl Stream<Item = watcher::Event<K>> + Send,
) -> impl Stream<Item = K> + Send
where
    K: Watched,
{
    let mut settled = Settled::default();
    events.flat_map(move |event| stream::iter(settled.take(event, &store)))
}

/// The objects whose change the store shows, from a reflector's events: an applied or
/// deleted object at once; a list's objects at its end, when kube-runtime puts them in the
/// store (work they caused earlier would read the store as it was), together with the
/// objects the list no longer has (deleted while the watch was down, which no event tells).
pub struct Settled<K> {
    listed: Vec<K>,
    before: Vec<Arc<K>>,
}

impl<K> Default for Settled<K> {
    fn default() -> Self {
        Settled {
            listed: Vec::new(),
            before: Vec::new(),
        }
    }
}

impl<K> Settled<K>
where
    K: Lookup<DynamicType = ()> + Clone + 'static,
{
    /// The objects `event` settled in `store` (which has applied it).
    pub fn take(&mut self, event: watcher::Event<K>, store: &Store<K>) -> Vec<K> {
        match event {
            watcher::Event::Apply(object) | watcher::Event::Delete(object) => vec![object],
            watcher::Event::Init => {
                self.listed.clear();
                self.before = store.state();
                Vec::new()
            }
            watcher::Event::InitApply(object) => {
                self.listed.push(object);
                Vec::new()
            }
            watcher::Event::InitDone => {
                let gone = std::mem::take(&mut self.before)
                    .into_iter()
                    .filter(|old| store.get(&ObjectRef::from_obj(old.as_ref())).is_none())
                    .map(|old| old.as_ref().clone());
                let mut settled = std::mem::take(&mut self.listed);
                settled.extend(gone);
                settled
            }
        }
    }
}

/// A reflector over `api` (all namespaces or one) and the watcher's events, each passed on
/// once the store applied it; watch failures are logged and retried with a backoff. A list's
/// objects reach the store only at its `InitDone` (kube-runtime buffers them until then),
/// which is when an index kept from these events is made anew. Objects are kept without
/// their managedFields, which no controller reads and which can outweigh the rest of an
/// object.
pub fn events<K>(
    api: Api<K>,
    config: watcher::Config,
) -> (
    Store<K>,
    impl Stream<Item = watcher::Event<K>> + Send + use<K>,
)
where
    K: Watched,
{
    events_as(api, config, |mut object: K| {
        object.meta_mut().managed_fields = None;
        object
    })
}

/// [`events`] keeping in the store what `keep` makes of each object (the fields its readers
/// need, rather than the whole object).
pub fn events_as<K, R, F>(
    api: Api<K>,
    config: watcher::Config,
    mut keep: F,
) -> (
    Store<R>,
    impl Stream<Item = watcher::Event<R>> + Send + use<K, R, F>,
)
where
    K: Watched,
    F: FnMut(K) -> R + Send + 'static,
    R: Kept,
{
    let (store, writer) = reflector::store();
    let watched = watcher(api, config)
        .default_backoff()
        .map_ok(move |event| match event {
            watcher::Event::Apply(object) => watcher::Event::Apply(keep(object)),
            watcher::Event::Delete(object) => watcher::Event::Delete(keep(object)),
            watcher::Event::InitApply(object) => watcher::Event::InitApply(keep(object)),
            watcher::Event::Init => watcher::Event::Init,
            watcher::Event::InitDone => watcher::Event::InitDone,
        });
    let stream = reflector::reflector(writer, watched).filter_map(|result| async move {
        match result {
            Ok(event) => Some(event),
            Err(error) => {
                tracing::warn!(%error, kind = %K::kind(&()), "watch failed; retrying");
                None
            }
        }
    });
    (store, stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::watcher::Event;

    fn config_map(name: &str, value: &str) -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"}, "data": {"v": value}
        }))
        .unwrap()
    }

    #[test]
    fn a_list_settles_at_its_end_with_what_it_no_longer_has() {
        let (store, mut writer) = reflector::store::<ConfigMap>();
        let mut settled = Settled::default();
        let mut send = |event: Event<ConfigMap>| {
            writer.apply_watcher_event(&event);
            let names: Vec<(String, String)> = settled
                .take(event, &store)
                .into_iter()
                .map(|c| (c.metadata.name.unwrap(), c.data.unwrap()["v"].clone()))
                .collect();
            names
        };
        let pair = |name: &str, value: &str| (name.to_owned(), value.to_owned());
        assert!(send(Event::Init).is_empty());
        assert!(send(Event::InitApply(config_map("a", "1"))).is_empty());
        assert!(send(Event::InitApply(config_map("b", "1"))).is_empty());
        assert_eq!(send(Event::InitDone), [pair("a", "1"), pair("b", "1")]);
        assert_eq!(send(Event::Apply(config_map("a", "2"))), [pair("a", "2")]);
        assert_eq!(send(Event::Delete(config_map("a", "2"))), [pair("a", "2")]);
        assert_eq!(send(Event::Apply(config_map("c", "1"))), [pair("c", "1")]);

        // A relist: b changed and c was deleted while the watch was down.
        assert!(send(Event::Init).is_empty());
        assert!(send(Event::InitApply(config_map("b", "2"))).is_empty());
        assert_eq!(send(Event::InitDone), [pair("b", "2"), pair("c", "1")]);
        assert!(store.get(&ObjectRef::new("c").within("default")).is_none());
    }
}
