//! kube-apiserver's cache of token authentications: a token that authenticated is taken at
//! its word for 10 seconds (`TokenSuccessCacheTTL`, kube-apiserver's default) instead of
//! verifying its signature and looking up its ServiceAccount on every request; a refused
//! token is not remembered (`TokenFailureCacheTTL` is 0). As there, a token revoked in the
//! meantime (its ServiceAccount or Secret deleted) works until its entry ends; unlike there,
//! no entry outlives the token's own expiry.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::User;

/// How long a token's authentication is remembered (kube-apiserver's default).
pub const SUCCESS_TTL: Duration = Duration::from_secs(10);

/// Most tokens remembered; past that, entries that ended are let go, then all of them.
const CAPACITY: usize = 4_096;

/// Tokens that authenticated, with their user and when the entry ends.
#[derive(Debug, Default)]
pub struct TokenCache {
    entries: Mutex<HashMap<String, (User, Instant)>>,
}

impl TokenCache {
    /// The user `token` authenticated as, if that is remembered and its entry has not ended.
    pub fn get(&self, token: &str, now: Instant) -> Option<User> {
        let entries = self.entries.lock().ok()?;
        let (user, until) = entries.get(token)?;
        (now < *until).then(|| user.clone())
    }

    /// Remembers that `token` authenticated as `user`, until `until` at the latest.
    pub fn put(&self, token: &str, user: &User, now: Instant, until: Instant) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= CAPACITY {
            entries.retain(|_, (_, ends)| now < *ends);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        let until = until.min(now + SUCCESS_TTL);
        entries.insert(token.to_owned(), (user.clone(), until));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_ends_after_the_ttl_or_at_the_tokens_expiry() {
        let cache = TokenCache::default();
        let user = User::service_account("default", "sa", "u");
        let now = Instant::now();
        let far = now + Duration::from_secs(3600);
        cache.put("a", &user, now, far);
        assert_eq!(
            cache.get("a", now + Duration::from_secs(9)),
            Some(user.clone())
        );
        assert_eq!(cache.get("a", now + SUCCESS_TTL), None);
        assert_eq!(cache.get("b", now), None);
        cache.put("c", &user, now, now + Duration::from_secs(2));
        assert_eq!(
            cache.get("c", now + Duration::from_secs(1)),
            Some(user.clone())
        );
        assert_eq!(cache.get("c", now + Duration::from_secs(2)), None);
    }

    #[test]
    fn a_full_cache_lets_go_of_ended_entries_first() {
        let cache = TokenCache::default();
        let user = User::service_account("default", "sa", "u");
        let now = Instant::now();
        for n in 0..CAPACITY - 1 {
            cache.put(
                &format!("old-{n}"),
                &user,
                now,
                now + Duration::from_secs(1),
            );
        }
        cache.put("kept", &user, now, now + Duration::from_secs(60));
        let later = now + Duration::from_secs(5);
        cache.put("new", &user, later, later + Duration::from_secs(60));
        assert!(cache.get("kept", later).is_some());
        assert!(cache.get("new", later).is_some());
        assert_eq!(cache.entries.lock().unwrap().len(), 2);
    }
}
