//! The watches the manager and the deployer of one process share: one reflector per kind
//! both read (ConfigMaps, Secrets, ClusterProfiles, ClusterSets, SveltosClusters), the
//! Cluster API watch, and the clusters made from them.

use api::v1beta1::{ClusterProfile, ClusterSet, SveltosCluster};
use clusters::shared::Shared;
use clusters::{CapiClusters, Registry};
use futures_util::stream::{BoxStream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::runtime::watcher;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::fleet::{ClusterScope, Fleet};
use crate::identity::ClusterRef;
use crate::kept::config_map::KeptConfigMap;
use crate::kept::profile::KeptProfile;

/// Watches shared by the components of one process. Clones share them.
#[derive(Clone)]
pub struct Watches {
    /// Every ConfigMap, as its record.
    pub config_maps: Shared<KeptConfigMap>,
    /// Every Secret.
    pub secrets: Shared<Secret>,
    /// Every ClusterProfile, as its record: the deployer deploys them all, the manager reads
    /// those it generated.
    pub profiles: Shared<KeptProfile>,
    /// Every ClusterSet.
    pub cluster_sets: Shared<ClusterSet>,
    /// Every SveltosCluster.
    pub sveltos_clusters: Shared<SveltosCluster>,
    /// The registered clusters of this process's scope, made once for every component.
    pub fleet: Fleet,
    /// When each source cluster's report last changed (the manager tells): the manager
    /// writes, and the deployer deploys, the freshest clusters' work first.
    pub fresh: Freshness,
}

impl Watches {
    /// Starts the watches (within a Tokio runtime); `capi` is the process's Cluster API watch
    /// and `scope` the clusters it handles.
    pub fn start(client: &Client, scope: ClusterScope, capi: CapiClusters) -> Self {
        let all = watcher::Config::default;
        let sveltos_clusters = Shared::<SveltosCluster>::start(client, all());
        let registry = Registry {
            sveltos: sveltos_clusters.store(),
            capi,
        };
        let fleet = Fleet::new(registry, scope).counting(sveltos_clusters.version());
        Watches {
            config_maps: Shared::start_as(client, all(), |c: ConfigMap| KeptConfigMap::from(c)),
            secrets: Shared::start(client, all()),
            profiles: Shared::start_as(client, all(), |p: ClusterProfile| KeptProfile::from(p)),
            cluster_sets: Shared::start(client, all()),
            sveltos_clusters,
            fleet,
            fresh: Freshness::default(),
        }
    }

    /// A stream that yields when a registered cluster (of either kind) changes: the
    /// SveltosCluster that did, or none for a Cluster API cluster (the watch does not say
    /// which).
    pub fn fleet_changes(&self) -> BoxStream<'static, Option<ClusterRef>> {
        let sveltos = self.sveltos_clusters.objects().map(|cluster| {
            Some(ClusterRef {
                namespace: cluster.metadata.namespace.clone().unwrap_or_default(),
                name: cluster.metadata.name.clone().unwrap_or_default(),
                cluster_type: api::v1beta1::ClusterType::Sveltos,
            })
        });
        let capi = self.fleet.registry.capi.changes().map(|()| None);
        futures_util::stream::select(sveltos, capi).boxed()
    }
}

/// When each source cluster's report last changed, since the process started (one entry per
/// cluster that had a report). Clones share it.
#[derive(Clone, Default)]
pub struct Freshness(Arc<Mutex<Changes>>);

/// See [`Freshness`].
#[derive(Default)]
struct Changes {
    by_cluster: HashMap<ClusterRef, Instant>,
    /// The last change of any cluster's report.
    latest: Option<Instant>,
    /// When the event of each generated profile the manager wrote was first seen.
    events: HashMap<String, Instant>,
    /// The count of `events` at which those older than [`KEEP_EVENTS`] are let go.
    prune_at: usize,
}

/// How long the event time of a written profile is kept: long enough for the deployer to
/// see the write.
const KEEP_EVENTS: Duration = Duration::from_secs(60);

impl Freshness {
    /// Notes that the report of `cluster` changed now.
    pub fn changed(&self, cluster: ClusterRef) {
        if let Ok(mut changes) = self.0.lock() {
            let now = Instant::now();
            changes.by_cluster.insert(cluster, now);
            changes.latest = Some(now);
        }
    }

    /// When the report of `cluster` last changed, if it did since the start.
    pub fn at(&self, cluster: &ClusterRef) -> Option<Instant> {
        self.0.lock().ok()?.by_cluster.get(cluster).copied()
    }

    /// Notes that the manager writes `profile`, made for an event first seen `at`.
    pub fn profile_event(&self, profile: &str, at: Instant) {
        let Ok(mut changes) = self.0.lock() else {
            return;
        };
        changes.events.insert(profile.to_owned(), at);
        if changes.events.len() > changes.prune_at.max(1024) {
            changes.events.retain(|_, at| at.elapsed() < KEEP_EVENTS);
            crate::room::give_back(&mut changes.events);
            changes.prune_at = 2 * changes.events.len();
        }
    }

    /// How fresh a pass over `profile` of source cluster `source` is: when the event it was
    /// written for was first seen, else when the cluster's report last changed.
    pub fn of_profile(&self, profile: &str, source: Option<&ClusterRef>) -> Option<Instant> {
        let changes = self.0.lock().ok()?;
        changes
            .events
            .get(profile)
            .or_else(|| changes.by_cluster.get(source?))
            .copied()
    }

    /// Whether some cluster's report changed after `moment`.
    pub fn since(&self, moment: Instant) -> bool {
        self.0
            .lock()
            .is_ok_and(|changes| changes.latest.is_some_and(|latest| latest > moment))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshness_tells_each_clusters_last_change_and_whether_any_came_since() {
        let fresh = Freshness::default();
        let cluster = |name: &str| ClusterRef {
            namespace: "fleet".into(),
            name: name.into(),
            cluster_type: api::v1beta1::ClusterType::Sveltos,
        };
        let start = Instant::now();
        assert!(!fresh.since(start));
        assert_eq!(fresh.at(&cluster("a")), None);
        std::thread::sleep(std::time::Duration::from_millis(2));
        fresh.changed(cluster("a"));
        assert!(fresh.since(start));
        let a = fresh.at(&cluster("a")).unwrap();
        assert!(!fresh.since(a));
        std::thread::sleep(std::time::Duration::from_millis(2));
        fresh.changed(cluster("b"));
        assert!(fresh.since(a));
        assert!(fresh.at(&cluster("b")) > Some(a));
    }

    #[test]
    fn a_profile_is_as_fresh_as_its_event_else_as_its_clusters_report() {
        let fresh = Freshness::default();
        let source = ClusterRef {
            namespace: "fleet".into(),
            name: "a".into(),
            cluster_type: api::v1beta1::ClusterType::Sveltos,
        };
        let event = Instant::now();
        assert_eq!(fresh.of_profile("p", Some(&source)), None);
        fresh.changed(source.clone());
        let report = fresh.at(&source);
        assert_eq!(fresh.of_profile("p", Some(&source)), report);
        assert_eq!(fresh.of_profile("p", None), None);
        fresh.profile_event("p", event);
        assert_eq!(fresh.of_profile("p", Some(&source)), Some(event));
        // Old event times go once there are many.
        let old = Instant::now() - KEEP_EVENTS;
        for n in 0..2000 {
            fresh.profile_event(&format!("old-{n}"), old);
        }
        assert_eq!(fresh.of_profile("old-1", None), None);
        assert_eq!(fresh.of_profile("p", None), Some(event));
    }
}
