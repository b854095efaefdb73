//! The `sandbox` subcommand: start virtual clusters and run until SIGINT/SIGTERM.

use anyhow::Context;
use std::path::PathBuf;

/// Flags of `sandbox`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events sandbox --dir /tmp/sbx --demo      # everything, and the NetworkPolicy scenario\n  \
    kubectl sveltos-events sandbox --dir /tmp/sbx --no-controllers   # API servers only, for `install`\n\n\
    Then: export KUBECONFIG=/tmp/sbx/mgmt.kubeconfig (or cluster-1.kubeconfig ...).")]
pub struct Args {
    /// Directory receiving `<cluster>.kubeconfig` files and `READY`.
    #[arg(long)]
    pub dir: PathBuf,
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
}

/// Start the sandbox, print where the kubeconfigs are, wait for a signal, shut down.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let sandbox = sandbox::Sandbox::start(sandbox::SandboxOptions {
        dir: Some(args.dir.clone()),
        managed_clusters: args.clusters,
        plain_http: args.plain_http,
    })
    .await
    .context("starting the sandbox")?;
    for c in sandbox.clusters() {
        let path = c
            .kubeconfig
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        println!("{}\t{}\tKUBECONFIG={}", c.name, c.url(), path);
    }
    let controllers = if args.no_controllers {
        None
    } else {
        let (controllers, registered) = crate::system::start(&sandbox)
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
        crate::demo::run(&sandbox)
            .await
            .context("running the demo")?;
    }
    let ready = args.dir.join("READY");
    std::fs::write(&ready, "").with_context(|| format!("writing {}", ready.display()))?;
    println!("ready: {}", ready.display());
    controller::serve::termination().await;
    tracing::info!("shutting down");
    drop(controllers);
    sandbox.shutdown().await;
    Ok(())
}
