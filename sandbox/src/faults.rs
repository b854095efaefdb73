//! Faults a test injects into one cluster's API server for a bounded time: every watch
//! dropped, watch resumes answered `410 Expired`, a share of requests answered 500, 503 or
//! 429 (with `Retry-After`), a share of updates answered `409 Conflict`, latency. Real API
//! servers do each of these under load, upgrades and restarts; controllers must live through
//! them. Which requests a share fails is pseudo-random but fixed, so a test that injects
//! one reads the same on every run.

use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// One kind of misbehaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Fault {
    /// Every open watch ends now, and every new one ends as soon as it starts.
    DropWatches,
    /// A watch from a resourceVersion is told that version is gone (`410 Expired`), as after
    /// a compaction: the client must list again.
    ExpireWatches,
    /// A `share` (0 to 1) of requests are answered with `code`: 500 (an internal error), 503
    /// (unavailable) or 429 (too many requests, retry after a second).
    Errors {
        /// 500, 503 or 429.
        code: u16,
        /// Which part of the requests fails, 0 to 1.
        share: f64,
    },
    /// A `share` (0 to 1) of updates and patches are answered `409 Conflict`, as if someone
    /// else wrote the object first.
    Conflicts {
        /// Which part of the updates conflicts, 0 to 1.
        share: f64,
    },
    /// Every request waits `millis` before it is served.
    Latency {
        /// The wait, in milliseconds.
        millis: u64,
    },
}

impl Fault {
    /// Why the fault cannot be injected, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        let share = |share: f64| {
            if (0.0..=1.0).contains(&share) {
                Ok(())
            } else {
                Err(format!("share must be between 0 and 1, not {share}"))
            }
        };
        match self {
            Fault::Errors { code, share: s } => {
                if ![500, 503, 429].contains(code) {
                    return Err(format!("code must be 500, 503 or 429, not {code}"));
                }
                share(*s)
            }
            Fault::Conflicts { share: s } => share(*s),
            Fault::Latency { millis } if *millis > 60_000 => {
                Err(format!("latency must be at most 60000 ms, not {millis}"))
            }
            _ => Ok(()),
        }
    }
}

/// A fault and when it ends.
#[derive(Debug)]
struct Active {
    fault: Fault,
    until: Instant,
    /// Requests the fault has looked at, for its share.
    seen: AtomicU64,
}

impl Active {
    /// Whether the next request is among the `share` that fail. The n-th request draws the
    /// n-th number of a fixed pseudo-random sequence (SplitMix64), so the same requests fail
    /// on every run, and no client that sends requests in pairs or rounds keeps meeting the
    /// failure on the same one (as it would under every-other-request).
    fn hits(&self, share: f64) -> bool {
        let n = self.seen.fetch_add(1, Ordering::Relaxed);
        let mut z = n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // The top 53 bits as a number in [0, 1).
        ((z >> 11) as f64 / (1u64 << 53) as f64) < share
    }
}

/// A fault in force, as told by [`Faults::active`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Injected {
    /// What misbehaves.
    #[serde(flatten)]
    pub fault: Fault,
    /// Seconds left.
    pub seconds: f64,
}

/// What a request meets before it is served.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Served (after `delay`).
    Serve,
    /// Answered with this status code instead.
    Fail(u16),
}

/// The faults of one cluster.
#[derive(Debug)]
pub struct Faults {
    active: Mutex<Vec<Active>>,
    /// Bumped when watches must end; every watch holds a receiver.
    drops: watch::Sender<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            active: Mutex::new(Vec::new()),
            drops: watch::Sender::new(0),
        }
    }
}

impl Faults {
    /// Puts `fault` in force for `lasting` (replacing one of the same kind).
    pub fn inject(&self, fault: Fault, lasting: Duration) {
        let drops = fault == Fault::DropWatches;
        let mut active = self.lock();
        active.retain(|a| std::mem::discriminant(&a.fault) != std::mem::discriminant(&fault));
        active.push(Active {
            fault,
            until: Instant::now() + lasting,
            seen: AtomicU64::new(0),
        });
        drop(active);
        if drops {
            self.drops.send_modify(|n| *n += 1);
        }
    }

    /// Ends every fault.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The faults in force and how long each lasts still.
    pub fn active(&self) -> Vec<Injected> {
        let now = Instant::now();
        let mut active = self.lock();
        active.retain(|a| a.until > now);
        active
            .iter()
            .map(|a| Injected {
                fault: a.fault.clone(),
                seconds: (a.until - now).as_secs_f64(),
            })
            .collect()
    }

    /// What a request meets: the latency to wait, then whether it fails. `update` says it
    /// replaces or patches an object (conflicts hit only those).
    pub fn before(&self, update: bool) -> (Duration, Verdict) {
        let now = Instant::now();
        let mut active = self.lock();
        active.retain(|a| a.until > now);
        let mut delay = Duration::ZERO;
        let mut verdict = Verdict::Serve;
        for a in active.iter() {
            match a.fault {
                Fault::Latency { millis } => delay = Duration::from_millis(millis),
                Fault::Errors { code, share } if verdict == Verdict::Serve && a.hits(share) => {
                    verdict = Verdict::Fail(code);
                }
                Fault::Conflicts { share }
                    if update && verdict == Verdict::Serve && a.hits(share) =>
                {
                    verdict = Verdict::Fail(409);
                }
                _ => {}
            }
        }
        (delay, verdict)
    }

    /// Whether `fault` is in force (for the watch faults, which have no share).
    pub fn in_force(&self, fault: &Fault) -> bool {
        let now = Instant::now();
        self.lock()
            .iter()
            .any(|a| &a.fault == fault && a.until > now)
    }

    /// A receiver that changes when every watch must end.
    pub fn drops(&self) -> watch::Receiver<u64> {
        self.drops.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Active>> {
        // A panic while holding the list leaves it whole (no invariant spans the lock).
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_fails_that_share_of_requests_the_same_way_every_time() {
        let run = || {
            let faults = Faults::default();
            faults.inject(
                Fault::Errors {
                    code: 503,
                    share: 0.25,
                },
                Duration::from_secs(60),
            );
            (0..10_000)
                .map(|_| faults.before(false).1 == Verdict::Fail(503))
                .collect::<Vec<bool>>()
        };
        let failed = run();
        let count = failed.iter().filter(|f| **f).count();
        assert!((2_300..2_700).contains(&count), "{count} of 10000 failed");
        assert_eq!(failed, run());
        // Pairs of requests do not keep meeting it on the same one.
        let firsts = failed.chunks(2).filter(|pair| pair[0]).count();
        let seconds = failed.chunks(2).filter(|pair| pair[1]).count();
        assert!(firsts > 1_000 && seconds > 1_000, "{firsts} {seconds}");
        let faults = Faults::default();
        faults.inject(Fault::Conflicts { share: 1.0 }, Duration::from_secs(60));
        faults.clear();
        assert_eq!(faults.before(true), (Duration::ZERO, Verdict::Serve));
    }

    #[test]
    fn conflicts_hit_updates_only_and_faults_end_when_their_time_is_up() {
        let faults = Faults::default();
        faults.inject(Fault::Conflicts { share: 1.0 }, Duration::from_millis(50));
        faults.inject(Fault::Latency { millis: 5 }, Duration::from_secs(60));
        assert_eq!(faults.before(false).1, Verdict::Serve);
        assert_eq!(
            faults.before(true),
            (Duration::from_millis(5), Verdict::Fail(409))
        );
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(faults.before(true).1, Verdict::Serve);
        assert_eq!(faults.active().len(), 1);
    }

    #[test]
    fn dropping_watches_tells_every_watch_and_bad_faults_are_refused() {
        let faults = Faults::default();
        let watch = faults.drops();
        faults.inject(Fault::DropWatches, Duration::from_secs(1));
        assert!(watch.has_changed().unwrap_or(false));
        assert!(faults.in_force(&Fault::DropWatches));
        assert!(
            Fault::Errors {
                code: 404,
                share: 0.5
            }
            .check()
            .is_err()
        );
        assert!(Fault::Conflicts { share: 1.5 }.check().is_err());
        assert!(
            Fault::Errors {
                code: 429,
                share: 1.0
            }
            .check()
            .is_ok()
        );
    }
}
