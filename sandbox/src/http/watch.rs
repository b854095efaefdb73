//! Watch streams: history replay from a resourceVersion, 410 as an in-stream ERROR event,
//! bookmarks (every minute and at the timeout, as kube-apiserver's watch cache sends them),
//! `timeoutSeconds` and `sendInitialEvents`.

use super::{Req, response};
use crate::error::{Error, Result};
use crate::faults::Fault;
use crate::registry::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Event, EventType, Store, WatchFrom};
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::{
    self,
    error::{RecvError, TryRecvError},
};
use tokio::time::{Instant, Sleep};

/// Parsed watch parameters.
#[derive(Debug, Clone)]
struct Params {
    from: WatchFrom,
    timeout: Option<Duration>,
    bookmarks: bool,
    initial_events: bool,
    labels: LabelSelector,
    fields: FieldSelector,
    /// Objects as `PartialObjectMetadata`.
    metadata_only: bool,
}

fn params(req: &Req, info: &ResourceInfo) -> Result<Params> {
    super::list_options::validate(req, true)?;
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
        fields: super::resources::field_selector(req, info)?,
        metadata_only: super::partial::wanted(req),
    })
}

/// How often a watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

struct Stream {
    store: Arc<Store>,
    info: Arc<ResourceInfo>,
    ns: Option<String>,
    p: Params,
    replay: VecDeque<Arc<Event>>,
    rx: broadcast::Receiver<Arc<Event>>,
    /// Ends the watch (`timeoutSeconds`).
    deadline: Option<Pin<Box<Sleep>>>,
    initial_bookmark: Option<u64>,
    /// Fires when the next periodic bookmark is due (only when bookmarks are allowed); one
    /// timer per watch, reset after each bookmark.
    next_bookmark: Option<Pin<Box<Sleep>>>,
    last_rv: u64,
    done: bool,
    /// Changes when an injected fault drops every watch.
    drops: tokio::sync::watch::Receiver<u64>,
}

impl Stream {
    /// A watch from the answer of [`Store::watch`]: `replay` then `rx`, from `now`.
    fn new(
        store: &Arc<Store>,
        info: Arc<ResourceInfo>,
        ns: Option<&str>,
        p: Params,
        (replay, rx, now): (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>, u64),
    ) -> Self {
        Stream {
            store: Arc::clone(store),
            info,
            ns: ns.map(str::to_owned),
            deadline: p.timeout.map(|t| Box::pin(tokio::time::sleep(t))),
            initial_bookmark: (p.initial_events && p.bookmarks).then_some(now),
            next_bookmark: p
                .bookmarks
                .then(|| Box::pin(tokio::time::sleep(BOOKMARK_EVERY))),
            p,
            replay: replay.into(),
            rx,
            last_rv: now,
            done: false,
            drops: store.faults().drops(),
        }
    }

    fn selects(&self, object: &Value) -> bool {
        self.p.labels.matches(object) && self.p.fields.matches(object)
    }

    /// The frame `ev` is for this watch, if any. With a selector, a change that brings an
    /// object into the selection is ADDED and one that takes it out is DELETED (carrying the
    /// object as it was, at the change's resourceVersion), as kube-apiserver's watch cache
    /// tells them.
    fn translate(&self, ev: &Event) -> Option<Bytes> {
        if ev.gr != self.info.group_resource()
            || self.ns.as_deref().is_some_and(|n| n != ev.namespace)
        {
            return None;
        }
        let now = self.selects(&ev.object);
        let was = ev
            .previous
            .as_deref()
            .map(|previous| self.selects(previous));
        match (was, now) {
            (Some(false), true) => Some(self.frame_as(EventType::Added, &ev.object)),
            (Some(true), false) => {
                let mut gone = ev.previous.as_deref()?.clone();
                crate::meta::metadata_mut(&mut gone)
                    .insert("resourceVersion".into(), Value::String(ev.rv.to_string()));
                Some(self.frame_as(EventType::Deleted, &gone))
            }
            (_, true) => Some(self.frame(ev)),
            (_, false) => None,
        }
    }

    fn frame_as(&self, kind: EventType, object: &Value) -> Bytes {
        match self.store.to_version(&self.info, object) {
            Ok(obj) if self.p.metadata_only => {
                line(&json!({"type": kind.as_str(), "object": super::partial::object(&obj)}))
            }
            Ok(obj) => line(&json!({"type": kind.as_str(), "object": obj})),
            Err(e) => line(&json!({"type": "ERROR", "object": response::status_body(&e, None)})),
        }
    }

    fn frame(&self, ev: &Event) -> Bytes {
        let av = self.info.api_version();
        if !self.p.metadata_only
            && ev.object.get("apiVersion").and_then(Value::as_str) == Some(av.as_str())
        {
            return Bytes::from_owner(Line(ev.line()));
        }
        self.frame_as(ev.kind, &ev.object)
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut md = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line(&json!({"type": "BOOKMARK", "object": {
            "kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": md}}))
    }

    /// Whether `ev` comes after what this watch has told (a replayed event may also arrive
    /// live); if so, it is the last told from now on.
    fn is_new(&mut self, ev: &Event) -> bool {
        let new = ev.rv > self.last_rv;
        if new {
            self.last_rv = ev.rv;
        }
        new
    }

    /// The watch fell behind its live events: it ends with a 410 frame.
    fn lagged(&mut self) -> Bytes {
        self.done = true;
        expired(self.last_rv)
    }

    /// The next frames: one, and after it every frame already waiting, up to [`BATCH`]
    /// bytes, as one chunk. A busy watch is then one write (and one TLS record) for many
    /// events rather than one for each; a client reads the same lines either way.
    async fn next(&mut self) -> Option<Bytes> {
        let first = self.next_one().await?;
        let mut batch: Option<Vec<u8>> = None;
        let mut last = None;
        while batch.as_ref().map_or(first.len(), Vec::len) < BATCH && !self.done {
            let ev = if let Some(ev) = self.replay.pop_front() {
                ev
            } else {
                match self.rx.try_recv() {
                    Ok(ev) if self.is_new(&ev) => ev,
                    Ok(_) => continue,
                    Err(TryRecvError::Lagged(_)) => {
                        let expired = self.lagged();
                        let out = batch.get_or_insert_with(|| first.to_vec());
                        out.extend_from_slice(&expired);
                        break;
                    }
                    Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                }
            };
            last = Some(ev.rv);
            if let Some(frame) = self.translate(&ev) {
                batch
                    .get_or_insert_with(|| first.to_vec())
                    .extend_from_slice(&frame);
            }
        }
        // Nothing is told before it is kept: a restart cannot take it back.
        if let Some(rv) = last {
            let _ = self.store.persisted_to(rv).await;
        }
        Some(batch.map_or(first, Bytes::from))
    }

    /// The next frame alone, waiting for it.
    async fn next_one(&mut self) -> Option<Bytes> {
        loop {
            if self.done {
                return None;
            }
            if let Some(ev) = self.replay.pop_front() {
                // Nothing is told before it is kept: a restart cannot take it back.
                let _ = self.store.persisted_to(ev.rv).await;
                if let Some(frame) = self.translate(&ev) {
                    return Some(frame);
                }
                continue;
            }
            if let Some(rv) = self.initial_bookmark.take() {
                return Some(self.bookmark(rv, true));
            }
            let sleep = async {
                match self.deadline.as_mut() {
                    Some(deadline) => deadline.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            let bookmark_due = async {
                match self.next_bookmark.as_mut() {
                    Some(due) => {
                        due.as_mut().await;
                        due.as_mut().reset(Instant::now() + BOOKMARK_EVERY);
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = self.drops.changed() => {
                    self.done = true;
                    return None;
                }
                () = bookmark_due => {
                    return Some(self.bookmark(self.last_rv, false));
                }
                ev = self.rx.recv() => match ev {
                    Ok(ev) => {
                        if !self.is_new(&ev) {
                            continue;
                        }
                        let _ = self.store.persisted_to(ev.rv).await;
                        if let Some(frame) = self.translate(&ev) {
                            return Some(frame);
                        }
                    }
                    Err(RecvError::Lagged(_)) => return Some(self.lagged()),
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

/// The bytes a watch gathers into one chunk before sending it.
const BATCH: usize = 64 << 10;

/// An event's shared frame, as the bytes of a chunk (no copy for a frame sent alone).
struct Line(Arc<str>);

impl AsRef<[u8]> for Line {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
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
    let p = match params(req, info) {
        Ok(p) => p,
        Err(e) => return response::error(&e, super::resources::error_details(&e, info, None)),
    };
    let faults = store.faults();
    if faults.in_force(&Fault::DropWatches) {
        return stream_response(futures_util::stream::empty());
    }
    if let WatchFrom::After(rv) = p.from
        && faults.in_force(&Fault::ExpireWatches)
    {
        return stream_response(futures_util::stream::iter([Ok(expired(rv))]));
    }
    let (replay, rx, now) = match store.watch(info, ns, p.from) {
        Ok(r) => r,
        Err(e @ Error::Expired(_)) => {
            let frame = line(&json!({"type": "ERROR", "object": response::status_body(&e, None)}));
            return stream_response(futures_util::stream::iter([Ok(frame)]));
        }
        Err(e) => return response::error(&e, None),
    };
    let state = Stream::new(store, info.clone(), ns, p, (replay, rx, now));
    let stream =
        futures_util::stream::unfold(
            state,
            |mut s| async move { s.next().await.map(|b| (Ok(b), s)) },
        );
    stream_response(stream)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn stream(store: &Arc<Store>, bookmarks: bool) -> Stream {
        let info = store.resolve("", "v1", "configmaps").unwrap();
        let started = store.watch(&info, None, WatchFrom::Now).unwrap();
        let p = Params {
            from: WatchFrom::Now,
            timeout: None,
            bookmarks,
            initial_events: false,
            labels: LabelSelector::default(),
            fields: FieldSelector::default(),
            metadata_only: false,
        };
        Stream::new(store, info, None, p, started)
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_watch_gets_a_bookmark_every_minute_when_it_allows_them() {
        let store = Arc::new(Store::new());
        let mut allowing = stream(&store, true);
        // Skip the standard namespaces' ADDED events.
        allowing.replay.clear();
        let started = Instant::now();
        let frame = allowing.next().await.unwrap();
        let text = String::from_utf8(frame.to_vec()).unwrap();
        assert!(text.contains("\"BOOKMARK\""), "{text}");
        assert_eq!(started.elapsed(), BOOKMARK_EVERY);
        let mut quiet = stream(&store, false);
        quiet.replay.clear();
        let waited = tokio::time::timeout(BOOKMARK_EVERY * 2, quiet.next()).await;
        assert!(waited.is_err(), "no bookmark without allowWatchBookmarks");
    }

    #[tokio::test]
    async fn events_already_waiting_go_out_as_one_chunk_in_order() {
        let store = Arc::new(Store::new());
        let mut watch = stream(&store, false);
        watch.replay.clear();
        let info = store.resolve("", "v1", "configmaps").unwrap();
        for name in ["a", "b", "c"] {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
            store
                .create(&info, "default", cm, &crate::store::WriteOptions::default())
                .unwrap();
        }
        let chunk = watch.next().await.unwrap();
        let names: Vec<String> = std::str::from_utf8(&chunk)
            .unwrap()
            .lines()
            .map(|l| {
                let ev: Value = serde_json::from_str(l).unwrap();
                assert_eq!(ev["type"], "ADDED");
                ev["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
    }
}
