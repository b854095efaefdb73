//! One reflector per kind for a whole process: the manager and the deployer read the same
//! store and receive the same events, so an object is watched and held once however many
//! components use it.

use std::sync::{Arc, Mutex, PoisonError};

use futures_util::stream::{self, Stream, StreamExt};
use kube::Client;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use tokio::sync::mpsc;

use crate::watch::{Watched, reflect_events, settle};

/// A reflector shared by the components of one process. Clones share it.
pub struct Shared<K: Watched> {
    store: Store<K>,
    fanout: Arc<Fanout<K>>,
}

impl<K: Watched> Clone for Shared<K> {
    fn clone(&self) -> Self {
        Shared {
            store: self.store.clone(),
            fanout: Arc::clone(&self.fanout),
        }
    }
}

impl<K: Watched> Shared<K> {
    /// Starts watching every object of `K` (within a Tokio runtime); the watch lives as long
    /// as the process.
    pub fn start(client: &Client, config: watcher::Config) -> Self {
        let (store, events) = reflect_events::<K>(client, config);
        let fanout = Arc::new(Fanout::default());
        let sender = Arc::clone(&fanout);
        tokio::spawn(async move {
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                sender.dispatch(&event);
            }
        });
        Shared { store, fanout }
    }

    /// The store every subscriber reads.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// The watcher's events from now on, each once the store applied it. A subscriber that
    /// comes after the first list first receives the store's objects as a list, so it sees
    /// what the earlier ones saw.
    pub fn events(&self) -> impl Stream<Item = watcher::Event<K>> + Send + use<K> {
        let receiver = self.fanout.subscribe(&self.store);
        stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|event| (event, receiver))
        })
    }

    /// The objects whose change the store shows (see [`crate::watch::Settled`]).
    pub fn objects(&self) -> impl Stream<Item = K> + Send + use<K> {
        settle(self.store.clone(), self.events())
    }
}

/// The subscribers of one reflector and where its list stands.
struct Fanout<K> {
    state: Mutex<FanoutState<K>>,
}

impl<K> Default for Fanout<K> {
    fn default() -> Self {
        Fanout {
            state: Mutex::new(FanoutState {
                subscribers: Vec::new(),
                listed: false,
                listing: None,
            }),
        }
    }
}

struct FanoutState<K> {
    subscribers: Vec<mpsc::UnboundedSender<watcher::Event<K>>>,
    /// A list has completed: the store holds the objects.
    listed: bool,
    /// The objects of the list in progress, until its `InitDone`.
    listing: Option<Vec<K>>,
}

impl<K: Clone> Fanout<K> {
    /// Passes `event` (already applied to the store) to every subscriber still listening.
    fn dispatch(&self, event: &watcher::Event<K>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            watcher::Event::Init => state.listing = Some(Vec::new()),
            watcher::Event::InitApply(object) => {
                if let Some(listing) = state.listing.as_mut() {
                    listing.push(object.clone());
                }
            }
            watcher::Event::InitDone => {
                state.listing = None;
                state.listed = true;
            }
            watcher::Event::Apply(_) | watcher::Event::Delete(_) => {}
        }
        state
            .subscribers
            .retain(|subscriber| subscriber.send(event.clone()).is_ok());
    }

    /// A new subscriber, told first what it missed: the list in progress so far, or else the
    /// store's objects as a completed list.
    fn subscribe(&self, store: &Store<K>) -> mpsc::UnboundedReceiver<watcher::Event<K>>
    where
        K: kube::Resource + Clone + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone,
    {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let missed: Vec<watcher::Event<K>> = match (&state.listing, state.listed) {
            (Some(listing), _) => std::iter::once(watcher::Event::Init)
                .chain(listing.iter().cloned().map(watcher::Event::InitApply))
                .collect(),
            (None, true) => std::iter::once(watcher::Event::Init)
                .chain(
                    store
                        .state()
                        .into_iter()
                        .map(|object| watcher::Event::InitApply(object.as_ref().clone())),
                )
                .chain(std::iter::once(watcher::Event::InitDone))
                .collect(),
            (None, false) => Vec::new(),
        };
        for event in missed {
            // The receiver is in hand: sending cannot fail.
            let _ = sender.send(event);
        }
        state.subscribers.push(sender);
        receiver
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;

    fn config_map(name: &str) -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"}
        }))
        .unwrap()
    }

    /// What a receiver holds now, as short names.
    fn drain(receiver: &mut mpsc::UnboundedReceiver<Event<ConfigMap>>) -> Vec<String> {
        let mut seen = Vec::new();
        while let Ok(event) = receiver.try_recv() {
            seen.push(match event {
                Event::Init => "init".to_owned(),
                Event::InitApply(c) => format!("list {}", c.metadata.name.unwrap()),
                Event::InitDone => "done".to_owned(),
                Event::Apply(c) => format!("apply {}", c.metadata.name.unwrap()),
                Event::Delete(c) => format!("delete {}", c.metadata.name.unwrap()),
            });
        }
        seen
    }

    #[test]
    fn every_subscriber_sees_the_same_objects_whenever_it_comes() {
        let (store, mut writer) = reflector::store::<ConfigMap>();
        let fanout = Fanout::default();
        let send = |writer: &mut reflector::store::Writer<ConfigMap>, event: Event<ConfigMap>| {
            writer.apply_watcher_event(&event);
            fanout.dispatch(&event);
        };
        let mut first = fanout.subscribe(&store);
        send(&mut writer, Event::Init);
        send(&mut writer, Event::InitApply(config_map("a")));
        // Mid-list: told the list so far, then the rest as it comes.
        let mut second = fanout.subscribe(&store);
        send(&mut writer, Event::InitApply(config_map("b")));
        send(&mut writer, Event::InitDone);
        send(&mut writer, Event::Apply(config_map("c")));
        // After the list: told the store as a list.
        let mut third = fanout.subscribe(&store);
        send(&mut writer, Event::Delete(config_map("a")));

        let whole = ["init", "list a", "list b", "done", "apply c", "delete a"];
        assert_eq!(drain(&mut first), whole);
        assert_eq!(drain(&mut second), whole);
        let mut late = drain(&mut third);
        late[1..4].sort();
        assert_eq!(
            late,
            ["init", "list a", "list b", "list c", "done", "delete a"]
        );

        // A subscriber that went away is dropped; the others still receive.
        drop(first);
        send(&mut writer, Event::Apply(config_map("d")));
        assert_eq!(fanout.state.lock().unwrap().subscribers.len(), 2);
        assert_eq!(drain(&mut second), ["apply d"]);
    }
}
