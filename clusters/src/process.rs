//! What every controller process does the same way: its logs, its listeners and its stop
//! signal.

/// Logs of a controller process on stderr, as JSON lines when `json`, filtered by `RUST_LOG`
/// (default `info`). The agent and the manager start the same way.
pub fn init_logs(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        logs.json().init();
    } else {
        logs.init();
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
