//! Test doubles for the seams of the decision modules.

use serde_json::Value;

use crate::instantiate::{Lookup, Referenced};
use crate::render::Render;

/// Stands in for the template engine: replaces `{{ .Resource.metadata.name }}` and
/// `{{ .Cluster.metadata.name }}`, and fails on any other action like `missingkey=error` would.
pub struct NameOnly;

impl Render for NameOnly {
    fn render(&self, _: &str, text: &str, data: &Value) -> Result<String, String> {
        let mut out = text.to_string();
        for (action, pointer) in [
            ("{{ .Resource.metadata.name }}", "/Resource/metadata/name"),
            ("{{ .Cluster.metadata.name }}", "/Cluster/metadata/name"),
        ] {
            if out.contains(action) {
                let value = data
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("map has no entry for key at {pointer}"))?;
                out = out.replace(action, value);
            }
        }
        if out.contains("{{") {
            Err("unexpected action".into())
        } else {
            Ok(out)
        }
    }
}

/// An in-memory set of ConfigMaps and Secrets.
pub struct Objects(pub Vec<Referenced>);

impl Lookup for Objects {
    fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Referenced> {
        self.0
            .iter()
            .find(|o| o.kind == kind && o.namespace == namespace && o.name == name)
            .cloned()
    }
}
