//! Impersonation: `Impersonate-User`, `-Group`, `-Uid` and `-Extra-*` headers make a request
//! act as another user, when the caller may `impersonate` each of them (kube-apiserver's
//! impersonation filter).

use super::rbac::{Policy, authorize, forbidden_status};
use super::{ANONYMOUS, AUTHENTICATED, Attributes, UNAUTHENTICATED, User};
use axum::http::HeaderMap;
use serde_json::Value;
use std::collections::BTreeMap;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA: &str = "impersonate-extra-";

fn values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// Why impersonation was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Impersonation headers without a user: kube-apiserver's plain-text 500, this message.
    Internal(String),
    /// The caller may not impersonate what it asked for: this 403 `Status`.
    Forbidden(Value),
}

/// The user a request acts as: `requestor` itself without impersonation headers, else the
/// impersonated user, or why not.
pub fn impersonate(policy: &Policy, requestor: User, headers: &HeaderMap) -> Result<User, Refusal> {
    let name = values(headers, USER).first().map(|s| (*s).to_owned());
    let groups: Vec<String> = values(headers, GROUP)
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let uid = values(headers, UID).first().map(|s| (*s).to_owned());
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (header, value) in headers {
        if let Some(key) = header.as_str().strip_prefix(EXTRA)
            && let Ok(value) = value.to_str()
        {
            extra
                .entry(crate::http::percent_decode_with(key, false).to_lowercase())
                .or_default()
                .push(value.to_owned());
        }
    }
    let Some(name) = name else {
        if groups.is_empty() && extra.is_empty() && uid.is_none() {
            return Ok(requestor);
        }
        // kube-apiserver prints the requests as Go prints its ObjectReferences.
        let mut requests: Vec<String> = groups
            .iter()
            .map(|g| format!("{{Group  {g}    }}"))
            .collect();
        for (key, values) in &extra {
            requests.extend(
                values
                    .iter()
                    .map(|v| format!("{{UserExtra  {v}  authentication.k8s.io/v1  {key}}}")),
            );
        }
        if let Some(uid) = &uid {
            requests.push(format!("{{UID  {uid}  authentication.k8s.io/v1  }}"));
        }
        return Err(Refusal::Internal(format!(
            "requested [{}] without impersonating a user",
            requests.join(" ")
        )));
    };
    let mut checks = Vec::new();
    let service_account = super::split_service_account(&name);
    checks.push(match service_account {
        Some((ns, sa)) => Attributes::resource("impersonate", "", "serviceaccounts", ns, sa),
        None => Attributes::resource("impersonate", "", "users", "", &name),
    });
    for group in &groups {
        checks.push(Attributes::resource("impersonate", "", "groups", "", group));
    }
    for (key, values) in &extra {
        for value in values {
            checks.push(Attributes {
                subresource: key.clone(),
                ..Attributes::resource(
                    "impersonate",
                    "authentication.k8s.io",
                    "userextras",
                    "",
                    value,
                )
            });
        }
    }
    if let Some(uid) = &uid {
        checks.push(Attributes::resource(
            "impersonate",
            "authentication.k8s.io",
            "uids",
            "",
            uid,
        ));
    }
    for attrs in &checks {
        let decision = authorize(policy, &requestor, attrs);
        if !decision.allowed {
            return Err(Refusal::Forbidden(forbidden_status(
                &requestor,
                attrs,
                &decision.reason,
            )));
        }
    }
    let mut user_groups = match (service_account, groups.is_empty()) {
        (Some((ns, _)), true) => super::service_account_groups(ns),
        _ => groups,
    };
    let wanted = if name == ANONYMOUS {
        UNAUTHENTICATED
    } else {
        AUTHENTICATED
    };
    let implied = user_groups
        .iter()
        .any(|g| g == UNAUTHENTICATED || (wanted == AUTHENTICATED && g == AUTHENTICATED));
    if !implied {
        user_groups.push(wanted.into());
    }
    Ok(User {
        name,
        uid: uid.unwrap_or_default(),
        groups: user_groups,
        extra,
    })
}
