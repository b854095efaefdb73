//! `render --addons`: the objects the deployer would apply for the rendered ClusterProfiles,
//! in each destination cluster of the files, computed by the deployer's own code
//! ([`controller::deployer::manifests`]) over the files and the rendered ConfigMaps/Secrets in
//! place of the management cluster.

use std::collections::BTreeMap;

use api::v1beta1::ClusterProfile;
use controller::deployer::manifests::{
    Manifest, manifests, object_gvk, owner, template_resources, templated,
};
use controller::deployer::metadata::decorate;
use controller::deployer::targets::Target;
use controller::deployer::{matching, summary_name};
use controller::engine::GoTemplates;
use controller::instantiate::{Lookup, Referenced};
use controller::plan::World;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sandbox::registry::Registry;
use serde_json::Value;

use super::world::Offline;

/// One add-on object and where it goes.
pub struct Addon {
    /// `cluster default/c1` or `the management cluster`.
    pub destination: String,
    /// The profile and policyRef it comes from.
    pub origin: String,
    /// The object as the deployer applies it (Sveltos' labels and annotations on it).
    pub object: Value,
}

/// The management cluster as the files and the rendered objects make it up.
struct Management<'a> {
    /// The files' management objects and the rendered ConfigMaps/Secrets.
    objects: &'a [Value],
    /// The same ConfigMaps and Secrets as policies read them.
    referenced: Vec<Referenced>,
}

impl Management<'_> {
    fn find(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<&Value> {
        self.objects.iter().find(|o| {
            let text = |pointer: &str| o.pointer(pointer).and_then(Value::as_str);
            text("/apiVersion") == Some(api_version)
                && text("/kind") == Some(kind)
                && text("/metadata/name") == Some(name)
                && text("/metadata/namespace").unwrap_or_default() == namespace
        })
    }
}

impl Lookup for Management<'_> {
    fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Referenced> {
        self.referenced
            .iter()
            .find(|r| r.kind == kind && r.namespace == namespace && r.name == name)
            .cloned()
    }
}

/// What the deployer would apply for `profiles`. `management` holds the management cluster's
/// objects from the files and the rendered ones. Problems (a profile that fails in a cluster,
/// a paused cluster) come back as sentences.
pub fn addons(
    profiles: &[ClusterProfile],
    management: &[Value],
    world: &Offline,
    names: &GoTemplates,
) -> (Vec<Addon>, Vec<String>) {
    let management = Management {
        objects: management,
        referenced: management.iter().filter_map(as_referenced).collect(),
    };
    let clusters = world.clusters();
    let scopes = Registry::builtin();
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for profile in profiles {
        let name = profile.metadata.name.as_deref().unwrap_or_default();
        let spec = &profile.spec;
        let destinations = match matching(spec, &clusters, |set| world.selected(set)) {
            Ok(destinations) => destinations,
            Err(reason) => {
                problems.push(format!("ClusterProfile {name}: {reason}"));
                continue;
            }
        };
        for cluster in destinations {
            if cluster.paused {
                problems.push(format!(
                    "ClusterProfile {name}: cluster {} is paused, the deployer changes nothing there",
                    cluster.reference
                ));
                continue;
            }
            let planned = resources(name, profile, cluster, &management, names)
                .and_then(|resources| manifests(name, spec, cluster, &management, &resources));
            let planned = match planned {
                Ok(planned) => planned,
                Err(reason) => {
                    problems.push(format!(
                        "ClusterProfile {name}, cluster {}: {reason}",
                        cluster.reference
                    ));
                    continue;
                }
            };
            let owner = owner(name, spec, cluster);
            for Manifest {
                target,
                reference,
                mut object,
                ..
            } in planned
            {
                default_namespace(&mut object, &scopes);
                decorate(&mut object, &owner, &reference);
                out.push(Addon {
                    destination: match target {
                        Target::Local => "the management cluster".to_owned(),
                        Target::Remote(cluster) => format!("cluster {cluster}"),
                    },
                    origin: format!(
                        "ClusterProfile {name} (summary {}), policyRef {} {}/{}",
                        summary_name(name, cluster),
                        reference.kind,
                        reference.namespace,
                        reference.name
                    ),
                    object,
                });
            }
        }
    }
    (out, problems)
}

/// The profile's template resources for `cluster`, read from the files and rendered objects
/// (only when a policy is a template, as the deployer fetches them).
fn resources(
    name: &str,
    profile: &ClusterProfile,
    cluster: &controller::fleet::Cluster,
    management: &Management,
    names: &GoTemplates,
) -> Result<BTreeMap<String, Value>, String> {
    let spec = &profile.spec;
    let mut found = BTreeMap::new();
    if !templated(spec, cluster, management) {
        return Ok(found);
    }
    for wanted in template_resources(names, name, &spec.template_resource_refs, cluster)? {
        let gvk = &wanted.gvk;
        let api_version = if gvk.group.is_empty() {
            gvk.version.clone()
        } else {
            format!("{}/{}", gvk.group, gvk.version)
        };
        match management.find(&api_version, &gvk.kind, &wanted.namespace, &wanted.name) {
            Some(object) => {
                found.insert(wanted.identifier.clone(), object.clone());
            }
            None => {
                if let Some(failure) = wanted.missing() {
                    return Err(format!("{failure} in the files"));
                }
            }
        }
    }
    Ok(found)
}

/// A built-in namespaced kind written without a namespace goes to `default`, as the deployer
/// places it after asking the cluster; other kinds' scope is not known offline.
fn default_namespace(object: &mut Value, scopes: &Registry) {
    let gvk = object_gvk(object);
    let namespaced = scopes
        .all()
        .any(|r| r.group == gvk.group && r.kind == gvk.kind && r.namespaced);
    let missing = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if namespaced
        && missing
        && let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.insert("namespace".into(), "default".into());
    }
}

/// A ConfigMap or Secret as policies read it; any other object is no policy.
fn as_referenced(object: &Value) -> Option<Referenced> {
    let (group, _, kind) = agent::select::gvk(object);
    match (group, kind) {
        ("", "ConfigMap") => serde_json::from_value::<ConfigMap>(object.clone())
            .ok()
            .map(|c| Referenced::from_config_map(&c.into())),
        ("", "Secret") => serde_json::from_value::<Secret>(object.clone())
            .ok()
            .map(|s| Referenced::from_secret(&s)),
        _ => None,
    }
}
