//! Lists read at a past resourceVersion: continue tokens as kube-apiserver writes them
//! (base64url of `{"v":"meta.k8s.io/v1","rv":N,"start":"KEY\u0000"}`), and the objects of a
//! resource as they were at that resourceVersion, read back from the event history.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use base64::Engine as _;
use base64::alphabet::URL_SAFE;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::registry::GroupResource;
use crate::store::{Event, EventType};

/// Go's `base64.RawURLEncoding` reading: no padding, and the unused bits of the last symbol
/// ignored (Rust's strict default refuses them).
const GO_RAW_URL: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone),
);

/// The version of the continue tokens kube-apiserver 1.20 writes and reads.
const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// Where a continued list goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continue {
    /// The resourceVersion the list reads at (`None`: the latest, after a 410).
    pub rv: Option<u64>,
    /// The last key listed: the list goes on strictly after it.
    pub after: (String, String),
}

/// How the listed keys are named in a token: within the listed namespace by name, across
/// namespaces as `namespace/name`.
#[derive(Debug, Clone, Copy)]
pub struct Keys<'a> {
    /// The namespace listed (`None`: all, or a cluster-scoped resource).
    pub namespace: Option<&'a str>,
    /// Whether the resource is namespaced.
    pub namespaced: bool,
}

impl Keys<'_> {
    /// The token that goes on after `key` at `rv` (-1: at the latest).
    pub fn encode(&self, rv: i64, key: &(String, String)) -> String {
        let start = match (self.namespace, self.namespaced) {
            (None, true) => format!("{}/{}\u{0}", key.0, key.1),
            _ => format!("{}\u{0}", key.1),
        };
        let token = json!({"v": TOKEN_VERSION, "rv": rv, "start": start});
        URL_SAFE_NO_PAD.encode(token.to_string())
    }

    /// Reads a token, refusing one kube-apiserver would refuse, in its words.
    pub fn decode(&self, token: &str) -> Result<Continue> {
        let invalid = |why: String| {
            Error::BadRequest(format!(
                "invalid continue token: continue key is not valid: {why}"
            ))
        };
        let bytes = GO_RAW_URL.decode(token).map_err(|e| {
            let at = match e {
                base64::DecodeError::InvalidByte(at, _)
                | base64::DecodeError::InvalidLastSymbol(at, _) => at,
                _ => token.len(),
            };
            invalid(format!("illegal base64 data at input byte {at}"))
        })?;
        let parsed: Value =
            serde_json::from_slice(&bytes).map_err(|e| invalid(go_json_error(&bytes, &e)))?;
        let version = parsed["v"].as_str().unwrap_or_default();
        if version != TOKEN_VERSION {
            return Err(invalid(format!(
                "server does not recognize this encoded version {version:?}"
            )));
        }
        let rv = parsed["rv"].as_i64().unwrap_or(0);
        if rv == 0 {
            return Err(invalid(format!(
                "incorrect encoded start resourceVersion (version {TOKEN_VERSION})"
            )));
        }
        let start = parsed["start"].as_str().unwrap_or_default();
        if start.is_empty() {
            return Err(invalid(format!(
                "encoded start key empty (version {TOKEN_VERSION})"
            )));
        }
        let unclean = start.starts_with('/')
            || start.ends_with('/')
            || start.split('/').any(|part| matches!(part, "" | "." | ".."));
        if unclean {
            return Err(invalid(start.to_owned()));
        }
        let last = start.strip_suffix('\u{0}').unwrap_or(start);
        let after = match (self.namespace, self.namespaced) {
            (Some(namespace), _) => (namespace.to_owned(), last.to_owned()),
            (None, true) => match last.split_once('/') {
                Some((namespace, name)) => (namespace.to_owned(), name.to_owned()),
                None => (last.to_owned(), String::new()),
            },
            (None, false) => (String::new(), last.to_owned()),
        };
        Ok(Continue {
            rv: u64::try_from(rv).ok(),
            after,
        })
    }
}

/// Go's `encoding/json` words for the commonest failure, a first byte that starts no value;
/// serde's for the others.
fn go_json_error(bytes: &[u8], error: &serde_json::Error) -> String {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(&b)
            if !matches!(
                b,
                b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
            ) =>
        {
            let quoted = match char::from(b) {
                '\'' => "'\\''".to_owned(),
                c if c.is_ascii_graphic() || c == ' ' => format!("'{c}'"),
                c => format!("'\\u{:04x}'", u32::from(c)),
            };
            format!("invalid character {quoted} looking for beginning of value")
        }
        _ => error.to_string(),
    }
}

/// What the objects of `gr` changed after `rv` were at `rv`, by key (`None`: absent then),
/// read from `history` (which must hold every change after `rv`): each change's object as
/// it was before the first change after `rv`.
pub fn before(
    history: &VecDeque<Arc<Event>>,
    gr: &GroupResource,
    rv: u64,
) -> HashMap<(String, String), Option<Arc<Value>>> {
    let start = history.partition_point(|e| e.rv <= rv);
    let mut then = HashMap::new();
    for event in history.range(start..).filter(|e| &e.gr == gr) {
        let name = event.object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        then.entry((event.namespace.clone(), name))
            .or_insert_with(|| match event.kind {
                EventType::Added => None,
                EventType::Modified | EventType::Deleted => event.previous.clone(),
            });
    }
    then
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(namespace: &str, name: &str) -> (String, String) {
        (namespace.to_owned(), name.to_owned())
    }

    #[test]
    fn tokens_read_back_as_kube_apiserver_writes_them() {
        let in_namespace = Keys {
            namespace: Some("team"),
            namespaced: true,
        };
        // A token kube-apiserver 1.20 wrote for a list of namespace `team` after `b`.
        let real = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Mjk1LCJzdGFydCI6ImJcdTAwMDAifQ";
        let read = in_namespace.decode(real).expect("a real token");
        assert_eq!(read.rv, Some(295));
        assert_eq!(read.after, key("team", "b"));
        assert_eq!(in_namespace.encode(295, &key("team", "b")), real);

        let everywhere = Keys {
            namespace: None,
            namespaced: true,
        };
        let token = everywhere.encode(7, &key("team", "b"));
        assert_eq!(
            everywhere.decode(&token).expect("ours").after,
            key("team", "b")
        );
        let latest = everywhere.encode(-1, &key("team", "b"));
        assert_eq!(everywhere.decode(&latest).expect("ours").rv, None);
        let cluster = Keys {
            namespace: None,
            namespaced: false,
        };
        let token = cluster.encode(7, &key("", "node-1"));
        assert_eq!(
            cluster.decode(&token).expect("ours").after,
            key("", "node-1")
        );
    }

    #[test]
    fn bad_tokens_are_refused_in_kube_apiservers_words() {
        let keys = Keys {
            namespace: Some("team"),
            namespaced: true,
        };
        let refusal = |token: &str| match keys.decode(token) {
            Err(Error::BadRequest(message)) => message,
            other => panic!("{token}: {other:?}"),
        };
        let prefix = "invalid continue token: continue key is not valid: ";
        assert_eq!(
            refusal("garbage"),
            format!("{prefix}invalid character '\\u0081' looking for beginning of value")
        );
        let encode = |json: &str| URL_SAFE_NO_PAD.encode(json);
        assert_eq!(
            refusal(&encode(
                r#"{"v":"meta.k8s.io/v2","rv":1,"start":"a\u0000"}"#
            )),
            format!("{prefix}server does not recognize this encoded version \"meta.k8s.io/v2\"")
        );
        assert_eq!(
            refusal(&encode(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#)),
            format!("{prefix}encoded start key empty (version meta.k8s.io/v1)")
        );
        assert_eq!(
            refusal(&encode(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#)),
            format!("{prefix}incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        );
        assert_eq!(
            refusal(&encode(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../x"}"#)),
            format!("{prefix}../x")
        );
        assert!(refusal("a=b").starts_with(&format!("{prefix}illegal base64 data at input byte")));
    }
}
