//! What every controller process does the same way: its logs, its listeners and its stop
//! signal.

/// What is logged unless `RUST_LOG` says otherwise: `info`, but not kube-rs' warning at every
/// TLS handshake with a kubeconfig that sets `insecure-skip-tls-verify` (the user's choice,
/// which kubectl does not remark on either): a plugin command printed it ~200 times.
pub const DEFAULT_LOG_FILTER: &str = "info,kube_client::client::tls=error";

/// The `RUST_LOG` filter, else [`DEFAULT_LOG_FILTER`].
pub fn log_filter() -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER))
}

/// Logs of a controller process on stderr, as JSON lines when `json`, filtered by
/// [`log_filter`]. The agent and the manager start the same way.
pub fn init_logs(json: bool) {
    let filter = log_filter();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        logs.json().init();
    } else {
        logs.init();
    }
}

/// Turns transparent huge pages off for this process. mimalloc gives freed memory back to
/// the kernel and takes it again as it goes; in 2 MiB pages, every such reuse faults in and
/// clears a whole huge page: in the 300-cluster fleet bench that was a sixth of the sandbox's
/// CPU and a tenth of the manager's (the convergence 14% slower). Called first in `main`;
/// where the kernel has no such switch, nothing changes.
pub fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(error) = nix::sys::prctl::set_thp_disable(true) {
        tracing::debug!(%error, "transparent huge pages stay on");
    }
}

/// An address a process could not listen on.
#[derive(Debug, thiserror::Error)]
#[error("listening on {addr}: {source}")]
pub struct ListenError {
    /// The address.
    pub addr: std::net::SocketAddr,
    /// Why.
    pub source: std::io::Error,
}

/// A TCP listener on `addr` for a process's endpoints.
pub async fn listen(addr: std::net::SocketAddr) -> Result<tokio::net::TcpListener, ListenError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ListenError { addr, source })
}

/// Completes on SIGINT or SIGTERM (what Kubernetes sends a stopping pod).
pub async fn termination() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot watch for SIGTERM; only SIGINT stops the process");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// Whether a request that failed with `error` may go through when tried again: the API
/// server failed (5xx) or throttled (429), or the connection broke. A refusal (any other 4xx)
/// or a request that cannot be made stays as it is.
pub fn transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code >= 500 || status.code == 429,
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

/// Runs `attempt` until it succeeds or fails for good ([`transient`] says), waiting between
/// tries from half a second up to 30 s and logging each failure with `what`: how a
/// controller does what it needs at start while its API server is briefly away.
pub async fn patiently<T, E, F, Fut>(
    what: &str,
    transient: impl Fn(&E) -> bool,
    mut attempt: F,
) -> Result<T, E>
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut pause = std::time::Duration::from_millis(500);
    loop {
        match attempt().await {
            Err(error) if transient(&error) => {
                tracing::warn!(%error, "{what}; trying again in {pause:?}");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_secs(30));
            }
            other => return other,
        }
    }
}

/// Parses a duration as Go writes them: `300ms`, `90s`, `5m`, `1h`, or several together
/// such as `1m30s` (a bare number is seconds), as the binaries' flags take durations.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    use std::time::Duration;
    let not = || format!("{text:?} is not a duration such as 90s, 5m or 1m30s");
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let seconds: u64 = text.parse().map_err(|_| not())?;
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let number: u64 = rest[..digits].parse().map_err(|_| not())?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let part = match &rest[..unit] {
            "ms" => Some(Duration::from_millis(number)),
            "s" => Some(Duration::from_secs(number)),
            "m" => number.checked_mul(60).map(Duration::from_secs),
            "h" => number.checked_mul(3600).map(Duration::from_secs),
            _ => return Err(format!("{text:?}: the units are ms, s, m and h")),
        };
        rest = &rest[unit..];
        total = part
            .and_then(|part| total.checked_add(part))
            .ok_or_else(|| format!("{text:?} is too long a duration"))?;
    }
    if text.is_empty() {
        return Err(not());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_read_as_kubectl_writes_them() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(
            parse_duration("1h2m3s4ms"),
            Ok(Duration::from_millis(3_723_004))
        );
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("5 minutes").is_err());
        assert!(parse_duration("").is_err());
        let huge = format!("{}h", u64::MAX / 60);
        assert_eq!(
            parse_duration(&huge),
            Err(format!("{huge:?} is too long a duration"))
        );
    }
}
