//! Work queues of the controllers: names marked dirty by watch events, taken in batches, and
//! failed names retried after a doubling delay.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::serve::Telemetry;

/// Delay before a failed name is tried again (doubles up to [`MAX_RETRY`]).
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// Longest delay between retries of a failing name.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// What part of a name a mark asks a pass over: all of it, or (the manager's triggers) some
/// of its clusters. Marks of one name join until a pass takes them.
pub trait Part: Send + 'static {
    /// The whole name: what a mark without a part asks, and a retry.
    fn whole() -> Self;
    /// Adds the part `other` asks.
    fn join(&mut self, other: Self);
}

impl Part for () {
    fn whole() -> Self {}
    fn join(&mut self, (): Self) {}
}

/// Names waiting to be reconciled, each with the part of it marked.
pub struct Queue<P = ()> {
    dirty: Mutex<BTreeMap<String, P>>,
    notify: Notify,
}

impl<P> Default for Queue<P> {
    fn default() -> Self {
        Queue {
            dirty: Mutex::new(BTreeMap::new()),
            notify: Notify::new(),
        }
    }
}

impl<P: Part> Queue<P> {
    /// Marks all of `name` for a pass.
    pub fn mark(&self, name: impl Into<String>) {
        self.mark_part(name, P::whole());
    }

    /// Marks `part` of `name` for a pass.
    pub fn mark_part(&self, name: impl Into<String>, part: P) {
        if let Ok(mut dirty) = self.dirty.lock() {
            match dirty.entry(name.into()) {
                Entry::Occupied(mut marked) => marked.get_mut().join(part),
                Entry::Vacant(vacant) => {
                    vacant.insert(part);
                }
            }
        }
        self.notify.notify_one();
    }

    /// The names (and their parts) marked since the last batch, waiting until there is at
    /// least one.
    pub async fn next_parts(&self) -> BTreeMap<String, P> {
        loop {
            let batch = self
                .dirty
                .lock()
                .map(|mut d| std::mem::take(&mut *d))
                .unwrap_or_default();
            if !batch.is_empty() {
                return batch;
            }
            self.notify.notified().await;
        }
    }
}

impl Queue {
    /// The names marked since the last batch, waiting until there is at least one.
    pub async fn next_batch(&self) -> BTreeSet<String> {
        self.next_parts().await.into_keys().collect()
    }
}

/// Whether a name needs another pass.
#[derive(Debug, PartialEq, Eq)]
pub enum Pass<P = ()> {
    /// In step with its inputs.
    Done,
    /// Something is pending or failed: try again later.
    Again,
    /// Its time was up with work left (this part of it): go on at once.
    More(P),
}

/// Retry delays of failing names, and the count of passes by outcome.
pub struct Retries {
    controller: &'static str,
    telemetry: Arc<Telemetry>,
    delays: BTreeMap<String, Duration>,
}

impl Retries {
    /// Retries of `controller`, counting its passes in `telemetry`.
    pub fn new(controller: &'static str, telemetry: Arc<Telemetry>) -> Self {
        Retries {
            controller,
            telemetry,
            delays: BTreeMap::new(),
        }
    }

    /// Records the outcome of a pass over `name` (a `what`, for logs); schedules a retry
    /// unless it is done.
    pub fn record<P: Part, E: Display>(
        &mut self,
        queue: &Arc<Queue<P>>,
        what: &str,
        name: String,
        outcome: Result<Pass<P>, E>,
    ) {
        let label = match &outcome {
            Ok(Pass::Done) => "done",
            Ok(Pass::Again) => "again",
            Ok(Pass::More(_)) => "more",
            Err(_) => "error",
        };
        self.telemetry.count_pass(self.controller, label);
        match outcome {
            Ok(Pass::Done) => {
                self.delays.remove(&name);
                return;
            }
            Ok(Pass::More(part)) => {
                queue.mark_part(name, part);
                return;
            }
            _ => {}
        }
        if let Err(error) = &outcome {
            tracing::warn!(%name, %error, "{what} pass failed; will retry");
        }
        let delay = self
            .delays
            .get(&name)
            .map_or(FIRST_RETRY, |d| (*d * 2).min(MAX_RETRY));
        self.delays.insert(name.clone(), delay);
        let queue = Arc::clone(queue);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.mark(name);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Some numbers of a name, or all of them (`None`).
    impl Part for Option<BTreeSet<u8>> {
        fn whole() -> Self {
            None
        }
        fn join(&mut self, other: Self) {
            match (self.as_mut(), other) {
                (Some(these), Some(more)) => these.extend(more),
                (Some(_), None) => *self = None,
                (None, _) => {}
            }
        }
    }

    #[tokio::test]
    async fn parts_of_a_name_marked_before_a_pass_join_into_one() {
        let queue: Queue<Option<BTreeSet<u8>>> = Queue::default();
        queue.mark_part("t", Some(BTreeSet::from([1])));
        queue.mark_part("t", Some(BTreeSet::from([2])));
        queue.mark_part("u", Some(BTreeSet::from([3])));
        let batch = queue.next_parts().await;
        assert_eq!(
            batch,
            BTreeMap::from([
                ("t".to_owned(), Some(BTreeSet::from([1, 2]))),
                ("u".to_owned(), Some(BTreeSet::from([3]))),
            ])
        );
        // A plain mark asks for all of it, whatever else was marked.
        queue.mark("t");
        queue.mark_part("t", Some(BTreeSet::from([4])));
        let batch = queue.next_parts().await;
        assert_eq!(batch, BTreeMap::from([("t".to_owned(), None)]));
    }
}
