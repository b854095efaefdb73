//! A TLS listener serves axum to clients that trust its CA, refuses the others, and presents
//! a replaced certificate from the next handshake on.
#![allow(clippy::unwrap_used)] // test code

use rustls_pki_types::ServerName;
use std::time::Duration;
use sveltos_events_tls::{Authority, CertSlot, TlsListener, client_config, server_config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const DAY: Duration = Duration::from_secs(86_400);

fn names() -> Vec<String> {
    vec!["localhost".into(), "127.0.0.1".into()]
}

async fn serve(slot: CertSlot) -> std::net::SocketAddr {
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let listener = TlsListener::new(tcp, server_config(slot).unwrap()).unwrap();
    let addr = axum::serve::Listener::local_addr(&listener).unwrap();
    let app = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// GET /healthz over TLS trusting `ca`, connecting by `host` (an IP address or a name).
async fn get(addr: std::net::SocketAddr, ca: &Authority, host: &str) -> Result<String, String> {
    let config = client_config(ca.cert_pem()).unwrap();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from(host.to_owned()).unwrap();
    let mut tls = TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    tls.write_all(
        format!("GET /healthz HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    tls.read_to_string(&mut answer)
        .await
        .map_err(|e| e.to_string())?;
    Ok(answer)
}

#[tokio::test]
async fn serves_clients_that_trust_the_ca_by_ip_and_by_name() {
    let ca = Authority::generate("test CA", DAY).unwrap();
    let cert = ca.issue_server(&names(), DAY).unwrap();
    let addr = serve(CertSlot::new(&cert.cert_pem, &cert.key_pem).unwrap()).await;
    for host in ["127.0.0.1", "localhost"] {
        let answer = get(addr, &ca, host).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("ok"), "{answer}");
    }
}

#[tokio::test]
async fn refuses_a_name_the_certificate_does_not_carry_and_another_ca() {
    let ca = Authority::generate("test CA", DAY).unwrap();
    let cert = ca.issue_server(&names(), DAY).unwrap();
    let addr = serve(CertSlot::new(&cert.cert_pem, &cert.key_pem).unwrap()).await;
    let wrong_name = get(addr, &ca, "example.com").await.unwrap_err();
    assert!(wrong_name.contains("not valid for name"), "{wrong_name}");
    let stranger = Authority::generate("other CA", DAY).unwrap();
    let unknown = get(addr, &stranger, "127.0.0.1").await.unwrap_err();
    assert!(
        unknown.contains("UnknownIssuer") || unknown.contains("unknown issuer"),
        "{unknown}"
    );
}

#[tokio::test]
async fn a_replaced_certificate_is_presented_from_the_next_handshake() {
    let old = Authority::generate("old CA", DAY).unwrap();
    let cert = old.issue_server(&names(), DAY).unwrap();
    let slot = CertSlot::new(&cert.cert_pem, &cert.key_pem).unwrap();
    let addr = serve(slot.clone()).await;
    assert!(get(addr, &old, "127.0.0.1").await.is_ok());

    let new = Authority::generate("new CA", DAY).unwrap();
    let cert = new.issue_server(&names(), DAY).unwrap();
    slot.replace(&cert.cert_pem, &cert.key_pem).unwrap();
    assert!(get(addr, &new, "127.0.0.1").await.is_ok());
    assert!(get(addr, &old, "127.0.0.1").await.is_err());
}

#[tokio::test]
async fn a_ca_read_back_from_its_pem_issues_certificates_that_chain_to_it() {
    let ca = Authority::generate("kept CA", DAY).unwrap();
    let again =
        Authority::from_pem("kept CA", ca.cert_pem(), &ca.key_pem(), ca.not_after()).unwrap();
    assert_eq!(again.cert_der(), ca.cert_der());
    let cert = again.issue_server(&names(), DAY).unwrap();
    let addr = serve(CertSlot::new(&cert.cert_pem, &cert.key_pem).unwrap()).await;
    assert!(get(addr, &ca, "127.0.0.1").await.is_ok());
}

#[test]
fn bad_pem_is_an_error_not_a_panic() {
    let err = CertSlot::new("not a certificate", "nor a key").unwrap_err();
    assert!(err.to_string().contains("certificate"), "{err}");
    let ca = Authority::generate("CA", DAY).unwrap();
    let cert = ca.issue_server(&names(), DAY).unwrap();
    let err = CertSlot::new(
        &cert.cert_pem,
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .unwrap_err();
    assert!(!err.to_string().is_empty());
    assert!(Authority::from_pem("CA", "junk", &ca.key_pem(), ca.not_after()).is_err());
}
