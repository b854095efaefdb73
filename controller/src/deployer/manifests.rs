//! What a ClusterProfile holds for one cluster, with no cluster at hand: the objects its
//! policyRefs hold (rendered when the referenced object asks for it), where each goes and the
//! metadata it is applied with. The deployer feeds it from its caches and the management
//! cluster; `render --addons` from files, so both compute the same objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use api::labels::{CLUSTER_PROFILE_SECRET_TYPE, LUA_ANNOTATION, TEMPLATE_ANNOTATION};
use api::v1beta1::{ClusterProfileSpec, DeploymentType, PolicyRef, TemplateResourceRef};
use kube::api::GroupVersionKind;
use serde_json::{Value, json};

use crate::deployer::documents::objects;
use crate::deployer::metadata::{Owner, Reference};
use crate::deployer::targets::Target;
use crate::engine::{GoTemplates, render_addon};
use crate::event_data::cluster_only_data;
use crate::fleet::Cluster;
use crate::instantiate::Lookup;
use crate::render::{render_field, template_name};

/// One object to deploy.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The cluster it goes to.
    pub target: Target,
    /// The policyRef it came from.
    pub reference: Reference,
    /// The policyRef's `skipNamespaceCreation`.
    pub skip_namespace_creation: bool,
    /// The object, as the referenced ConfigMap or Secret holds it (rendered if templated).
    pub object: Value,
}

/// A `templateResourceRefs` entry resolved for one cluster: the object to fetch from the
/// management cluster.
#[derive(Debug, Clone)]
pub struct TemplateResource {
    /// The name templates read it by (`getResource "ID"`).
    pub identifier: String,
    /// Its group, version and kind.
    pub gvk: GroupVersionKind,
    /// Its namespace (the cluster's when the reference names none).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Whether a missing object is no failure.
    pub optional: bool,
}

impl TemplateResource {
    /// Why the deployment fails when the object does not exist; `None` when that is allowed.
    pub fn missing(&self) -> Option<String> {
        (!self.optional).then(|| {
            format!(
                "templateResourceRef {}: {} {} does not exist",
                self.identifier, self.gvk.kind, self.name
            )
        })
    }
}

/// The group, version and kind an object's `apiVersion` and `kind` name.
pub fn object_gvk(object: &Value) -> GroupVersionKind {
    let text = |field: &str| {
        object
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let api_version = text("apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, text("kind"))
}

/// The objects `refs` name for `cluster`, their names and namespaces rendered with the
/// cluster (the only data a profile's names may read).
pub fn template_resources(
    names: &GoTemplates,
    profile: &str,
    refs: &[TemplateResourceRef],
    cluster: &Cluster,
) -> Result<Vec<TemplateResource>, String> {
    let data = cluster_only_data(&cluster.object);
    let template = template_name(
        &cluster.reference.namespace,
        &cluster.reference.name,
        profile,
    );
    refs.iter()
        .map(|reference| {
            let resource = &reference.resource;
            let field = |text: &Option<String>| {
                render_field(names, &template, text.as_deref().unwrap_or_default(), &data)
            };
            let name = field(&resource.name)?;
            let namespace = field(&resource.namespace)?;
            let api_version = resource.api_version.clone().unwrap_or_default();
            Ok(TemplateResource {
                identifier: reference.identifier.clone(),
                gvk: object_gvk(&json!({"apiVersion": api_version, "kind": resource.kind})),
                namespace: if namespace.is_empty() {
                    cluster.reference.namespace.clone()
                } else {
                    namespace
                },
                name,
                optional: reference.optional,
            })
        })
        .collect()
}

/// The namespace a policyRef reads from: its own, or the cluster's when it names none.
fn namespace_of<'a>(reference: &'a PolicyRef, cluster: &'a Cluster) -> &'a str {
    if reference.namespace.is_empty() {
        &cluster.reference.namespace
    } else {
        &reference.namespace
    }
}

/// Where a policyRef's objects go for `cluster`.
pub fn target(reference: &PolicyRef, cluster: &Cluster) -> Target {
    match reference.deployment_type {
        DeploymentType::Local => Target::Local,
        DeploymentType::Remote => Target::Remote(cluster.reference.clone()),
    }
}

/// Whether any policyRef of `spec` that exists is a template, so that the template resources
/// must be fetched before [`manifests`] runs.
pub fn templated(spec: &ClusterProfileSpec, cluster: &Cluster, lookup: &dyn Lookup) -> bool {
    spec.policy_refs.iter().any(|reference| {
        lookup
            .get(
                &reference.kind,
                namespace_of(reference, cluster),
                &reference.name,
            )
            .is_some_and(|found| found.annotations.contains_key(TEMPLATE_ANNOTATION))
    })
}

/// Every object the profile's policyRefs hold for `cluster`, in policyRef order; `resources`
/// are the template resources by identifier (see [`template_resources`]).
pub fn manifests(
    profile: &str,
    spec: &ClusterProfileSpec,
    cluster: &Cluster,
    lookup: &dyn Lookup,
    resources: &BTreeMap<String, Value>,
) -> Result<Vec<Manifest>, String> {
    let name = template_name(
        &cluster.reference.namespace,
        &cluster.reference.name,
        profile,
    );
    let data = json!({"Cluster": cluster.object, "MgmtResources": resources});
    let shared = Arc::new(resources.clone());
    let mut out = Vec::new();
    for reference in &spec.policy_refs {
        let namespace = namespace_of(reference, cluster);
        let place = format!("{} {namespace}/{}", reference.kind, reference.name);
        if reference.kind != "ConfigMap" && reference.kind != "Secret" {
            return Err(format!(
                "policyRef {place}: only ConfigMaps and Secrets are deployed by sveltos-events so far"
            ));
        }
        let Some(found) = lookup.get(&reference.kind, namespace, &reference.name) else {
            if reference.optional {
                continue;
            }
            return Err(format!("policyRef {place} does not exist"));
        };
        if reference.kind == "Secret"
            && found.secret_type.as_deref() != Some(CLUSTER_PROFILE_SECRET_TYPE)
        {
            return Err(format!(
                "policyRef {place}: a Secret must have type {CLUSTER_PROFILE_SECRET_TYPE}"
            ));
        }
        if found.annotations.contains_key(LUA_ANNOTATION) {
            return Err(format!(
                "policyRef {place}: {LUA_ANNOTATION} policies (Lua that returns the objects) are not deployed by sveltos-events yet"
            ));
        }
        let templated = found.annotations.contains_key(TEMPLATE_ANNOTATION);
        for (key, text) in &found.data {
            let text = if templated {
                render_addon(&name, text, &data, &shared)
                    .map_err(|e| format!("policyRef {place} key {key:?}: {e}"))?
            } else {
                text.clone()
            };
            for object in objects(key, &text).map_err(|e| format!("policyRef {place}: {e}"))? {
                out.push(Manifest {
                    target: target(reference, cluster),
                    reference: Reference {
                        kind: reference.kind.clone(),
                        namespace: namespace.to_owned(),
                        name: reference.name.clone(),
                        tier: reference.tier,
                    },
                    skip_namespace_creation: reference.skip_namespace_creation,
                    object,
                });
            }
        }
    }
    Ok(out)
}

/// Who deploys `profile`'s objects into `cluster`: the metadata they are applied with.
pub fn owner(profile: &str, spec: &ClusterProfileSpec, cluster: &Cluster) -> Owner {
    let reference = &cluster.reference;
    Owner {
        profile: profile.to_owned(),
        tier: spec.tier,
        summary: super::summary_name(profile, cluster),
        // What Sveltos and earlier releases wrote there: `<type>-<namespace>-<name>`, not a
        // ClusterSummary's name; recognised on objects deployed before, never written.
        legacy_summary: format!(
            "{}-{}-{}",
            reference.cluster_type.lowercase(),
            reference.namespace,
            reference.name
        ),
        deployment_type: "Remote".to_owned(),
        extra_labels: spec.extra_labels.clone(),
        extra_annotations: spec.extra_annotations.clone(),
    }
}
