//! One reflector per kind for a whole process: the manager and the deployer read the same
//! store and receive the same changes, so an object is watched and held once however many
//! components use it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::stream::{self, Stream, StreamExt};
use kube::Client;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::watch::{Kept, Settled, Watched, events, events_as};

/// Most changed objects a subscriber may have waiting; one further behind is sent the whole
/// store again instead (as a watcher further behind than the server keeps relists).
pub const INBOX: usize = 4_096;

/// A reflector shared by the components of one process. Clones share it; the watch stops
/// when the last clone is dropped.
pub struct Shared<K: Kept> {
    store: Store<K>,
    subscribers: Arc<Mutex<Vec<Arc<Inbox<K>>>>>,
    version: Arc<AtomicU64>,
    _watch: Arc<StopOnDrop>,
}

impl<K: Kept> Clone for Shared<K> {
    fn clone(&self) -> Self {
        Shared {
            store: self.store.clone(),
            subscribers: Arc::clone(&self.subscribers),
            version: Arc::clone(&self.version),
            _watch: Arc::clone(&self._watch),
        }
    }
}

/// Aborts the watch task when dropped.
struct StopOnDrop(AbortHandle);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<K: Watched> Shared<K> {
    /// Starts watching every object of `K` (within a Tokio runtime).
    pub fn start(client: &Client, config: watcher::Config) -> Self {
        Self::with_stream(events::<K>(kube::Api::all(client.clone()), config))
    }
}

impl<K: Kept> Shared<K> {
    /// Starts watching every object of `W` (within a Tokio runtime), keeping what `keep`
    /// makes of each (see [`events_as`]).
    pub fn start_as<W: Watched>(
        client: &Client,
        config: watcher::Config,
        keep: impl FnMut(W) -> K + Send + 'static,
    ) -> Self {
        Self::with_stream(events_as(kube::Api::all(client.clone()), config, keep))
    }

    fn with_stream(
        (store, events): (
            Store<K>,
            impl Stream<Item = watcher::Event<K>> + Send + 'static,
        ),
    ) -> Self {
        let subscribers: Arc<Mutex<Vec<Arc<Inbox<K>>>>> = Arc::default();
        let version = Arc::new(AtomicU64::new(0));
        let (reader, senders, bump) = (
            store.clone(),
            Arc::clone(&subscribers),
            Arc::clone(&version),
        );
        let task = tokio::spawn(async move {
            // Settled here, in the poll that applied the event to the store, so that a list's
            // start sees the store as it was before the list.
            let mut settled = Settled::default();
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                let changed = settled.take(event, &reader);
                if !changed.is_empty() {
                    bump.fetch_add(1, Ordering::Release);
                    let changed: Vec<Arc<K>> = changed.into_iter().map(Arc::new).collect();
                    dispatch(&senders, &changed, &reader);
                }
            }
        });
        Shared {
            store,
            subscribers,
            version,
            _watch: Arc::new(StopOnDrop(task.abort_handle())),
        }
    }

    /// The store every subscriber reads.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// A count of the changes the store showed so far (bumped once the store shows them):
    /// while it stays the same, what was made from the store still holds.
    pub fn version(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.version)
    }

    /// The objects whose change the store shows (see [`Settled`]), from now on: first the
    /// store's objects (what an earlier subscriber may already have seen), then each change.
    /// Every subscriber shares one copy of each object (the store's, or the changed one).
    pub fn objects(&self) -> impl Stream<Item = Arc<K>> + Send + use<K> {
        let inbox = Arc::new(Inbox::default());
        inbox.replay();
        lock(&self.subscribers).push(Arc::clone(&inbox));
        // The stream keeps the watch alive as a clone does.
        let state = (inbox, self.store.clone(), Arc::clone(&self._watch));
        stream::unfold(state, |(inbox, store, watch)| async move {
            let next = inbox.next(&store).await;
            Some((next, (inbox, store, watch)))
        })
        .flat_map(stream::iter)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Passes `changed` to every subscriber still listening; `store` has applied the changes.
fn dispatch<K: Kept>(
    subscribers: &Mutex<Vec<Arc<Inbox<K>>>>,
    changed: &[Arc<K>],
    store: &Store<K>,
) {
    let gone = |object: &Arc<K>| store.get(&ObjectRef::from_obj(object.as_ref())).is_none();
    // A subscriber that went away holds the only other reference to its inbox.
    lock(subscribers).retain(|inbox| {
        inbox.push(changed, gone);
        Arc::strong_count(inbox) > 1
    });
}

/// The changes one subscriber has not taken yet.
struct Inbox<K> {
    waiting: Mutex<Waiting<K>>,
    ready: Notify,
}

struct Waiting<K> {
    /// The changed objects; while `replay` is owed, only those the store no longer holds.
    objects: VecDeque<Arc<K>>,
    /// Fell more than [`INBOX`] behind (or just came): owed the whole store.
    replay: bool,
}

impl<K> Default for Inbox<K> {
    fn default() -> Self {
        Inbox {
            waiting: Mutex::new(Waiting {
                objects: VecDeque::new(),
                replay: false,
            }),
            ready: Notify::new(),
        }
    }
}

impl<K: Kept> Inbox<K> {
    /// Takes `changed`. A subscriber further behind than [`INBOX`] is owed the store instead,
    /// and still every object `gone` says the store no longer holds: the store cannot tell
    /// a deletion, which would otherwise be lost.
    fn push(&self, changed: &[Arc<K>], gone: impl Fn(&Arc<K>) -> bool) {
        let mut waiting = lock(&self.waiting);
        if !waiting.replay && waiting.objects.len() + changed.len() > INBOX {
            tracing::info!(
                kind = %K::kind(&()),
                "a subscriber fell {INBOX} changes behind its shared watch; it is given the store"
            );
            waiting.objects.retain(&gone);
            waiting.replay = true;
        }
        if waiting.replay {
            waiting
                .objects
                .extend(changed.iter().filter(|o| gone(o)).cloned());
        } else {
            waiting.objects.extend(changed.iter().cloned());
        }
        drop(waiting);
        self.ready.notify_one();
    }

    fn replay(&self) {
        let mut waiting = lock(&self.waiting);
        waiting.objects.clear();
        waiting.replay = true;
        drop(waiting);
        self.ready.notify_one();
    }

    /// The next changes: when owed the store, the objects gone from it then the store's
    /// objects; else what is waiting, else the next push.
    async fn next(&self, store: &Store<K>) -> Vec<Arc<K>> {
        loop {
            {
                let mut waiting = lock(&self.waiting);
                if std::mem::take(&mut waiting.replay) {
                    let mut objects: Vec<Arc<K>> = waiting.objects.drain(..).collect();
                    objects.extend(store.state());
                    return objects;
                }
                if !waiting.objects.is_empty() {
                    return waiting.objects.drain(..).collect();
                }
            }
            self.ready.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::reflector;

    fn config_map(name: &str) -> Arc<ConfigMap> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "default"}
            }))
            .unwrap(),
        )
    }

    fn names(objects: Vec<Arc<ConfigMap>>) -> Vec<String> {
        let mut names: Vec<String> = objects
            .into_iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_subscriber_gets_the_store_first_then_every_change_or_the_store_when_behind() {
        let (store, mut writer) = reflector::store::<ConfigMap>();
        let mut apply = |name: &str| {
            let object = config_map(name).as_ref().clone();
            writer.apply_watcher_event(&watcher::Event::Apply(object));
        };
        apply("a");
        let subscribers: Mutex<Vec<Arc<Inbox<ConfigMap>>>> = Mutex::default();
        let inbox = Arc::new(Inbox::default());
        inbox.replay();
        lock(&subscribers).push(Arc::clone(&inbox));
        assert_eq!(names(inbox.next(&store).await), ["a"]);

        for name in ["b", "c", "d"] {
            apply(name);
        }
        dispatch(&subscribers, &[config_map("b"), config_map("c")], &store);
        dispatch(&subscribers, &[config_map("d")], &store);
        assert_eq!(names(inbox.next(&store).await), ["b", "c", "d"]);

        // Further behind than the inbox holds: the store instead of the changes, and each
        // object gone from it (the store cannot tell those), whether it went before or after
        // the inbox overflowed.
        let flood: Vec<String> = (0..INBOX).map(|i| format!("x{i}")).collect();
        for name in flood.iter().chain([&"e".to_owned()]) {
            apply(name);
        }
        let flood: Vec<Arc<ConfigMap>> = flood.iter().map(|name| config_map(name)).collect();
        dispatch(
            &subscribers,
            &[config_map("gone-before"), config_map("x0")],
            &store,
        );
        dispatch(&subscribers, &flood[1..], &store);
        dispatch(
            &subscribers,
            &[config_map("gone-after"), config_map("e")],
            &store,
        );
        let got = names(inbox.next(&store).await);
        assert_eq!(got.len(), store.state().len() + 2);
        let named = |wanted: &str| got.iter().filter(|name| *name == wanted).count();
        for (name, times) in [("gone-before", 1), ("gone-after", 1), ("e", 1), ("x0", 1)] {
            assert_eq!(named(name), times, "{name}");
        }
        assert!(lock(&inbox.waiting).objects.is_empty());

        // A subscriber that went away is dropped.
        drop(inbox);
        dispatch(&subscribers, &[config_map("f")], &store);
        assert!(lock(&subscribers).is_empty());
    }

    #[tokio::test]
    async fn every_subscriber_shares_one_copy_of_a_changed_object() {
        let (store, _writer) = reflector::store::<ConfigMap>();
        let subscribers: Mutex<Vec<Arc<Inbox<ConfigMap>>>> = Mutex::default();
        let inboxes = [Arc::new(Inbox::default()), Arc::new(Inbox::default())];
        for inbox in &inboxes {
            lock(&subscribers).push(Arc::clone(inbox));
        }
        let changed = config_map("a");
        dispatch(&subscribers, std::slice::from_ref(&changed), &store);
        for inbox in &inboxes {
            let got = inbox.next(&store).await;
            assert!(Arc::ptr_eq(&got[0], &changed));
        }
    }
}
