//! Spoke mode: the agent runs inside one managed cluster, evaluates the EventSources the hub
//! copied in (those carrying `projectsveltos.io/deployed-by-sveltos`, as Sveltos' in-cluster
//! agent does) and writes EventReports locally in `projectsveltos`, named like the source. The
//! hub relays them to the management cluster; this cluster holds no management credentials.

use std::future::Future;
use std::sync::Arc;

use api::labels::DEPLOYED_BY_SVELTOS_ANNOTATION;
use api::v1beta1::EventSource;
use futures_util::StreamExt;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::watch;

use crate::hub::cluster::{self, ClusterAgent, Sources};
use crate::hub::report::{self, ClusterId, Destination};

/// The EventSources this agent evaluates: the hub's copies that are not being deleted.
fn assigned(sources: &Store<EventSource>) -> Sources {
    sources
        .state()
        .into_iter()
        .filter(|source| {
            source.metadata.deletion_timestamp.is_none()
                && source
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(DEPLOYED_BY_SVELTOS_ANNOTATION))
        })
        .map(|source| (source.metadata.name.clone().unwrap_or_default(), source))
        .collect::<std::collections::BTreeMap<String, Arc<EventSource>>>()
}

/// Runs the agent in the cluster `client` reaches, named `cluster` in logs, until `shutdown`
/// completes.
pub async fn run(client: Client, cluster: String, shutdown: impl Future<Output = ()>) {
    let (sources, changes) = crate::hub::reflect(
        Api::<EventSource>::all(client.clone()),
        watcher::Config::default(),
    );
    let mut changes = changes.boxed();
    tokio::pin!(shutdown);
    let ready = async { sources.wait_until_ready().await.is_ok() };
    if !crate::hub::fill_caches(ready, &mut changes, shutdown.as_mut()).await {
        return;
    }
    tracing::info!("caches filled; evaluating the EventSources copied into this cluster");
    crate::observe::metrics().set_ready();
    crate::observe::metrics().set_clusters(1);
    let destination = Destination::Local {
        client: client.clone(),
    };
    let current = assigned(&sources);
    // Reports of sources withdrawn while no agent ran.
    if let Err(error) = report::delete_unkept(&destination, |s| current.contains_key(s)).await {
        tracing::warn!(%error, "cannot delete stale EventReports");
    }
    let id = ClusterId::sveltos("", &cluster);
    let (sender, receiver) = watch::channel(current);
    let task = tokio::spawn(ClusterAgent::run(id, client, destination, receiver));
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            next = changes.next() => {
                if next.is_none() {
                    break;
                }
                cluster::update_sources(&sender, assigned(&sources));
            }
        }
    }
    task.abort();
}
