//! ServiceAccount tokens: JSON Web Tokens with kube-apiserver's claims, signed by the
//! cluster's key (HMAC-SHA256: the sandbox is both issuer and only verifier, so a symmetric
//! key does what kube-apiserver's RSA key pair does).
//!
//! Two kinds, as in Kubernetes: legacy tokens kept in `kubernetes.io/service-account-token`
//! Secrets (valid while the Secret holds them), and bound tokens from the TokenRequest API
//! (valid until they expire, for the audiences they name, while their ServiceAccount lives).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::hmac;
use serde_json::{Value, json};

/// The issuer of legacy tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The issuer of bound tokens, and the API server's audience (as `--service-account-issuer`
/// in the oracle).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// A cluster's token signing key.
pub struct SigningKey(hmac::Key);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl SigningKey {
    /// A fresh random key.
    pub fn generate() -> SigningKey {
        SigningKey::from_secret(&random_secret())
    }

    /// The key of `secret` (a key kept on disk).
    pub fn from_secret(secret: &[u8]) -> SigningKey {
        SigningKey(hmac::Key::new(hmac::HMAC_SHA256, secret))
    }

    /// The key whose secret `path` keeps (base64), made and written there (readable by the
    /// owner alone) the first time, so tokens signed before a restart still verify after it.
    pub fn load_or_create(path: &std::path::Path) -> std::io::Result<SigningKey> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let secret = STANDARD.decode(text.trim()).map_err(|e| {
                    std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())
                })?;
                return Ok(SigningKey::from_secret(&secret));
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        let secret = random_secret();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        writeln!(file, "{}", STANDARD.encode(&secret))?;
        file.sync_all()?;
        Ok(SigningKey::from_secret(&secret))
    }

    /// A signed token carrying `claims`.
    pub fn sign(&self, claims: &Value) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{payload}");
        let tag = hmac::sign(&self.0, signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// The claims of a token this key signed, or `None` (not a JWT, or another signer).
    pub fn verify(&self, token: &str) -> Option<Value> {
        let (signed, tag) = token.rsplit_once('.')?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        hmac::verify(&self.0, signed.as_bytes(), &tag).ok()?;
        let (_, payload) = signed.split_once('.')?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
    }
}

/// 32 random bytes from the system's source (or, should it fail, the process-local
/// generator, which still keeps clusters' tokens apart).
fn random_secret() -> Vec<u8> {
    let mut secret = vec![0u8; 32];
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret).is_err() {
        secret = (0..4)
            .flat_map(|_| crate::meta::random_u64().to_le_bytes())
            .collect();
    }
    secret
}

/// The claims of a legacy token for the account `namespace/name` (uid `uid`) kept in Secret
/// `secret`.
pub fn legacy_claims(namespace: &str, name: &str, uid: &str, secret: &str) -> Value {
    json!({
        "iss": LEGACY_ISSUER,
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/secret.name": secret,
        "kubernetes.io/serviceaccount/service-account.name": name,
        "kubernetes.io/serviceaccount/service-account.uid": uid,
        "sub": super::service_account_user(namespace, name),
    })
}

/// The claims of a bound token for `namespace/name` (uid `uid`), valid from `now` for
/// `seconds`, for `audiences`.
pub fn bound_claims(
    namespace: &str,
    name: &str,
    uid: &str,
    audiences: &[String],
    now: u64,
    seconds: u64,
) -> Value {
    json!({
        "aud": audiences,
        "exp": now + seconds,
        "iat": now,
        "iss": ISSUER,
        "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        "nbf": now,
        "sub": super::service_account_user(namespace, name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_verifies_its_own_tokens_only() {
        let (a, b) = (SigningKey::generate(), SigningKey::generate());
        let token = a.sign(&legacy_claims("ns", "sa", "u", "sa-token"));
        assert_eq!(
            a.verify(&token).unwrap()["sub"],
            "system:serviceaccount:ns:sa"
        );
        assert!(b.verify(&token).is_none());
        let mut forged = token.clone();
        forged.insert(token.len() / 2, 'x');
        assert!(a.verify(&forged).is_none());
        assert!(a.verify("sandbox").is_none());
    }
}
