//! The keys of template maps, ordered as `str` is but compared inline. A template reads
//! objects' fields by key in small maps (`.metadata.name`: a few keys per level), where
//! `str`'s comparison is a call to `memcmp` that costs more than the bytes it compares: a
//! tenth of a cached render went to it.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Deref;

use ref_cast::RefCast;

/// A map key: an owned string.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Key(String);

/// A borrowed key, what map lookups take: `map.get(KeyStr::new("name"))`.
#[derive(RefCast, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct KeyStr(str);

impl KeyStr {
    /// `text` as a key to look up.
    #[inline]
    pub fn new(text: &str) -> &KeyStr {
        KeyStr::ref_cast(text)
    }
}

impl Ord for KeyStr {
    /// `str`'s order (bytes, then length), byte by byte: keys are short and mostly differ
    /// in their first bytes.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (self.0.as_bytes(), other.0.as_bytes());
        for (x, y) in a.iter().zip(b) {
            if x != y {
                return x.cmp(y);
            }
        }
        a.len().cmp(&b.len())
    }
}

impl PartialOrd for KeyStr {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        KeyStr::new(&self.0).cmp(KeyStr::new(&other.0))
    }
}

impl PartialOrd for Key {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Borrow<KeyStr> for Key {
    #[inline]
    fn borrow(&self) -> &KeyStr {
        KeyStr::new(&self.0)
    }
}

impl Deref for Key {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Key {
    fn from(text: String) -> Self {
        Key(text)
    }
}

impl From<&str> for Key {
    fn from(text: &str) -> Self {
        Key(text.to_owned())
    }
}

impl From<Key> for String {
    fn from(key: Key) -> Self {
        key.0
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_as_their_strings_do() {
        let words = [
            "",
            "a",
            "aa",
            "ab",
            "b",
            "apiVersion",
            "kind",
            "metadata",
            "méta",
            "z\u{0}",
            "z",
            "Z",
            "10",
            "9",
        ];
        for x in words {
            for y in words {
                assert_eq!(Key::from(x).cmp(&Key::from(y)), x.cmp(y), "{x:?} vs {y:?}");
            }
        }
    }

    #[test]
    fn a_map_of_keys_is_searched_by_borrowed_keys() {
        let map = std::collections::BTreeMap::from([(Key::from("name"), 1), (Key::from("uid"), 2)]);
        assert_eq!(map.get(KeyStr::new("uid")), Some(&2));
        assert_eq!(map.get(KeyStr::new("nam")), None);
    }
}
