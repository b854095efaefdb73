//! CustomResourceDefinitions of every kind this project serves, built from the Rust types so
//! that the schemas can never drift from the code. `crdgen` writes them to `api/crds/`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceConversion, CustomResourceDefinition,
    CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps, ServiceReference,
    WebhookClientConfig, WebhookConversion,
};
use kube::CustomResourceExt;
use serde_json::{Value, json};

use crate::labels::SVELTOS_NAMESPACE;
use crate::{Error, Result, v1alpha1, v1beta1};

/// Service that serves `/convert` for the v1alpha1 <-> v1beta1 conversion webhook.
pub const CONVERSION_SERVICE: &str = "sveltos-events-manager";
/// Path of the conversion webhook.
pub const CONVERSION_PATH: &str = "/convert";

/// Every CRD, sorted by name.
pub fn all() -> Result<Vec<CustomResourceDefinition>> {
    let mut crds = vec![
        event_source()?,
        event_trigger()?,
        event_based_add_on()?,
        event_report()?,
        decorate(v1beta1::SveltosCluster::crd(), &["svcl"], &[]),
        decorate(v1beta1::ClusterProfile::crd(), &["cprof"], &[]),
        decorate(v1beta1::ClusterSummary::crd(), &["csum"], &[]),
        decorate(v1beta1::ClusterReport::crd(), &["creport"], &[]),
        decorate(v1beta1::ClusterSet::crd(), &["cset"], &[]),
        decorate(v1beta1::Set::crd(), &["sset"], &[]),
    ];
    crds.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(crds)
}

/// File name a CRD is written to: `<plural>.<group>.yaml`.
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
}

fn event_source() -> Result<CustomResourceDefinition> {
    let mut crd = decorate(
        v1beta1::EventSource::crd(),
        &["esrc"],
        &[
            column("Collect", "boolean", ".spec.collectResources"),
            ready(),
            age(),
        ],
    );
    let v1beta1_spec = spec_schema(&crd)?;
    let mut spec = v1beta1_spec.clone();
    let selector_props = spec
        .pointer("/properties/resourceSelectors/items/properties")
        .cloned()
        .ok_or_else(|| Error::Invalid("EventSource schema lacks resourceSelectors".into()))?;
    if let Some(props) = spec.get_mut("properties").and_then(Value::as_object_mut) {
        props.remove("messagingMatchCriteria");
        for field in ["group", "version", "kind", "namespace", "labelFilters"] {
            if let Some(schema) = selector_props.get(field) {
                props.insert(field.into(), schema.clone());
            }
        }
        if let Some(filters) = selector_props.get("labelFilters") {
            props.insert("labelsFilters".into(), filters.clone());
        }
        props.insert("script".into(), json!({"type": "string"}));
    }
    add_alpha_version::<v1alpha1::EventSource>(&mut crd, spec, &[ready(), age()])?;
    Ok(with_webhook_conversion(crd))
}

/// v1alpha1 trigger spec schema: v1beta1's with string cluster selectors.
fn alpha_trigger_spec(v1beta1_spec: &Value) -> Value {
    let mut spec = v1beta1_spec.clone();
    if let Some(props) = spec.get_mut("properties").and_then(Value::as_object_mut) {
        for field in [
            "sourceClusterSelector",
            "clusterSelector",
            "destinationClusterSelector",
        ] {
            props.insert(field.into(), json!({"type": "string"}));
        }
    }
    if let Some(required) = spec.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| r != "sourceClusterSelector");
    }
    spec
}

/// An EventTrigger's columns; an EventBasedAddOn has no status, so no `Ready`.
fn trigger_columns(with_status: bool) -> Vec<CustomResourceColumnDefinition> {
    let mut columns = vec![
        column("EventSource", "string", ".spec.eventSourceName"),
        column("OneForEvent", "boolean", ".spec.oneForEvent"),
    ];
    if with_status {
        columns.push(ready());
    }
    columns.push(age());
    columns
}

/// `Ready`: the status of the condition of that type.
fn ready() -> CustomResourceColumnDefinition {
    column(
        "Ready",
        "string",
        ".status.conditions[?(@.type==\"Ready\")].status",
    )
}

fn event_trigger() -> Result<CustomResourceDefinition> {
    let mut crd = decorate(
        v1beta1::EventTrigger::crd(),
        &["etrig"],
        &trigger_columns(true),
    );
    let spec = alpha_trigger_spec(&spec_schema(&crd)?);
    add_alpha_version::<v1alpha1::EventTrigger>(&mut crd, spec, &trigger_columns(true))?;
    Ok(with_webhook_conversion(crd))
}

fn event_based_add_on() -> Result<CustomResourceDefinition> {
    let trigger = decorate(v1beta1::EventTrigger::crd(), &[], &[]);
    let spec = alpha_trigger_spec(&spec_schema(&trigger)?);
    let mut crd = decorate(
        v1alpha1::EventBasedAddOn::crd(),
        &["ebao"],
        &trigger_columns(false),
    );
    let version = crd
        .spec
        .versions
        .first_mut()
        .ok_or_else(|| Error::Invalid("EventBasedAddOn CRD has no version".into()))?;
    version.schema = Some(object_schema(spec, None)?);
    version.subresources = None;
    Ok(crd)
}

fn event_report() -> Result<CustomResourceDefinition> {
    let columns = [
        column("Cluster", "string", ".spec.clusterName"),
        column("EventSource", "string", ".spec.eventSourceName"),
        column("Phase", "string", ".status.phase"),
        age(),
    ];
    let mut crd = decorate(v1beta1::EventReport::crd(), &["erep"], &columns);
    // v1alpha1 reports are v1beta1 reports minus later optional fields: the same schema serves
    // both and the API server converts by rewriting apiVersion alone.
    let mut alpha = crd
        .spec
        .versions
        .first()
        .cloned()
        .ok_or_else(|| Error::Invalid("EventReport CRD has no version".into()))?;
    alpha.name = "v1alpha1".into();
    alpha.storage = false;
    crd.spec.versions.push(alpha);
    Ok(crd)
}

fn add_alpha_version<K: kube::Resource<DynamicType = ()>>(
    crd: &mut CustomResourceDefinition,
    spec: Value,
    columns: &[CustomResourceColumnDefinition],
) -> Result<()> {
    let status = crd
        .spec
        .versions
        .first()
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| s.properties.as_ref())
        .and_then(|p| p.get("status"))
        .cloned();
    crd.spec.versions.push(CustomResourceDefinitionVersion {
        name: K::version(&()).into_owned(),
        served: true,
        storage: false,
        deprecated: Some(true),
        deprecation_warning: Some(format!(
            "lib.projectsveltos.io/v1alpha1 {} is deprecated; use lib.projectsveltos.io/v1beta1",
            K::kind(&())
        )),
        schema: Some(object_schema(spec, status)?),
        additional_printer_columns: (!columns.is_empty()).then(|| columns.to_vec()),
        subresources: crd
            .spec
            .versions
            .first()
            .and_then(|v| v.subresources.clone()),
        ..Default::default()
    });
    Ok(())
}

fn object_schema(spec: Value, status: Option<JSONSchemaProps>) -> Result<CustomResourceValidation> {
    let spec: JSONSchemaProps = serde_json::from_value(spec).map_err(|source| Error::Convert {
        what: "v1alpha1 spec schema".into(),
        source,
    })?;
    let mut properties = std::collections::BTreeMap::new();
    properties.insert("spec".to_string(), spec);
    if let Some(status) = status {
        properties.insert("status".to_string(), status);
    }
    Ok(CustomResourceValidation {
        open_api_v3_schema: Some(JSONSchemaProps {
            type_: Some("object".into()),
            required: Some(vec!["spec".into()]),
            properties: Some(properties),
            ..Default::default()
        }),
    })
}

fn spec_schema(crd: &CustomResourceDefinition) -> Result<Value> {
    let spec = crd
        .spec
        .versions
        .first()
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| s.properties.as_ref())
        .and_then(|p| p.get("spec"))
        .ok_or_else(|| Error::Invalid("CRD has no spec schema".into()))?;
    serde_json::to_value(spec).map_err(|source| Error::Convert {
        what: "spec schema".into(),
        source,
    })
}

fn with_webhook_conversion(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            conversion_review_versions: vec!["v1".into()],
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: SVELTOS_NAMESPACE.into(),
                    name: CONVERSION_SERVICE.into(),
                    path: Some(CONVERSION_PATH.into()),
                    port: Some(443),
                }),
                ..Default::default()
            }),
        }),
    });
    crd
}

/// Adds short names, the `sveltos` category and printer columns to the generated CRD.
fn decorate(
    mut crd: CustomResourceDefinition,
    short_names: &[&str],
    columns: &[CustomResourceColumnDefinition],
) -> CustomResourceDefinition {
    if !short_names.is_empty() {
        crd.spec.names.short_names = Some(short_names.iter().map(|s| s.to_string()).collect());
    }
    crd.spec.names.categories = Some(vec!["sveltos".into()]);
    if !columns.is_empty() {
        for version in &mut crd.spec.versions {
            version
                .additional_printer_columns
                .get_or_insert_default()
                .extend_from_slice(columns);
        }
    }
    crd
}

fn column(name: &str, type_: &str, json_path: &str) -> CustomResourceColumnDefinition {
    CustomResourceColumnDefinition {
        name: name.into(),
        type_: type_.into(),
        json_path: json_path.into(),
        ..Default::default()
    }
}

fn age() -> CustomResourceColumnDefinition {
    column("Age", "date", ".metadata.creationTimestamp")
}
