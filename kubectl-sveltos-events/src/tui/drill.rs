//! Enter on a row: what the object holds and what it links to, from the state alone (a
//! report's matching resources and the profiles made from it; a profile's origin, policyRefs
//! and summaries per cluster; ...). The objects a profile deployed live in the managed
//! clusters: the TUI reads them once asked ([`super::state::Effect::Deployed`]).

use std::fmt::Write as _;

use api::labels::{
    CLUSTER_NAME_LABEL, CLUSTER_NAMESPACE_LABEL, CLUSTER_PROFILE_NAME_LABEL,
    EVENT_REPORT_NAME_LABEL, EVENT_TRIGGER_NAME_LABEL, RESOURCE_NAME_LABEL,
    RESOURCE_NAMESPACE_LABEL,
};
use serde_json::Value;

use super::state::{State, key};
use crate::chain::{dry_run_entries, meta, reference_name, spec_cluster};

/// The details of the `kind` object `name` (`namespace/name`), or `None` when it is gone.
pub fn details(state: &State, kind: &str, name: &str) -> Option<String> {
    let object = state.objects.get(kind)?.get(name)?;
    let mut text = String::new();
    match kind {
        "EventReport" => report(state, object, &mut text),
        "ClusterProfile" => profile(state, object, &mut text),
        "ClusterSummary" => summary(object, &mut text),
        "EventTrigger" => trigger(state, object, &mut text),
        "EventSource" => source(state, object, &mut text),
        "SveltosCluster" => cluster(state, object, &mut text),
        "Cluster" => capi_cluster(state, object, &mut text),
        "ClusterReport" => dry_run(object, &mut text),
        "Event" => event(object, &mut text),
        _ => {}
    }
    conditions(object, &mut text);
    Some(text)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// `namespace/name` of the source cluster a generated profile's labels name.
fn source_cluster(profile: &Value) -> String {
    format!(
        "{}/{}",
        meta(profile, "labels", CLUSTER_NAMESPACE_LABEL),
        meta(profile, "labels", CLUSTER_NAME_LABEL)
    )
}

fn report(state: &State, report: &Value, out: &mut String) {
    let spec = &report["spec"];
    let cluster = spec_cluster(report);
    let source = text(&spec["eventSourceName"]);
    let _ = writeln!(out, "EventSource {source} in cluster {cluster}\n");
    let matching = spec["matchingResources"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let _ = writeln!(out, "Matching resources ({}):", matching.len());
    for resource in matching {
        let name = reference_name(resource);
        let _ = write!(out, "  {} {name}", text(&resource["kind"]));
        match text(&resource["apiVersion"]) {
            "" => out.push('\n'),
            version => {
                let _ = writeln!(out, "  ({version})");
            }
        }
    }
    let made: Vec<&Value> = state
        .of("ClusterProfile")
        .filter(|p| {
            meta(p, "labels", EVENT_REPORT_NAME_LABEL) == source && source_cluster(p) == cluster
        })
        .collect();
    let _ = writeln!(out, "\nClusterProfiles made from it ({}):", made.len());
    for profile in made {
        let _ = writeln!(
            out,
            "  {}  (EventTrigger {}{})",
            key(profile),
            meta(profile, "labels", EVENT_TRIGGER_NAME_LABEL),
            resource_of(profile)
                .map(|r| format!(", for {r}"))
                .unwrap_or_default()
        );
    }
}

/// The resource a oneForEvent profile was made for (`namespace/name`).
pub fn resource_of(profile: &Value) -> Option<String> {
    match (
        meta(profile, "labels", RESOURCE_NAMESPACE_LABEL),
        meta(profile, "labels", RESOURCE_NAME_LABEL),
    ) {
        (_, "") => None,
        ("", name) => Some(name.to_owned()),
        (ns, name) => Some(format!("{ns}/{name}")),
    }
}

fn profile(state: &State, profile: &Value, out: &mut String) {
    let name = key(profile);
    match meta(profile, "labels", EVENT_TRIGGER_NAME_LABEL) {
        "" => {
            let _ = writeln!(out, "Written by hand (no EventTrigger made it)");
        }
        trigger => {
            let _ = writeln!(
                out,
                "Made by EventTrigger {trigger}\n  for {} in cluster {}",
                resource_of(profile).unwrap_or_else(|| "every resource of its report".to_owned()),
                source_cluster(profile)
            );
        }
    }
    let spec = &profile["spec"];
    let _ = writeln!(
        out,
        "syncMode {}, tier {}",
        spec["syncMode"].as_str().unwrap_or("Continuous"),
        spec["tier"].as_i64().unwrap_or(100)
    );
    let refs = spec["policyRefs"].as_array().map_or(&[][..], Vec::as_slice);
    let _ = writeln!(out, "\npolicyRefs ({}):", refs.len());
    for reference in refs {
        let namespace = text(&reference["namespace"]);
        let instantiated = if namespace == api::labels::SVELTOS_NAMESPACE {
            "  (instantiated for the event)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {} {namespace}/{}{instantiated}",
            text(&reference["kind"]),
            text(&reference["name"])
        );
    }
    let summaries: Vec<&Value> = state
        .of("ClusterSummary")
        .filter(|s| meta(s, "labels", CLUSTER_PROFILE_NAME_LABEL) == name)
        .collect();
    let _ = writeln!(out, "\nClusters ({}):", summaries.len());
    for summary in summaries {
        let feature = &summary["status"]["featureSummaries"][0];
        let _ = write!(
            out,
            "  {}  {}",
            spec_cluster(summary),
            feature["status"].as_str().unwrap_or("Pending")
        );
        if let Some(failure) = feature["failureMessage"].as_str() {
            let _ = write!(out, ": {failure}");
        }
        out.push('\n');
    }
}

fn summary(summary: &Value, out: &mut String) {
    let _ = writeln!(
        out,
        "ClusterProfile {} in cluster {}\n",
        meta(summary, "labels", CLUSTER_PROFILE_NAME_LABEL),
        spec_cluster(summary)
    );
    for feature in summary["status"]["featureSummaries"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let _ = write!(
            out,
            "{} {}",
            text(&feature["featureID"]),
            text(&feature["status"])
        );
        if let Some(failure) = feature["failureMessage"].as_str() {
            let _ = write!(out, ": {failure}");
        }
        out.push('\n');
    }
    let kinds = crate::chain::addons::deployed_kinds(summary);
    let _ = writeln!(out, "\nKinds deployed: {}", list_or_none(&kinds));
}

fn trigger(state: &State, trigger: &Value, out: &mut String) {
    let name = key(trigger);
    let spec = &trigger["spec"];
    let _ = writeln!(
        out,
        "EventSource {}, oneForEvent {}",
        text(&spec["eventSourceName"]),
        spec["oneForEvent"] == true
    );
    let _ = writeln!(
        out,
        "sourceClusterSelector {}",
        spec["sourceClusterSelector"]
    );
    if !spec["destinationClusterSelector"].is_null() {
        let _ = writeln!(
            out,
            "destinationClusterSelector {}",
            spec["destinationClusterSelector"]
        );
    }
    let profiles: Vec<&Value> = state
        .of("ClusterProfile")
        .filter(|p| meta(p, "labels", EVENT_TRIGGER_NAME_LABEL) == name)
        .collect();
    let _ = writeln!(out, "\nClusterProfiles it made ({}):", profiles.len());
    for profile in profiles {
        let _ = writeln!(
            out,
            "  {}  (cluster {}{})",
            key(profile),
            source_cluster(profile),
            resource_of(profile)
                .map(|r| format!(", for {r}"))
                .unwrap_or_default()
        );
    }
}

fn source(state: &State, source: &Value, out: &mut String) {
    let name = key(source);
    let _ = writeln!(out, "Selects:");
    for selector in source["spec"]["resourceSelectors"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let group = match text(&selector["group"]) {
            "" => "core".to_owned(),
            g => g.to_owned(),
        };
        let _ = write!(
            out,
            "  {} ({group}/{})",
            text(&selector["kind"]),
            text(&selector["version"])
        );
        if let Some(ns) = selector["namespace"].as_str().filter(|n| !n.is_empty()) {
            let _ = write!(out, " in {ns}");
        }
        if selector["evaluate"].as_str().is_some_and(|e| !e.is_empty()) {
            out.push_str(", with a Lua evaluate()");
        }
        out.push('\n');
    }
    let reports: Vec<&Value> = state
        .of("EventReport")
        .filter(|r| text(&r["spec"]["eventSourceName"]) == name)
        .collect();
    let _ = writeln!(out, "\nEventReports ({}):", reports.len());
    for report in reports {
        let matching = report["spec"]["matchingResources"]
            .as_array()
            .map_or(0, Vec::len);
        let _ = writeln!(
            out,
            "  {}  cluster {}, {matching} matching",
            key(report),
            spec_cluster(report)
        );
    }
}

fn cluster(state: &State, cluster: &Value, out: &mut String) {
    let status = &cluster["status"];
    let _ = writeln!(
        out,
        "Ready {}, connection {}, version {}",
        status["ready"] == true,
        status["connectionStatus"].as_str().unwrap_or("unknown"),
        status["version"].as_str().unwrap_or("unknown")
    );
    if let Some(failure) = status["failureMessage"].as_str() {
        let _ = writeln!(out, "Failure: {failure}");
    }
    links_of_cluster(state, cluster, "Sveltos", out);
}

fn capi_cluster(state: &State, cluster: &Value, out: &mut String) {
    let capi = api::capi::CapiCluster(cluster);
    let _ = writeln!(
        out,
        "Cluster API Cluster: phase {}, control plane {}, paused {}",
        cluster["status"]["phase"].as_str().unwrap_or("unknown"),
        if capi.control_plane_initialized() {
            "initialized"
        } else {
            "not initialized"
        },
        capi.paused()
    );
    links_of_cluster(state, cluster, "Capi", out);
}

/// A cluster's labels, and the reports and summaries the state holds for it (`cluster_type`
/// `Sveltos` or `Capi`: the two kinds may share a name).
fn links_of_cluster(state: &State, cluster: &Value, cluster_type: &str, out: &mut String) {
    let name = key(cluster);
    let of_it = |o: &&Value| {
        spec_cluster(o) == name
            && o["spec"]["clusterType"].as_str().unwrap_or("Sveltos") == cluster_type
    };
    let labels: Vec<String> = cluster["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect();
    let _ = writeln!(out, "Labels: {}", list_or_none(&labels));
    let reports: Vec<String> = state.of("EventReport").filter(of_it).map(key).collect();
    let _ = writeln!(out, "\nEventReports: {}", list_or_none(&reports));
    let summaries: Vec<String> = state
        .of("ClusterSummary")
        .filter(of_it)
        .map(|s| {
            let status = s["status"]["featureSummaries"][0]["status"]
                .as_str()
                .unwrap_or("Pending");
            format!("{} ({status})", key(s))
        })
        .collect();
    let _ = writeln!(out, "ClusterSummaries: {}", list_or_none(&summaries));
}

fn dry_run(report: &Value, out: &mut String) {
    let _ = writeln!(
        out,
        "ClusterProfile {} (syncMode DryRun) in cluster {}\n",
        meta(report, "labels", CLUSTER_PROFILE_NAME_LABEL),
        spec_cluster(report)
    );
    let _ = writeln!(out, "What deploying would do:");
    for entry in dry_run_entries(report) {
        let resource = &entry["resource"];
        let _ = writeln!(
            out,
            "  {} {} {}",
            entry["action"].as_str().unwrap_or("No Action"),
            text(&resource["kind"]),
            reference_name(resource)
        );
        // A diff or a reason, indented under its object (`show dryrun` prints the same).
        for line in text(&entry["message"]).lines() {
            let _ = writeln!(out, "      {line}");
        }
    }
}

fn event(event: &Value, out: &mut String) {
    let involved = &event["involvedObject"];
    let object = reference_name(involved);
    let _ = writeln!(
        out,
        "{} {} on {} {object}",
        event["type"].as_str().unwrap_or("Normal"),
        text(&event["reason"]),
        text(&involved["kind"])
    );
    let _ = writeln!(
        out,
        "from {}, seen {} time(s)\n",
        event["reportingComponent"].as_str().unwrap_or("unknown"),
        event["count"].as_u64().unwrap_or(1)
    );
    let _ = writeln!(out, "{}", text(&event["message"]));
}

fn list_or_none<T: AsRef<str>>(items: &[T]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The object's conditions, one line each.
fn conditions(object: &Value, out: &mut String) {
    let Some(conditions) = object["status"]["conditions"].as_array() else {
        return;
    };
    let _ = writeln!(out, "\nConditions:");
    for condition in conditions {
        let _ = writeln!(
            out,
            "  {} {} {}: {}",
            text(&condition["type"]),
            text(&condition["status"]),
            text(&condition["reason"]),
            text(&condition["message"])
        );
    }
}
