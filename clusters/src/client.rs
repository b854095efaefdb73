//! Kubernetes clients whose connections send each request at once. kube's own builder leaves
//! Nagle's algorithm on: a request whose last part is small then waits for the server's
//! delayed acknowledgement of the part before it (40 ms on Linux), which made one report
//! write in ten take 40 ms longer than the rest (p90 50 ms against p50 7 ms). This is kube's
//! stack, layer for layer, over a connector with TCP_NODELAY.

use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::retry::RetryPolicy;
use kube::client::{ClientBuilder, ConfigExt};
use kube::{Client, Config};
use tower::retry::RetryLayer;
use tower::{BoxError, ServiceBuilder};

/// A client for `config` whose connections set TCP_NODELAY. A config that goes through a proxy
/// or gets its credentials from an exec plugin is left to kube's own builder, which alone
/// knows how to speak to proxies and when an exec plugin's certificate expires.
pub fn client(config: Config) -> kube::Result<Client> {
    if config.proxy_url.is_some() || config.auth_info.exec.is_some() {
        return Client::try_from(config);
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let https = config.rustls_https_connector_with_connector(http)?;
    let mut connector = TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http_client =
        hyper_util::client::legacy::Builder::new(TokioExecutor::new()).build(connector);
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

    #[tokio::test]
    async fn requests_carry_the_configs_credentials_and_headers() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
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
