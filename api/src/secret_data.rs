//! Collected Secrets travel in EventReports without their data. Upstream puts a collected
//! Secret in the report whole, readable by anyone who may read reports and in every audit log
//! (projectsveltos/sveltos#479). Here the agent moves what a Secret must not show (`data`,
//! `stringData` and kubectl's last-applied annotation, which repeats them) into a companion
//! Secret beside the report, keyed by the digest of the stripped document; the report names
//! the companion's content digest in an annotation, and the manager, the companion's only
//! reader, puts the data back before templates see the object.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::labels::LAST_APPLIED_ANNOTATION;

/// On an EventReport: digest of the companion Secret's data this report was written with; on
/// the companion: digest of its own data. Equal values mean the two are in step.
pub const SECRET_DATA_ANNOTATION: &str = "eventreport.sveltos-events.io/secret-data";
/// Marks a companion Secret (value `ok`), so watchers can tell it from other Secrets.
pub const SECRET_DATA_LABEL: &str = "eventreport.sveltos-events.io/secret-data";

/// Name of the companion Secret of the EventReport `report` (in the report's namespace).
pub fn companion_name(report: &str) -> String {
    format!("{report}--secret-data")
}

/// Whether `object` is a core/v1 Secret.
pub fn is_secret(object: &Value) -> bool {
    object.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && object.get("kind").and_then(Value::as_str) == Some("Secret")
}

/// The companion key of a collected document: hex SHA-256 of its bytes (a valid Secret key).
pub fn document_key(document: &[u8]) -> String {
    hex(&Sha256::digest(document))
}

/// Digest of a companion's whole data, in the form [`SECRET_DATA_ANNOTATION`] holds.
pub fn data_digest(data: &BTreeMap<String, Vec<u8>>) -> String {
    let mut hasher = Sha256::new();
    for (key, value) in data {
        hasher.update((key.len() as u64).to_be_bytes());
        hasher.update(key.as_bytes());
        hasher.update((value.len() as u64).to_be_bytes());
        hasher.update(value);
    }
    hex(&hasher.finalize()[..16])
}

/// Removes from a Secret what it must not show in a report and returns it (as the JSON the
/// companion stores); `None` when `object` is not a Secret or has nothing to remove.
pub fn seal(object: &mut Value) -> Option<Value> {
    if !is_secret(object) {
        return None;
    }
    let root = object.as_object_mut()?;
    let mut sealed = Map::new();
    for field in ["data", "stringData"] {
        if let Some(value) = root.remove(field) {
            sealed.insert(field.to_owned(), value);
        }
    }
    let annotations = root
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut);
    if let Some(annotations) = annotations
        && let Some(applied) = annotations.remove(LAST_APPLIED_ANNOTATION)
    {
        let mut moved = Map::new();
        moved.insert(LAST_APPLIED_ANNOTATION.to_owned(), applied);
        sealed.insert("annotations".to_owned(), Value::Object(moved));
    }
    (!sealed.is_empty()).then_some(Value::Object(sealed))
}

/// Puts back into `object` what [`seal`] removed.
pub fn unseal(object: &mut Value, sealed: &Value) {
    let (Some(root), Some(sealed)) = (object.as_object_mut(), sealed.as_object()) else {
        return;
    };
    for field in ["data", "stringData"] {
        if let Some(value) = sealed.get(field) {
            root.insert(field.to_owned(), value.clone());
        }
    }
    if let Some(moved) = sealed.get("annotations").and_then(Value::as_object) {
        let metadata = root
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(metadata) = metadata.as_object_mut() {
            let annotations = metadata
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(annotations) = annotations.as_object_mut() {
                for (key, value) in moved {
                    annotations.insert(key.clone(), value.clone());
                }
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret() -> Value {
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "token", "namespace": "kube-system", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"token\":\"czNjcjN0\"}}",
                "team": "a"}},
            "type": "Opaque", "data": {"token": "czNjcjN0"}})
    }

    #[test]
    fn a_sealed_secret_shows_no_data_and_unseals_to_the_original() {
        let original = secret();
        let mut object = original.clone();
        let sealed = seal(&mut object).unwrap_or_else(|| panic!("a Secret with data seals"));
        let shown = object.to_string();
        assert!(!shown.contains("czNjcjN0"), "{shown}");
        assert_eq!(object["metadata"]["annotations"], json!({"team": "a"}));
        assert_eq!(object["type"], "Opaque");
        unseal(&mut object, &sealed);
        assert_eq!(object, original);
    }

    #[test]
    fn other_kinds_and_empty_secrets_are_left_alone() {
        let mut config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}});
        assert_eq!(seal(&mut config_map), None);
        assert_eq!(config_map["data"]["a"], "b");
        let mut empty = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "e"}});
        assert_eq!(seal(&mut empty), None);
    }

    #[test]
    fn digests_tell_contents_apart() {
        let one = BTreeMap::from([("a".to_owned(), b"bc".to_vec())]);
        let other = BTreeMap::from([("ab".to_owned(), b"c".to_vec())]);
        assert_ne!(data_digest(&one), data_digest(&other));
        assert_eq!(data_digest(&one), data_digest(&one.clone()));
        assert_eq!(document_key(b"{}").len(), 64);
    }
}
