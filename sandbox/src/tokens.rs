//! kube-controller-manager's token controller, for legacy ServiceAccount token Secrets: a
//! Secret of type `kubernetes.io/service-account-token` that names an existing ServiceAccount
//! gets its `token`, `namespace` and `ca.crt` (and the account's uid annotation); one naming
//! an absent account, or an account since recreated, is deleted; deleting an account deletes
//! its token Secrets. The token is a legacy ServiceAccount JWT ([`crate::auth::jwt`]),
//! valid while the Secret holds it.

use base64::Engine;
use serde_json::{Value, json};

use crate::meta::meta_str;
use crate::store::{DeleteOptions, Event, EventType, Store, WriteOptions};

/// The Secret type the controller fills in.
pub const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming the account a token Secret belongs to.
const NAME_KEY: &str = "kubernetes.io/service-account.name";
/// The annotation recording that account's uid.
const UID_KEY: &str = "kubernetes.io/service-account.uid";

/// Reacts to one event of the cluster; `root_ca` is the PEM written as `ca.crt`.
pub fn handle(store: &Store, ev: &Event, root_ca: &str) {
    if !ev.gr.group.is_empty() {
        return;
    }
    match (ev.gr.resource.as_str(), ev.kind == EventType::Deleted) {
        ("secrets", false) if ev.object["type"] == TOKEN_TYPE => fill(store, ev, root_ca),
        ("serviceaccounts", true) => delete_tokens_of(store, &ev.namespace, &ev.object),
        _ => {}
    }
}

fn annotation<'a>(object: &'a Value, key: &str) -> &'a str {
    object["metadata"]["annotations"][key]
        .as_str()
        .unwrap_or_default()
}

fn fill(store: &Store, ev: &Event, root_ca: &str) {
    let secret = &ev.object;
    if !meta_str(secret, "deletionTimestamp").is_empty() {
        return;
    }
    let name = meta_str(secret, "name");
    let account = annotation(secret, NAME_KEY);
    let live_account = store
        .resolve("", "v1", "serviceaccounts")
        .and_then(|info| store.get(&info, &ev.namespace, account).ok());
    let uid = annotation(secret, UID_KEY);
    let account_uid = live_account.as_deref().map(|a| meta_str(a, "uid"));
    if account_uid.is_none() || (!uid.is_empty() && Some(uid) != account_uid) {
        delete_secret(store, &ev.namespace, name);
        return;
    }
    let data = &secret["data"];
    if ["token", "ca.crt", "namespace"]
        .iter()
        .all(|key| data[*key].is_string())
        && !uid.is_empty()
    {
        return;
    }
    let Some(info) = store.resolve("", "v1", "secrets") else {
        return;
    };
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let account_uid = account_uid.unwrap_or_default().to_owned();
    let claims = crate::auth::jwt::legacy_claims(&ev.namespace, account, &account_uid, name);
    let token = store.signing_key().sign(&claims);
    let namespace = ev.namespace.clone();
    let opts = WriteOptions {
        manager: "kube-controller-manager".into(),
        ..WriteOptions::default()
    };
    let result = store.modify(&info, &ev.namespace, name, &opts, |old| {
        let mut new = old.clone();
        new["metadata"]["annotations"][UID_KEY] = json!(account_uid);
        if !new["data"].is_object() {
            new["data"] = json!({});
        }
        let data = &mut new["data"];
        if !data["token"].is_string() {
            data["token"] = json!(b64(&token));
        }
        data["ca.crt"] = json!(b64(root_ca));
        data["namespace"] = json!(b64(&namespace));
        Ok(new)
    });
    if let Err(e) = result {
        tracing::debug!(error = %e, %name, "token controller: filling the token failed");
    }
}

fn delete_tokens_of(store: &Store, namespace: &str, account: &Value) {
    let name = meta_str(account, "name");
    let Some(info) = store.resolve("", "v1", "secrets") else {
        return;
    };
    for (kind, secret) in store.namespace_contents(namespace) {
        if kind.plural != "secrets" || !kind.group.is_empty() {
            continue;
        }
        if let Ok(object) = store.get(&info, namespace, &secret)
            && object["type"] == TOKEN_TYPE
            && annotation(&object, NAME_KEY) == name
        {
            delete_secret(store, namespace, &secret);
        }
    }
}

fn delete_secret(store: &Store, namespace: &str, name: &str) {
    let Some(info) = store.resolve("", "v1", "secrets") else {
        return;
    };
    if let Err(e) = store.delete(&info, namespace, name, &DeleteOptions::default()) {
        tracing::debug!(error = %e, %name, "token controller: delete failed");
    }
}
