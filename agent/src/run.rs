//! The whole agent process as a library call: its endpoints and the agent in hub or spoke
//! mode. The binary parses flags into [`Options`]; the plugin's sandbox calls the same
//! [`run`].

use std::future::Future;
use std::net::SocketAddr;

use kube::Client;

/// What the process runs.
pub struct Options {
    /// The cluster the agent runs in: the management cluster in hub mode, the managed cluster
    /// in spoke mode.
    pub client: Client,
    /// Where the agent runs.
    pub mode: Mode,
    /// Address of /healthz, /readyz and /metrics; none when embedded.
    pub http_addr: Option<SocketAddr>,
}

/// Where the agent runs.
pub enum Mode {
    /// In the management cluster, serving every registered cluster (only the Cluster API
    /// clusters carrying `capi_onboard_annotation`, when given).
    Hub {
        /// See [`Mode::Hub`].
        capi_onboard_annotation: Option<String>,
    },
    /// Inside one managed cluster, named `cluster_name` in logs.
    Spoke {
        /// See [`Mode::Spoke`].
        cluster_name: String,
    },
}

/// Why the process stopped before it was asked to.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An address could not be listened on.
    #[error(transparent)]
    Listen(#[from] clusters::process::ListenError),
    /// The endpoints stopped.
    #[error("serving /healthz, /readyz and /metrics: {0}")]
    Http(std::io::Error),
}

/// Runs the agent until `shutdown` completes (`Ok`) or its endpoints fail (`Err`).
pub async fn run(options: Options, shutdown: impl Future<Output = ()>) -> Result<(), RunError> {
    let Options {
        client,
        mode,
        http_addr,
    } = options;
    let http = async {
        let Some(addr) = http_addr else {
            return std::future::pending().await;
        };
        let listener = clusters::process::listen(addr).await?;
        axum::serve(listener, crate::observe::router())
            .await
            .map_err(RunError::Http)
    };
    let agent = async {
        match mode {
            Mode::Hub {
                capi_onboard_annotation,
            } => {
                let capi = clusters::capi::watch(client.clone(), capi_onboard_annotation);
                crate::hub::run(client, capi, shutdown).await;
            }
            Mode::Spoke { cluster_name } => crate::spoke::run(client, cluster_name, shutdown).await,
        }
    };
    tokio::select! {
        () = agent => Ok(()),
        result = http => result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_address_in_use_stops_the_agent_in_words_and_shutdown_stops_it_quietly() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let client = || {
            let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
            Client::try_from(config).unwrap()
        };
        let spoke = || Mode::Spoke {
            cluster_name: "c".into(),
        };
        let options = Options {
            client: client(),
            mode: spoke(),
            http_addr: Some(addr),
        };
        let error = run(options, std::future::pending()).await.unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("listening on {addr}: ")),
            "{error}"
        );
        let options = Options {
            client: client(),
            mode: spoke(),
            http_addr: None,
        };
        assert!(run(options, std::future::ready(())).await.is_ok());
    }
}
