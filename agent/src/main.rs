//! `sveltos-events-agent`: evaluates EventSources in every registered cluster (hub mode) and
//! publishes EventReports into the management cluster, or, in spoke mode, inside one managed
//! cluster with reports written there for the hub to relay.

use anyhow::Context;
use clap::Parser;
use sveltos_events_agent::run;

/// The sveltos-events agent. In hub mode (the default) one process in the management cluster
/// serves every registered SveltosCluster through its kubeconfig Secret. In spoke mode it runs
/// inside one managed cluster (annotate its SveltosCluster `sveltos-events.io/agent-mode:
/// spoke`): it evaluates the EventSources the hub copies in and writes EventReports there,
/// which the hub relays; the cluster needs no management-cluster credentials.
#[derive(Debug, Parser)]
#[command(name = "sveltos-events-agent", version, about, long_about)]
struct Args {
    /// Where the agent runs: `hub` (management cluster) or `spoke` (inside a managed cluster).
    #[arg(long, value_enum, default_value_t = Mode::Hub)]
    mode: Mode,
    /// Kubeconfig of the cluster the agent runs in: the management cluster in hub mode, the
    /// managed cluster in spoke mode (default: $KUBECONFIG, ~/.kube/config or in-cluster).
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Spoke mode: the cluster's name, for logs.
    #[arg(long, default_value = "local")]
    cluster_name: String,
    /// Address of /healthz, /readyz (ready once the caches are filled) and /metrics.
    #[arg(long, default_value = "0.0.0.0:8081")]
    http_addr: std::net::SocketAddr,
    /// Hub mode: serve only the Cluster API clusters carrying this annotation (all when unset).
    #[arg(long)]
    capi_onboard_annotation: Option<String>,
    /// Log as JSON lines.
    #[arg(long)]
    json_logs: bool,
}

/// Where the agent runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// In the management cluster, serving every registered cluster.
    Hub,
    /// Inside one managed cluster.
    Spoke,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    clusters::process::init_logs(args.json_logs);
    let config = clusters::registry::load_config(args.kubeconfig.as_deref(), None)
        .await
        .context("finding the cluster to run in")?;
    let client = clusters::client::client(config).context("building the Kubernetes client")?;
    let mode = match args.mode {
        Mode::Hub => run::Mode::Hub {
            capi_onboard_annotation: args.capi_onboard_annotation,
        },
        Mode::Spoke => run::Mode::Spoke {
            cluster_name: args.cluster_name,
        },
    };
    let options = run::Options {
        client,
        mode,
        http_addr: Some(args.http_addr),
    };
    let shutdown = async {
        clusters::process::termination().await;
        tracing::info!("shutting down");
    };
    Ok(run::run(options, shutdown).await?)
}
