//! Shell completion: `completion bash|zsh|fish|powershell` prints a script for the binary
//! itself, and `__complete ARGS... PARTIAL` answers as cobra programs do, for kubectl (1.26+),
//! which runs `kubectl_complete-sveltos_events` to complete `kubectl sveltos-events <TAB>`:
//! one candidate per line, then `:<directive>`.
//!
//! Candidates come from the command tree (subcommands, flags, a flag's fixed values) and, where
//! a flag or argument names an object, from the cluster the command line names: contexts for
//! `--context`, namespaces for `-n`, `namespace/name` of SveltosClusters for `--cluster`,
//! ClusterProfiles for `--profile`, registered clusters for `--name`, and `KIND/NAME`
//! arguments (the kind first, then the names of its objects in the `--cluster` and `-n` given).

use crate::chain::MANAGEMENT;
use crate::chain::fleet::Fleet;
use crate::connect::ClusterArgs;
use clap::Command;
use std::time::Duration;

/// cobra's directive: complete with files as the shell would.
const DEFAULT: u8 = 0;
/// cobra's directive: no space after the candidate (a `kind/` still to be followed by a name).
const NO_SPACE: u8 = 2;
/// cobra's directive: no file names after these candidates.
const NO_FILES: u8 = 4;
/// The kinds of the management cluster `explain` and `trace` start from.
const SVELTOS_KINDS: [&str; 5] = [
    "clusterprofile",
    "clustersummary",
    "eventreport",
    "eventsource",
    "eventtrigger",
];
/// How long a completion may wait for the cluster.
const TIMEOUT: Duration = Duration::from_secs(3);

/// The shells `completion` writes a script for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    /// bash (`source <(kubectl-sveltos_events completion bash)`).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
    /// PowerShell.
    Powershell,
}

/// Flags of `completion`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    source <(kubectl-sveltos_events completion bash)   # completes the binary itself\n  \
    kubectl sveltos-events <TAB>                       # kubectl >= 1.26 asks kubectl_complete-sveltos_events")]
pub struct Args {
    /// The shell to write the script for.
    pub shell: Shell,
}

/// Writes the completion script of `command` for `shell`.
pub fn script(command: &mut Command, shell: Shell, out: &mut impl std::io::Write) {
    let name = command.get_name().to_owned();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
        Shell::Powershell => clap_complete::Shell::PowerShell,
    };
    clap_complete::generate(shell, command, name, out);
}

/// What the words before the one being completed said: the command they reached, the flags
/// that name where objects are, and how many positional arguments they gave.
#[derive(Default)]
struct Line {
    cluster: ClusterArgs,
    /// `-n`/`--namespace`.
    namespace: Option<String>,
    /// `--cluster`: the managed cluster objects are read in.
    managed: Option<String>,
    positionals: usize,
    /// The subcommands named, in order (`deregister`, `cluster`).
    commands: Vec<String>,
}

impl Line {
    fn remember(&mut self, flag: &str, value: &str) {
        match flag {
            "kubeconfig" => self.cluster.kubeconfig = Some(value.into()),
            "context" => self.cluster.context = Some(value.to_owned()),
            "namespace" => self.namespace = Some(value.to_owned()),
            "cluster" => self.managed = Some(value.to_owned()),
            _ => {}
        }
    }
}

/// What completing the last of `words` (the words after the plugin's name) offers, and the
/// directive for the shell.
pub async fn candidates(root: &Command, words: &[String]) -> (Vec<String>, u8) {
    let (partial, before) = match words.split_last() {
        Some((partial, before)) => (partial.as_str(), before),
        None => ("", &[][..]),
    };
    let mut command = root;
    let mut line = Line::default();
    let mut pending: Option<String> = None;
    for word in before {
        if let Some(flag) = pending.take() {
            line.remember(&flag, word);
            continue;
        }
        if let Some(flag) = word.strip_prefix("--") {
            match flag.split_once('=') {
                Some((name, value)) => line.remember(name, value),
                None if takes_value(command, flag) => pending = Some(flag.to_owned()),
                None => {}
            }
        } else if let Some(short) = word.strip_prefix('-').and_then(|w| w.chars().next()) {
            if let Some(long) = long_of(command, short)
                && takes_value(command, &long)
            {
                // `-nteam` and `-n=team` both name `team`, as clap reads them.
                match word
                    .get(2..)
                    .map(|v| v.strip_prefix('=').unwrap_or(v))
                    .filter(|v| !v.is_empty())
                {
                    Some(value) => line.remember(&long, value),
                    None => pending = Some(long),
                }
            }
        } else if let Some(sub) = command.find_subcommand(word) {
            command = sub;
            line.commands.push(sub.get_name().to_owned());
        } else {
            line.positionals += 1;
        }
    }
    if let Some(flag) = pending {
        return values(command, &flag, &line, partial).await;
    }
    if partial.starts_with('-') {
        return (filter(flags(command), partial), NO_FILES);
    }
    if command.has_subcommands() {
        let offered = command
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
            .map(|s| s.get_name().to_owned())
            .collect();
        return (filter(offered, partial), NO_FILES);
    }
    match command.get_positionals().nth(line.positionals) {
        Some(arg) if arg.get_id() == "target" => {
            tokio::time::timeout(TIMEOUT, objects(command, &line, partial))
                .await
                .unwrap_or((Vec::new(), NO_FILES))
        }
        Some(arg) => {
            let fixed = arg
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_owned())
                .collect();
            (filter(fixed, partial), NO_FILES)
        }
        None => (Vec::new(), NO_FILES),
    }
}

fn filter(offered: Vec<String>, partial: &str) -> Vec<String> {
    offered
        .into_iter()
        .filter(|c| c.starts_with(partial))
        .collect()
}

/// `KIND/NAME` arguments: `kind/` while the kind is being typed (without a space after it),
/// then the names of that kind's objects, read from the cluster the line names.
async fn objects(command: &Command, line: &Line, partial: &str) -> (Vec<String>, u8) {
    let cluster = line.managed.as_deref().unwrap_or(MANAGEMENT);
    let fixed = match command.get_name() {
        // `show usage` takes only these.
        "usage" => Some(&["clusterprofile", "configmap", "secret"][..]),
        _ if cluster == MANAGEMENT => Some(&SVELTOS_KINDS[..]),
        _ => None,
    };
    let kind = partial.split_once('/').map(|(kind, _)| kind);
    if let (None, Some(fixed)) = (kind, fixed) {
        let kinds = fixed.iter().map(|k| format!("{k}/")).collect();
        return (filter(kinds, partial), NO_FILES | NO_SPACE);
    }
    // The rest is read from the cluster.
    let Some(mut fleet) = client(&line.cluster).await.map(Fleet::new) else {
        return (Vec::new(), NO_FILES);
    };
    let Some(kind) = kind else {
        let kinds = fleet.kind_names(cluster).await.unwrap_or_default();
        let kinds = kinds.into_iter().map(|k| format!("{k}/")).collect();
        return (filter(kinds, partial), NO_FILES | NO_SPACE);
    };
    let namespace = line.namespace.as_deref().unwrap_or("default");
    let names = fleet
        .names(cluster, kind, namespace)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|name| format!("{kind}/{name}"))
        .collect();
    (filter(names, partial), NO_FILES)
}

fn takes_value(command: &Command, long: &str) -> bool {
    command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))
        .is_some_and(|a| a.get_action().takes_values())
}

fn long_of(command: &Command, short: char) -> Option<String> {
    command
        .get_arguments()
        .find(|a| a.get_short() == Some(short))
        .and_then(|a| a.get_long())
        .map(str::to_owned)
}

fn flags(command: &Command) -> Vec<String> {
    command
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long())
        .map(|l| format!("--{l}"))
        .chain(std::iter::once("--help".to_owned()))
        .collect()
}

/// The values of `flag`: its fixed ones, or names read from the cluster.
async fn values(command: &Command, flag: &str, line: &Line, partial: &str) -> (Vec<String>, u8) {
    let cluster = &line.cluster;
    let fixed: Vec<String> = command
        .get_arguments()
        .find(|a| a.get_long() == Some(flag))
        .map(|a| {
            a.get_possible_values()
                .iter()
                .map(|v| v.get_name().to_owned())
                .collect()
        })
        .unwrap_or_default();
    if !fixed.is_empty() {
        return (filter(fixed, partial), NO_FILES);
    }
    let names = match flag {
        "context" => contexts(cluster),
        "namespace" => tokio::time::timeout(TIMEOUT, namespaces(cluster))
            .await
            .unwrap_or_default(),
        "cluster" => tokio::time::timeout(TIMEOUT, clusters(cluster))
            .await
            .unwrap_or_default(),
        "profile" => tokio::time::timeout(TIMEOUT, profiles(cluster))
            .await
            .unwrap_or_default(),
        // `deregister cluster --name`: the clusters registered in `--namespace` (register
        // wants a new name: nothing to offer).
        "name" if line.commands.first().is_some_and(|c| c == "deregister") => {
            tokio::time::timeout(TIMEOUT, cluster_names(cluster, line.namespace.as_deref()))
                .await
                .unwrap_or_default()
        }
        "name" => return (Vec::new(), NO_FILES),
        // Files (kubeconfigs, manifests) and free text: the shell's own completion.
        _ => return (Vec::new(), DEFAULT),
    };
    (filter(names, partial), NO_FILES)
}

fn contexts(cluster: &ClusterArgs) -> Vec<String> {
    let file = match &cluster.kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path).ok(),
        None => kube::config::Kubeconfig::read().ok(),
    };
    file.map(|f| f.contexts.into_iter().map(|c| c.name).collect())
        .unwrap_or_default()
}

async fn client(cluster: &ClusterArgs) -> Option<kube::Client> {
    clusters::client::client(cluster.config().await.ok()?).ok()
}

async fn namespaces(cluster: &ClusterArgs) -> Vec<String> {
    use k8s_openapi::api::core::v1::Namespace;
    let Some(client) = client(cluster).await else {
        return Vec::new();
    };
    let api: kube::Api<Namespace> = kube::Api::all(client);
    metadata_names(api, |meta| meta.name.clone().unwrap_or_default()).await
}

/// `namespace/name` of the registered clusters.
async fn clusters(cluster: &ClusterArgs) -> Vec<String> {
    let Some(client) = client(cluster).await else {
        return Vec::new();
    };
    let api: kube::Api<api::v1beta1::SveltosCluster> = kube::Api::all(client);
    metadata_names(api, |meta| {
        let namespace = meta.namespace.clone().unwrap_or_default();
        format!("{namespace}/{}", meta.name.clone().unwrap_or_default())
    })
    .await
}

/// The names of the clusters registered in `namespace` (`default` unless given).
async fn cluster_names(cluster: &ClusterArgs, namespace: Option<&str>) -> Vec<String> {
    let Some(client) = client(cluster).await else {
        return Vec::new();
    };
    let api: kube::Api<api::v1beta1::SveltosCluster> =
        kube::Api::namespaced(client, namespace.unwrap_or("default"));
    metadata_names(api, |meta| meta.name.clone().unwrap_or_default()).await
}

/// The ClusterProfiles' names.
async fn profiles(cluster: &ClusterArgs) -> Vec<String> {
    let Some(client) = client(cluster).await else {
        return Vec::new();
    };
    let api: kube::Api<api::v1beta1::ClusterProfile> = kube::Api::all(client);
    metadata_names(api, |meta| meta.name.clone().unwrap_or_default()).await
}

/// Each object's name in the form `name` gives it, or nothing when the list fails.
async fn metadata_names<K>(
    api: kube::Api<K>,
    name: impl Fn(&kube::api::ObjectMeta) -> String,
) -> Vec<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list_metadata(&Default::default())
        .await
        .map(|list| list.items.iter().map(|o| name(&o.metadata)).collect())
        .unwrap_or_default()
}

/// Prints candidates as cobra's `__complete` does.
pub fn print(
    candidates: &[String],
    directive: u8,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    for candidate in candidates {
        writeln!(out, "{candidate}")?;
    }
    writeln!(out, ":{directive}")
}
