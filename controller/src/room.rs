//! Maps that fill and empty (queues, writes in flight) give back their room once mostly
//! empty: a hash map keeps the table of its largest size, and a fleet's convergence fills
//! such maps with hundreds of thousands of entries for a few seconds.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

/// Least capacity worth giving back.
const FLOOR: usize = 64;

/// Whether a map of `len` entries in `capacity` slots is mostly empty.
fn mostly_empty(len: usize, capacity: usize) -> bool {
    capacity > FLOOR && len < capacity / 4
}

/// Shrinks `map` to twice its entries when it is mostly empty (so a map that fills and
/// empties by turns is not rebuilt at each entry).
pub fn give_back<K: Eq + Hash, V, S: BuildHasher>(map: &mut HashMap<K, V, S>) {
    if mostly_empty(map.len(), map.capacity()) {
        map.shrink_to(2 * map.len());
    }
}

/// [`give_back`] for a set.
pub fn give_back_set<K: Eq + Hash, S: BuildHasher>(set: &mut HashSet<K, S>) {
    if mostly_empty(set.len(), set.capacity()) {
        set.shrink_to(2 * set.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emptied_map_gives_back_its_room_and_a_full_one_keeps_it() {
        let mut map: HashMap<u32, u32> = (0..100_000).map(|i| (i, i)).collect();
        let full = map.capacity();
        give_back(&mut map);
        assert_eq!(map.capacity(), full);
        for i in 10..100_000 {
            map.remove(&i);
            give_back(&mut map);
        }
        assert!(
            map.capacity() <= 4 * FLOOR,
            "{} slots for 10",
            map.capacity()
        );
        assert_eq!(map.len(), 10);
        assert!((0..10).all(|i| map[&i] == i));

        let mut set: HashSet<u32> = (0..10_000).collect();
        set.retain(|i| *i < 3);
        give_back_set(&mut set);
        assert!(set.capacity() <= FLOOR, "{} slots for 3", set.capacity());
    }
}
