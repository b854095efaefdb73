//! Reuse of earlier planning work. A trigger is re-planned on every event, but an event
//! changes one unit (one ClusterProfile and what it generates) at most; the others are taken
//! from the previous plan by a digest of everything they were computed from.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::LazyLock;

use serde_json::Value;

/// A 64-bit digest of a unit's inputs.
pub type Digest = u64;

/// Feeds a JSON value into `hasher`, structure included, without allocating.
pub fn hash_value<H: Hasher>(value: &Value, hasher: &mut H) {
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(b) => {
            1u8.hash(hasher);
            b.hash(hasher);
        }
        Value::Number(n) => {
            2u8.hash(hasher);
            n.hash(hasher);
        }
        Value::String(s) => {
            3u8.hash(hasher);
            s.hash(hasher);
        }
        Value::Array(items) => {
            4u8.hash(hasher);
            items.len().hash(hasher);
            for item in items {
                hash_value(item, hasher);
            }
        }
        Value::Object(map) => {
            5u8.hash(hasher);
            map.len().hash(hasher);
            for (key, item) in map {
                key.hash(hasher);
                hash_value(item, hasher);
            }
        }
    }
}

/// The seed of every digest, drawn once per process: digests are never kept outside it, and
/// a tenant cannot make two of its objects collide without knowing it.
static SEED: LazyLock<foldhash::quality::RandomState> = LazyLock::new(Default::default);

/// A hasher that makes digests. foldhash rather than the standard library's SipHash: a report
/// of 1,000 collected objects is a megabyte to digest on each of its changes, and SipHash was
/// 7.6% of the CPU of the quiet end-to-end run over 1,000 profiles (perf).
pub fn hasher() -> impl Hasher {
    SEED.build_hasher()
}

/// The digest of `value`.
pub fn digest_value(value: &Value) -> Digest {
    let mut hasher = hasher();
    hash_value(value, &mut hasher);
    hasher.finish()
}

/// The digest of anything hashable (a digest of digests, a name).
pub fn digest<T: Hash + ?Sized>(value: &T) -> Digest {
    let mut hasher = hasher();
    value.hash(&mut hasher);
    hasher.finish()
}

/// Outputs by digest: those of the last finished plan, and those the current one used.
#[derive(Debug)]
pub struct Memo<T> {
    last: HashMap<Digest, T>,
    current: HashMap<Digest, T>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo {
            last: HashMap::new(),
            current: HashMap::new(),
        }
    }
}

impl<T: Clone> Memo<T> {
    /// The output for `key`: remembered, or computed by `compute` (errors are not remembered).
    pub fn get_or_try<E>(
        &mut self,
        key: Digest,
        compute: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        if let Some(output) = self.current.get(&key) {
            return Ok(output.clone());
        }
        let output = match self.last.remove(&key) {
            Some(output) => output,
            None => compute()?,
        };
        self.current.insert(key, output.clone());
        Ok(output)
    }

    /// Keeps `output` under `key` for this plan, as if it had been computed.
    pub fn keep(&mut self, key: Digest, output: T) {
        self.last.remove(&key);
        self.current.insert(key, output);
    }

    /// Ends a plan: outputs it did not use are forgotten, so memory follows the live units.
    pub fn finish(&mut self) {
        self.last = std::mem::take(&mut self.current);
    }

    /// Every output remembered, to change in place.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.last.values_mut().chain(self.current.values_mut())
    }

    /// Number of outputs remembered.
    pub fn len(&self) -> usize {
        self.last.len() + self.current.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_have_equal_digests_and_changes_show() {
        let a = json!({"spec": {"ports": [{"port": 80}]}, "status": null});
        assert_eq!(digest_value(&a), digest_value(&a.clone()));
        for other in [
            json!({"spec": {"ports": [{"port": 81}]}, "status": null}),
            json!({"spec": {"ports": [{"port": "80"}]}, "status": null}),
            json!({"spec": {"ports": [{"port": 80}]}}),
            json!({"spec": {"ports": [[{"port": 80}]]}, "status": null}),
        ] {
            assert_ne!(digest_value(&a), digest_value(&other), "{other}");
        }
        // Structure is part of the digest: ["ab"] is not ["a", "b"].
        assert_ne!(
            digest_value(&json!(["ab"])),
            digest_value(&json!(["a", "b"]))
        );
    }

    #[test]
    fn outputs_are_reused_until_a_plan_stops_using_them() {
        let mut memo: Memo<String> = Memo::default();
        let mut computed = 0;
        let mut get = |memo: &mut Memo<String>, key: Digest| {
            memo.get_or_try(key, || {
                computed += 1;
                Ok::<_, ()>(format!("out-{key}"))
            })
        };
        assert_eq!(get(&mut memo, 1), Ok("out-1".into()));
        assert_eq!(get(&mut memo, 2), Ok("out-2".into()));
        memo.finish();
        // The next plan uses 1 only: 2 is forgotten when it finishes.
        assert_eq!(get(&mut memo, 1), Ok("out-1".into()));
        memo.finish();
        assert_eq!(memo.len(), 1);
        assert_eq!(get(&mut memo, 2), Ok("out-2".into()));
        assert_eq!(computed, 3);
    }

    #[test]
    fn errors_are_not_remembered() {
        let mut memo: Memo<u8> = Memo::default();
        assert_eq!(memo.get_or_try(7, || Err("broken")), Err("broken"));
        assert_eq!(memo.get_or_try(7, || Ok::<_, &str>(1)), Ok(1));
        assert!(!memo.is_empty());
    }
}
