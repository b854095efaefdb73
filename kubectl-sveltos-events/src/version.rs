//! `version`: the plugin's version and the versions of the controllers found in the cluster.

use std::io::Write;

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams};

use crate::connect::ClusterArgs;
use crate::manifests;

/// Flags of `version`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Only the plugin's version; contact no cluster.
    #[arg(long)]
    client: bool,
}

/// One controller Deployment found in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// `namespace/name` of the Deployment.
    pub deployment: String,
    /// Its `app.kubernetes.io/version` label.
    pub version: String,
    /// The image of its first container.
    pub image: String,
    /// The agent mode it records (the agent's says how new clusters are served).
    pub agent_mode: manifests::AgentMode,
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
            let labels = d.metadata.labels.unwrap_or_default();
            let agent_mode = manifests::AgentMode::of(d.metadata.annotations.as_ref());
            let image = d
                .spec
                .and_then(|s| s.template.spec)
                .and_then(|p| p.containers.into_iter().next())
                .and_then(|c| c.image)
                .unwrap_or_default();
            Installed {
                deployment: format!(
                    "{}/{}",
                    d.metadata.namespace.unwrap_or_default(),
                    d.metadata.name.unwrap_or_default()
                ),
                version: labels
                    .get("app.kubernetes.io/version")
                    .cloned()
                    .unwrap_or_else(|| "unknown".to_owned()),
                image,
                agent_mode,
            }
        })
        .collect();
    found.sort_by(|a, b| a.deployment.cmp(&b.deployment));
    Ok(found)
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
