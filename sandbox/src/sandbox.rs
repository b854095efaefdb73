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
    /// Directory receiving `<name>.kubeconfig` files, the `kubeconfig` with every cluster and,
    /// when `durable`, the clusters' state (none: no files written).
    pub dir: Option<PathBuf>,
    /// Number of managed clusters (`cluster-1`...), besides the management cluster `mgmt`.
    pub managed_clusters: usize,
    /// Serve plain HTTP instead of HTTPS (no real API server does; only for tools that
    /// cannot speak TLS).
    pub plain_http: bool,
    /// Keep every cluster's objects in `dir/state` and load them at the next start (same
    /// ports when free, same CA, same token signing keys); without it they live in memory.
    pub durable: bool,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            dir: None,
            managed_clusters: 2,
            plain_http: false,
            durable: false,
        }
    }
}

/// How long the sandbox's CA and serving certificate are valid.
const CERT_VALIDITY: Duration = Duration::from_secs(365 * 86_400);

/// The names the serving certificate carries: every cluster listens on loopback.
const SERVING_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The common name of the sandbox's CA.
const CA_NAME: &str = "sveltos-events-sandbox-ca";

/// What a client needs to trust the sandbox's HTTPS servers: its CA certificate.
#[derive(Debug)]
pub struct Trust {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    ca_der: Vec<u8>,
}

/// A CA as kept in `state/ca.json`.
#[derive(serde::Serialize, serde::Deserialize)]
struct KeptAuthority {
    cert: String,
    key: String,
    /// End of validity, seconds since the Unix epoch.
    not_after: u64,
}

impl Trust {
    /// The CA kept at `kept` (made and kept there the first time; a new one when none is
    /// kept or the kept one expires within a day), and a serving certificate it signs for
    /// [`SERVING_NAMES`].
    fn new(kept: Option<&Path>) -> Result<(Arc<Trust>, Arc<tls::ServerConfig>)> {
        let tls_error = |e: tls::Error| Error::Internal(format!("sandbox TLS: {e}"));
        let ca = match kept.map(read_authority).transpose()?.flatten() {
            Some(ca) => ca,
            None => {
                let ca = tls::Authority::generate(CA_NAME, CERT_VALIDITY).map_err(tls_error)?;
                if let Some(path) = kept {
                    write_authority(path, &ca)?;
                }
                ca
            }
        };
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

/// The CA kept at `path`, if any and valid for a day more.
fn read_authority(path: &Path) -> Result<Option<tls::Authority>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::file("read", path)(e)),
    };
    let damaged = |why: String| {
        Error::Internal(format!(
            "{} is damaged ({why}); delete it to make a new CA (kubeconfigs copied elsewhere \
             must then be taken again)",
            path.display()
        ))
    };
    let kept: KeptAuthority = serde_json::from_str(&text).map_err(|e| damaged(e.to_string()))?;
    let not_after = std::time::UNIX_EPOCH + Duration::from_secs(kept.not_after);
    if not_after < std::time::SystemTime::now() + Duration::from_secs(86_400) {
        tracing::warn!(path = %path.display(), "the sandbox's CA expires; making a new one");
        return Ok(None);
    }
    tls::Authority::from_pem(CA_NAME, &kept.cert, &kept.key, not_after)
        .map(Some)
        .map_err(|e| damaged(e.to_string()))
}

fn write_authority(path: &Path, ca: &tls::Authority) -> Result<()> {
    let not_after = ca
        .not_after()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let kept = KeptAuthority {
        cert: ca.cert_pem().to_owned(),
        key: ca.key_pem(),
        not_after,
    };
    let text = serde_json::to_string_pretty(&kept)
        .map_err(|e| Error::Internal(format!("encoding the CA: {e}")))?;
    write_private(path, text.as_bytes())
}

/// Writes `contents` to `path` whole (through `<path>.partial` renamed into place, both
/// synced), readable by the owner alone.
pub fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let partial = PathBuf::from(format!("{}.partial", path.display()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .map_err(Error::file("create", &partial))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(Error::file("write", &partial))?;
    std::fs::rename(&partial, path).map_err(Error::file("write", path))?;
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => crate::journal::sync_dir(parent).map_err(Error::file("sync", parent)),
        None => Ok(()),
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
        let [c, x, u] = self.kubeconfig_entries();
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n{c}contexts:\n{x}current-context: {}\nusers:\n{u}",
            self.name
        )
    }

    /// This cluster's `clusters`, `contexts` and `users` list items, all named after it.
    fn kubeconfig_entries(&self) -> [String; 3] {
        use base64::Engine as _;
        let n = &self.name;
        let ca = match &self.trust {
            Some(trust) => format!(
                "    certificate-authority-data: {}\n",
                base64::engine::general_purpose::STANDARD.encode(&trust.ca_pem)
            ),
            None => String::new(),
        };
        [
            format!("- name: {n}\n  cluster:\n{ca}    server: {}\n", self.url()),
            format!(
                "- name: {n}\n  context:\n    cluster: {n}\n    user: {n}-admin\n    namespace: default\n"
            ),
            format!(
                "- name: {n}-admin\n  user:\n    token: {}\n",
                crate::auth::ADMIN_TOKEN
            ),
        ]
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
    /// The lock on the folder, held while the sandbox runs.
    _lock: Option<Lock>,
}

/// File names inside the sandbox's folder.
pub mod files {
    /// Written once everything is up; removed on exit.
    pub const READY: &str = "READY";
    /// Locked by the running sandbox; holds its process id.
    pub const LOCK: &str = "lock";
    /// Every cluster as a context (`mgmt`, `cluster-1`...), current context `mgmt`.
    pub const KUBECONFIG: &str = "kubeconfig";
    /// The clusters' stored state, the CA and the listening addresses.
    pub const STATE: &str = "state";
}

/// An exclusive lock on a sandbox folder (released when dropped, or when the process dies).
#[derive(Debug)]
pub struct Lock(#[allow(dead_code)] std::fs::File);

impl Lock {
    /// Locks `dir` for this process, writing its id in the lock file; refused, naming the
    /// holder, when another sandbox runs there.
    pub fn acquire(dir: &Path) -> Result<Lock> {
        use std::io::Write as _;
        let path = dir.join(files::LOCK);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(Error::file("create", &path))?;
        // `holder` (a `status` or `stop` looking) takes the lock shared for an instant.
        let mut attempts = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if attempts < 10 => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(Error::Locked {
                        dir: dir.to_owned(),
                        pid: holder(dir).unwrap_or_else(|| "unknown".into()),
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(Error::file("lock", &path)(e));
                }
            }
        }
        file.set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(Error::file("write", &path))?;
        Ok(Lock(file))
    }
}

/// The process id a sandbox folder's lock file names, if a running sandbox holds the lock.
pub fn holder(dir: &Path) -> Option<String> {
    let path = dir.join(files::LOCK);
    let file = std::fs::File::open(&path).ok()?;
    match file.try_lock_shared() {
        Err(std::fs::TryLockError::WouldBlock) => {
            Some(std::fs::read_to_string(&path).ok()?.trim().to_owned())
        }
        Ok(()) | Err(std::fs::TryLockError::Error(_)) => None,
    }
}

impl Sandbox {
    /// Start `mgmt` and the managed clusters and write their kubeconfigs (a stale `READY` is
    /// removed; the caller writes it once everything it runs on top is up).
    pub async fn start(opts: SandboxOptions) -> Result<Sandbox> {
        let mut names = vec!["mgmt".to_owned()];
        names.extend((1..=opts.managed_clusters).map(|i| format!("cluster-{i}")));
        Self::start_with(&names, &opts).await
    }

    /// Start clusters with the given names, serving HTTPS unless `plain_http`.
    pub async fn start_named(
        names: &[String],
        dir: Option<&Path>,
        plain_http: bool,
    ) -> Result<Sandbox> {
        let opts = SandboxOptions {
            dir: dir.map(Path::to_owned),
            plain_http,
            ..SandboxOptions::default()
        };
        Self::start_with(names, &opts).await
    }

    async fn start_with(names: &[String], opts: &SandboxOptions) -> Result<Sandbox> {
        let dir = opts.dir.as_deref();
        let lock = match dir {
            Some(d) => {
                std::fs::create_dir_all(d).map_err(Error::file("create the folder", d))?;
                let kubeconfig = d.join(files::KUBECONFIG);
                if kubeconfig.exists() && !d.join(files::LOCK).exists() {
                    return Err(Error::Folder(format!(
                        "{} exists and {} is not a sandbox's folder (it has no lock file); \
                         choose another --dir",
                        kubeconfig.display(),
                        d.display()
                    )));
                }
                let lock = Lock::acquire(d)?;
                let ready = d.join(files::READY);
                if ready.exists() {
                    std::fs::remove_file(&ready).map_err(Error::file("remove", &ready))?;
                }
                Some(lock)
            }
            None => None,
        };
        let state = dir.filter(|_| opts.durable).map(|d| d.join(files::STATE));
        if let Some(state) = &state {
            warn_unserved(state, names);
            use std::os::unix::fs::DirBuilderExt as _;
            // It keeps the CA's key and the clusters' Secrets: the owner alone may look.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(state)
                .map_err(Error::file("create the folder", state))?;
        }
        let tls = if opts.plain_http {
            None
        } else {
            Some(Trust::new(
                state.as_deref().map(|s| s.join("ca.json")).as_deref(),
            )?)
        };
        let (shutdown, rx) = watch::channel(false);
        let mut clusters = Vec::new();
        let mut tasks = Vec::new();
        for name in names {
            let kept = state.as_ref().map(|s| s.join(name));
            let store = Arc::new(match &kept {
                Some(kept) => Store::open(kept)?,
                None => Store::new(),
            });
            crate::auth::bootstrap::install(&store);
            let listener = listen(name, kept.as_deref()).await?;
            let addr = listener
                .local_addr()
                .map_err(|e| Error::Internal(format!("the address of {name}'s listener: {e}")))?;
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
                write_private(&path, handle.kubeconfig_yaml().as_bytes())?;
                handle.kubeconfig = Some(path);
            }
            tracing::info!(cluster = %name, url = %handle.url(), "cluster started");
            clusters.push(handle);
        }
        if let Some(d) = dir {
            let path = d.join(files::KUBECONFIG);
            write_private(&path, kubeconfig(&clusters).as_bytes())?;
        }
        Ok(Sandbox {
            clusters,
            shutdown,
            tasks,
            _lock: lock,
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

    /// Stop every server and controller, waiting for them to finish, and write out what the
    /// clusters' journals still hold.
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
        for cluster in &self.clusters {
            cluster.store.close();
        }
    }
}

/// Tells of clusters whose state `state` keeps but that this start does not serve (started
/// earlier with more `--clusters`): kept on disk, unreachable, still registered in `mgmt`.
fn warn_unserved(state: &Path, names: &[String]) {
    let Ok(entries) = std::fs::read_dir(state) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() && !names.contains(&name) {
            tracing::warn!(
                cluster = %name,
                path = %entry.path().display(),
                "this cluster's state is kept but not served (fewer --clusters than before); \
                 start with more, or `sandbox reset` to forget it"
            );
        }
    }
}

/// A listener for cluster `name`: on the address it had last time when `kept` remembers one
/// and it is free (so kubeconfigs copied elsewhere keep working), else on a new port; the
/// address is remembered for next time.
async fn listen(name: &str, kept: Option<&Path>) -> Result<tokio::net::TcpListener> {
    let remembered = kept.map(|k| k.join("address"));
    let before = remembered
        .as_deref()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| text.trim().parse::<SocketAddr>().ok());
    if let Some(addr) = before {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(error) => tracing::warn!(
                cluster = name,
                %addr,
                %error,
                "the cluster's previous address is taken; it moves to a new port (kubeconfigs \
                 copied elsewhere must be taken again)"
            ),
        }
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| Error::Internal(format!("cannot listen on 127.0.0.1 for {name}: {e}")))?;
    if let Some(path) = remembered
        && let Ok(addr) = listener.local_addr()
    {
        write_private(&path, format!("{addr}\n").as_bytes())?;
    }
    Ok(listener)
}

/// One kubeconfig with every cluster as a context of its name, current context the first.
pub fn kubeconfig(clusters: &[ClusterHandle]) -> String {
    let mut entries = [String::new(), String::new(), String::new()];
    for cluster in clusters {
        let [c, x, u] = cluster.kubeconfig_entries();
        entries[0].push_str(&c);
        entries[1].push_str(&x);
        entries[2].push_str(&u);
    }
    let [c, x, u] = entries;
    let current = clusters.first().map_or("", |c| c.name.as_str());
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n{c}contexts:\n{x}current-context: {current}\nusers:\n{u}"
    )
}
