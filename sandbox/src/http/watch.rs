//! Watch streams: history replay from a resourceVersion, 410 as an in-stream ERROR event,
//! bookmarks, `timeoutSeconds` and `sendInitialEvents`.

use super::{Req, response};
use crate::error::{Error, Result};
use crate::registry::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Event, Store, WatchFrom};
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::Instant;

/// Parsed watch parameters.
#[derive(Debug, Clone)]
struct Params {
    from: WatchFrom,
    timeout: Option<Duration>,
    bookmarks: bool,
    initial_events: bool,
    labels: LabelSelector,
    fields: FieldSelector,
}

fn params(req: &Req) -> Result<Params> {
    let initial_events = req.q("sendInitialEvents") == Some("true");
    let rv = req.q("resourceVersion").unwrap_or("");
    let from = if rv.is_empty() || rv == "0" || initial_events {
        WatchFrom::Now
    } else {
        WatchFrom::After(rv.parse().map_err(|_| {
            Error::BadRequest(format!(
                "resourceVersion: Invalid value: \"{rv}\": must be a number"
            ))
        })?)
    };
    Ok(Params {
        from,
        timeout: req
            .q("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .map(Duration::from_secs),
        bookmarks: req.q("allowWatchBookmarks") == Some("true"),
        initial_events,
        labels: LabelSelector::parse(req.q("labelSelector").unwrap_or(""))?,
        fields: FieldSelector::parse(req.q("fieldSelector").unwrap_or(""))?,
    })
}

struct Stream {
    store: Arc<Store>,
    info: Arc<ResourceInfo>,
    ns: Option<String>,
    p: Params,
    replay: VecDeque<Arc<Event>>,
    rx: broadcast::Receiver<Arc<Event>>,
    deadline: Option<Instant>,
    initial_bookmark: Option<u64>,
    last_rv: u64,
    done: bool,
}

impl Stream {
    fn matches(&self, ev: &Event) -> bool {
        ev.gr.group == self.info.group
            && ev.gr.resource == self.info.plural
            && self.ns.as_deref().is_none_or(|n| n == ev.namespace)
            && self.p.labels.matches(&ev.object)
            && self.p.fields.matches(&ev.object)
    }

    fn frame(&self, ev: &Event) -> Bytes {
        let av = self.info.api_version();
        if ev.object.get("apiVersion").and_then(Value::as_str) == Some(av.as_str()) {
            return Bytes::from(ev.line().as_bytes().to_vec());
        }
        match self.store.to_version(&self.info, &ev.object) {
            Ok(obj) => line(&json!({"type": ev.kind.as_str(), "object": obj})),
            Err(e) => line(&json!({"type": "ERROR", "object": response::status_body(&e, None)})),
        }
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut md = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line(&json!({"type": "BOOKMARK", "object": {
            "kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": md}}))
    }

    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if self.done {
                return None;
            }
            if let Some(ev) = self.replay.pop_front() {
                if self.matches(&ev) {
                    return Some(self.frame(&ev));
                }
                continue;
            }
            if let Some(rv) = self.initial_bookmark.take() {
                return Some(self.bookmark(rv, true));
            }
            let sleep = async {
                match self.deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                ev = self.rx.recv() => match ev {
                    Ok(ev) => {
                        if ev.rv <= self.last_rv {
                            continue;
                        }
                        self.last_rv = ev.rv;
                        if self.matches(&ev) {
                            return Some(self.frame(&ev));
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        self.done = true;
                        return Some(expired(self.last_rv));
                    }
                    Err(RecvError::Closed) => return None,
                },
                () = sleep => {
                    self.done = true;
                    if self.p.bookmarks {
                        return Some(self.bookmark(self.last_rv, false));
                    }
                    return None;
                }
            }
        }
    }
}

fn line(v: &Value) -> Bytes {
    let mut out = serde_json::to_vec(v).unwrap_or_default();
    out.push(b'\n');
    Bytes::from(out)
}

fn expired(rv: u64) -> Bytes {
    let err = Error::Expired(format!("too old resource version: {rv}"));
    line(&json!({"type": "ERROR", "object": response::status_body(&err, None)}))
}

fn stream_response(
    stream: impl futures_util::Stream<Item = std::result::Result<Bytes, Infallible>> + Send + 'static,
) -> Response {
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// Serve `GET ...?watch=true` for a resource (in one namespace or all).
pub fn serve(
    store: &Arc<Store>,
    req: &Req,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
) -> Response {
    let p = match params(req) {
        Ok(p) => p,
        Err(e) => return response::error(&e, None),
    };
    let (replay, rx, now) = match store.watch(info, ns, p.from) {
        Ok(r) => r,
        Err(e @ Error::Expired(_)) => {
            let frame = line(&json!({"type": "ERROR", "object": response::status_body(&e, None)}));
            return stream_response(futures_util::stream::iter([Ok(frame)]));
        }
        Err(e) => return response::error(&e, None),
    };
    let initial_bookmark = (p.initial_events && p.bookmarks).then_some(now);
    let state = Stream {
        store: Arc::clone(store),
        info: info.clone(),
        ns: ns.map(str::to_owned),
        deadline: p.timeout.map(|t| Instant::now() + t),
        p,
        replay: replay.into(),
        rx,
        initial_bookmark,
        last_rv: now,
        done: false,
    };
    let stream =
        futures_util::stream::unfold(
            state,
            |mut s| async move { s.next().await.map(|b| (Ok(b), s)) },
        );
    stream_response(stream)
}
