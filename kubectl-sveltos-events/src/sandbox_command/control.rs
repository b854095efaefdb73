//! `sandbox status`, `sandbox stop` and `sandbox reset`: what a sandbox folder holds and
//! whether a sandbox runs on it (its lock says), for people and scripts.

use anyhow::{Context, bail};
use sandbox::sandbox::{files, holder};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Exit code of `status` when no sandbox runs on the folder (as LSB init scripts say).
const NOT_RUNNING: u8 = 3;

/// A sandbox folder.
#[derive(Debug, clap::Args)]
pub struct DirArgs {
    /// The folder the sandbox was started with (`--dir`).
    #[arg(long)]
    pub dir: PathBuf,
}

/// Flags of `sandbox status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    folder: DirArgs,
    /// Output format: text, or json for scripts.
    #[arg(short, long, default_value = "text", value_parser = ["text", "json"])]
    output: String,
}

/// Flags of `sandbox stop`.
#[derive(Debug, clap::Args)]
pub struct StopArgs {
    #[command(flatten)]
    folder: DirArgs,
    /// How long to wait for the sandbox to exit, e.g. `30s`, `2m`.
    #[arg(long, default_value = "30s", value_parser = clusters::process::parse_duration)]
    timeout: Duration,
}

/// A cluster as the folder's kubeconfig lists it.
#[derive(Debug, serde::Serialize)]
struct Cluster {
    name: String,
    server: String,
    kubeconfig: PathBuf,
}

/// The clusters of the folder's `kubeconfig` (none when it has none).
fn clusters(dir: &Path) -> anyhow::Result<Vec<Cluster>> {
    let path = dir.join(files::KUBECONFIG);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let file = kube::config::Kubeconfig::read_from(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(file
        .clusters
        .into_iter()
        .map(|c| Cluster {
            kubeconfig: dir.join(format!("{}.kubeconfig", c.name)),
            server: c.cluster.and_then(|c| c.server).unwrap_or_default(),
            name: c.name,
        })
        .collect())
}

/// `sandbox status`: prints whether a sandbox runs on the folder, and its clusters.
pub fn status(args: &StatusArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let dir = &args.folder.dir;
    let pid = holder(dir);
    let ready = pid.is_some() && dir.join(files::READY).exists();
    let state = dir.join(files::STATE);
    let clusters = clusters(dir)?;
    if args.output == "json" {
        let report = serde_json::json!({
            "dir": dir,
            "running": pid.is_some(),
            "pid": pid.as_deref().and_then(|p| p.parse::<u32>().ok()),
            "ready": ready,
            "state": state.exists().then_some(&state),
            "kubeconfig": (!clusters.is_empty()).then(|| dir.join(files::KUBECONFIG)),
            "clusters": clusters,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        match &pid {
            Some(pid) => writeln!(
                out,
                "{}: running (process {pid}), {}",
                dir.display(),
                if ready { "ready" } else { "starting" }
            )?,
            None => writeln!(out, "{}: not running", dir.display())?,
        }
        if state.exists() {
            writeln!(out, "state: {}", state.display())?;
        }
        if !clusters.is_empty() {
            writeln!(out, "kubeconfig: {}", dir.join(files::KUBECONFIG).display())?;
            let width = clusters.iter().map(|c| c.name.len()).max().unwrap_or(0);
            writeln!(out, "{:width$}  SERVER", "CONTEXT")?;
            for c in &clusters {
                writeln!(out, "{:width$}  {}", c.name, c.server)?;
            }
        }
    }
    Ok(if pid.is_some() { 0 } else { NOT_RUNNING })
}

/// `sandbox stop`: SIGTERM to the sandbox holding the folder, then waits until it is gone.
pub async fn stop(args: &StopArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let dir = &args.folder.dir;
    let Some(pid) = holder(dir) else {
        writeln!(out, "no sandbox runs on {}", dir.display())?;
        return Ok(0);
    };
    let number: i32 = pid.parse().with_context(|| {
        format!(
            "the lock file {} names no process ({pid:?})",
            dir.join(files::LOCK).display()
        )
    })?;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(number),
        nix::sys::signal::Signal::SIGTERM,
    )
    .with_context(|| format!("cannot signal the sandbox's process {pid}"))?;
    let start = Instant::now();
    while holder(dir).is_some() {
        if start.elapsed() > args.timeout {
            bail!(
                "the sandbox (process {pid}) did not stop within {}s",
                args.timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    writeln!(
        out,
        "stopped the sandbox on {} (process {pid})",
        dir.display()
    )?;
    Ok(0)
}

/// `sandbox reset`: removes a stopped sandbox's state, kubeconfigs and merged contexts.
pub fn reset(args: &DirArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let dir = &args.dir;
    if !dir.join(files::LOCK).exists() {
        if dir.join(files::KUBECONFIG).exists() || dir.join(files::STATE).exists() {
            bail!(
                "{} is not a sandbox's folder (it has no lock file); nothing was removed",
                dir.display()
            );
        }
        writeln!(out, "nothing to reset in {}", dir.display())?;
        return Ok(0);
    }
    // Held while removing: no sandbox can start on the folder meanwhile.
    let _lock = sandbox::sandbox::Lock::acquire(dir)?;
    if let Some(merged) = super::merge::unmerge(dir)? {
        writeln!(
            out,
            "removed the sandbox's contexts from {}",
            merged.display()
        )?;
    }
    let mut removed = Vec::new();
    let state = dir.join(files::STATE);
    if state.exists() {
        std::fs::remove_dir_all(&state)
            .with_context(|| format!("cannot remove {}", state.display()))?;
        removed.push(state);
    }
    let mut paths: Vec<PathBuf> = clusters(dir)?.into_iter().map(|c| c.kubeconfig).collect();
    // The lock file stays: it marks the folder as a sandbox's.
    paths.extend([files::KUBECONFIG, files::READY].map(|f| dir.join(f)));
    for path in paths {
        match std::fs::remove_file(&path) {
            Ok(()) => removed.push(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", path.display())),
        }
    }
    if removed.is_empty() {
        writeln!(out, "nothing to reset in {}", dir.display())?;
    }
    for path in removed {
        writeln!(out, "removed {}", path.display())?;
    }
    Ok(0)
}
