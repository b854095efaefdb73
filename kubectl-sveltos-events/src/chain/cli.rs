//! The `explain` and `trace` commands: flags, target, output and exit code (0 the chain is
//! whole, 1 a link is broken, 2 the command could not run).

use std::io::Write;

use anyhow::anyhow;

use super::fleet::Fleet;
use super::render::{self, Format};
use super::{MANAGEMENT, Node, Target};
use crate::connect::ClusterArgs;

/// Flags of `explain` and `trace`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    mgmt: ClusterArgs,
    /// The object, as kubectl names it: `KIND/NAME` (kind, plural or singular, any case).
    target: String,
    /// Its namespace (for a namespaced kind).
    #[arg(short, long)]
    namespace: Option<String>,
    /// The managed cluster it is in, as its SveltosCluster's `namespace/name` (default: the
    /// management cluster).
    #[arg(long)]
    cluster: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    output: Format,
}

/// Which way a command walks the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From an add-on to its cause.
    Upward,
    /// From a resource to its effects.
    Downward,
}

/// Runs `explain` (upward) or `trace` (downward); returns the exit code.
pub async fn run(args: Args, direction: Direction, out: &mut impl Write) -> anyhow::Result<u8> {
    let (kind, name) = args
        .target
        .split_once('/')
        .filter(|(k, n)| !k.is_empty() && !n.is_empty())
        .ok_or_else(|| {
            anyhow!(
                "{:?} is not KIND/NAME (e.g. networkpolicy/front-my-service)",
                args.target
            )
        })?;
    let (mgmt, _, _) = args.mgmt.connect().await?;
    let mut fleet = Fleet::new(mgmt);
    let cluster = args.cluster.as_deref().unwrap_or(MANAGEMENT);
    if cluster != MANAGEMENT {
        fleet
            .client(cluster)
            .await
            .map_err(|e| anyhow!("cannot reach cluster {cluster}: {e}"))?;
    }
    let target = Target {
        cluster,
        kind,
        namespace: args.namespace.as_deref(),
        name,
    };
    let root: Node = match direction {
        Direction::Upward => super::explain::explain(&mut fleet, target).await?,
        Direction::Downward => super::trace::trace(&mut fleet, target).await?,
    };
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    out.write_all(render::render(&root, args.output, now)?.as_bytes())?;
    Ok(if root.whole() { 0 } else { 1 })
}
