//! `trace`: downward from a resource of a managed cluster to what it caused: the EventReports
//! that list it, the EventTriggers consuming them, the ClusterProfiles generated for it, their
//! ClusterSummaries in each destination cluster, and the objects deployed there, read live.
//! From an EventSource, EventTrigger or ClusterProfile, the same from that link down.

use api::labels::{
    CLUSTER_NAME_LABEL, CLUSTER_NAMESPACE_LABEL, CLUSTER_PROFILE_NAME_LABEL,
    EVENT_REPORT_CLUSTER_NAME_LABEL, EVENT_SOURCE_NAME_LABEL, EVENT_TRIGGER_NAME_LABEL,
    PROFILE_PAUSED_ANNOTATION, RESOURCE_NAME_LABEL, RESOURCE_NAMESPACE_LABEL,
};
use controller::manager::conditions::count;
use serde_json::Value;

use super::explain::summary_node;
use super::fleet::{Fleet, Registered};
use api::v1beta1::ClusterType;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::{Health, MANAGEMENT, Node, Target, failing_condition, meta, spec_cluster};

/// Traces `target`: from it down to what it caused.
pub async fn trace(fleet: &mut Fleet, target: Target<'_>) -> anyhow::Result<Node> {
    let Target {
        cluster,
        namespace,
        name,
        ..
    } = target;
    let (kind, found) = target.fetch(fleet).await?;
    let object = match found {
        Ok(object) => object,
        Err(missing) => return Ok(missing),
    };
    if cluster == MANAGEMENT {
        return match kind.as_str() {
            "ClusterProfile" => profile_down(fleet, &object).await,
            "EventTrigger" => trigger_all(fleet, &object).await,
            "EventSource" => source_down(fleet, &object).await,
            other => anyhow::bail!(
                "trace starts from a resource of a managed cluster (--cluster NS/NAME) or from \
                 an EventSource, EventTrigger or ClusterProfile, not a {other}"
            ),
        };
    }
    let mut node = Node::of(&kind, &object, cluster);
    let (cluster_namespace, cluster_name) = cluster.split_once('/').ok_or_else(|| {
        anyhow::anyhow!("--cluster must be a registered cluster's namespace/name")
    })?;
    let reports = fleet
        .sveltos_list(
            "EventReport",
            Some(cluster_namespace),
            &format!("{EVENT_REPORT_CLUSTER_NAME_LABEL}={cluster_name}"),
        )
        .await?;
    let object_namespace = namespace.unwrap_or_default();
    // A SveltosCluster and a Cluster API Cluster may share a namespace and a name.
    let cluster_type = fleet.cluster_type(cluster).await?;
    let listing: Vec<&Value> = reports
        .iter()
        .filter(|report| {
            let of_type = report["spec"]["clusterType"]
                .as_str()
                .and_then(ClusterType::parse)
                .unwrap_or_default();
            of_type == cluster_type
        })
        .filter(|report| {
            report["spec"]["matchingResources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| {
                    r["kind"] == kind.as_str()
                        && r["name"] == name
                        && r["namespace"].as_str().unwrap_or_default() == object_namespace
                })
        })
        .collect();
    if listing.is_empty() {
        let verdicts = why_not(fleet, &object, cluster).await?;
        let reason = if verdicts.is_empty() {
            format!("no EventReport of cluster {cluster} lists it: no EventSource selects {kind}")
        } else {
            format!(
                "no EventReport of cluster {cluster} lists it; each EventSource, evaluated now:"
            )
        };
        let mut node = node.health(Health::Broken).saying(reason);
        for verdict in verdicts {
            node = node.with(verdict);
        }
        return Ok(node);
    }
    node = node.saying(format!("listed by {}", count(listing.len(), "EventReport")));
    let triggers = fleet.sveltos_list("EventTrigger", None, "").await?;
    for report in listing {
        let source = report["spec"]["eventSourceName"]
            .as_str()
            .unwrap_or_default();
        let mut report_node = Node::of("EventReport", report, MANAGEMENT)
            .saying(format!("EventSource {source} selects it"))
            .judged(report);
        let consumers: Vec<&Value> = triggers
            .iter()
            .filter(|t| t["spec"]["eventSourceName"] == source)
            .collect();
        if consumers.is_empty() {
            report_node = report_node.with(Node::missing(
                "EventTrigger",
                "-",
                MANAGEMENT,
                format!("no EventTrigger consumes EventSource {source}"),
            ));
        }
        for trigger in consumers {
            let trigger_node =
                trigger_down(fleet, trigger, cluster, Some((object_namespace, name))).await?;
            report_node = report_node.with(trigger_node);
        }
        node = node.with(report_node);
    }
    Ok(node)
}

/// An EventSource, the reports of every cluster where it matches, and what they caused.
async fn source_down(fleet: &mut Fleet, source: &Value) -> anyhow::Result<Node> {
    let name = source["metadata"]["name"].as_str().unwrap_or_default();
    let reports = fleet
        .sveltos_list(
            "EventReport",
            None,
            &format!("{EVENT_SOURCE_NAME_LABEL}={name}"),
        )
        .await?;
    let triggers = fleet.sveltos_list("EventTrigger", None, "").await?;
    let consumers: Vec<&Value> = triggers
        .iter()
        .filter(|t| t["spec"]["eventSourceName"] == name)
        .collect();
    let mut node = Node::of("EventSource", source, MANAGEMENT)
        .saying(format!(
            "matches in {} clusters; consumed by {} EventTriggers",
            reports.len(),
            consumers.len()
        ))
        .judged(source);
    if consumers.is_empty() {
        node = node.with(Node::missing(
            "EventTrigger",
            "-",
            MANAGEMENT,
            format!("no EventTrigger consumes EventSource {name}: its events cause nothing"),
        ));
    }
    for report in &reports {
        let cluster = spec_cluster(report);
        let matching = report["spec"]["matchingResources"]
            .as_array()
            .map_or(0, Vec::len);
        let mut report_node = Node::of("EventReport", report, MANAGEMENT)
            .saying(format!(
                "{} in cluster {cluster}",
                count(matching, "matching resource")
            ))
            .judged(report);
        for trigger in &consumers {
            report_node = report_node.with(trigger_down(fleet, trigger, &cluster, None).await?);
        }
        node = node.with(report_node);
    }
    Ok(node)
}

/// An EventTrigger and every ClusterProfile it generated, in every source cluster.
async fn trigger_all(fleet: &mut Fleet, trigger: &Value) -> anyhow::Result<Node> {
    let name = trigger["metadata"]["name"].as_str().unwrap_or_default();
    let profiles = fleet
        .sveltos_list(
            "ClusterProfile",
            None,
            &format!("{EVENT_TRIGGER_NAME_LABEL}={name}"),
        )
        .await?;
    let mut node = Node::of("EventTrigger", trigger, MANAGEMENT);
    if profiles.is_empty() {
        let node = node.health(Health::Broken).saying(
            "generated no ClusterProfile: no EventReport of a cluster its sourceClusterSelector \
             matches lists anything yet (trace its EventSource to see where it matches)",
        );
        return Ok(node.judged(trigger));
    }
    node = node
        .saying(format!(
            "generated {}",
            count(profiles.len(), "ClusterProfile")
        ))
        .judged(trigger);
    for profile in &profiles {
        node = node.with(profile_down(fleet, profile).await?);
    }
    Ok(node)
}

/// Every EventSource that selects `object`'s kind, evaluated now on it with the agent's own
/// evaluator: why it does not match (a selector, or the script's verdict and message), or
/// that it does and the agent has not reported it yet.
async fn why_not(fleet: &mut Fleet, object: &Value, cluster: &str) -> anyhow::Result<Vec<Node>> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let sources = fleet.sveltos_list("EventSource", None, "").await?;
    let runtime = agent::runtime::LuaRuntime::new(agent::runtime::Limits::default())
        .map_err(|e| anyhow::anyhow!("starting Lua: {e}"))?;
    let mut nodes = Vec::new();
    for found in &sources {
        let source: api::v1beta1::EventSource = match serde_json::from_value(found.clone()) {
            Ok(source) => source,
            Err(_) => continue,
        };
        if !source
            .spec
            .resource_selectors
            .iter()
            .any(|s| s.kind == kind)
        {
            continue;
        }
        let node = Node::of("EventSource", found, MANAGEMENT);
        let evaluated =
            agent::evaluate::evaluate_event_source(&runtime, &source, std::slice::from_ref(object));
        let matching =
            matches!(&evaluated, Ok(e) if e.outcomes.first().is_some_and(|o| o.matching));
        if matching {
            let name = found["metadata"]["name"].as_str().unwrap_or_default();
            nodes.push(match unwatched(fleet, name, cluster).await? {
                None => node.health(Health::Progressing).saying(
                    "matches it now; the agent is asked to evaluate it in this cluster and has \
                     not reported it yet",
                ),
                Some(why) => node
                    .health(Health::Broken)
                    .saying(format!("matches it now, but {why}")),
            });
            continue;
        }
        nodes.push(match evaluated {
            Ok(evaluation) => match evaluation.outcomes.first() {
                Some(outcome) if outcome.selected => node.health(Health::Broken).saying(format!(
                    "its script says no{}",
                    if outcome.message.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", outcome.message)
                    }
                )),
                Some(outcome) => node.health(Health::Broken).saying(outcome.message.clone()),
                None => node.health(Health::Broken).saying("no verdict"),
            },
            Err(e) => node
                .health(Health::Broken)
                .saying(format!("cannot be evaluated: {e}")),
        });
    }
    Ok(nodes)
}

/// Whether `trigger` watches `cluster` (`namespace/name`): `Err` says why not (the cluster is
/// not registered, is paused, or does not match the sourceClusterSelector, and which label).
async fn watches(
    fleet: &mut Fleet,
    trigger: &Value,
    cluster: &str,
) -> anyhow::Result<Result<(), String>> {
    let Some(registered) = fleet.registered(cluster).await? else {
        return Ok(Ok(()));
    };
    if registered.paused() {
        return Ok(Err(format!(
            "cluster {cluster} is paused: nothing is generated for it until it resumes"
        )));
    }
    let spec = &trigger["spec"];
    if spec["clusterSetRefs"]
        .as_array()
        .is_some_and(|sets| !sets.is_empty())
    {
        return Ok(Ok(()));
    }
    let selector: LabelSelector =
        serde_json::from_value(spec["sourceClusterSelector"].clone()).unwrap_or_default();
    if api::selector::is_empty(&selector) {
        return Ok(Err(
            "it has no sourceClusterSelector: it watches no cluster".to_owned(),
        ));
    }
    Ok(
        match api::selector::mismatch(&selector, &registered.labels()) {
            Ok(None) => Ok(()),
            Ok(Some(why)) => Err(format!(
                "cluster {cluster} does not match its sourceClusterSelector: {why}"
            )),
            Err(e) => Err(format!("its sourceClusterSelector is invalid: {e}")),
        },
    )
}

/// Why the agent is not asked to evaluate EventSource `source` in `cluster`, or `None` when it
/// is (the manager's list of the cluster's EventSources names it).
async fn unwatched(
    fleet: &mut Fleet,
    source: &str,
    cluster: &str,
) -> anyhow::Result<Option<String>> {
    let (namespace, name) = cluster.split_once('/').unwrap_or(("", cluster));
    let registered = fleet.registered(cluster).await?;
    if registered.as_ref().is_some_and(Registered::paused) {
        return Ok(Some(format!(
            "cluster {cluster} is paused: nothing is evaluated or deployed there until it resumes"
        )));
    }
    let cluster_type = registered.map(|r| r.cluster_type).unwrap_or_default();
    let list = api::v1beta1::agent_sources_config_map_name(name, cluster_type);
    let listed = fleet.sveltos("ConfigMap", Some(namespace), &list).await?;
    let asked = listed.as_ref().is_some_and(|list| {
        list["data"]
            .as_object()
            .is_some_and(|data| data.values().any(|v| v == source))
    });
    if asked {
        return Ok(None);
    }
    let triggers = fleet.sveltos_list("EventTrigger", None, "").await?;
    let consumers: Vec<&Value> = triggers
        .iter()
        .filter(|t| t["spec"]["eventSourceName"] == source)
        .collect();
    let Some(first) = consumers.first() else {
        return Ok(Some(format!(
            "no EventTrigger uses EventSource {source}, so no agent evaluates it"
        )));
    };
    let trigger = first["metadata"]["name"].as_str().unwrap_or_default();
    let why = match watches(fleet, first, cluster).await? {
        Err(why) => why,
        Ok(()) => failing_condition(first)
            .unwrap_or_else(|| "the manager has not told the agent yet".to_owned()),
    };
    Ok(Some(format!(
        "the agent is not asked to evaluate it in cluster {cluster}: EventTrigger {trigger}: {why}"
    )))
}

/// An EventTrigger, and the profiles it generated for the resource `name` of `cluster`.
/// With `resource` (`namespace`, `name`), only the profiles generated for it.
async fn trigger_down(
    fleet: &mut Fleet,
    trigger: &Value,
    cluster: &str,
    resource: Option<(&str, &str)>,
) -> anyhow::Result<Node> {
    let trigger_name = trigger["metadata"]["name"].as_str().unwrap_or_default();
    let (cluster_namespace, cluster_name) = cluster.split_once('/').unwrap_or(("", cluster));
    let selector = format!(
        "{EVENT_TRIGGER_NAME_LABEL}={trigger_name},{CLUSTER_NAMESPACE_LABEL}={cluster_namespace},\
         {CLUSTER_NAME_LABEL}={cluster_name}"
    );
    let profiles = fleet
        .sveltos_list("ClusterProfile", None, &selector)
        .await?;
    // A oneForEvent profile names its resource; a per-report one stands for every resource.
    let for_it: Vec<&Value> = profiles
        .iter()
        .filter(
            |p| match (meta(p, "labels", RESOURCE_NAME_LABEL), resource) {
                ("", _) | (_, None) => true,
                (name, Some((namespace, wanted))) => {
                    name == wanted && meta(p, "labels", RESOURCE_NAMESPACE_LABEL) == namespace
                }
            },
        )
        .collect();
    let mut node = Node::of("EventTrigger", trigger, MANAGEMENT);
    if for_it.is_empty() {
        let why = match failing_condition(trigger) {
            Some(message) => message,
            None => match watches(fleet, trigger, cluster).await? {
                Err(why) => why,
                Ok(()) => format!(
                    "cluster {cluster} matches it, but the manager has not generated a profile \
                     for it yet"
                ),
            },
        };
        return Ok(node
            .health(Health::Broken)
            .saying(format!("generated no ClusterProfile for it: {why}")));
    }
    node = node
        .saying(format!(
            "generated {}",
            count(for_it.len(), "ClusterProfile")
        ))
        .judged(trigger);
    for profile in for_it {
        node = node.with(profile_down(fleet, profile).await?);
    }
    Ok(node)
}

/// A ClusterProfile, its ClusterSummaries and what each deployed.
async fn profile_down(fleet: &mut Fleet, profile: &Value) -> anyhow::Result<Node> {
    let name = profile["metadata"]["name"].as_str().unwrap_or_default();
    let summaries = fleet
        .sveltos_list(
            "ClusterSummary",
            None,
            &format!("{CLUSTER_PROFILE_NAME_LABEL}={name}"),
        )
        .await?;
    let mut node = Node::of("ClusterProfile", profile, MANAGEMENT);
    if summaries.is_empty() {
        return Ok(node.health(Health::Broken).saying(
            "deployed nowhere: no cluster matches its clusterSelector (or the deployer has not \
             acted yet)",
        ));
    }
    node = node.saying(format!("deployed to {}", count(summaries.len(), "cluster")));
    // Paused whatever the annotation's value, as the deployer reads it.
    if !profile["metadata"]["annotations"][PROFILE_PAUSED_ANNOTATION].is_null() {
        node = node.health(Health::Broken).saying(format!(
            "paused ({PROFILE_PAUSED_ANNOTATION}): the deployer changes nothing for it until \
             the annotation is removed"
        ));
    } else if profile["spec"]["syncMode"] == "DryRun" {
        node = node.health(Health::Broken).saying(
            "in DryRun: the deployer changes nothing and reports what it would do in \
             ClusterReports",
        );
    }
    for summary in &summaries {
        let destination = spec_cluster(summary);
        let mut summary_node = summary_node(summary);
        if fleet
            .registered(&destination)
            .await?
            .is_some_and(|cluster| cluster.paused())
        {
            summary_node = summary_node.health(Health::Broken).saying(format!(
                "cluster {destination} is paused: nothing is deployed or withdrawn there"
            ));
        }
        for object in deployed(fleet, summary, name, &destination).await {
            summary_node = summary_node.with(object);
        }
        node = node.with(summary_node);
    }
    Ok(node)
}

/// The objects `profile` deployed in `cluster`, read live, as nodes.
async fn deployed(fleet: &mut Fleet, summary: &Value, profile: &str, cluster: &str) -> Vec<Node> {
    super::addons::deployed(fleet, summary, profile, cluster)
        .await
        .into_iter()
        .map(|found| match found {
            Ok((kind, object)) => Node::of(&kind, &object, cluster).saying("deployed"),
            Err((entry, why)) => {
                Node::missing(&entry, "-", cluster, format!("cannot be read: {why}"))
            }
        })
        .collect()
}
