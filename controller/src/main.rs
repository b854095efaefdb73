//! `sveltos-events-manager`: turns EventReports and EventTriggers into ClusterProfiles.

use anyhow::Context;
use clap::Parser;
use sveltos_events_controller::{leader, run};

/// mimalloc rather than glibc's malloc: see the workspace's Cargo.toml. The
/// `system-allocator` feature keeps glibc's, which heap profilers (heaptrack) can follow.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Address of /healthz, /readyz, /metrics (and of /convert over plain HTTP, for local
    /// runs).
    #[arg(long, default_value = "0.0.0.0:8080")]
    http_addr: std::net::SocketAddr,
    /// Serve the conversion webhook (/convert) over HTTPS on this address, with a CA and
    /// certificate kept in --webhook-secret and the CA bundle written into the CRDs (API
    /// servers call webhooks over HTTPS only).
    #[arg(long)]
    webhook_addr: Option<std::net::SocketAddr>,
    /// The Secret keeping the webhook's CA and certificate, in --namespace.
    #[arg(long, default_value = sveltos_events_controller::webhook::SECRET)]
    webhook_secret: String,
    /// Namespace of the manager: its leader Lease, its webhook Service and Secret.
    #[arg(long, env = "POD_NAMESPACE", default_value = api::labels::SVELTOS_NAMESPACE)]
    namespace: String,
    /// Run without leader election (only safe with a single replica).
    #[arg(long)]
    no_leader_election: bool,
    /// This replica's identity in the leader Lease (default: $HOSTNAME, then the process id).
    #[arg(long, env = "HOSTNAME")]
    identity: Option<String>,
    /// How long the leader Lease holds without renewal: a standby takes over this long after
    /// the leader stopped renewing.
    #[arg(long, default_value = "15s", value_parser = clusters::process::parse_duration)]
    leader_elect_lease_duration: std::time::Duration,
    /// How long the leader keeps trying to renew before it stops acting (shorter than the
    /// lease duration).
    #[arg(long, default_value = "10s", value_parser = clusters::process::parse_duration)]
    leader_elect_renew_deadline: std::time::Duration,
    /// How often the leader renews and a standby tries to take over.
    #[arg(long, default_value = "2s", value_parser = clusters::process::parse_duration)]
    leader_elect_retry_period: std::time::Duration,
    /// Handle only the clusters whose `sharding.projectsveltos.io/key` annotation equals this
    /// value; the default handles clusters without the annotation. Run one manager per shard.
    #[arg(long, default_value = "")]
    shard_key: String,
    /// Handle only the Cluster API clusters carrying this annotation (all when unset).
    #[arg(long)]
    capi_onboard_annotation: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    clusters::process::no_huge_pages();
    let args = Args::parse();
    clusters::process::init_logs(args.json_logs);
    let config = clusters::registry::load_config(args.kubeconfig.as_deref(), None)
        .await
        .context("finding the management cluster")?;
    let client = clusters::client::client(config).context("building the Kubernetes client")?;
    let webhook = args.webhook_addr.map(|addr| {
        let webhook = sveltos_events_controller::webhook::Webhook {
            namespace: args.namespace.clone(),
            service: api::crd::CONVERSION_SERVICE.to_owned(),
            secret: args.webhook_secret.clone(),
        };
        (addr, webhook)
    });
    let timing = leader::Timing {
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
    };
    timing
        .check()
        .map_err(|why| anyhow::anyhow!("the leader election flags cannot work: {why}"))?;
    let leader = (!args.no_leader_election).then(|| run::Leader {
        namespace: args.namespace.clone(),
        identity: args
            .identity
            .clone()
            .unwrap_or_else(|| format!("manager-{}", std::process::id())),
        timing,
    });
    let options = run::Options {
        client,
        http_addr: Some(args.http_addr),
        webhook,
        leader,
        scope: sveltos_events_controller::fleet::ClusterScope {
            shard: args.shard_key,
        },
        capi_onboard_annotation: args.capi_onboard_annotation,
        no_deployer: args.no_deployer,
    };
    let shutdown = async {
        clusters::process::termination().await;
        tracing::info!("shutting down");
    };
    Ok(run::run(options, shutdown).await?)
}
