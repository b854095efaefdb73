//! The "decide" step for a whole EventTrigger: its source clusters, and for each of them the
//! ClusterProfiles and generated objects its EventReport calls for. Pure: reads go through
//! [`World`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use api::v1beta1::EventTrigger;
use k8s_openapi::api::core::v1::ObjectReference;

use crate::event_data::{DocumentMemo, ReportEvents, cluster_only_data};
use crate::fleet::{Cluster, select};
use crate::identity::ClusterRef;
use crate::instantiate::Lookup;
use crate::profiles::{Built, Desired, Inputs, Kept, UnitMemo, desired};
use crate::render::{Render, render_field, template_name};
use crate::settled::{Settled, SettledObject};
use crate::tenancy::{TenantLookup, check_event_source, tenant_of};

/// What the manager can read besides the trigger: clusters, EventSources, reports, and the
/// referenced ConfigMaps/Secrets.
pub trait World: Lookup {
    /// Every registered cluster this manager handles.
    fn clusters(&self) -> Arc<[Cluster]>;
    /// The labels of the EventSource if it exists in the management cluster (and is not
    /// being deleted).
    fn event_source_labels(&self, name: &str) -> Option<BTreeMap<String, String>>;
    /// A number that changes whenever anything [`Lookup::get`] could return changes.
    fn lookup_epoch(&self) -> u64;
    /// The clusters ClusterSet `name` selected (none when it does not exist).
    fn cluster_set(&self, name: &str) -> Vec<ClusterRef>;
    /// The decoded events of the cluster's report for `event_source`, if there is a report;
    /// collected objects already in `documents` need not be decoded again.
    fn report(
        &self,
        cluster: &ClusterRef,
        event_source: &str,
        documents: &mut DocumentMemo,
    ) -> Result<Option<ReportEvents>, String>;
    /// Whether the management cluster still holds an object of a settled unit as stamped
    /// (none do where nothing settles units).
    fn holds(&self, _object: &SettledObject) -> bool {
        false
    }
}

/// What a trigger's previous plans computed that the next one may reuse, by source cluster.
#[derive(Debug, Default)]
pub struct PlanMemo {
    clusters: HashMap<ClusterRef, ClusterMemo>,
}

/// What planning one source cluster computed.
#[derive(Debug, Default)]
struct ClusterMemo {
    /// Units (a profile and its generated objects) by digest of their inputs.
    units: UnitMemo,
    /// Collected objects by digest of their document.
    documents: DocumentMemo,
}

impl ClusterMemo {
    /// Ends a plan of the cluster: what it did not use is forgotten.
    fn finish(&mut self) {
        self.units.finish();
        self.documents.finish();
    }
}

/// Everything a trigger should have produced, cluster by cluster.
#[derive(Debug, Default)]
pub struct Plan {
    /// Source clusters the trigger selects, sorted.
    pub matching: Vec<ClusterRef>,
    /// How the status names each matching cluster (a Cluster API cluster by its own
    /// apiVersion).
    pub references: BTreeMap<ClusterRef, ObjectReference>,
    /// Objects that must exist (every cluster that did not fail).
    pub desired: Desired,
    /// Clusters whose pass failed, with the reason; their existing objects stay as they are.
    pub failures: BTreeMap<ClusterRef, String>,
    /// Paused clusters, with the reason: their existing objects stay as they are, and nothing
    /// is retried until the cluster changes.
    pub held: BTreeMap<ClusterRef, String>,
    /// The EventSource (name rendered for the cluster) the agent must evaluate in each
    /// matching cluster whose name rendered.
    pub sources: BTreeMap<ClusterRef, String>,
}

/// Status message of a paused source cluster (Sveltos' words).
pub const PAUSED: &str = "cannot proceed deploying. Either cluster is paused or not ready.";

/// Plans `trigger` against `world`, reusing the units `memo` kept from the trigger's previous
/// plans when their inputs are unchanged. A bad selector fails the whole trigger.
pub fn plan(
    trigger: &EventTrigger,
    world: &dyn World,
    render: &dyn Render,
    memo: &mut PlanMemo,
) -> Result<Plan, String> {
    let (plan, planned) = plan_within(trigger, world, render, memo, None)?;
    // What clusters no longer planned computed is forgotten.
    memo.clusters = planned;
    Ok(plan)
}

/// What [`plan`] says of `trigger`'s source clusters (`within` some only: selected, named,
/// paused, failed, their EventSource) without planning their objects: cheap, whatever the
/// fleet's size.
pub fn selection(
    trigger: &EventTrigger,
    world: &dyn World,
    render: &dyn Render,
    within: Option<&BTreeSet<ClusterRef>>,
) -> Result<Plan, String> {
    select_within(trigger, world, render, within, |_, _, _| {})
}

/// Plans `trigger` in the source `clusters` only, as [`plan`] would there: whether it selects
/// each now, and what its report calls for. [`Plan::absorb`] takes the outcome into the
/// trigger's whole plan.
pub fn plan_some(
    trigger: &EventTrigger,
    world: &dyn World,
    render: &dyn Render,
    memo: &mut PlanMemo,
    clusters: &BTreeSet<ClusterRef>,
) -> Result<Plan, String> {
    let (plan, planned) = plan_within(trigger, world, render, memo, Some(clusters))?;
    memo.clusters.retain(|c, _| !clusters.contains(c));
    memo.clusters.extend(planned);
    Ok(plan)
}

impl PlanMemo {
    /// Forgets what was computed for clusters other than `clusters`.
    pub fn keep_only(&mut self, clusters: &BTreeSet<ClusterRef>) {
        self.clusters.retain(|c, _| clusters.contains(c));
    }

    /// Keeps the units of `clusters` that `settle` finds held by the cluster as names and
    /// stamps only, letting go of their objects.
    pub fn settle(
        &mut self,
        clusters: &BTreeSet<ClusterRef>,
        mut settle: impl FnMut(&Built) -> Option<Settled>,
    ) {
        for cluster in clusters {
            let Some(memo) = self.clusters.get_mut(cluster) else {
                continue;
            };
            for kept in memo.units.values_mut() {
                if let Kept::Built(built) = kept
                    && let Some(settled) = settle(built)
                {
                    *kept = Kept::Settled(Arc::new(settled));
                }
            }
        }
    }
}

/// Selects `trigger`'s source clusters (`within` some only): which it selects, how each is
/// named, its EventSource, which are paused or failed. Each cluster to plan (selected,
/// neither paused nor failed) goes to `each` with its EventSource, to add its objects.
fn select_within(
    trigger: &EventTrigger,
    world: &dyn World,
    render: &dyn Render,
    within: Option<&BTreeSet<ClusterRef>>,
    mut each: impl FnMut(&Cluster, &str, &mut Plan),
) -> Result<Plan, String> {
    let trigger_name = trigger.metadata.name.as_deref().unwrap_or_default();
    let clusters = world.clusters();
    let mut selected = select(&clusters, &trigger.spec.source_cluster_selector)
        .map_err(|e| format!("sourceClusterSelector: {e}"))?;
    // A ClusterSet's selection counts as it is; a member that is not ready (yet) is held
    // like a paused cluster until the set replaces it.
    for set in &trigger.spec.cluster_set_refs {
        for member in world.cluster_set(set) {
            if let Some(cluster) = clusters
                .iter()
                .find(|c| !c.deleting && c.reference == member)
            {
                selected.push(cluster);
            }
        }
    }
    selected.retain(|c| within.is_none_or(|set| set.contains(&c.reference)));
    selected.sort_by(|a, b| a.reference.cmp(&b.reference));
    selected.dedup_by(|a, b| a.reference == b.reference);
    let mut plan = Plan::default();
    for cluster in selected {
        let reference = &cluster.reference;
        plan.matching.push(reference.clone());
        plan.references
            .insert(reference.clone(), cluster.object_reference());
        let event_source = match source_name(trigger, trigger_name, cluster, render) {
            Ok(event_source) => event_source,
            Err(reason) => {
                plan.failures.insert(reference.clone(), reason);
                continue;
            }
        };
        plan.sources.insert(reference.clone(), event_source.clone());
        if cluster.paused || !cluster.selectable {
            plan.held.insert(reference.clone(), PAUSED.to_owned());
            continue;
        }
        each(cluster, &event_source, &mut plan);
    }
    Ok(plan)
}

/// Plans `trigger` in its source clusters (`within` some only) with what `memo` kept for
/// them (taken out of it); returns the plan and what planning each cluster computed.
fn plan_within(
    trigger: &EventTrigger,
    world: &dyn World,
    render: &dyn Render,
    memo: &mut PlanMemo,
    within: Option<&BTreeSet<ClusterRef>>,
) -> Result<(Plan, HashMap<ClusterRef, ClusterMemo>), String> {
    let mut planned = HashMap::new();
    let plan = select_within(trigger, world, render, within, |cluster, source, plan| {
        let reference = &cluster.reference;
        let mut cluster_memo = memo.clusters.remove(reference).unwrap_or_default();
        let desired = plan_cluster(trigger, cluster, source, world, render, &mut cluster_memo);
        cluster_memo.finish();
        planned.insert(reference.clone(), cluster_memo);
        plan.add(reference, desired);
    })?;
    Ok((plan, planned))
}

impl Plan {
    /// Takes in `part`, a plan of the source clusters `within` (its objects aside): whether
    /// what it says of them (selected, named, paused, failed, their EventSource) changed.
    pub fn absorb(&mut self, part: &Plan, within: &BTreeSet<ClusterRef>) -> bool {
        let selected = self.matching.iter().filter(|c| within.contains(*c));
        let mut changed = !selected.eq(part.matching.iter())
            || within
                .iter()
                .any(|c| self.references.get(c) != part.references.get(c));
        let mut take = |map: &mut BTreeMap<ClusterRef, String>,
                        from: &BTreeMap<ClusterRef, String>| {
            for cluster in within {
                let now = from.get(cluster);
                if map.get(cluster) != now {
                    changed = true;
                    match now {
                        Some(value) => map.insert(cluster.clone(), value.clone()),
                        None => map.remove(cluster),
                    };
                }
            }
        };
        take(&mut self.sources, &part.sources);
        take(&mut self.held, &part.held);
        take(&mut self.failures, &part.failures);
        self.matching.retain(|c| !within.contains(c));
        self.matching.extend(part.matching.iter().cloned());
        self.matching.sort();
        self.references.retain(|c, _| !within.contains(c));
        for (cluster, reference) in &part.references {
            self.references.insert(cluster.clone(), reference.clone());
        }
        changed
    }

    /// Adds what planning `cluster` gave: its objects, or why it failed.
    fn add(&mut self, cluster: &ClusterRef, desired: Result<Desired, String>) {
        match desired {
            Ok(desired) => {
                self.desired.profiles.extend(desired.profiles);
                self.desired.generated.extend(desired.generated);
                self.desired.seen.extend(desired.seen);
                self.desired.settled.extend(desired.settled);
            }
            Err(reason) => {
                self.failures.insert(cluster.clone(), reason);
            }
        }
    }
}

/// The trigger's `eventSourceName`, rendered with the cluster's data.
fn source_name(
    trigger: &EventTrigger,
    trigger_name: &str,
    cluster: &Cluster,
    render: &dyn Render,
) -> Result<String, String> {
    let reference = &cluster.reference;
    let name = template_name(&reference.namespace, &reference.name, trigger_name);
    render_field(
        render,
        &name,
        &trigger.spec.event_source_name,
        &cluster_only_data(&cluster.object),
    )
    .map_err(|e| format!("cannot render eventSourceName: {e}"))
}

fn plan_cluster(
    trigger: &EventTrigger,
    cluster: &Cluster,
    event_source: &str,
    world: &dyn World,
    render: &dyn Render,
    memo: &mut ClusterMemo,
) -> Result<Desired, String> {
    let reference = &cluster.reference;
    let source_labels = world.event_source_labels(event_source);
    let tenant = tenant_of(trigger.metadata.labels.as_ref());
    if let (Some(tenant), Some(labels)) = (&tenant, &source_labels) {
        check_event_source(tenant, event_source, tenant_of(Some(labels)).as_ref())?;
    }
    // A deleted EventSource withdraws what it produced (upstream leaves it behind).
    let events = if source_labels.is_some() {
        world
            .report(reference, event_source, &mut memo.documents)?
            .unwrap_or_default()
    } else {
        ReportEvents::default()
    };
    let restricted;
    let lookup: &dyn Lookup = match &tenant {
        Some(tenant) => {
            restricted = TenantLookup {
                inner: world,
                tenant,
            };
            &restricted
        }
        None => world,
    };
    desired(
        &Inputs {
            trigger,
            cluster,
            event_source,
            events: &events,
            lookup_epoch: world.lookup_epoch(),
            holds: &|object| world.holds(object),
        },
        render,
        lookup,
        &mut memo.units,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::instantiate::Referenced;
    use crate::testing::NameOnly;
    use api::v1beta1::{ClusterType, SveltosCluster};
    use k8s_openapi::api::core::v1::ObjectReference;
    use serde_json::json;

    struct Fixture {
        clusters: Vec<Cluster>,
        sources: Vec<&'static str>,
        reports: BTreeMap<(String, String), ReportEvents>,
        broken: Option<String>,
        /// Labels every EventSource carries.
        source_labels: BTreeMap<String, String>,
        /// ClusterSets and the clusters each selected.
        sets: BTreeMap<String, Vec<ClusterRef>>,
        /// The clusters whose reports were read, in order.
        read: std::sync::Mutex<Vec<String>>,
    }

    impl Lookup for Fixture {
        fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Referenced> {
            (kind == "ConfigMap" && name == "policy").then(|| Referenced {
                kind: kind.into(),
                namespace: namespace.into(),
                name: name.into(),
                ..Default::default()
            })
        }
    }

    impl World for Fixture {
        fn clusters(&self) -> Arc<[Cluster]> {
            self.clusters.clone().into()
        }
        fn event_source_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
            self.sources
                .contains(&name)
                .then(|| self.source_labels.clone())
        }
        fn lookup_epoch(&self) -> u64 {
            0
        }
        fn cluster_set(&self, name: &str) -> Vec<ClusterRef> {
            self.sets.get(name).cloned().unwrap_or_default()
        }
        fn report(
            &self,
            cluster: &ClusterRef,
            source: &str,
            _: &mut DocumentMemo,
        ) -> Result<Option<ReportEvents>, String> {
            if let Ok(mut read) = self.read.lock() {
                read.push(cluster.name.clone());
            }
            if self.broken.as_deref() == Some(cluster.name.as_str()) {
                return Err("report is not valid JSON".into());
            }
            Ok(self
                .reports
                .get(&(cluster.name.clone(), source.to_string()))
                .cloned())
        }
    }

    fn cluster(name: &str, env: &str) -> Cluster {
        let object: SveltosCluster = serde_json::from_value(json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": name, "namespace": "default", "labels": {"env": env}},
            "spec": {}, "status": {"ready": true}
        }))
        .unwrap();
        Cluster::from_sveltos(&object).unwrap()
    }

    fn trigger() -> EventTrigger {
        serde_json::from_value(json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventTrigger",
            "metadata": {"name": "t"},
            "spec": {
                "sourceClusterSelector": {"matchLabels": {"env": "fv"}},
                "eventSourceName": "es", "oneForEvent": true,
                "policyRefs": [{"kind": "ConfigMap", "namespace": "default", "name": "policy"}]
            }
        }))
        .unwrap()
    }

    fn events(names: &[&str]) -> ReportEvents {
        ReportEvents {
            matching_resources: names
                .iter()
                .map(|n| ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Service".into()),
                    namespace: Some("default".into()),
                    name: Some((*n).into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn fixture() -> Fixture {
        Fixture {
            clusters: vec![
                cluster("c1", "fv"),
                cluster("c2", "fv"),
                cluster("c3", "prod"),
            ],
            sources: vec!["es"],
            reports: BTreeMap::from([
                (("c1".into(), "es".into()), events(&["a", "b"])),
                (("c2".into(), "es".into()), events(&["c"])),
                (("c3".into(), "es".into()), events(&["d"])),
            ]),
            broken: None,
            source_labels: BTreeMap::new(),
            sets: BTreeMap::new(),
            read: Default::default(),
        }
    }

    fn tenant_labels(namespace: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (
                api::labels::SERVICE_ACCOUNT_NAMESPACE_LABEL.to_owned(),
                namespace.to_owned(),
            ),
            (
                api::labels::SERVICE_ACCOUNT_NAME_LABEL.to_owned(),
                "ops".to_owned(),
            ),
        ])
    }

    #[test]
    fn a_tenant_trigger_acts_only_within_its_namespace() {
        let mut tenant_trigger = trigger();
        tenant_trigger.metadata.labels = Some(tenant_labels("default"));
        let mut world = fixture();
        // An admin's EventSource is not the tenant's to use.
        let plan_of = |trigger: &EventTrigger, world: &Fixture| {
            plan(trigger, world, &NameOnly, &mut PlanMemo::default()).unwrap()
        };
        let refused = plan_of(&tenant_trigger, &world);
        assert!(refused.desired.profiles.is_empty());
        assert_eq!(refused.failures.len(), 2);
        assert!(
            refused
                .failures
                .values()
                .all(|r| r.contains("not labelled for tenant default/ops"))
        );
        // Its own EventSource and a ConfigMap of its own namespace are.
        world.source_labels = tenant_labels("default");
        let allowed = plan_of(&tenant_trigger, &world);
        assert!(allowed.failures.is_empty(), "{:?}", allowed.failures);
        assert_eq!(allowed.desired.profiles.len(), 3);
        // A ConfigMap of another namespace is not.
        tenant_trigger.spec.policy_refs[0].namespace = "kube-system".into();
        let refused = plan_of(&tenant_trigger, &world);
        assert!(refused.desired.profiles.is_empty());
        let reason = refused.failures.values().next().unwrap();
        assert!(
            reason.contains("ConfigMap kube-system/policy is outside it"),
            "{reason}"
        );
        // So is a templateResourceRef there (the deployer would hand it to getResource).
        tenant_trigger.spec.policy_refs[0].namespace = "default".into();
        tenant_trigger.spec.template_resource_refs = vec![serde_json::from_value(json!({
            "resource": {"apiVersion": "v1", "kind": "Secret", "namespace": "kube-system", "name": "token"},
            "identifier": "Token"
        }))
        .unwrap()];
        let refused = plan_of(&tenant_trigger, &world);
        let reason = refused.failures.values().next().unwrap();
        assert!(
            reason.contains("Secret kube-system/token is outside it"),
            "{reason}"
        );
        // An admin's trigger is not restricted.
        let mut admin = trigger();
        admin.spec.policy_refs[0].namespace = "kube-system".into();
        assert_eq!(plan_of(&admin, &fixture()).desired.profiles.len(), 3);
    }

    #[test]
    fn one_profile_per_event_in_every_selected_cluster() {
        let plan = plan(&trigger(), &fixture(), &NameOnly, &mut PlanMemo::default()).unwrap();
        let names: Vec<_> = plan.matching.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["c1", "c2"]);
        assert_eq!(plan.desired.profiles.len(), 3);
        assert!(plan.failures.is_empty());
        assert_eq!(plan.matching[0].cluster_type, ClusterType::Sveltos);
    }

    #[test]
    fn a_deleted_event_source_withdraws_its_profiles() {
        let mut world = fixture();
        world.sources.clear();
        let plan = plan(&trigger(), &world, &NameOnly, &mut PlanMemo::default()).unwrap();
        assert_eq!(plan.matching.len(), 2);
        assert!(plan.desired.profiles.is_empty());
    }

    #[test]
    fn a_failing_cluster_does_not_block_the_others() {
        let mut world = fixture();
        world.broken = Some("c1".into());
        let plan = plan(&trigger(), &world, &NameOnly, &mut PlanMemo::default()).unwrap();
        assert_eq!(plan.desired.profiles.len(), 1);
        assert_eq!(plan.failures.len(), 1);
        let (failed, reason) = plan.failures.iter().next().unwrap();
        assert_eq!(failed.name, "c1");
        assert!(reason.contains("not valid JSON"));
    }

    #[test]
    fn a_paused_cluster_keeps_matching_and_is_held_as_it_is() {
        let mut world = fixture();
        world.clusters[0].paused = true;
        let plan = plan(&trigger(), &world, &NameOnly, &mut PlanMemo::default()).unwrap();
        assert_eq!(plan.matching.len(), 2, "a paused cluster still matches");
        assert!(plan.failures.is_empty());
        assert_eq!(
            plan.held
                .keys()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["c1"]
        );
        // Only c2's profile is planned; c1's existing ones are left alone, not withdrawn.
        assert_eq!(plan.desired.profiles.len(), 1);
        assert!(plan.sources.contains_key(&world.clusters[0].reference));
        let status = crate::manager::status_of(&plan, None);
        let held = &status.cluster_info[0];
        assert_eq!(
            held.status,
            Some(api::v1beta1::SveltosFeatureStatus::Provisioning)
        );
        assert_eq!(held.failure_message.as_deref(), Some(PAUSED));
    }

    #[test]
    fn the_clusters_a_cluster_set_selected_are_sources_too() {
        let mut world = fixture();
        let c3 = world.clusters[2].reference.clone();
        let absent = ClusterRef {
            name: "gone".into(),
            ..c3.clone()
        };
        world.sets.insert("prod".into(), vec![c3.clone(), absent]);
        let mut trigger = trigger();
        trigger.spec.cluster_set_refs = vec!["prod".into(), "missing".into()];
        let planned = plan(&trigger, &world, &NameOnly, &mut PlanMemo::default()).unwrap();
        let names: Vec<_> = planned.matching.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["c1", "c2", "c3"]);
        assert_eq!(planned.desired.profiles.len(), 4);
        // A member that is no longer ready keeps what it has until the set replaces it.
        world.clusters[2].selectable = false;
        let planned = plan(&trigger, &world, &NameOnly, &mut PlanMemo::default()).unwrap();
        assert_eq!(planned.matching.len(), 3);
        assert_eq!(planned.held.get(&c3).map(String::as_str), Some(PAUSED));
        assert_eq!(planned.desired.profiles.len(), 3);
    }

    #[test]
    fn a_selection_says_what_a_whole_plan_says_of_the_clusters_and_reads_no_report() {
        let mut world = fixture();
        world.clusters[1].paused = true;
        let whole = plan(&trigger(), &world, &NameOnly, &mut PlanMemo::default()).unwrap();
        world.read.lock().unwrap().clear();
        let selection = selection(&trigger(), &world, &NameOnly, None).unwrap();
        assert!(world.read.lock().unwrap().is_empty());
        assert!(selection.desired.profiles.is_empty() && selection.desired.generated.is_empty());
        assert_eq!(selection.matching, whole.matching);
        assert_eq!(selection.references, whole.references);
        assert_eq!(selection.sources, whole.sources);
        assert_eq!(selection.held, whole.held);
        assert!(!whole.desired.profiles.is_empty());

        // Within some clusters: what the whole selection says of those, nothing of others.
        let paused = world.clusters[1].reference.clone();
        let within = BTreeSet::from([paused.clone()]);
        let some = super::selection(&trigger(), &world, &NameOnly, Some(&within)).unwrap();
        assert_eq!(some.matching, std::slice::from_ref(&paused));
        assert_eq!(some.sources.get(&paused), whole.sources.get(&paused));
        assert_eq!(some.sources.len(), 1);
        assert_eq!(some.held.get(&paused), whole.held.get(&paused));
    }

    #[test]
    fn a_pass_over_some_clusters_reads_and_plans_those_alone_as_a_whole_plan_would() {
        let mut world = fixture();
        world.clusters[1].paused = true;
        let mut memo = PlanMemo::default();
        let mut whole = plan(&trigger(), &world, &NameOnly, &mut memo).unwrap();
        let (c1, c2, c3) = (
            world.clusters[0].reference.clone(),
            world.clusters[1].reference.clone(),
            world.clusters[2].reference.clone(),
        );
        world.read.lock().unwrap().clear();
        let some = |world: &Fixture, memo: &mut PlanMemo, clusters: &[&ClusterRef]| {
            let clusters: BTreeSet<ClusterRef> = clusters.iter().map(|c| (*c).clone()).collect();
            let part = plan_some(&trigger(), world, &NameOnly, memo, &clusters).unwrap();
            (part, clusters)
        };
        // c1's report changed: its profiles are planned, and only its report is read.
        world
            .reports
            .insert(("c1".into(), "es".into()), events(&["a", "b", "e"]));
        let (part, _) = some(&world, &mut memo, &[&c1]);
        assert_eq!(part.matching, std::slice::from_ref(&c1));
        assert_eq!(part.desired.profiles.len(), 3);
        assert_eq!(*world.read.lock().unwrap(), ["c1"]);
        // A paused cluster is held, one the trigger does not select is left out: neither
        // report is read, and the whole plan says the same of them as before.
        let (part, within) = some(&world, &mut memo, &[&c2, &c3]);
        assert_eq!(part.matching, std::slice::from_ref(&c2));
        assert!(part.held.contains_key(&c2) && part.desired.profiles.is_empty());
        assert_eq!(*world.read.lock().unwrap(), ["c1"]);
        assert!(!whole.absorb(&part, &within));

        // c3 is relabelled into the selection: it joins the whole plan.
        world.clusters[2] = cluster("c3", "fv");
        let (part, within) = some(&world, &mut memo, &[&c3]);
        assert_eq!(part.desired.profiles.len(), 1);
        assert!(whole.absorb(&part, &within));
        assert_eq!(whole.matching, [c1.clone(), c2.clone(), c3.clone()]);
        assert_eq!(whole.sources.get(&c3).map(String::as_str), Some("es"));

        // Its failures join the whole plan's, and go when the cluster plans again.
        world.broken = Some("c1".into());
        let (failed, within) = some(&world, &mut memo, &[&c1]);
        assert!(whole.absorb(&failed, &within), "c1 fails now");
        assert!(whole.failures.contains_key(&c1));
        assert!(!whole.absorb(&failed, &within), "nothing changed");
        world.broken = None;
        let (healthy, within) = some(&world, &mut memo, &[&c1]);
        assert!(whole.absorb(&healthy, &within));
        assert!(whole.failures.is_empty());

        // Unselected again: it leaves the whole plan.
        world.clusters[2] = cluster("c3", "prod");
        let (part, within) = some(&world, &mut memo, &[&c3]);
        assert!(whole.absorb(&part, &within));
        assert_eq!(whole.matching, [c1, c2]);
        assert!(!whole.sources.contains_key(&c3));
    }

    #[test]
    fn an_empty_source_selector_selects_nothing() {
        let mut trigger = trigger();
        trigger.spec.source_cluster_selector = Default::default();
        let plan = plan(&trigger, &fixture(), &NameOnly, &mut PlanMemo::default()).unwrap();
        assert!(plan.matching.is_empty() && plan.desired.profiles.is_empty());
    }
}
