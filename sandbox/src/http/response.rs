//! Response helpers: JSON bodies and `Status` error objects.

use crate::error::Error;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

/// A JSON response with a status code and content type.
pub fn json_with(code: u16, content_type: &'static str, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// A `200`/`201` JSON response.
pub fn json(code: u16, value: &Value) -> Response {
    json_with(code, "application/json", value)
}

/// A plain-text response.
pub fn text(code: u16, body: &'static str) -> Response {
    text_owned(code, body.to_owned())
}

/// A plain-text response with a computed body.
pub fn text_owned(code: u16, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// The `Status` object describing an error, with optional details.
pub fn status_body(err: &Error, details: Option<Value>) -> Value {
    let mut v = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": err.to_string(), "reason": err.reason(), "code": err.code(),
    });
    if err.reason().is_empty()
        && let Some(map) = v.as_object_mut()
    {
        map.remove("reason");
    }
    let mut details = details;
    match err {
        Error::ContinueExpired { token } => v["metadata"]["continue"] = json!(token),
        Error::TooLargeResourceVersion { retry_after, .. } => {
            let details = details.get_or_insert_with(|| json!({}));
            details["causes"] = json!([{"reason": "ResourceVersionTooLarge",
                                        "message": "Too large resource version"}]);
            if *retry_after > 0 {
                details["retryAfterSeconds"] = json!(retry_after);
            }
        }
        _ => {}
    }
    if let Error::Conflict { fields, .. } = err
        && !fields.is_empty()
    {
        let details = details.get_or_insert_with(|| json!({}));
        details["causes"] = fields
            .iter()
            .map(|(m, f)| {
                json!({"reason": "FieldManagerConflict",
                           "message": m, "field": f})
            })
            .collect();
    }
    if let Some(details) = details {
        v["details"] = details;
    }
    v
}

/// An error response.
pub fn error(err: &Error, details: Option<Value>) -> Response {
    json(err.code(), &status_body(err, details))
}
