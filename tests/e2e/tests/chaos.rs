//! Issue 22's chaos test with the real binaries as separate processes: the agent and two
//! manager replicas electing a leader, installed and run as their Deployments say, while
//! Services come and go in the managed clusters. Each fault class of `sandbox fault` in turn on
//! every API server, then `kill -9` of the agent, of the manager leader (the standby must take
//! over within the Lease's duration), and of every process at once, each followed by restarts.
//! After each, within a bound, the fleet tells the truth: every cluster holds exactly the
//! NetworkPolicies of its Services, one ClusterProfile and one generated ConfigMap per Service
//! (none left over, none twice), and every EventReport lists what its cluster holds.
//!
//! The reduced form (2 clusters, each fault once) runs with the workspace's tests; the full
//! form (`SVELTOS_EVENTS_CHAOS=full`: 10 clusters, three rounds, faults of 5 s) by
//! `SVELTOS_EVENTS_CHAOS=full cargo nextest run --workspace -E 'binary(chaos)'`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use sveltos_events_e2e as common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Process, eventually, plugin, start_replica, try_kubectl};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

/// How big a run is.
struct Size {
    clusters: usize,
    rounds: usize,
    fault_for: Duration,
}

fn size() -> Size {
    match std::env::var("SVELTOS_EVENTS_CHAOS").as_deref() {
        Ok("full") => Size {
            clusters: 10,
            rounds: 3,
            fault_for: Duration::from_secs(5),
        },
        _ => Size {
            clusters: 2,
            rounds: 1,
            fault_for: Duration::from_secs(1),
        },
    }
}

/// The managers' leader election, shortened so that a takeover takes seconds.
const LEADER_FLAGS: [&str; 3] = [
    "--leader-elect-lease-duration=3s",
    "--leader-elect-renew-deadline=2s",
    "--leader-elect-retry-period=500ms",
];
const LEASE_DURATION: Duration = Duration::from_secs(3);
const RETRY_PERIOD: Duration = Duration::from_millis(500);
/// How long the fleet may take to tell the truth once a fault is over.
const CONVERGE_WITHIN: Duration = Duration::from_secs(60);

const TRIGGER: &str = "service-network-policy";

/// The controllers as processes, named as their pods would be.
struct System {
    dir: PathBuf,
    agent: Option<(String, Process)>,
    managers: BTreeMap<String, Process>,
    /// When the test killed each replica it killed.
    killed: BTreeMap<String, Timestamp>,
    pods: usize,
}

impl System {
    fn pod(&mut self, deployment: &str) -> String {
        self.pods += 1;
        format!("{deployment}-{}", self.pods)
    }

    fn start_agent(&mut self) {
        let pod = self.pod("sveltos-events-agent");
        let agent = start_replica(&self.dir, "mgmt", "sveltos-events-agent", &pod, &[]);
        self.agent = Some((pod, agent));
    }

    fn start_manager(&mut self) {
        let pod = self.pod("sveltos-events-manager");
        let manager = start_replica(
            &self.dir,
            "mgmt",
            "sveltos-events-manager",
            &pod,
            &LEADER_FLAGS,
        );
        self.managers.insert(pod, manager);
    }

    /// The replica holding the manager's leader Lease, if one does.
    fn leader(&self) -> Option<String> {
        let holder = try_kubectl(
            &self.dir,
            "mgmt",
            &[
                "-n",
                "projectsveltos",
                "get",
                "lease",
                "sveltos-events-manager",
                "-o",
                "jsonpath={.spec.holderIdentity}",
            ],
        )
        .ok()?;
        (!holder.is_empty()).then_some(holder)
    }

    /// Fails the test if a process ended that the test did not kill, except a manager that
    /// stepped down because it could not renew its Lease in time (API servers that fail or
    /// throttle long enough make a leader do so): the kubelet would restart it, and so does
    /// this.
    fn alive(&mut self) {
        let log = |dir: &Path, pod: &str| {
            std::fs::read_to_string(dir.join(format!("mgmt-{pod}.log"))).unwrap_or_default()
        };
        if let Some((pod, agent)) = &mut self.agent
            && let Some(status) = agent.exited()
        {
            panic!("{pod} ended by itself ({status}): {}", log(&self.dir, pod));
        }
        let mut stepped_down = Vec::new();
        for (pod, manager) in &mut self.managers {
            let Some(status) = manager.exited() else {
                continue;
            };
            let log = log(&self.dir, pod);
            assert!(
                log.contains("lost the leader Lease; stopping"),
                "{pod} ended by itself ({status}): {log}"
            );
            eprintln!("{pod} stepped down ({status}); restarting it as the kubelet would");
            stepped_down.push(pod.clone());
        }
        for pod in stepped_down {
            self.managers.remove(&pod);
            self.start_manager();
        }
    }

    fn kill_agent(&mut self) {
        if let Some((_, mut agent)) = self.agent.take() {
            agent.kill();
        }
    }

    fn kill_manager(&mut self, pod: &str) {
        let mut manager = self.managers.remove(pod).expect("a running replica");
        manager.kill();
        self.killed.insert(pod.to_owned(), Timestamp::now());
    }

    /// When each manager replica led, from its log ("leading" to "stopped leading", or to
    /// its kill -9, or to now): never two at once.
    fn one_leader_at_a_time(&self) {
        let mut terms = Vec::new();
        for entry in std::fs::read_dir(&self.dir).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(pod) = file
                .strip_prefix("mgmt-")
                .and_then(|f| f.strip_suffix(".log"))
                .filter(|p| p.starts_with("sveltos-events-manager-"))
            else {
                continue;
            };
            let mut start = None;
            let mut end = None;
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let Ok(entry) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                let message = entry["fields"]["message"].as_str().unwrap_or_default();
                let at = entry["timestamp"].as_str().and_then(|t| t.parse().ok());
                if message == "leading" {
                    start = at;
                } else if message.starts_with("stopped leading") && start.is_some() {
                    end = at;
                }
            }
            let Some(start) = start else { continue };
            let end = end
                .or_else(|| self.killed.get(pod).copied())
                .unwrap_or_else(Timestamp::now);
            terms.push((start, end, pod.to_owned()));
        }
        terms.sort();
        for pair in terms.windows(2) {
            let ((_, ended, one), (began, _, next)) = (&pair[0], &pair[1]);
            assert!(
                began >= ended,
                "{next} led from {began} while {one} led until {ended}"
            );
        }
        eprintln!("{} terms of leadership, none overlapping", terms.len());
    }
}

/// The Services (and so the events) of each managed cluster, as the test made them.
struct World {
    dir: PathBuf,
    clusters: Vec<String>,
    services: Vec<BTreeSet<String>>,
    made: usize,
}

/// `kubectl` until it goes through: the test's own requests ride the faults too.
fn retried(dir: &Path, cluster: &str, args: &[&str]) -> String {
    let deadline = Instant::now() + CONVERGE_WITHIN;
    loop {
        match try_kubectl(dir, cluster, args) {
            Ok(out) => return out,
            Err(e) => assert!(Instant::now() < deadline, "kubectl {args:?}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl World {
    /// A new labelled Service in `cluster`; its name.
    fn create(&mut self, cluster: &str) -> String {
        self.made += 1;
        // Zero-padded, so that names sort as they were made.
        let name = format!("s{:05}", self.made);
        let service = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default", "labels": {"sveltos": "fv"}},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80, "protocol": "TCP"}]}});
        let file = self.dir.join(format!("{name}.json"));
        std::fs::write(&file, service.to_string()).unwrap();
        retried(&self.dir, cluster, &["apply", "-f", file.to_str().unwrap()]);
        name
    }

    fn delete(&self, cluster: &str, name: &str) {
        let args = [
            "-n",
            "default",
            "delete",
            "service",
            name,
            "--ignore-not-found",
        ];
        retried(&self.dir, cluster, &args);
    }

    /// In each cluster, one more Service, the oldest gone where there are more than two, and
    /// one that comes and goes at once (an event that must leave nothing behind).
    fn change(&mut self) {
        for at in 0..self.clusters.len() {
            let cluster = self.clusters[at].clone();
            let name = self.create(&cluster);
            self.services[at].insert(name);
            if self.services[at].len() > 2 {
                let oldest = self.services[at].pop_first().unwrap();
                self.delete(&cluster, &oldest);
            }
            let blink = self.create(&cluster);
            self.delete(&cluster, &blink);
        }
    }

    /// The items of `kubectl get ... -o json` in `cluster`, or why they could not be read.
    fn items(&self, cluster: &str, args: &[&str]) -> Result<Vec<Value>, String> {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let list: Value = serde_json::from_str(&try_kubectl(&self.dir, cluster, &all)?)
            .map_err(|e| e.to_string())?;
        Ok(list["items"].as_array().cloned().unwrap_or_default())
    }

    /// What differs from the truth, if anything.
    fn differences(&self) -> Result<Vec<String>, String> {
        let mut differences = Vec::new();
        let label = |o: &Value, key: &str| {
            o["metadata"]["labels"][key]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let name = |o: &Value| {
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let trigger = format!("eventtrigger.lib.projectsveltos.io/eventtriggername={TRIGGER}");
        let profiles = self.items("mgmt", &["get", "clusterprofiles", "-l", &trigger])?;
        let configmaps = self.items(
            "mgmt",
            &["-n", "projectsveltos", "get", "configmaps", "-l", &trigger],
        )?;
        let reports = self.items("mgmt", &["-n", "default", "get", "eventreports"])?;
        let total: usize = self.services.iter().map(BTreeSet::len).sum();
        if profiles.len() != total {
            differences.push(format!("{} profiles, wanted {total}", profiles.len()));
        }
        if configmaps.len() != total {
            differences.push(format!(
                "{} generated ConfigMaps, wanted {total}",
                configmaps.len()
            ));
        }
        for (cluster, services) in self.clusters.iter().zip(&self.services) {
            let wanted: BTreeSet<String> = services.iter().map(|s| format!("front-{s}")).collect();
            let policies: BTreeSet<String> = self
                .items(cluster, &["-n", "default", "get", "networkpolicies"])?
                .iter()
                .map(name)
                .collect();
            if policies != wanted {
                differences.push(format!(
                    "{cluster}: policies {policies:?}, wanted {wanted:?}"
                ));
            }
            let profiled: Vec<String> = profiles
                .iter()
                .filter(|p| label(p, "eventtrigger.lib.projectsveltos.io/clustername") == *cluster)
                .map(|p| label(p, "eventtrigger.lib.projectsveltos.io/resourcename"))
                .collect();
            let unique: BTreeSet<String> = profiled.iter().cloned().collect();
            if profiled.len() != unique.len() || unique != *services {
                differences.push(format!(
                    "{cluster}: profiles for {profiled:?}, wanted one for each of {services:?}"
                ));
            }
            let told: Vec<BTreeSet<String>> = reports
                .iter()
                .filter(|r| label(r, "eventreport.projectsveltos.io/cluster-name") == *cluster)
                .map(|r| {
                    r["spec"]["matchingResources"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|m| m["name"].as_str().map(str::to_owned))
                        .collect()
                })
                .collect();
            if told != [services.clone()] {
                differences.push(format!(
                    "{cluster}: reports tell {told:?}, wanted [{services:?}]"
                ));
            }
        }
        Ok(differences)
    }

    /// Waits until the fleet tells the truth, and fails saying how it does not; meanwhile
    /// `system` restarts what stepped down, as the kubelet would.
    fn converged(&self, system: &mut System, after: &str) {
        let started = Instant::now();
        let mut last = Ok(Vec::new());
        while started.elapsed() < CONVERGE_WITHIN {
            system.alive();
            last = self.differences();
            if last.as_ref().is_ok_and(Vec::is_empty) {
                eprintln!("converged {:?} after {after}", started.elapsed());
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("no convergence {CONVERGE_WITHIN:?} after {after}: {last:?}");
    }
}

/// Every fault class of `sandbox fault`, as its flags.
const FAULTS: [&[&str]; 7] = [
    &["drop-watches"],
    &["expire-watches"],
    &["errors", "--code", "500", "--share", "0.3"],
    &["errors", "--code", "503", "--share", "0.5"],
    &["errors", "--code", "429", "--share", "0.5"],
    &["conflicts", "--share", "0.5"],
    &["latency", "--delay", "100ms"],
];

#[test]
fn the_fleet_tells_the_truth_after_each_fault_and_each_kill() {
    let size = size();
    let sandbox = common::start_bare(size.clusters);
    let dir = &sandbox.dir;
    common::install(dir, &[]);
    let mut system = System {
        dir: dir.clone(),
        agent: None,
        managers: BTreeMap::new(),
        killed: BTreeMap::new(),
        pods: 0,
    };
    system.start_agent();
    system.start_manager();
    system.start_manager();
    let clusters: Vec<String> = (1..=size.clusters)
        .map(|i| format!("cluster-{i}"))
        .collect();
    for cluster in &clusters {
        common::register_cluster_as(dir, cluster, cluster, &["--labels", "env=fv"]).ok();
    }
    common::apply_example(dir, "mgmt", "network-policy", "");
    let mut world = World {
        dir: dir.clone(),
        services: vec![BTreeSet::new(); clusters.len()],
        clusters,
        made: 0,
    };
    world.change();
    world.converged(&mut system, "the start");

    let lasting = format!("{}ms", size.fault_for.as_millis());
    for round in 1..=size.rounds {
        for fault in FAULTS {
            let mut args = vec!["sandbox", "fault", "--dir", dir.to_str().unwrap()];
            args.extend(fault);
            args.extend(["--for", &lasting]);
            plugin(dir, &args).ok();
            world.change();
            std::thread::sleep(size.fault_for);
            world.converged(&mut system, &format!("{} (round {round})", fault.join(" ")));
        }

        world.change();
        system.kill_agent();
        world.change();
        system.start_agent();
        world.converged(
            &mut system,
            &format!("kill -9 of the agent (round {round})"),
        );

        // Events in flight while the leader dies.
        world.change();
        let leader = eventually("a running leader", || {
            system.leader().filter(|l| system.managers.contains_key(l))
        });
        let killed = Instant::now();
        system.kill_manager(&leader);
        let successor = eventually("another leader", || {
            system.leader().filter(|holder| *holder != leader)
        });
        let took = killed.elapsed();
        eprintln!("{successor} took over from {leader} {took:?} after its kill -9");
        assert!(
            system.managers.contains_key(&successor),
            "{successor} leads but is not running"
        );
        // The standby counts the Lease's duration from when it saw the last renewal, which it
        // polls for every retry period; kubectl's own polling adds a little.
        let bound = LEASE_DURATION + 2 * RETRY_PERIOD + Duration::from_secs(1);
        assert!(
            took <= bound,
            "the takeover took {took:?}, more than {bound:?}"
        );
        world.change();
        world.converged(
            &mut system,
            &format!("kill -9 of the leader (round {round})"),
        );
        system.start_manager();

        world.change();
        system.kill_agent();
        for pod in system.managers.keys().cloned().collect::<Vec<_>>() {
            system.kill_manager(&pod);
        }
        world.change();
        system.start_agent();
        system.start_manager();
        system.start_manager();
        world.converged(
            &mut system,
            &format!("kill -9 of every process (round {round})"),
        );
    }

    // No process died of its own accord, none panicked, and no two replicas led at once.
    system.alive();
    system.one_leader_at_a_time();
    drop(system);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "log") {
            let log = std::fs::read_to_string(&path).unwrap();
            assert!(!log.contains("panicked"), "{}: {log}", path.display());
            assert!(
                !log.to_lowercase().contains("forbidden"),
                "{}: {log}",
                path.display()
            );
        }
    }
}
