//! TLS for the servers of sveltos-events: a small certificate authority (the sandbox's, and
//! the conversion webhook's, whose CA bundle goes into the CRDs) and an HTTPS listener for
//! axum whose certificate can be replaced while it serves.
//!
//! Clients need no code here: kube's rustls stack verifies these certificates from the CA
//! data of a kubeconfig or a webhook's `caBundle`, as it would a real cluster's.

mod authority;
mod listener;

pub use authority::{Authority, Issued};
pub use listener::{CertSlot, TlsListener, client_config, server_config};
/// The server configuration [`server_config`] makes.
pub use rustls::ServerConfig;

/// Errors of certificate generation and TLS set-up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// rcgen could not make or sign a certificate.
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// A PEM document held no certificate or no private key, or was malformed.
    #[error("reading PEM ({what}): {source}")]
    Pem {
        /// What was being read.
        what: &'static str,
        /// The parser's complaint.
        source: rustls_pki_types::pem::Error,
    },
    /// rustls refused the certificate or key.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// Binding or reading the listening socket failed.
    #[error("listening: {0}")]
    Io(#[from] std::io::Error),
}

/// Result of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
