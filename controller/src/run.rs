//! The whole manager process as a library call: its endpoints, the conversion webhook, the
//! leader election, and the manager and the deployer on shared watches. The binary parses
//! flags into [`Options`]; the plugin's sandbox calls the same [`run`].

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use kube::Client;

use crate::deployer::DeployerError;
use crate::fleet::ClusterScope;
use crate::leader::Elector;
use crate::manager::ManagerError;
use crate::serve::Telemetry;
use crate::watches::Watches;
use crate::webhook::Webhook;

/// What the process runs.
pub struct Options {
    /// The management cluster.
    pub client: Client,
    /// Address of /healthz, /readyz, /metrics (and of /convert over plain HTTP); none when
    /// embedded.
    pub http_addr: Option<SocketAddr>,
    /// The conversion webhook over HTTPS: its address and how its certificates are kept.
    pub webhook: Option<(SocketAddr, Webhook)>,
    /// Leader election: the Lease's namespace and this replica's identity; none for a single
    /// replica.
    pub leader: Option<Leader>,
    /// The clusters this process handles (its shard).
    pub scope: ClusterScope,
    /// Handle only the Cluster API clusters carrying this annotation (all when none).
    pub capi_onboard_annotation: Option<String>,
    /// Leave deployment to Sveltos' addon-controller.
    pub no_deployer: bool,
}

/// A replica's place in leader election.
pub struct Leader {
    /// Namespace of the Lease.
    pub namespace: String,
    /// This replica's identity in the Lease.
    pub identity: String,
    /// How it leads: the Lease's duration, the renew deadline, the retry period.
    pub timing: crate::leader::Timing,
}

/// Why the process stopped before it was asked to.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An address could not be listened on.
    #[error(transparent)]
    Listen(#[from] clusters::process::ListenError),
    /// The HTTP endpoints stopped.
    #[error("the HTTP endpoints stopped: {0}")]
    Http(std::io::Error),
    /// The conversion webhook stopped.
    #[error("the conversion webhook stopped: {0}")]
    Webhook(#[from] crate::webhook::Error),
    /// The Lease's namespace could not be made.
    #[error("creating namespace {namespace} for the leader Lease: {source}")]
    Namespace {
        /// The namespace.
        namespace: String,
        /// Why.
        source: ManagerError,
    },
    /// The manager stopped.
    #[error("the manager stopped: {0}")]
    Manager(ManagerError),
    /// The deployer stopped.
    #[error("the deployer stopped: {0}")]
    Deployer(DeployerError),
    /// Another replica took the Lease.
    #[error("lost the leader Lease; stopping so that only one replica acts")]
    LostLease,
}

/// A part of the process on a task of its own, aborted when dropped: the manager and the
/// deployer then run side by side on the runtime's workers instead of taking turns on the
/// thread that polls the process's future.
struct Part<T>(tokio::task::JoinHandle<T>);

impl<T: Send + 'static> Part<T> {
    fn spawn(future: impl Future<Output = T> + Send + 'static) -> Self {
        Part(tokio::spawn(future))
    }
}

impl<T> Drop for Part<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> Future for Part<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match Pin::new(&mut self.0).poll(cx) {
            Poll::Ready(Ok(value)) => Poll::Ready(value),
            // A panic goes on up, as it did when the part ran inside this future.
            Poll::Ready(Err(error)) => match error.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // Cancelled: only `drop` aborts it, and then no one polls.
                Err(_) => Poll::Pending,
            },
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Runs the process until `shutdown` completes (`Ok`) or a part of it stops (`Err`).
pub async fn run(options: Options, shutdown: impl Future<Output = ()>) -> Result<(), RunError> {
    let Options {
        client,
        http_addr,
        webhook,
        leader,
        scope,
        capi_onboard_annotation,
        no_deployer,
    } = options;
    let telemetry = Telemetry::new();
    let http = async {
        let Some(addr) = http_addr else {
            return std::future::pending().await;
        };
        let router = crate::serve::router(telemetry.clone());
        axum::serve(clusters::process::listen(addr).await?, router)
            .await
            .map_err(RunError::Http)
    };
    let webhook = async {
        let Some((addr, webhook)) = webhook else {
            return std::future::pending().await;
        };
        let listener = clusters::process::listen(addr).await?;
        let router = crate::serve::webhook_router();
        Ok(webhook.serve(client.clone(), listener, router).await?)
    };
    // One leader per shard.
    let elector = leader.as_ref().map(|leader| {
        let lease = crate::leader::lease_name(&scope.shard);
        Elector::new(client.clone(), &leader.namespace, &lease, &leader.identity)
            .with_timing(leader.timing)
    });
    let lead = async {
        let mut since = std::time::Instant::now();
        if let (Some(elector), Some(leader)) = (&elector, &leader) {
            // The Lease lives in Sveltos' namespace, which may not exist yet.
            crate::manager::ensure_namespace(&client, &leader.namespace)
                .await
                .map_err(|source| RunError::Namespace {
                    namespace: leader.namespace.clone(),
                    source,
                })?;
            tracing::info!("waiting to become the leader");
            since = elector.acquire().await;
            tracing::info!("leading");
        }
        let capi = clusters::capi::watch(client.clone(), capi_onboard_annotation.clone());
        // One watch per kind for the manager and the deployer.
        let watches = Watches::start(&client, scope.clone(), capi);
        let manager = Part::spawn(crate::manager::run(
            client.clone(),
            watches.clone(),
            telemetry.clone(),
            std::future::pending(),
        ));
        let deployer = (!no_deployer).then(|| {
            Part::spawn(crate::deployer::run(
                client.clone(),
                watches,
                telemetry.clone(),
                std::future::pending(),
            ))
        });
        let deployer = async {
            match deployer {
                Some(deployer) => deployer.await.map_err(RunError::Deployer),
                None => std::future::pending().await,
            }
        };
        let held = async {
            match &elector {
                Some(elector) => elector.hold(since).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = manager => result.map_err(RunError::Manager),
            result = deployer => result,
            () = held => Err(RunError::LostLease),
        }
    };
    let stopped = tokio::select! {
        () = shutdown => Ok(()),
        result = http => result,
        result = webhook => result,
        result = lead => result,
    };
    // Whatever stopped this replica, it acts no more: a standby may take over at once.
    if let (Some(elector), Some(leader)) = (&elector, &leader) {
        let release = tokio::time::timeout(leader.timing.retry_period, elector.release());
        match release.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, "cannot give up the leader Lease; a standby takes over when it expires")
            }
            Err(_) => tracing::warn!(
                "giving up the leader Lease took too long; a standby takes over when it expires"
            ),
        }
    }
    stopped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_address_in_use_stops_the_process_in_words() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let options = Options {
            client: Client::try_from(config).unwrap(),
            http_addr: Some(addr),
            webhook: None,
            leader: None,
            scope: ClusterScope::default(),
            capi_onboard_annotation: None,
            no_deployer: true,
        };
        let error = run(options, std::future::pending()).await.unwrap_err();
        assert!(matches!(error, RunError::Listen(_)), "{error:?}");
        assert!(
            error
                .to_string()
                .starts_with(&format!("listening on {addr}: ")),
            "{error}"
        );
    }
}
