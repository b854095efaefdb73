//! Authentication: the request's bearer token names its user; no credentials make the
//! request anonymous; a token nobody issued, or one no longer valid, is refused with 401.

use super::jwt::{ISSUER, LEGACY_ISSUER};
use super::{ADMIN_TOKEN, User};
use crate::error::{Error, Result};
use crate::meta::meta_str;
use crate::store::Store;
use crate::tokens::TOKEN_TYPE;
use base64::Engine;
use serde_json::Value;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// kube-apiserver's answer to a credential it cannot accept.
pub fn unauthorized() -> Error {
    Error::Unauthorized("Unauthorized".into())
}

/// The bearer token of an `Authorization` header, if it carries one.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The user a request's `Authorization` header names.
pub fn authenticate(store: &Store, authorization: &str) -> Result<User> {
    let Some(token) = bearer(authorization) else {
        return Ok(User::anonymous());
    };
    if token == ADMIN_TOKEN {
        return Ok(User::admin());
    }
    let cache = store.token_cache();
    let at = Instant::now();
    if let Some(user) = cache.get(token, at) {
        return Ok(user);
    }
    let (user, expires) = user_of_token(store, token).ok_or_else(unauthorized)?;
    let until = match expires {
        Some(exp) => at + Duration::from_secs(exp.saturating_sub(now())),
        None => at + super::token_cache::SUCCESS_TTL,
    };
    cache.put(token, &user, at, until);
    Ok(user)
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The live ServiceAccount `namespace/name` if its uid is `uid`.
fn account_uid_matches(store: &Store, namespace: &str, name: &str, uid: &str) -> bool {
    store
        .resolve("", "v1", "serviceaccounts")
        .and_then(|info| store.get(&info, namespace, name).ok())
        .is_some_and(|account| {
            meta_str(&account, "uid") == uid && meta_str(&account, "deletionTimestamp").is_empty()
        })
}

/// The ServiceAccount a token this cluster signed identifies, while the token is valid, and
/// when the token expires (seconds since the Unix epoch; legacy tokens do not).
fn user_of_token(store: &Store, token: &str) -> Option<(User, Option<u64>)> {
    let claims = store.signing_key().verify(token)?;
    match claims["iss"].as_str()? {
        LEGACY_ISSUER => legacy(store, token, &claims).map(|user| (user, None)),
        ISSUER => bound(store, &claims).map(|user| (user, claims["exp"].as_u64())),
        _ => None,
    }
}

fn legacy(store: &Store, token: &str, claims: &Value) -> Option<User> {
    let claim = |key: &str| str_at(claims, &format!("/kubernetes.io~1serviceaccount~1{key}"));
    let (namespace, name, uid) = (
        claim("namespace"),
        claim("service-account.name"),
        claim("service-account.uid"),
    );
    let info = store.resolve("", "v1", "secrets")?;
    let secret = store.get(&info, namespace, claim("secret.name")).ok()?;
    let stored = secret["data"]["token"].as_str().unwrap_or_default();
    let stored = base64::engine::general_purpose::STANDARD
        .decode(stored)
        .unwrap_or_default();
    let valid = secret["type"] == TOKEN_TYPE
        && stored == token.as_bytes()
        && meta_str(&secret, "deletionTimestamp").is_empty()
        && account_uid_matches(store, namespace, name, uid);
    valid.then(|| User::service_account(namespace, name, uid))
}

fn bound(store: &Store, claims: &Value) -> Option<User> {
    let now = now();
    let timely = claims["nbf"].as_u64().is_some_and(|t| t <= now + 60)
        && claims["exp"].as_u64().is_some_and(|t| now < t);
    let audience = claims["aud"]
        .as_array()
        .is_some_and(|a| a.iter().any(|aud| aud == ISSUER));
    let namespace = str_at(claims, "/kubernetes.io/namespace");
    let name = str_at(claims, "/kubernetes.io/serviceaccount/name");
    let uid = str_at(claims, "/kubernetes.io/serviceaccount/uid");
    let bound_object_lives = ["secret", "pod"].iter().all(|kind| {
        let Some(object) = claims["kubernetes.io"].get(*kind) else {
            return true;
        };
        let plural = format!("{kind}s");
        store
            .resolve("", "v1", &plural)
            .and_then(|info| store.get(&info, namespace, str_at(object, "/name")).ok())
            .is_some_and(|live| meta_str(&live, "uid") == str_at(object, "/uid"))
    });
    let valid = timely
        && audience
        && bound_object_lives
        && account_uid_matches(store, namespace, name, uid);
    valid.then(|| User::service_account(namespace, name, uid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::jwt::{ISSUER, bound_claims};
    use crate::store::WriteOptions;
    use serde_json::json;

    #[test]
    fn reads_bearer_headers() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer(""), None);
    }

    #[test]
    fn no_credentials_is_anonymous_and_a_strange_token_is_refused() {
        let store = Store::new();
        assert_eq!(authenticate(&store, "").unwrap(), User::anonymous());
        assert_eq!(
            authenticate(&store, "Bearer sandbox").unwrap(),
            User::admin()
        );
        let error = authenticate(&store, "Bearer nope").unwrap_err();
        assert_eq!(error.code(), 401);
        let foreign = crate::auth::jwt::SigningKey::generate()
            .sign(&crate::auth::jwt::legacy_claims("default", "a", "u", "s"));
        assert!(authenticate(&store, &format!("Bearer {foreign}")).is_err());
    }

    /// A store with ServiceAccount `default/sa`, and its uid.
    fn store_with_account() -> (Store, String) {
        let store = Store::new();
        let accounts = store.resolve("", "v1", "serviceaccounts").unwrap();
        let account = json!({"metadata": {"name": "sa"}});
        let account = store
            .create(&accounts, "default", account, &WriteOptions::default())
            .unwrap();
        let uid = account["metadata"]["uid"].as_str().unwrap().to_owned();
        (store, uid)
    }

    #[test]
    fn a_bound_token_works_until_it_expires_and_only_for_the_api_audience() {
        let (store, uid) = store_with_account();
        let token = |audience: &str, issued: u64| {
            let claims = bound_claims("default", "sa", &uid, &[audience.into()], issued, 600);
            format!("Bearer {}", store.signing_key().sign(&claims))
        };
        let user = authenticate(&store, &token(ISSUER, now())).unwrap();
        assert_eq!(user.name, "system:serviceaccount:default:sa");
        assert_eq!(user.uid, uid);
        let expired = authenticate(&store, &token(ISSUER, now() - 3600)).unwrap_err();
        assert_eq!(
            (expired.code(), expired.to_string()),
            (401, "Unauthorized".into())
        );
        assert!(authenticate(&store, &token("vault", now())).is_err());
    }

    #[test]
    fn a_token_that_authenticated_is_remembered_as_kube_apiserver_does() {
        let (store, uid) = store_with_account();
        let accounts = store.resolve("", "v1", "serviceaccounts").unwrap();
        let claims = bound_claims("default", "sa", &uid, &[ISSUER.into()], now(), 600);
        let token = format!("Bearer {}", store.signing_key().sign(&claims));
        assert!(authenticate(&store, &token).is_ok());
        store
            .delete(&accounts, "default", "sa", &Default::default())
            .unwrap();
        // For the cache's 10 seconds the deleted account's token still works, as it does
        // against kube-apiserver; a token never seen is verified and refused.
        assert_eq!(authenticate(&store, &token).unwrap().uid, uid);
        let fresh = bound_claims("default", "sa", &uid, &[ISSUER.into()], now(), 601);
        let fresh = format!("Bearer {}", store.signing_key().sign(&fresh));
        assert!(authenticate(&store, &fresh).is_err());
    }
}
