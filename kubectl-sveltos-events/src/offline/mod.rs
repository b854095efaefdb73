//! `render`: what the manager would create for EventTriggers, offline. The files give the
//! trigger, its EventSource, the ConfigMaps/Secrets it references, the source cluster, and the
//! resources in that cluster; the agent's evaluator writes the EventReport in memory and the
//! manager's own planning turns it into ClusterProfiles and instantiated ConfigMaps/Secrets,
//! so what render prints is what a live manager writes.

pub mod addons;
pub mod inputs;
pub mod world;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, bail};
use api::v1beta1::{SveltosCluster, SveltosClusterSpec, SveltosClusterStatus};
use controller::engine::GoTemplates;
use controller::fleet::Cluster;
use controller::manager::apply::{config_map, secret};
use controller::plan::{PlanMemo, World, plan};
use kube::api::ObjectMeta;
use serde_json::{Value, json};

/// The source cluster's name when the files hold no cluster.
const DEFAULT_CLUSTER: &str = "default/cluster";

/// Output formats of `render`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Output {
    /// YAML documents, as `kubectl apply -f -` takes them.
    Yaml,
    /// A `v1` List.
    Json,
}

/// Flags of `render`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events render -f examples/network-policy --cluster-labels env=fv\n  \
    kubectl sveltos-events render -f trigger.yaml -f source.yaml -f templates/ -f cluster.yaml -f services.yaml -o json\n  \
    kubectl sveltos-events render -f examples/cross-cluster -f clusters.yaml --cluster default/cluster-2 --addons\n  \
    kubectl get services -A -o yaml | kubectl sveltos-events render -f examples/network-policy -f -\n\n\
    Files are read as `kubectl apply -f` reads them (a List as its items; `-` is standard input).\n\
    Documents are sorted by kind: EventTriggers (or v1alpha1 EventBasedAddOns), EventSources,\n\
    the ConfigMaps and Secrets the triggers reference, SveltosClusters or Cluster API Clusters\n\
    (the source cluster and, for --addons, the destinations), ClusterSets; every other\n\
    document is a resource in the source cluster.\n\
    Exit 0 rendered, 1 a trigger failed for the cluster (it says why), 2 bad input.")]
pub struct Args {
    /// A file or folder of YAML/JSON documents (repeatable; folders are read recursively; `-`
    /// reads standard input).
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    /// The source cluster, `namespace/name`: which of the files' clusters holds the
    /// resources, or the SveltosCluster to assume when the files hold none (default
    /// `default/cluster`).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Labels of the source cluster, `key=value,...` (over those it has in the files).
    #[arg(long, value_delimiter = ',')]
    pub cluster_labels: Vec<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "yaml")]
    pub output: Output,
    /// Also print the objects the deployer would apply in each destination cluster of the
    /// files (after the ClusterProfiles, ConfigMaps and Secrets; in YAML each says where it goes).
    #[arg(long)]
    pub addons: bool,
}

/// Runs `render`: the objects on `out`, notes and failures on `err`; the exit code.
pub fn run(args: &Args, out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<u8> {
    let mut inputs = inputs::read(&args.files)?;
    if inputs.triggers.is_empty() {
        bail!("the files hold no EventTrigger or EventBasedAddOn: render needs one");
    }
    let source = source_cluster(&mut inputs.clusters, args)?;
    for note in &inputs.notes {
        writeln!(err, "warning: {note}")?;
    }
    for skipped in &inputs.skipped {
        writeln!(
            err,
            "note: left out {skipped}: render computes such objects"
        )?;
    }
    let mut triggers = std::mem::take(&mut inputs.triggers);
    triggers.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    // One trigger per name, as in a cluster (the first read stands).
    triggers.dedup_by(|a, b| a.metadata.name == b.metadata.name);
    let world = world::Offline::new(inputs, source.clone())?;
    let engine = GoTemplates::new();
    let mut profiles = Vec::new();
    let mut generated = Vec::new();
    let mut problems = Vec::new();
    for trigger in &triggers {
        let name = trigger.metadata.name.as_deref().unwrap_or_default();
        let planned = match plan(trigger, &world, &engine, &mut PlanMemo::default()) {
            Ok(planned) => planned,
            Err(reason) => {
                problems.push(format!("EventTrigger {name}: {reason}"));
                continue;
            }
        };
        if planned.matching.is_empty() {
            problems.push(format!(
                "EventTrigger {name}: no cluster in the files matches its sourceClusterSelector"
            ));
        } else if !planned.matching.contains(&source) {
            let watched: Vec<String> = planned.matching.iter().map(ToString::to_string).collect();
            problems.push(format!(
                "EventTrigger {name}: it watches {}, not the source cluster {source}",
                watched.join(", ")
            ));
        }
        for (cluster, source) in &planned.sources {
            if world.event_source_labels(source).is_none() {
                problems.push(format!(
                    "EventTrigger {name}, cluster {cluster}: EventSource {source} is not in the files"
                ));
            }
        }
        for (cluster, reason) in planned.failures.iter().chain(&planned.held) {
            problems.push(format!("EventTrigger {name}, cluster {cluster}: {reason}"));
        }
        profiles.extend(planned.desired.profiles.iter().map(|p| p.as_ref().clone()));
        generated.extend(planned.desired.generated);
    }
    let mut objects: Vec<Value> = Vec::new();
    profiles.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for profile in &profiles {
        let mut value = serde_json::to_value(profile)?;
        value["apiVersion"] = json!("config.projectsveltos.io/v1beta1");
        value["kind"] = json!("ClusterProfile");
        objects.push(value);
    }
    generated.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    generated.dedup_by(|a, b| a.kind == b.kind && a.name == b.name);
    for object in generated {
        let (mut value, kind) = if object.kind == "Secret" {
            (serde_json::to_value(secret(&object))?, "Secret")
        } else {
            (serde_json::to_value(config_map(&object))?, "ConfigMap")
        };
        value["apiVersion"] = json!("v1");
        value["kind"] = json!(kind);
        objects.push(value);
    }
    if objects.is_empty() && problems.is_empty() {
        writeln!(
            err,
            "note: nothing to create: no resource in the files matches the triggers' \
             EventSources (`kubectl sveltos-events eval` shows why for each)"
        )?;
    }
    let mut documents: Vec<(Option<String>, Value)> =
        objects.iter().map(|o| (None, o.clone())).collect();
    if args.addons {
        let mut management = world.inputs().management.clone();
        management.extend(objects);
        let (addons, failed) = addons::addons(&profiles, &management, &world, &engine);
        problems.extend(failed);
        documents.extend(addons.into_iter().map(|addon| {
            let comment = format!("{}: from {}", addon.destination, addon.origin);
            (Some(comment), addon.object)
        }));
    }
    write(&documents, args.output, out)?;
    for problem in &problems {
        writeln!(err, "error: {problem}")?;
    }
    Ok(u8::from(!problems.is_empty()))
}

/// The source cluster: the files' one cluster, the one `--cluster` names, or a SveltosCluster
/// assumed from `--cluster`; `--cluster-labels` added to it. Every cluster counts as ready
/// (files rarely carry a status); the planner still holds back one whose `spec.paused` is set.
fn source_cluster(
    clusters: &mut Vec<Cluster>,
    args: &Args,
) -> anyhow::Result<controller::identity::ClusterRef> {
    let labels = args
        .cluster_labels
        .iter()
        .filter(|l| !l.is_empty())
        .map(|label| {
            label
                .split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| anyhow!("--cluster-labels: {label:?} is not key=value"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if clusters.is_empty() {
        let (namespace, name) = args
            .cluster
            .as_deref()
            .unwrap_or(DEFAULT_CLUSTER)
            .split_once('/')
            .ok_or_else(|| anyhow!("--cluster takes namespace/name"))?;
        let assumed = SveltosCluster {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(namespace.to_owned()),
                ..Default::default()
            },
            spec: SveltosClusterSpec::default(),
            status: Some(SveltosClusterStatus {
                ready: true,
                ..Default::default()
            }),
        };
        clusters.push(Cluster::from_sveltos(&assumed)?);
    }
    let index = match &args.cluster {
        Some(wanted) => clusters
            .iter()
            .position(|c| format!("{}/{}", c.reference.namespace, c.reference.name) == *wanted)
            .ok_or_else(|| {
                let known: Vec<String> = clusters.iter().map(|c| c.reference.to_string()).collect();
                anyhow!(
                    "--cluster {wanted}: the files hold no such cluster (they hold {})",
                    known.join(", ")
                )
            })?,
        None if clusters.len() == 1 => 0,
        None => bail!(
            "the files hold {} clusters: name the one whose resources they are with --cluster NAMESPACE/NAME",
            clusters.len()
        ),
    };
    for cluster in clusters.iter_mut() {
        cluster.selectable = !cluster.deleting;
    }
    let source = &mut clusters[index];
    for (key, value) in labels {
        source.object["metadata"]["labels"][&key] = json!(value);
        source.labels.insert(key, value);
    }
    Ok(source.reference.clone())
}

/// The documents as a `v1` List or YAML documents, each after its comment (if any).
fn write(
    documents: &[(Option<String>, Value)],
    format: Output,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    match format {
        Output::Json => {
            let items: Vec<&Value> = documents.iter().map(|(_, object)| object).collect();
            let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
            writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        }
        Output::Yaml => {
            for (comment, object) in documents {
                writeln!(out, "---")?;
                if let Some(comment) = comment {
                    writeln!(out, "# {comment}")?;
                }
                write!(out, "{}", serde_saphyr::to_string(object)?)?;
            }
        }
    }
    Ok(())
}
