//! The conversion webhook over HTTPS, as API servers require of webhooks: a CA and a serving
//! certificate kept in a Secret (made by the first replica, shared by all), renewed before
//! they run out, and the CA bundle written into every CRD the webhook converts.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use futures_util::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tls::{Authority, CertSlot, Issued};

/// The default name of the Secret keeping the webhook's CA and certificate.
pub const SECRET: &str = "sveltos-events-webhook-tls";

/// The CA's lifetime: it is not rotated (its bundle is in every CRD); ten years.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 86_400);
/// The serving certificate's lifetime; it is renewed when a third of it is left.
const CERT_VALIDITY: Duration = Duration::from_secs(365 * 86_400);

const CA_CERT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";
const TLS_CERT: &str = "tls.crt";
const TLS_KEY: &str = "tls.key";
/// Annotations carrying the end of each certificate's validity (Unix seconds).
const CA_NOT_AFTER: &str = "sveltos-events.io/ca-not-after";
const TLS_NOT_AFTER: &str = "sveltos-events.io/tls-not-after";
/// The CA's common name (it signs under this name whenever it is read back).
const CA_NAME: &str = "sveltos-events-webhook-ca";

/// Errors of the webhook's certificate keeping.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or failed a request.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// The client's error.
        source: kube::Error,
    },
    /// Making or reading a certificate failed.
    #[error("certificates: {0}")]
    Tls(#[from] tls::Error),
    /// The Secret exists but is not one this webhook wrote.
    #[error("Secret {0} does not hold a CA and a certificate ({1}); delete it to start anew")]
    Malformed(String, String),
    /// Other writers changed the Secret every time it was about to be written.
    #[error("Secret {0} kept changing under five attempts to write it")]
    Contended(String),
    /// Listening failed.
    #[error("serving the webhook: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// Whether trying again later may succeed: the API server failed, throttled or could not
    /// be reached, or other replicas kept writing the Secret. A refusal (403, 422, ...), a
    /// malformed Secret or a certificate that cannot be made stay as they are.
    fn transient(&self) -> bool {
        match self {
            Error::Kube { source, .. } => clusters::process::transient(source),
            Error::Contended(_) => true,
            Error::Tls(_) | Error::Malformed(..) | Error::Io(_) => false,
        }
    }
}

fn failed(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let what = what.into();
    move |source| Error::Kube { what, source }
}

/// Where the webhook's certificates live and which names they carry.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// Namespace of the Service and the Secret.
    pub namespace: String,
    /// The Service in front of the webhook (`<service>.<namespace>.svc` is what the API
    /// server connects to).
    pub service: String,
    /// The Secret keeping the CA and the serving certificate.
    pub secret: String,
}

/// The certificates as kept in the Secret.
struct Kept {
    ca: Authority,
    serving: Issued,
    resource_version: Option<String>,
}

impl Webhook {
    /// The names the serving certificate carries.
    pub fn dns_names(&self) -> Vec<String> {
        let (s, n) = (&self.service, &self.namespace);
        vec![
            format!("{s}.{n}.svc"),
            format!("{s}.{n}.svc.cluster.local"),
            format!("{s}.{n}"),
            s.clone(),
        ]
    }

    fn secret_name(&self) -> String {
        format!("{}/{}", self.namespace, self.secret)
    }

    /// Reads the certificates, making them (first replica) or renewing the serving one (a
    /// third of its life left) as needed. Replicas racing on it agree through the Secret's
    /// resourceVersion: the loser reads what the winner wrote.
    async fn ensure(&self, client: &kube::Client) -> Result<Kept, Error> {
        let api: Api<Secret> = Api::namespaced(client.clone(), &self.namespace);
        for _ in 0..5 {
            let found = api
                .get_opt(&self.secret)
                .await
                .map_err(failed(format!("reading Secret {}", self.secret_name())))?;
            let Some(secret) = found else {
                let ca = Authority::generate(CA_NAME, CA_VALIDITY)?;
                let serving = ca.issue_server(&self.dns_names(), CERT_VALIDITY)?;
                let body = self.secret_of(&ca, &serving, None);
                match api.create(&PostParams::default(), &body).await {
                    Ok(_) => {
                        tracing::info!(secret = %self.secret_name(), "made the webhook's CA and certificate");
                        return Ok(Kept {
                            ca,
                            serving,
                            resource_version: None,
                        });
                    }
                    Err(kube::Error::Api(e)) if e.code == 409 => continue,
                    Err(e) => {
                        return Err(failed(format!("creating Secret {}", self.secret_name()))(e));
                    }
                }
            };
            let kept = self.read(&secret)?;
            if !due(kept.serving.not_after, CERT_VALIDITY) {
                return Ok(kept);
            }
            let serving = kept.ca.issue_server(&self.dns_names(), CERT_VALIDITY)?;
            let body = self.secret_of(&kept.ca, &serving, kept.resource_version.clone());
            match api
                .replace(&self.secret, &PostParams::default(), &body)
                .await
            {
                Ok(_) => {
                    tracing::info!(secret = %self.secret_name(), "renewed the webhook's certificate");
                    return Ok(Kept { serving, ..kept });
                }
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => return Err(failed(format!("renewing Secret {}", self.secret_name()))(e)),
            }
        }
        Err(Error::Contended(self.secret_name()))
    }

    fn read(&self, secret: &Secret) -> Result<Kept, Error> {
        let malformed = |why: &str| Error::Malformed(self.secret_name(), why.to_owned());
        let data = secret.data.clone().unwrap_or_default();
        let text = |key: &str| {
            data.get(key)
                .and_then(|b| String::from_utf8(b.0.clone()).ok())
                .ok_or_else(|| malformed(&format!("no {key}")))
        };
        let annotations = secret.metadata.annotations.clone().unwrap_or_default();
        let time = |key: &str| {
            annotations
                .get(key)
                .and_then(|s| s.parse::<u64>().ok())
                .map(|s| UNIX_EPOCH + Duration::from_secs(s))
                .ok_or_else(|| malformed(&format!("no annotation {key}")))
        };
        let ca = Authority::from_pem(
            CA_NAME,
            &text(CA_CERT)?,
            &text(CA_KEY)?,
            time(CA_NOT_AFTER)?,
        )?;
        let serving = Issued {
            cert_pem: text(TLS_CERT)?,
            key_pem: text(TLS_KEY)?,
            not_after: time(TLS_NOT_AFTER)?,
        };
        Ok(Kept {
            ca,
            serving,
            resource_version: secret.metadata.resource_version.clone(),
        })
    }

    fn secret_of(
        &self,
        ca: &Authority,
        serving: &Issued,
        resource_version: Option<String>,
    ) -> Secret {
        let bytes = |s: &str| ByteString(s.as_bytes().to_vec());
        let unix = |t: SystemTime| {
            t.duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default()
                .to_string()
        };
        Secret {
            metadata: ObjectMeta {
                name: Some(self.secret.clone()),
                namespace: Some(self.namespace.clone()),
                resource_version,
                annotations: Some(BTreeMap::from([
                    (CA_NOT_AFTER.to_owned(), unix(ca.not_after())),
                    (TLS_NOT_AFTER.to_owned(), unix(serving.not_after)),
                ])),
                ..Default::default()
            },
            data: Some(BTreeMap::from([
                (CA_CERT.to_owned(), bytes(ca.cert_pem())),
                (CA_KEY.to_owned(), bytes(&ca.key_pem())),
                (TLS_CERT.to_owned(), bytes(&serving.cert_pem)),
                (TLS_KEY.to_owned(), bytes(&serving.key_pem)),
            ])),
            type_: Some("Opaque".to_owned()),
            ..Default::default()
        }
    }

    /// Serves `router` over HTTPS on `listener` until the process ends: the certificates come
    /// from the Secret (made if absent), the CA bundle goes into every converted CRD (also
    /// ones created later), and the serving certificate is renewed before it runs out.
    pub async fn serve(
        self,
        client: kube::Client,
        listener: tokio::net::TcpListener,
        router: axum::Router,
    ) -> Result<(), Error> {
        let kept = self.ensure_patiently(&client).await?;
        let slot = CertSlot::new(&kept.serving.cert_pem, &kept.serving.key_pem)?;
        let listener = tls::TlsListener::new(listener, tls::server_config(slot.clone())?)?;
        if let Ok(addr) = axum::serve::Listener::local_addr(&listener) {
            tracing::info!(%addr, "serving the conversion webhook over HTTPS");
        }
        let bundle = kept.ca.cert_pem().to_owned();
        let serve = async { axum::serve(listener, router).await.map_err(Error::Io) };
        let renew = self.renew(&client, &slot, kept.serving.not_after);
        let bundles = keep_ca_bundles(client.clone(), bundle);
        tokio::select! {
            result = serve => result,
            result = renew => result,
            result = bundles => result,
        }
    }

    /// [`Self::ensure`], tried again while the API server is unavailable, throttles or fails,
    /// so that a replica starting during an outage waits it out rather than stopping.
    async fn ensure_patiently(&self, client: &kube::Client) -> Result<Kept, Error> {
        let what = "reading the webhook's certificates";
        clusters::process::patiently(what, Error::transient, || self.ensure(client)).await
    }

    /// Sleeps until the certificate is due, then renews it (or takes the one another replica
    /// renewed) and presents it from the next handshake on.
    async fn renew(
        &self,
        client: &kube::Client,
        slot: &CertSlot,
        mut not_after: SystemTime,
    ) -> Result<(), Error> {
        loop {
            let renew_at = not_after
                .checked_sub(CERT_VALIDITY / 3)
                .unwrap_or(not_after);
            let wait = renew_at
                .duration_since(SystemTime::now())
                .unwrap_or_default();
            tokio::time::sleep(wait).await;
            match self.ensure(client).await {
                Ok(kept) => {
                    slot.replace(&kept.serving.cert_pem, &kept.serving.key_pem)?;
                    not_after = kept.serving.not_after;
                }
                Err(error) => {
                    tracing::warn!(%error, "renewing the webhook's certificate; trying again in a minute");
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
            }
        }
    }
}

/// Whether a certificate ending at `not_after` has a third of `validity` or less left.
fn due(not_after: SystemTime, validity: Duration) -> bool {
    not_after
        .duration_since(SystemTime::now())
        .map_or(true, |left| left <= validity / 3)
}

/// Follows every CRD and writes `bundle` (PEM) as the caBundle of those whose conversion is
/// done by a webhook of this project (its service name), whenever it differs.
async fn keep_ca_bundles(client: kube::Client, bundle: String) -> Result<(), Error> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(&bundle);
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let mut events = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let crd = match event {
            Ok(watcher::Event::Apply(crd) | watcher::Event::InitApply(crd)) => crd,
            Ok(_) => continue,
            Err(error) => {
                tracing::warn!(%error, "watching CRDs for the webhook's CA bundle");
                continue;
            }
        };
        let Some(config) = crd
            .spec
            .conversion
            .as_ref()
            .and_then(|c| c.webhook.as_ref())
            .and_then(|w| w.client_config.as_ref())
        else {
            continue;
        };
        let ours = config
            .service
            .as_ref()
            .is_some_and(|s| s.name == api::crd::CONVERSION_SERVICE);
        let current = config.ca_bundle.as_ref().map(|b| b.0.as_slice());
        if !ours || current == Some(bundle.as_bytes()) {
            continue;
        }
        let name = crd.metadata.name.clone().unwrap_or_default();
        let patch =
            json!({"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": encoded}}}}});
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => tracing::info!(crd = %name, "wrote the webhook's CA bundle"),
            Err(error) => tracing::warn!(crd = %name, %error, "writing the webhook's CA bundle"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_is_due_with_a_third_of_its_life_left() {
        let day = Duration::from_secs(86_400);
        let now = SystemTime::now();
        assert!(!due(now + 300 * day, 365 * day));
        assert!(due(now + 100 * day, 365 * day));
        assert!(due(now - day, 365 * day));
    }

    #[test]
    fn the_certificate_names_what_the_api_server_dials() {
        let webhook = Webhook {
            namespace: "projectsveltos".into(),
            service: "sveltos-events-manager".into(),
            secret: "s".into(),
        };
        assert!(
            webhook
                .dns_names()
                .contains(&"sveltos-events-manager.projectsveltos.svc".to_owned())
        );
    }
}
