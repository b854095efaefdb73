//! Response helpers: JSON bodies and `Status` error objects.

use crate::error::Error;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

/// A JSON response with a status code and content type; the body ends with a newline, as
/// Go's `json.Encoder` writes it.
pub fn json_with(code: u16, content_type: &'static str, value: &Value) -> Response {
    let mut body = serde_json::to_vec(value).unwrap_or_default();
    body.push(b'\n');
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
    // In the order of Go's `metav1.Status` fields (clients compare error bodies as text):
    // kind, apiVersion, metadata, status, message, reason, details, code.
    let mut v = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": err.to_string(), "reason": err.reason(),
    });
    if err.reason().is_empty()
        && let Some(map) = v.as_object_mut()
    {
        map.remove("reason");
    }
    let mut details = details;
    match err {
        Error::ContinueExpired { token } => v["metadata"]["continue"] = json!(token),
        Error::TooManyRequests(_) => {
            details.get_or_insert_with(|| json!({}))["retryAfterSeconds"] = json!(1);
        }
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
        v["details"] = go_order(
            &details,
            &[
                "name",
                "group",
                "kind",
                "uid",
                "causes",
                "retryAfterSeconds",
            ],
        );
        if let Some(causes) = v
            .get_mut("details")
            .and_then(|d| d.get_mut("causes"))
            .and_then(Value::as_array_mut)
        {
            for cause in causes {
                *cause = go_order(cause, &["reason", "message", "field"]);
            }
        }
    }
    v["code"] = json!(err.code());
    v
}

/// `object` with its fields in the order of a Go struct's: `fields` first, in that order,
/// then any other.
fn go_order(object: &Value, fields: &[&str]) -> Value {
    let Some(map) = object.as_object() else {
        return object.clone();
    };
    let mut ordered = serde_json::Map::new();
    for field in fields {
        if let Some(value) = map.get(*field) {
            ordered.insert((*field).to_owned(), value.clone());
        }
    }
    for (key, value) in map {
        if !ordered.contains_key(key) {
            ordered.insert(key.clone(), value.clone());
        }
    }
    Value::Object(ordered)
}

/// An error response.
pub fn error(err: &Error, details: Option<Value>) -> Response {
    let mut response = json(err.code(), &status_body(err, details));
    if let Error::TooManyRequests(_) = err {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_laid_out_byte_for_byte_as_go_writes_it() {
        let err = Error::AlreadyExists("services \"web\" already exists".into());
        let details = json!({"kind": "services", "name": "web"});
        let body = serde_json::to_vec(&status_body(&err, Some(details))).unwrap_or_default();
        assert_eq!(
            String::from_utf8_lossy(&body),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"services \"web\" already exists","reason":"AlreadyExists","details":{"name":"web","kind":"services"},"code":409}"#
        );
        let invalid = Error::InvalidFields {
            subject: "Pod \"p\"".into(),
            causes: vec![("spec.containers".into(), "Required value".into())],
        };
        let details = json!({"causes": [{"field": "spec.containers", "message": "Required value",
                                         "reason": "FieldValueRequired"}], "kind": "Pod", "name": "p"});
        let body = serde_json::to_string(&status_body(&invalid, Some(details))).unwrap_or_default();
        assert!(
            body.ends_with(r#""details":{"name":"p","kind":"Pod","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.containers"}]},"code":422}"#),
            "{body}"
        );
    }
}
