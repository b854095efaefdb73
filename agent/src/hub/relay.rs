//! A spoke cluster seen from the hub: the EventSources assigned to it are copied in (Sveltos'
//! `projectsveltos.io/deployed-by-sveltos` annotation, the management copy's labels, one owner
//! reference per EventTrigger), and the EventReports its own agent writes there are relayed
//! into the management cluster as hub-mode reports, so the manager reads both modes alike. The
//! cluster never holds management-cluster credentials: the hub reaches in, as it does in hub
//! mode.

use std::collections::{BTreeMap, BTreeSet};

use api::labels::{DEPLOYED_BY_SVELTOS_ANNOTATION, SVELTOS_NAMESPACE};
use api::secret_data;
use api::v1beta1::{EventReport, EventSource, ReportPhase};
use futures_util::{StreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResourceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::hub::cluster::Sources;
use crate::hub::report::{self, ClusterId, Destination, FIELD_MANAGER, Publication, Written};

/// Delay before a failed copy or relay is tried again.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Why a spoke cluster cannot be prepared for its agent.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The EventSource and EventReport CRDs or the `projectsveltos` namespace cannot be created.
    #[error("cannot prepare the cluster for its agent: {0}")]
    Prepare(String),
}

/// Installs what the cluster's agent reads and writes: the EventSource and EventReport CRDs and
/// the `projectsveltos` namespace.
async fn prepare(managed: &Client) -> Result<(), RelayError> {
    let failed = |e: &dyn std::fmt::Display| RelayError::Prepare(e.to_string());
    let crds: Api<CustomResourceDefinition> = Api::all(managed.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let wanted = [EventSource::crd_name(), EventReport::crd_name()];
    for crd in api::crd::all().map_err(|e| failed(&e))? {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if wanted.contains(&name.as_str()) {
            let mut body = serde_json::to_value(&crd).map_err(|e| failed(&e))?;
            body["apiVersion"] = "apiextensions.k8s.io/v1".into();
            body["kind"] = "CustomResourceDefinition".into();
            crds.patch(&name, &params, &Patch::Apply(&body))
                .await
                .map_err(|e| failed(&e))?;
        }
    }
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": SVELTOS_NAMESPACE}}))
            .map_err(|e| failed(&e))?;
    match Api::<Namespace>::all(managed.clone())
        .create(&PostParams::default(), &namespace)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(failed(&error)),
    }
}

/// The copy of `source` the spoke cluster must hold (server-side apply body).
fn copy_of(source: &EventSource) -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1",
        "kind": "EventSource",
        "metadata": {
            "name": source.metadata.name,
            "labels": source.metadata.labels.clone().unwrap_or_default(),
            "annotations": {DEPLOYED_BY_SVELTOS_ANNOTATION: "true"},
            "ownerReferences": source.metadata.owner_references.clone().unwrap_or_default(),
        },
        "spec": source.spec,
    })
}

/// Whether `source` (in the spoke cluster) is a copy the hub made.
fn is_copy(source: &EventSource) -> bool {
    source
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(DEPLOYED_BY_SVELTOS_ANNOTATION))
}

/// What the relay keeps between passes.
#[derive(Default)]
struct Relayed {
    /// Copies last applied, by name.
    copies: BTreeMap<String, Value>,
    /// Whether copies that are no longer wanted may remain in the cluster.
    copies_unswept: bool,
    /// Reports last relayed into the management cluster, by EventSource.
    reports: BTreeMap<String, Written>,
}

/// Keeps the copies and the relayed reports of spoke cluster `id` (reached through
/// `managed`) in step with `sources` until it closes.
pub async fn run(
    id: &ClusterId,
    managed: Client,
    mgmt: &Client,
    sources: &mut watch::Receiver<Sources>,
) -> Result<(), RelayError> {
    prepare(&managed).await?;
    let local_reports: Api<EventReport> = Api::namespaced(managed.clone(), SVELTOS_NAMESPACE);
    let local_secrets: Api<Secret> = Api::namespaced(managed.clone(), SVELTOS_NAMESPACE);
    let (reports, report_changes) = super::reflect(local_reports, watcher::Config::default());
    let (secrets, secret_changes) = super::reflect(
        local_secrets,
        watcher::Config::default().labels(secret_data::SECRET_DATA_LABEL),
    );
    let mut changes = stream::select(report_changes, secret_changes).boxed();
    let ready = async {
        reports.wait_until_ready().await.is_ok() && secrets.wait_until_ready().await.is_ok()
    };
    let filled = {
        let closed = async { while sources.changed().await.is_ok() {} };
        tokio::pin!(closed);
        super::fill_caches(ready, &mut changes, closed.as_mut()).await
    };
    if !filled {
        return Ok(());
    }
    let hub = Destination::Hub {
        mgmt: mgmt.clone(),
        cluster: id.clone(),
    };
    let mut relayed = Relayed {
        copies_unswept: true,
        ..Default::default()
    };
    // Reports relayed before this process started whose local report is gone.
    let current = sources.borrow_and_update().clone();
    let local = |source: &str| reports.get(&ObjectRef::new(source).within(SVELTOS_NAMESPACE));
    if let Err(error) =
        report::delete_unkept(&hub, |s| current.contains_key(s) && local(s).is_some()).await
    {
        tracing::warn!(cluster = %id, %error, "cannot delete stale relayed EventReports");
    }
    loop {
        let current = sources.borrow_and_update().clone();
        let copied = sync_copies(&managed, &current, &mut relayed).await;
        let relayed_all =
            relay_reports(&hub, &managed, &current, &reports, &secrets, &mut relayed).await;
        let pending = !(copied && relayed_all);
        tokio::select! {
            changed = sources.changed() => if changed.is_err() { return Ok(()) },
            Some(()) = changes.next() => {}
            () = tokio::time::sleep(RETRY), if pending => {}
        }
    }
}

/// Applies the copies that changed and deletes copies no longer wanted; false if some failed.
async fn sync_copies(managed: &Client, sources: &Sources, relayed: &mut Relayed) -> bool {
    let api: Api<EventSource> = Api::all(managed.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut done = true;
    for (name, source) in sources {
        let body = copy_of(source);
        if relayed.copies.get(name) == Some(&body) {
            continue;
        }
        match api.patch(name, &params, &Patch::Apply(&body)).await {
            Ok(_) => {
                relayed.copies.insert(name.clone(), body);
            }
            Err(error) => {
                tracing::warn!(source = %name, %error, "cannot copy EventSource into spoke cluster");
                done = false;
            }
        }
    }
    let unwanted: Vec<String> = relayed
        .copies
        .keys()
        .filter(|name| !sources.contains_key(*name))
        .cloned()
        .collect();
    if unwanted.is_empty() && !relayed.copies_unswept {
        return done;
    }
    let existing = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(error) => {
            tracing::warn!(%error, "cannot list EventSources of spoke cluster");
            return false;
        }
    };
    let mut swept = true;
    for copy in existing.iter().filter(|s| is_copy(s)) {
        let name = copy.metadata.name.clone().unwrap_or_default();
        if sources.contains_key(&name) {
            continue;
        }
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => {
                tracing::warn!(source = %name, %error, "cannot delete EventSource copy");
                swept = false;
            }
        }
    }
    if swept {
        relayed.copies.retain(|name, _| sources.contains_key(name));
        relayed.copies_unswept = false;
    }
    done && swept
}

/// The management-cluster publication of local report `local`, or `None` while its companion
/// Secret is not in step with it.
fn relayed_publication(
    cluster: &ClusterId,
    local: &EventReport,
    secrets: &Store<Secret>,
) -> Option<Publication> {
    let mut spec = local.spec.clone();
    report::name_cluster(&mut spec, Some(cluster));
    let digest = local
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(secret_data::SECRET_DATA_ANNOTATION));
    let Some(digest) = digest else {
        return Some(Publication {
            spec,
            sealed: BTreeMap::new(),
        });
    };
    let name = secret_data::companion_name(&local.metadata.name.clone().unwrap_or_default());
    let companion = secrets.get(&ObjectRef::new(&name).within(SVELTOS_NAMESPACE))?;
    let sealed: BTreeMap<String, Vec<u8>> = companion
        .data
        .iter()
        .flatten()
        .map(|(key, value)| (key.clone(), value.0.clone()))
        .collect();
    (&secret_data::data_digest(&sealed) == digest).then_some(Publication { spec, sealed })
}

/// Relays every local report of an assigned source whose content changed (marking it
/// `Processed` in the cluster once relayed), and deletes relayed reports whose local report or
/// assignment is gone; false if some failed or wait.
async fn relay_reports(
    hub: &Destination,
    managed: &Client,
    sources: &Sources,
    reports: &Store<EventReport>,
    secrets: &Store<Secret>,
    relayed: &mut Relayed,
) -> bool {
    let Some(cluster) = hub.cluster() else {
        return true;
    };
    let mut done = true;
    let mut present = BTreeSet::new();
    for name in sources.keys() {
        let Some(local) = reports.get(&ObjectRef::new(name).within(SVELTOS_NAMESPACE)) else {
            continue;
        };
        if local.spec.event_source_name != *name {
            continue;
        }
        present.insert(name.clone());
        let Some(mut publication) = relayed_publication(cluster, &local, secrets) else {
            done = false;
            continue;
        };
        let written = publication.written();
        let previous = relayed.reports.get(name);
        if previous != Some(&written) {
            match report::write(hub, &publication, previous).await {
                Ok(_) => {
                    relayed.reports.insert(name.clone(), written);
                }
                Err(error) => {
                    tracing::warn!(%cluster, source = %name, %error, "cannot relay EventReport");
                    done = false;
                    continue;
                }
            }
        }
        let phase = local.status.as_ref().and_then(|s| s.phase);
        if phase != Some(ReportPhase::Processed)
            && let Err(error) = report::set_phase(managed, name, ReportPhase::Processed).await
        {
            tracing::warn!(%cluster, source = %name, %error, "cannot mark EventReport delivered");
            done = false;
        }
    }
    let gone: Vec<String> = relayed
        .reports
        .keys()
        .filter(|name| !present.contains(*name))
        .cloned()
        .collect();
    for name in gone {
        match report::delete(hub, &name).await {
            Ok(()) => {
                relayed.reports.remove(&name);
            }
            Err(error) => {
                tracing::warn!(%cluster, source = %name, %error, "cannot delete relayed EventReport");
                done = false;
            }
        }
    }
    done
}
