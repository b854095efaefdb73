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

/// Whether `headers` ask to act as someone else.
pub fn requested(headers: &HeaderMap) -> bool {
    headers
        .keys()
        .any(|h| h.as_str().starts_with("impersonate-"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (key, value) in pairs {
            map.append(*key, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn an_admin_becomes_the_user_groups_uid_and_extras_it_names() {
        let policy = Policy::default();
        let asked = headers(&[
            ("impersonate-user", "bob"),
            ("impersonate-group", "team"),
            ("impersonate-uid", "u-1"),
            ("impersonate-extra-scopes", "view"),
        ]);
        let user = impersonate(&policy, User::admin(), &asked).unwrap();
        assert_eq!(user.name, "bob");
        assert_eq!(user.uid, "u-1");
        assert_eq!(user.groups, ["team", AUTHENTICATED]);
        assert_eq!(user.extra["scopes"], ["view"]);
        let account = headers(&[("impersonate-user", "system:serviceaccount:ns:sa")]);
        let user = impersonate(&policy, User::admin(), &account).unwrap();
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                AUTHENTICATED
            ]
        );
    }

    #[test]
    fn others_may_not_and_groups_alone_are_refused() {
        let policy = Policy::default();
        let asked = headers(&[("impersonate-user", "bob"), ("impersonate-uid", "u-1")]);
        let refused = impersonate(&policy, User::service_account("ns", "sa", ""), &asked);
        let Err(Refusal::Forbidden(status)) = refused else {
            panic!("not refused: {refused:?}");
        };
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .contains("cannot impersonate resource \"users\"")
        );
        let groups_only = headers(&[("impersonate-group", "system:masters")]);
        let refused = impersonate(&policy, User::admin(), &groups_only);
        assert!(
            matches!(refused, Err(Refusal::Internal(m)) if m.contains("{Group  system:masters    }"))
        );
    }
}
