//! The "decide" step of the manager: for one EventTrigger, one source cluster and the events
//! of its EventReport, the ClusterProfiles and generated ConfigMaps/Secrets that must exist.
//! Pure: reads go through [`Lookup`], rendering through [`Render`].

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

use api::labels::{FROM_GENERATOR_LABEL, LEGACY_INSTANTIATION_ANNOTATION, SVELTOS_NAMESPACE};
use api::v1beta1::{
    ClusterProfile, ClusterProfileSpec, DeploymentType, EventTrigger, GeneratorReference,
    HelmChart, KustomizationRef, TemplateResourceRef, ValueFrom,
};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde_json::Value;

use crate::event_data::{ReportEvents, all_events_data, cloud_event_data, single_event_data};
use crate::fleet::Cluster;
use crate::identity::{Identity, generated_name, identity_labels, with_reference};
use crate::instantiate::{self, Context, Generated, Lookup};
use crate::memo::{Digest, Memo, digest, digest_value, hash_value};
use crate::render::{Render, render_field, template_name};
use crate::settled::{Settled, SettledObject, Stamp};

/// What must exist for one (trigger, cluster) after a report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Desired {
    /// Generated ClusterProfiles, shared with the units that built them (an unchanged unit
    /// gives the same one pass after pass).
    pub profiles: Vec<Arc<ClusterProfile>>,
    /// Instantiated ConfigMaps/Secrets and generator outputs, all in `projectsveltos`,
    /// shared with their units as the profiles are.
    pub generated: Vec<Arc<Generated>>,
    /// When the event of each profile (by name) was first seen, where known: work for a
    /// new event goes before work for old ones.
    pub seen: HashMap<String, Instant>,
    /// Objects of settled units (kind, name): wanted as the cluster holds them, nothing to
    /// compare or write.
    pub settled: Vec<(&'static str, String)>,
}

/// The inputs of one decision.
pub struct Inputs<'a> {
    /// The trigger.
    pub trigger: &'a EventTrigger,
    /// The source cluster of the report.
    pub cluster: &'a Cluster,
    /// EventSource name (already rendered with cluster data).
    pub event_source: &'a str,
    /// Decoded report content.
    pub events: &'a ReportEvents,
    /// Changes whenever anything the [`Lookup`] could return changes.
    pub lookup_epoch: u64,
    /// Whether the cluster still holds an object of a settled unit as stamped.
    pub holds: &'a dyn Fn(&SettledObject) -> bool,
}

/// One unit's output: its ClusterProfile and the objects generated for it.
#[derive(Debug)]
pub struct Built {
    /// The profile.
    pub profile: Arc<ClusterProfile>,
    /// What it needs generated.
    pub generated: Vec<Arc<Generated>>,
    /// When its event was first seen, where known.
    pub seen: Option<Instant>,
}

impl Built {
    /// The unit settled, when `stamp` knows each of its objects (by kind, name and the
    /// object itself, as the pass had it) as held by the cluster.
    pub fn settle(
        &self,
        mut stamp: impl FnMut(&'static str, &str, &dyn Wanted) -> Option<Stamp>,
    ) -> Option<Settled> {
        let name = self.profile.metadata.name.clone().unwrap_or_default();
        let profile = SettledObject {
            stamp: stamp("ClusterProfile", &name, &self.profile)?,
            kind: "ClusterProfile",
            name,
        };
        let mut objects = Vec::with_capacity(1 + self.generated.len());
        objects.push(profile);
        for generated in &self.generated {
            let kind = generated.known_kind();
            objects.push(SettledObject {
                stamp: stamp(kind, &generated.name, generated)?,
                kind,
                name: generated.name.clone(),
            });
        }
        Some(Settled { objects })
    }
}

/// A planned object as a pass holds it, known by its address.
pub trait Wanted {
    /// The object's address: the same while the memo hands out the same unit.
    fn address(&self) -> *const ();
}

impl<T> Wanted for Arc<T> {
    fn address(&self) -> *const () {
        Arc::as_ptr(self).cast()
    }
}

/// A unit as the memo keeps it: built, or settled once the cluster held it.
#[derive(Debug, Clone)]
pub enum Kept {
    /// Its objects.
    Built(Arc<Built>),
    /// Their names and stamps.
    Settled(Arc<Settled>),
}

/// Units of earlier decisions, reused when their inputs are unchanged.
pub type UnitMemo = Memo<Kept>;

/// Computes the objects a report should produce; errors are sentences for the trigger's status.
pub fn desired(
    inputs: &Inputs<'_>,
    render: &dyn Render,
    lookup: &dyn Lookup,
    memo: &mut UnitMemo,
) -> Result<Desired, String> {
    let trigger = inputs.trigger;
    let trigger_name = trigger.metadata.name.as_deref().unwrap_or_default();
    trigger
        .spec
        .validate()
        .map_err(|e| format!("EventTrigger {trigger_name}: {e}"))?;
    let cluster = &inputs.cluster.reference;
    let name = template_name(&cluster.namespace, &cluster.name, trigger_name);
    let trigger_labels = trigger.metadata.labels.clone().unwrap_or_default();
    // Everything a unit depends on besides its own event.
    let base = {
        let mut hasher = crate::memo::hasher();
        trigger_name.hash(&mut hasher);
        trigger.metadata.labels.hash(&mut hasher);
        trigger.metadata.annotations.hash(&mut hasher);
        serde_json::to_vec(&trigger.spec)
            .map_err(|e| format!("EventTrigger {trigger_name}: {e}"))?
            .hash(&mut hasher);
        cluster.hash(&mut hasher);
        hash_value(&inputs.cluster.object, &mut hasher);
        inputs.event_source.hash(&mut hasher);
        inputs.lookup_epoch.hash(&mut hasher);
        hasher.finish()
    };
    let mut out = Desired::default();
    let mut add =
        |identity: Identity<'_>, event: Digest, seen: Option<Instant>, data: &dyn Fn() -> Value| {
            // The labels follow from the identity, whose other parts `base` holds: they are
            // made only for a unit built (for every unit of every pass, they were 2% of the
            // CPU of the quiet end-to-end run at 1,000 profiles).
            let key = digest(&(base, event, identity.resource, identity.cloud_event));
            let build = || {
                let labels = identity_labels(&identity, &trigger_labels);
                let data = data();
                let unit = Unit {
                    inputs,
                    render,
                    lookup,
                    template_name: &name,
                    data: &data,
                    labels: &labels,
                };
                unit.build().map(|(profile, generated)| {
                    Arc::new(Built {
                        profile: Arc::new(profile),
                        generated: generated.into_iter().map(Arc::new).collect(),
                        seen,
                    })
                })
            };
            let built = match memo.get_or_try(key, || build().map(Kept::Built))? {
                Kept::Built(built) => built,
                Kept::Settled(settled) if settled.holds(inputs.holds) => {
                    let objects = settled.objects.iter();
                    out.settled
                        .extend(objects.map(|object| (object.kind, object.name.clone())));
                    return Ok(());
                }
                // Changed since (or gone): built again, compared and written as a new unit.
                Kept::Settled(_) => {
                    let built = build()?;
                    memo.keep(key, Kept::Built(Arc::clone(&built)));
                    built
                }
            };
            if let (Some(at), Some(name)) = (built.seen, &built.profile.metadata.name) {
                out.seen.insert(name.clone(), at);
            }
            out.profiles.push(Arc::clone(&built.profile));
            out.generated.extend(built.generated.iter().cloned());
            Ok::<(), String>(())
        };
    if trigger.spec.one_for_event {
        for event in inputs.events.singles() {
            let reference = event.matching_resource;
            let resource = Some((
                reference.namespace.as_deref().unwrap_or_default(),
                reference.name.as_deref().unwrap_or_default(),
            ));
            let identity = Identity {
                trigger: trigger_name,
                cluster,
                event_source: inputs.event_source,
                resource,
                cloud_event: None,
            };
            let event_digest = event.digest();
            let seen = inputs.events.seen.get(&event_digest).copied();
            add(identity, event_digest, seen, &|| {
                single_event_data(&inputs.cluster.object, &event)
            })?;
        }
        // `cloudEventAction` decides, per (source, subject), whether the latest event of it
        // makes a profile: Create does, Delete does not (upstream dereferences nil on any
        // other value; here it is a failure in words).
        let mut latest: Vec<LatestCloudEvent<'_>> = Vec::new();
        for cloud_event in &inputs.events.cloud_events {
            let field = |f: &str| {
                cloud_event
                    .get(f)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            let key = (field("source"), field("subject"));
            let data = cloud_event_data(&inputs.cluster.object, cloud_event);
            let action = &trigger.spec.cloud_event_action;
            let made = match render_field(render, &name, action, &data)
                .map_err(|e| format!("cannot render cloudEventAction {action:?}: {e}"))?
                .trim()
            {
                "Create" => Some((cloud_event, data)),
                "Delete" => None,
                other => {
                    return Err(format!(
                        "cloudEventAction must render Create or Delete, not {other:?}"
                    ));
                }
            };
            match latest.iter_mut().find(|l| l.key == key) {
                Some(entry) => entry.made = made,
                None => latest.push(LatestCloudEvent { key, made }),
            }
        }
        for LatestCloudEvent { key, made } in latest {
            let Some((cloud_event, data)) = made else {
                continue;
            };
            let identity = Identity {
                trigger: trigger_name,
                cluster,
                event_source: inputs.event_source,
                resource: None,
                cloud_event: Some(key),
            };
            add(identity, digest_value(cloud_event), None, &|| data.clone())?;
        }
    } else if !inputs.events.is_empty() {
        let identity = Identity {
            trigger: trigger_name,
            cluster,
            event_source: inputs.event_source,
            resource: None,
            cloud_event: None,
        };
        let data = all_events_data(&inputs.cluster.object, inputs.events);
        add(identity, digest_value(&data), None, &|| data.clone())?;
    }
    Ok(out)
}

/// The latest CloudEvent of one (source, subject) and, when its action is Create, the event
/// and its template data.
struct LatestCloudEvent<'a> {
    key: (&'a str, &'a str),
    made: Option<(&'a Value, Value)>,
}

/// One ClusterProfile and what it needs generated.
struct Unit<'a> {
    inputs: &'a Inputs<'a>,
    render: &'a dyn Render,
    lookup: &'a dyn Lookup,
    template_name: &'a str,
    data: &'a Value,
    labels: &'a BTreeMap<String, String>,
}

impl Unit<'_> {
    fn text(&self, what: &str, text: &str) -> Result<String, String> {
        render_field(self.render, self.template_name, text, self.data)
            .map_err(|e| format!("cannot render {what} {text:?}: {e}"))
    }

    fn build(&self) -> Result<(ClusterProfile, Vec<Generated>), String> {
        let spec = &self.inputs.trigger.spec;
        let mut generated = self.generators()?;
        let legacy = self
            .inputs
            .trigger
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(LEGACY_INSTANTIATION_ANNOTATION));
        let cx = Context {
            render: self.render,
            lookup: self.lookup,
            template_name: self.template_name,
            data: self.data,
            cluster_namespace: &self.inputs.cluster.reference.namespace,
            identity_labels: self.labels,
            legacy_instantiation: legacy,
        };
        let mut policy_refs = Vec::new();
        for reference in &spec.policy_refs {
            if let Some(resolved) = instantiate::policy_ref(reference, &cx)? {
                policy_refs.push(resolved.policy_ref);
                generated.extend(resolved.generated);
            }
        }
        // Upstream lists Local references first; within each group the trigger's order is kept.
        policy_refs.sort_by_key(|r| r.deployment_type != DeploymentType::Local);

        let (cluster_selector, cluster_refs) = self.destination()?;
        let profile_spec = ClusterProfileSpec {
            cluster_selector,
            cluster_refs,
            sync_mode: spec.sync_mode,
            tier: spec.tier,
            continue_on_conflict: spec.continue_on_conflict,
            max_update: spec.max_update.clone(),
            stop_matching_behavior: spec.stop_matching_behavior,
            reloader: spec.reloader,
            template_resource_refs: spec
                .template_resource_refs
                .iter()
                .map(|r| self.template_resource_ref(r))
                .collect::<Result<_, _>>()?,
            depends_on: spec.depends_on.clone(),
            policy_refs,
            helm_charts: spec
                .helm_charts
                .iter()
                .map(|c| self.helm_chart(c, &cx, &mut generated))
                .collect::<Result<_, _>>()?,
            kustomization_refs: spec
                .kustomization_refs
                .iter()
                .map(|k| self.kustomization(k, &cx, &mut generated))
                .collect::<Result<_, _>>()?,
            pre_deploy_checks: spec.pre_deploy_checks.clone(),
            validate_healths: spec.validate_healths.clone(),
            patches: spec.patches.clone(),
            patches_from: self.values_from(&spec.patches_from, &cx, &mut generated)?,
            drift_exclusions: spec.drift_exclusions.clone(),
            pre_delete_checks: spec.pre_delete_checks.clone(),
            post_delete_checks: spec.post_delete_checks.clone(),
            extra_labels: spec.extra_labels.clone(),
            extra_annotations: spec.extra_annotations.clone(),
            ..Default::default()
        };
        let name = if spec.profile_name_format.is_empty() {
            generated_name(self.labels)
        } else {
            self.text("profileNameFormat", &spec.profile_name_format)?
        };
        let profile = ClusterProfile {
            metadata: ObjectMeta {
                name: Some(name),
                labels: Some(self.labels.clone()),
                ..Default::default()
            },
            spec: profile_spec,
            status: None,
        };
        Ok((profile, generated))
    }

    /// `clusterSelector` and `clusterRefs` of the profile (4.11).
    fn destination(&self) -> Result<(LabelSelector, Vec<ObjectReference>), String> {
        let spec = &self.inputs.trigger.spec;
        if let Some(destination) = &spec.destination_cluster {
            let field = |what: &str, v: &Option<String>| -> Result<Option<String>, String> {
                v.as_deref().map(|t| self.text(what, t)).transpose()
            };
            let reference = ObjectReference {
                api_version: field("destinationCluster.apiVersion", &destination.api_version)?,
                kind: field("destinationCluster.kind", &destination.kind)?,
                namespace: field("destinationCluster.namespace", &destination.namespace)?,
                name: field("destinationCluster.name", &destination.name)?,
                ..Default::default()
            };
            return Ok((LabelSelector::default(), vec![reference]));
        }
        if !api::selector::is_empty(&spec.destination_cluster_selector) {
            return Ok((spec.destination_cluster_selector.clone(), Vec::new()));
        }
        let reference = self.inputs.cluster.object_reference();
        Ok((LabelSelector::default(), vec![reference]))
    }

    fn template_resource_ref(
        &self,
        reference: &TemplateResourceRef,
    ) -> Result<TemplateResourceRef, String> {
        let mut out = reference.clone();
        if let Some(name) = &reference.resource.name {
            out.resource.name = Some(self.text("templateResourceRefs name", name)?);
        }
        if let Some(namespace) = &reference.resource.namespace {
            out.resource.namespace = Some(self.text("templateResourceRefs namespace", namespace)?);
        }
        // An empty namespace is the cluster's, as the deployer reads it.
        let namespace = match out.resource.namespace.as_deref() {
            Some(namespace) if !namespace.is_empty() => namespace,
            _ => self.inputs.cluster.reference.namespace.as_str(),
        };
        let kind = out.resource.kind.as_deref().unwrap_or_default();
        let name = out.resource.name.as_deref().unwrap_or_default();
        if let Some(reason) = self.lookup.refused(kind, namespace, name) {
            return Err(reason);
        }
        Ok(out)
    }

    /// valuesFrom (and patchesFrom) references: rendered; an instantiated object is written
    /// into `generated` and referenced instead; a reference whose rendered object is missing
    /// is kept as written, as upstream does.
    fn values_from(
        &self,
        values_from: &[ValueFrom],
        cx: &Context<'_>,
        generated: &mut Vec<Generated>,
    ) -> Result<Vec<ValueFrom>, String> {
        let mut out = Vec::with_capacity(values_from.len());
        for reference in values_from {
            let namespace = self.text("valuesFrom namespace", &reference.namespace)?;
            let name = self.text("valuesFrom name", &reference.name)?;
            let lookup_namespace = if namespace.is_empty() {
                self.inputs.cluster.reference.namespace.clone()
            } else {
                namespace.clone()
            };
            let found = instantiate::cx_lookup(cx, &reference.kind, &lookup_namespace, &name);
            let Some(source) = found.transpose()? else {
                out.push(reference.clone());
                continue;
            };
            if !instantiate::wants_instantiation(&source, cx) {
                out.push(ValueFrom {
                    namespace,
                    name,
                    ..reference.clone()
                });
                continue;
            }
            let object = instantiate::instantiated(&source, cx)?;
            out.push(ValueFrom {
                namespace: SVELTOS_NAMESPACE.to_owned(),
                name: object.name.clone(),
                ..reference.clone()
            });
            if !generated.contains(&object) {
                generated.push(object);
            }
        }
        Ok(out)
    }

    fn helm_chart(
        &self,
        chart: &HelmChart,
        cx: &Context<'_>,
        generated: &mut Vec<Generated>,
    ) -> Result<HelmChart, String> {
        Ok(HelmChart {
            repository_url: self.text("helm repositoryURL", &chart.repository_url)?,
            repository_name: self.text("helm repositoryName", &chart.repository_name)?,
            chart_name: self.text("helm chartName", &chart.chart_name)?,
            chart_version: self.text("helm chartVersion", &chart.chart_version)?,
            release_name: self.text("helm releaseName", &chart.release_name)?,
            release_namespace: self.text("helm releaseNamespace", &chart.release_namespace)?,
            values: self.text("helm values", &chart.values)?,
            values_from: self.values_from(&chart.values_from, cx, generated)?,
            ..chart.clone()
        })
    }

    fn kustomization(
        &self,
        reference: &KustomizationRef,
        cx: &Context<'_>,
        generated: &mut Vec<Generated>,
    ) -> Result<KustomizationRef, String> {
        Ok(KustomizationRef {
            namespace: self.text("kustomizationRef namespace", &reference.namespace)?,
            name: self.text("kustomizationRef name", &reference.name)?,
            path: self.text("kustomizationRef path", &reference.path)?,
            target_namespace: self.text(
                "kustomizationRef targetNamespace",
                &reference.target_namespace,
            )?,
            components: reference
                .components
                .iter()
                .map(|c| self.text("kustomizationRef component", c))
                .collect::<Result<_, _>>()?,
            values: reference
                .values
                .iter()
                .map(|(k, v)| Ok((k.clone(), self.text("kustomizationRef value", v)?)))
                .collect::<Result<_, String>>()?,
            values_from: self.values_from(&reference.values_from, cx, generated)?,
            ..reference.clone()
        })
    }

    /// configMapGenerator and secretGenerator outputs (4.8).
    fn generators(&self) -> Result<Vec<Generated>, String> {
        let spec = &self.inputs.trigger.spec;
        let mut out = Vec::new();
        let entries = spec
            .config_map_generator
            .iter()
            .map(|g| ("ConfigMap", g))
            .chain(spec.secret_generator.iter().map(|g| ("Secret", g)));
        for (kind, generator) in entries {
            if let Some(generated) = self.generator(kind, generator)? {
                out.push(generated);
            }
        }
        Ok(out)
    }

    fn generator(
        &self,
        kind: &str,
        generator: &GeneratorReference,
    ) -> Result<Option<Generated>, String> {
        let namespace = match self.text("generator namespace", &generator.namespace)? {
            ns if ns.is_empty() => self.inputs.cluster.reference.namespace.clone(),
            ns => ns,
        };
        let name = self.text("generator name", &generator.name)?;
        if let Some(reason) = self.lookup.refused(kind, &namespace, &name) {
            return Err(reason);
        }
        let Some(source) = self.lookup.get(kind, &namespace, &name) else {
            return if generator.optional {
                Ok(None)
            } else {
                Err(format!(
                    "referenced {kind} {namespace}/{name} does not exist yet"
                ))
            };
        };
        if kind == "Secret"
            && source.secret_type.as_deref() != Some(api::labels::CLUSTER_PROFILE_SECRET_TYPE)
        {
            return Err(format!(
                "unsupported secret type: Secret {namespace}/{name} must have type {}",
                api::labels::CLUSTER_PROFILE_SECRET_TYPE
            ));
        }
        let mut data = BTreeMap::new();
        for (key, text) in &source.data {
            let value = self
                .render
                .render(self.template_name, text, self.data)
                .map_err(|e| {
                    format!("cannot instantiate {kind} {namespace}/{name} key {key:?}: {e}")
                })?;
            data.insert(key.clone(), value);
        }
        let mut labels = with_reference(self.labels.clone(), &namespace, &name);
        labels.insert(FROM_GENERATOR_LABEL.into(), "ok".into());
        Ok(Some(Generated {
            kind: kind.to_string(),
            name: self.text("generator nameFormat", &generator.name_format)?,
            labels,
            annotations: source.annotations,
            data,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_data::{Collected, reference_of};
    use crate::instantiate::Referenced;
    use crate::testing::{NameOnly, Objects};
    use api::labels::INSTANTIATE_ANNOTATION;
    use api::v1beta1::{ClusterType, EventTriggerSpec, PolicyRef, SveltosCluster};
    use serde_json::json;

    fn cluster(name: &str) -> Cluster {
        let object: SveltosCluster = serde_json::from_value(json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": name, "namespace": "default", "labels": {"env": "fv"}},
            "spec": {}, "status": {"ready": true}
        }))
        .unwrap();
        Cluster::from_sveltos(&object).unwrap()
    }

    fn service(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": "default"}, "spec": {"ports": [{"port": 80}]}})
    }

    fn events(names: &[&str]) -> ReportEvents {
        let resources: Vec<Value> = names.iter().map(|n| service(n)).collect();
        ReportEvents {
            matching_resources: resources.iter().map(reference_of).collect(),
            resources: resources.into_iter().map(Collected::new).collect(),
            ..ReportEvents::default()
        }
    }

    fn trigger(spec: EventTriggerSpec) -> EventTrigger {
        EventTrigger::new("service-network-policy", spec)
    }

    /// A NetworkPolicy's head, up to its name.
    const NP: &str = "kind: NetworkPolicy\napiVersion: networking.k8s.io/v1\nmetadata:\n  name: ";

    fn network_policy_objects() -> Objects {
        Objects(vec![Referenced {
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: "network-policy".into(),
            annotations: BTreeMap::from([(INSTANTIATE_ANNOTATION.to_string(), "ok".to_string())]),
            data: BTreeMap::from([(
                "networkpolicy.yaml".to_string(),
                format!("{NP}front-{{{{ .Resource.metadata.name }}}}"),
            )]),
            secret_type: None,
        }])
    }

    fn network_policy_trigger(one_for_event: bool) -> EventTrigger {
        trigger(EventTriggerSpec {
            source_cluster_selector: api::selector::parse("env=fv").unwrap(),
            event_source_name: "sveltos-service".into(),
            one_for_event,
            policy_refs: vec![PolicyRef {
                kind: "ConfigMap".into(),
                namespace: "default".into(),
                name: "network-policy".into(),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    fn decide(
        trigger: &EventTrigger,
        cluster: &Cluster,
        events: &ReportEvents,
        objects: &Objects,
    ) -> Result<Desired, String> {
        decide_with(&NameOnly, trigger, cluster, events, objects)
    }

    fn decide_with(
        render: &dyn Render,
        trigger: &EventTrigger,
        cluster: &Cluster,
        events: &ReportEvents,
        objects: &Objects,
    ) -> Result<Desired, String> {
        let inputs = Inputs {
            trigger,
            cluster,
            event_source: "sveltos-service",
            events,
            lookup_epoch: 0,
            holds: &|_| false,
        };
        desired(&inputs, render, objects, &mut UnitMemo::default())
    }

    #[test]
    fn one_profile_and_configmap_per_resource_in_the_source_cluster() {
        let c1 = cluster("c1");
        let desired = decide(
            &network_policy_trigger(true),
            &c1,
            &events(&["a", "b"]),
            &network_policy_objects(),
        )
        .unwrap();
        assert_eq!(desired.profiles.len(), 2);
        assert_eq!(desired.generated.len(), 2);
        let profile = &desired.profiles[0];
        let refs = &profile.spec.cluster_refs;
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].kind.as_deref(), Some("SveltosCluster"));
        assert_eq!(refs[0].name.as_deref(), Some("c1"));
        assert!(api::selector::is_empty(&profile.spec.cluster_selector));
        let labels = profile.metadata.labels.as_ref().unwrap();
        assert_eq!(
            labels["eventtrigger.lib.projectsveltos.io/resourcename"],
            "a"
        );
        assert_eq!(profile.spec.policy_refs[0].name, desired.generated[0].name);
        assert_eq!(
            desired.generated[0].data["networkpolicy.yaml"],
            format!("{NP}front-a")
        );
        assert_eq!(
            desired.generated[1].data["networkpolicy.yaml"],
            format!("{NP}front-b")
        );
        assert_ne!(
            desired.profiles[0].metadata.name,
            desired.profiles[1].metadata.name
        );
    }

    #[test]
    fn remembered_units_equal_fresh_ones_and_follow_every_input() {
        let c1 = cluster("c1");
        let trigger = network_policy_trigger(true);
        let objects = network_policy_objects();
        let decide_with = |memo: &mut UnitMemo, events: &ReportEvents, objects: &Objects, epoch| {
            let inputs = Inputs {
                trigger: &trigger,
                cluster: &c1,
                event_source: "sveltos-service",
                events,
                lookup_epoch: epoch,
                holds: &|_| false,
            };
            let decided = desired(&inputs, &NameOnly, objects, memo).unwrap();
            memo.finish();
            decided
        };
        let mut memo = UnitMemo::default();
        let fresh = |events: &ReportEvents, objects: &Objects, epoch| {
            decide_with(&mut UnitMemo::default(), events, objects, epoch)
        };
        let before = events(&["a", "b"]);
        assert_eq!(
            decide_with(&mut memo, &before, &objects, 0),
            fresh(&before, &objects, 0)
        );
        // One resource renamed, one added: the memo answers as a fresh decision does.
        let after = events(&["a", "c", "d"]);
        assert_eq!(
            decide_with(&mut memo, &after, &objects, 0),
            fresh(&after, &objects, 0)
        );
        // The template changes: a new lookup epoch yields the new content.
        let mut edited = network_policy_objects();
        edited.0[0].data.insert(
            "networkpolicy.yaml".into(),
            format!("{NP}back-{{{{ .Resource.metadata.name }}}}"),
        );
        let changed = decide_with(&mut memo, &after, &edited, 1);
        assert_eq!(changed, fresh(&after, &edited, 1));
        assert_eq!(
            changed.generated[0].data["networkpolicy.yaml"],
            format!("{NP}back-a")
        );
        // Only plans of live units are kept.
        assert_eq!(memo.len(), 3);
    }

    #[test]
    fn a_settled_unit_is_names_while_the_cluster_holds_it_and_built_again_when_not() {
        let c1 = cluster("c1");
        let trigger = network_policy_trigger(true);
        let objects = network_policy_objects();
        let decide = |memo: &mut UnitMemo, holds: &dyn Fn(&SettledObject) -> bool| {
            let inputs = Inputs {
                trigger: &trigger,
                cluster: &c1,
                event_source: "sveltos-service",
                events: &events(&["a", "b"]),
                lookup_epoch: 0,
                holds,
            };
            let decided = desired(&inputs, &NameOnly, &objects, memo).unwrap();
            memo.finish();
            decided
        };
        let mut memo = UnitMemo::default();
        let built = decide(&mut memo, &|_| true);
        assert_eq!(built.profiles.len(), 2);
        assert!(built.settled.is_empty(), "nothing settled yet");

        // Each object stamped: the units let go of their objects.
        let stamp = |_: &str, _: &str, _: &dyn Wanted| {
            Some(Stamp {
                version: "1".into(),
                ..Stamp::default()
            })
        };
        let mut settled_now = 0;
        for kept in memo.values_mut() {
            if let Kept::Built(unit) = kept {
                // A unit with an object not stamped stays built.
                let partly = |kind: &'static str, name: &str, wanted: &dyn Wanted| {
                    (kind != "ConfigMap").then(|| stamp(kind, name, wanted))?
                };
                assert!(unit.settle(partly).is_none());
                *kept = Kept::Settled(Arc::new(unit.settle(stamp).unwrap()));
                settled_now += 1;
            }
        }
        assert_eq!(settled_now, 2);
        let settled = decide(&mut memo, &|_| true);
        assert!(settled.profiles.is_empty() && settled.generated.is_empty());
        let mut names: Vec<_> = settled.settled.clone();
        let mut expected: Vec<_> = (built.profiles.iter())
            .map(|p| ("ClusterProfile", p.metadata.name.clone().unwrap()))
            .chain(
                built
                    .generated
                    .iter()
                    .map(|g| ("ConfigMap", g.name.clone())),
            )
            .collect();
        names.sort();
        expected.sort();
        assert_eq!(names, expected);

        // One object changed in the cluster: its unit is built again, the other stays names.
        let changed = &built.generated[0].name;
        let rebuilt = decide(&mut memo, &|object| object.name != *changed);
        assert_eq!(rebuilt.generated, [Arc::clone(&built.generated[0])]);
        assert_eq!(rebuilt.profiles, [Arc::clone(&built.profiles[0])]);
        assert_eq!(rebuilt.settled.len(), 2);
        let built_again = memo.values_mut().filter(|k| matches!(k, Kept::Built(_)));
        assert_eq!(built_again.count(), 1);
    }

    #[test]
    fn a_profile_carries_when_its_event_was_first_seen() {
        let (c1, trigger) = (cluster("c1"), network_policy_trigger(true));
        let objects = network_policy_objects();
        let decide = |events: &ReportEvents, memo: &mut UnitMemo| {
            let inputs = Inputs {
                trigger: &trigger,
                cluster: &c1,
                event_source: "sveltos-service",
                events,
                lookup_epoch: 0,
                holds: &|_| false,
            };
            let decided = desired(&inputs, &NameOnly, &objects, memo).unwrap();
            memo.finish();
            decided
        };
        let then = Instant::now();
        let now = then + std::time::Duration::from_secs(5);
        let mut memo = UnitMemo::default();
        let mut first = events(&["a"]);
        first.date(None, &HashMap::new(), then);
        let decided = decide(&first, &mut memo);
        let a = decided.profiles[0].metadata.name.clone().unwrap();
        assert_eq!(decided.seen[&a], then);
        // Later b is new; a's unit is reused and keeps its time.
        let mut second = events(&["a", "b"]);
        second.date(Some(&first.seen), &HashMap::new(), now);
        let decided = decide(&second, &mut memo);
        let b = decided.profiles[1].metadata.name.clone().unwrap();
        assert_eq!((decided.seen[&a], decided.seen[&b]), (then, now));
        // Events of a report decoded without times leave their profiles undated.
        let decided = decide(&events(&["a", "c"]), &mut UnitMemo::default());
        assert!(decided.seen.is_empty());
    }

    #[test]
    fn decisions_are_deterministic() {
        let c1 = cluster("c1");
        let first = decide(
            &network_policy_trigger(true),
            &c1,
            &events(&["a"]),
            &network_policy_objects(),
        )
        .unwrap();
        let again = decide(
            &network_policy_trigger(true),
            &c1,
            &events(&["a"]),
            &network_policy_objects(),
        )
        .unwrap();
        assert_eq!(first, again);
    }

    #[test]
    fn cloud_event_action_creates_deletes_or_fails_in_words() {
        let c1 = cluster("c1");
        let mut trigger = network_policy_trigger(true);
        trigger.spec.policy_refs.clear();
        let mut cloud = events(&[]);
        cloud.cloud_events = vec![json!({"source": "a/b", "subject": "s", "type": "t"})];
        let objects = network_policy_objects();
        let go = crate::engine::GoTemplates::new();
        let mut outcome = |action: &str, cloud: &ReportEvents| {
            trigger.spec.cloud_event_action = action.into();
            decide_with(&go, &trigger, &c1, cloud, &objects)
        };
        let created = outcome("Create", &cloud).unwrap();
        assert_eq!(created.profiles.len(), 1);
        let labels = created.profiles[0].metadata.labels.clone().unwrap();
        assert_eq!(labels["eventtrigger.lib.projectsveltos.io/cesource"], "a-b");
        assert!(outcome("Delete", &cloud).unwrap().profiles.is_empty());
        let error = outcome("Remove", &cloud).unwrap_err();
        assert!(error.contains("Create or Delete"), "{error}");
        // The latest event of a (source, subject) decides.
        let by_type = r#"{{ if eq .CloudEvent.type "gone" }}Delete{{ else }}Create{{ end }}"#;
        cloud
            .cloud_events
            .push(json!({"source": "a/b", "subject": "s", "type": "gone"}));
        assert!(outcome(by_type, &cloud).unwrap().profiles.is_empty());
        cloud
            .cloud_events
            .push(json!({"source": "a/b", "subject": "s", "type": "back"}));
        assert_eq!(outcome(by_type, &cloud).unwrap().profiles.len(), 1);
    }

    #[test]
    fn one_profile_for_all_resources_and_none_for_no_event() {
        let c1 = cluster("c1");
        let mut trigger = network_policy_trigger(false);
        trigger.spec.policy_refs[0].name = "plain".into();
        let objects = Objects(vec![Referenced {
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: "plain".into(),
            ..Default::default()
        }]);
        let desired = decide(&trigger, &c1, &events(&["a", "b"]), &objects).unwrap();
        assert_eq!(desired.profiles.len(), 1);
        assert!(
            desired.generated.is_empty(),
            "not annotated: referenced as is"
        );
        assert_eq!(desired.profiles[0].spec.policy_refs[0].name, "plain");
        assert!(
            !desired.profiles[0]
                .metadata
                .labels
                .as_ref()
                .unwrap()
                .contains_key("eventtrigger.lib.projectsveltos.io/resourcename")
        );
        let empty = decide(&trigger, &c1, &events(&[]), &objects).unwrap();
        assert!(empty.profiles.is_empty());
    }

    #[test]
    fn destination_selector_and_destination_cluster() {
        let c1 = cluster("c1");
        let mut trigger = network_policy_trigger(true);
        trigger.spec.destination_cluster_selector = api::selector::parse("dep=eng").unwrap();
        let desired = decide(&trigger, &c1, &events(&["a"]), &network_policy_objects()).unwrap();
        assert_eq!(
            desired.profiles[0].spec.cluster_selector,
            trigger.spec.destination_cluster_selector
        );
        assert!(desired.profiles[0].spec.cluster_refs.is_empty());

        trigger.spec.destination_cluster = Some(ObjectReference {
            kind: Some("SveltosCluster".into()),
            namespace: Some("default".into()),
            name: Some("{{ .Cluster.metadata.name }}-peer".into()),
            ..Default::default()
        });
        let error = decide(&trigger, &c1, &events(&["a"]), &network_policy_objects()).unwrap_err();
        assert!(error.contains("mutually exclusive"), "{error}");
        trigger.spec.destination_cluster_selector = LabelSelector::default();
        let desired = decide(&trigger, &c1, &events(&["a"]), &network_policy_objects()).unwrap();
        assert_eq!(
            desired.profiles[0].spec.cluster_refs[0].name.as_deref(),
            Some("c1-peer")
        );
    }

    #[test]
    fn profile_name_format_and_copied_fields() {
        let c1 = cluster("c1");
        let mut trigger = network_policy_trigger(true);
        trigger.spec.profile_name_format =
            "{{ .Cluster.metadata.name }}-{{ .Resource.metadata.name }}".into();
        trigger.spec.tier = 50;
        trigger.spec.patches_from = vec![ValueFrom {
            name: "p".into(),
            kind: "ConfigMap".into(),
            ..Default::default()
        }];
        let desired = decide(&trigger, &c1, &events(&["a"]), &network_policy_objects()).unwrap();
        let profile = &desired.profiles[0];
        assert_eq!(profile.metadata.name.as_deref(), Some("c1-a"));
        assert_eq!(profile.spec.tier, 50);
        assert_eq!(
            profile.spec.patches_from.len(),
            1,
            "patchesFrom propagated (upstream drops it)"
        );
    }

    #[test]
    fn values_from_an_instantiated_object_references_its_rendering() {
        let c1 = cluster("c1");
        let mut trigger = network_policy_trigger(true);
        trigger.spec.policy_refs.clear();
        let values = |name: &str| ValueFrom {
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: name.into(),
            ..Default::default()
        };
        trigger.spec.helm_charts = vec![HelmChart {
            values_from: vec![values("network-policy"), values("absent")],
            ..Default::default()
        }];
        trigger.spec.patches_from = vec![values("network-policy")];
        let desired = decide(&trigger, &c1, &events(&["a"]), &network_policy_objects()).unwrap();
        let spec = &desired.profiles[0].spec;
        let instantiated = &spec.helm_charts[0].values_from[0];
        assert_eq!(instantiated.namespace, "projectsveltos");
        assert!(instantiated.name.starts_with("sveltos-"));
        assert_eq!(spec.helm_charts[0].values_from[1], values("absent"));
        assert_eq!(spec.patches_from[0], *instantiated);
        assert_eq!(desired.generated.len(), 1, "one object for both references");
        let object = &desired.generated[0];
        assert_eq!(object.name, instantiated.name);
        assert_eq!(object.data["networkpolicy.yaml"], format!("{NP}front-a"));
    }

    #[test]
    fn local_policy_refs_come_first_in_trigger_order() {
        let c1 = cluster("c1");
        let mut trigger = network_policy_trigger(false);
        let plain = |name: &str, deployment_type| PolicyRef {
            kind: "GitRepository".into(),
            name: name.into(),
            deployment_type,
            ..Default::default()
        };
        trigger.spec.policy_refs = vec![
            plain("r1", DeploymentType::Remote),
            plain("l1", DeploymentType::Local),
            plain("r2", DeploymentType::Remote),
            plain("l2", DeploymentType::Local),
        ];
        let desired = decide(&trigger, &c1, &events(&["a"]), &Objects(vec![])).unwrap();
        let names: Vec<_> = desired.profiles[0]
            .spec
            .policy_refs
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(names, ["l1", "l2", "r1", "r2"]);
    }

    #[test]
    fn generators_write_named_outputs_not_referenced_by_the_profile() {
        let c1 = cluster("c1");
        let mut trigger = network_policy_trigger(true);
        trigger.spec.policy_refs.clear();
        trigger.spec.config_map_generator = vec![GeneratorReference {
            namespace: String::new(),
            name: "calico-sa-token-template".into(),
            name_format: "{{ .Cluster.metadata.name }}-token".into(),
            optional: false,
        }];
        let source = Referenced {
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: "calico-sa-token-template".into(),
            data: BTreeMap::from([(
                "token".to_string(),
                "{{ .Resource.metadata.name }}".to_string(),
            )]),
            ..Default::default()
        };
        let desired = decide(&trigger, &c1, &events(&["a"]), &Objects(vec![source])).unwrap();
        assert_eq!(desired.generated.len(), 1);
        let output = &desired.generated[0];
        assert_eq!(output.name, "c1-token");
        assert_eq!(output.data["token"], "a");
        assert_eq!(output.labels[FROM_GENERATOR_LABEL], "ok");
        assert!(desired.profiles[0].spec.policy_refs.is_empty());
        let missing = decide(&trigger, &c1, &events(&["a"]), &Objects(vec![])).unwrap_err();
        assert!(missing.contains("does not exist yet"), "{missing}");
    }

    #[test]
    fn capi_source_clusters_are_referenced_as_cluster_api_clusters() {
        let capi = Cluster::from_capi(&json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "w", "namespace": "default"},
            "status": {"initialization": {"controlPlaneInitialized": true}}
        }));
        assert_eq!(capi.reference.cluster_type, ClusterType::Capi);
        let desired = decide(
            &network_policy_trigger(true),
            &capi,
            &events(&["a"]),
            &network_policy_objects(),
        )
        .unwrap();
        let reference = &desired.profiles[0].spec.cluster_refs[0];
        assert_eq!(reference.kind.as_deref(), Some("Cluster"));
        assert_eq!(
            reference.api_version.as_deref(),
            Some("cluster.x-k8s.io/v1beta1")
        );
    }
}
