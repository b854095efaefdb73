//! Status conditions in the shape of Kubernetes' `metav1.Condition`, as kubectl, `kubectl wait
//! --for=condition=Ready` and `describe` read them. EventSources, EventTriggers and EventReports
//! carry them (an extension of this project: upstream keeps failures in logs).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The condition every kind sets: whether the object does what it says, and if not why.
pub const READY: &str = "Ready";

/// One aspect of an object's state.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// What this condition is about (`Ready`, `SourceClustersMatched`, ...).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The generation of the object this condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When `status` last changed.
    #[schemars(schema_with = "crate::schema::date_time")]
    pub last_transition_time: Time,
    /// Why, in one CamelCase word.
    pub reason: String,
    /// Why, in words.
    #[serde(default)]
    pub message: String,
}

/// A condition before its time is known: what a controller decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The condition's type.
    pub type_: String,
    /// Whether it holds.
    pub holds: bool,
    /// Why, in one CamelCase word.
    pub reason: String,
    /// Why, in words.
    pub message: String,
}

impl Verdict {
    /// A condition that holds.
    pub fn holds(type_: &str, reason: &str, message: impl Into<String>) -> Self {
        Self {
            type_: type_.to_owned(),
            holds: true,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// A condition that does not hold.
    pub fn fails(type_: &str, reason: &str, message: impl Into<String>) -> Self {
        Self {
            type_: type_.to_owned(),
            holds: false,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }
}

/// `Ready`: true when every verdict holds, else the first failing one's reason and message.
pub fn ready(verdicts: &[Verdict], ok: &str) -> Verdict {
    match verdicts.iter().find(|v| !v.holds) {
        Some(first) => Verdict::fails(READY, &first.reason, first.message.clone()),
        None => Verdict::holds(READY, "Ready", ok),
    }
}

/// The conditions `verdicts` make, keeping each one's transition time from `before` when its
/// status did not change (as `meta.SetStatusCondition` does); `now` is the time of a change.
pub fn merge(
    before: &[Condition],
    verdicts: &[Verdict],
    generation: Option<i64>,
    now: &Time,
) -> Vec<Condition> {
    verdicts
        .iter()
        .map(|verdict| {
            let status = if verdict.holds { "True" } else { "False" };
            let kept = before
                .iter()
                .find(|c| c.type_ == verdict.type_ && c.status == status)
                .map(|c| c.last_transition_time.clone());
            Condition {
                type_: verdict.type_.clone(),
                status: status.to_owned(),
                observed_generation: generation,
                last_transition_time: kept.unwrap_or_else(|| now.clone()),
                reason: verdict.reason.clone(),
                message: verdict.message.clone(),
            }
        })
        .collect()
}

/// The condition of type `type_`, if set.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Now, as a condition's time (whole seconds, as the API server stores it).
pub fn now() -> Time {
    let now = k8s_openapi::jiff::Timestamp::now();
    Time(k8s_openapi::jiff::Timestamp::from_second(now.as_second()).unwrap_or(now))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn at(second: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap())
    }

    #[test]
    fn transition_times_move_only_when_the_status_changes() {
        let first = merge(
            &[],
            &[Verdict::fails("Ready", "NoMatchingCluster", "none")],
            Some(1),
            &at(10),
        );
        assert_eq!(first[0].status, "False");
        // Same status, new words: the time stays.
        let again = merge(
            &first,
            &[Verdict::fails("Ready", "EventSourceNotFound", "gone")],
            Some(2),
            &at(20),
        );
        assert_eq!(again[0].last_transition_time, at(10));
        assert_eq!(again[0].reason, "EventSourceNotFound");
        assert_eq!(again[0].observed_generation, Some(2));
        // The status flips: the time moves.
        let fixed = merge(
            &again,
            &[Verdict::holds("Ready", "Ready", "ok")],
            Some(2),
            &at(30),
        );
        assert_eq!(fixed[0].last_transition_time, at(30));
    }

    #[test]
    fn ready_names_the_first_failure() {
        let verdicts = [
            Verdict::holds("A", "Fine", "a"),
            Verdict::fails("B", "Broken", "b is broken"),
            Verdict::fails("C", "AlsoBroken", "c"),
        ];
        let ready = ready(&verdicts, "all good");
        assert!(!ready.holds);
        assert_eq!(
            (ready.reason.as_str(), ready.message.as_str()),
            ("Broken", "b is broken")
        );
        assert!(super::ready(&verdicts[..1], "all good").holds);
    }

    #[test]
    fn conditions_serialise_as_kubernetes_does() {
        let condition = &merge(&[], &[Verdict::holds("Ready", "Ready", "ok")], None, &at(0))[0];
        let json = serde_json::to_value(condition).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "Ready", "status": "True",
                "lastTransitionTime": "1970-01-01T00:00:00Z", "reason": "Ready", "message": "ok"})
        );
    }
}
