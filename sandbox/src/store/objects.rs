//! The objects of one resource, by (namespace, name): hashed for the reads and writes of one
//! object that every request makes, with the keys in order beside them for lists and their
//! pages. A search of an ordered map compares dozens of keys, and generated objects share a
//! namespace and a long name prefix: those comparisons were a tenth of the sandbox's work in
//! a fleet of a thousand clusters. An update (most writes) does not touch the order at all.

use std::collections::BTreeSet;
use std::ops::RangeBounds;
use std::sync::Arc;

use hashbrown::{Equivalent, HashMap};
use serde_json::Value;

/// Where an object is: (namespace, name); the namespace is empty for cluster-scoped ones.
pub type Key = (String, String);

/// A borrowed [`Key`], to look one up without making one.
#[derive(Hash, PartialEq, Eq)]
struct Place<'a>(&'a str, &'a str);

impl Equivalent<Key> for Place<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

/// The objects of one resource. Every key of `ordered` is in `hashed` and the other way round.
#[derive(Clone, Default)]
pub struct Objects {
    hashed: HashMap<Key, Arc<Value>>,
    ordered: BTreeSet<Key>,
}

impl Objects {
    /// The object at `namespace`/`name`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<&Arc<Value>> {
        self.hashed.get(&Place(namespace, name))
    }

    /// Whether an object is at `namespace`/`name`.
    pub fn contains(&self, namespace: &str, name: &str) -> bool {
        self.hashed.contains_key(&Place(namespace, name))
    }

    /// Puts `object` at `key`, giving back the one there before.
    pub fn insert(&mut self, key: Key, object: Arc<Value>) -> Option<Arc<Value>> {
        if let Some(slot) = self.hashed.get_mut(&Place(&key.0, &key.1)) {
            return Some(std::mem::replace(slot, object));
        }
        self.hashed.insert(key.clone(), object);
        self.ordered.insert(key);
        None
    }

    /// Takes the object at `key` out.
    pub fn remove(&mut self, key: &Key) -> Option<Arc<Value>> {
        let removed = self.hashed.remove(&Place(&key.0, &key.1))?;
        self.ordered.remove(key);
        Some(removed)
    }

    /// The objects in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Arc<Value>)> {
        self.with_objects(self.ordered.iter())
    }

    /// The objects in key order, without their keys.
    pub fn values(&self) -> impl Iterator<Item = &Arc<Value>> {
        self.iter().map(|(_, object)| object)
    }

    /// The objects whose keys are in `range`, in key order.
    pub fn range<R: RangeBounds<Key>>(
        &self,
        range: R,
    ) -> impl Iterator<Item = (&Key, &Arc<Value>)> {
        self.with_objects(self.ordered.range(range))
    }

    fn with_objects<'a>(
        &'a self,
        keys: impl Iterator<Item = &'a Key>,
    ) -> impl Iterator<Item = (&'a Key, &'a Arc<Value>)> {
        keys.filter_map(|key| Some((key, self.hashed.get(key)?)))
    }
}

impl IntoIterator for Objects {
    type Item = (Key, Arc<Value>);
    type IntoIter = std::vec::IntoIter<(Key, Arc<Value>)>;

    /// The objects in key order.
    fn into_iter(mut self) -> Self::IntoIter {
        let ordered = std::mem::take(&mut self.ordered);
        let objects: Vec<_> = ordered
            .into_iter()
            .filter_map(|key| {
                let object = self.hashed.remove(&key)?;
                Some((key, object))
            })
            .collect();
        objects.into_iter()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn key(ns: &str, name: &str) -> Key {
        (ns.to_owned(), name.to_owned())
    }

    #[test]
    fn both_views_hold_the_same_objects() {
        let mut objects = Objects::default();
        assert!(objects.insert(key("b", "x"), Arc::new(json!(1))).is_none());
        assert!(objects.insert(key("a", "y"), Arc::new(json!(2))).is_none());
        assert!(objects.insert(key("", "z"), Arc::new(json!(3))).is_none());
        let before = objects.insert(key("b", "x"), Arc::new(json!(4)));
        assert_eq!(before.as_deref(), Some(&json!(1)));
        assert_eq!(objects.get("b", "x").map(|o| o.as_ref()), Some(&json!(4)));
        // "a/y" is not "" + "a/y", nor "a" + "y" looked up as "ay".
        assert!(objects.contains("a", "y") && !objects.contains("", "a/y"));
        assert!(objects.get("", "ay").is_none());
        let order: Vec<_> = objects.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(order, [key("", "z"), key("a", "y"), key("b", "x")]);
        assert_eq!(objects.remove(&key("a", "y")).as_deref(), Some(&json!(2)));
        assert!(objects.get("a", "y").is_none());
        assert_eq!(objects.values().count(), 2);
        let from_a: Vec<_> = objects
            .range(key("a", "")..)
            .map(|(k, _)| k.1.clone())
            .collect();
        assert_eq!(from_a, ["x"]);
    }
}
