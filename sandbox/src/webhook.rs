//! Conversion webhooks called as kube-apiserver calls them: a `ConversionReview` POSTed over
//! HTTPS to the CRD's `clientConfig` (a URL, or a Service reached through its Endpoints, its
//! certificate verified against `caBundle` for `<service>.<namespace>.svc`).
//!
//! The store converts under its lock, synchronously; the call runs on a thread of its own with
//! its own runtime, so it never waits on the server's runtime, and is bounded by a timeout.

use crate::meta::{meta_str, new_uid};
use crate::store::{Event, EventType};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Duration;

/// How long a conversion call may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A Service a webhook is reached through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The request path (`/` when absent).
    pub path: String,
    /// The Service port (443 when absent).
    pub port: u16,
}

/// Where and how to call a CRD's conversion webhook (`spec.conversion.webhook.clientConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// An explicit URL, if given.
    pub url: Option<String>,
    /// The Service, if given.
    pub service: Option<ServiceRef>,
    /// The CA bundle (PEM) the server's certificate must chain to.
    pub ca_bundle: Vec<u8>,
}

impl ClientConfig {
    /// The client configuration of a CRD's spec, when it converts by webhook.
    pub fn of_crd(spec: &Value) -> Option<ClientConfig> {
        let config = spec.pointer("/conversion/webhook/clientConfig")?;
        use base64::Engine;
        let ca_bundle = base64::engine::general_purpose::STANDARD
            .decode(config["caBundle"].as_str().unwrap_or_default())
            .unwrap_or_default();
        let service = config.get("service").map(|s| ServiceRef {
            namespace: s["namespace"].as_str().unwrap_or_default().to_owned(),
            name: s["name"].as_str().unwrap_or_default().to_owned(),
            path: s["path"].as_str().unwrap_or("/").to_owned(),
            port: s["port"]
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        });
        Some(ClientConfig {
            url: config["url"].as_str().map(str::to_owned),
            service,
            ca_bundle,
        })
    }
}

/// One address of an Endpoints object: ip, port, port name.
type Address = (String, u16, String);

/// The cluster's Endpoints, kept from the event stream so conversions can find a Service's
/// pods without reading the store they are called from.
#[derive(Debug, Default)]
pub struct Endpoints(RwLock<HashMap<(String, String), Vec<Address>>>);

impl Endpoints {
    /// Records an event (only core Endpoints matter).
    pub fn observe(&self, ev: &Event) {
        if !ev.gr.group.is_empty() || ev.gr.resource != "endpoints" {
            return;
        }
        let key = (
            ev.namespace.clone(),
            meta_str(&ev.object, "name").to_owned(),
        );
        let mut addresses = Vec::new();
        if ev.kind != EventType::Deleted {
            for subset in ev.object["subsets"].as_array().into_iter().flatten() {
                for address in subset["addresses"].as_array().into_iter().flatten() {
                    let ip = address["ip"].as_str().unwrap_or_default();
                    for port in subset["ports"].as_array().into_iter().flatten() {
                        let number = port["port"].as_u64().and_then(|p| u16::try_from(p).ok());
                        let name = port["name"].as_str().unwrap_or_default();
                        if let Some(number) = number {
                            addresses.push((ip.to_owned(), number, name.to_owned()));
                        }
                    }
                }
            }
        }
        if let Ok(mut table) = self.0.write() {
            if addresses.is_empty() {
                table.remove(&key);
            } else {
                table.insert(key, addresses);
            }
        }
    }

    /// `ip:port` of a ready endpoint of the Service (its only port, or the one numbered as the
    /// Service port).
    fn resolve(&self, service: &ServiceRef) -> Option<String> {
        let table = self.0.read().ok()?;
        let addresses = table.get(&(service.namespace.clone(), service.name.clone()))?;
        let ports: std::collections::BTreeSet<u16> = addresses.iter().map(|a| a.1).collect();
        let chosen = addresses
            .iter()
            .find(|a| ports.len() == 1 || a.1 == service.port)?;
        let host = if chosen.0.contains(':') {
            format!("[{}]", chosen.0)
        } else {
            chosen.0.clone()
        };
        Some(format!("{host}:{}", chosen.1))
    }
}

/// Converts `object` to `version` by calling the webhook.
pub fn convert(
    config: &ClientConfig,
    endpoints: &Endpoints,
    object: &Value,
    version: &str,
) -> Result<Value, String> {
    let (url, server_name) = match (&config.url, &config.service) {
        (Some(url), _) => (url.clone(), None),
        (None, Some(service)) => {
            let address = endpoints.resolve(service).ok_or_else(|| {
                format!(
                    "no endpoints available for service \"{}/{}\"",
                    service.namespace, service.name
                )
            })?;
            let name = format!("{}.{}.svc", service.name, service.namespace);
            (format!("https://{address}{}", service.path), Some(name))
        }
        (None, None) => return Err("the webhook names neither a URL nor a Service".into()),
    };
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": new_uid(), "desiredAPIVersion": version, "objects": [object]},
    });
    let answer = std::thread::scope(|scope| {
        scope
            .spawn(|| call(&url, server_name, &config.ca_bundle, &review))
            .join()
            .unwrap_or_else(|_| Err("the conversion call panicked".into()))
    })?;
    let response = &answer["response"];
    if response["result"]["status"] != "Success" {
        let message = response["result"]["message"]
            .as_str()
            .unwrap_or("no reason");
        return Err(format!("conversion webhook refused: {message}"));
    }
    response["convertedObjects"]
        .get(0)
        .cloned()
        .ok_or_else(|| "the webhook returned no object".into())
}

/// POSTs `review` to `url` and reads the answer, on the calling thread's own runtime.
fn call(
    url: &str,
    server_name: Option<String>,
    ca: &[u8],
    review: &Value,
) -> Result<Value, String> {
    let uri: axum::http::Uri = url
        .parse()
        .map_err(|e| format!("bad webhook URL {url:?}: {e}"))?;
    let base = format!(
        "{}://{}",
        uri.scheme_str().unwrap_or("https"),
        uri.authority().map(|a| a.as_str()).unwrap_or_default()
    );
    let mut config = kube::Config::new(base.parse().map_err(|e| format!("bad webhook URL: {e}"))?);
    config.root_cert = Some(pem_certificates(ca));
    config.tls_server_name = server_name;
    config.read_timeout = Some(TIMEOUT);
    config.connect_timeout = Some(TIMEOUT);
    let path = uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .to_owned();
    let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime for the webhook call: {e}"))?;
    runtime.block_on(async move {
        let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
        let request = axum::http::Request::post(path)
            .header("content-type", "application/json")
            .body(body)
            .map_err(|e| e.to_string())?;
        let call = client.request::<Value>(request);
        tokio::time::timeout(TIMEOUT, call)
            .await
            .map_err(|_| format!("the webhook did not answer within {TIMEOUT:?}"))?
            .map_err(|e| format!("calling the webhook at {url}: {e}"))
    })
}

/// The DER certificates of a PEM bundle.
fn pem_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine;
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("-----BEGIN CERTIFICATE") {
            current = Some(String::new());
        } else if line.starts_with("-----END CERTIFICATE") {
            if let Some(body) = current.take()
                && let Ok(der) = base64::engine::general_purpose::STANDARD.decode(body)
            {
                out.push(der);
            }
        } else if let Some(body) = current.as_mut() {
            body.push_str(line);
        }
    }
    out
}
