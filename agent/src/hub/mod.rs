//! Hub mode: one agent process in the management cluster serves every registered cluster
//! through its kubeconfig Secret, one task per cluster, started and stopped as clusters and
//! their EventSources come and go. EventReports are written straight into the management
//! cluster (`<type>--<eventSource>--<cluster>` in the cluster's namespace), where the manager
//! reads them.

pub mod cluster;
pub mod connect;
pub mod objects;
pub mod report;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use api::labels::AGENT_SOURCES_LABEL;
use api::v1beta1::{EventSource, SveltosCluster, agent_sources_config_map_name};
use futures_util::{Stream, StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use cluster::Sources;
use report::ClusterId;

/// A reflector over `K` and a stream that yields once per change.
fn reflect<K>(
    client: &Client,
    config: watcher::Config,
) -> (Store<K>, impl Stream<Item = ()> + Send + use<K>)
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let api: Api<K> = Api::all(client.clone());
    let changes = reflector::reflector(writer, watcher(api, config).default_backoff()).filter_map(
        |event| async move {
            match event {
                Ok(_) => Some(()),
                Err(error) => {
                    tracing::warn!(%error, kind = %K::kind(&()), "watch failed; retrying");
                    None
                }
            }
        },
    );
    (store, changes)
}

/// A running cluster task and the channel that tells it its EventSources.
struct Running {
    sources: watch::Sender<Sources>,
    task: JoinHandle<()>,
}

/// Reflector stores of what the hub reads in the management cluster.
struct Caches {
    clusters: Store<SveltosCluster>,
    sources: Store<EventSource>,
    lists: Store<ConfigMap>,
}

impl Caches {
    /// The EventSources the manager assigned to `cluster` that exist and are not being deleted.
    fn sources_of(&self, cluster: &ClusterId) -> Sources {
        let list_name =
            agent_sources_config_map_name(&cluster.name, api::v1beta1::ClusterType::Sveltos);
        let Some(list) = self
            .lists
            .get(&ObjectRef::new(&list_name).within(&cluster.namespace))
        else {
            return Sources::new();
        };
        list.data
            .iter()
            .flatten()
            .filter_map(|(_, name)| {
                let source = self.sources.get(&ObjectRef::new(name))?;
                source
                    .metadata
                    .deletion_timestamp
                    .is_none()
                    .then(|| (name.clone(), source))
            })
            .collect()
    }
}

/// Runs the hub against the management cluster until `shutdown` completes.
pub async fn run(mgmt: Client, shutdown: impl Future<Output = ()>) {
    let (clusters, cluster_changes) = reflect::<SveltosCluster>(&mgmt, watcher::Config::default());
    let (sources, source_changes) = reflect::<EventSource>(&mgmt, watcher::Config::default());
    let (lists, list_changes) = reflect::<ConfigMap>(
        &mgmt,
        watcher::Config::default().labels(AGENT_SOURCES_LABEL),
    );
    let caches = Caches {
        clusters,
        sources,
        lists,
    };
    let mut changes = stream::select(
        stream::select(cluster_changes, source_changes),
        list_changes,
    )
    .boxed();
    let mut running: BTreeMap<ClusterId, Running> = BTreeMap::new();
    let ready = async {
        caches.clusters.wait_until_ready().await.is_ok()
            && caches.sources.wait_until_ready().await.is_ok()
            && caches.lists.wait_until_ready().await.is_ok()
    };
    tokio::pin!(shutdown);
    tokio::pin!(ready);
    // Drive the watches until the caches are filled.
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            filled = &mut ready => {
                if !filled {
                    tracing::error!("the hub's caches closed before they were filled");
                    return;
                }
                break;
            }
            Some(()) = changes.next() => {}
        }
    }
    tracing::info!("hub caches filled; serving clusters");
    crate::observe::metrics().set_ready();
    // Changes made while no hub ran (a source withdrawn, a cluster removed) left reports
    // that no task will ever rewrite: delete them once, now that the caches tell the truth.
    if let Err(error) = report::delete_stale(&mgmt, |id, source| {
        served(&caches, id).is_some() && caches.sources_of(id).contains_key(source)
    })
    .await
    {
        tracing::warn!(%error, "cannot delete stale EventReports");
    }
    loop {
        sync(&mgmt, &caches, &mut running).await;
        tokio::select! {
            () = &mut shutdown => break,
            next = changes.next() => if next.is_none() { break },
        }
    }
    for (_, cluster) in std::mem::take(&mut running) {
        cluster.task.abort();
    }
}

/// The SveltosCluster `id` when the hub serves it: present, not being deleted, not paused,
/// not in pull mode.
fn served(caches: &Caches, id: &ClusterId) -> Option<Arc<SveltosCluster>> {
    let cluster = caches
        .clusters
        .get(&ObjectRef::new(&id.name).within(&id.namespace))?;
    let serve = cluster.metadata.deletion_timestamp.is_none()
        && !cluster.spec.paused
        && !cluster.spec.pull_mode;
    serve.then_some(cluster)
}

/// Starts, updates and stops cluster tasks to match the caches.
async fn sync(mgmt: &Client, caches: &Caches, running: &mut BTreeMap<ClusterId, Running>) {
    let wanted: BTreeMap<ClusterId, Arc<SveltosCluster>> = caches
        .clusters
        .state()
        .iter()
        .filter_map(|cluster| {
            let id = ClusterId {
                namespace: cluster.metadata.namespace.clone().unwrap_or_default(),
                name: cluster.metadata.name.clone().unwrap_or_default(),
            };
            served(caches, &id).map(|cluster| (id, cluster))
        })
        .collect();
    let gone: Vec<ClusterId> = running
        .keys()
        .filter(|id| !wanted.contains_key(*id))
        .cloned()
        .collect();
    for id in gone {
        if let Some(cluster) = running.remove(&id) {
            cluster.task.abort();
        }
        tracing::info!(cluster = %id, "cluster no longer served");
        if let Err(error) = report::delete_all(mgmt, &id).await {
            tracing::warn!(cluster = %id, %error, "cannot delete the cluster's EventReports");
        }
    }
    crate::observe::metrics().set_clusters(wanted.len());
    for (id, cluster) in wanted {
        let sources = caches.sources_of(&id);
        match running.get(&id) {
            Some(existing) if !existing.task.is_finished() => {
                existing.sources.send_if_modified(|current| {
                    let changed = current.len() != sources.len()
                        || current.iter().zip(&sources).any(|((a, x), (b, y))| {
                            a != b || x.metadata.resource_version != y.metadata.resource_version
                        });
                    if changed {
                        *current = sources;
                    }
                    changed
                });
            }
            _ => {
                tracing::info!(cluster = %id, "serving cluster");
                let (sender, receiver) = watch::channel(sources);
                let task =
                    tokio::spawn(connect::serve(mgmt.clone(), id.clone(), cluster, receiver));
                running.insert(
                    id,
                    Running {
                        sources: sender,
                        task,
                    },
                );
            }
        }
    }
}
