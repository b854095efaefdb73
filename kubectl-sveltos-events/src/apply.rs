//! Server-side apply of arbitrary objects, told as kubectl tells it (`created`, `configured`,
//! `unchanged`), and waiting for what was applied to be ready.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context, anyhow};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{GroupVersionKind, TypeMeta};
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::Value;

/// The field manager of everything the plugin writes.
pub const FIELD_MANAGER: &str = "kubectl-sveltos-events";

/// What applying one object did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It did not exist.
    Created,
    /// It changed.
    Configured,
    /// Applying it changed nothing.
    Unchanged,
}

impl Outcome {
    /// kubectl's word for it.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Configured => "configured",
            Outcome::Unchanged => "unchanged",
        }
    }
}

/// Applies objects of any kind, resolving each kind once by discovery.
pub struct Applier {
    client: kube::Client,
    params: PatchParams,
    kinds: HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>,
}

impl Applier {
    /// An applier writing as [`FIELD_MANAGER`] (taking over fields others set, as an
    /// installer must), for real or as a server-side dry run.
    pub fn new(client: kube::Client, dry_run: bool) -> Self {
        Self::as_manager(client, FIELD_MANAGER, dry_run)
    }

    /// An applier writing as `field_manager` (a command whose objects may overlap install's,
    /// as `register cluster --service-account` on the management cluster itself does, keeps
    /// its own set of fields so neither undoes the other).
    pub fn as_manager(client: kube::Client, field_manager: &str, dry_run: bool) -> Self {
        let mut params = PatchParams::apply(field_manager).force();
        params.dry_run = dry_run;
        Applier {
            client,
            params,
            kinds: HashMap::new(),
        }
    }

    /// `object`'s kind as the cluster serves it (resolved by discovery, once per kind).
    pub async fn resource_for(
        &mut self,
        object: &Value,
    ) -> anyhow::Result<&(ApiResource, ApiCapabilities)> {
        let types: TypeMeta =
            serde_json::from_value(object.clone()).context("an object without apiVersion/kind")?;
        let gvk = GroupVersionKind::try_from(&types)
            .map_err(|e| anyhow!("bad apiVersion {:?}: {e}", types.api_version))?;
        if !self.kinds.contains_key(&gvk) {
            let found = kube::discovery::pinned_kind(&self.client, &gvk)
                .await
                .with_context(|| {
                    format!(
                        "the cluster does not serve {} {}",
                        types.api_version, types.kind
                    )
                })?;
            self.kinds.insert(gvk.clone(), found);
        }
        self.kinds
            .get(&gvk)
            .ok_or_else(|| anyhow!("kind {} not resolved", types.kind))
    }

    /// The `Api` of `object`'s kind, in its namespace when the kind is namespaced.
    pub async fn api_for(&mut self, object: &Value) -> anyhow::Result<Api<DynamicObject>> {
        let client = self.client.clone();
        let (resource, caps) = self.resource_for(object).await?;
        Ok(
            match (&caps.scope, object["metadata"]["namespace"].as_str()) {
                (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client, ns, resource),
                (Scope::Namespaced, None) => Api::default_namespaced_with(client, resource),
                (Scope::Cluster, _) => Api::all_with(client, resource),
            },
        )
    }

    /// Applies `object` and says what that did.
    pub async fn apply(&mut self, object: &Value) -> anyhow::Result<Outcome> {
        let name = object["metadata"]["name"]
            .as_str()
            .ok_or_else(|| anyhow!("an object without metadata.name"))?;
        let api = self.api_for(object).await?;
        let before = api
            .get_opt(name)
            .await
            .map_err(in_words)
            .with_context(|| format!("reading {}", describe(object)))?;
        let after = api
            .patch(name, &self.params, &Patch::Apply(object))
            .await
            .map_err(in_words)
            .with_context(|| format!("applying {}", describe(object)))?;
        Ok(match before {
            None => Outcome::Created,
            Some(before) if before.metadata.resource_version == after.metadata.resource_version => {
                Outcome::Unchanged
            }
            Some(_) => Outcome::Configured,
        })
    }
}

/// An API server's refusal as its message and code (kube's own text repeats it inside a
/// debug dump of the Status); other errors as they are.
pub fn in_words(error: kube::Error) -> anyhow::Error {
    match error {
        kube::Error::Api(_) => anyhow!(clusters::words::words(&error)),
        other => other.into(),
    }
}

/// `kind.group/name` as kubectl prints it (`deployment.apps/sveltos-events-manager`).
pub fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or("object").to_lowercase();
    let group = object["apiVersion"]
        .as_str()
        .and_then(|v| v.rsplit_once('/'))
        .map(|(group, _)| format!(".{group}"))
        .unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or("");
    format!("{kind}{group}/{name}")
}

/// Waits until the CRD `name` is Established.
pub async fn crd_established(
    client: &kube::Client,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    tokio::time::timeout(
        timeout,
        await_condition(api, name, conditions::is_crd_established()),
    )
    .await
    .map_err(|_| anyhow!("CRD {name} was not Established in the {timeout:?} --timeout left"))?
    .with_context(|| format!("watching CRD {name}"))?;
    Ok(())
}

/// Waits until the Deployment `namespace/name` has rolled out (every replica updated and
/// available).
pub async fn deployment_available(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    tokio::time::timeout(
        timeout,
        await_condition(api, name, conditions::is_deployment_completed()),
    )
    .await
    .map_err(|_| {
        anyhow!(
            "deployment {namespace}/{name} was not available in the {timeout:?} --timeout left \
             (see `kubectl -n {namespace} describe deployment {name}`)"
        )
    })?
    .with_context(|| format!("watching deployment {namespace}/{name}"))?;
    Ok(())
}
