//! Shell completion: `completion bash|zsh|fish|powershell` prints a script for the binary
//! itself, and `__complete ARGS... PARTIAL` answers as cobra programs do, for kubectl (1.26+),
//! which runs `kubectl_complete-sveltos_events` to complete `kubectl sveltos-events <TAB>`:
//! one candidate per line, then `:<directive>`.
//!
//! Candidates come from the command tree (subcommands, flags, a flag's fixed values) and, where
//! a flag names an object, from the cluster the command line names: contexts for `--context`,
//! namespaces for `-n`, `namespace/name` of SveltosClusters for `--cluster`.

use crate::connect::ClusterArgs;
use clap::Command;
use std::time::Duration;

/// cobra's directive: complete with files as the shell would.
const DEFAULT: u8 = 0;
/// cobra's directive: no file names after these candidates.
const NO_FILES: u8 = 4;
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

/// What completing the last of `words` (the words after the plugin's name) offers, and the
/// directive for the shell.
pub async fn candidates(root: &Command, words: &[String]) -> (Vec<String>, u8) {
    let (partial, before) = match words.split_last() {
        Some((partial, before)) => (partial.as_str(), before),
        None => ("", &[][..]),
    };
    let mut command = root;
    let mut cluster = ClusterArgs::default();
    let mut pending: Option<String> = None;
    for word in before {
        if let Some(flag) = pending.take() {
            remember(&mut cluster, &flag, word);
            continue;
        }
        if let Some(flag) = word.strip_prefix("--") {
            match flag.split_once('=') {
                Some((name, value)) => remember(&mut cluster, name, value),
                None if takes_value(command, flag) => pending = Some(flag.to_owned()),
                None => {}
            }
        } else if let Some(short) = word.strip_prefix('-').and_then(|w| w.chars().next()) {
            if let Some(long) = long_of(command, short)
                && word.len() == 2
                && takes_value(command, &long)
            {
                pending = Some(long);
            }
        } else if let Some(sub) = command.find_subcommand(word) {
            command = sub;
        }
    }
    let offered = match pending {
        Some(flag) => return values(command, &flag, &cluster, partial).await,
        None if partial.starts_with('-') => flags(command),
        None => command
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
            .map(|s| s.get_name().to_owned())
            .collect(),
    };
    (filter(offered, partial), NO_FILES)
}

fn filter(offered: Vec<String>, partial: &str) -> Vec<String> {
    offered
        .into_iter()
        .filter(|c| c.starts_with(partial))
        .collect()
}

fn remember(cluster: &mut ClusterArgs, flag: &str, value: &str) {
    match flag {
        "kubeconfig" => cluster.kubeconfig = Some(value.into()),
        "context" => cluster.context = Some(value.to_owned()),
        _ => {}
    }
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
async fn values(
    command: &Command,
    flag: &str,
    cluster: &ClusterArgs,
    partial: &str,
) -> (Vec<String>, u8) {
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
    kube::Client::try_from(cluster.config().await.ok()?).ok()
}

async fn namespaces(cluster: &ClusterArgs) -> Vec<String> {
    use k8s_openapi::api::core::v1::Namespace;
    let Some(client) = client(cluster).await else {
        return Vec::new();
    };
    let api: kube::Api<Namespace> = kube::Api::all(client);
    api.list_metadata(&Default::default())
        .await
        .map(|list| {
            list.items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .collect()
        })
        .unwrap_or_default()
}

async fn clusters(cluster: &ClusterArgs) -> Vec<String> {
    let Some(client) = client(cluster).await else {
        return Vec::new();
    };
    let api: kube::Api<api::v1beta1::SveltosCluster> = kube::Api::all(client);
    api.list_metadata(&Default::default())
        .await
        .map(|list| {
            list.items
                .into_iter()
                .map(|c| {
                    let namespace = c.metadata.namespace.unwrap_or_default();
                    format!("{namespace}/{}", c.metadata.name.unwrap_or_default())
                })
                .collect()
        })
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
