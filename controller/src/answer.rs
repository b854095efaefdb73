//! Writes whose answer is read for its metadata only. The API server answers a write with the
//! whole object, managedFields included (often as large as the rest); the controllers keep
//! its name, labels and versions, so the JSON reader skips everything else instead of
//! decoding a typed object that would be dropped at once.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams};
use kube::{Client, Resource};
use serde::{Deserialize, Serialize};

/// Patches `K` object `name` (in `namespace`, when `K` is namespaced), or its `subresource`;
/// returns the metadata of the object as the server answered.
pub async fn patch<K>(
    client: &Client,
    (namespace, name): (Option<&str>, &str),
    subresource: Option<&str>,
    params: &PatchParams,
    patch: &Patch<impl Serialize>,
) -> kube::Result<ObjectMeta>
where
    K: Resource<DynamicType = ()>,
{
    let request = kube::core::Request::new(K::url_path(&(), namespace));
    let request = match subresource {
        Some(subresource) => request.patch_subresource(subresource, name, params, patch),
        None => request.patch(name, params, patch),
    }
    .map_err(kube::Error::BuildRequest)?;
    let answer: Answer = client.request(request).await?;
    Ok(answer.metadata.into())
}

/// What is read of an answer.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    metadata: Meta,
}

/// What is read of an answer's metadata.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    resource_version: Option<String>,
    generation: Option<i64>,
}

impl From<Meta> for ObjectMeta {
    fn from(meta: Meta) -> Self {
        ObjectMeta {
            name: meta.name,
            namespace: meta.namespace,
            uid: meta.uid,
            labels: meta.labels,
            resource_version: meta.resource_version,
            generation: meta.generation,
            ..ObjectMeta::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_gives_its_identity_labels_and_versions_and_nothing_else() {
        let answer = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "c", "namespace": "projectsveltos", "uid": "u-1",
                "labels": {"a": "b"}, "annotations": {"x": "y"},
                "resourceVersion": "42", "generation": 3,
                "managedFields": [{"manager": "m", "operation": "Apply",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]
            },
            "data": {"k": "v"}
        });
        let answer: Answer = serde_json::from_value(answer).unwrap();
        let meta = ObjectMeta::from(answer.metadata);
        let expected = ObjectMeta {
            name: Some("c".into()),
            namespace: Some("projectsveltos".into()),
            uid: Some("u-1".into()),
            labels: Some(BTreeMap::from([("a".into(), "b".into())])),
            resource_version: Some("42".into()),
            generation: Some(3),
            ..ObjectMeta::default()
        };
        assert_eq!(meta, expected);
        // An answer without metadata (a Status, say) reads as empty metadata.
        let bare: Answer = serde_json::from_value(json!({"kind": "Status"})).unwrap();
        assert_eq!(ObjectMeta::from(bare.metadata), ObjectMeta::default());
    }
}
