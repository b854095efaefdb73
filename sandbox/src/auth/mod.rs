//! Who is asking and whether they may: authentication (bearer tokens, anonymous requests),
//! impersonation, and the RBAC authorizer, as kube-apiserver with `--authorization-mode=RBAC`
//! runs them.
//!
//! The pieces: [`authn`] turns a request's credentials into a [`User`]; [`impersonate`]
//! switches to the user named in `Impersonate-*` headers when the caller may; [`Attributes`]
//! says what a request does (kube-apiserver's RequestInfo); [`rbac`] decides from the
//! cluster's Roles and bindings; [`escalation`] keeps role and binding writers from granting
//! more than they hold; [`bootstrap`] is the default policy a new cluster starts with, and
//! [`aggregation`] the controller filling aggregated ClusterRoles.

pub mod aggregation;
pub mod attributes;
pub mod authn;
pub mod bootstrap;
pub mod escalation;
pub mod impersonate;
pub mod jwt;
pub mod rbac;
pub mod token_cache;

pub use attributes::Attributes;

use crate::store::Store;
use axum::http::HeaderMap;
use serde_json::Value;
use std::collections::BTreeMap;

/// The group whose members may do anything (kube-apiserver's privileged group).
pub const MASTERS: &str = "system:masters";
/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group of requests without credentials.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user of requests without credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// The API group of Roles and bindings.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The bearer token of the sandbox's own kubeconfigs: a cluster administrator.
pub const ADMIN_TOKEN: &str = "sandbox";
/// The user that token authenticates as.
pub const ADMIN_USER: &str = "sandbox-admin";

/// An authenticated (or anonymous) user, as `user.Info` in kube-apiserver.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    /// User name (`system:serviceaccount:NS:NAME` for ServiceAccounts).
    pub name: String,
    /// Uid (a ServiceAccount's uid), or empty.
    pub uid: String,
    /// Groups, `system:authenticated` included when authenticated.
    pub groups: Vec<String>,
    /// Extra attributes (from impersonation or token bindings).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// The sandbox's administrator.
    pub fn admin() -> User {
        User {
            name: ADMIN_USER.into(),
            groups: vec![MASTERS.into(), AUTHENTICATED.into()],
            ..User::default()
        }
    }

    /// A request without credentials.
    pub fn anonymous() -> User {
        User {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
            ..User::default()
        }
    }

    /// The ServiceAccount `namespace/name` with the groups kube-apiserver gives it.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> User {
        let mut groups = service_account_groups(namespace);
        groups.push(AUTHENTICATED.into());
        User {
            name: service_account_user(namespace, name),
            uid: uid.into(),
            groups,
            extra: BTreeMap::new(),
        }
    }

    /// Whether the user is in `system:masters`, whom nothing is refused.
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

/// The user name of a ServiceAccount.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// A ServiceAccount's groups (without `system:authenticated`).
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".into(),
        format!("system:serviceaccounts:{namespace}"),
    ]
}

/// `(namespace, name)` of a ServiceAccount user name.
pub fn split_service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

/// Go's `%q` of a string slice: `["a" "b"]`.
pub fn go_quoted(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// Why a request is refused before it is served.
#[derive(Debug)]
pub enum Denial {
    /// Its credentials are not valid (401).
    Unauthorized(crate::Error),
    /// Its impersonation headers were refused (500 or 403).
    Impersonation(impersonate::Refusal),
    /// RBAC does not allow it: the 403 `Status`.
    Forbidden(Value),
}

/// Authentication, impersonation and authorization, in kube-apiserver's order: the user a
/// request with these headers and attributes acts as, or why it is refused.
pub fn admit(store: &Store, headers: &HeaderMap, attrs: &Attributes) -> Result<User, Denial> {
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let user = authn::authenticate(store, authorization).map_err(Denial::Unauthorized)?;
    if user.is_master() && !impersonate::requested(headers) {
        // The authorizer chain allows masters before RBAC: no policy to read.
        return Ok(user);
    }
    let policy = store.policy();
    let user = impersonate::impersonate(&policy, user, headers).map_err(Denial::Impersonation)?;
    let decision = rbac::authorize(&policy, &user, attrs);
    if !decision.allowed {
        return Err(Denial::Forbidden(rbac::forbidden_status(
            &user,
            attrs,
            &decision.reason,
        )));
    }
    Ok(user)
}
