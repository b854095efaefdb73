//! policyRefs of an EventTrigger for one event: each reference is rendered (namespace, name,
//! path), fetched, and either referenced as is or instantiated into a generated ConfigMap or
//! Secret in `projectsveltos` whose data is rendered with the event data.

use std::collections::BTreeMap;

use api::labels::{
    CLUSTER_PROFILE_SECRET_TYPE, INSTANTIATE_ANNOTATION, LAST_APPLIED_ANNOTATION,
    SVELTOS_NAMESPACE, TEMPLATE_ANNOTATION, TEX_TEMPLATE_ANNOTATION,
};
use api::v1beta1::PolicyRef;
use k8s_openapi::api::core::v1::Secret;
use serde_json::Value;

use crate::identity::{generated_name, with_reference};
use crate::kept::Meta;
use crate::kept::config_map::KeptConfigMap;
use crate::render::{Render, render_field};

/// A ConfigMap or Secret referenced by an EventTrigger, as read from the management cluster.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Referenced {
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Annotations (copied onto instantiated objects).
    pub annotations: BTreeMap<String, String>,
    /// Data, Secret values already decoded.
    pub data: BTreeMap<String, String>,
    /// Secret type, for Secrets.
    pub secret_type: Option<String>,
}

impl Referenced {
    /// A ConfigMap as templates read it.
    pub fn from_config_map(object: &KeptConfigMap) -> Referenced {
        let meta = &object.metadata;
        Referenced {
            kind: "ConfigMap".to_owned(),
            namespace: meta.namespace().unwrap_or_default().to_owned(),
            name: meta.name().to_owned(),
            annotations: meta.annotations().to_map(),
            data: object.data.to_map(),
            secret_type: None,
        }
    }

    /// A Secret as templates read it: its data decoded as text, `stringData` over it.
    pub fn from_secret(object: &Secret) -> Referenced {
        let mut data: BTreeMap<String, String> = object
            .data
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
            .collect();
        data.extend(object.string_data.clone().unwrap_or_default());
        Referenced {
            kind: "Secret".to_owned(),
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name: object.metadata.name.clone().unwrap_or_default(),
            annotations: object.metadata.annotations.clone().unwrap_or_default(),
            data,
            secret_type: object.type_.clone(),
        }
    }
}

/// Read access to the ConfigMaps and Secrets of the management cluster.
pub trait Lookup {
    /// The object of `kind` (`ConfigMap` or `Secret`) at namespace/name, if it exists.
    fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Referenced>;
    /// Why the object may not be read by whoever asks (a tenant reaching outside its
    /// namespace), if so; [`Lookup::get`] then answers `None`.
    fn refused(&self, _kind: &str, _namespace: &str, _name: &str) -> Option<String> {
        None
    }
}

/// A ConfigMap or Secret the manager must write for one event.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    /// Name (`sveltos-<hash>` for instantiated objects, `nameFormat` for generator outputs).
    pub name: String,
    /// Labels: the identity labels plus reference labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations copied from the source.
    pub annotations: BTreeMap<String, String>,
    /// Rendered data.
    pub data: BTreeMap<String, String>,
}

impl Generated {
    /// Its kind as the writes and the caches name it: `Secret`, else `ConfigMap`.
    pub fn known_kind(&self) -> &'static str {
        if self.kind == "Secret" {
            "Secret"
        } else {
            "ConfigMap"
        }
    }
}

/// Everything needed to process one policyRef for one event.
pub struct Context<'a> {
    /// Renders templates.
    pub render: &'a dyn Render,
    /// Reads referenced ConfigMaps and Secrets.
    pub lookup: &'a dyn Lookup,
    /// Template name for errors.
    pub template_name: &'a str,
    /// Event data (`.Cluster`, `.Resource`, ...).
    pub data: &'a Value,
    /// Namespace of the source cluster (default for references without one).
    pub cluster_namespace: &'a str,
    /// Identity labels of the event's objects.
    pub identity_labels: &'a BTreeMap<String, String>,
    /// Instantiate every reference (objects converted from v1alpha1), not only annotated ones.
    pub legacy_instantiation: bool,
}

/// A policyRef ready for the ClusterProfile, and the object instantiated for it, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The policyRef to put in the ClusterProfile.
    pub policy_ref: PolicyRef,
    /// The instantiated object to write, if any.
    pub generated: Option<Generated>,
}

/// Processes one policyRef: `None` when it is optional and its object does not exist.
/// Errors are sentences naming the reference.
pub fn policy_ref(reference: &PolicyRef, cx: &Context<'_>) -> Result<Option<Resolved>, String> {
    let render = |what: &str, text: &str| {
        render_field(cx.render, cx.template_name, text, cx.data)
            .map_err(|e| format!("cannot render policyRef {what} {text:?}: {e}"))
    };
    let namespace = match render("namespace", &reference.namespace)? {
        ns if ns.is_empty() => cx.cluster_namespace.to_string(),
        ns => ns,
    };
    let name = render("name", &reference.name)?;
    let path = render("path", &reference.path)?;
    let kind = reference.kind.to_string();
    let mut rendered = PolicyRef {
        namespace: namespace.clone(),
        name: name.clone(),
        path,
        ..reference.clone()
    };
    if kind != "ConfigMap" && kind != "Secret" {
        // Flux sources are referenced as written; the deployer reports what it cannot fetch.
        return Ok(Some(Resolved {
            policy_ref: rendered,
            generated: None,
        }));
    }
    let Some(source) = cx_lookup(cx, &kind, &namespace, &name) else {
        return if reference.optional {
            Ok(None)
        } else {
            Err(format!(
                "referenced {kind} {namespace}/{name} does not exist"
            ))
        };
    };
    let source = source?;
    if !wants_instantiation(&source, cx) {
        return Ok(Some(Resolved {
            policy_ref: rendered,
            generated: None,
        }));
    }
    let generated = instantiated(&source, cx)?;
    check_objects(&source, &generated)?;
    rendered.namespace = SVELTOS_NAMESPACE.to_string();
    rendered.name = generated.name.clone();
    Ok(Some(Resolved {
        policy_ref: rendered,
        generated: Some(generated),
    }))
}

/// Whether `source` is instantiated per event (annotated `projectsveltos.io/instantiate`, or
/// any reference of an object converted from v1alpha1) rather than referenced as it is.
pub fn wants_instantiation(source: &Referenced, cx: &Context<'_>) -> bool {
    cx.legacy_instantiation || source.annotations.contains_key(INSTANTIATE_ANNOTATION)
}

/// The object written for `source` in this event: every data value rendered with the event
/// data, named from the identity labels and the source's place, annotations copied but
/// kubectl's last-applied copy of the source (see [`copied_annotations`]). It lives in
/// namespace `projectsveltos`.
pub fn instantiated(source: &Referenced, cx: &Context<'_>) -> Result<Generated, String> {
    let (kind, namespace, name) = (&source.kind, &source.namespace, &source.name);
    let mut data = BTreeMap::new();
    for (key, text) in &source.data {
        let value = cx
            .render
            .render(cx.template_name, text, cx.data)
            .map_err(|e| {
                format!("cannot instantiate {kind} {namespace}/{name} key {key:?}: {e}")
            })?;
        data.insert(key.clone(), value);
    }
    let labels = with_reference(cx.identity_labels.clone(), namespace, name);
    Ok(Generated {
        kind: kind.clone(),
        name: generated_name(&labels),
        labels,
        annotations: copied_annotations(&source.annotations),
        data,
    })
}

/// The source's annotations a generated object carries. Upstream copies them all; kubectl's
/// last-applied annotation is left out here: it describes the source (template text and
/// all), so on the generated object it would only mislead a later `kubectl apply`, and it
/// doubled each generated object, in etcd, in every watch and in the manager's memory.
fn copied_annotations(annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut copied = annotations.clone();
    copied.remove(LAST_APPLIED_ANNOTATION);
    copied
}

/// Refuses an instantiated policyRef whose data the deployer could not read as Kubernetes
/// objects, so the trigger says so rather than the ClusterSummary alone. Data the deployer
/// renders again (template annotations) is checked there.
fn check_objects(source: &Referenced, generated: &Generated) -> Result<(), String> {
    let annotations = &generated.annotations;
    if annotations.contains_key(TEMPLATE_ANNOTATION)
        || annotations.contains_key(TEX_TEMPLATE_ANNOTATION)
    {
        return Ok(());
    }
    let from = format!("{} {}/{}", source.kind, source.namespace, source.name);
    for (key, text) in &generated.data {
        crate::deployer::documents::objects(key, text)
            .map_err(|e| format!("{from} instantiated for this event is not valid: {e}"))?;
    }
    Ok(())
}

/// Looks up a referenced object, refusing what the tenant may not read and enforcing the
/// Secret type rule; `None` when it does not exist.
pub fn cx_lookup(
    cx: &Context<'_>,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Option<Result<Referenced, String>> {
    if let Some(reason) = cx.lookup.refused(kind, namespace, name) {
        return Some(Err(reason));
    }
    cx.lookup
        .get(kind, namespace, name)
        .map(|r| check_secret_type(r, kind, namespace, name))
}

fn check_secret_type(
    source: Referenced,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Referenced, String> {
    if kind == "Secret" && source.secret_type.as_deref() != Some(CLUSTER_PROFILE_SECRET_TYPE) {
        return Err(format!(
            "unsupported secret type: Secret {namespace}/{name} must have type {CLUSTER_PROFILE_SECRET_TYPE}"
        ));
    }
    Ok(source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{NameOnly, Objects};
    use api::labels::TEMPLATE_ANNOTATION;
    use serde_json::json;

    fn configmap(name: &str, annotations: &[(&str, &str)]) -> Referenced {
        Referenced {
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: name.into(),
            annotations: annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            data: BTreeMap::from([(
                "np.yaml".to_string(),
                "kind: NetworkPolicy\napiVersion: networking.k8s.io/v1\nmetadata:\n  name: front-{{ .Resource.metadata.name }}\n".to_string(),
            )]),
            secret_type: None,
        }
    }

    fn reference(kind: &str, name: &str) -> PolicyRef {
        PolicyRef {
            kind: kind.into(),
            name: name.into(),
            namespace: "default".into(),
            ..Default::default()
        }
    }

    fn run(
        reference: &PolicyRef,
        objects: Vec<Referenced>,
        legacy: bool,
    ) -> Result<Option<Resolved>, String> {
        let data = json!({"Resource": {"metadata": {"name": "my-service"}}});
        let identity = BTreeMap::from([(
            "eventtrigger.lib.projectsveltos.io/eventtriggername".to_string(),
            "t".to_string(),
        )]);
        let objects = Objects(objects);
        let cx = Context {
            render: &NameOnly,
            lookup: &objects,
            template_name: "default-c1-t",
            data: &data,
            cluster_namespace: "default",
            identity_labels: &identity,
            legacy_instantiation: legacy,
        };
        policy_ref(reference, &cx)
    }

    #[test]
    fn annotated_configmap_is_instantiated_into_projectsveltos() {
        let source = configmap(
            "network-policy",
            &[
                (INSTANTIATE_ANNOTATION, "ok"),
                (TEMPLATE_ANNOTATION, "ok"),
                (LAST_APPLIED_ANNOTATION, r#"{"kind":"ConfigMap"}"#),
            ],
        );
        let resolved = run(
            &reference("ConfigMap", "network-policy"),
            vec![source],
            false,
        )
        .unwrap()
        .unwrap();
        let generated = resolved.generated.unwrap();
        assert!(generated.data["np.yaml"].contains("name: front-my-service"));
        assert_eq!(
            generated.annotations.keys().collect::<Vec<_>>(),
            [INSTANTIATE_ANNOTATION, TEMPLATE_ANNOTATION],
            "annotations copied, template pass kept, kubectl's copy of the source left out"
        );
        assert_eq!(
            generated.labels["eventtrigger.lib.projectsveltos.io/refname"],
            "network-policy"
        );
        assert_eq!(resolved.policy_ref.namespace, SVELTOS_NAMESPACE);
        assert_eq!(resolved.policy_ref.name, generated.name);
        assert_eq!(
            resolved.policy_ref.tier, 100,
            "flags of the reference are kept"
        );
    }

    #[test]
    fn instantiated_data_the_deployer_cannot_read_fails_the_reference() {
        let mut broken = configmap("np", &[(INSTANTIATE_ANNOTATION, "ok")]);
        broken
            .data
            .insert("bad.yaml".into(), "kind: [unclosed".into());
        let error = run(&reference("ConfigMap", "np"), vec![broken.clone()], false).unwrap_err();
        assert!(
            error.starts_with(
                "ConfigMap default/np instantiated for this event is not valid: key \"bad.yaml\""
            ),
            "{error}"
        );
        // The deployer renders it again, and checks it then.
        broken
            .annotations
            .insert(TEMPLATE_ANNOTATION.into(), "ok".into());
        assert!(run(&reference("ConfigMap", "np"), vec![broken], false).is_ok());
    }

    #[test]
    fn plain_configmap_is_referenced_as_is_unless_legacy() {
        let plain = || vec![configmap("cm", &[])];
        let resolved = run(&reference("ConfigMap", "cm"), plain(), false)
            .unwrap()
            .unwrap();
        assert!(resolved.generated.is_none());
        assert_eq!(
            (
                resolved.policy_ref.namespace.as_str(),
                resolved.policy_ref.name.as_str()
            ),
            ("default", "cm")
        );
        let legacy = run(&reference("ConfigMap", "cm"), plain(), true)
            .unwrap()
            .unwrap();
        assert!(legacy.generated.unwrap().data["np.yaml"].contains("name: front-my-service"));
    }

    #[test]
    fn names_are_rendered_and_missing_objects_fail_unless_optional() {
        let mut templated = reference("ConfigMap", "{{ .Resource.metadata.name }}-cm");
        let resolved = run(&templated, vec![configmap("my-service-cm", &[])], false)
            .unwrap()
            .unwrap();
        assert_eq!(resolved.policy_ref.name, "my-service-cm");
        let error = run(&templated, vec![], false).unwrap_err();
        assert_eq!(
            error,
            "referenced ConfigMap default/my-service-cm does not exist"
        );
        templated.optional = true;
        assert_eq!(run(&templated, vec![], false).unwrap(), None);
    }

    #[test]
    fn secrets_need_the_cluster_profile_type() {
        let mut secret = configmap("s", &[(INSTANTIATE_ANNOTATION, "ok")]);
        secret.kind = "Secret".into();
        let error = run(&reference("Secret", "s"), vec![secret.clone()], false).unwrap_err();
        assert!(error.starts_with("unsupported secret type"), "{error}");
        secret.secret_type = Some(CLUSTER_PROFILE_SECRET_TYPE.into());
        let resolved = run(&reference("Secret", "s"), vec![secret], false)
            .unwrap()
            .unwrap();
        assert_eq!(resolved.generated.unwrap().kind, "Secret");
    }

    #[test]
    fn render_errors_name_the_reference() {
        let mut source = configmap("cm", &[(INSTANTIATE_ANNOTATION, "ok")]);
        source.data.insert("bad".into(), "{{ .Nope }}".into());
        let error = run(&reference("ConfigMap", "cm"), vec![source], false).unwrap_err();
        assert!(
            error.contains("ConfigMap default/cm key \"bad\""),
            "{error}"
        );
    }
}
