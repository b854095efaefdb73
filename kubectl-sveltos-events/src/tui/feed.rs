//! The TUI's data: one watch per kind in the management cluster, never a poll. Each watcher's
//! events become [`Update`]s on a channel; a failed watch says why (not installed, forbidden,
//! unreachable) and retries with kube-runtime's backoff.

use futures_util::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::chain::fleet::sveltos_kind;

/// The kinds the TUI follows, in the order of its views.
pub const KINDS: [&str; 6] = [
    "SveltosCluster",
    "EventSource",
    "EventTrigger",
    "EventReport",
    "ClusterProfile",
    "ClusterSummary",
];

/// What a watch reports.
#[derive(Debug, Clone)]
pub enum Update {
    /// Every object of `kind`, after a (re)list: replaces what was known.
    Listed(&'static str, Vec<Value>),
    /// One object of `kind` was created or changed.
    Applied(&'static str, Value),
    /// One object of `kind` was deleted.
    Deleted(&'static str, Value),
    /// The watch of `kind` failed; it retries.
    Failed(&'static str, String),
}

/// Starts one watch per kind; their updates arrive on the returned channel.
pub fn start(client: Client) -> mpsc::Receiver<Update> {
    let (sender, receiver) = mpsc::channel(1024);
    for kind in KINDS {
        let (resource, _) = sveltos_kind(kind);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let sender = sender.clone();
        tokio::spawn(async move {
            let mut events = watcher::watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            let mut listing: Vec<Value> = Vec::new();
            while let Some(event) = events.next().await {
                let update = match event {
                    Ok(Event::Init) => {
                        listing.clear();
                        continue;
                    }
                    Ok(Event::InitApply(object)) => {
                        listing.push(to_value(object));
                        continue;
                    }
                    Ok(Event::InitDone) => Update::Listed(kind, std::mem::take(&mut listing)),
                    Ok(Event::Apply(object)) => Update::Applied(kind, to_value(object)),
                    Ok(Event::Delete(object)) => Update::Deleted(kind, to_value(object)),
                    Err(error) => Update::Failed(kind, words(&error)),
                };
                if sender.send(update).await.is_err() {
                    return;
                }
            }
        });
    }
    receiver
}

fn to_value(object: DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or_default()
}

/// Why a watch failed, as the TUI says it.
fn words(error: &watcher::Error) -> String {
    let api_error = match error {
        watcher::Error::InitialListFailed(kube::Error::Api(e))
        | watcher::Error::WatchStartFailed(kube::Error::Api(e))
        | watcher::Error::WatchFailed(kube::Error::Api(e)) => Some(e.as_ref()),
        watcher::Error::WatchError(e) => Some(e.as_ref()),
        _ => None,
    };
    match api_error {
        Some(e) if e.code == 404 => {
            "sveltos-events is not installed in this cluster: run `kubectl sveltos-events install`"
                .to_owned()
        }
        Some(e) if e.code == 403 => format!("hidden: you may not list it ({})", e.message),
        Some(e) => format!("{} (HTTP {})", e.message, e.code),
        None => format!("the API server is not answering ({error}); retrying"),
    }
}
