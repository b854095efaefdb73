//! An HTTPS listener for axum, and the certificate it presents (replaceable while serving).

use crate::{Error, Result};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A client that opens a connection and says nothing is dropped after this long.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The certificates of a PEM document, in order.
pub(crate) fn certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Error::Pem {
            what: "certificate",
            source,
        })?;
    if certs.is_empty() {
        return Err(Error::Pem {
            what: "certificate",
            source: rustls_pki_types::pem::Error::NoItemsFound,
        });
    }
    Ok(certs)
}

/// The certificate a server presents, which its owner may replace (rotation) while
/// connections keep coming: each new handshake takes the current one.
#[derive(Debug, Clone)]
pub struct CertSlot(Arc<RwLock<Arc<CertifiedKey>>>);

impl CertSlot {
    /// A slot holding `chain_pem` (leaf first) and its `key_pem`.
    pub fn new(chain_pem: &str, key_pem: &str) -> Result<Self> {
        Ok(CertSlot(Arc::new(RwLock::new(certified_key(
            chain_pem, key_pem,
        )?))))
    }

    /// Presents `chain_pem` and `key_pem` from the next handshake on.
    pub fn replace(&self, chain_pem: &str, key_pem: &str) -> Result<()> {
        let key = certified_key(chain_pem, key_pem)?;
        match self.0.write() {
            Ok(mut current) => *current = key,
            Err(poisoned) => *poisoned.into_inner() = key,
        }
        Ok(())
    }

    fn current(&self) -> Arc<CertifiedKey> {
        match self.0.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

impl ResolvesServerCert for CertSlot {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn certified_key(chain_pem: &str, key_pem: &str) -> Result<Arc<CertifiedKey>> {
    let chain = certificates(chain_pem)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|source| Error::Pem {
        what: "private key",
        source,
    })?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)?;
    Ok(Arc::new(CertifiedKey::new(chain, signer)))
}

/// A rustls server configuration presenting `slot`'s certificate, HTTP/1.1 only (as the
/// servers here speak), with ring as the crypto provider.
pub fn server_config(slot: CertSlot) -> Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(slot));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A rustls client configuration trusting only the CA certificates in `roots_pem` (a
/// kubeconfig's `certificate-authority-data` or a webhook's `caBundle`): what a client of
/// these servers needs, e.g. to probe the conversion webhook as an API server does.
pub fn client_config(roots_pem: &str) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(roots_pem)? {
        roots.add(cert)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// A listener for `axum::serve` that hands out TLS connections. Handshakes run in their own
/// tasks, so a slow or silent client never holds up the others; a failed handshake is logged
/// and dropped. `TCP_NODELAY` is set on every connection, as Go servers do: without it an
/// event written right after another waits for the client's delayed ACK (~40 ms).
#[derive(Debug)]
pub struct TlsListener {
    incoming: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local_addr: SocketAddr,
    acceptor: JoinHandle<()>,
}

impl TlsListener {
    /// Serves TLS with `config` on the connections `tcp` accepts.
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> Result<Self> {
        let local_addr = tcp.local_addr()?;
        let (tx, incoming) = mpsc::channel(64);
        let acceptor = tokio::spawn(accept_loop(tcp, TlsAcceptor::from(config), tx));
        Ok(TlsListener {
            incoming,
            local_addr,
            acceptor,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

async fn accept_loop(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    tx: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (stream, peer) = match tcp.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // As axum does for plain TCP: out of file descriptors and the like pass.
                tracing::warn!(%error, "accepting a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(%error, "cannot set TCP_NODELAY");
        }
        if tx.is_closed() {
            return;
        }
        let acceptor = acceptor.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    // The server is gone when nobody receives: the connection just closes.
                    let _ = tx.send((tls, peer)).await;
                }
                Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(connection) => connection,
            // The accept loop only ends once this listener is dropped, so this never comes;
            // waiting forever is what a listener with no more connections does.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local_addr)
    }
}
