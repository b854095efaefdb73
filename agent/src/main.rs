//! `sveltos-events-agent`: evaluates EventSources in every registered cluster (hub mode) and
//! publishes EventReports into the management cluster.

use anyhow::Context;
use clap::Parser;

/// The sveltos-events agent in hub mode: one process in the management cluster serves every
/// registered SveltosCluster through its kubeconfig Secret.
#[derive(Debug, Parser)]
#[command(name = "sveltos-events-agent", version, about)]
struct Args {
    /// Kubeconfig of the management cluster (default: $KUBECONFIG, ~/.kube/config or in-cluster).
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Address of /healthz, /readyz (ready once the caches are filled) and /metrics.
    #[arg(long, default_value = "0.0.0.0:8081")]
    http_addr: std::net::SocketAddr,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let config = match &args.kubeconfig {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            sveltos_events_agent::hub::connect::config_from_kubeconfig(&text)
                .await
                .with_context(|| format!("loading kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("finding the management cluster")?,
    };
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    let listener = tokio::net::TcpListener::bind(args.http_addr)
        .await
        .with_context(|| format!("listening on {}", args.http_addr))?;
    let http = axum::serve(listener, sveltos_events_agent::observe::router());
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
    };
    tokio::select! {
        () = sveltos_events_agent::hub::run(client, shutdown) => Ok(()),
        served = http => served.context("serving /healthz, /readyz and /metrics"),
    }
}
