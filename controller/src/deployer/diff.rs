//! What a DryRun deployment would change in an object, as a unified diff of its YAML: the
//! object as it is in the cluster against what the API server answered the dry-run apply
//! with, leaving out what the server keeps for itself (status, resourceVersion, managedFields)
//! and the deployer's hash annotation.

use api::labels::HASH_ANNOTATION;
use serde_json::Value;

/// Metadata fields the server owns: they change on every write and say nothing of the add-on.
const SERVER_METADATA: [&str; 6] = [
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
];

/// The unified diff from `live` to `after` (empty when they agree).
pub fn diff(live: &Value, after: &Value) -> String {
    let (live, after) = (yaml(live), yaml(after));
    if live == after {
        return String::new();
    }
    similar::TextDiff::from_lines(&live, &after)
        .unified_diff()
        .context_radius(3)
        .header("live", "after deployment")
        .to_string()
}

fn yaml(object: &Value) -> String {
    let mut object = object.clone();
    if let Some(fields) = object.as_object_mut() {
        fields.remove("status");
    }
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in SERVER_METADATA {
            metadata.remove(field);
        }
        if let Some(annotations) = metadata
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
        {
            annotations.remove(HASH_ANNOTATION);
        }
    }
    serde_saphyr::to_string(&object).unwrap_or_else(|e| format!("<not YAML: {e}>\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_changed_field_is_one_hunk_and_server_fields_are_left_out() {
        let live = json!({
            "kind": "ConfigMap",
            "metadata": {"name": "c", "resourceVersion": "7", "managedFields": [{"manager": "x"}]},
            "data": {"a": "1", "b": "2"}
        });
        let after = json!({
            "kind": "ConfigMap",
            "metadata": {"name": "c", "resourceVersion": "8"},
            "data": {"a": "1", "b": "3"}
        });
        let text = diff(&live, &after);
        assert!(
            text.starts_with("--- live\n+++ after deployment\n"),
            "{text}"
        );
        assert!(
            text.contains("-  b: '2'") || text.contains("-  b: \"2\""),
            "{text}"
        );
        assert!(
            text.contains("+  b: '3'") || text.contains("+  b: \"3\""),
            "{text}"
        );
        assert!(
            !text.contains("resourceVersion") && !text.contains("manager"),
            "{text}"
        );
        assert_eq!(diff(&live, &live), "");
    }
}
