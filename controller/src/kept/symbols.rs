//! Shared strings: each distinct label key or value, or JSON text, is held once however many
//! records carry it. Written here rather than taken from an interning crate because records
//! only need `Arc<str>` and a set pruned in bulk: strings no record holds any more go when
//! the set's bytes have doubled since it was last pruned, and at least once a minute while
//! strings are interned (so a fleet that shrank does not keep its dead strings until it grows
//! again). A drop costs nothing, and the set stays within about twice what is in use.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The shared strings, their weight, and when those no longer in use are let go.
struct Symbols {
    set: HashSet<Arc<str>, foldhash::fast::RandomState>,
    /// The strings' bytes, each with [`OVERHEAD`].
    bytes: usize,
    /// The weight at which the set is pruned.
    prune_at: usize,
    /// When it was last pruned.
    pruned: Instant,
}

/// Least weight (bytes) the set reaches before it is pruned for its growth.
const FLOOR: usize = 1 << 20;

/// What a string costs besides its bytes: the Arc's counts and the set's slot.
const OVERHEAD: usize = 32;

/// Longest time between prunes while strings are interned.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Seeded at random per process: the strings come from tenants' objects.
static SYMBOLS: LazyLock<Mutex<Symbols>> = LazyLock::new(|| {
    Mutex::new(Symbols {
        set: HashSet::default(),
        bytes: 0,
        prune_at: FLOOR,
        pruned: Instant::now(),
    })
});

/// The shared copy of `text`.
pub fn intern(text: &str) -> Arc<str> {
    let mut symbols = SYMBOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(shared) = symbols.set.get(text) {
        return Arc::clone(shared);
    }
    if symbols.bytes >= symbols.prune_at || symbols.pruned.elapsed() >= PRUNE_EVERY {
        symbols.prune();
    }
    let shared: Arc<str> = Arc::from(text);
    symbols.set.insert(Arc::clone(&shared));
    symbols.bytes += text.len() + OVERHEAD;
    shared
}

impl Symbols {
    /// Lets go of the strings no one else holds.
    fn prune(&mut self) {
        self.set.retain(|s| Arc::strong_count(s) > 1);
        self.bytes = self.set.iter().map(|s| s.len() + OVERHEAD).sum();
        self.prune_at = (2 * self.bytes).max(FLOOR);
        self.pruned = Instant::now();
    }
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
        // A large string weighs its bytes: interning it takes the set over its floor.
        drop(intern(&"x".repeat(2 * FLOOR)));
        intern("symbols-test-next");
        assert!(weak.upgrade().is_none(), "an unused string was kept");
        assert_eq!(&*a, "symbols-test-a");
        assert!(Arc::ptr_eq(&a, &intern("symbols-test-a")));
    }
}
