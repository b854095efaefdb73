//! Conversion between the served versions of EventSource and EventTrigger (v1alpha1 and
//! v1beta1), as the CRDs' conversion webhook performs it, over JSON objects. Metadata and
//! status pass through untouched; only `spec` (and the legacy-instantiation annotation that
//! v1alpha1 triggers carry once converted) differ between versions.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{v1alpha1, v1beta1};

const ALPHA: &str = "lib.projectsveltos.io/v1alpha1";
const BETA: &str = "lib.projectsveltos.io/v1beta1";

fn typed<T: DeserializeOwned>(object: &Value) -> Result<T, String> {
    serde_json::from_value(object.clone()).map_err(|e| format!("not a valid object: {e}"))
}

fn untyped<T: Serialize>(object: &T) -> Result<Value, String> {
    serde_json::to_value(object).map_err(|e| e.to_string())
}

/// `object` as `to_api_version` serves it; objects already there come back unchanged.
pub fn convert(object: &Value, to_api_version: &str) -> Result<Value, String> {
    let from = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if from == to_api_version {
        return Ok(object.clone());
    }
    let converted = match (kind, from, to_api_version) {
        ("EventSource", ALPHA, BETA) => untyped(&v1beta1::EventSource::from(typed::<
            v1alpha1::EventSource,
        >(object)?))?,
        ("EventSource", BETA, ALPHA) => untyped(&v1alpha1::EventSource::from(typed::<
            v1beta1::EventSource,
        >(object)?))?,
        ("EventTrigger", ALPHA, BETA) => {
            let trigger: v1beta1::EventTrigger = typed::<v1alpha1::EventTrigger>(object)?
                .try_into()
                .map_err(|e| format!("{e}"))?;
            untyped(&trigger)?
        }
        ("EventTrigger", BETA, ALPHA) => {
            let trigger: v1alpha1::EventTrigger = typed::<v1beta1::EventTrigger>(object)?
                .try_into()
                .map_err(|e| format!("{e}"))?;
            untyped(&trigger)?
        }
        _ => {
            return Err(format!(
                "cannot convert {kind} from {from} to {to_api_version}"
            ));
        }
    };
    let mut out = object.clone();
    out["apiVersion"] = json!(to_api_version);
    out["spec"] = converted.get("spec").cloned().unwrap_or(Value::Null);
    let annotations = converted.pointer("/metadata/annotations").cloned();
    if let Some(metadata) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        match annotations {
            Some(annotations) if annotations.as_object().is_some_and(|a| !a.is_empty()) => {
                metadata.insert("annotations".into(), annotations);
            }
            _ => {
                metadata.remove("annotations");
            }
        }
    }
    Ok(out)
}

/// The answer to an `apiextensions.k8s.io/v1` ConversionReview request.
pub fn review(request: &Value) -> Value {
    let uid = request
        .pointer("/request/uid")
        .cloned()
        .unwrap_or(Value::Null);
    let desired = request
        .pointer("/request/desiredAPIVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let objects = request
        .pointer("/request/objects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let converted: Result<Vec<Value>, String> =
        objects.iter().map(|o| convert(o, desired)).collect();
    let response = match converted {
        Ok(objects) => {
            json!({"uid": uid, "result": {"status": "Success"}, "convertedObjects": objects})
        }
        Err(message) => json!({"uid": uid, "result": {"status": "Failure", "message": message}}),
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response})
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_seed_event_source_round_trips_and_keeps_metadata() {
        let alpha = json!({
            "apiVersion": ALPHA, "kind": "EventSource",
            "metadata": {"name": "sveltos-service", "uid": "u1", "resourceVersion": "7"},
            "spec": {"collectResources": true, "group": "", "version": "v1", "kind": "Service",
                     "labelsFilters": [{"key": "sveltos", "operation": "Equal", "value": "fv"}]}
        });
        let beta = convert(&alpha, BETA).unwrap();
        assert_eq!(beta["apiVersion"], BETA);
        assert_eq!(beta["metadata"]["uid"], "u1");
        assert_eq!(beta["spec"]["resourceSelectors"][0]["kind"], "Service");
        assert_eq!(
            beta["spec"]["resourceSelectors"][0]["labelFilters"][0]["value"],
            "fv"
        );
        let back = convert(&beta, ALPHA).unwrap();
        assert_eq!(back["spec"]["resourceSelectors"][0]["kind"], "Service");
        assert_eq!(convert(&back, BETA).unwrap()["spec"], beta["spec"]);
    }

    #[test]
    fn a_string_selector_trigger_converts_and_marks_legacy_instantiation() {
        let alpha = json!({
            "apiVersion": ALPHA, "kind": "EventTrigger",
            "metadata": {"name": "t"},
            "spec": {"sourceClusterSelector": "env=fv", "eventSourceName": "s", "oneForEvent": true},
            "status": {"matchingClusters": []}
        });
        let beta = convert(&alpha, BETA).unwrap();
        assert_eq!(
            beta["spec"]["sourceClusterSelector"]["matchLabels"]["env"],
            "fv"
        );
        assert!(beta["metadata"]["annotations"].as_object().unwrap().len() == 1);
        assert_eq!(beta["status"], alpha["status"]);
        let back = convert(&beta, ALPHA).unwrap();
        assert_eq!(back["spec"]["sourceClusterSelector"], "env=fv");
        assert!(back["metadata"].get("annotations").is_none());
    }

    #[test]
    fn reviews_answer_each_object_or_fail_with_the_reason() {
        let request = json!({"request": {"uid": "r1", "desiredAPIVersion": BETA, "objects": [
            {"apiVersion": ALPHA, "kind": "EventTrigger", "metadata": {"name": "t"},
             "spec": {"sourceClusterSelector": "env in (a,b", "eventSourceName": "s"}}
        ]}});
        let answer = review(&request);
        assert_eq!(answer["response"]["uid"], "r1");
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        assert!(
            answer["response"]["result"]["message"]
                .as_str()
                .unwrap()
                .contains("env in (a,b"),
            "{answer}"
        );
    }
}
