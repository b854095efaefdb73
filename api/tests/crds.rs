//! The generated CRDs are deterministic, carry what `kubectl` and the API server need, and
//! match the committed `api/crds/` files.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use sveltos_events_api::crd;

#[test]
fn generation_is_deterministic_and_committed() {
    let first = crd::all().unwrap();
    let second = crd::all().unwrap();
    assert_eq!(first, second);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crds");
    for definition in &first {
        let path = dir.join(crd::file_name(definition));
        let committed = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run crdgen", path.display()));
        let yaml = committed.split_once('\n').unwrap().1;
        let parsed: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
            serde_saphyr::from_str(yaml).unwrap();
        assert_eq!(
            &parsed,
            definition,
            "{} is stale; run crdgen",
            path.display()
        );
    }
}

#[test]
fn every_crd_is_in_the_sveltos_category_with_one_storage_version() {
    for definition in crd::all().unwrap() {
        let name = definition.metadata.name.clone().unwrap();
        assert_eq!(
            definition.spec.names.categories,
            Some(vec!["sveltos".to_string()]),
            "{name}"
        );
        assert!(
            definition.spec.names.short_names.is_some(),
            "{name} has short names"
        );
        let storage: Vec<_> = definition
            .spec
            .versions
            .iter()
            .filter(|v| v.storage)
            .map(|v| v.name.clone())
            .collect();
        let expected = if name.starts_with("eventbasedaddons") {
            "v1alpha1"
        } else {
            "v1beta1"
        };
        assert_eq!(storage, [expected], "{name}");
        for version in &definition.spec.versions {
            assert!(
                version.schema.is_some(),
                "{name} {} has a schema",
                version.name
            );
        }
    }
}

#[test]
fn versions_with_different_schemas_use_webhook_conversion() {
    for definition in crd::all().unwrap() {
        let name = definition.metadata.name.clone().unwrap();
        let webhook = definition
            .spec
            .conversion
            .as_ref()
            .is_some_and(|c| c.strategy == "Webhook");
        let expect_webhook =
            name.starts_with("eventsources.") || name.starts_with("eventtriggers.");
        assert_eq!(webhook, expect_webhook, "{name}");
    }
}

#[test]
fn v1alpha1_schemas_take_string_selectors_and_the_legacy_fields() {
    let all = crd::all().unwrap();
    let find = |prefix: &str| {
        all.iter()
            .find(|c| c.metadata.name.as_deref().unwrap().starts_with(prefix))
            .unwrap()
    };
    let spec_of = |definition: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition, version: &str| {
        let v = definition.spec.versions.iter().find(|v| v.name == version).unwrap();
        serde_json::to_value(&v.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap().properties.as_ref().unwrap()["spec"]).unwrap()
    };
    let trigger = spec_of(find("eventtriggers."), "v1alpha1");
    assert_eq!(
        trigger["properties"]["sourceClusterSelector"]["type"],
        "string"
    );
    assert_eq!(
        trigger["properties"]["destinationClusterSelector"]["type"],
        "string"
    );
    let addon = spec_of(find("eventbasedaddons."), "v1alpha1");
    assert_eq!(addon["properties"]["clusterSelector"]["type"], "string");
    let source = spec_of(find("eventsources."), "v1alpha1");
    for field in [
        "group",
        "version",
        "kind",
        "script",
        "labelFilters",
        "labelsFilters",
        "resourceSelectors",
    ] {
        assert!(
            source["properties"].get(field).is_some(),
            "v1alpha1 EventSource has {field}"
        );
    }
    let beta = spec_of(find("eventtriggers."), "v1beta1");
    assert_eq!(
        beta["properties"]["sourceClusterSelector"]["type"],
        "object"
    );
}
