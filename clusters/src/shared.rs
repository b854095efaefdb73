//! One reflector per kind for a whole process: the manager and the deployer read the same
//! store and receive the same changes, so an object is watched and held once however many
//! components use it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::stream::{self, Stream, StreamExt};
use kube::Client;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::watch::{Settled, Watched, events};

/// Most changed objects a subscriber may have waiting; one further behind is sent the whole
/// store again instead (as a watcher further behind than the server keeps relists).
pub const INBOX: usize = 4_096;

/// A reflector shared by the components of one process. Clones share it; the watch stops
/// when the last clone is dropped.
pub struct Shared<K: Watched> {
    store: Store<K>,
    subscribers: Arc<Mutex<Vec<Arc<Inbox<K>>>>>,
    _watch: Arc<StopOnDrop>,
}

impl<K: Watched> Clone for Shared<K> {
    fn clone(&self) -> Self {
        Shared {
            store: self.store.clone(),
            subscribers: Arc::clone(&self.subscribers),
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
        let (store, events) = events::<K>(kube::Api::all(client.clone()), config);
        let subscribers: Arc<Mutex<Vec<Arc<Inbox<K>>>>> = Arc::default();
        let (reader, senders) = (store.clone(), Arc::clone(&subscribers));
        let task = tokio::spawn(async move {
            // Settled here, in the poll that applied the event to the store, so that a list's
            // start sees the store as it was before the list.
            let mut settled = Settled::default();
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                let changed = settled.take(event, &reader);
                if !changed.is_empty() {
                    dispatch(&senders, &changed);
                }
            }
        });
        Shared {
            store,
            subscribers,
            _watch: Arc::new(StopOnDrop(task.abort_handle())),
        }
    }

    /// The store every subscriber reads.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// The objects whose change the store shows (see [`Settled`]), from now on: first the
    /// store's objects (what an earlier subscriber may already have seen), then each change.
    pub fn objects(&self) -> impl Stream<Item = K> + Send + use<K> {
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

/// Passes `changed` to every subscriber still listening.
fn dispatch<K: Clone>(subscribers: &Mutex<Vec<Arc<Inbox<K>>>>, changed: &[K]) {
    // A subscriber that went away holds the only other reference to its inbox.
    lock(subscribers).retain(|inbox| {
        inbox.push(changed);
        Arc::strong_count(inbox) > 1
    });
}

/// The changes one subscriber has not taken yet.
struct Inbox<K> {
    waiting: Mutex<Waiting<K>>,
    ready: Notify,
}

struct Waiting<K> {
    objects: VecDeque<K>,
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

impl<K: Clone> Inbox<K> {
    fn push(&self, changed: &[K]) {
        let mut waiting = lock(&self.waiting);
        if !waiting.replay {
            if waiting.objects.len() + changed.len() > INBOX {
                waiting.objects.clear();
                waiting.replay = true;
            } else {
                waiting.objects.extend(changed.iter().cloned());
            }
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

    /// The next changes: the whole store when owed, else what is waiting, else the next push.
    async fn next(&self, store: &Store<K>) -> Vec<K>
    where
        K: kube::Resource + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone,
    {
        loop {
            {
                let mut waiting = lock(&self.waiting);
                if std::mem::take(&mut waiting.replay) {
                    return store.state().iter().map(|o| o.as_ref().clone()).collect();
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

    fn config_map(name: &str) -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"}
        }))
        .unwrap()
    }

    fn names(objects: Vec<ConfigMap>) -> Vec<String> {
        let mut names: Vec<String> = objects
            .into_iter()
            .map(|c| c.metadata.name.unwrap())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_subscriber_gets_the_store_first_then_every_change_or_the_store_when_behind() {
        let (store, mut writer) = reflector::store::<ConfigMap>();
        writer.apply_watcher_event(&watcher::Event::Apply(config_map("a")));
        let subscribers: Mutex<Vec<Arc<Inbox<ConfigMap>>>> = Mutex::default();
        let inbox = Arc::new(Inbox::default());
        inbox.replay();
        lock(&subscribers).push(Arc::clone(&inbox));
        assert_eq!(names(inbox.next(&store).await), ["a"]);

        dispatch(&subscribers, &[config_map("b"), config_map("c")]);
        dispatch(&subscribers, &[config_map("d")]);
        assert_eq!(names(inbox.next(&store).await), ["b", "c", "d"]);

        // Further behind than the inbox holds: the store instead of the changes.
        let flood: Vec<ConfigMap> = (0..=INBOX).map(|i| config_map(&format!("x{i}"))).collect();
        dispatch(&subscribers, &flood);
        dispatch(&subscribers, &[config_map("e")]);
        assert_eq!(names(inbox.next(&store).await), ["a"]);
        assert!(lock(&inbox.waiting).objects.is_empty());

        // A subscriber that went away is dropped.
        drop(inbox);
        dispatch(&subscribers, &[config_map("f")]);
        assert!(lock(&subscribers).is_empty());
    }
}
