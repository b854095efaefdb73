//! Shared strings: each distinct label key or value is held once however many records carry
//! it. Written here rather than taken from an interning crate because records only need
//! `Arc<str>` and a set pruned in bulk: a string no record holds any more goes when the set
//! has doubled since it was last pruned, so a drop costs nothing and the set stays within
//! twice what is in use.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

/// The shared strings, and the size at which those no longer in use are let go.
struct Symbols {
    set: HashSet<Arc<str>, foldhash::fast::RandomState>,
    prune_at: usize,
}

/// Fewest strings the set holds before it is pruned.
const FLOOR: usize = 4_096;

/// Seeded at random per process: the strings come from tenants' objects.
static SYMBOLS: LazyLock<Mutex<Symbols>> = LazyLock::new(|| {
    Mutex::new(Symbols {
        set: HashSet::default(),
        prune_at: FLOOR,
    })
});

/// The shared copy of `text`.
pub fn intern(text: &str) -> Arc<str> {
    let mut symbols = SYMBOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(shared) = symbols.set.get(text) {
        return Arc::clone(shared);
    }
    if symbols.set.len() >= symbols.prune_at {
        symbols.set.retain(|s| Arc::strong_count(s) > 1);
        symbols.prune_at = (2 * symbols.set.len()).max(FLOOR);
    }
    let shared: Arc<str> = Arc::from(text);
    symbols.set.insert(Arc::clone(&shared));
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_copy_of_each_string_and_none_of_those_no_longer_used_for_long() {
        let a = intern("symbols-test-a");
        assert!(Arc::ptr_eq(&a, &intern("symbols-test-a")));
        assert!(!Arc::ptr_eq(&a, &intern("symbols-test-b")));
        let weak = Arc::downgrade(&intern("symbols-test-dropped"));
        for n in 0..4 * FLOOR {
            intern(&format!("symbols-test-{n}"));
        }
        assert!(weak.upgrade().is_none(), "an unused string was kept");
        assert_eq!(&*a, "symbols-test-a");
        assert!(Arc::ptr_eq(&a, &intern("symbols-test-a")));
    }
}
