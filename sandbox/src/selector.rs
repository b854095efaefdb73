//! Label and field selectors as sent in `labelSelector` / `fieldSelector` query parameters.

use crate::error::{Error, Result};
use serde_json::Value;

/// One label requirement.
#[derive(Debug, Clone, PartialEq)]
enum Req {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector (all requirements must hold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Req>);

/// A parsed field selector: (dotted path, wanted value, equal?) triples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, String, bool)>);

impl FieldSelector {
    /// The field paths it names.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(path, _, _)| path.as_str())
    }

    /// The same requirements with each field path renamed by `rename`.
    pub fn renamed(self, rename: impl Fn(&str) -> String) -> Self {
        FieldSelector(
            self.0
                .into_iter()
                .map(|(path, value, equal)| (rename(&path), value, equal))
                .collect(),
        )
    }
}

/// Split on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn bad(s: &str) -> Error {
    Error::BadRequest(format!(
        "unable to parse requirement: invalid label selector: {s:?}"
    ))
}

fn set_values(rest: &str, whole: &str) -> Result<Vec<String>> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad(whole))?;
    let vals: Vec<String> = inner.split(',').map(|v| v.trim().to_owned()).collect();
    if vals.iter().any(|v| !valid_value(v)) {
        return Err(bad(whole));
    }
    Ok(vals)
}

impl LabelSelector {
    /// Parse `a=b,c!=d,e in (f,g),h notin (i),j,!k`.
    pub fn parse(s: &str) -> Result<Self> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let p = part.trim();
            if p.is_empty() {
                continue;
            }
            let req = if let Some(k) = p.strip_prefix('!') {
                Req::NotExists(k.trim().to_owned())
            } else if let Some((k, v)) = p.split_once("!=") {
                Req::NotEq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                Req::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, rest)) = p.split_once(" notin ") {
                Req::NotIn(k.trim().to_owned(), set_values(rest, p)?)
            } else if let Some((k, rest)) = p.split_once(" in ") {
                Req::In(k.trim().to_owned(), set_values(rest, p)?)
            } else {
                Req::Exists(p.to_owned())
            };
            let (key, value) = match &req {
                Req::Eq(k, v) | Req::NotEq(k, v) => (k, Some(v)),
                Req::In(k, _) | Req::NotIn(k, _) | Req::Exists(k) | Req::NotExists(k) => (k, None),
            };
            if !valid_key(key) || value.is_some_and(|v| !valid_value(v)) {
                return Err(bad(p));
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// True when the selector has no requirement.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`); `None` when an
    /// expression has an unknown operator.
    pub fn from_object(selector: &Value) -> Option<Self> {
        let mut reqs = Vec::new();
        for (key, value) in selector["matchLabels"].as_object().into_iter().flatten() {
            reqs.push(Req::Eq(key.clone(), value.as_str()?.to_owned()));
        }
        for expr in selector["matchExpressions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let key = expr["key"].as_str()?.to_owned();
            let values = crate::meta::strings(&expr["values"]);
            reqs.push(match expr["operator"].as_str()? {
                "In" => Req::In(key, values),
                "NotIn" => Req::NotIn(key, values),
                "Exists" => Req::Exists(key),
                "DoesNotExist" => Req::NotExists(key),
                _ => return None,
            });
        }
        Some(LabelSelector(reqs))
    }

    /// Does an object's `metadata.labels` satisfy the selector?
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.get("metadata").and_then(|m| m.get("labels"));
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v.as_str()),
            Req::NotEq(k, v) => get(k) != Some(v.as_str()),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Req::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }
}

impl FieldSelector {
    /// Parse `metadata.name=x,status.phase!=Running`.
    pub fn parse(s: &str) -> Result<Self> {
        let mut reqs = Vec::new();
        for part in s.split(',') {
            let p = part.trim();
            if p.is_empty() {
                continue;
            }
            let (k, v, eq) = if let Some((k, v)) = p.split_once("!=") {
                (k, v, false)
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                (k, v, true)
            } else {
                return Err(Error::BadRequest(format!(
                    "invalid selector: '{s}'; can't understand '{p}'"
                )));
            };
            reqs.push((k.trim().to_owned(), v.trim().to_owned(), eq));
        }
        Ok(FieldSelector(reqs))
    }

    /// True when the selector has no requirement.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value a `metadata.name=` requirement pins, if any (lets lists skip scanning).
    pub fn pinned_name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _, eq)| *eq && k == "metadata.name")
            .map(|(_, v, _)| v.as_str())
    }

    /// Does the object satisfy every requirement? Missing fields compare as "".
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, want, eq)| {
            let got = match crate::meta::lookup(obj, path) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (got == *want) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "x", "namespace": "d", "labels": labels}, "status": {"phase": "Up"}})
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "demo", "team": "a"}));
        let yes = [
            "app=demo",
            "app==demo",
            "team!=b",
            "app in (demo,x)",
            "zz notin (a)",
            "app",
            "!zz",
            "app in (demo),team!=b",
            "",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).unwrap().matches(&o), "{s}");
        }
        let no = [
            "app=x",
            "team!=a",
            "app in (x)",
            "app notin (demo)",
            "zz",
            "!app",
        ];
        for s in no {
            assert!(!LabelSelector::parse(s).unwrap().matches(&o), "{s}");
        }
    }

    #[test]
    fn label_syntax_errors() {
        assert!(LabelSelector::parse("a in b").is_err());
        assert!(LabelSelector::parse("a=b c").is_err());
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        assert!(
            FieldSelector::parse("metadata.name=x,status.phase!=Down")
                .unwrap()
                .matches(&o)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace=e")
                .unwrap()
                .matches(&o)
        );
        assert!(FieldSelector::parse("spec.nodeName=").unwrap().matches(&o));
        assert_eq!(
            FieldSelector::parse("metadata.name=x")
                .unwrap()
                .pinned_name(),
            Some("x")
        );
        assert!(FieldSelector::parse("bogus").is_err());
    }
}
