//! Which marked profile the deployer starts next. Passes run in lanes: a profile whose pass
//! changes one cluster runs in that cluster's lane, one pass at a time in each lane, so two
//! passes never deploy into one cluster at once; a profile whose pass may change several
//! clusters (or the management cluster) runs alone. A pass starts whenever a lane is free,
//! not when a whole batch is done: a profile marked while thousands wait is then not queued
//! behind them. Picks alternate between the freshest profile (whose source cluster's report
//! changed last: an event just seen), even behind a backlog in its lane, and the profile
//! waiting longest, so fresh work is quick and old work still advances at half the pace or
//! more. A pick costs a logarithm of the waiting profiles, not a look at every lane: the
//! first profiles of each free lane are kept in one order of their own.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::identity::ClusterRef;
use crate::room;

/// A profile's lane: the one cluster its pass changes, or none (it runs alone).
pub type Lane = Option<ClusterRef>;

/// The profiles waiting and running.
#[derive(Default)]
pub struct Schedule {
    /// Every waiting profile, running ones marked again included.
    waiting: HashMap<String, Entry>,
    /// The waiting profiles that are not running, by lane (one marked while it runs joins
    /// its lane when that run ends).
    lanes: HashMap<Lane, Order>,
    /// The oldest and the freshest profile of each free cluster lane.
    heads: Order,
    marks: u64,
    running: HashSet<String>,
    busy: HashSet<ClusterRef>,
    alone: bool,
    /// The next pick is the longest waiting (else the freshest).
    oldest_turn: bool,
}

/// A pass to start: the profile, its lane, and how long since it was first marked.
#[derive(Debug, PartialEq)]
pub struct Start {
    /// The profile.
    pub name: String,
    /// Its lane, to hand back to [`Schedule::done`].
    pub lane: Lane,
    /// How long it waited.
    pub waited: Duration,
}

/// When the report of a profile's source cluster last changed, as seen when it was marked.
type Fresh = Option<Instant>;

/// One waiting profile: its place (a count of first marks), lane and freshness, and when it
/// was first marked.
#[derive(Clone)]
struct Entry {
    at: u64,
    lane: Lane,
    fresh: Fresh,
    since: Instant,
}

/// Profiles oldest first, and freshest first (then oldest).
#[derive(Default)]
struct Order {
    by_age: BTreeSet<(u64, String)>,
    by_freshness: BTreeSet<(Reverse<Fresh>, u64, String)>,
}

impl Order {
    fn insert(&mut self, name: &str, entry: &Entry) {
        self.by_age.insert((entry.at, name.to_owned()));
        self.by_freshness
            .insert((Reverse(entry.fresh), entry.at, name.to_owned()));
    }

    fn remove(&mut self, name: &str, entry: &Entry) {
        self.by_age.remove(&(entry.at, name.to_owned()));
        self.by_freshness
            .remove(&(Reverse(entry.fresh), entry.at, name.to_owned()));
    }
}

impl Schedule {
    /// Marks `name`, whose pass changes `lane` (whose source cluster's report last changed
    /// at `fresh`). One already waiting keeps its place, and the fresher of its freshnesses.
    pub fn mark(&mut self, name: String, lane: Lane, fresh: Fresh) {
        let entry = match self.waiting.remove(&name) {
            Some(old) => {
                self.leave(&name, &old);
                Entry {
                    lane,
                    fresh: fresh.max(old.fresh),
                    ..old
                }
            }
            None => {
                self.marks += 1;
                Entry {
                    at: self.marks,
                    lane,
                    fresh,
                    since: Instant::now(),
                }
            }
        };
        if !self.running.contains(&name) {
            self.join(&name, &entry);
        }
        self.waiting.insert(name, entry);
    }

    /// The next profile to start, if one may start now. It counts as running until
    /// [`Schedule::done`].
    pub fn start(&mut self) -> Option<Start> {
        if self.alone {
            return None;
        }
        // A profile that runs alone goes first, once every lane is done.
        if let Some(waiting) = self.lanes.get(&None) {
            let (_, name) = waiting.by_age.first()?;
            if !self.running.is_empty() {
                return None;
            }
            let name = name.clone();
            self.alone = true;
            return self.begin(name);
        }
        let name = if self.oldest_turn {
            &self.heads.by_age.first()?.1
        } else {
            &self.heads.by_freshness.first()?.2
        };
        let name = name.clone();
        self.oldest_turn = !self.oldest_turn;
        self.begin(name)
    }

    /// `name`'s pass, started in `lane`, ended.
    pub fn done(&mut self, name: &str, lane: &Lane) {
        self.running.remove(name);
        room::give_back_set(&mut self.running);
        match lane {
            Some(cluster) => {
                self.busy.remove(cluster);
                self.head(lane);
            }
            None => self.alone = false,
        }
        if let Some(entry) = self.waiting.get(name).cloned() {
            self.join(name, &entry);
        }
    }

    fn begin(&mut self, name: String) -> Option<Start> {
        let entry = self.waiting.remove(&name)?;
        room::give_back(&mut self.waiting);
        if let Some(cluster) = &entry.lane {
            self.busy.insert(cluster.clone());
        }
        self.leave(&name, &entry);
        self.running.insert(name.clone());
        Some(Start {
            name,
            waited: entry.since.elapsed(),
            lane: entry.lane,
        })
    }

    /// Puts `name` in its lane.
    fn join(&mut self, name: &str, entry: &Entry) {
        self.unhead(&entry.lane);
        self.lanes
            .entry(entry.lane.clone())
            .or_default()
            .insert(name, entry);
        self.head(&entry.lane);
    }

    /// Takes `name` out of its lane (if it is there).
    fn leave(&mut self, name: &str, entry: &Entry) {
        self.unhead(&entry.lane);
        if let Some(waiting) = self.lanes.get_mut(&entry.lane) {
            waiting.remove(name, entry);
            if waiting.by_age.is_empty() {
                self.lanes.remove(&entry.lane);
            }
        }
        self.head(&entry.lane);
    }

    /// Takes the first profiles of `lane` out of the heads.
    fn unhead(&mut self, lane: &Lane) {
        if lane.is_none() {
            return;
        }
        let Some(waiting) = self.lanes.get(lane) else {
            return;
        };
        if let Some(first) = waiting.by_age.first() {
            self.heads.by_age.remove(first);
        }
        if let Some(first) = waiting.by_freshness.first() {
            self.heads.by_freshness.remove(first);
        }
    }

    /// Puts the first profiles of `lane` in the heads, if it is a free cluster lane.
    fn head(&mut self, lane: &Lane) {
        let Some(cluster) = lane else { return };
        if self.busy.contains(cluster) {
            return;
        }
        let Some(waiting) = self.lanes.get(lane) else {
            return;
        };
        if let Some(first) = waiting.by_age.first() {
            self.heads.by_age.insert(first.clone());
        }
        if let Some(first) = waiting.by_freshness.first() {
            self.heads.by_freshness.insert(first.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::v1beta1::ClusterType;
    use std::time::Duration;

    /// The next pass's profile and lane.
    fn start(s: &mut Schedule) -> Option<(String, Lane)> {
        s.start().map(|start| (start.name, start.lane))
    }

    fn cluster(name: &str) -> Lane {
        Some(ClusterRef {
            namespace: "default".into(),
            name: name.into(),
            cluster_type: ClusterType::Sveltos,
        })
    }

    #[test]
    fn one_pass_at_a_time_in_a_lane_and_a_free_lane_never_waits_for_a_busy_one() {
        let mut s = Schedule::default();
        s.mark("a1".into(), cluster("a"), None);
        s.mark("a2".into(), cluster("a"), None);
        s.mark("b1".into(), cluster("b"), None);
        let first = start(&mut s).unwrap();
        let second = start(&mut s).unwrap();
        assert_eq!((first.0.as_str(), second.0.as_str()), ("a1", "b1"));
        assert_eq!(start(&mut s), None, "a2 waits for a1's lane");
        s.mark("c1".into(), cluster("c"), None);
        assert_eq!(start(&mut s).unwrap().0, "c1", "a new lane starts at once");
        s.done("a1", &cluster("a"));
        assert_eq!(start(&mut s).unwrap().0, "a2");
    }

    #[test]
    fn a_profile_marked_while_it_runs_runs_again_after_and_never_twice_at_once() {
        let mut s = Schedule::default();
        s.mark("p".into(), cluster("a"), None);
        let (name, lane) = start(&mut s).unwrap();
        // Its lane changed meanwhile: still not a second run at once.
        s.mark("p".into(), cluster("b"), None);
        s.mark("p".into(), cluster("b"), None);
        assert_eq!(start(&mut s), None);
        s.done(&name, &lane);
        assert_eq!(start(&mut s), Some(("p".into(), cluster("b"))));
        assert_eq!(start(&mut s), None);
    }

    #[test]
    fn a_profile_that_runs_alone_waits_for_the_lanes_and_holds_them_meanwhile() {
        let mut s = Schedule::default();
        s.mark("a1".into(), cluster("a"), None);
        let a1 = start(&mut s).unwrap();
        s.mark("local".into(), None, None);
        s.mark("b1".into(), cluster("b"), None);
        assert_eq!(
            start(&mut s),
            None,
            "b1 waits behind the one that runs alone"
        );
        s.done(&a1.0, &a1.1);
        assert_eq!(start(&mut s), Some(("local".into(), None)));
        assert_eq!(start(&mut s), None);
        s.done("local", &None);
        assert_eq!(start(&mut s).unwrap().0, "b1");
    }

    #[test]
    fn picks_alternate_between_the_freshest_cluster_and_the_longest_waiting() {
        let mut s = Schedule::default();
        let now = Instant::now();
        s.mark("old-0".into(), cluster("old-0"), None);
        s.mark(
            "old-1".into(),
            cluster("old-1"),
            Some(now - Duration::from_secs(5)),
        );
        s.mark("old-2".into(), cluster("old-2"), None);
        s.mark("new".into(), cluster("new"), Some(now));
        let order: Vec<String> = std::iter::from_fn(|| start(&mut s).map(|(n, _)| n)).collect();
        assert_eq!(order, ["new", "old-0", "old-1", "old-2"]);
    }

    /// The pick the old scan over every lane made, from the waiting profiles themselves.
    fn scanned(s: &Schedule) -> Option<String> {
        let idle = s
            .waiting
            .iter()
            .filter(|(name, _)| !s.running.contains(*name));
        if idle.clone().any(|(_, e)| e.lane.is_none()) {
            if s.alone || !s.running.is_empty() {
                return None;
            }
            let alone = idle.filter(|(_, e)| e.lane.is_none());
            return alone.min_by_key(|(_, e)| e.at).map(|(n, _)| n.clone());
        }
        if s.alone {
            return None;
        }
        let free = idle.filter(|(_, e)| e.lane.as_ref().is_some_and(|c| !s.busy.contains(c)));
        let pick = if s.oldest_turn {
            free.min_by_key(|(name, e)| (e.at, (*name).clone()))
        } else {
            free.max_by_key(|(_, e)| (e.fresh, Reverse(e.at)))
        };
        pick.map(|(name, _)| name.clone())
    }

    #[test]
    fn picks_what_a_scan_over_every_lane_picks() {
        let now = Instant::now();
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut s = Schedule::default();
        let mut running: Vec<Start> = Vec::new();
        let mut picks = 0;
        for _ in 0..20_000 {
            match next(10) {
                0..=4 => {
                    let lane = match next(40) {
                        0 => None,
                        n => cluster(&format!("c{}", n % 12)),
                    };
                    let fresh = (next(3) > 0).then(|| now + Duration::from_millis(next(50)));
                    s.mark(format!("p{}", next(60)), lane, fresh);
                }
                5..=7 if running.len() < LANES_IN_TEST => {
                    let expected = scanned(&s);
                    let started = s.start();
                    assert_eq!(started.as_ref().map(|x| &x.name), expected.as_ref());
                    if let Some(started) = started {
                        picks += 1;
                        running.push(started);
                    }
                }
                _ if !running.is_empty() => {
                    let done = running.swap_remove(next(running.len() as u64) as usize);
                    s.done(&done.name, &done.lane);
                }
                _ => {}
            }
        }
        assert!(picks > 1_000, "{picks} picks");
    }

    const LANES_IN_TEST: usize = 4;

    #[test]
    fn a_fresh_profile_goes_before_the_backlog_of_its_own_lane() {
        let mut s = Schedule::default();
        let now = Instant::now();
        let before = Some(now - Duration::from_secs(5));
        for n in 0..3 {
            s.mark(format!("backlog-{n}"), cluster("a"), before);
        }
        s.mark("probe".into(), cluster("a"), Some(now));
        let mut order = Vec::new();
        while let Some((name, lane)) = start(&mut s) {
            s.done(&name, &lane);
            order.push(name);
        }
        assert_eq!(order, ["probe", "backlog-0", "backlog-1", "backlog-2"]);

        // Marked again while waiting, a profile keeps its place and its fresher mark.
        s.mark("y".into(), cluster("a"), before);
        s.mark("x".into(), cluster("a"), Some(now));
        s.mark("x".into(), cluster("a"), before);
        assert_eq!(start(&mut s).unwrap().0, "x");
    }
}
