//! The authorization and authentication APIs: access reviews (self, subject, local), rules
//! reviews, and TokenRequest (`serviceaccounts/NAME/token`), answered from the cluster's
//! RBAC policy and signing key.

use super::{Req, response};
use crate::auth::authn::now;
use crate::auth::jwt::{ISSUER, bound_claims};
use crate::auth::rbac::{Rule, authorize};
use crate::auth::{Attributes, User};
use crate::error::{Error, Result};
use crate::meta::{meta_str, rfc3339, strings};
use crate::store::Store;
use axum::http::Method;
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The shortest and longest token lifetimes TokenRequest accepts.
const MIN_EXPIRATION: u64 = 600;
const MAX_EXPIRATION: u64 = 1 << 32;
/// The lifetime of a token when the request names none.
const DEFAULT_EXPIRATION: u64 = 3600;

fn body_of(req: &Req) -> Result<Value> {
    super::resources::decode_body(req)
}

fn invalid(kind: &str, group: &str, name: &str, field: &str, detail: &str) -> Error {
    Error::Invalid(format!(
        "{kind}.{group} {name:?} is invalid: {field}: {detail}"
    ))
}

/// Answers a POST below `/apis/authorization.k8s.io/v1/` (`rest` is the path after it).
pub fn review(store: &Store, req: &Req, rest: &[&str]) -> Response {
    let result = (|| {
        if req.method != Method::POST {
            return Err(Error::MethodNotAllowed(
                "the server does not allow this method on the requested resource".into(),
            ));
        }
        let body = body_of(req)?;
        match rest {
            ["selfsubjectaccessreviews"] => access_review(store, body, &req.user, None),
            ["selfsubjectrulesreviews"] => rules_review(store, body, &req.user),
            ["subjectaccessreviews"] => {
                let subject = subject_of(&body)?;
                access_review(store, body, &subject, None)
            }
            ["namespaces", namespace, "localsubjectaccessreviews"] => {
                let subject = subject_of(&body)?;
                access_review(store, body, &subject, Some(namespace))
            }
            _ => Err(Error::NotFound(
                "the server could not find the requested resource".into(),
            )),
        }
    })();
    result.unwrap_or_else(|e| {
        let details = match &e {
            Error::BadRequest(_) => None,
            Error::Invalid(message) => Some(super::resources::invalid_details(message)),
            _ => Some(json!({})),
        };
        response::error(&e, details)
    })
}

/// Review objects are validated as their internal types, which have no kind: messages say
/// `.authorization.k8s.io "" is invalid: ...`.
fn invalid_review(field: &str, detail: &str) -> Error {
    invalid("", "authorization.k8s.io", "", field, detail)
}

/// The attributes as the response echoes them: empty fields omitted.
fn without_empty(attributes: &Value) -> Value {
    match attributes.as_object() {
        Some(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| v.as_str() != Some(""))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        None => attributes.clone(),
    }
}

/// The user a SubjectAccessReview asks about.
fn subject_of(body: &Value) -> Result<User> {
    let spec = &body["spec"];
    let user = User {
        name: spec["user"].as_str().unwrap_or_default().to_owned(),
        uid: spec["uid"].as_str().unwrap_or_default().to_owned(),
        groups: strings(&spec["groups"]),
        extra: spec["extra"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), strings(v)))
            .collect::<BTreeMap<_, _>>(),
    };
    if user.name.is_empty() && user.groups.is_empty() {
        return Err(invalid_review(
            "spec.user",
            "Invalid value: \"\": at least one of user or group must be specified",
        ));
    }
    Ok(user)
}

fn access_review(
    store: &Store,
    mut body: Value,
    user: &User,
    local_namespace: Option<&str>,
) -> Result<Response> {
    let spec = &body["spec"];
    let resource = &spec["resourceAttributes"];
    let non_resource = &spec["nonResourceAttributes"];
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let attrs = match (resource.is_object(), non_resource.is_object()) {
        (true, false) => Attributes {
            verb: text(resource, "verb"),
            resource_request: true,
            group: text(resource, "group"),
            version: text(resource, "version"),
            resource: text(resource, "resource"),
            subresource: text(resource, "subresource"),
            namespace: text(resource, "namespace"),
            name: text(resource, "name"),
            path: String::new(),
        },
        (false, true) => Attributes {
            verb: text(non_resource, "verb"),
            path: text(non_resource, "path"),
            ..Attributes::default()
        },
        (both, _) => {
            let (field, value) = if both {
                ("spec.nonResourceAttributes", "{}")
            } else {
                ("spec.resourceAttributes", "\"null\"")
            };
            return Err(invalid_review(
                field,
                &format!(
                    "Invalid value: {value}: exactly one of nonResourceAttributes or resourceAttributes must be specified"
                ),
            ));
        }
    };
    if let Some(namespace) = local_namespace {
        // As any create: a namespace in the body must be the URL's; the attributes' must be
        // the body's (so a body without one is refused).
        let declared = meta_str(&body, "namespace");
        if !declared.is_empty() && declared != namespace {
            return Err(Error::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            ));
        }
        if attrs.namespace != declared {
            return Err(invalid_review(
                "spec.resourceAttributes.namespace",
                &format!(
                    "Invalid value: {:?}: must match metadata.namespace",
                    attrs.namespace
                ),
            ));
        }
    }
    let decision = authorize(&store.policy(), user, &attrs);
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    for key in ["resourceAttributes", "nonResourceAttributes"] {
        if body["spec"][key].is_object() {
            body["spec"][key] = without_empty(&body["spec"][key]);
        }
    }
    body["status"] = status;
    body["metadata"]["creationTimestamp"] = Value::Null;
    Ok(response::json(201, &body))
}

fn rules_review(store: &Store, mut body: Value, user: &User) -> Result<Response> {
    let namespace = body["spec"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if namespace.is_empty() {
        return Err(Error::BadRequest("no namespace on request".into()));
    }
    let (rules, errors) = store.policy().rules_for(user, &namespace);
    let resource_rules: Vec<Value> = rules
        .iter()
        .filter(|r| !r.resources.is_empty())
        .map(|r| {
            Rule {
                non_resource_urls: Vec::new(),
                ..r.clone()
            }
            .to_json()
        })
        .collect();
    let url_rules: Vec<Value> = rules
        .iter()
        .filter(|r| !r.non_resource_urls.is_empty())
        .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules, "nonResourceRules": url_rules, "incomplete": false,
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(format!("[{}]", errors.join(", ")));
    }
    // The answer is a new object: the status alone.
    body["metadata"] = json!({"creationTimestamp": null});
    body["spec"] = json!({});
    body["status"] = status;
    Ok(response::json(201, &body))
}

/// `POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`: a bound token for the account.
pub fn token_request(store: &Store, req: &Req, namespace: &str, name: &str) -> Response {
    token(store, req, namespace, name).unwrap_or_else(|e| {
        let details = store
            .resolve("", "v1", "serviceaccounts")
            .and_then(|info| super::resources::error_details(&e, &info, Some(name)));
        response::error(&e, details)
    })
}

fn token(store: &Store, req: &Req, namespace: &str, name: &str) -> Result<Response> {
    if req.method != Method::POST {
        return Err(Error::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        ));
    }
    let mut body = body_of(req)?;
    let seconds = body["spec"]["expirationSeconds"]
        .as_u64()
        .unwrap_or(DEFAULT_EXPIRATION);
    let too = if seconds < MIN_EXPIRATION {
        Some("may not specify a duration less than 10 minutes")
    } else if seconds > MAX_EXPIRATION {
        Some("may not specify a duration larger than 2^32 seconds")
    } else {
        None
    };
    if let Some(why) = too {
        return Err(invalid(
            "TokenRequest",
            "authentication.k8s.io",
            "",
            "spec.expirationSeconds",
            &format!("Invalid value: {seconds}: {why}"),
        ));
    }
    let info = store
        .resolve("", "v1", "serviceaccounts")
        .ok_or_else(|| Error::Internal("serviceaccounts are not served".into()))?;
    let account = store.get(&info, namespace, name)?;
    let uid = meta_str(&account, "uid");
    let mut audiences = strings(&body["spec"]["audiences"]);
    if audiences.is_empty() {
        audiences.push(ISSUER.into());
    }
    let now = now();
    let mut claims = bound_claims(namespace, name, uid, &audiences, now, seconds);
    let bound = body["spec"]["boundObjectRef"].clone();
    if bound.is_object() {
        let kind = bound["kind"].as_str().unwrap_or_default();
        let plural = match kind {
            "Pod" => "pods",
            "Secret" => "secrets",
            _ => {
                return Err(Error::BadRequest(format!(
                    "cannot bind token for serviceaccount {name:?} to object of kind {kind:?}"
                )));
            }
        };
        let object_info = store
            .resolve("", "v1", plural)
            .ok_or_else(|| Error::Internal(format!("{plural} are not served")))?;
        let object_name = bound["name"].as_str().unwrap_or_default();
        let object = store.get(&object_info, namespace, object_name)?;
        let object_uid = meta_str(&object, "uid");
        let wanted_uid = bound["uid"].as_str().unwrap_or_default();
        if !wanted_uid.is_empty() && wanted_uid != object_uid {
            return Err(Error::Conflict {
                message: format!(
                    "the UID in the bound object reference ({wanted_uid}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
                fields: Vec::new(),
            });
        }
        claims["kubernetes.io"][kind.to_ascii_lowercase()] =
            json!({"name": object_name, "uid": object_uid});
    }
    body["metadata"] = json!({"creationTimestamp": null});
    body["spec"]["audiences"] = json!(audiences);
    body["spec"]["expirationSeconds"] = json!(seconds);
    if !bound.is_object() {
        body["spec"]["boundObjectRef"] = Value::Null;
    }
    body["status"] = json!({
        "token": store.signing_key().sign(&claims),
        "expirationTimestamp": rfc3339(now + seconds),
    });
    Ok(response::json(201, &body))
}
