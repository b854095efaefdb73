//! `version`: the plugin's version and the versions of the controllers found in the cluster.

use std::io::Write;

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams};

use crate::connect::ClusterArgs;
use crate::manifests;

/// Flags of `version`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events version                 # the plugin and the controllers it finds\n  \
    kubectl sveltos-events version --client        # the plugin alone, no cluster contacted")]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Only the plugin's version; contact no cluster.
    #[arg(long)]
    client: bool,
}

/// One controller Deployment found in the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Installed {
    /// `namespace/name` of the Deployment.
    pub deployment: String,
    /// Its `app.kubernetes.io/version` label.
    pub version: String,
    /// The image of its first container.
    pub image: String,
    /// The agent mode it records (the agent's says how new clusters are served).
    pub agent_mode: manifests::AgentMode,
    /// The Deployment as read.
    pub object: Deployment,
}

/// The sveltos-events controllers installed in the cluster (Deployments labelled
/// `app.kubernetes.io/part-of=sveltos-events`), in every namespace.
pub async fn installed(client: &kube::Client) -> anyhow::Result<Vec<Installed>> {
    let api: Api<Deployment> = Api::all(client.clone());
    let (key, value) = manifests::PART_OF;
    let list = api
        .list(&ListParams::default().labels(&format!("{key}={value}")))
        .await
        .context("listing the controllers' Deployments")?;
    let mut found: Vec<Installed> = list
        .items
        .into_iter()
        .map(|d| {
            let meta = &d.metadata;
            let labels = meta.labels.clone().unwrap_or_default();
            let image = first_container(&d)
                .and_then(|c| c.image.clone())
                .unwrap_or_default();
            Installed {
                deployment: format!(
                    "{}/{}",
                    meta.namespace.as_deref().unwrap_or_default(),
                    meta.name.as_deref().unwrap_or_default()
                ),
                version: labels
                    .get(manifests::VERSION_LABEL)
                    .cloned()
                    .unwrap_or_else(|| "unknown".to_owned()),
                image,
                agent_mode: manifests::AgentMode::of(meta.annotations.as_ref()),
                object: d,
            }
        })
        .collect();
    found.sort_by(|a, b| a.deployment.cmp(&b.deployment));
    Ok(found)
}

/// The controllers' namespace: `explicit` (`-n`), else where they were found, else
/// `projectsveltos`.
pub fn namespace_of(explicit: Option<&str>, found: &[Installed]) -> String {
    explicit
        .map(str::to_owned)
        .or_else(|| {
            found
                .iter()
                .find_map(|c| c.deployment.split_once('/').map(|(ns, _)| ns.to_owned()))
        })
        .unwrap_or_else(|| api::labels::SVELTOS_NAMESPACE.to_owned())
}

/// The Deployment `name` in `namespace` among those found.
pub fn find<'a>(found: &'a [Installed], namespace: &str, name: &str) -> Option<&'a Deployment> {
    let wanted = format!("{namespace}/{name}");
    found
        .iter()
        .find(|c| c.deployment == wanted)
        .map(|c| &c.object)
}

fn first_container(deployment: &Deployment) -> Option<&k8s_openapi::api::core::v1::Container> {
    deployment
        .spec
        .as_ref()?
        .template
        .spec
        .as_ref()?
        .containers
        .first()
}

/// The args of the Deployment's first container.
pub fn container_args(deployment: &Deployment) -> &[String] {
    first_container(deployment)
        .and_then(|c| c.args.as_deref())
        .unwrap_or_default()
}

/// The memory limit of the Deployment's first container, as written.
pub fn memory_limit(deployment: &Deployment) -> Option<String> {
    let limits = first_container(deployment)?
        .resources
        .as_ref()?
        .limits
        .as_ref()?;
    limits.get("memory").map(|quantity| quantity.0.clone())
}

/// Whether the Deployment has a replica available.
pub fn available(deployment: &Deployment) -> bool {
    deployment
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
        > 0
}

/// Runs `version`.
pub async fn run(args: Args, out: &mut impl Write) -> anyhow::Result<()> {
    writeln!(out, "plugin: v{}", manifests::VERSION)?;
    if args.client {
        return Ok(());
    }
    let (client, url, server) = args.cluster.connect().await?;
    writeln!(out, "server: {server} ({url})")?;
    let found = installed(&client).await?;
    if found.is_empty() {
        writeln!(
            out,
            "controllers: not installed (run `kubectl sveltos-events install`)"
        )?;
    }
    for c in found {
        let skew = if c.version.trim_start_matches('v') == manifests::VERSION {
            ""
        } else {
            " (differs from the plugin)"
        };
        writeln!(
            out,
            "{}: v{}{skew} ({})",
            c.deployment,
            c.version.trim_start_matches('v'),
            c.image
        )?;
    }
    Ok(())
}
