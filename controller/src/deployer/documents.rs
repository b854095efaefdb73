//! The objects a referenced ConfigMap/Secret holds: each data value is one or more YAML (or
//! JSON) documents; empty and comment-only documents are skipped, and a document that is a
//! list of strings is read as a list of documents, as Sveltos accepts.

use serde_json::Value;

/// Longest data value read (the API server's object limit is about this size).
const MAX_VALUE_BYTES: usize = 3 * 1024 * 1024;
/// Deepest nesting of lists of strings.
const MAX_LIST_DEPTH: usize = 4;

/// The Kubernetes objects in one data value; `key` names it in errors.
pub fn objects(key: &str, text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    collect(key, text, 0, &mut out)?;
    Ok(out)
}

fn collect(key: &str, text: &str, depth: usize, out: &mut Vec<Value>) -> Result<(), String> {
    if text.len() > MAX_VALUE_BYTES {
        return Err(format!(
            "key {key:?} is larger than {MAX_VALUE_BYTES} bytes"
        ));
    }
    // The parser's first line says what and where; the source excerpt after it does not
    // belong in a one-line status message.
    let documents = api::load::documents(text).map_err(|e| {
        let said = e.to_string();
        format!("key {key:?}: {}", said.lines().next().unwrap_or_default())
    })?;
    for (index, document) in documents.into_iter().enumerate() {
        match document {
            Value::Object(_) => {
                check(key, index, &document)?;
                out.push(document);
            }
            Value::Array(items) if depth < MAX_LIST_DEPTH => {
                for item in items {
                    let Value::String(text) = item else {
                        return Err(format!(
                            "key {key:?} document {}: a list must hold YAML strings",
                            index + 1
                        ));
                    };
                    collect(key, &text, depth + 1, out)?;
                }
            }
            _ => {
                return Err(format!(
                    "key {key:?} document {}: not a Kubernetes object",
                    index + 1
                ));
            }
        }
    }
    Ok(())
}

fn check(key: &str, index: usize, object: &Value) -> Result<(), String> {
    let field = |name: &str| {
        object
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let missing = match (field("apiVersion"), field("kind"), name) {
        (None, _, _) => Some("apiVersion"),
        (_, None, _) => Some("kind"),
        (_, _, None) => Some("metadata.name"),
        _ => None,
    };
    match missing {
        Some(what) => Err(format!(
            "key {key:?} document {}: {what} is missing",
            index + 1
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn multi_document_values_with_comments_and_lists() {
        let text = "# a comment only\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n---\n- |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: b\n";
        let objects = objects("k", text).unwrap();
        let names: Vec<_> = objects
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn json_values_and_errors_that_name_the_document() {
        assert_eq!(
            objects(
                "k",
                r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#
            )
            .unwrap()
            .len(),
            1
        );
        let error = objects(
            "policy.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
        )
        .unwrap_err();
        assert_eq!(
            error,
            "key \"policy.yaml\" document 1: metadata.name is missing"
        );
        let error = objects("k", "just text").unwrap_err();
        assert!(error.contains("not a Kubernetes object"), "{error}");
    }
}
