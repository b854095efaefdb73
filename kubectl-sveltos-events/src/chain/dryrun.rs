//! `show dryrun`: what the profiles in `syncMode: DryRun` would do in each cluster, from the
//! deployer's ClusterReports, with every change's diff in full (sveltosctl cuts them:
//! sveltosctl#306).

use std::io::Write;

use api::labels::CLUSTER_PROFILE_NAME_LABEL;
use serde::Serialize;
use serde_json::Value;

use super::addons::{ScopeArgs, print_columns};
use super::fleet::Fleet;
use super::{meta, spec_cluster};

/// Flags of `show dryrun`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events show dryrun\n  \
    kubectl sveltos-events show dryrun --profile my-profile --cluster default/cluster-1 -o yaml\n\n\
    Tables print each update's diff in full below them; -o json|yaml carry the diffs.")]
pub struct DryRunArgs {
    #[command(flatten)]
    scope: ScopeArgs,
}

/// What a DryRun profile would do to one object.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The cluster (`namespace/name`).
    pub cluster: String,
    /// The ClusterProfile.
    pub profile: String,
    /// `group/version:Kind` (`v1:Kind` for the core group).
    pub resource_type: String,
    /// Its namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `Create`, `Update`, `Delete`, `No Action`, `Conflict` or `Error`.
    pub action: String,
    /// Why (a conflict, an error), or the unified diff of an update, never cut.
    pub message: String,
}

/// Runs `show dryrun`; exit 0.
pub async fn show_dryrun(args: DryRunArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let args = args.scope;
    let (mgmt, _, _) = args.mgmt.connect().await?;
    let mut fleet = Fleet::new(mgmt);
    let (namespace, selector) = args.selection()?;
    let reports = fleet
        .sveltos_list("ClusterReport", namespace.as_deref(), &selector)
        .await?;
    let mut changes: Vec<Change> = reports.iter().flat_map(changes).collect();
    changes.sort_by(|a, b| {
        (
            &a.cluster,
            &a.profile,
            &a.resource_type,
            &a.namespace,
            &a.name,
        )
            .cmp(&(
                &b.cluster,
                &b.profile,
                &b.resource_type,
                &b.namespace,
                &b.name,
            ))
    });
    args.output
        .write(&changes, out, |_, out| print(&changes, out))?;
    Ok(0)
}

/// The changes one ClusterReport records.
fn changes(report: &Value) -> Vec<Change> {
    let cluster = spec_cluster(report);
    let profile = meta(report, "labels", CLUSTER_PROFILE_NAME_LABEL).to_owned();
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    report["status"]["resourceReports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            let resource = &entry["resource"];
            let group = text(&resource["group"]);
            let version = text(&resource["version"]);
            let api_version = if group.is_empty() {
                version
            } else {
                format!("{group}/{version}")
            };
            Change {
                cluster: cluster.clone(),
                profile: profile.clone(),
                resource_type: format!("{api_version}:{}", text(&resource["kind"])),
                namespace: text(&resource["namespace"]),
                name: text(&resource["name"]),
                action: text(&entry["action"]),
                message: text(&entry["message"]),
            }
        })
        .collect()
}

/// The table (a diff's place marked in it), then each diff in full.
fn print(changes: &[Change], out: &mut impl Write) -> anyhow::Result<()> {
    if changes.is_empty() {
        writeln!(out, "No DryRun changes found.")?;
        return Ok(());
    }
    let header = [
        "CLUSTER",
        "PROFILE",
        "RESOURCE TYPE",
        "NAMESPACE",
        "NAME",
        "ACTION",
        "MESSAGE",
    ];
    let diffs: Vec<&Change> = changes
        .iter()
        .filter(|c| c.message.contains('\n'))
        .collect();
    let rows: Vec<Vec<&str>> = changes
        .iter()
        .map(|c| {
            let message = if c.message.contains('\n') {
                "diff below"
            } else {
                c.message.as_str()
            };
            vec![
                c.cluster.as_str(),
                &c.profile,
                &c.resource_type,
                &c.namespace,
                &c.name,
                &c.action,
                message,
            ]
        })
        .collect();
    print_columns(&header, &rows, out)?;
    for change in diffs {
        let place = match change.namespace.as_str() {
            "" => change.name.clone(),
            namespace => format!("{namespace}/{}", change.name),
        };
        writeln!(
            out,
            "\n{} {place} in cluster {} (ClusterProfile {}):",
            change.resource_type, change.cluster, change.profile
        )?;
        out.write_all(change.message.as_bytes())?;
        if !change.message.ends_with('\n') {
            writeln!(out)?;
        }
    }
    Ok(())
}
