//! Several virtual clusters served on loopback ports, with kubeconfigs and clients.

use crate::error::{Error, Result};
use crate::store::Store;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What to start.
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// Directory receiving `<name>.kubeconfig` files (none: no files written).
    pub dir: Option<PathBuf>,
    /// Number of managed clusters (`cluster-1`...), besides the management cluster `mgmt`.
    pub managed_clusters: usize,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            dir: None,
            managed_clusters: 2,
        }
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
}

impl ClusterHandle {
    /// The server URL (`http://127.0.0.1:<port>`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A `kube::Client` talking to this cluster over HTTP.
    pub fn client(&self) -> Result<kube::Client> {
        let uri = self
            .url()
            .parse()
            .map_err(|e| Error::Internal(format!("bad cluster url: {e}")))?;
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".into();
        kube::Client::try_from(config).map_err(|e| Error::Internal(format!("kube client: {e}")))
    }

    /// A kubeconfig document for this cluster.
    pub fn kubeconfig_yaml(&self) -> String {
        let n = &self.name;
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {n}\n  cluster:\n    server: {url}\ncontexts:\n- name: {n}\n  context:\n    cluster: {n}\n    user: {n}-admin\n    namespace: default\ncurrent-context: {n}\nusers:\n- name: {n}-admin\n  user:\n    token: sandbox\n",
            url = self.url()
        )
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
        Self::start_named(&names, opts.dir.as_deref()).await
    }

    /// Start clusters with the given names.
    pub async fn start_named(names: &[String], dir: Option<&Path>) -> Result<Sandbox> {
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
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            // As kube-apiserver (Go sets TCP_NODELAY on every connection): without it, a watch
            // event written right after another waits for the client's delayed ACK (~40 ms).
            let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                if let Err(error) = tcp.set_nodelay(true) {
                    tracing::warn!(%error, "cannot set TCP_NODELAY");
                }
            });
            let app = crate::http::router(store.clone());
            let mut stop = rx.clone();
            tasks.push(tokio::spawn(async move {
                let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                    // Either a shutdown signal or a dropped sender ends the server.
                    let _ = stop.wait_for(|s| *s).await;
                });
                if let Err(e) = serve.await {
                    tracing::error!(error = %e, "sandbox server failed");
                }
            }));
            tasks.push(tokio::spawn(crate::controllers::run(
                store.clone(),
                rx.clone(),
            )));
            let mut handle = ClusterHandle {
                name: name.clone(),
                store,
                addr,
                kubeconfig: None,
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
