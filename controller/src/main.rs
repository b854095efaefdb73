//! `sveltos-events-manager`: turns EventReports and EventTriggers into ClusterProfiles.

use anyhow::Context;
use clap::Parser;

/// The sveltos-events manager: watches EventTriggers, EventReports and clusters in the
/// management cluster and keeps the generated ClusterProfiles, ConfigMaps and Secrets in step.
#[derive(Debug, Parser)]
#[command(name = "sveltos-events-manager", version, about)]
struct Args {
    /// Kubeconfig of the management cluster (default: in-cluster config or $KUBECONFIG).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<std::path::PathBuf>,
    /// Log as JSON lines.
    #[arg(long)]
    json_logs: bool,
    /// Do not deploy ClusterProfiles: leave that to an installed Sveltos addon-controller.
    #[arg(long)]
    no_deployer: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if args.json_logs {
        logs.json().init();
    } else {
        logs.init();
    }
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .context("loading the kubeconfig")?
        }
        None => kube::Config::infer()
            .await
            .context("finding the management cluster")?,
    };
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
    };
    let manager = sveltos_events_controller::manager::run(client.clone(), std::future::pending());
    let deployer = async {
        if args.no_deployer {
            std::future::pending().await
        } else {
            sveltos_events_controller::deployer::run(client, std::future::pending()).await
        }
    };
    tokio::select! {
        () = shutdown => Ok(()),
        result = manager => result.context("the manager stopped"),
        result = deployer => result.context("the deployer stopped"),
    }
}
