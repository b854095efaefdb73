//! The TUI's data: one watch per kind in the management cluster, never a poll. Each watcher's
//! events become [`Update`]s on a channel; a failed watch says why (not installed, forbidden,
//! unreachable) and retries with kube-runtime's backoff.

use futures_util::StreamExt;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::chain::fleet::sveltos_kind;

/// The kinds the TUI follows, in the order of its views: `Cluster` is Cluster API's, `Event`
/// the Kubernetes Events the controllers publish.
pub const KINDS: [&str; 9] = [
    "SveltosCluster",
    "Cluster",
    "EventSource",
    "EventTrigger",
    "EventReport",
    "ClusterProfile",
    "ClusterSummary",
    "ClusterReport",
    "Event",
];

/// Who publishes the Events the TUI shows: the manager and the agent (the field selector
/// `reportingComponent` holds an Event's reporting controller).
const REPORTERS: [&str; 2] = ["sveltos-events-manager", agent::hub::report::FIELD_MANAGER];

/// How a watch that lost the API server starts its failure (the banner says it once).
pub const NOT_ANSWERING: &str = "the API server is not answering";

/// What a watch reports.
#[derive(Debug, Clone)]
pub enum Update {
    /// Every object of `kind`, after a (re)list: replaces what was known (for Events, which
    /// come from one watch per reporter, adds to it).
    Listed(&'static str, Vec<Value>),
    /// One object of `kind` was created or changed.
    Applied(&'static str, Value),
    /// One object of `kind` was deleted.
    Deleted(&'static str, Value),
    /// The watch of `kind` failed; it retries.
    Failed(&'static str, String),
}

/// Starts the watches (namespaced kinds in `namespace` alone, when given: a user allowed one
/// namespace can follow it); their updates arrive on the returned channel.
pub fn start(client: Client, namespace: Option<&str>) -> mpsc::Receiver<Update> {
    let (sender, receiver) = mpsc::channel(1024);
    for kind in KINDS {
        match kind {
            "Cluster" => {
                tokio::spawn(capi(client.clone(), sender.clone()));
            }
            "Event" => {
                let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Event>(&());
                for reporter in REPORTERS {
                    let api = Api::all_with(client.clone(), &resource);
                    let config = watcher::Config::default()
                        .fields(&format!("reportingComponent={reporter}"));
                    tokio::spawn(follow(api, config, kind, sender.clone()));
                }
            }
            _ => {
                let (resource, scope) = sveltos_kind(kind);
                let api = match namespace {
                    Some(namespace) if scope == kube::discovery::Scope::Namespaced => {
                        Api::namespaced_with(client.clone(), namespace, &resource)
                    }
                    _ => Api::all_with(client.clone(), &resource),
                };
                tokio::spawn(follow(
                    api,
                    watcher::Config::default(),
                    kind,
                    sender.clone(),
                ));
            }
        }
    }
    receiver
}

/// Follows one watch of `kind` until the receiver is gone. After a failure the watch starts
/// over with a list (kube's watcher would resume silently, and the banner would never learn
/// that it did), waiting longer after each failure in a row.
async fn follow(
    api: Api<DynamicObject>,
    config: watcher::Config,
    kind: &'static str,
    sender: mpsc::Sender<Update>,
) {
    let mut pause = RETRY_FIRST;
    loop {
        let mut events = watcher::watcher(api.clone(), config.clone()).boxed();
        let mut listing: Vec<Value> = Vec::new();
        let failure = loop {
            let update = match events.next().await {
                Some(Ok(Event::Init)) => {
                    listing.clear();
                    continue;
                }
                Some(Ok(Event::InitApply(object))) => {
                    listing.push(to_value(object));
                    continue;
                }
                Some(Ok(Event::InitDone)) => {
                    pause = RETRY_FIRST;
                    Update::Listed(kind, std::mem::take(&mut listing))
                }
                Some(Ok(Event::Apply(object))) => Update::Applied(kind, to_value(object)),
                Some(Ok(Event::Delete(object))) => Update::Deleted(kind, to_value(object)),
                Some(Err(error)) => break words(&error),
                None => break format!("{NOT_ANSWERING} (the watch ended)"),
            };
            if sender.send(update).await.is_err() {
                return;
            }
        };
        if sender.send(Update::Failed(kind, failure)).await.is_err() {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RETRY_LAST);
    }
}

/// The first wait before a failed watch starts over.
const RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(500);
/// The longest wait.
const RETRY_LAST: std::time::Duration = std::time::Duration::from_secs(15);

/// Cluster API's clusters, followed through their CRD (Cluster API may come, go or change
/// version while the TUI runs): every change lists them all.
async fn capi(client: Client, sender: mpsc::Sender<Update>) {
    let clusters = clusters::capi::watch(client, None);
    let mut changes = clusters.changes();
    while changes.next().await.is_some() {
        let all = clusters.state().iter().map(|c| (**c).clone()).collect();
        if sender.send(Update::Listed("Cluster", all)).await.is_err() {
            return;
        }
    }
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
        None => format!("{NOT_ANSWERING} ({error})"),
    }
}
