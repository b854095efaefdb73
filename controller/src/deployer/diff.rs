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

/// The largest diff a ClusterReport records for one object: the report must stay within the
/// API server's request limit (about 1.5 MiB) whatever the add-ons hold.
pub const MAX_DIFF_BYTES: usize = 256 * 1024;

/// The unified diff from `live` to `after` (empty when they agree). A Secret's values are
/// shown by digest, never in clear (ClusterReports are read more widely than Secrets); a
/// diff larger than [`MAX_DIFF_BYTES`] is replaced by a sentence saying so, never cut.
pub fn diff(live: &Value, after: &Value) -> String {
    let (live, after) = (yaml(live), yaml(after));
    if live == after {
        return String::new();
    }
    let text = similar::TextDiff::from_lines(&live, &after)
        .unified_diff()
        .context_radius(3)
        .header("live", "after deployment")
        .to_string();
    if text.len() > MAX_DIFF_BYTES {
        return format!(
            "the diff has {} bytes, more than the {MAX_DIFF_BYTES} a ClusterReport keeps for one \
             object; compare it with `kubectl diff` against the cluster\n",
            text.len()
        );
    }
    text
}

/// A Secret value as the diff shows it: its length and digest.
fn digest(value: &Value) -> Value {
    use sha2::Digest;
    let text = value.as_str().unwrap_or_default();
    let sum = sha2::Sha256::digest(text.as_bytes());
    let hex: String = sum.iter().take(6).map(|b| format!("{b:02x}")).collect();
    Value::String(format!("<secret: {} bytes, sha256 {hex}...>", text.len()))
}

fn yaml(object: &Value) -> String {
    let mut object = object.clone();
    if object["kind"] == "Secret" {
        for field in ["data", "stringData"] {
            if let Some(values) = object.get_mut(field).and_then(Value::as_object_mut) {
                for value in values.values_mut() {
                    *value = digest(value);
                }
            }
        }
    }
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

    #[test]
    fn a_secret_changes_by_digest_and_a_huge_diff_is_said_not_cut() {
        let secret = |token: &str| json!({"kind": "Secret", "metadata": {"name": "s"}, "data": {"token": token}});
        let text = diff(&secret("c2VjcmV0LTE="), &secret("c2VjcmV0LTI="));
        let changed = |sign: char| {
            text.lines()
                .any(|l| l.starts_with(sign) && l.contains("token: \"<secret: 12 bytes, sha256 "))
        };
        assert!(changed('-') && changed('+'), "{text}");
        assert!(!text.contains("c2VjcmV0"), "{text}");
        let big = |c: char| json!({"kind": "ConfigMap", "data": {"a": c.to_string().repeat(MAX_DIFF_BYTES)}});
        let said = diff(&big('x'), &big('y'));
        assert!(
            said.starts_with("the diff has ") && said.len() < 200,
            "{said}"
        );
    }
}
