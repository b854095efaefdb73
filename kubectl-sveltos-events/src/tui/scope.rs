//! What `tui -n NS` and `tui --cluster NS/NAME` keep: the rows of the clusters in a namespace,
//! or of one cluster. Definitions that belong to no cluster (EventSources, EventTriggers, an
//! Event about a whole trigger) stay; a row of another cluster goes.

use serde_json::Value;

use crate::chain::meta;
use api::labels::{CLUSTER_NAME_LABEL, CLUSTER_NAMESPACE_LABEL};

/// The managed clusters whose rows the TUI shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Only clusters in this namespace (every namespaced kind is watched there alone).
    namespace: Option<String>,
    /// Only the cluster of this name (in `namespace`).
    cluster: Option<String>,
}

/// A prefix of the Events' notes that name a cluster: `cluster NS/NAME: why`.
const EVENT_CLUSTER_PREFIX: &str = "cluster ";

impl Scope {
    /// Every cluster.
    pub fn everything() -> Self {
        Scope::default()
    }

    /// The clusters of `-n NS` and `--cluster NS/NAME`; refuses a cluster outside that
    /// namespace (it would show nothing).
    pub fn new(namespace: Option<String>, cluster: Option<&str>) -> anyhow::Result<Self> {
        let Some(cluster) = cluster else {
            return Ok(Scope {
                namespace,
                cluster: None,
            });
        };
        let (cluster_namespace, name) = cluster
            .split_once('/')
            .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains('/'))
            .ok_or_else(|| anyhow::anyhow!("--cluster {cluster:?} is not NAMESPACE/NAME"))?;
        if let Some(namespace) = namespace.as_deref()
            && namespace != cluster_namespace
        {
            anyhow::bail!(
                "--cluster {cluster} is in namespace {cluster_namespace}, not in {namespace} (-n)"
            );
        }
        Ok(Scope {
            namespace: Some(cluster_namespace.to_owned()),
            cluster: Some(name.to_owned()),
        })
    }

    /// The namespace namespaced kinds are watched in (`None`: all of them).
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// What the header says of the scope (`None` for every cluster).
    pub fn describe(&self) -> Option<String> {
        match (&self.namespace, &self.cluster) {
            (Some(ns), Some(name)) => Some(format!("cluster {ns}/{name}")),
            (Some(ns), None) => Some(format!("namespace {ns}")),
            _ => None,
        }
    }

    /// Whether the scope is every cluster.
    pub fn is_everything(&self) -> bool {
        self.namespace.is_none()
    }

    /// Whether the cluster `namespace/name` is in the scope.
    pub fn holds(&self, namespace: &str, name: &str) -> bool {
        self.namespace.as_deref().is_none_or(|ns| ns == namespace)
            && self.cluster.as_deref().is_none_or(|c| c == name)
    }

    /// Whether `object` of `kind` is kept. A ClusterProfile belongs to the cluster its event
    /// came from and to those it deploys in: `deploys_in_scope` says the latter (from its
    /// ClusterSummaries).
    pub fn keeps(&self, kind: &str, object: &Value, deploys_in_scope: impl Fn() -> bool) -> bool {
        if self.is_everything() {
            return true;
        }
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        match kind {
            "SveltosCluster" | "Cluster" => self.holds(
                &text(&object["metadata"]["namespace"]),
                &text(&object["metadata"]["name"]),
            ),
            "EventReport" | "ClusterSummary" | "ClusterReport" => self.holds(
                &text(&object["spec"]["clusterNamespace"]),
                &text(&object["spec"]["clusterName"]),
            ),
            "ClusterProfile" => {
                let source = meta(object, "labels", CLUSTER_NAME_LABEL);
                (!source.is_empty()
                    && self.holds(meta(object, "labels", CLUSTER_NAMESPACE_LABEL), source))
                    || deploys_in_scope()
            }
            "Event" => match event_cluster(object) {
                Some((namespace, name)) => self.holds(namespace, name),
                None => true,
            },
            _ => true,
        }
    }
}

/// The cluster an Event's note names (`cluster NS/NAME: ...`), if any.
fn event_cluster(event: &Value) -> Option<(&str, &str)> {
    let message = event["message"].as_str()?;
    let (cluster, _) = message
        .strip_prefix(EVENT_CLUSTER_PREFIX)?
        .split_once(": ")?;
    cluster.split_once('/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(namespace: &str, name: &str) -> Value {
        json!({"metadata": {"namespace": namespace, "name": name}})
    }

    fn summary(namespace: &str, name: &str) -> Value {
        json!({"metadata": {"namespace": namespace, "name": "s"},
               "spec": {"clusterNamespace": namespace, "clusterName": name}})
    }

    #[test]
    fn a_cluster_keeps_its_own_rows_and_those_of_no_cluster() {
        let scope = Scope::new(None, Some("team-a/c1")).expect("a valid cluster");
        let never = || false;
        assert!(scope.keeps("SveltosCluster", &cluster("team-a", "c1"), never));
        assert!(!scope.keeps("SveltosCluster", &cluster("team-a", "c2"), never));
        assert!(!scope.keeps("Cluster", &cluster("team-b", "c1"), never));
        assert!(scope.keeps("ClusterSummary", &summary("team-a", "c1"), never));
        assert!(!scope.keeps("EventReport", &summary("team-a", "c2"), never));
        assert!(scope.keeps("EventTrigger", &json!({"metadata": {"name": "t"}}), never));
        let event = |message: &str| json!({"message": message});
        assert!(scope.keeps("Event", &event("cluster team-a/c1: Lua failed"), never));
        assert!(!scope.keeps("Event", &event("cluster team-a/c2: Lua failed"), never));
        assert!(scope.keeps("Event", &event("every cluster matches"), never));
    }

    #[test]
    fn a_profile_is_kept_for_its_source_cluster_or_its_destinations() {
        let scope = Scope::new(None, Some("team-a/c1")).expect("a valid cluster");
        let generated = |namespace: &str, name: &str| {
            json!({"metadata": {"name": "p", "labels": {
                CLUSTER_NAMESPACE_LABEL: namespace, CLUSTER_NAME_LABEL: name}}})
        };
        assert!(scope.keeps("ClusterProfile", &generated("team-a", "c1"), || false));
        assert!(!scope.keeps("ClusterProfile", &generated("team-a", "c2"), || false));
        assert!(scope.keeps("ClusterProfile", &generated("team-a", "c2"), || true));
        let by_hand = json!({"metadata": {"name": "p"}});
        assert!(!scope.keeps("ClusterProfile", &by_hand, || false));
        assert!(scope.keeps("ClusterProfile", &by_hand, || true));
    }

    #[test]
    fn a_namespace_keeps_every_cluster_in_it() {
        let scope = Scope::new(Some("team-a".into()), None).expect("a namespace");
        assert!(scope.keeps("SveltosCluster", &cluster("team-a", "c9"), || false));
        assert!(!scope.keeps("SveltosCluster", &cluster("team-b", "c1"), || false));
        assert_eq!(scope.describe().as_deref(), Some("namespace team-a"));
        assert_eq!(scope.namespace(), Some("team-a"));
        assert!(Scope::everything().keeps("SveltosCluster", &cluster("x", "y"), || false));
    }

    #[test]
    fn a_malformed_or_contradicting_cluster_is_refused_in_words() {
        for bad in ["c1", "/c1", "team-a/", "a/b/c"] {
            let error = Scope::new(None, Some(bad)).expect_err("not NAMESPACE/NAME");
            assert!(
                error.to_string().contains("is not NAMESPACE/NAME"),
                "{error}"
            );
        }
        let error = Scope::new(Some("team-b".into()), Some("team-a/c1")).expect_err("contradicts");
        assert_eq!(
            error.to_string(),
            "--cluster team-a/c1 is in namespace team-a, not in team-b (-n)"
        );
        let same = Scope::new(Some("team-a".into()), Some("team-a/c1")).expect("agrees");
        assert_eq!(same.describe().as_deref(), Some("cluster team-a/c1"));
    }
}
