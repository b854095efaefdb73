//! A certificate authority that issues serving certificates.

use crate::Result;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;

/// Certificates start this long before they are made, so that a peer whose clock is a little
/// behind does not refuse them as "not yet valid".
const CLOCK_SKEW: Duration = Duration::from_secs(3600);

/// A CA: its certificate (PEM) and the key that signs what it issues.
pub struct Authority {
    common_name: String,
    cert_pem: String,
    cert_der: Vec<u8>,
    key: KeyPair,
    not_after: SystemTime,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("Authority")
            .field("common_name", &self.common_name)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// A certificate issued by an [`Authority`], with its private key.
#[derive(Clone)]
pub struct Issued {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// Its private key, PKCS#8 PEM.
    pub key_pem: String,
    /// The end of its validity.
    pub not_after: SystemTime,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl Authority {
    /// A new CA named `common_name`, valid for `valid_for` from now.
    pub fn generate(common_name: &str, valid_for: Duration) -> Result<Self> {
        let key = KeyPair::generate()?;
        let (params, not_after) = Self::params(common_name, valid_for);
        let cert = params.self_signed(&key)?;
        Ok(Authority {
            common_name: common_name.to_owned(),
            cert_pem: cert.pem(),
            cert_der: cert.der().to_vec(),
            key,
            not_after,
        })
    }

    /// A CA read back from what [`Authority::cert_pem`], [`Authority::key_pem`] and
    /// [`Authority::not_after`] gave when it was generated under `common_name` (a Secret's
    /// contents): certificates it issues chain to the same certificate.
    pub fn from_pem(
        common_name: &str,
        cert_pem: &str,
        key_pem: &str,
        not_after: SystemTime,
    ) -> Result<Self> {
        // Only the name and the key sign; the certificate itself is passed on to clients.
        let cert_der = crate::listener::certificates(cert_pem)?
            .into_iter()
            .next()
            .map(|der| der.to_vec())
            .unwrap_or_default();
        Ok(Authority {
            common_name: common_name.to_owned(),
            cert_pem: cert_pem.to_owned(),
            cert_der,
            key: KeyPair::from_pem(key_pem)?,
            not_after,
        })
    }

    fn params(common_name: &str, valid_for: Duration) -> (CertificateParams, SystemTime) {
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let not_after = validity(&mut params, valid_for);
        (params, not_after)
    }

    /// The CA certificate, PEM: what a kubeconfig's `certificate-authority-data` or a
    /// webhook's `caBundle` holds (base64 of it).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA certificate, DER (what kube's `Config::root_cert` takes).
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// The CA's private key, PKCS#8 PEM (to keep it in a Secret).
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// The end of the CA's validity.
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }

    /// A serving certificate for `names` (DNS names or IP addresses, each becomes a subject
    /// alternative name), valid for `valid_for` from now.
    pub fn issue_server(&self, names: &[String], valid_for: Duration) -> Result<Issued> {
        let mut params = CertificateParams::new(names.to_vec())?;
        let common_name = names.first().map_or("server", String::as_str);
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let not_after = validity(&mut params, valid_for);
        let key = KeyPair::generate()?;
        let (ca_params, _) = Self::params(&self.common_name, Duration::ZERO);
        let issuer = Issuer::new(ca_params, &self.key);
        let cert = params.signed_by(&key, &issuer)?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            not_after,
        })
    }
}

/// Sets `params`' validity to [now - skew, now + valid_for] and returns its end.
fn validity(params: &mut CertificateParams, valid_for: Duration) -> SystemTime {
    let now = SystemTime::now();
    let not_before = now.checked_sub(CLOCK_SKEW).unwrap_or(now);
    let not_after = now.checked_add(valid_for).unwrap_or(now);
    params.not_before = OffsetDateTime::from(not_before);
    params.not_after = OffsetDateTime::from(not_after);
    not_after
}
