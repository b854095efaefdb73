//! A list's `resourceVersion`, `resourceVersionMatch`, `limit` and `continue`, checked and
//! read as kube-apiserver 1.20 does: from its watch cache (the latest objects, once the cache
//! has reached the version asked for) or from storage (exactly at a version).

use std::time::Duration;

use super::Req;
use crate::error::{Error, Result};
use crate::store::Store;

/// How long the watch cache waits for a resourceVersion it has not reached.
const CACHE_WAIT: Duration = Duration::from_secs(3);

/// Which objects a list reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// The latest.
    Latest,
    /// As they were at this resourceVersion.
    Exact(u64),
    /// The latest, once the cluster has reached this resourceVersion (the watch cache waits a
    /// while for it; storage does not).
    NotOlderThan {
        /// The resourceVersion.
        rv: u64,
        /// Whether to wait for it.
        wait: bool,
    },
}

/// A list request's paging and version options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOptions {
    /// What to read.
    pub read: Read,
    /// Page size (0: all).
    pub limit: usize,
    /// Where a previous page stopped.
    pub continue_token: Option<String>,
}

/// Refuses `resourceVersionMatch` where kube-apiserver's ListOptions validation does (a 422
/// on `ListOptions.meta.k8s.io`; the first failure only).
pub fn validate(req: &Req, watch: bool) -> Result<()> {
    let matching = req.q("resourceVersionMatch").unwrap_or("");
    if matching.is_empty() {
        return Ok(());
    }
    let rv = req.q("resourceVersion").unwrap_or("");
    let invalid = |text: String| {
        Err(Error::InvalidFields {
            subject: "ListOptions.meta.k8s.io \"\"".into(),
            causes: vec![("resourceVersionMatch".into(), text)],
        })
    };
    let forbidden = |why: &str| invalid(format!("Forbidden: {why}"));
    if watch && req.q("sendInitialEvents").is_some() {
        // A streaming list (1.27+): its initial events are the latest objects.
        if matching != "NotOlderThan" {
            return invalid(format!(
                "Unsupported value: {matching:?}: supported values: \"NotOlderThan\""
            ));
        }
        return Ok(());
    }
    if watch {
        return forbidden("resourceVersionMatch is forbidden for watch");
    }
    if rv.is_empty() {
        return forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided");
    }
    if req.q("continue").is_some_and(|c| !c.is_empty()) {
        return forbidden("resourceVersionMatch is forbidden when continue is provided");
    }
    if !matches!(matching, "Exact" | "NotOlderThan") {
        return invalid(format!(
            "Unsupported value: {matching:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
        ));
    }
    if matching == "Exact" && rv == "0" {
        return forbidden("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
    }
    Ok(())
}

/// Reads a list request's options. The watch cache serves a list that names a version
/// without `Exact` and without a page size (or at version 0, whose page size it ignores);
/// storage serves the others.
pub fn parse(req: &Req) -> Result<ListOptions> {
    validate(req, false)?;
    let rv = req.q("resourceVersion").unwrap_or("");
    let matching = req.q("resourceVersionMatch").unwrap_or("");
    let limit: usize = req.q("limit").and_then(|l| l.parse().ok()).unwrap_or(0);
    let continue_token = req.q("continue").filter(|c| !c.is_empty());
    if let Some(token) = continue_token {
        if !rv.is_empty() {
            return Err(Error::BadRequest(
                "specifying resource version is not allowed when using continue".into(),
            ));
        }
        return Ok(ListOptions {
            read: Read::Latest,
            limit,
            continue_token: Some(token.to_owned()),
        });
    }
    let options = |read, limit| ListOptions {
        read,
        limit,
        continue_token: None,
    };
    if rv.is_empty() {
        return Ok(options(Read::Latest, limit));
    }
    let from_cache = matching != "Exact" && (limit == 0 || rv == "0");
    if from_cache {
        // The cache passes on the parser's error as it came: a 500 without a reason.
        let rv = parse_rv(rv).map_err(Error::Storage)?;
        let read = match rv {
            0 => Read::Latest,
            rv => Read::NotOlderThan { rv, wait: true },
        };
        return Ok(options(read, 0));
    }
    let rv =
        parse_rv(rv).map_err(|e| Error::BadRequest(format!("invalid resource version: {e}")))?;
    let read = match matching {
        "NotOlderThan" => Read::NotOlderThan { rv, wait: false },
        _ => Read::Exact(rv),
    };
    Ok(options(read, limit))
}

/// A resourceVersion as Go's `strconv.ParseUint` reads it, or its field error.
fn parse_rv(rv: &str) -> std::result::Result<u64, String> {
    rv.parse().map_err(|_| {
        let why = if !rv.is_empty() && rv.bytes().all(|b| b.is_ascii_digit()) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        format!("resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: {why}")
    })
}

/// Waits (with `wait`, up to the watch cache's three seconds) until the cluster has reached
/// `rv`; a 504 if it has not.
pub async fn reached(store: &Store, rv: u64, wait: bool) -> Result<()> {
    let mut events = store.subscribe();
    let deadline = tokio::time::Instant::now() + CACHE_WAIT;
    loop {
        let current = store.resource_version();
        if current >= rv {
            return Ok(());
        }
        // Checked on every change too: a busy cluster's changes are always ready, and a
        // timeout polls its future before its clock.
        let changed = wait
            && tokio::time::Instant::now() < deadline
            && matches!(
                tokio::time::timeout_at(deadline, events.recv()).await,
                Ok(Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)))
            );
        if !changed {
            return Err(Error::TooLargeResourceVersion {
                requested: rv,
                current,
                retry_after: u64::from(wait),
            });
        }
    }
}
