//! What the manager says in conditions: for an EventTrigger, whether its EventSource exists and
//! can be evaluated, whether source and destination clusters match, and whether profiles were
//! generated; `Ready` sums them up. Pure functions of the trigger's status and a few facts, so
//! every shard's manager reaches the same words.

use api::condition::{Verdict, ready};
use api::selector;
use api::v1beta1::{EventTrigger, EventTriggerStatus, SveltosFeatureStatus};
use k8s_openapi::api::core::v1::ObjectReference;

/// Condition types of an EventTrigger.
pub const EVENT_SOURCE_READY: &str = "EventSourceReady";
/// See [`EVENT_SOURCE_READY`].
pub const SOURCE_CLUSTERS_MATCHED: &str = "SourceClustersMatched";
/// See [`EVENT_SOURCE_READY`].
pub const DESTINATION_CLUSTERS_MATCHED: &str = "DestinationClustersMatched";
/// See [`EVENT_SOURCE_READY`].
pub const PROFILES_GENERATED: &str = "ProfilesGenerated";

/// Reason of a pass that failed in a cluster (also the reason of the Event saying so).
pub const GENERATION_FAILED: &str = "GenerationFailed";

/// An EventSource as a trigger sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceState {
    /// No EventSource of that name.
    Missing,
    /// It exists, and its `Ready` condition is false with this message.
    NotReady(String),
    /// It exists and nothing is known against it.
    Ready,
}

/// What the trigger's conditions rest on besides its status.
#[derive(Debug, Clone)]
pub struct Facts {
    /// Each EventSource the trigger uses (its name rendered per cluster), and its state.
    pub sources: Vec<(String, SourceState)>,
    /// How many clusters are registered.
    pub registered: usize,
    /// How many registered clusters the destinationClusterSelector matches (`None`: the
    /// trigger has none), or why it cannot be evaluated.
    pub destinations: Option<Result<usize, String>>,
}

fn cluster_name(reference: &ObjectReference) -> String {
    format!(
        "{}/{}",
        reference.namespace.as_deref().unwrap_or_default(),
        reference.name.as_deref().unwrap_or_default()
    )
}

/// `n noun` or `n nouns`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `first`, and how many more there are.
pub(crate) fn first_of<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    match items {
        [] => String::new(),
        [one] => show(one),
        [first, rest @ ..] => format!("{} (and {} more)", show(first), rest.len()),
    }
}

/// The trigger's conditions, `Ready` last. `status` is the one about to be written (every
/// shard's clusters); `plan_error` is why the trigger could not be planned at all.
pub fn trigger_verdicts(
    trigger: &EventTrigger,
    status: &EventTriggerStatus,
    plan_error: Option<&str>,
    facts: &Facts,
) -> Vec<Verdict> {
    let mut verdicts = vec![
        source_verdict(&trigger.spec.event_source_name, &facts.sources),
        source_clusters_verdict(trigger, status, plan_error, facts.registered),
    ];
    if let Some(destinations) = &facts.destinations {
        verdicts.push(match destinations {
            Ok(0) => Verdict::fails(
                DESTINATION_CLUSTERS_MATCHED,
                "NoDestinationCluster",
                format!(
                    "no registered cluster matches destinationClusterSelector {}",
                    selector::to_selector_string(&trigger.spec.destination_cluster_selector)
                ),
            ),
            Ok(n) => Verdict::holds(
                DESTINATION_CLUSTERS_MATCHED,
                "Matched",
                format!(
                    "destinationClusterSelector matches {}",
                    count(*n, "cluster")
                ),
            ),
            Err(error) => Verdict::fails(
                DESTINATION_CLUSTERS_MATCHED,
                "InvalidSelector",
                format!("destinationClusterSelector: {error}"),
            ),
        });
    }
    verdicts.push(generated_verdict(status, plan_error));
    let ready = ready(
        &verdicts,
        "profiles are generated for every matching cluster",
    );
    verdicts.push(ready);
    verdicts
}

fn source_verdict(wanted: &str, sources: &[(String, SourceState)]) -> Verdict {
    let missing: Vec<&String> = sources
        .iter()
        .filter(|(_, s)| *s == SourceState::Missing)
        .map(|(name, _)| name)
        .collect();
    if !missing.is_empty() {
        return Verdict::fails(
            EVENT_SOURCE_READY,
            "EventSourceNotFound",
            format!(
                "EventSource {} does not exist",
                first_of(&missing, |n| (*n).clone())
            ),
        );
    }
    let broken: Vec<(&String, &String)> = sources
        .iter()
        .filter_map(|(name, s)| match s {
            SourceState::NotReady(message) => Some((name, message)),
            _ => None,
        })
        .collect();
    if !broken.is_empty() {
        return Verdict::fails(
            EVENT_SOURCE_READY,
            "EventSourceNotReady",
            first_of(&broken, |(name, message)| {
                format!("EventSource {name}: {message}")
            }),
        );
    }
    let message = match sources {
        [] => format!("EventSource {wanted} is rendered per cluster; no cluster matches yet"),
        _ => format!(
            "EventSource {} is ready",
            first_of(sources, |(n, _)| n.clone())
        ),
    };
    Verdict::holds(EVENT_SOURCE_READY, "Ready", message)
}

fn source_clusters_verdict(
    trigger: &EventTrigger,
    status: &EventTriggerStatus,
    plan_error: Option<&str>,
    registered: usize,
) -> Verdict {
    if let Some(error) = plan_error.filter(|e| e.starts_with("sourceClusterSelector")) {
        return Verdict::fails(SOURCE_CLUSTERS_MATCHED, "InvalidSelector", error);
    }
    let matching = &status.matching_cluster_refs;
    if matching.is_empty() {
        let wanted = selector::to_selector_string(&trigger.spec.source_cluster_selector);
        let sets = &trigger.spec.cluster_set_refs;
        let what = match (wanted.is_empty(), sets.is_empty()) {
            (true, true) => {
                "the trigger has neither sourceClusterSelector nor clusterSetRefs".to_owned()
            }
            (false, true) => format!(
                "no ready cluster of the {registered} registered matches sourceClusterSelector \
                 {wanted}"
            ),
            _ => format!(
                "no ready cluster of the {registered} registered matches sourceClusterSelector \
                 {wanted} or is selected by ClusterSets {}",
                sets.join(", ")
            ),
        };
        return Verdict::fails(SOURCE_CLUSTERS_MATCHED, "NoMatchingCluster", what);
    }
    Verdict::holds(
        SOURCE_CLUSTERS_MATCHED,
        "Matched",
        format!(
            "{} {}: {}",
            count(matching.len(), "source cluster"),
            if matching.len() == 1 {
                "matches"
            } else {
                "match"
            },
            first_of(matching, cluster_name)
        ),
    )
}

fn generated_verdict(status: &EventTriggerStatus, plan_error: Option<&str>) -> Verdict {
    if let Some(error) = plan_error {
        return Verdict::fails(PROFILES_GENERATED, GENERATION_FAILED, error);
    }
    let of = |wanted: SveltosFeatureStatus| -> Vec<_> {
        status
            .cluster_info
            .iter()
            .filter(|i| i.status == Some(wanted))
            .collect()
    };
    let describe = |i: &&api::v1beta1::ClusterInfo| {
        format!(
            "cluster {}: {}",
            cluster_name(&i.cluster),
            i.failure_message.as_deref().unwrap_or_default()
        )
    };
    let failed = of(SveltosFeatureStatus::Failed);
    if !failed.is_empty() {
        return Verdict::fails(
            PROFILES_GENERATED,
            GENERATION_FAILED,
            first_of(&failed, describe),
        );
    }
    let held = of(SveltosFeatureStatus::Provisioning);
    if !held.is_empty() {
        return Verdict::fails(
            PROFILES_GENERATED,
            "ClusterPaused",
            first_of(&held, describe),
        );
    }
    Verdict::holds(
        PROFILES_GENERATED,
        "Generated",
        format!(
            "profiles are generated for {}",
            count(status.cluster_info.len(), "cluster")
        ),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use api::v1beta1::ClusterInfo;
    use serde_json::json;

    fn trigger(spec: serde_json::Value) -> EventTrigger {
        let mut base = json!({"sourceClusterSelector": {"matchLabels": {"env": "fv"}},
            "eventSourceName": "es"});
        base.as_object_mut()
            .unwrap()
            .extend(spec.as_object().unwrap().clone());
        serde_json::from_value(json!({"apiVersion": "lib.projectsveltos.io/v1beta1",
            "kind": "EventTrigger", "metadata": {"name": "t"}, "spec": base}))
        .unwrap()
    }

    fn cluster(name: &str) -> ObjectReference {
        ObjectReference {
            namespace: Some("default".into()),
            name: Some(name.into()),
            kind: Some("SveltosCluster".into()),
            ..Default::default()
        }
    }

    fn info(name: &str, status: SveltosFeatureStatus, message: Option<&str>) -> ClusterInfo {
        ClusterInfo {
            cluster: cluster(name),
            hash: None,
            status: Some(status),
            failure_message: message.map(str::to_owned),
        }
    }

    fn facts(sources: &[(&str, SourceState)]) -> Facts {
        Facts {
            sources: sources
                .iter()
                .map(|(n, s)| ((*n).to_owned(), s.clone()))
                .collect(),
            registered: 3,
            destinations: None,
        }
    }

    fn ready(verdicts: &[Verdict]) -> &Verdict {
        verdicts.last().unwrap()
    }

    #[test]
    fn a_whole_chain_is_ready() {
        let status = EventTriggerStatus {
            matching_cluster_refs: vec![cluster("c1")],
            cluster_info: vec![info("c1", SveltosFeatureStatus::Provisioned, None)],
            ..Default::default()
        };
        let verdicts = trigger_verdicts(
            &trigger(json!({})),
            &status,
            None,
            &facts(&[("es", SourceState::Ready)]),
        );
        assert!(verdicts.iter().all(|v| v.holds), "{verdicts:#?}");
        assert_eq!(ready(&verdicts).type_, "Ready");
    }

    #[test]
    fn each_break_is_named_in_words() {
        let none = EventTriggerStatus::default();
        let cases = [
            (
                trigger_verdicts(
                    &trigger(json!({})),
                    &none,
                    None,
                    &facts(&[("es", SourceState::Missing)]),
                ),
                "EventSourceNotFound",
                "EventSource es does not exist",
            ),
            (
                trigger_verdicts(
                    &trigger(json!({})),
                    &none,
                    None,
                    &facts(&[(
                        "es",
                        SourceState::NotReady("script does not compile".into()),
                    )]),
                ),
                "EventSourceNotReady",
                "EventSource es: script does not compile",
            ),
            (
                trigger_verdicts(
                    &trigger(json!({})),
                    &none,
                    None,
                    &facts(&[("es", SourceState::Ready)]),
                ),
                "NoMatchingCluster",
                "no ready cluster of the 3 registered matches sourceClusterSelector env=fv",
            ),
            (
                trigger_verdicts(
                    &trigger(json!({})),
                    &none,
                    Some("sourceClusterSelector: unknown operator \"Near\""),
                    &facts(&[("es", SourceState::Ready)]),
                ),
                "InvalidSelector",
                "sourceClusterSelector: unknown operator \"Near\"",
            ),
        ];
        for (verdicts, reason, message) in cases {
            let ready = ready(&verdicts);
            assert!(!ready.holds);
            assert_eq!(
                (ready.reason.as_str(), ready.message.as_str()),
                (reason, message)
            );
        }
    }

    #[test]
    fn failed_and_paused_clusters_and_empty_destinations_are_said() {
        let status = EventTriggerStatus {
            matching_cluster_refs: vec![cluster("c1"), cluster("c2")],
            cluster_info: vec![
                info("c1", SveltosFeatureStatus::Provisioned, None),
                info("c2", SveltosFeatureStatus::Failed, Some("bad YAML")),
            ],
            ..Default::default()
        };
        let ok = facts(&[("es", SourceState::Ready)]);
        let verdicts = trigger_verdicts(&trigger(json!({})), &status, None, &ok);
        assert_eq!(ready(&verdicts).message, "cluster default/c2: bad YAML");
        assert_eq!(ready(&verdicts).reason, GENERATION_FAILED);

        let paused = EventTriggerStatus {
            cluster_info: vec![info(
                "c1",
                SveltosFeatureStatus::Provisioning,
                Some("paused"),
            )],
            ..status.clone()
        };
        let verdicts = trigger_verdicts(&trigger(json!({})), &paused, None, &ok);
        assert_eq!(ready(&verdicts).reason, "ClusterPaused");

        let fine = EventTriggerStatus {
            cluster_info: vec![info("c1", SveltosFeatureStatus::Provisioned, None)],
            ..status
        };
        let elsewhere =
            trigger(json!({"destinationClusterSelector": {"matchLabels": {"env": "prod"}}}));
        let none = Facts {
            destinations: Some(Ok(0)),
            ..ok
        };
        let verdicts = trigger_verdicts(&elsewhere, &fine, None, &none);
        assert_eq!(ready(&verdicts).reason, "NoDestinationCluster");
        assert_eq!(
            ready(&verdicts).message,
            "no registered cluster matches destinationClusterSelector env=prod"
        );
    }
}
