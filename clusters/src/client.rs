//! Kubernetes clients whose connections send each request at once and do not outstay their
//! use. kube's own builder leaves Nagle's algorithm on: a request whose last part is small
//! then waits for the server's delayed acknowledgement of the part before it (40 ms on
//! Linux), which made one report write in ten take 40 ms longer than the rest (p90 50 ms
//! against p50 7 ms). It also keeps idle connections for ever (hyper closes them only with a
//! timer) and gives each client a TLS session cache of 256 servers: the deployer holds a
//! client per cluster, and at 1,000 clusters those were ~60 MB of the manager's heap. This is
//! kube's stack, layer for layer, over a connector with TCP_NODELAY, a session cache of a few
//! servers (a client speaks to one), and idle connections closed after [`IDLE`].

use std::time::Duration;

use hyper_rustls::{FixedServerNameResolver, HttpsConnectorBuilder};
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::retry::RetryPolicy;
use kube::client::{ClientBuilder, ConfigExt, RustlsTlsError};
use kube::{Client, Config};
use rustls::client::Resumption;
use tower::retry::RetryLayer;
use tower::{BoxError, ServiceBuilder};

/// How long an idle connection is kept for the next request. Go's clients keep one 90 s;
/// a controller that writes to a cluster does so in bursts (a pass, a report), and an open
/// connection weighs ~45 KB (buffers, TLS state, its task).
pub const IDLE: Duration = Duration::from_secs(15);

/// TLS sessions a client keeps to resume: it speaks to one server (its cluster's).
const SESSIONS: usize = 4;

/// A client for `config` whose connections set TCP_NODELAY. A config that goes through a proxy
/// or gets its credentials from an exec plugin is left to kube's own builder, which alone
/// knows how to speak to proxies and when an exec plugin's certificate expires.
pub fn client(config: Config) -> kube::Result<Client> {
    client_idle(config, IDLE)
}

/// [`client`], its idle connections closed after `idle`.
fn client_idle(config: Config, idle: Duration) -> kube::Result<Client> {
    if config.proxy_url.is_some() || config.auth_info.exec.is_some() {
        return Client::try_from(config);
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let mut tls = config.rustls_client_config()?;
    tls.resumption = Resumption::in_memory_sessions(SESSIONS);
    let mut https = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = name
            .clone()
            .try_into()
            .map_err(|e| kube::Error::RustlsTls(RustlsTlsError::InvalidServerName(e)))?;
        https = https.with_server_name_resolver(FixedServerNameResolver::new(name));
    }
    let https = https.enable_http1().wrap_connector(http);
    let mut connector = TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http_client = hyper_util::client::legacy::Builder::new(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(idle)
        .build(connector);
    let retry = config
        .default_retry
        .then(|| RetryLayer::new(RetryPolicy::server_retry()));
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(http_client);
    Ok(ClientBuilder::new(service, config.default_namespace).build())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Answers one request for the version on `stream` (keeping the connection open).
    async fn answer_version(stream: &mut tokio::net::TcpStream) -> String {
        let mut head = Vec::new();
        let mut buffer = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let read = stream.read(&mut buffer).await.unwrap();
            assert!(read > 0, "the request ended early");
            head.extend_from_slice(&buffer[..read]);
        }
        let body = r#"{"major":"1","minor":"20","gitVersion":"v1.20.0","gitCommit":"","gitTreeState":"","buildDate":"","goVersion":"","compiler":"","platform":""}"#;
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(answer.as_bytes()).await.unwrap();
        String::from_utf8(head).unwrap().to_lowercase()
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_and_the_next_request_opens_another() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let idle = Duration::from_millis(50);
        let client = client_idle(Config::new(url.parse().unwrap()), idle).unwrap();
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            answer_version(&mut stream).await;
            // The client keeps the connection for the next request, then closes it.
            let mut rest = [0u8; 16];
            let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut rest));
            assert_eq!(
                read.await.expect("the idle connection was kept").unwrap(),
                0
            );
            let (mut stream, _) = listener.accept().await.unwrap();
            answer_version(&mut stream).await;
        });
        client.apiserver_version().await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        client.apiserver_version().await.unwrap();
        server.await.unwrap();
    }

    #[tokio::test]
    async fn requests_carry_the_configs_credentials_and_headers() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            answer_version(&mut stream).await
        });
        let mut config = Config::new(url.parse().unwrap());
        config.auth_info.token = Some("secret-token".to_owned().into());
        config.auth_info.impersonate = Some("someone".to_owned());
        let client = client(config).unwrap();
        let version = client.apiserver_version().await.unwrap();
        assert_eq!(version.git_version, "v1.20.0");
        let head = server.await.unwrap();
        assert!(head.starts_with("get /version "), "{head}");
        assert!(
            head.contains("authorization: bearer secret-token"),
            "{head}"
        );
        assert!(head.contains("impersonate-user: someone"), "{head}");
    }
}
