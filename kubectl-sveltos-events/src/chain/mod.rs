//! The chain between an event and an add-on, read from the links Sveltos writes on the objects
//! themselves (labels and annotations, sveltos-spec section 8): source resource -> EventSource
//! -> EventReport -> EventTrigger -> ClusterProfile (and its instantiated ConfigMap/Secret) ->
//! ClusterSummary -> deployed object. `explain` walks it upward from a deployed object or a
//! ClusterProfile, `trace` downward from a resource of a managed cluster. Read-only: every
//! object is read by name or label selector.

pub mod addons;
pub mod cli;
pub mod dryrun;
pub mod explain;
pub mod fleet;
pub mod render;
pub mod trace;
pub mod usage;

use serde::Serialize;
use serde_json::Value;

/// One object of the chain and how its link holds.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    /// Its kind (`NetworkPolicy`, `ClusterProfile`, ...).
    pub kind: String,
    /// `namespace/name`, or `name` for a cluster-scoped object.
    pub name: String,
    /// Where it lives: `management` or the managed cluster's `namespace/name`.
    pub cluster: String,
    /// Whether this link holds.
    pub health: Health,
    /// When the object was created (RFC 3339), when it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// What this link says, in words (why it is broken, when it is).
    pub message: String,
    /// The next links (causes, upward; effects, downward).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
}

/// What `explain` and `trace` start from: `kind`/`name` (in `namespace`) in `cluster`.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// `management` or a managed cluster's `namespace/name`.
    pub cluster: &'a str,
    /// The kind as the user typed it.
    pub kind: &'a str,
    /// Its namespace, for a namespaced kind.
    pub namespace: Option<&'a str>,
    /// Its name.
    pub name: &'a str,
}

impl Target<'_> {
    /// The target's kind (as the cluster names it) and the object, or the broken link that
    /// says it is not there.
    pub async fn fetch(
        &self,
        fleet: &mut fleet::Fleet,
    ) -> anyhow::Result<(String, Result<Value, Node>)> {
        let resource = fleet.resolve(self.cluster, self.kind).await?;
        let kind = resource.0.kind.clone();
        let found = fleet
            .get(self.cluster, &resource, self.namespace, self.name)
            .await?;
        Ok(match found {
            Some(object) => (kind, Ok(object)),
            None => {
                let shown = self
                    .namespace
                    .map_or(self.name.to_owned(), |ns| format!("{ns}/{}", self.name));
                let reason = format!("not found in cluster {}", self.cluster);
                let missing = Node::missing(&kind, &shown, self.cluster, reason);
                (kind, Err(missing))
            }
        })
    }
}

/// Whether a link of the chain holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// It holds.
    Ok,
    /// It holds but is not done (deploying, withdrawing).
    Progressing,
    /// It is broken: the message says why.
    Broken,
}

/// The management cluster, as [`Node::cluster`] names it.
pub const MANAGEMENT: &str = "management";

impl Node {
    /// A node for `object` (its kind from `kind`, since lists drop it), in `cluster`.
    pub fn of(kind: &str, object: &Value, cluster: &str) -> Node {
        let meta = &object["metadata"];
        let name = meta["name"].as_str().unwrap_or_default();
        let name = match meta["namespace"].as_str() {
            Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
            _ => name.to_owned(),
        };
        Node {
            kind: kind.to_owned(),
            name,
            cluster: cluster.to_owned(),
            health: Health::Ok,
            created: meta["creationTimestamp"].as_str().map(str::to_owned),
            message: String::new(),
            children: Vec::new(),
        }
    }

    /// A link that is not there: `kind name` in `cluster`, broken, for `reason`.
    pub fn missing(kind: &str, name: &str, cluster: &str, reason: impl Into<String>) -> Node {
        Node {
            kind: kind.to_owned(),
            name: name.to_owned(),
            cluster: cluster.to_owned(),
            health: Health::Broken,
            created: None,
            message: reason.into(),
            children: Vec::new(),
        }
    }

    /// Sets the message.
    pub fn saying(mut self, message: impl Into<String>) -> Node {
        self.message = message.into();
        self
    }

    /// Sets the health.
    pub fn health(mut self, health: Health) -> Node {
        self.health = health;
        self
    }

    /// Adds a child.
    pub fn with(mut self, child: Node) -> Node {
        self.children.push(child);
        self
    }

    /// Broken, saying why, when one of `object`'s conditions does not hold (`Ready`, else
    /// an EventReport's `Evaluated` or `Processed`): what the controllers recorded.
    pub fn judged(self, object: &Value) -> Node {
        match failing_condition(object) {
            Some(message) => self.health(Health::Broken).saying(message),
            None => self,
        }
    }

    /// Whether every link of the tree holds (none broken).
    pub fn whole(&self) -> bool {
        self.health != Health::Broken && self.children.iter().all(Node::whole)
    }
}

/// The message of the first condition of `object` that is false, among `Ready`,
/// `Evaluated` and `Processed`.
pub fn failing_condition(object: &Value) -> Option<String> {
    let conditions = object["status"]["conditions"].as_array()?;
    ["Ready", "Evaluated", "Processed"]
        .iter()
        .find_map(|wanted| {
            conditions
                .iter()
                .find(|c| c["type"] == *wanted && c["status"] == "False")
                .map(|c| c["message"].as_str().unwrap_or_default().to_owned())
        })
}

/// The cluster an EventReport's or ClusterSummary's spec names, as `namespace/name`.
pub fn spec_cluster(object: &Value) -> String {
    let spec = &object["spec"];
    let text = |field: &str| spec[field].as_str().unwrap_or_default();
    format!("{}/{}", text("clusterNamespace"), text("clusterName"))
}

/// `namespace/name` (or `name`) of a reference that carries `namespace` and `name` fields
/// (a report's matching resource, an Event's involved object, a ClusterReport's resource).
pub fn reference_name(reference: &Value) -> String {
    let name = reference["name"].as_str().unwrap_or_default();
    match reference["namespace"].as_str().filter(|n| !n.is_empty()) {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

/// Every entry of a ClusterReport's status: what a DryRun deployment would do to each object
/// of its policies, Kustomize and Helm features.
pub fn dry_run_entries(report: &Value) -> impl Iterator<Item = &Value> {
    [
        "resourceReports",
        "kustomizeResourceReports",
        "helmResourceReports",
    ]
    .into_iter()
    .flat_map(|field| report["status"][field].as_array().into_iter().flatten())
}

/// An object's label or annotation `key` (empty when absent).
pub fn meta<'a>(object: &'a Value, field: &str, key: &str) -> &'a str {
    object["metadata"][field][key].as_str().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tree_is_whole_only_when_no_link_is_broken() {
        let object = json!({"metadata": {"name": "a", "namespace": "ns"}});
        let ok = Node::of("ConfigMap", &object, MANAGEMENT);
        assert_eq!(ok.name, "ns/a");
        assert!(ok.clone().with(ok.clone()).whole());
        let broken = ok
            .clone()
            .with(Node::missing("EventReport", "x", MANAGEMENT, "gone"));
        assert!(!ok.with(broken).whole());
    }
}
