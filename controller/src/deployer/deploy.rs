//! One ClusterProfile in one cluster: gather the objects its policyRefs hold (rendered when
//! the referenced object asks for it), apply them with Sveltos' metadata, and delete what an
//! earlier pass deployed that is no longer wanted; or withdraw everything.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Instant;

use api::labels::HASH_ANNOTATION;
use api::v1beta1::{
    ClusterProfileSpec, ReportedResource, ResourceReport, StopMatchingBehavior, SyncMode,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, Patch, PatchParams,
    PostParams,
};
use kube::{Client, ResourceExt};
use serde_json::Value;

use crate::deployer::Caches;
use crate::deployer::listings::{Listings, owner_of};
use crate::deployer::manifests::{self, Manifest, object_gvk, template_resources};
use crate::deployer::metadata::{Owner, conflict, decorate, deployed_by, hash, strip};
use crate::deployer::targets::{Target, Targets};
use crate::engine::GoTemplates;
use crate::fleet::Cluster;
use clusters::words::words;

/// Field manager of deployed objects, as Sveltos' addon-controller.
pub const FIELD_MANAGER: &str = "application/apply-patch";

/// A deployed object's identity: target, `Kind.version.group`, namespace, name.
pub type Key = (Target, String, String, String);

pub use super::record::Record;

/// What a pass did in one cluster.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Kinds deployed (`Kind.version.group`), the record cleanup reads next time.
    pub gvks: Vec<String>,
    /// Why the pass failed, if it did.
    pub failure: Option<String>,
    /// `syncMode: DryRun`: what a deployment would do to each object (nothing was changed).
    pub dry_run: Option<Vec<ResourceReport>>,
}

/// Why one object could not be applied.
enum ApplyError {
    /// Another profile owns it (and this one's tier does not win).
    Conflict(String),
    /// Anything else.
    Failed(String),
}

impl From<String> for ApplyError {
    fn from(reason: String) -> Self {
        ApplyError::Failed(reason)
    }
}

/// One applied (or, in a dry run, examined) object.
struct Applied {
    key: Key,
    action: &'static str,
    message: String,
}

/// Sveltos' names of what a deployment does to an object.
mod action {
    pub const NONE: &str = "No Action";
    pub const CREATE: &str = "Create";
    pub const UPDATE: &str = "Update";
    pub const DELETE: &str = "Delete";
    pub const CONFLICT: &str = "Conflict";
    pub const ERROR: &str = "Error";
}

fn report(key: &Key, action: &str, message: String) -> ResourceReport {
    let gvk = parse_gvk(&key.1).unwrap_or_else(|| GroupVersionKind::gvk("", "", &key.1));
    ResourceReport {
        resource: ReportedResource {
            name: key.3.clone(),
            namespace: key.2.clone(),
            group: gvk.group,
            kind: gvk.kind,
            version: gvk.version,
        },
        action: action.to_owned(),
        message,
    }
}

/// `Kind.version.group`, the form ClusterSummaries record deployed kinds in.
pub fn gvk_string(gvk: &GroupVersionKind) -> String {
    format!("{}.{}.{}", gvk.kind, gvk.version, gvk.group)
}

/// The kinds (as [`gvk_string`] writes them) `manifests` would deploy.
pub fn kinds(manifests: &[Manifest]) -> BTreeSet<String> {
    manifests
        .iter()
        .map(|m| gvk_string(&object_gvk(&m.object)))
        .collect()
}

fn parse_gvk(text: &str) -> Option<GroupVersionKind> {
    let (kind, rest) = text.split_once('.')?;
    let (version, group) = rest.split_once('.').unwrap_or((rest, ""));
    Some(GroupVersionKind::gvk(group, version, kind))
}

/// The per-pass context.
pub struct Deployer<'a> {
    /// Caches of the management cluster.
    pub caches: &'a Caches,
    /// Clients and discovery.
    pub targets: &'a Targets,
    /// Renders names (cluster-only templates).
    pub names: &'a GoTemplates,
    /// What earlier passes deployed.
    pub record: &'a Mutex<Record>,
    /// What recent lists found, for pairs without a record.
    pub listings: &'a Mutex<Listings>,
}

impl Deployer<'_> {
    /// The listings, locked for one read or change (never across a request).
    fn listings(&self) -> std::sync::MutexGuard<'_, Listings> {
        // Each change is one map operation, as with the record.
        self.listings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The record, locked for one read or change (never across a request).
    fn record(&self) -> std::sync::MutexGuard<'_, Record> {
        // Each change is one map operation: a panic while it was held left no half-made entry.
        self.record
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every object the profile's policyRefs hold for `cluster`, in policyRef order, with
    /// the template resources fetched from the management cluster when a policy needs them.
    pub async fn manifests(
        &mut self,
        profile: &str,
        spec: &ClusterProfileSpec,
        cluster: &Cluster,
    ) -> Result<Vec<Manifest>, String> {
        let mut resources = BTreeMap::new();
        if manifests::templated(spec, cluster, self.caches) {
            let wanted =
                template_resources(self.names, profile, &spec.template_resource_refs, cluster)?;
            for resource in wanted {
                let mgmt = self.targets.mgmt().clone();
                let served = self
                    .targets
                    .kind(&Target::Local, &mgmt, &resource.gvk)
                    .await?;
                let api = served.api(mgmt, &resource.namespace);
                match api.get_opt(&resource.name).await.map_err(|e| words(&e))? {
                    Some(object) => {
                        let value = serde_json::to_value(object).map_err(|e| e.to_string())?;
                        resources.insert(resource.identifier.clone(), value);
                    }
                    None => {
                        if let Some(failure) = resource.missing() {
                            return Err(failure);
                        }
                    }
                }
            }
        }
        manifests::manifests(profile, spec, cluster, self.caches, &resources)
    }

    /// Applies one manifest (in a dry run: validates it on the server and says what applying
    /// would do).
    async fn apply(
        &mut self,
        manifest: Manifest,
        owner: &Owner,
        namespaces: &mut BTreeMap<(Target, String), bool>,
        dry_run: bool,
    ) -> Result<Applied, ApplyError> {
        let Manifest {
            target,
            reference,
            skip_namespace_creation,
            mut object,
        } = manifest;
        let client = self.client(&target).await?;
        let gvk = object_gvk(&object);
        let served = self.targets.kind(&target, &client, &gvk).await?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let described = format!("{} {name}", gvk.kind);
        let mut namespace = String::new();
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            if served.namespaced {
                namespace = metadata
                    .get("namespace")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .unwrap_or("default")
                    .to_owned();
                metadata.insert("namespace".into(), namespace.clone().into());
            } else {
                metadata.remove("namespace");
            }
        }
        let key = (
            target.clone(),
            gvk_string(&gvk),
            namespace.clone(),
            name.clone(),
        );
        // Whether the object's namespace exists (or was just created); a dry run creates none.
        let mut namespace_exists = true;
        if served.namespaced && !skip_namespace_creation {
            let place = (target.clone(), namespace.clone());
            namespace_exists = match namespaces.get(&place) {
                Some(exists) => *exists,
                None if self.targets.namespace_exists(&place) => true,
                None => {
                    let exists = ensure_namespace(&client, &namespace, dry_run).await?;
                    if exists {
                        self.targets.note_namespace(place.clone(), true);
                    }
                    namespaces.insert(place, exists);
                    exists
                }
            };
        }
        let api = served.api(client, &namespace);
        let failed = |e: kube::Error| format!("{described}: {}", words(&e));
        let existing = if namespace_exists {
            match api.get_opt(&name).await.map_err(failed)? {
                Some(existing) => Some(serde_json::to_value(existing).map_err(|e| e.to_string())?),
                None => None,
            }
        } else {
            None
        };
        if let Some(reason) = existing.as_ref().and_then(|e| conflict(e, owner)) {
            let reason = format!("conflict on {described}: {reason}");
            if dry_run {
                return Ok(Applied {
                    key,
                    action: action::CONFLICT,
                    message: reason,
                });
            }
            return Err(ApplyError::Conflict(reason));
        }
        decorate(&mut object, owner, &reference);
        let mut params = PatchParams::apply(FIELD_MANAGER).force();
        params.dry_run = dry_run;
        let action = match &existing {
            None => action::CREATE,
            Some(existing)
                if existing
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(HASH_ANNOTATION))
                    .and_then(Value::as_str)
                    == Some(hash(&object).as_str()) =>
            {
                action::NONE
            }
            Some(_) => action::UPDATE,
        };
        // A dry run into a namespace that does not exist yet has nothing to validate against.
        let mut message = String::new();
        if namespace_exists {
            match api.patch(&name, &params, &Patch::Apply(&object)).await {
                // What a dry-run update would change, in full (sveltosctl#306: never cut).
                Ok(after) if dry_run && action == action::UPDATE => {
                    if let (Some(live), Ok(after)) = (&existing, serde_json::to_value(after)) {
                        message = super::diff::diff(live, &after);
                    }
                }
                Ok(_) => {}
                Err(error) if dry_run => {
                    return Ok(Applied {
                        key,
                        action: action::ERROR,
                        message: failed(error),
                    });
                }
                Err(error) => {
                    if matches!(&error, kube::Error::Api(status) if status.code == 404) {
                        // Its namespace went away since it was seen.
                        let place = (key.0.clone(), key.2.clone());
                        self.targets.note_namespace(place, false);
                    }
                    return Err(ApplyError::Failed(failed(error)));
                }
            }
        }
        Ok(Applied {
            key,
            action,
            message,
        })
    }

    async fn client(&mut self, target: &Target) -> Result<Client, String> {
        let caches = self.caches;
        self.targets
            .client(target, |c| caches.fleet.registry.get(c), &caches.secrets)
            .await
    }

    /// Deploys `spec` of profile `profile` into `cluster` (with `syncMode: DryRun`, only
    /// reports what deploying would do); `previous` is the record of the last pass (kinds
    /// deployed, and the profile spec then).
    pub async fn deploy(
        &mut self,
        profile: &str,
        spec: &ClusterProfileSpec,
        cluster: &Cluster,
        previous: Option<(&[String], &ClusterProfileSpec)>,
        manifests: Result<Vec<Manifest>, String>,
    ) -> Outcome {
        let dry_run = spec.sync_mode == SyncMode::DryRun;
        let owner = manifests::owner(profile, spec, cluster);
        // Keep the record of earlier kinds until a complete pass has cleaned them up.
        let earlier: Vec<String> = previous.map(|p| p.0.to_vec()).unwrap_or_default();
        let manifests = match manifests {
            Ok(manifests) => manifests,
            Err(failure) => {
                return Outcome {
                    gvks: earlier,
                    failure: Some(failure),
                    dry_run: None,
                };
            }
        };
        let intended = kinds(&manifests);
        if previous.is_none() {
            // A pair without a summary has deployed nothing yet: nothing can be stale.
            self.record().open(&owner.profile, &owner.summary);
        }
        let mut deployed = BTreeSet::new();
        let mut gvks = BTreeSet::new();
        let mut namespaces = BTreeMap::new();
        let mut reports = Vec::new();
        let mut failure = None;
        for manifest in manifests {
            let mut owner = owner.clone();
            if manifest.target == Target::Local {
                owner.deployment_type = "Local".to_owned();
            }
            match self.apply(manifest, &owner, &mut namespaces, dry_run).await {
                Ok(applied) => {
                    // An object left as it was already held this owner's annotations.
                    if !dry_run && matches!(applied.action, action::CREATE | action::UPDATE) {
                        self.listings().written(&applied.key, &owner);
                    }
                    reports.push(report(&applied.key, applied.action, applied.message));
                    gvks.insert(applied.key.1.clone());
                    deployed.insert(applied.key);
                }
                Err(ApplyError::Conflict(reason)) => {
                    failure = Some(reason);
                    if !spec.continue_on_conflict {
                        break;
                    }
                }
                Err(ApplyError::Failed(reason)) => {
                    failure = Some(reason);
                    if !spec.continue_on_error {
                        break;
                    }
                }
            }
        }
        if failure.is_none() {
            let mut targets: BTreeSet<Target> = spec
                .policy_refs
                .iter()
                .map(|r| manifests::target(r, cluster))
                .collect();
            if let Some((_, old)) = previous {
                targets.extend(
                    old.policy_refs
                        .iter()
                        .map(|r| manifests::target(r, cluster)),
                );
            }
            let kinds: BTreeSet<String> = earlier
                .iter()
                .cloned()
                .chain(gvks.iter().cloned())
                .collect();
            let behaviour = if dry_run {
                Removal::Report
            } else {
                Removal::Do(StopMatchingBehavior::WithdrawPolicies)
            };
            match self
                .remove_stale(&targets, &kinds, &owner, &deployed, behaviour)
                .await
            {
                Ok(removed) => reports.extend(
                    removed
                        .iter()
                        .map(|key| report(key, action::DELETE, String::new())),
                ),
                Err(reason) => failure = Some(reason),
            }
        }
        if !dry_run {
            let (profile, summary) = (&owner.profile, &owner.summary);
            if failure.is_none() {
                self.record().set(profile, summary, deployed);
            } else {
                // A failed write may have gone through all the same: what is deployed is
                // no longer known here, and the next cleanup lists the kinds instead.
                self.record().forget(profile, summary);
            }
        }
        if dry_run {
            // Nothing changed: the record of what is deployed stays as it was.
            return Outcome {
                gvks: earlier,
                failure,
                dry_run: Some(reports),
            };
        }
        let mut recorded: BTreeSet<String> = gvks;
        if failure.is_some() {
            // Kinds this pass meant to deploy stay recorded too: a write that failed may
            // have gone through.
            recorded.extend(earlier);
            recorded.extend(intended);
        }
        Outcome {
            gvks: recorded.into_iter().collect(),
            failure,
            dry_run: None,
        }
    }

    /// Deletes (or, with `LeavePolicies`, disowns; in a dry run, only lists) objects of
    /// `kinds` in `targets` that `owner` deployed and that are not in `keep`; returns them.
    async fn remove_stale(
        &mut self,
        targets: &BTreeSet<Target>,
        kinds: &BTreeSet<String>,
        owner: &Owner,
        keep: &BTreeSet<Key>,
        behaviour: Removal,
    ) -> Result<Vec<Key>, String> {
        let known = self.record().get(&owner.profile, &owner.summary);
        let stale = match known {
            Some(known) => known
                .into_iter()
                .filter(|key| !keep.contains(key))
                .collect(),
            None => self.listed(targets, kinds, owner, keep).await?,
        };
        let candidates = self.fetch(&stale).await?;
        let mut removed = Vec::new();
        for (key, object) in candidates {
            let (target, kind, namespace, name) = &key;
            let value = serde_json::to_value(&object).map_err(|e| e.to_string())?;
            if keep.contains(&key) || !deployed_by(&value, owner) {
                continue;
            }
            let Some(gvk) = parse_gvk(kind) else { continue };
            let client = self.client(target).await?;
            let served = self.targets.kind(target, &client, &gvk).await?;
            let api = served.api(client, namespace);
            let result = match behaviour {
                Removal::Report => Ok(()),
                Removal::Do(StopMatchingBehavior::WithdrawPolicies) => api
                    .delete(name, &DeleteParams::background())
                    .await
                    .map(|_| ()),
                Removal::Do(StopMatchingBehavior::LeavePolicies) => {
                    let mut stripped = value;
                    strip(&mut stripped);
                    let object: DynamicObject =
                        serde_json::from_value(stripped).map_err(|e| e.to_string())?;
                    api.replace(name, &PostParams::default(), &object)
                        .await
                        .map(|_| ())
                }
            };
            match result {
                Ok(()) => removed.push(key),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => {
                    return Err(format!("removing {} {name}: {}", gvk.kind, words(&error)));
                }
            }
        }
        Ok(removed)
    }

    /// The objects behind `keys` that still exist.
    async fn fetch(&mut self, keys: &[Key]) -> Result<Vec<(Key, DynamicObject)>, String> {
        let mut found = Vec::new();
        for key in keys {
            let (target, kind, namespace, name) = key;
            let Some(gvk) = parse_gvk(kind) else { continue };
            let client = self.client(target).await?;
            let Ok(served) = self.targets.kind(target, &client, &gvk).await else {
                // The kind is gone from the cluster, and its objects with it.
                continue;
            };
            let api = served.api(client, namespace);
            if let Some(object) = api
                .get_opt(name)
                .await
                .map_err(|e| format!("reading {} {name}: {}", gvk.kind, words(&e)))?
            {
                found.push((key.clone(), object));
            }
        }
        Ok(found)
    }

    /// The objects of `kinds` in `targets` that `owner` deployed and `keep` lacks, as a
    /// recent listing of each kind and target says (listed now if there is none).
    async fn listed(
        &mut self,
        targets: &BTreeSet<Target>,
        kinds: &BTreeSet<String>,
        owner: &Owner,
        keep: &BTreeSet<Key>,
    ) -> Result<Vec<Key>, String> {
        let mut stale = Vec::new();
        for target in targets {
            for kind in kinds {
                let owned = self.listings().owned((target, kind), owner, Instant::now());
                let owned = match owned {
                    Some(owned) => owned,
                    None => {
                        let (at, writes) = (Instant::now(), self.listings().writes((target, kind)));
                        let found = self.list(target, kind).await?;
                        let place = (target.clone(), kind.clone());
                        self.listings().keep(place, found, (at, writes), owner)
                    }
                };
                stale.extend(owned.into_iter().filter(|key| !keep.contains(key)));
            }
        }
        Ok(stale)
    }

    /// Every object of `kind` in `target`, with the pair that owns it.
    async fn list(
        &mut self,
        target: &Target,
        kind: &str,
    ) -> Result<Vec<(Key, Option<(String, String)>)>, String> {
        let client = self.client(target).await?;
        let Some(gvk) = parse_gvk(kind) else {
            return Ok(Vec::new());
        };
        let Ok(served) = self.targets.kind(target, &client, &gvk).await else {
            // The kind is gone from the cluster, and its objects with it.
            return Ok(Vec::new());
        };
        let all: Api<DynamicObject> = Api::all_with(client, &served.resource);
        let listed = all
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing {}: {}", gvk.kind, words(&e)))?;
        Ok(listed
            .into_iter()
            .map(|object| {
                let key = (
                    target.clone(),
                    kind.to_owned(),
                    object.namespace().unwrap_or_default(),
                    object.name_any(),
                );
                (key, owner_of(&object.metadata))
            })
            .collect())
    }

    /// Withdraws what `profile` deployed in `cluster` (the profile is gone or no longer
    /// matches the cluster), as recorded by the cluster's summary. A profile in `DryRun`
    /// changes nothing, so it withdraws nothing either.
    pub async fn withdraw(
        &mut self,
        profile: &str,
        spec: &ClusterProfileSpec,
        cluster: &Cluster,
        kinds: &[String],
    ) -> Result<(), String> {
        let owner = manifests::owner(profile, spec, cluster);
        let targets: BTreeSet<Target> = spec
            .policy_refs
            .iter()
            .map(|r| manifests::target(r, cluster))
            .collect();
        if spec.sync_mode == SyncMode::DryRun {
            return Ok(());
        }
        let kinds: BTreeSet<String> = kinds.iter().cloned().collect();
        self.remove_stale(
            &targets,
            &kinds,
            &owner,
            &BTreeSet::new(),
            Removal::Do(spec.stop_matching_behavior),
        )
        .await?;
        self.record().forget(&owner.profile, &owner.summary);
        Ok(())
    }
}

/// What to do with objects a profile no longer deploys.
#[derive(Clone, Copy)]
enum Removal {
    /// Withdraw (delete) or leave (disown) them.
    Do(StopMatchingBehavior),
    /// Only list them (dry run).
    Report,
}

/// Creates namespace `name` unless it exists or this is a dry run; whether it exists now.
async fn ensure_namespace(client: &Client, name: &str, dry_run: bool) -> Result<bool, String> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces
        .get_opt(name)
        .await
        .map_err(|e| format!("namespace {name}: {}", words(&e)))?
        .is_some()
    {
        return Ok(true);
    }
    if dry_run {
        return Ok(false);
    }
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    match namespaces.create(&PostParams::default(), &namespace).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(true),
        Err(error) => Err(format!("creating namespace {name}: {}", words(&error))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn kind_strings_round_trip() {
        let gvk = GroupVersionKind::gvk("networking.k8s.io", "v1", "NetworkPolicy");
        assert_eq!(gvk_string(&gvk), "NetworkPolicy.v1.networking.k8s.io");
        assert_eq!(parse_gvk("NetworkPolicy.v1.networking.k8s.io"), Some(gvk));
        assert_eq!(
            parse_gvk("ConfigMap.v1."),
            Some(GroupVersionKind::gvk("", "v1", "ConfigMap"))
        );
    }
}
