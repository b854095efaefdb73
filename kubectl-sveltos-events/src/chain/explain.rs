//! `explain`: upward from a deployed object (or a ClusterProfile) to the event that caused
//! it: the ClusterSummary that deployed it, the ClusterProfile and the ConfigMap/Secret it came
//! from, the EventTrigger that generated the profile, the EventReport, its EventSource, and
//! the resource in the source cluster, checked live.

use api::labels::{
    CLUSTER_NAME_LABEL, CLUSTER_NAMESPACE_LABEL, CLUSTER_TYPE_LABEL, EVENT_SOURCE_LABEL,
    EVENT_TRIGGER_NAME_LABEL, OWNER_KIND_ANNOTATION, OWNER_NAME_ANNOTATION,
    REFERENCE_KIND_ANNOTATION, REFERENCE_NAME_ANNOTATION, REFERENCE_NAME_LABEL,
    REFERENCE_NAMESPACE_ANNOTATION, REFERENCE_NAMESPACE_LABEL, RESOURCE_NAME_LABEL,
    RESOURCE_NAMESPACE_LABEL,
};
use controller::manager::conditions::count;
use serde_json::Value;

use super::fleet::Fleet;
use super::{Health, MANAGEMENT, Node, Target, meta, spec_cluster};

/// Explains `target`: from it up to its cause.
pub async fn explain(fleet: &mut Fleet, target: Target<'_>) -> anyhow::Result<Node> {
    let Target { cluster, name, .. } = target;
    let (kind, found) = target.fetch(fleet).await?;
    if cluster == MANAGEMENT && matches!(kind.as_str(), "EventTrigger" | "EventSource") {
        anyhow::bail!(
            "explain walks up from an add-on, a ClusterProfile or an EventReport to its cause; \
             `trace {}/{name}` walks down from an {kind}",
            target.kind
        );
    }
    let object = match found {
        Ok(object) => object,
        Err(missing) => return Ok(missing),
    };
    if cluster == MANAGEMENT {
        match kind.as_str() {
            "ClusterProfile" => return profile_node(fleet, &object, None).await,
            "EventReport" => return report_up(fleet, &object).await,
            _ => {}
        }
    }
    let node = Node::of(&kind, &object, cluster);
    let owner = meta(&object, "annotations", OWNER_NAME_ANNOTATION);
    if owner.is_empty() {
        return Ok(node.health(Health::Broken).saying(format!(
            "not deployed by Sveltos: it carries no {OWNER_NAME_ANNOTATION} annotation"
        )));
    }
    let reference = format!(
        "{} {}/{}",
        meta(&object, "annotations", REFERENCE_KIND_ANNOTATION),
        meta(&object, "annotations", REFERENCE_NAMESPACE_ANNOTATION),
        meta(&object, "annotations", REFERENCE_NAME_ANNOTATION)
    );
    let owner_kind = meta(&object, "annotations", OWNER_KIND_ANNOTATION);
    let node = node.saying(format!("deployed by {owner_kind} {owner} from {reference}"));
    let summary = summary(fleet, owner, cluster).await?;
    let upward = profile(fleet, owner, Some(&object)).await?;
    Ok(node.with(summary.with(upward)))
}

/// The ClusterSummary of `profile` in `cluster` (a managed cluster's `namespace/name`).
async fn summary(fleet: &mut Fleet, profile: &str, cluster: &str) -> anyhow::Result<Node> {
    let Some((namespace, name)) = cluster.split_once('/') else {
        return Ok(Node::missing(
            "ClusterSummary",
            profile,
            MANAGEMENT,
            "deployed in the management cluster (deploymentType Local)",
        )
        .health(Health::Ok));
    };
    let cluster_type = fleet.cluster_type(cluster).await?;
    let summary_name = api::v1beta1::cluster_summary_name(profile, name, cluster_type);
    let Some(summary) = fleet
        .sveltos("ClusterSummary", Some(namespace), &summary_name)
        .await?
    else {
        return Ok(Node::missing(
            "ClusterSummary",
            &format!("{namespace}/{summary_name}"),
            MANAGEMENT,
            format!(
                "there is none: ClusterProfile {profile} no longer deploys to cluster {cluster}, \
                 so this object is left over"
            ),
        ));
    };
    Ok(summary_node(&summary))
}

/// A ClusterSummary's node: how its features went.
pub fn summary_node(summary: &Value) -> Node {
    let node = Node::of("ClusterSummary", summary, MANAGEMENT);
    let features = summary["status"]["featureSummaries"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if features.is_empty() {
        return node.health(Health::Progressing).saying("not deployed yet");
    }
    let mut health = Health::Ok;
    let mut words = Vec::new();
    for feature in &features {
        let status = feature["status"].as_str().unwrap_or("Unknown");
        let id = feature["featureID"].as_str().unwrap_or("Resources");
        match status {
            "Provisioned" => {}
            "Provisioning" | "Removing" => health = health.max_with(Health::Progressing),
            _ => health = Health::Broken,
        }
        match feature["failureMessage"].as_str() {
            Some(failure) => words.push(format!("{id} {status}: {failure}")),
            None => words.push(format!("{id} {status}")),
        }
    }
    node.health(health).saying(words.join("; "))
}

impl Health {
    fn max_with(self, other: Health) -> Health {
        match (self, other) {
            (Health::Broken, _) | (_, Health::Broken) => Health::Broken,
            (Health::Progressing, _) | (_, Health::Progressing) => Health::Progressing,
            _ => Health::Ok,
        }
    }
}

/// The ClusterProfile `name` and what it came from; `deployed` is the object it deployed,
/// whose reference annotations name the ConfigMap/Secret.
async fn profile(fleet: &mut Fleet, name: &str, deployed: Option<&Value>) -> anyhow::Result<Node> {
    match fleet.sveltos("ClusterProfile", None, name).await? {
        Some(profile) => profile_node(fleet, &profile, deployed).await,
        None => Ok(Node::missing(
            "ClusterProfile",
            name,
            MANAGEMENT,
            "it is gone, so what it deployed is left over",
        )),
    }
}

/// A ClusterProfile's node, with the ConfigMap/Secret `deployed` came from and, for a
/// generated profile, the trigger, report and event upward of it.
async fn profile_node(
    fleet: &mut Fleet,
    profile: &Value,
    deployed: Option<&Value>,
) -> anyhow::Result<Node> {
    let mut node = Node::of("ClusterProfile", profile, MANAGEMENT);
    if let Some(object) = deployed {
        node = node.with(reference(fleet, object).await?);
    }
    let trigger = meta(profile, "labels", EVENT_TRIGGER_NAME_LABEL);
    if trigger.is_empty() {
        return Ok(node.saying("written by hand: no EventTrigger generated it"));
    }
    let source_cluster = format!(
        "{}/{}",
        meta(profile, "labels", CLUSTER_NAMESPACE_LABEL),
        meta(profile, "labels", CLUSTER_NAME_LABEL)
    );
    let resource = match meta(profile, "labels", RESOURCE_NAME_LABEL) {
        "" => "all the resources its EventReport lists".to_owned(),
        resource => match meta(profile, "labels", RESOURCE_NAMESPACE_LABEL) {
            "" => resource.to_owned(),
            ns => format!("{ns}/{resource}"),
        },
    };
    let node = node.saying(format!(
        "generated by EventTrigger {trigger} for {resource} in cluster {source_cluster}"
    ));
    Ok(node.with(trigger_node(fleet, trigger, profile, &source_cluster).await?))
}

/// The ConfigMap/Secret a deployed object came from.
async fn reference(fleet: &mut Fleet, object: &Value) -> anyhow::Result<Node> {
    let kind = meta(object, "annotations", REFERENCE_KIND_ANNOTATION);
    let namespace = meta(object, "annotations", REFERENCE_NAMESPACE_ANNOTATION);
    let name = meta(object, "annotations", REFERENCE_NAME_ANNOTATION);
    let kind = if kind == "Secret" {
        "Secret"
    } else {
        "ConfigMap"
    };
    let Some(found) = fleet.sveltos(kind, Some(namespace), name).await? else {
        return Ok(Node::missing(
            kind,
            &format!("{namespace}/{name}"),
            MANAGEMENT,
            "it is gone: the profile cannot deploy it again",
        ));
    };
    let node = Node::of(kind, &found, MANAGEMENT);
    Ok(match meta(&found, "labels", REFERENCE_NAME_LABEL) {
        "" => node.saying("the add-on's content, as written"),
        template => node.saying(format!(
            "instantiated from {kind} {}/{template}",
            meta(&found, "labels", REFERENCE_NAMESPACE_LABEL)
        )),
    })
}

/// The EventTrigger that generated `profile`, with the report and source upward of it.
async fn trigger_node(
    fleet: &mut Fleet,
    trigger: &str,
    profile: &Value,
    source_cluster: &str,
) -> anyhow::Result<Node> {
    let Some(found) = fleet.sveltos("EventTrigger", None, trigger).await? else {
        return Ok(Node::missing(
            "EventTrigger",
            trigger,
            MANAGEMENT,
            "it is gone: the manager should withdraw its profiles",
        ));
    };
    let source = match meta(profile, "labels", EVENT_SOURCE_LABEL) {
        "" => found["spec"]["eventSourceName"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        source => source.to_owned(),
    };
    let node = Node::of("EventTrigger", &found, MANAGEMENT)
        .saying(format!("consumes EventSource {source}"))
        .judged(&found);
    let cluster_type = meta(profile, "labels", CLUSTER_TYPE_LABEL);
    Ok(node.with(report_node(fleet, &source, source_cluster, cluster_type, profile).await?))
}

/// The EventReport of `source` for `cluster`, the EventSource and the resource itself.
async fn report_node(
    fleet: &mut Fleet,
    source: &str,
    cluster: &str,
    cluster_type: &str,
    profile: &Value,
) -> anyhow::Result<Node> {
    let (namespace, cluster_name) = cluster.split_once('/').unwrap_or(("", cluster));
    let kind = if cluster_type.eq_ignore_ascii_case("capi") {
        api::v1beta1::ClusterType::Capi
    } else {
        api::v1beta1::ClusterType::Sveltos
    };
    let name = api::v1beta1::event_report_name(source, cluster_name, kind);
    let Some(report) = fleet.sveltos("EventReport", Some(namespace), &name).await? else {
        return Ok(Node::missing(
            "EventReport",
            &format!("{namespace}/{name}"),
            MANAGEMENT,
            format!(
                "there is none: the agent reports no match of EventSource {source} in cluster {cluster}"
            ),
        ));
    };
    let matching = report["spec"]["matchingResources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let node = Node::of("EventReport", &report, MANAGEMENT)
        .saying(format!(
            "lists {}",
            count(matching.len(), "matching resource")
        ))
        .judged(&report);
    let resource_name = meta(profile, "labels", RESOURCE_NAME_LABEL);
    let selects = if resource_name.is_empty() {
        "selects the resources"
    } else {
        "selects the resource"
    };
    let source_node = match fleet.sveltos("EventSource", None, source).await? {
        Some(found) => Node::of("EventSource", &found, MANAGEMENT)
            .saying(selects)
            .judged(&found),
        None => Node::missing("EventSource", source, MANAGEMENT, "it is gone"),
    };
    let node = node.with(source_node);
    if resource_name.is_empty() {
        // One profile for all the events: each resource the report lists is the event.
        return Ok(listed_live(fleet, node, &matching, cluster, Some(MAX_LISTED)).await);
    }
    let resource_namespace = meta(profile, "labels", RESOURCE_NAMESPACE_LABEL);
    let listed = matching.iter().find(|r| {
        r["name"] == resource_name
            && r["namespace"].as_str().unwrap_or_default() == resource_namespace
    });
    let shown = if resource_namespace.is_empty() {
        resource_name.to_owned()
    } else {
        format!("{resource_namespace}/{resource_name}")
    };
    let Some(listed) = listed else {
        return Ok(node.with(Node::missing(
            "resource",
            &shown,
            cluster,
            "the report no longer lists it: the manager should withdraw the profile",
        )));
    };
    Ok(node.with(live(fleet, listed, cluster, &shown).await))
}

/// An EventReport, its EventSource and every resource it lists, read live.
async fn report_up(fleet: &mut Fleet, report: &Value) -> anyhow::Result<Node> {
    let source = report["spec"]["eventSourceName"]
        .as_str()
        .unwrap_or_default();
    let cluster = spec_cluster(report);
    let matching = report["spec"]["matchingResources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut node = Node::of("EventReport", report, MANAGEMENT)
        .saying(format!(
            "EventSource {source} matches {} in cluster {cluster}",
            count(matching.len(), "resource")
        ))
        .judged(report);
    node = node.with(match fleet.sveltos("EventSource", None, source).await? {
        Some(found) => Node::of("EventSource", &found, MANAGEMENT).judged(&found),
        None => Node::missing("EventSource", source, MANAGEMENT, "it is gone"),
    });
    Ok(listed_live(fleet, node, &matching, &cluster, None).await)
}

/// How many of an aggregated event's resources `explain` reads live.
const MAX_LISTED: usize = 20;

/// `node` with the resources a report lists (at most `limit`, and a line for the rest), each
/// read live in `cluster`.
async fn listed_live(
    fleet: &mut Fleet,
    mut node: Node,
    matching: &[Value],
    cluster: &str,
    limit: Option<usize>,
) -> Node {
    let limit = limit.unwrap_or(usize::MAX);
    for listed in matching.iter().take(limit) {
        let shown = super::reference_name(listed);
        node = node.with(live(fleet, listed, cluster, &shown).await);
    }
    if matching.len() > limit {
        let more = matching.len() - limit;
        node = node.with(
            Node::missing(
                "resources",
                "...",
                cluster,
                format!(
                    "and {} more: `trace eventreport/NAME -n NAMESPACE` lists them all",
                    count(more, "resource")
                ),
            )
            .health(Health::Ok),
        );
    }
    node
}

/// The resource a report lists, read live in its cluster.
pub async fn live(fleet: &mut Fleet, listed: &Value, cluster: &str, shown: &str) -> Node {
    let kind = listed["kind"].as_str().unwrap_or("resource");
    let api_version = listed["apiVersion"].as_str().unwrap_or("v1");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let entry = format!("{kind}.{version}.{group}");
    let namespace = listed["namespace"].as_str().filter(|n| !n.is_empty());
    let name = listed["name"].as_str().unwrap_or_default();
    let found = match fleet.resolve_gvk(cluster, &entry).await {
        Ok(resource) => fleet.get(cluster, &resource, namespace, name).await,
        Err(e) => Err(e),
    };
    match found {
        Ok(Some(object)) => Node::of(kind, &object, cluster).saying("the event: still there"),
        Ok(None) => Node::missing(
            kind,
            shown,
            cluster,
            "gone from the cluster; the report still lists it",
        ),
        Err(e) => Node::missing(kind, shown, cluster, format!("cannot be read: {e:#}")),
    }
}
