//! `sandbox fault`: make a running sandbox's API servers misbehave for a while (dropped
//! watches, 410s, errors, conflicts, latency), list the faults in force, or end them, through
//! each cluster's admin-only `/sandbox/faults` endpoint.

use anyhow::{Context, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};
use sandbox::sandbox::files;
use serde_json::{Value, json};
use std::io::Write;
use std::time::Duration;

use super::control::DirArgs;

/// Flags of `sandbox fault`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events sandbox fault --dir /tmp/sbx errors --code 503 --share 0.5 --for 30s\n  \
    kubectl sveltos-events sandbox fault --dir /tmp/sbx --cluster cluster-1 drop-watches\n  \
    kubectl sveltos-events sandbox fault --dir /tmp/sbx list\n  \
    kubectl sveltos-events sandbox fault --dir /tmp/sbx clear")]
pub struct FaultArgs {
    #[command(flatten)]
    folder: DirArgs,
    /// A cluster to act on (repeat for several; default: every cluster of the folder).
    #[arg(long, global = true)]
    cluster: Vec<String>,
    #[command(subcommand)]
    what: What,
}

/// How long a fault lasts.
#[derive(Debug, clap::Args)]
struct Lasting {
    /// How long the fault lasts, e.g. `30s`, `2m` (at most an hour).
    #[arg(long = "for", default_value = "30s", value_parser = clusters::process::parse_duration)]
    lasting: Duration,
}

/// A share of requests.
#[derive(Debug, clap::Args)]
struct Share {
    /// Which part of the requests, from 0 to 1 (the same ones on every run).
    #[arg(long, default_value_t = 1.0)]
    share: f64,
}

/// What to do.
#[derive(Debug, clap::Subcommand)]
enum What {
    /// End every open watch, and every new one as it starts.
    DropWatches(Lasting),
    /// Answer watches from a resourceVersion with 410 Expired, as after a compaction.
    ExpireWatches(Lasting),
    /// Answer a share of API requests with 500, 503 or 429 (with Retry-After).
    Errors {
        /// 500, 503 or 429.
        #[arg(long)]
        code: u16,
        #[command(flatten)]
        share: Share,
        #[command(flatten)]
        lasting: Lasting,
    },
    /// Answer a share of updates (PUT) with 409 Conflict.
    Conflicts {
        #[command(flatten)]
        share: Share,
        #[command(flatten)]
        lasting: Lasting,
    },
    /// Make every API request wait first.
    Latency {
        /// The wait, e.g. `100ms`, `2s`.
        #[arg(long, value_parser = parse_millis)]
        delay: u64,
        #[command(flatten)]
        lasting: Lasting,
    },
    /// The faults in force on each cluster.
    List,
    /// End every fault.
    Clear,
}

fn parse_millis(text: &str) -> Result<u64, String> {
    let millis = match text.strip_suffix("ms") {
        Some(number) => number
            .parse::<u64>()
            .map_err(|_| format!("{text:?} is not a number of milliseconds"))?,
        None => clusters::process::parse_duration(text)?
            .as_millis()
            .try_into()
            .map_err(|_| format!("{text:?} is too long"))?,
    };
    Ok(millis)
}

impl What {
    /// The body posted to `/sandbox/faults`, for the kinds that inject one.
    fn body(&self) -> Option<Value> {
        let (fault, lasting) = match self {
            What::DropWatches(l) => (json!({"kind": "dropWatches"}), l),
            What::ExpireWatches(l) => (json!({"kind": "expireWatches"}), l),
            What::Errors {
                code,
                share,
                lasting,
            } => (
                json!({"kind": "errors", "code": code, "share": share.share}),
                lasting,
            ),
            What::Conflicts { share, lasting } => {
                (json!({"kind": "conflicts", "share": share.share}), lasting)
            }
            What::Latency { delay, lasting } => {
                (json!({"kind": "latency", "millis": delay}), lasting)
            }
            What::List | What::Clear => return None,
        };
        let mut body = fault;
        body["seconds"] = json!(lasting.lasting.as_secs_f64());
        Some(body)
    }
}

/// One fault in force, as the endpoint lists it: `errors (code 503, share 0.5), 12s left`.
fn described(item: &Value) -> String {
    let kind = item["kind"].as_str().unwrap_or("?");
    let details: Vec<String> = ["code", "share", "millis"]
        .iter()
        .filter(|field| !item[**field].is_null())
        .map(|field| format!("{field} {}", item[*field]))
        .collect();
    let left = item["seconds"].as_f64().unwrap_or(0.0).ceil();
    if details.is_empty() {
        format!("{kind}, {left}s left")
    } else {
        format!("{kind} ({}), {left}s left", details.join(", "))
    }
}

/// Runs `sandbox fault`.
pub async fn run(args: &FaultArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let dir = &args.folder.dir;
    if sandbox::sandbox::holder(dir).is_none() {
        bail!(
            "no sandbox runs on {}: start one with `kubectl sveltos-events sandbox --dir {}`",
            dir.display(),
            dir.display()
        );
    }
    let path = dir.join(files::KUBECONFIG);
    let file = Kubeconfig::read_from(&path)
        .with_context(|| format!("cannot read the sandbox's kubeconfig {}", path.display()))?;
    let known: Vec<String> = file.contexts.iter().map(|c| c.name.clone()).collect();
    let clusters = if args.cluster.is_empty() {
        known.clone()
    } else {
        args.cluster.clone()
    };
    if let Some(unknown) = clusters.iter().find(|c| !known.contains(c)) {
        bail!(
            "the sandbox on {} has no cluster {unknown:?} (it has {})",
            dir.display(),
            known.join(", ")
        );
    }
    for cluster in &clusters {
        let options = KubeConfigOptions {
            context: Some(cluster.clone()),
            ..Default::default()
        };
        let config = kube::Config::from_custom_kubeconfig(file.clone(), &options)
            .await
            .with_context(|| {
                format!(
                    "cannot read cluster {cluster}'s entry in {}",
                    path.display()
                )
            })?;
        let client = clusters::client::client(config)
            .with_context(|| format!("cannot make a client for cluster {cluster}"))?;
        let builder = http::Request::builder().uri("/sandbox/faults");
        let request = match (&args.what, args.what.body()) {
            (_, Some(body)) => builder
                .method("POST")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body)?),
            (What::Clear, None) => builder.method("DELETE").body(Vec::new()),
            _ => builder.method("GET").body(Vec::new()),
        }
        .context("cannot build the request")?;
        let answer = client
            .request::<Value>(request)
            .await
            .with_context(|| format!("cluster {cluster} did not take the request"))?;
        let items = answer["items"].as_array().cloned().unwrap_or_default();
        let said: Vec<String> = items.iter().map(described).collect();
        match (&args.what, said.is_empty()) {
            (What::Clear, _) => writeln!(out, "{cluster}: no fault in force")?,
            (_, true) => writeln!(out, "{cluster}: no fault in force")?,
            (_, false) => writeln!(out, "{cluster}: {}", said.join("; "))?,
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_read_in_milliseconds_or_as_durations() {
        assert_eq!(parse_millis("150ms"), Ok(150));
        assert_eq!(parse_millis("2s"), Ok(2000));
        assert!(parse_millis("fast").is_err());
    }

    #[test]
    fn a_fault_in_force_reads_as_a_sentence() {
        let item = json!({"kind": "errors", "code": 503, "share": 0.5, "seconds": 11.2});
        assert_eq!(described(&item), "errors (code 503, share 0.5), 12s left");
        let item = json!({"kind": "dropWatches", "seconds": 3.0});
        assert_eq!(described(&item), "dropWatches, 3s left");
    }
}
