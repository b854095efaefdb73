//! `kubectl-sveltos_events`: the sveltos-events kubectl plugin.

mod sandbox;

use clap::{Parser, Subcommand};

/// Event-driven add-ons for Kubernetes, the Sveltos way.
#[derive(Debug, Parser)]
#[command(name = "kubectl-sveltos_events", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an in-process Kubernetes API server: a management cluster and N managed clusters.
    Sandbox(sandbox::Args),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Sandbox(args) => sandbox::run(args).await,
    }
}
