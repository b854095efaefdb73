//! Metadata-only answers (`Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`),
//! as kube-rs' `metadata_watcher` and client-go's metadata informers ask for them: each object
//! reduced to its kind, apiVersion and metadata.

use super::Req;
use serde_json::{Value, json};

/// The API version of metadata-only answers.
const META: &str = "meta.k8s.io/v1";

/// Whether the request's Accept header asks for `as=WHAT;g=meta.k8s.io;v=v1`.
pub fn wants_as(req: &Req, what: &str) -> bool {
    let wanted = format!("as={what}");
    req.headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|accept| {
            let params: Vec<&str> = accept.split(';').map(str::trim).collect();
            params.contains(&wanted.as_str())
                && params.contains(&"g=meta.k8s.io")
                && params.contains(&"v=v1")
        })
}

/// Whether a get or watch asks for metadata only.
pub fn wanted(req: &Req) -> bool {
    wants_as(req, "PartialObjectMetadata")
}

/// Whether a list asks for metadata only.
pub fn wanted_list(req: &Req) -> bool {
    wants_as(req, "PartialObjectMetadataList")
}

/// `object` as a `PartialObjectMetadata`.
pub fn object(object: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": META, "metadata": object["metadata"]})
}

/// A `PartialObjectMetadataList` of `items` with the list's `metadata`.
pub fn list(metadata: &Value, items: impl Iterator<Item = Value>) -> Value {
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": META,
        "metadata": metadata,
        "items": items.map(|item| object(&item)).collect::<Vec<_>>(),
    })
}
