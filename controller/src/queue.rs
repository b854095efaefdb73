//! Work queues of the controllers: names marked dirty by watch events, taken in batches, and
//! failed names retried after a doubling delay.

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

/// Names waiting to be reconciled.
#[derive(Default)]
pub struct Queue {
    dirty: Mutex<BTreeSet<String>>,
    notify: Notify,
}

impl Queue {
    /// Marks `name` for a pass.
    pub fn mark(&self, name: impl Into<String>) {
        if let Ok(mut dirty) = self.dirty.lock() {
            dirty.insert(name.into());
        }
        self.notify.notify_one();
    }

    /// The names marked since the last batch, waiting until there is at least one.
    pub async fn next_batch(&self) -> BTreeSet<String> {
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

/// Whether a name needs another pass.
#[derive(Debug, PartialEq, Eq)]
pub enum Pass {
    /// In step with its inputs.
    Done,
    /// Something is pending or failed: try again later.
    Again,
    /// Its time was up with work left: go on at once.
    More,
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
    pub fn record<E: Display>(
        &mut self,
        queue: &Arc<Queue>,
        what: &str,
        name: String,
        outcome: Result<Pass, E>,
    ) {
        let label = match &outcome {
            Ok(Pass::Done) => "done",
            Ok(Pass::Again) => "again",
            Ok(Pass::More) => "more",
            Err(_) => "error",
        };
        self.telemetry.count_pass(self.controller, label);
        match outcome {
            Ok(Pass::Done) => {
                self.delays.remove(&name);
                return;
            }
            Ok(Pass::More) => {
                queue.mark(name);
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
