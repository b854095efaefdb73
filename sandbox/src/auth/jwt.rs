//! ServiceAccount tokens: JSON Web Tokens with kube-apiserver's claims, signed by the
//! cluster's key (HMAC-SHA256: the sandbox is both issuer and only verifier, so a symmetric
//! key does what kube-apiserver's RSA key pair does).
//!
//! Two kinds, as in Kubernetes: legacy tokens kept in `kubernetes.io/service-account-token`
//! Secrets (valid while the Secret holds them), and bound tokens from the TokenRequest API
//! (valid until they expire, for the audiences they name, while their ServiceAccount lives).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
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
        let rng = ring::rand::SystemRandom::new();
        match hmac::Key::generate(hmac::HMAC_SHA256, &rng) {
            Ok(key) => SigningKey(key),
            // The system's random source failing is not recoverable; a key from the
            // process-local generator still keeps clusters' tokens apart.
            Err(_) => {
                let seed: Vec<u8> = (0..4)
                    .flat_map(|_| crate::meta::random_u64().to_le_bytes())
                    .collect();
                SigningKey(hmac::Key::new(hmac::HMAC_SHA256, &seed))
            }
        }
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
