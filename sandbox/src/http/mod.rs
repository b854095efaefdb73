//! The HTTP layer: Kubernetes REST paths on top of a [`Store`].

pub mod authz;
pub mod discovery;
pub mod faults;
pub mod list_options;
pub mod openapi;
pub mod partial;
pub mod protobuf;
pub mod resources;
pub mod response;
pub mod table;
pub mod watch;

use crate::auth::impersonate::Refusal;
use crate::auth::{self, Attributes, Denial, User};
use crate::error::Error;
use crate::store::Store;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use std::collections::HashMap;
use std::sync::Arc;

/// Largest request body accepted (the real server's limit is 3 MiB per object).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// The HTTP router serving one cluster. It is a tower `Service`, usable over TCP or in-process.
pub fn router(store: Arc<Store>) -> Router {
    Router::new().fallback(handle).with_state(store)
}

/// A parsed request, handed to the per-concern handlers.
#[derive(Debug)]
pub struct Req {
    /// HTTP method.
    pub method: Method,
    /// Path segments (percent-decoded).
    pub segments: Vec<String>,
    /// Query parameters (last value wins; empty pairs skipped).
    pub query: HashMap<String, String>,
    /// Request headers.
    pub headers: HeaderMap,
    /// Request body.
    pub body: Bytes,
    /// The user the request acts as (after authentication and impersonation).
    pub user: User,
}

impl Req {
    /// A query parameter.
    pub fn q(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    /// A header as text ("" when absent).
    pub fn header(&self, key: &str) -> &str {
        self.headers
            .get(key)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

fn percent_decode(s: &str) -> String {
    percent_decode_with(s, true)
}

/// `%XX` escapes decoded (and `+` read as a space when `plus_is_space`, as in queries).
pub(crate) fn percent_decode_with(s: &str, plus_is_space: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], decoded) {
            (_, Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', None) if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            (b, None) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

async fn handle(State(store): State<Arc<Store>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(error) => {
            let too_large = error
                .into_inner()
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            let error = if too_large {
                Error::EntityTooLarge(MAX_BODY)
            } else {
                Error::BadRequest("request body unreadable".into())
            };
            return response::error(&error, None);
        }
    };
    let segments: Vec<String> = parts
        .uri
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode(s).replace(' ', "+"))
        .collect();
    let query = parse_query(parts.uri.query().unwrap_or(""));
    let attrs = Attributes::of_request(parts.method.as_str(), &segments, &query);
    let user = match admit(&store, &parts.headers, &attrs) {
        Ok(user) => user,
        Err(refusal) => return *refusal,
    };
    let req = Req {
        method: parts.method,
        segments,
        query,
        headers: parts.headers,
        body,
        user,
    };
    tracing::debug!(method = %req.method, path = %parts.uri, user = %req.user.name, "request");
    let reads = matches!(req.method, Method::GET | Method::HEAD | Method::OPTIONS);
    if let Some(refused) = faults::meet(&store, &req).await {
        return refused;
    }
    let response = dispatch(&store, req).await;
    // A write is answered once it is on disk, as kube-apiserver answers once etcd has it, and
    // a read shows nothing a restart could take back (watches wait event by event).
    if let Err(error) = store.persisted().await
        && !reads
    {
        return response::error(&error, None);
    }
    response
}

/// The user the request acts as, or the 401, 403 (or 500) answer refusing it.
fn admit(
    store: &Store,
    headers: &HeaderMap,
    attrs: &Attributes,
) -> std::result::Result<User, Box<Response>> {
    auth::admit(store, headers, attrs).map_err(|denial| {
        Box::new(match denial {
            Denial::Unauthorized(e) => response::error(&e, None),
            Denial::Forbidden(status) => response::json(403, &status),
            Denial::Impersonation(Refusal::Forbidden(status)) => response::json(403, &status),
            Denial::Impersonation(Refusal::Internal(why)) => response::text_owned(
                500,
                format!("Internal Server Error: {:?}: {why}\n", attrs.path),
            ),
        })
    })
}

async fn dispatch(store: &Arc<Store>, req: Req) -> Response {
    let segs: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    match segs.as_slice() {
        ["version"] => discovery::version(),
        ["healthz" | "livez" | "readyz", ..] => response::text(200, "ok"),
        ["sandbox", "faults"] => faults::admin(store, &req),
        ["openapi", "v3"] => openapi::index(store),
        ["openapi", "v3", rest @ ..] => openapi::group_version(store, rest),
        ["openapi", ..] => response::error(
            &Error::NotFound("the server could not find the requested resource".into()),
            None,
        ),
        ["api"] => discovery::api(store, &req),
        ["apis"] => discovery::apis(store, &req),
        ["api", "v1"] => discovery::resource_list(store, "", "v1"),
        ["apis", group] => discovery::group(store, group),
        ["apis", group, version] => discovery::resource_list(store, group, version),
        ["api", "v1", rest @ ..] => resources::handle(store, &req, "", "v1", rest).await,
        ["apis", group, version, rest @ ..] => {
            resources::handle(store, &req, group, version, rest).await
        }
        _ => response::error(
            &Error::NotFound("the server could not find the requested resource".into()),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kube_rs_queries() {
        let q = parse_query("&labelSelector=a%3Db%2Cc+in+%28x%29&watch=true&");
        assert_eq!(q["labelSelector"], "a=b,c in (x)");
        assert_eq!(q["watch"], "true");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
