//! Go's `map[string]interface{}`: a reference. Every holder of a map sees what a function
//! changes in it (sprig's `set`, `unset`, `merge`...), as in Go, where `mergeOverwrite` can
//! change a map through another map that holds it (sprig's issue 188).
//!
//! One difference from Go, on purpose: a change that would make a map contain itself is
//! refused. Go accepts it and then overflows its stack printing the map; here no map can hold
//! itself, so every walk over a value ends and every map is freed.

use std::cell::{Ref, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::rc::Rc;

use crate::key::{Key, KeyStr};
use crate::value::{TooDeep, Value};

/// The entries of a map.
pub type Entries = BTreeMap<Key, Value>;

/// A shared, changeable map of one thread. Cloning it clones the reference, not the entries.
#[derive(Clone, Default)]
pub struct Dict(Rc<RefCell<Entries>>);

/// A change refused because the map would then contain itself.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("a map cannot contain itself")]
pub struct Cycle;

impl Dict {
    /// A map holding `entries`.
    pub fn new(entries: Entries) -> Dict {
        Dict(Rc::new(RefCell::new(entries)))
    }

    /// The entries, borrowed. A change to the map while this is held panics: callers copy
    /// what they go on to change (see `entries`).
    pub fn read(&self) -> Ref<'_, Entries> {
        self.0.borrow()
    }

    /// A copy of the entries (the values themselves are shared).
    pub fn entries(&self) -> Entries {
        self.read().clone()
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.read().get(KeyStr::new(key)).cloned()
    }

    /// How many entries the map has.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The map's address, the same for every holder of this map.
    pub fn identity(&self) -> usize {
        Rc::as_ptr(&self.0).addr()
    }

    /// Whether both are the same map (Go's pointer equality).
    pub fn same(&self, other: &Dict) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    /// Stores `value` under `key`; refused if `value` holds this map.
    pub fn insert(&self, key: impl Into<Key>, value: Value) -> Result<(), Cycle> {
        if holds(&value, self) {
            return Err(Cycle);
        }
        self.0.borrow_mut().insert(key.into(), value);
        Ok(())
    }

    /// Removes `key`.
    pub fn remove(&self, key: &str) {
        self.0.borrow_mut().remove(KeyStr::new(key));
    }

    /// Whether someone else holds this map too, as far as a read of its count tells.
    #[inline]
    pub(crate) fn shared(&self) -> bool {
        Rc::strong_count(&self.0) > 1
    }

    /// The entries, if no one else holds this map (so it is about to be freed with this).
    pub(crate) fn unique_entries(&mut self) -> Option<&mut Entries> {
        Rc::get_mut(&mut self.0).map(RefCell::get_mut)
    }

    pub(crate) fn deep_copy_at(&self, depth: usize, budget: &mut usize) -> Result<Dict, TooDeep> {
        Ok(Dict::new(
            self.read()
                .iter()
                .map(|(k, v)| Ok((k.clone(), v.deep_copy_at(depth + 1, budget)?)))
                .collect::<Result<_, _>>()?,
        ))
    }
}

/// Whether `value` is `map` or holds it, at any depth (walked without recursion).
fn holds(value: &Value, map: &Dict) -> bool {
    // A map or list met again (the same one in two places) was walked already.
    let mut seen = HashSet::new();
    let mut pending = vec![value.clone()];
    while let Some(value) = pending.pop() {
        if !value.identity().is_none_or(|id| seen.insert(id)) {
            continue;
        }
        match &value {
            Value::Map(inner) if inner.same(map) => return true,
            Value::Map(inner) => {
                pending.extend(inner.read().values().filter(|v| v.has_children()).cloned())
            }
            Value::List(items) => {
                pending.extend(items.iter().filter(|v| v.has_children()).cloned())
            }
            _ => {}
        }
    }
    false
}

impl PartialEq for Dict {
    /// `reflect.DeepEqual`: the same map, or equal entries.
    fn eq(&self, other: &Dict) -> bool {
        Value::Map(self.clone()) == Value::Map(other.clone())
    }
}

impl fmt::Debug for Dict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.read().iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_seen_by_every_holder() {
        let inner = Dict::default();
        let outer = Dict::new(BTreeMap::from([("a".into(), Value::Map(inner.clone()))]));
        assert_eq!(inner.insert("k", Value::string("v")), Ok(()));
        let Some(Value::Map(seen)) = &outer.get("a") else {
            panic!("the inner map is gone");
        };
        assert_eq!(seen.get("k"), Some(Value::string("v")));
    }

    #[test]
    fn a_map_cannot_come_to_hold_itself() {
        let map = Dict::default();
        let list = Value::list(vec![Value::Map(map.clone())]);
        let wrapped = Value::Map(Dict::new(BTreeMap::from([("l".into(), list)])));
        assert_eq!(map.insert("me", Value::Map(map.clone())), Err(Cycle));
        assert_eq!(map.insert("deep", wrapped), Err(Cycle));
        assert!(map.is_empty());
        // The same map twice in another map is no cycle.
        let twice = Dict::default();
        assert_eq!(twice.insert("a", Value::Map(map.clone())), Ok(()));
        assert_eq!(twice.insert("b", Value::Map(map)), Ok(()));
    }

    #[test]
    fn deep_copies_share_nothing() {
        let inner = Dict::default();
        let outer = Dict::new(BTreeMap::from([("a".into(), Value::Map(inner.clone()))]));
        let copy = Value::Map(outer.clone()).deep_copy().unwrap();
        assert_eq!(inner.insert("k", Value::Null), Ok(()));
        let Value::Map(copy) = &copy else {
            panic!("a copy of a map is a map");
        };
        assert_eq!(copy.get("a"), Some(Value::Map(Dict::default())));
        assert_ne!(copy, &outer);
    }
}
