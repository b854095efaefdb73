//! Faults in front of the API: what a request meets before it is served, and the admin
//! endpoint `/sandbox/faults` through which tests (and `kubectl sveltos-events sandbox
//! fault`) inject them: `GET` lists those in force, `POST {"kind": ..., "seconds": n}` adds
//! one, `DELETE` ends them all. Only cluster admins reach it (RBAC on a non-resource URL).

use super::{Req, response};
use crate::error::Error;
use crate::faults::{Fault, Verdict};
use crate::store::Store;
use axum::http::Method;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

/// The answer a request gets instead of being served, if a fault fails it (after the
/// injected latency either way).
pub async fn meet(store: &Store, req: &Req) -> Option<Response> {
    let api = matches!(
        req.segments.first().map(String::as_str),
        Some("api" | "apis")
    );
    if !api {
        return None;
    }
    let (delay, verdict) = store.faults().before(req.method == Method::PUT);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let error = match verdict {
        Verdict::Serve => return None,
        Verdict::Fail(409) => Error::Conflict {
            message: "Operation cannot be fulfilled: the object has been modified; please apply \
                      your changes to the latest version and try again (injected fault)"
                .into(),
            fields: Vec::new(),
        },
        Verdict::Fail(429) => Error::TooManyRequests(
            "Too many requests, please try again later. (injected fault)".into(),
        ),
        Verdict::Fail(503) => Error::Unavailable(
            "The server is currently unable to handle the request (injected fault)".into(),
        ),
        Verdict::Fail(_) => Error::Internal("Internal error occurred: injected fault".into()),
    };
    Some(response::error(&error, None))
}

/// A fault as posted: the fault and how long it lasts.
#[derive(Deserialize)]
struct Posted {
    #[serde(flatten)]
    fault: Fault,
    seconds: f64,
}

/// Serves `/sandbox/faults`.
pub fn admin(store: &Store, req: &Req) -> Response {
    let faults = store.faults();
    match req.method {
        Method::GET => response::json(200, &json!({"items": faults.active()})),
        Method::DELETE => {
            faults.clear();
            response::json(200, &json!({"items": []}))
        }
        Method::POST => {
            let posted: Posted = match serde_json::from_slice(&req.body) {
                Ok(posted) => posted,
                Err(e) => {
                    return response::error(&Error::BadRequest(format!("not a fault: {e}")), None);
                }
            };
            let lasting = Duration::try_from_secs_f64(posted.seconds)
                .ok()
                .filter(|d| *d <= Duration::from_secs(3600));
            let Some(lasting) = lasting else {
                return response::error(
                    &Error::BadRequest(format!(
                        "seconds must be between 0 and 3600, not {}",
                        posted.seconds
                    )),
                    None,
                );
            };
            if let Err(why) = posted.fault.check() {
                return response::error(&Error::BadRequest(why), None);
            }
            tracing::info!(fault = ?posted.fault, seconds = posted.seconds, "fault injected");
            faults.inject(posted.fault, lasting);
            response::json(201, &json!({"items": faults.active()}))
        }
        _ => response::error(
            &Error::MethodNotAllowed(format!("{} is not allowed on /sandbox/faults", req.method)),
            None,
        ),
    }
}
