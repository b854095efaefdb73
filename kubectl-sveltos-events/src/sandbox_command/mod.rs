//! The `sandbox` subcommand: start virtual clusters and run until SIGINT/SIGTERM, keeping
//! their state in `--dir`; and `sandbox status|stop|reset|fault` on such a folder.

mod control;
mod fault;
mod merge;

use anyhow::{Context, bail};
use sandbox::sandbox::files;
use std::path::{Path, PathBuf};

/// Flags of `sandbox`.
#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  \
    kubectl sveltos-events sandbox --dir /tmp/sbx --demo      # everything, and the NetworkPolicy scenario\n  \
    kubectl sveltos-events sandbox --dir /tmp/sbx --no-controllers   # API servers only, for `install`\n  \
    kubectl sveltos-events sandbox status --dir /tmp/sbx      # is it running? where are its clusters?\n  \
    kubectl sveltos-events sandbox stop --dir /tmp/sbx; kubectl sveltos-events sandbox reset --dir /tmp/sbx\n  \
    kubectl sveltos-events sandbox fault --dir /tmp/sbx errors --code 503 --share 0.5 --for 30s\n\n\
    Then: export KUBECONFIG=/tmp/sbx/kubeconfig (contexts mgmt, cluster-1, ...; or \
    /tmp/sbx/cluster-1.kubeconfig for one cluster).\n\
    The clusters' objects are kept in DIR/state and loaded at the next start on the same \
    folder (--ephemeral: in memory alone); `sandbox reset` starts clean."
)]
pub struct Args {
    /// Inspect, stop or clear a sandbox folder instead of starting one.
    #[command(subcommand)]
    pub action: Option<Action>,
    /// Directory receiving `kubeconfig`, `<cluster>.kubeconfig` files, `READY` and the
    /// clusters' state.
    #[arg(long, required = true)]
    pub dir: Option<PathBuf>,
    /// Number of managed clusters (`cluster-1`...), besides `mgmt`.
    #[arg(long, default_value_t = 2)]
    pub clusters: usize,
    /// Only the API servers: no CRDs, no registered clusters, no agent or manager.
    #[arg(long, conflicts_with = "demo")]
    pub no_controllers: bool,
    /// Also apply the seed documents' NetworkPolicy scenario and narrate what happens.
    #[arg(long)]
    pub demo: bool,
    /// Serve plain HTTP instead of HTTPS (real clusters never do; for tools without TLS).
    #[arg(long)]
    pub plain_http: bool,
    /// Keep the clusters in memory alone: nothing is loaded from or kept in DIR/state.
    #[arg(long)]
    pub ephemeral: bool,
    /// Also add the clusters to your own kubeconfig ($KUBECONFIG's first file, or
    /// ~/.kube/config) as contexts `sveltos-sandbox-<cluster>`; `sandbox reset` removes them.
    #[arg(long)]
    pub merge_kubeconfig: bool,
}

/// What to do with a sandbox folder.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Whether a sandbox runs on a folder, and its clusters. Exit 0 running, 3 not running.
    ///
    /// Example: `kubectl sveltos-events sandbox status --dir /tmp/sbx -o json`.
    Status(control::StatusArgs),
    /// Stop the sandbox running on a folder (SIGTERM) and wait for it to exit; its state is
    /// kept for the next start.
    ///
    /// Example: `kubectl sveltos-events sandbox stop --dir /tmp/sbx`.
    Stop(control::StopArgs),
    /// Delete a stopped sandbox's state and kubeconfigs (and the contexts
    /// `--merge-kubeconfig` added to your kubeconfig), so the next start is a new one.
    ///
    /// Example: `kubectl sveltos-events sandbox reset --dir /tmp/sbx`.
    Reset(control::DirArgs),
    /// Make a running sandbox's API servers misbehave for a while (dropped watches, 410s,
    /// 500/503/429 answers, conflicts, latency), list the faults in force, or end them.
    ///
    /// Example: `kubectl sveltos-events sandbox fault --dir /tmp/sbx errors --code 503 --share 0.5`.
    Fault(fault::FaultArgs),
}

/// Runs `sandbox`: an action on a folder, or a sandbox until a signal. Exit codes are the
/// action's; 2 when the sandbox cannot start.
pub async fn run(args: Args) -> anyhow::Result<u8> {
    match args.action {
        Some(Action::Status(a)) => control::status(&a, &mut std::io::stdout()),
        Some(Action::Stop(a)) => control::stop(&a, &mut std::io::stdout()).await,
        Some(Action::Reset(a)) => control::reset(&a, &mut std::io::stdout()),
        Some(Action::Fault(a)) => fault::run(&a, &mut std::io::stdout()).await,
        None => {
            let dir = args.dir.clone().context("--dir is required")?;
            start(args, &dir).await.map(|()| 0)
        }
    }
}

/// Refuses options that cannot work together, before anything starts.
fn check(args: &Args) -> anyhow::Result<()> {
    if args.demo && args.clusters == 0 {
        bail!("--demo needs at least one managed cluster: use --clusters 1 or more");
    }
    Ok(())
}

async fn start(args: Args, dir: &Path) -> anyhow::Result<()> {
    check(&args)?;
    let sandbox = sandbox::Sandbox::start(sandbox::SandboxOptions {
        dir: Some(dir.to_owned()),
        managed_clusters: args.clusters,
        plain_http: args.plain_http,
        durable: !args.ephemeral,
    })
    .await
    .context("the sandbox could not start")?;
    let ready = dir.join(files::READY);
    let result = serve(&args, dir, &sandbox, &ready).await;
    // A script waiting for READY must never see it beside a stopped sandbox.
    if let Err(error) = std::fs::remove_file(&ready)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %ready.display(), %error, "cannot remove READY");
    }
    sandbox.shutdown().await;
    result
}

async fn serve(
    args: &Args,
    dir: &Path,
    sandbox: &sandbox::Sandbox,
    ready: &Path,
) -> anyhow::Result<()> {
    if !args.ephemeral {
        let state = dir.join(files::STATE);
        println!("state: {} (kept across restarts)", state.display());
    }
    for c in sandbox.clusters() {
        let path = c
            .kubeconfig
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        println!("{}\t{}\tKUBECONFIG={}", c.name, c.url(), path);
    }
    println!(
        "all clusters: KUBECONFIG={} (contexts {})",
        dir.join(files::KUBECONFIG).display(),
        sandbox
            .clusters()
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if args.merge_kubeconfig {
        let merged = merge::merge(dir, sandbox.clusters())?;
        println!(
            "merged into {}: contexts sveltos-sandbox-<cluster> (kubectl config use-context \
             sveltos-sandbox-mgmt)",
            merged.display()
        );
    }
    let controllers = if args.no_controllers {
        None
    } else {
        let (controllers, registered) = crate::system::start(sandbox)
            .await
            .context("starting the sveltos-events controllers")?;
        for (name, labels) in registered {
            let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!(
                "registered SveltosCluster default/{name}\t{}",
                labels.join(",")
            );
        }
        println!("running: agent (hub mode), manager, deployer");
        Some(controllers)
    };
    if args.demo {
        crate::demo::run(sandbox)
            .await
            .context("running the demo")?;
    }
    std::fs::write(ready, "").with_context(|| format!("cannot write {}", ready.display()))?;
    println!("ready: {}", ready.display());
    clusters::process::termination().await;
    tracing::info!("shutting down");
    drop(controllers);
    Ok(())
}
