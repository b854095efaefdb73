//! Several virtual clusters served on loopback ports, with kubeconfigs and clients.

use crate::error::{Error, Result};
use crate::store::Store;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What to start.
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// Directory receiving `<name>.kubeconfig` files (none: no files written).
    pub dir: Option<PathBuf>,
    /// Number of managed clusters (`cluster-1`...), besides the management cluster `mgmt`.
    pub managed_clusters: usize,
    /// Serve plain HTTP instead of HTTPS (no real API server does; only for tools that
    /// cannot speak TLS).
    pub plain_http: bool,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            dir: None,
            managed_clusters: 2,
            plain_http: false,
        }
    }
}

/// How long the sandbox's CA and serving certificate are valid.
const CERT_VALIDITY: Duration = Duration::from_secs(365 * 86_400);

/// The names the serving certificate carries: every cluster listens on loopback.
const SERVING_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// What a client needs to trust the sandbox's HTTPS servers: its CA certificate.
#[derive(Debug)]
pub struct Trust {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    ca_der: Vec<u8>,
}

impl Trust {
    /// A fresh CA and the serving certificate it signs for [`SERVING_NAMES`].
    fn generate() -> Result<(Arc<Trust>, Arc<tls::ServerConfig>)> {
        let tls_error = |e: tls::Error| Error::Internal(format!("sandbox TLS: {e}"));
        let ca = tls::Authority::generate("sveltos-events-sandbox-ca", CERT_VALIDITY)
            .map_err(tls_error)?;
        let names: Vec<String> = SERVING_NAMES.iter().map(|n| (*n).to_owned()).collect();
        let serving = ca.issue_server(&names, CERT_VALIDITY).map_err(tls_error)?;
        let slot = tls::CertSlot::new(&serving.cert_pem, &serving.key_pem).map_err(tls_error)?;
        let config = tls::server_config(slot).map_err(tls_error)?;
        let trust = Trust {
            ca_pem: ca.cert_pem().to_owned(),
            ca_der: ca.cert_der().to_vec(),
        };
        Ok((Arc::new(trust), config))
    }
}

/// One running virtual cluster.
#[derive(Debug, Clone)]
pub struct ClusterHandle {
    /// Cluster name (`mgmt`, `cluster-1`...).
    pub name: String,
    /// Its storage.
    pub store: Arc<Store>,
    /// Loopback address it listens on.
    pub addr: SocketAddr,
    /// Path of its kubeconfig, when a directory was given.
    pub kubeconfig: Option<PathBuf>,
    /// The CA its HTTPS server's certificate chains to (none: plain HTTP).
    pub trust: Option<Arc<Trust>>,
}

impl ClusterHandle {
    /// The server URL (`https://127.0.0.1:<port>`, or `http://` when serving plain HTTP).
    pub fn url(&self) -> String {
        let scheme = if self.trust.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// A `kube::Client` talking to this cluster as its administrator, verifying its
    /// certificate as any client of a real cluster does.
    pub fn client(&self) -> Result<kube::Client> {
        kube::Client::try_from(self.config()?)
            .map_err(|e| Error::Internal(format!("kube client: {e}")))
    }

    /// The client configuration of [`ClusterHandle::client`].
    pub fn config(&self) -> Result<kube::Config> {
        let uri = self
            .url()
            .parse()
            .map_err(|e| Error::Internal(format!("bad cluster url: {e}")))?;
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".into();
        config.root_cert = self.trust.as_ref().map(|t| vec![t.ca_der.clone()]);
        config.auth_info.token = Some(crate::auth::ADMIN_TOKEN.to_owned().into());
        Ok(config)
    }

    /// A kubeconfig document for this cluster (with the CA's certificate when it serves
    /// HTTPS).
    pub fn kubeconfig_yaml(&self) -> String {
        use base64::Engine as _;
        let n = &self.name;
        let ca = match &self.trust {
            Some(trust) => format!(
                "    certificate-authority-data: {}\n",
                base64::engine::general_purpose::STANDARD.encode(&trust.ca_pem)
            ),
            None => String::new(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {n}\n  cluster:\n{ca}    server: {url}\ncontexts:\n- name: {n}\n  context:\n    cluster: {n}\n    user: {n}-admin\n    namespace: default\ncurrent-context: {n}\nusers:\n- name: {n}-admin\n  user:\n    token: {token}\n",
            url = self.url(),
            token = crate::auth::ADMIN_TOKEN,
        )
    }
}

/// Serves `app` on `listener` until `stop` turns true (or its sender is dropped).
async fn serve<L>(listener: L, app: axum::Router, mut stop: watch::Receiver<bool>)
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
        let _ = stop.wait_for(|s| *s).await;
    });
    if let Err(e) = serve.await {
        tracing::error!(error = %e, "sandbox server failed");
    }
}

/// A running sandbox: the management cluster and the managed clusters.
#[derive(Debug)]
pub struct Sandbox {
    clusters: Vec<ClusterHandle>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Sandbox {
    /// Start `mgmt` and the managed clusters and write their kubeconfigs (a stale `READY` is
    /// removed; the caller writes it once everything it runs on top is up).
    pub async fn start(opts: SandboxOptions) -> Result<Sandbox> {
        let mut names = vec!["mgmt".to_owned()];
        names.extend((1..=opts.managed_clusters).map(|i| format!("cluster-{i}")));
        Self::start_named(&names, opts.dir.as_deref(), opts.plain_http).await
    }

    /// Start clusters with the given names, serving HTTPS unless `plain_http`.
    pub async fn start_named(
        names: &[String],
        dir: Option<&Path>,
        plain_http: bool,
    ) -> Result<Sandbox> {
        let tls = if plain_http {
            None
        } else {
            Some(Trust::generate()?)
        };
        let (shutdown, rx) = watch::channel(false);
        let mut clusters = Vec::new();
        let mut tasks = Vec::new();
        if let Some(d) = dir {
            std::fs::create_dir_all(d)?;
            let ready = d.join("READY");
            if ready.exists() {
                std::fs::remove_file(ready)?;
            }
        }
        for name in names {
            let store = Arc::new(Store::new());
            crate::auth::bootstrap::install(&store);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            let app = crate::http::router(store.clone());
            let stop = rx.clone();
            tasks.push(match &tls {
                Some((_, config)) => {
                    let listener = tls::TlsListener::new(listener, config.clone())
                        .map_err(|e| Error::Internal(format!("sandbox TLS: {e}")))?;
                    tokio::spawn(serve(listener, app, stop))
                }
                None => {
                    // As kube-apiserver (Go sets TCP_NODELAY on every connection): without it,
                    // a watch event written right after another waits for the client's
                    // delayed ACK (~40 ms). The TLS listener does the same.
                    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                        if let Err(error) = tcp.set_nodelay(true) {
                            tracing::warn!(%error, "cannot set TCP_NODELAY");
                        }
                    });
                    tokio::spawn(serve(listener, app, stop))
                }
            });
            let root_ca = tls
                .as_ref()
                .map(|(trust, _)| trust.ca_pem.clone())
                .unwrap_or_default();
            tasks.push(tokio::spawn(crate::controllers::run(
                store.clone(),
                root_ca,
                rx.clone(),
            )));
            let mut handle = ClusterHandle {
                name: name.clone(),
                store,
                addr,
                kubeconfig: None,
                trust: tls.as_ref().map(|(trust, _)| trust.clone()),
            };
            if let Some(d) = dir {
                let path = d.join(format!("{name}.kubeconfig"));
                std::fs::write(&path, handle.kubeconfig_yaml())?;
                handle.kubeconfig = Some(path);
            }
            tracing::info!(cluster = %name, url = %handle.url(), "cluster started");
            clusters.push(handle);
        }
        Ok(Sandbox {
            clusters,
            shutdown,
            tasks,
        })
    }

    /// Every cluster, management first.
    pub fn clusters(&self) -> &[ClusterHandle] {
        &self.clusters
    }

    /// A cluster by name.
    pub fn cluster(&self, name: &str) -> Option<&ClusterHandle> {
        self.clusters.iter().find(|c| c.name == name)
    }

    /// Stop every server and controller, waiting for them to finish.
    pub async fn shutdown(self) {
        // Receivers may already be gone; that is fine.
        let _ = self.shutdown.send(true);
        for mut t in self.tasks {
            // Open watches keep connections alive; give them a moment, then cut them.
            if tokio::time::timeout(std::time::Duration::from_secs(2), &mut t)
                .await
                .is_err()
            {
                t.abort();
            }
        }
    }
}
