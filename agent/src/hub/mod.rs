//! Hub mode: one agent process in the management cluster serves every registered cluster
//! through its kubeconfig Secret, one task per cluster, started and stopped as clusters and
//! their EventSources come and go. EventReports are written straight into the management
//! cluster (`<type>--<eventSource>--<cluster>` in the cluster's namespace), where the manager
//! reads them. A cluster annotated for spoke mode runs its own agent: the hub copies its
//! EventSources in and relays its reports instead (`relay`).

pub mod cluster;
pub mod connect;
pub mod relay;
pub mod report;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use api::capi::CapiCluster;
use api::labels::{AGENT_SOURCES_KEY_PREFIX, AGENT_SOURCES_LABEL};
use api::v1beta1::{EventSource, EventTrigger, SveltosCluster, agent_sources_config_map_name};
use futures_util::{Stream, StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use cluster::Sources;
use clusters::watch::Watched;
use clusters::{CapiClusters, Registration, Registry};
use report::ClusterId;

/// A reflector over `api` and a stream that yields once per change.
pub(crate) fn reflect<K: Watched>(
    api: Api<K>,
    config: watcher::Config,
) -> (Store<K>, impl Stream<Item = ()> + Send + use<K>) {
    let (store, events) = clusters::watch::events(api, config);
    (store, events.map(|_| ()))
}

/// Drives `changes` until `ready` completes (returns whether the caches filled) or `shutdown`
/// does (returns false).
pub(crate) async fn fill_caches(
    ready: impl Future<Output = bool>,
    changes: &mut (impl Stream<Item = ()> + Unpin),
    mut shutdown: std::pin::Pin<&mut impl Future<Output = ()>>,
) -> bool {
    tokio::pin!(ready);
    loop {
        tokio::select! {
            () = &mut shutdown => return false,
            filled = &mut ready => {
                if !filled {
                    tracing::error!("the agent's caches closed before they were filled");
                }
                return filled;
            }
            Some(()) = changes.next() => {}
        }
    }
}

/// A running cluster task and the channel that tells it its EventSources.
struct Running {
    sources: watch::Sender<Sources>,
    /// How the task reaches the cluster; another one needs another task.
    connection: Connection,
    task: JoinHandle<()>,
}

/// What a cluster task's connection was made from: the mode and the credentials' revision
/// ([`api::labels::KUBECONFIG_REVISION_ANNOTATION`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Connection {
    spoke: bool,
    revision: Option<String>,
}

impl Connection {
    fn of(cluster: &Registration) -> Self {
        Connection {
            spoke: cluster.is_spoke(),
            revision: cluster.annotation(api::labels::KUBECONFIG_REVISION_ANNOTATION),
        }
    }
}

/// Reflector stores of what the hub reads in the management cluster.
struct Caches {
    clusters: Registry,
    sources: Store<EventSource>,
    lists: Store<ConfigMap>,
    triggers: Store<EventTrigger>,
}

impl Caches {
    /// The EventSources assigned to spoke cluster `cluster`, each carrying as owner references
    /// the EventTriggers that assigned it (what its copy in the cluster must say).
    fn copies_of(&self, cluster: &ClusterId) -> Sources {
        let mut owners: BTreeMap<String, Vec<OwnerReference>> = BTreeMap::new();
        for (key, source) in self
            .list_of(cluster)
            .iter()
            .flat_map(|l| l.data.iter().flatten())
        {
            let trigger = key
                .strip_prefix(AGENT_SOURCES_KEY_PREFIX)
                .and_then(|rest| rest.strip_suffix(source.as_str()))
                .and_then(|rest| rest.strip_suffix('-'));
            let Some(trigger) = trigger.and_then(|t| self.triggers.get(&ObjectRef::new(t))) else {
                continue;
            };
            owners
                .entry(source.clone())
                .or_default()
                .push(OwnerReference {
                    api_version: "lib.projectsveltos.io/v1beta1".into(),
                    kind: "EventTrigger".into(),
                    name: trigger.metadata.name.clone().unwrap_or_default(),
                    uid: trigger.metadata.uid.clone().unwrap_or_default(),
                    ..Default::default()
                });
        }
        let mut sources = self.sources_of(cluster);
        for (name, source) in &mut sources {
            let mut copy = EventSource::clone(source);
            copy.metadata.owner_references = owners.remove(name);
            *source = Arc::new(copy);
        }
        sources
    }

    /// The manager's list of EventSources for `cluster`.
    fn list_of(&self, cluster: &ClusterId) -> Option<Arc<ConfigMap>> {
        let list_name = agent_sources_config_map_name(&cluster.name, cluster.cluster_type);
        self.lists
            .get(&ObjectRef::new(&list_name).within(&cluster.namespace))
    }

    /// The EventSources the manager assigned to `cluster` that exist and are not being deleted.
    fn sources_of(&self, cluster: &ClusterId) -> Sources {
        let Some(list) = self.list_of(cluster) else {
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

/// Runs the hub against the management cluster until `shutdown` completes, serving its
/// SveltosClusters and the Cluster API clusters of `capi`.
pub async fn run(mgmt: Client, capi: CapiClusters, shutdown: impl Future<Output = ()>) {
    let config = watcher::Config::default;
    let (clusters, cluster_changes) = reflect(Api::<SveltosCluster>::all(mgmt.clone()), config());
    let capi_changes = capi.changes();
    let (sources, source_changes) = reflect(Api::<EventSource>::all(mgmt.clone()), config());
    let (lists, list_changes) = reflect(
        Api::<ConfigMap>::all(mgmt.clone()),
        config().labels(AGENT_SOURCES_LABEL),
    );
    let (triggers, trigger_changes) = reflect(Api::<EventTrigger>::all(mgmt.clone()), config());
    let caches = Caches {
        clusters: Registry {
            sveltos: clusters,
            capi,
        },
        sources,
        lists,
        triggers,
    };
    let mut changes = stream::select_all([
        cluster_changes.boxed(),
        capi_changes,
        source_changes.boxed(),
        list_changes.boxed(),
        trigger_changes.boxed(),
    ]);
    let mut running: BTreeMap<ClusterId, Running> = BTreeMap::new();
    let ready = async {
        caches.clusters.ready().await
            && caches.sources.wait_until_ready().await.is_ok()
            && caches.lists.wait_until_ready().await.is_ok()
            && caches.triggers.wait_until_ready().await.is_ok()
    };
    tokio::pin!(shutdown);
    if !fill_caches(ready, &mut changes, shutdown.as_mut()).await {
        return;
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

/// Cluster `id` when the hub serves it: present, not being deleted, not paused, not in pull
/// mode; a Cluster API cluster also needs its control plane initialised.
fn served(caches: &Caches, id: &ClusterId) -> Option<Registration> {
    caches.clusters.get(id).filter(serves)
}

/// Whether the hub serves `cluster` (see [`served`]).
fn serves(cluster: &Registration) -> bool {
    match cluster {
        Registration::Sveltos(cluster) => {
            cluster.metadata.deletion_timestamp.is_none()
                && !cluster.spec.paused
                && !cluster.spec.pull_mode
        }
        Registration::Capi(object) => {
            let cluster = CapiCluster(object);
            cluster.selectable() && !cluster.paused()
        }
    }
}

/// Starts, updates and stops cluster tasks to match the caches.
async fn sync(mgmt: &Client, caches: &Caches, running: &mut BTreeMap<ClusterId, Running>) {
    let wanted: BTreeMap<ClusterId, Registration> = caches
        .clusters
        .all()
        .filter(serves)
        .map(|cluster| (cluster.id(), cluster))
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
        let connection = Connection::of(&cluster);
        let spoke = connection.spoke;
        let sources = if spoke {
            caches.copies_of(&id)
        } else {
            caches.sources_of(&id)
        };
        match running.get(&id) {
            Some(existing) if !existing.task.is_finished() && existing.connection == connection => {
                cluster::update_sources(&existing.sources, sources);
            }
            _ => {
                if let Some(previous) = running.remove(&id) {
                    previous.task.abort();
                }
                tracing::info!(cluster = %id, spoke, "serving cluster");
                let (sender, receiver) = watch::channel(sources);
                let task =
                    tokio::spawn(connect::serve(mgmt.clone(), id.clone(), cluster, receiver));
                running.insert(
                    id,
                    Running {
                        sources: sender,
                        connection,
                        task,
                    },
                );
            }
        }
    }
}
