//! What the deployer put into the clusters, read live: the objects each ClusterSummary's
//! profile deployed (the kinds its status records, listed by Sveltos' reason label, kept when
//! the profile owns them), and `show addons`, the table of them.

use std::io::Write;

use api::labels::{CLUSTER_PROFILE_NAME_LABEL, CLUSTER_SUMMARY_CLUSTER_NAME_LABEL};
use serde::Serialize;
use serde_json::Value;

use super::fleet::Fleet;
use super::{meta, spec_cluster};
use crate::connect::ClusterArgs;

/// One object a profile deployed, or a kind that could not be read.
pub type Deployed = Result<(String, Value), (String, String)>;

/// The kinds a ClusterSummary records as deployed (`Kind.version.group`).
pub fn deployed_kinds(summary: &Value) -> Vec<String> {
    summary["status"]["deployedGVKs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| {
            f["deployedGroupVersionKind"]
                .as_array()
                .into_iter()
                .flatten()
        })
        .filter_map(|e| e.as_str().map(str::to_owned))
        .collect()
}

/// The objects `profile` deployed in `cluster` as `summary` records them: `(kind, object)`,
/// or `(Kind.version.group, why it cannot be read)`.
pub async fn deployed(
    fleet: &mut Fleet,
    summary: &Value,
    profile: &str,
    cluster: &str,
) -> Vec<Deployed> {
    let mut found = Vec::new();
    for entry in deployed_kinds(summary) {
        let kind = entry.split('.').next().unwrap_or_default().to_owned();
        match fleet.deployed_by(cluster, &entry, profile).await {
            Ok(objects) => found.extend(objects.into_iter().map(|o| Ok((kind.clone(), o)))),
            Err(e) => found.push(Err((entry, format!("{e:#}")))),
        }
    }
    found
}

/// Flags of `show addons`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events show addons\n  \
    kubectl sveltos-events show addons --cluster default/cluster-1 -o json")]
pub struct AddonsArgs {
    #[command(flatten)]
    scope: ScopeArgs,
}

/// The flags of the `show` commands that read per cluster and profile.
#[derive(Debug, clap::Args)]
pub struct ScopeArgs {
    /// The management cluster.
    #[command(flatten)]
    pub mgmt: ClusterArgs,
    /// Only this cluster (its SveltosCluster's `namespace/name`).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Only this ClusterProfile.
    #[arg(long)]
    pub profile: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: ShowFormat,
}

impl ScopeArgs {
    /// The namespace and label selector of the ClusterSummaries (or ClusterReports) these
    /// flags select.
    pub fn selection(&self) -> anyhow::Result<(Option<String>, String)> {
        let mut labels = Vec::new();
        let namespace = match &self.cluster {
            Some(cluster) => {
                let (ns, name) = cluster.split_once('/').ok_or_else(|| {
                    anyhow::anyhow!("--cluster {cluster:?} is not namespace/name")
                })?;
                labels.push(format!("{CLUSTER_SUMMARY_CLUSTER_NAME_LABEL}={name}"));
                Some(ns.to_owned())
            }
            None => None,
        };
        if let Some(profile) = &self.profile {
            labels.push(format!("{CLUSTER_PROFILE_NAME_LABEL}={profile}"));
        }
        Ok((namespace, labels.join(",")))
    }
}

/// Output of `show` commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShowFormat {
    /// Columns, as kubectl prints them.
    Table,
    /// The same with the time each was applied.
    Wide,
    /// A JSON array of rows.
    Json,
    /// The same as YAML.
    Yaml,
}

impl ShowFormat {
    /// Writes `rows` as a JSON array or YAML, or, for `table` and `wide`, as `table` prints
    /// them (told whether wide).
    pub fn write<T: Serialize, W: Write>(
        self,
        rows: &[T],
        out: &mut W,
        table: impl FnOnce(bool, &mut W) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        match self {
            ShowFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(rows)?)?,
            ShowFormat::Yaml => out.write_all(serde_saphyr::to_string(&rows)?.as_bytes())?,
            ShowFormat::Table | ShowFormat::Wide => table(self == ShowFormat::Wide, out)?,
        }
        Ok(())
    }
}

/// One deployed add-on.
#[derive(Debug, Clone, Serialize)]
pub struct Addon {
    /// The cluster (`namespace/name`).
    pub cluster: String,
    /// `group:Kind` (`:Kind` for the core group), as sveltosctl writes it.
    pub resource_type: String,
    /// Its namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// When the feature was last applied there.
    pub applied: String,
    /// `ClusterProfile/<name>`.
    pub profile: String,
}

/// Runs `show addons`; exit 0, or 1 when some cluster could not be read (what could be read
/// is shown, and what could not is said on stderr).
pub async fn show_addons(args: AddonsArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let args = args.scope;
    let (mgmt, _, _) = args.mgmt.connect().await?;
    let mut fleet = Fleet::new(mgmt);
    let (namespace, selector) = args.selection()?;
    let summaries = fleet
        .sveltos_list("ClusterSummary", namespace.as_deref(), &selector)
        .await?;
    let mut rows = Vec::new();
    let mut unread = 0;
    for summary in &summaries {
        let profile = meta(summary, "labels", CLUSTER_PROFILE_NAME_LABEL).to_owned();
        let cluster = spec_cluster(summary);
        let applied = summary["status"]["featureSummaries"][0]["lastAppliedTime"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        for found in deployed(&mut fleet, summary, &profile, &cluster).await {
            match found {
                Ok((kind, object)) => {
                    let group = object["apiVersion"]
                        .as_str()
                        .and_then(|v| v.rsplit_once('/'))
                        .map(|(g, _)| g)
                        .unwrap_or_default();
                    rows.push(Addon {
                        cluster: cluster.clone(),
                        resource_type: format!("{group}:{kind}"),
                        namespace: meta_str(&object, "namespace"),
                        name: meta_str(&object, "name"),
                        applied: applied.clone(),
                        profile: format!("ClusterProfile/{profile}"),
                    });
                }
                Err((entry, why)) => {
                    unread += 1;
                    eprintln!("warning: {entry} in cluster {cluster} cannot be read: {why}");
                }
            }
        }
    }
    rows.sort_by(|a, b| {
        (&a.cluster, &a.resource_type, &a.namespace, &a.name).cmp(&(
            &b.cluster,
            &b.resource_type,
            &b.namespace,
            &b.name,
        ))
    });
    args.output
        .write(&rows, out, |wide, out| print_table(&rows, wide, out))?;
    Ok(if unread == 0 { 0 } else { 1 })
}

fn meta_str(object: &Value, field: &str) -> String {
    object["metadata"][field]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn print_table(rows: &[Addon], wide: bool, out: &mut impl Write) -> anyhow::Result<()> {
    if rows.is_empty() {
        writeln!(out, "No add-ons found.")?;
        return Ok(());
    }
    let mut header = vec!["CLUSTER", "RESOURCE TYPE", "NAMESPACE", "NAME"];
    if wide {
        header.push("APPLIED");
    }
    header.push("PROFILES");
    let cells: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![r.cluster.as_str(), &r.resource_type, &r.namespace, &r.name];
            if wide {
                row.push(&r.applied);
            }
            row.push(&r.profile);
            row
        })
        .collect();
    print_columns(&header, &cells, out)
}

/// Rows under a header, in columns as kubectl prints them (three spaces apart).
pub fn print_columns(
    header: &[&str],
    rows: &[Vec<&str>],
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header.to_vec()).chain(rows.iter()) {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        writeln!(out, "{}", line.join("   ").trim_end())?;
    }
    Ok(())
}
