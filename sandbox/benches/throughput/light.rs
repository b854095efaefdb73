//! A light HTTPS client for measuring the sandbox rather than its client: requests are bytes
//! made before the clock starts, answers are read to the end but not parsed, and watch events
//! are counted by their line ends. kube-rs spends more CPU per request than the sandbox does
//! (typed decoding of every watch event, its middleware), and on two cores whatever the client
//! spends the server cannot.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use rustls_pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use sveltos_events_sandbox::ClusterHandle;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Where and how to reach one virtual cluster as its administrator.
#[derive(Clone)]
pub struct Target {
    addr: SocketAddr,
    tls: TlsConnector,
    authorization: String,
}

impl Target {
    /// The cluster `c`, trusting the CA its certificate chains to.
    pub fn of(c: &ClusterHandle) -> Target {
        let config = c.config().unwrap();
        let mut roots = rustls::RootCertStore::empty();
        for der in config.root_cert.expect("the sandbox serves HTTPS") {
            roots.add(CertificateDer::from(der)).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Target {
            addr: c.addr,
            tls: TlsConnector::from(Arc::new(tls)),
            authorization: format!("Bearer {}", sveltos_events_sandbox::auth::ADMIN_TOKEN),
        }
    }

    /// One kept-alive HTTP/1.1 connection over TLS.
    async fn connect(&self) -> SendRequest<Full<Bytes>> {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let name = ServerName::IpAddress(self.addr.ip().into());
        let stream = self.tls.connect(name, tcp).await.unwrap();
        let (send, conn) = http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(conn);
        send
    }

    fn request(&self, method: Method, path: &str, body: Bytes) -> Request<Full<Bytes>> {
        Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string())
            .header("authorization", &self.authorization)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(Full::new(body))
            .unwrap()
    }

    /// POSTs each of `bodies` to `path` over `clients` connections at once, each connection
    /// one request after another; every answer must be 201. Returns each request's latency,
    /// seconds.
    pub async fn create_all(&self, path: &str, bodies: Vec<Bytes>, clients: usize) -> Vec<f64> {
        let mut lanes: Vec<Vec<Bytes>> = vec![Vec::new(); clients];
        for (i, body) in bodies.into_iter().enumerate() {
            lanes[i % clients].push(body);
        }
        let mut tasks = Vec::new();
        for lane in lanes {
            let (target, path) = (self.clone(), path.to_owned());
            let mut send = self.connect().await;
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(lane.len());
                for body in lane {
                    let sent = Instant::now();
                    let answer = send
                        .send_request(target.request(Method::POST, &path, body))
                        .await
                        .unwrap();
                    let status = answer.status();
                    let bytes = answer.into_body().collect().await.unwrap().to_bytes();
                    assert_eq!(status, StatusCode::CREATED, "{bytes:?}");
                    latencies.push(sent.elapsed().as_secs_f64());
                }
                latencies
            }));
        }
        crate::joined(tasks).await
    }

    /// Watches `path` (a collection) and returns once `events` events have arrived, or the
    /// watch ended; returns how many arrived.
    pub async fn watch(&self, path: &str, events: usize) -> usize {
        let mut send = self.connect().await;
        let uri = format!("{path}?watch=1&resourceVersion=0&timeoutSeconds=290");
        let answer = send
            .send_request(self.request(Method::GET, &uri, Bytes::new()))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        let mut body = answer.into_body();
        let mut seen = 0;
        while seen < events {
            let Some(frame) = body.frame().await else {
                break;
            };
            if let Ok(data) = frame.unwrap().into_data() {
                seen += data.iter().filter(|&&b| b == b'\n').count();
            }
        }
        seen
    }
}
