//! Which marked profile the deployer starts next. Passes run in lanes: a profile whose pass
//! changes one cluster runs in that cluster's lane, one pass at a time in each lane, so two
//! passes never deploy into one cluster at once; a profile whose pass may change several
//! clusters (or the management cluster) runs alone. A pass starts whenever a lane is free,
//! not when a whole batch is done: a profile marked while thousands wait is then not queued
//! behind them. Picks alternate between the freshest profile (whose source cluster's report
//! changed last: an event just seen), even behind a backlog in its lane, and the profile
//! waiting longest, so fresh work is quick and old work still advances at half the pace or
//! more.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Instant;

use crate::identity::ClusterRef;

/// A profile's lane: the one cluster its pass changes, or none (it runs alone).
pub type Lane = Option<ClusterRef>;

/// The profiles waiting and running.
#[derive(Default)]
pub struct Schedule {
    /// Waiting profiles: when first marked (a count), their lane and freshness.
    waiting: HashMap<String, (u64, Lane, Fresh)>,
    /// Waiting profiles by lane.
    lanes: HashMap<Lane, Waiting>,
    marks: u64,
    running: HashSet<String>,
    busy: HashSet<ClusterRef>,
    alone: bool,
    /// The next pick is the longest waiting (else the freshest).
    oldest_turn: bool,
}

/// When the report of a profile's source cluster last changed, as seen when it was marked.
type Fresh = Option<Instant>;

/// The profiles waiting in one lane: oldest first, and freshest first (then oldest).
#[derive(Default)]
struct Waiting {
    by_age: BTreeSet<(u64, String)>,
    by_freshness: BTreeSet<(Reverse<Fresh>, u64, String)>,
}

impl Waiting {
    fn insert(&mut self, at: u64, name: &str, fresh: Fresh) {
        self.by_age.insert((at, name.to_owned()));
        self.by_freshness
            .insert((Reverse(fresh), at, name.to_owned()));
    }

    fn remove(&mut self, at: u64, name: &str, fresh: Fresh) {
        self.by_age.remove(&(at, name.to_owned()));
        self.by_freshness
            .remove(&(Reverse(fresh), at, name.to_owned()));
    }
}

impl Schedule {
    /// Marks `name`, whose pass changes `lane` (whose source cluster's report last changed
    /// at `fresh`). One already waiting keeps its place, and the fresher of its freshnesses.
    pub fn mark(&mut self, name: String, lane: Lane, fresh: Fresh) {
        let (at, fresh) = match self.waiting.get(&name).cloned() {
            Some((at, old_lane, old_fresh)) => {
                self.remove(&name, at, &old_lane, old_fresh);
                (at, fresh.max(old_fresh))
            }
            None => {
                self.marks += 1;
                (self.marks, fresh)
            }
        };
        self.lanes
            .entry(lane.clone())
            .or_default()
            .insert(at, &name, fresh);
        self.waiting.insert(name, (at, lane, fresh));
    }

    fn remove(&mut self, name: &str, at: u64, lane: &Lane, fresh: Fresh) {
        if let Some(waiting) = self.lanes.get_mut(lane) {
            waiting.remove(at, name, fresh);
            if waiting.by_age.is_empty() {
                self.lanes.remove(lane);
            }
        }
        self.waiting.remove(name);
    }

    /// The next profile to start, with its lane, if one may start now. It counts as
    /// running until [`Schedule::done`].
    pub fn start(&mut self) -> Option<(String, Lane)> {
        if self.alone {
            return None;
        }
        let running = &self.running;
        let idle = |name: &String| !running.contains(name);
        // A profile that runs alone goes first, once every lane is done.
        if let Some(waiting) = self.lanes.get(&None) {
            let (_, name) = waiting.by_age.iter().find(|(_, name)| idle(name))?;
            if !self.running.is_empty() {
                return None;
            }
            let name = name.clone();
            self.alone = true;
            return Some(self.begin(name, None));
        }
        let free = self.lanes.iter().filter_map(|(lane, waiting)| {
            let cluster = lane.as_ref()?;
            (!self.busy.contains(cluster)).then_some((lane, waiting))
        });
        let pick = if self.oldest_turn {
            // Each free lane's longest waiting profile; the longest waiting of them.
            free.filter_map(|(lane, waiting)| {
                let (at, name) = waiting.by_age.iter().find(|(_, name)| idle(name))?;
                Some(((*at, name), lane))
            })
            .min_by_key(|(key, _)| *key)
        } else {
            // Each free lane's freshest profile; the freshest of them, the oldest if equal.
            free.filter_map(|(lane, waiting)| {
                let (fresh, at, name) = waiting
                    .by_freshness
                    .iter()
                    .find(|(_, _, name)| idle(name))?;
                Some(((fresh.0, Reverse(*at)), name, lane))
            })
            .max_by_key(|(key, _, _)| *key)
            .map(|((_, at), name, lane)| ((at.0, name), lane))
        };
        let ((_, name), lane) = pick?;
        let (name, lane) = (name.clone(), lane.clone());
        self.oldest_turn = !self.oldest_turn;
        Some(self.begin(name, lane))
    }

    fn begin(&mut self, name: String, lane: Lane) -> (String, Lane) {
        if let Some((at, _, fresh)) = self.waiting.get(&name).cloned() {
            self.remove(&name, at, &lane, fresh);
        }
        if let Some(cluster) = &lane {
            self.busy.insert(cluster.clone());
        }
        self.running.insert(name.clone());
        (name, lane)
    }

    /// `name`'s pass, started in `lane`, ended.
    pub fn done(&mut self, name: &str, lane: &Lane) {
        self.running.remove(name);
        match lane {
            Some(cluster) => {
                self.busy.remove(cluster);
            }
            None => self.alone = false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::v1beta1::ClusterType;
    use std::time::Duration;

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
        let first = s.start().unwrap();
        let second = s.start().unwrap();
        assert_eq!((first.0.as_str(), second.0.as_str()), ("a1", "b1"));
        assert_eq!(s.start(), None, "a2 waits for a1's lane");
        s.mark("c1".into(), cluster("c"), None);
        assert_eq!(s.start().unwrap().0, "c1", "a new lane starts at once");
        s.done("a1", &cluster("a"));
        assert_eq!(s.start().unwrap().0, "a2");
    }

    #[test]
    fn a_profile_marked_while_it_runs_runs_again_after_and_never_twice_at_once() {
        let mut s = Schedule::default();
        s.mark("p".into(), cluster("a"), None);
        let (name, lane) = s.start().unwrap();
        // Its lane changed meanwhile: still not a second run at once.
        s.mark("p".into(), cluster("b"), None);
        s.mark("p".into(), cluster("b"), None);
        assert_eq!(s.start(), None);
        s.done(&name, &lane);
        assert_eq!(s.start(), Some(("p".into(), cluster("b"))));
        assert_eq!(s.start(), None);
    }

    #[test]
    fn a_profile_that_runs_alone_waits_for_the_lanes_and_holds_them_meanwhile() {
        let mut s = Schedule::default();
        s.mark("a1".into(), cluster("a"), None);
        let a1 = s.start().unwrap();
        s.mark("local".into(), None, None);
        s.mark("b1".into(), cluster("b"), None);
        assert_eq!(s.start(), None, "b1 waits behind the one that runs alone");
        s.done(&a1.0, &a1.1);
        assert_eq!(s.start(), Some(("local".into(), None)));
        assert_eq!(s.start(), None);
        s.done("local", &None);
        assert_eq!(s.start().unwrap().0, "b1");
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
        let order: Vec<String> = std::iter::from_fn(|| s.start().map(|(n, _)| n)).collect();
        assert_eq!(order, ["new", "old-0", "old-1", "old-2"]);
    }

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
        while let Some((name, lane)) = s.start() {
            s.done(&name, &lane);
            order.push(name);
        }
        assert_eq!(order, ["probe", "backlog-0", "backlog-1", "backlog-2"]);

        // Marked again while waiting, a profile keeps its place and its fresher mark.
        s.mark("y".into(), cluster("a"), before);
        s.mark("x".into(), cluster("a"), Some(now));
        s.mark("x".into(), cluster("a"), before);
        assert_eq!(s.start().unwrap().0, "x");
    }
}
