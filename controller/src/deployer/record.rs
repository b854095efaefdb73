//! What each (profile, summary annotation) pair deployed in its last complete pass, so that
//! the next pass finds stale objects by name instead of listing every object of their kinds
//! in the cluster. Empty after a start: the first pass of each pair reads a listing (one list
//! per kind and cluster for all pairs, see [`super::listings::Listings`]). A fleet's pairs
//! number in the hundreds of thousands, most with one object: each pair is one key and one
//! slice, kinds and namespaces shared (see [`intern`]).

use std::collections::HashMap;
use std::sync::Arc;

use super::deploy::Key;
use super::targets::Target;
use crate::kept::intern;

/// What the pairs deployed, by `profile\0summary` (names hold no NUL).
#[derive(Debug, Default)]
pub struct Record(HashMap<Box<str>, Box<[Kept]>>);

/// A [`Key`] as the record keeps it.
type Kept = (Target, Arc<str>, Arc<str>, Box<str>);

fn pair(profile: &str, summary: &str) -> String {
    [profile, "\0", summary].concat()
}

impl Record {
    /// Notes that the pair has deployed nothing yet (unless it is recorded already): a pair
    /// without a summary can have nothing stale.
    pub fn open(&mut self, profile: &str, summary: &str) {
        self.0.entry(pair(profile, summary).into()).or_default();
    }

    /// Records that the pair deployed `keys`.
    pub fn set(&mut self, profile: &str, summary: &str, keys: impl IntoIterator<Item = Key>) {
        let kept = keys.into_iter().map(|(target, kind, namespace, name)| {
            (target, intern(&kind), intern(&namespace), name.into())
        });
        self.0.insert(pair(profile, summary).into(), kept.collect());
    }

    /// Forgets the pair: what it deployed is not known (a write failed, but may have gone
    /// through) or it withdrew everything.
    pub fn forget(&mut self, profile: &str, summary: &str) {
        self.0.remove(pair(profile, summary).as_str());
    }

    /// What the pair deployed, if known.
    pub fn get(&self, profile: &str, summary: &str) -> Option<Vec<Key>> {
        let kept = self.0.get(pair(profile, summary).as_str())?;
        let keys = kept.iter().map(|(target, kind, namespace, name)| {
            let strings = (kind.to_string(), namespace.to_string(), name.to_string());
            (target.clone(), strings.0, strings.1, strings.2)
        });
        Some(keys.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        let kind = "NetworkPolicy.v1.networking.k8s.io".to_owned();
        (Target::Local, kind, "default".to_owned(), name.to_owned())
    }

    #[test]
    fn each_pair_has_its_own_record_until_forgotten() {
        let mut record = Record::default();
        assert_eq!(record.get("p", "s"), None);
        record.open("p", "s");
        assert_eq!(record.get("p", "s"), Some(vec![]));
        record.set("p", "s", [key("a"), key("b")]);
        record.open("p", "s");
        assert_eq!(record.get("p", "s"), Some(vec![key("a"), key("b")]));
        // Names are not confused however they split.
        assert_eq!(record.get("p", "s2"), None);
        assert_eq!(record.get("ps", ""), None);
        record.set("p", "s2", [key("c")]);
        record.forget("p", "s");
        assert_eq!(record.get("p", "s"), None);
        assert_eq!(record.get("p", "s2"), Some(vec![key("c")]));
    }
}
