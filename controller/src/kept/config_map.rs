//! The record of a ConfigMap: its metadata and data (templates and policies read the data,
//! the manager its labels and versions). Binary data is not kept: nothing reads it.

use k8s_openapi::api::core::v1::ConfigMap;

use super::{KeptMeta, Texts};

/// What the controllers keep of a ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptConfigMap {
    /// Its metadata.
    pub metadata: KeptMeta,
    /// Its data.
    pub data: Texts,
}

impl From<ConfigMap> for KeptConfigMap {
    fn from(object: ConfigMap) -> Self {
        KeptConfigMap {
            metadata: object.metadata.into(),
            data: Texts::new(object.data),
        }
    }
}

super::lookup!(KeptConfigMap, "ConfigMap", "", "v1", "configmaps");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::Labelled;
    use kube::runtime::reflector::{Lookup, ObjectRef};

    #[test]
    fn a_kept_config_map_has_its_place_labels_and_data() {
        let object: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c", "namespace": "n", "resourceVersion": "4",
                         "labels": {"l": "v"}},
            "data": {"b": "2", "a": "1"},
            "binaryData": {"x": "AA=="}
        }))
        .unwrap();
        let kept = KeptConfigMap::from(object.clone());
        let key = ObjectRef::from_obj(&kept);
        assert_eq!(key, ObjectRef::new("c").within("n"));
        assert_eq!((key.extra.resource_version, key.extra.uid), (None, None));
        assert_eq!(kept.metadata.label("l"), Some("v"));
        assert_eq!(Some(kept.data.to_map()), object.data);
        assert_eq!(kept.data.get("a"), Some("1"));
        assert_eq!(Lookup::resource_version(&kept).as_deref(), Some("4"));
    }
}
