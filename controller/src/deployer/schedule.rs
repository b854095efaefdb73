//! Which marked profile the deployer starts next. Passes run in lanes: a profile whose pass
//! changes one cluster runs in that cluster's lane, one pass at a time in each lane, so two
//! passes never deploy into one cluster at once; a profile whose pass may change several
//! clusters (or the management cluster) runs alone. A pass starts whenever a lane is free,
//! not when a whole batch is done: a profile marked while thousands wait is then not queued
//! behind them. Picks alternate between the lane of the freshest cluster (whose report
//! changed last: an event just seen) and the profile waiting longest, so fresh work is
//! quick and old work still advances at half the pace or more.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Instant;

use crate::identity::ClusterRef;

/// A profile's lane: the one cluster its pass changes, or none (it runs alone).
pub type Lane = Option<ClusterRef>;

/// The profiles waiting and running.
#[derive(Default)]
pub struct Schedule {
    /// Waiting profiles: when first marked (a count) and their lane.
    waiting: HashMap<String, (u64, Lane)>,
    /// Waiting profiles by lane, oldest first.
    lanes: HashMap<Lane, BTreeSet<(u64, String)>>,
    /// Waiting profiles, oldest first.
    order: BTreeSet<(u64, String)>,
    marks: u64,
    running: HashSet<String>,
    busy: HashSet<ClusterRef>,
    alone: bool,
    /// The next pick is the longest waiting (else the freshest cluster's).
    oldest_turn: bool,
}

impl Schedule {
    /// Marks `name`, whose pass changes `lane`. One already waiting keeps its place.
    pub fn mark(&mut self, name: String, lane: Lane) {
        if let Some((at, old)) = self.waiting.get(&name).cloned() {
            if old == lane {
                return;
            }
            self.remove(&name, at, &old);
            self.insert(name, at, lane);
            return;
        }
        self.marks += 1;
        self.insert(name, self.marks, lane);
    }

    fn insert(&mut self, name: String, at: u64, lane: Lane) {
        self.order.insert((at, name.clone()));
        self.lanes
            .entry(lane.clone())
            .or_default()
            .insert((at, name.clone()));
        self.waiting.insert(name, (at, lane));
    }

    fn remove(&mut self, name: &str, at: u64, lane: &Lane) {
        let key = (at, name.to_owned());
        self.order.remove(&key);
        if let Some(waiting) = self.lanes.get_mut(lane) {
            waiting.remove(&key);
            if waiting.is_empty() {
                self.lanes.remove(lane);
            }
        }
        self.waiting.remove(name);
    }

    /// Whether nothing runs.
    pub fn idle(&self) -> bool {
        self.running.is_empty()
    }

    /// The next profile to start, with its lane, if one may start now (`fresh` tells when
    /// a cluster's report last changed). It counts as running until [`Schedule::done`].
    pub fn start(
        &mut self,
        fresh: impl Fn(&ClusterRef) -> Option<Instant>,
    ) -> Option<(String, Lane)> {
        if self.alone {
            return None;
        }
        // A profile that runs alone goes first, once every lane is done.
        if let Some(waiting) = self.lanes.get(&None) {
            let (at, name) = waiting
                .iter()
                .find(|(_, name)| !self.running.contains(name))?
                .clone();
            if !self.running.is_empty() {
                return None;
            }
            self.alone = true;
            return Some(self.begin(name, at, None));
        }
        let free = |lane: &Lane, name: &str| {
            lane.as_ref().is_some_and(|c| !self.busy.contains(c)) && !self.running.contains(name)
        };
        let freshest = || {
            self.lanes
                .iter()
                .filter_map(|(lane, waiting)| {
                    let (at, name) = waiting.iter().find(|(_, n)| free(lane, n))?;
                    let changed = lane.as_ref().and_then(&fresh);
                    Some(((changed, std::cmp::Reverse(*at)), (*at, name.clone(), lane)))
                })
                .max_by(|a, b| a.0.cmp(&b.0))
                .map(|(_, pick)| pick)
        };
        let oldest = || {
            self.order.iter().find_map(|(at, name)| {
                let lane = &self.waiting.get(name)?.1;
                free(lane, name).then(|| (*at, name.clone(), lane))
            })
        };
        let pick = if self.oldest_turn {
            oldest().or_else(freshest)
        } else {
            freshest().or_else(oldest)
        };
        let (at, name, lane) = pick.map(|(at, name, lane)| (at, name, lane.clone()))?;
        self.oldest_turn = !self.oldest_turn;
        Some(self.begin(name, at, lane))
    }

    fn begin(&mut self, name: String, at: u64, lane: Lane) -> (String, Lane) {
        self.remove(&name, at, &lane);
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

    fn never(_: &ClusterRef) -> Option<Instant> {
        None
    }

    #[test]
    fn one_pass_at_a_time_in_a_lane_and_a_free_lane_never_waits_for_a_busy_one() {
        let mut s = Schedule::default();
        s.mark("a1".into(), cluster("a"));
        s.mark("a2".into(), cluster("a"));
        s.mark("b1".into(), cluster("b"));
        let first = s.start(never).unwrap();
        let second = s.start(never).unwrap();
        assert_eq!((first.0.as_str(), second.0.as_str()), ("a1", "b1"));
        assert_eq!(s.start(never), None, "a2 waits for a1's lane");
        s.mark("c1".into(), cluster("c"));
        assert_eq!(s.start(never).unwrap().0, "c1", "a new lane starts at once");
        s.done("a1", &cluster("a"));
        assert_eq!(s.start(never).unwrap().0, "a2");
    }

    #[test]
    fn a_profile_marked_while_it_runs_runs_again_after_and_never_twice_at_once() {
        let mut s = Schedule::default();
        s.mark("p".into(), cluster("a"));
        let (name, lane) = s.start(never).unwrap();
        // Its lane changed meanwhile: still not a second run at once.
        s.mark("p".into(), cluster("b"));
        s.mark("p".into(), cluster("b"));
        assert_eq!(s.start(never), None);
        s.done(&name, &lane);
        assert_eq!(s.start(never), Some(("p".into(), cluster("b"))));
        assert_eq!(s.start(never), None);
    }

    #[test]
    fn a_profile_that_runs_alone_waits_for_the_lanes_and_holds_them_meanwhile() {
        let mut s = Schedule::default();
        s.mark("a1".into(), cluster("a"));
        let a1 = s.start(never).unwrap();
        s.mark("local".into(), None);
        s.mark("b1".into(), cluster("b"));
        assert_eq!(
            s.start(never),
            None,
            "b1 waits behind the one that runs alone"
        );
        s.done(&a1.0, &a1.1);
        assert_eq!(s.start(never), Some(("local".into(), None)));
        assert_eq!(s.start(never), None);
        s.done("local", &None);
        assert_eq!(s.start(never).unwrap().0, "b1");
        assert!(!s.idle());
    }

    #[test]
    fn picks_alternate_between_the_freshest_cluster_and_the_longest_waiting() {
        let mut s = Schedule::default();
        for n in 0..3 {
            s.mark(format!("old-{n}"), cluster(&format!("old-{n}")));
        }
        s.mark("new".into(), cluster("new"));
        let now = Instant::now();
        let fresh = |c: &ClusterRef| match c.name.as_str() {
            "new" => Some(now),
            "old-1" => Some(now - Duration::from_secs(5)),
            _ => None,
        };
        let order: Vec<String> = std::iter::from_fn(|| s.start(fresh).map(|(n, _)| n)).collect();
        assert_eq!(order, ["new", "old-0", "old-1", "old-2"]);
    }
}
