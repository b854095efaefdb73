//! Watched objects as a cluster's loop keeps them between evaluations: compact JSON text and
//! the facts selection reads. A parsed Service is about seven times its text, and a hub keeps
//! every selected object of every cluster; most evaluations read only the facts (a script
//! runs again only for objects that changed), so an object is parsed only to run a script,
//! to feed an aggregation, or to take a Secret's data out of a report. A report's document
//! of an object is this same text, shared.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::evaluate::Object;
use crate::select::Facts;

/// One watched object: its JSON text, as `Value::to_string` prints it, and its facts.
#[derive(Clone, Debug)]
pub struct Kept(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    text: Arc<str>,
    facts: Facts,
}

impl Kept {
    /// Keeps `object`.
    pub fn new(object: &Value) -> Kept {
        Kept(Arc::new(Inner {
            text: object.to_string().into(),
            facts: Facts::of(object),
        }))
    }
}

impl Object for Kept {
    fn facts(&self) -> Cow<'_, Facts> {
        Cow::Borrowed(&self.0.facts)
    }

    fn value(&self) -> Result<Cow<'_, Value>, String> {
        serde_json::from_str(&self.0.text)
            .map(Cow::Owned)
            .map_err(|error| format!("{} does not parse back: {error}", self.0.facts.describe()))
    }

    fn from_value(value: Value) -> Self {
        Kept::new(&value)
    }

    fn text(&self) -> Option<Arc<str>> {
        Some(Arc::clone(&self.0.text))
    }
}

impl clusters::objects::Keep for Kept {
    fn keep(object: Value) -> Self {
        Kept::new(&object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_kept_object_reads_back_as_it_was() {
        let object = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "a", "namespace": "eng", "uid": "u", "resourceVersion": "7",
                         "labels": {"app": "web", "n": 1}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"ports": [{"port": 443, "weight": 0.1}]}
        });
        let kept = Kept::new(&object);
        assert_eq!(kept.value().unwrap().as_ref(), &object);
        assert_eq!(kept.text().as_deref(), Some(object.to_string().as_str()));
        let facts = kept.facts();
        assert_eq!(facts.as_ref(), &Facts::of(&object));
        assert_eq!(facts.gvk(), ("", "v1", "Service"));
        assert_eq!(facts.labels.len(), 1, "non-string labels are not labels");
        assert!(facts.deleting);
        assert_eq!(facts.version, Some(("u".into(), "7".into())));
    }
}
