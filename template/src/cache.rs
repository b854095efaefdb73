//! A bounded cache of parsed templates keyed by a hash of their content and options, so the
//! manager parses each distinct template once however many events render it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::funcs::FuncMap;
use crate::template::{Error, MissingKey, Options, Template};

type Key = [u8; 32];

/// Parsed templates by content hash, sharing one function map.
#[derive(Debug)]
pub struct TemplateCache {
    funcs: Arc<FuncMap>,
    capacity: usize,
    state: Mutex<CacheState>,
}

#[derive(Debug, Default)]
struct CacheState {
    entries: HashMap<Key, (Arc<Template>, u64)>,
    clock: u64,
}

impl TemplateCache {
    /// A cache of at most `capacity` templates parsed with `funcs`.
    pub fn new(funcs: Arc<FuncMap>, capacity: usize) -> Self {
        TemplateCache {
            funcs,
            capacity: capacity.max(1),
            state: Mutex::new(CacheState::default()),
        }
    }

    /// The parsed template for this name, text and options, parsing it on first use.
    /// Parse errors are returned, not cached.
    pub fn get_or_parse(
        &self,
        name: &str,
        text: &str,
        options: &Options,
    ) -> Result<Arc<Template>, Error> {
        let key = key(name, text, options);
        if let Some(template) = self.lookup(&key) {
            return Ok(template);
        }
        let template = Arc::new(Template::parse(
            name,
            text,
            Arc::clone(&self.funcs),
            options.clone(),
        )?);
        self.insert(key, Arc::clone(&template));
        Ok(template)
    }

    /// Number of templates held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        // A panic while holding the lock cannot leave the map inconsistent; keep using it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lookup(&self, key: &Key) -> Option<Arc<Template>> {
        let mut state = self.lock();
        state.clock += 1;
        let now = state.clock;
        state.entries.get_mut(key).map(|(template, used)| {
            *used = now;
            Arc::clone(template)
        })
    }

    fn insert(&self, key: Key, template: Arc<Template>) {
        let mut state = self.lock();
        if state.entries.len() >= self.capacity
            && let Some(oldest) = state
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| *key)
        {
            state.entries.remove(&oldest);
        }
        state.clock += 1;
        let now = state.clock;
        state.entries.insert(key, (template, now));
    }
}

fn key(name: &str, text: &str, options: &Options) -> Key {
    let mut hasher = Sha256::new();
    for part in [name, &options.left_delim, &options.right_delim, text] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let missing = match options.missing_key {
        MissingKey::Default => 0u8,
        MissingKey::Zero => 1,
        MissingKey::Error => 2,
    };
    hasher.update([missing, u8::from(options.range_over_int)]);
    hasher.update(format!("{:?}", options.limits).as_bytes());
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::value::Value;

    #[test]
    fn parses_once_and_evicts_the_least_recently_used() {
        let cache = TemplateCache::new(Arc::new(FuncMap::new()), 2);
        let options = Options::default();
        let a = cache.get_or_parse("t", "a{{.}}", &options).unwrap();
        let again = cache.get_or_parse("t", "a{{.}}", &options).unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        cache.get_or_parse("t", "b", &options).unwrap();
        cache.get_or_parse("t", "a{{.}}", &options).unwrap();
        cache.get_or_parse("t", "c", &options).unwrap();
        assert_eq!(cache.len(), 2);
        // "b" was the least recently used, so "a" survived.
        let a_after = cache.get_or_parse("t", "a{{.}}", &options).unwrap();
        assert!(Arc::ptr_eq(&a, &a_after));
        assert_eq!(a_after.execute(&Value::Int(1)).unwrap(), "a1");
    }

    #[test]
    fn options_are_part_of_the_key_and_errors_are_not_cached() {
        let cache = TemplateCache::new(Arc::new(FuncMap::new()), 8);
        let strict = Options {
            missing_key: MissingKey::Error,
            ..Options::default()
        };
        let lax = cache
            .get_or_parse("t", "{{.x}}", &Options::default())
            .unwrap();
        let strict = cache.get_or_parse("t", "{{.x}}", &strict).unwrap();
        assert!(!Arc::ptr_eq(&lax, &strict));
        assert!(cache.get_or_parse("t", "{{", &Options::default()).is_err());
        assert_eq!(cache.len(), 2);
    }
}
