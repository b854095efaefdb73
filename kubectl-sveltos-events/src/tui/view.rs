//! The views: their names, their kind, the columns a user needs, one row per object.

use api::labels::{
    CLUSTER_NAME_LABEL, CLUSTER_NAMESPACE_LABEL, CLUSTER_PROFILE_NAME_LABEL,
    EVENT_TRIGGER_NAME_LABEL, RESOURCE_NAME_LABEL, RESOURCE_NAMESPACE_LABEL,
};
use std::collections::HashMap;

use serde_json::Value;

use super::state::{State, key};
use crate::chain::{meta, spec_cluster};

/// A screen of the TUI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Counts and the activity feed.
    Overview,
    /// SveltosClusters.
    Clusters,
    /// Cluster API Clusters.
    CapiClusters,
    /// EventSources.
    Sources,
    /// EventTriggers.
    Triggers,
    /// EventReports.
    Reports,
    /// ClusterProfiles.
    Profiles,
    /// ClusterSummaries.
    Summaries,
    /// ClusterReports: what DryRun profiles would do.
    DryRun,
    /// The controllers' Kubernetes Events.
    Events,
}

const ORDER: [View; 10] = [
    View::Overview,
    View::Clusters,
    View::CapiClusters,
    View::Sources,
    View::Triggers,
    View::Reports,
    View::Profiles,
    View::Summaries,
    View::DryRun,
    View::Events,
];

/// How a row is doing, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Nothing to say.
    Plain,
    /// Ready, provisioned.
    Good,
    /// Not there yet.
    Pending,
    /// Failed.
    Bad,
}

/// One object as a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its `namespace/name`.
    pub key: String,
    /// The cells, in the view's column order.
    pub cells: Vec<String>,
    /// How it is doing.
    pub health: Health,
}

impl View {
    /// Its title and the names `:` takes (title first).
    pub fn names(self) -> &'static [&'static str] {
        match self {
            View::Overview => &["overview", "o", "home"],
            View::Clusters => &["clusters", "cl", "sveltosclusters", "sc"],
            View::CapiClusters => &["capi", "capiclusters", "cluster.x-k8s.io"],
            View::Sources => &["sources", "es", "eventsources"],
            View::Triggers => &["triggers", "et", "eventtriggers"],
            View::Reports => &["reports", "er", "eventreports"],
            View::Profiles => &["profiles", "cp", "clusterprofiles"],
            View::Summaries => &["summaries", "cs", "clustersummaries"],
            View::DryRun => &["dryrun", "cr", "clusterreports"],
            View::Events => &["events", "ev"],
        }
    }

    /// The view `text` names: one of its names, or the start of only one view's names.
    pub fn named(text: &str) -> Option<View> {
        let text = text.trim().to_lowercase();
        if text.is_empty() {
            return None;
        }
        if let Some(view) = ORDER
            .into_iter()
            .find(|v| v.names().contains(&text.as_str()))
        {
            return Some(view);
        }
        let mut starting = ORDER
            .into_iter()
            .filter(|v| v.names().iter().any(|n| n.starts_with(&text)));
        match (starting.next(), starting.next()) {
            (Some(view), None) => Some(view),
            _ => None,
        }
    }

    /// The list views (every view but the overview), in order.
    pub fn lists() -> impl Iterator<Item = View> {
        ORDER.into_iter().filter(|v| *v != View::Overview)
    }

    /// The next view, round.
    pub fn next(self) -> View {
        let i = ORDER.iter().position(|v| *v == self).unwrap_or(0);
        ORDER[(i + 1) % ORDER.len()]
    }

    /// The previous view, round.
    pub fn previous(self) -> View {
        let i = ORDER.iter().position(|v| *v == self).unwrap_or(0);
        ORDER[(i + ORDER.len() - 1) % ORDER.len()]
    }

    /// The kind a list view shows.
    pub fn kind(self) -> Option<&'static str> {
        Some(match self {
            View::Overview => return None,
            View::Clusters => "SveltosCluster",
            View::CapiClusters => "Cluster",
            View::Sources => "EventSource",
            View::Triggers => "EventTrigger",
            View::Reports => "EventReport",
            View::Profiles => "ClusterProfile",
            View::Summaries => "ClusterSummary",
            View::DryRun => "ClusterReport",
            View::Events => "Event",
        })
    }

    /// The column headers.
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            View::Overview => &[],
            View::Clusters => &[
                "NAMESPACE/NAME",
                "READY",
                "CONNECTION",
                "PAUSED",
                "VERSION",
                "MESSAGE",
            ],
            View::Sources => &["NAME", "SELECTS", "COLLECT", "AGE"],
            View::Triggers => &["NAME", "EVENTSOURCE", "ONE-FOR-EVENT", "PROFILES", "AGE"],
            View::Reports => &[
                "NAMESPACE/NAME",
                "CLUSTER",
                "EVENTSOURCE",
                "MATCHING",
                "AGE",
            ],
            View::Profiles => &[
                "NAME", "TRIGGER", "SOURCE", "RESOURCE", "DEPLOYED", "TO", "AGE",
            ],
            View::Summaries => &["NAMESPACE/NAME", "PROFILE", "CLUSTER", "STATUS", "MESSAGE"],
            View::CapiClusters => &["NAMESPACE/NAME", "PHASE", "CONTROL-PLANE", "PAUSED", "AGE"],
            View::DryRun => &["NAMESPACE/NAME", "PROFILE", "CLUSTER", "WOULD", "AGE"],
            View::Events => &["LAST", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        }
    }

    /// The rows of this view, unfiltered, sorted by key.
    pub fn rows(self, state: &State) -> Vec<Row> {
        let Some(kind) = self.kind() else {
            return Vec::new();
        };
        // Indexed once per call, not once per row: a thousand profiles must not each scan a
        // thousand summaries.
        let links = Links::of(state, self);
        state.of(kind).map(|o| self.row(&links, o)).collect()
    }

    fn row(self, links: &Links, o: &Value) -> Row {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let age = age(o);
        let (cells, health) = match self {
            View::Overview => (Vec::new(), Health::Plain),
            View::Clusters => {
                let status = &o["status"];
                let ready = status["ready"] == true;
                let paused = o["spec"]["paused"] == true;
                let health = if status["failureMessage"].is_string()
                    || status["connectionStatus"] == "Down"
                {
                    Health::Bad
                } else if ready && !paused {
                    Health::Good
                } else {
                    Health::Pending
                };
                let cells = vec![
                    key(o),
                    ready.to_string(),
                    text(&status["connectionStatus"]),
                    paused.to_string(),
                    text(&status["version"]),
                    text(&status["failureMessage"]),
                ];
                (cells, health)
            }
            View::Sources => {
                let kinds: Vec<String> = o["spec"]["resourceSelectors"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| text(&s["kind"]))
                    .collect();
                let collect = o["spec"]["collectResources"] == true;
                (
                    vec![key(o), kinds.join(","), collect.to_string(), age],
                    Health::Plain,
                )
            }
            View::Triggers => {
                let name = key(o);
                let profiles = links.profiles_of.get(name.as_str()).copied().unwrap_or(0);
                let cells = vec![
                    name,
                    text(&o["spec"]["eventSourceName"]),
                    (o["spec"]["oneForEvent"] == true).to_string(),
                    profiles.to_string(),
                    age,
                ];
                (cells, Health::Plain)
            }
            View::Reports => {
                let spec = &o["spec"];
                let matching = spec["matchingResources"].as_array().map_or(0, Vec::len);
                let cells = vec![
                    key(o),
                    spec_cluster(o),
                    text(&spec["eventSourceName"]),
                    matching.to_string(),
                    age,
                ];
                (cells, Health::Plain)
            }
            View::Profiles => {
                let name = key(o);
                let trigger = meta(o, "labels", EVENT_TRIGGER_NAME_LABEL);
                let cluster = match meta(o, "labels", CLUSTER_NAME_LABEL) {
                    "" => String::new(),
                    c => format!("{}/{c}", meta(o, "labels", CLUSTER_NAMESPACE_LABEL)),
                };
                let resource = match (
                    meta(o, "labels", RESOURCE_NAMESPACE_LABEL),
                    meta(o, "labels", RESOURCE_NAME_LABEL),
                ) {
                    (_, "") => String::new(),
                    ("", r) => r.to_owned(),
                    (ns, r) => format!("{ns}/{r}"),
                };
                let summaries: &[(Health, String)] = links
                    .summaries_of
                    .get(name.as_str())
                    .map_or(&[], Vec::as_slice);
                let good = summaries.iter().filter(|(h, _)| *h == Health::Good).count();
                let health = if summaries.iter().any(|(h, _)| *h == Health::Bad) {
                    Health::Bad
                } else if good == summaries.len() {
                    Health::Good
                } else {
                    Health::Pending
                };
                let mut destinations: Vec<&str> =
                    summaries.iter().map(|(_, c)| c.as_str()).collect();
                destinations.sort_unstable();
                let to = match destinations.as_slice() {
                    [] => String::new(),
                    [one] => (*one).to_owned(),
                    [first, rest @ ..] => format!("{first} +{}", rest.len()),
                };
                let trigger = if trigger.is_empty() {
                    "(by hand)".to_owned()
                } else {
                    trigger.to_owned()
                };
                let cells = vec![
                    name,
                    trigger,
                    cluster,
                    resource,
                    format!("{good}/{}", summaries.len()),
                    to,
                    age,
                ];
                (cells, health)
            }
            View::CapiClusters => {
                let cluster = api::capi::CapiCluster(o);
                let ready = cluster.control_plane_initialized();
                let health = if cluster.paused() {
                    Health::Pending
                } else if ready {
                    Health::Good
                } else {
                    Health::Pending
                };
                let cells = vec![
                    key(o),
                    text(&o["status"]["phase"]),
                    if ready { "initialized" } else { "not yet" }.to_owned(),
                    cluster.paused().to_string(),
                    age,
                ];
                (cells, health)
            }
            View::DryRun => {
                let (would, health) = dry_run_actions(o);
                let cells = vec![
                    key(o),
                    meta(o, "labels", CLUSTER_PROFILE_NAME_LABEL).to_owned(),
                    spec_cluster(o),
                    would,
                    age,
                ];
                (cells, health)
            }
            View::Events => {
                let involved = &o["involvedObject"];
                let warning = o["type"] == "Warning";
                let cells = vec![
                    crate::chain::render::age(last_seen(o), now()),
                    text(&o["type"]),
                    text(&o["reason"]),
                    format!("{} {}", text(&involved["kind"]), text(&involved["name"])),
                    text(&o["message"]),
                ];
                (cells, if warning { Health::Bad } else { Health::Plain })
            }
            View::Summaries => {
                let feature = &o["status"]["featureSummaries"][0];
                let cells = vec![
                    key(o),
                    meta(o, "labels", CLUSTER_PROFILE_NAME_LABEL).to_owned(),
                    spec_cluster(o),
                    feature["status"].as_str().unwrap_or("Pending").to_owned(),
                    text(&feature["failureMessage"]),
                ];
                (cells, summary_health(o))
            }
        };
        Row {
            key: key(o),
            cells,
            health,
        }
    }
}

/// What a view's rows count of other kinds, indexed once.
#[derive(Default)]
struct Links<'a> {
    /// Trigger name -> generated profiles.
    profiles_of: HashMap<&'a str, usize>,
    /// Profile name -> its summaries' health and cluster.
    summaries_of: HashMap<&'a str, Vec<(Health, String)>>,
}

impl<'a> Links<'a> {
    fn of(state: &'a State, view: View) -> Self {
        let mut links = Links::default();
        match view {
            View::Triggers => {
                for profile in state.of("ClusterProfile") {
                    let trigger = meta(profile, "labels", EVENT_TRIGGER_NAME_LABEL);
                    *links.profiles_of.entry(trigger).or_default() += 1;
                }
            }
            View::Profiles => {
                for summary in state.of("ClusterSummary") {
                    let profile = meta(summary, "labels", CLUSTER_PROFILE_NAME_LABEL);
                    links
                        .summaries_of
                        .entry(profile)
                        .or_default()
                        .push((summary_health(summary), spec_cluster(summary)));
                }
            }
            _ => {}
        }
        links
    }
}

/// Whether a ClusterSummary's features are all Provisioned.
pub fn provisioned(summary: &Value) -> bool {
    summary_health(summary) == Health::Good
}

fn summary_health(summary: &Value) -> Health {
    match summary["status"]["featureSummaries"][0]["status"].as_str() {
        Some("Provisioned") => Health::Good,
        Some("Failed" | "FailedNonRetriable") => Health::Bad,
        _ => Health::Pending,
    }
}

fn now() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_second()
}

/// `5s`, `3m`, ... since the object's creation.
fn age(object: &Value) -> String {
    crate::chain::render::age(object["metadata"]["creationTimestamp"].as_str(), now())
}

/// When an Event was last seen: its `lastTimestamp`, `eventTime` or creation.
fn last_seen(event: &Value) -> Option<&str> {
    event["lastTimestamp"]
        .as_str()
        .or_else(|| event["eventTime"].as_str())
        .or_else(|| event["metadata"]["creationTimestamp"].as_str())
}

/// What a ClusterReport says a deployment would do (`2 Create, 1 Update`), and how that
/// reads: a conflict or error is bad, any change pending.
fn dry_run_actions(report: &Value) -> (String, Health) {
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for entry in crate::chain::dry_run_entries(report) {
        *counts
            .entry(entry["action"].as_str().unwrap_or("No Action"))
            .or_default() += 1;
    }
    let health = if counts.contains_key("Conflict") || counts.contains_key("Error") {
        Health::Bad
    } else if counts.keys().any(|a| *a != "No Action") {
        Health::Pending
    } else {
        Health::Good
    };
    let words: Vec<String> = counts.iter().map(|(a, n)| format!("{n} {a}")).collect();
    let would = if words.is_empty() {
        "nothing".to_owned()
    } else {
        words.join(", ")
    };
    (would, health)
}

/// The activity line for a change of `kind`, when it says more than "changed": an event
/// reported, a profile generated, an add-on deployed.
pub fn describe_change(kind: &str, o: &Value) -> Option<String> {
    let name = key(o);
    Some(match kind {
        "EventReport" => {
            let spec = &o["spec"];
            let matching = spec["matchingResources"].as_array().map_or(0, Vec::len);
            format!(
                "EventReport {name}: {} matches {matching} in {}/{}",
                spec["eventSourceName"].as_str().unwrap_or_default(),
                spec["clusterNamespace"].as_str().unwrap_or_default(),
                spec["clusterName"].as_str().unwrap_or_default()
            )
        }
        "ClusterProfile" => match meta(o, "labels", EVENT_TRIGGER_NAME_LABEL) {
            "" => return None,
            trigger => format!(
                "ClusterProfile {name} from EventTrigger {trigger} for {}",
                match meta(o, "labels", RESOURCE_NAME_LABEL) {
                    "" => "the report".to_owned(),
                    r => r.to_owned(),
                }
            ),
        },
        "ClusterSummary" => format!(
            "ClusterSummary {name}: {}",
            o["status"]["featureSummaries"][0]["status"]
                .as_str()
                .unwrap_or("Pending")
        ),
        "Cluster" => format!(
            "Cluster API Cluster {name}: {}",
            if api::capi::CapiCluster(o).control_plane_initialized() {
                "control plane initialized"
            } else {
                "control plane not initialized"
            }
        ),
        "ClusterReport" => format!("ClusterReport {name}: would {}", dry_run_actions(o).0),
        "Event" => {
            let involved = &o["involvedObject"];
            format!(
                "{} {} {} {}: {}",
                o["type"].as_str().unwrap_or("Normal"),
                o["reason"].as_str().unwrap_or_default(),
                involved["kind"].as_str().unwrap_or_default(),
                involved["name"].as_str().unwrap_or_default(),
                o["message"].as_str().unwrap_or_default()
            )
        }
        "SveltosCluster" => format!(
            "SveltosCluster {name}: {}",
            if o["status"]["ready"] == true {
                "ready"
            } else {
                "not ready"
            }
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::feed::Update;
    use serde_json::json;

    #[test]
    fn profiles_count_their_summaries_and_triggers_their_profiles() {
        let mut state = State::new("x", false);
        let profile = |name: &str| json!({"metadata": {"name": name, "labels": {EVENT_TRIGGER_NAME_LABEL: "t"}}});
        let summary = |name: &str, profile: &str, status: &str| {
            json!({"metadata": {"name": name, "namespace": "default",
                                "labels": {CLUSTER_PROFILE_NAME_LABEL: profile}},
                   "status": {"featureSummaries": [{"status": status}]}})
        };
        state.on_update(
            Update::Listed("EventTrigger", vec![json!({"metadata": {"name": "t"}})]),
            "0",
        );
        state.on_update(
            Update::Listed("ClusterProfile", vec![profile("p1"), profile("p2")]),
            "0",
        );
        state.on_update(
            Update::Listed(
                "ClusterSummary",
                vec![
                    summary("a", "p1", "Provisioned"),
                    summary("b", "p1", "Provisioning"),
                    summary("c", "p2", "Failed"),
                ],
            ),
            "0",
        );
        let triggers = View::Triggers.rows(&state);
        assert_eq!(triggers[0].cells[3], "2");
        let profiles = View::Profiles.rows(&state);
        assert_eq!(profiles[0].cells[4], "1/2");
        assert_eq!(profiles[0].health, Health::Pending);
        assert_eq!(profiles[1].cells[4], "0/1");
        assert_eq!(profiles[1].health, Health::Bad);
    }

    #[test]
    fn dry_runs_events_and_cluster_api_clusters_have_their_rows_and_activity_lines() {
        let mut state = State::new("x", false);
        let report = json!({"metadata": {"name": "p--sveltos--c1", "namespace": "default",
                "resourceVersion": "1", "labels": {CLUSTER_PROFILE_NAME_LABEL: "p"}},
            "spec": {"clusterNamespace": "default", "clusterName": "c1"},
            "status": {"resourceReports": [
                {"resource": {"kind": "Service", "name": "a"}, "action": "Create"},
                {"resource": {"kind": "Service", "name": "b"}, "action": "Create"},
                {"resource": {"kind": "Service", "name": "c"}, "action": "Conflict"}]}});
        state.on_update(Update::Applied("ClusterReport", report), "10:00:00");
        let rows = View::DryRun.rows(&state);
        assert_eq!(
            rows[0].cells[1..4],
            ["p", "default/c1", "1 Conflict, 2 Create"]
        );
        assert_eq!(rows[0].health, Health::Bad);
        assert_eq!(
            state.activity[0].text,
            "ClusterReport default/p--sveltos--c1: would 1 Conflict, 2 Create"
        );

        let event = |name: &str, kind: &str| {
            json!({"metadata": {"name": name, "namespace": "default", "resourceVersion": "1"},
                   "type": kind, "reason": "GenerationFailed", "message": "no such ConfigMap",
                   "involvedObject": {"kind": "EventTrigger", "name": "t"}})
        };
        // One list per reporter: the second adds to the first.
        state.on_update(
            Update::Listed("Event", vec![event("e1", "Warning")]),
            "10:00:01",
        );
        state.on_update(
            Update::Listed("Event", vec![event("e2", "Normal")]),
            "10:00:01",
        );
        let rows = View::Events.rows(&state);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0].cells[1..4],
            ["Warning", "GenerationFailed", "EventTrigger t"]
        );
        assert_eq!(rows[0].health, Health::Bad);
        state.on_update(Update::Applied("Event", event("e3", "Warning")), "10:00:02");
        assert_eq!(
            state.activity[0].text,
            "Warning GenerationFailed EventTrigger t: no such ConfigMap"
        );

        let capi = json!({"metadata": {"name": "w", "namespace": "default"},
            "spec": {"paused": true}, "status": {"phase": "Provisioned",
            "initialization": {"controlPlaneInitialized": true}}});
        state.on_update(Update::Listed("Cluster", vec![capi]), "10:00:03");
        let rows = View::CapiClusters.rows(&state);
        assert_eq!(
            rows[0].cells[..4],
            ["default/w", "Provisioned", "initialized", "true"]
        );
        assert_eq!(rows[0].health, Health::Pending);
    }

    #[test]
    fn every_view_is_reached_by_each_of_its_names_and_tab_goes_round() {
        let mut view = View::Overview;
        for _ in 0..ORDER.len() {
            for name in view.names() {
                assert_eq!(View::named(name), Some(view), "{name}");
            }
            assert_eq!(view.next().previous(), view);
            view = view.next();
        }
        assert_eq!(view, View::Overview);
        assert_eq!(View::named("nothing"), None);
        // A start that only one view's names have is enough; an ambiguous one is not.
        assert_eq!(View::named("sum"), Some(View::Summaries));
        assert_eq!(View::named("trig"), Some(View::Triggers));
        assert_eq!(View::named("c"), None);
        assert_eq!(View::named(""), None);
    }
}
