//! Conditions of the objects the manager reads but does not own: an EventSource is `Ready` when
//! its scripts compile and no cluster fails to evaluate it; an EventReport says whether the
//! agent could evaluate its EventSource (`Evaluated`) and whether every EventTrigger consuming
//! it generated its profiles (`Processed`, and phase `Processed`). Marked by watch events and by
//! the trigger worker; written only when the words change.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api::condition::{Condition, Verdict, merge, now, ready};
use api::v1beta1::{EventReport, EventSource, ReportPhase};
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client};
use serde_json::json;

use super::caches::Caches;
use super::conditions::{GENERATION_FAILED, count, first_of};
use crate::queue::Queue;

/// Condition types of EventSources and EventReports.
pub const VALID: &str = "Valid";
/// See [`VALID`].
pub const EVALUATED: &str = "Evaluated";
/// See [`VALID`].
pub const PROCESSED: &str = "Processed";

/// How one trigger's last pass went for one report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Processing {
    /// The report's generation the pass read (none: its writes are still to be made).
    pub generation: Option<i64>,
    /// Why the pass failed in the report's cluster.
    pub failure: Option<String>,
}

/// Objects whose status needs a look, and what the trigger worker did with each report.
#[derive(Default)]
pub struct StatusWork {
    queue: Queue,
    /// Per report (`namespace`, `name`), per trigger, its last pass.
    ledger: Mutex<HashMap<(String, String), BTreeMap<String, Processing>>>,
    /// Triggers that had a pass since the manager started, and the reports whose status waits
    /// for the others: until every trigger had one, "no trigger consumes this report" may
    /// only mean "not yet", and writing it would flap every report at each restart.
    started: Mutex<Started>,
}

/// See [`StatusWork::started`].
#[derive(Default)]
struct Started {
    /// Triggers that had a pass.
    triggers: HashSet<String>,
    /// Reports waiting for the others.
    waiting: HashSet<(String, String)>,
}

const SOURCE: &str = "EventSource/";
const REPORT: &str = "EventReport/";

impl StatusWork {
    /// The EventSource `name` (or a report of it) changed.
    pub fn source_changed(&self, name: &str) {
        self.queue.mark(format!("{SOURCE}{name}"));
    }

    /// The EventReport `namespace/name` changed.
    pub fn report_changed(&self, namespace: &str, name: &str) {
        self.queue.mark(format!("{REPORT}{namespace}/{name}"));
    }

    /// Records `trigger`'s last whole pass: how it went for each report `(namespace, name)`
    /// it read. Reports it no longer reads forget it.
    pub fn processed(&self, trigger: &str, passes: Vec<((String, String), Processing)>) {
        self.record(trigger, passes, true);
    }

    /// Records how `trigger`'s last pass over some of its clusters went for their reports.
    pub fn processed_some(&self, trigger: &str, passes: Vec<((String, String), Processing)>) {
        self.record(trigger, passes, false);
    }

    fn record(&self, trigger: &str, passes: Vec<((String, String), Processing)>, whole: bool) {
        let mut changed = Vec::new();
        if let Ok(mut ledger) = self.ledger.lock() {
            let now: BTreeMap<_, _> = passes.into_iter().collect();
            for (key, entries) in ledger.iter_mut().filter(|_| whole) {
                if !now.contains_key(key) && entries.remove(trigger).is_some() {
                    changed.push(key.clone());
                }
            }
            for (key, pass) in now {
                let entries = ledger.entry(key.clone()).or_default();
                if entries.insert(trigger.to_owned(), pass.clone()) != Some(pass) {
                    changed.push(key);
                }
            }
            ledger.retain(|_, entries| !entries.is_empty());
        }
        for (namespace, name) in changed {
            self.report_changed(&namespace, &name);
        }
        self.tried(trigger);
    }

    /// `trigger` had a pass (whatever came of it): reports waiting for it are looked at again.
    pub fn tried(&self, trigger: &str) {
        let waiting = match self.started.lock() {
            Ok(mut started) => {
                if !started.triggers.insert(trigger.to_owned()) {
                    return;
                }
                std::mem::take(&mut started.waiting)
            }
            Err(_) => return,
        };
        for (namespace, name) in waiting {
            self.report_changed(&namespace, &name);
        }
    }

    /// Whether some of `triggers` had no pass yet; if so the report `namespace/name` waits
    /// for them (it is marked again after the next trigger's first pass).
    fn waits(&self, triggers: &[String], namespace: &str, name: &str) -> bool {
        let Ok(mut started) = self.started.lock() else {
            return false;
        };
        let waits = triggers.iter().any(|t| !started.triggers.contains(t));
        if waits {
            started
                .waiting
                .insert((namespace.to_owned(), name.to_owned()));
        }
        waits
    }

    fn passes(&self, namespace: &str, name: &str) -> BTreeMap<String, Processing> {
        let key = (namespace.to_owned(), name.to_owned());
        self.ledger
            .lock()
            .map(|ledger| ledger.get(&key).cloned().unwrap_or_default())
            .unwrap_or_default()
    }
}

/// How often at most a report's status is written only to say that a newer generation was
/// processed (the words unchanged). A busy cluster's report changes at every event, and each
/// status write sends the whole report (up to 1.5 MiB) through the API server and every
/// watch of reports again: the acknowledgement of a burst of generations is one write.
pub const ACKNOWLEDGE_EVERY: Duration = Duration::from_secs(1);

/// What looking at a report's status came to.
enum Looked {
    /// Written.
    Written,
    /// Nothing to write, or no report.
    Unchanged,
    /// Only the generation processed is new: written after this long.
    Later(Duration),
}

/// Writes the conditions of marked EventSources and EventReports, forever.
pub async fn run(client: Client, caches: Caches) {
    let work = Arc::clone(&caches.status);
    // Before the caches are whole, a report seems consumed by nothing.
    if !super::caches_ready(&caches).await {
        return;
    }
    // Script checks by EventSource, remembered for the generation they were made for.
    let mut checked: HashMap<String, (Option<i64>, Verdict)> = HashMap::new();
    // When each report's status was last written, and the reports whose write waits.
    let mut written: HashMap<String, Instant> = HashMap::new();
    let waiting: Arc<Mutex<HashSet<String>>> = Arc::default();
    loop {
        for key in work.queue.next_batch().await {
            let looked = if let Some(name) = key.strip_prefix(SOURCE) {
                write_source(&client, &caches, name, &mut checked).await
            } else if let Some((namespace, name)) = key
                .strip_prefix(REPORT)
                .and_then(|rest| rest.split_once('/'))
            {
                let last = written.get(&key).copied();
                let looked = write_report(&client, &caches, namespace, name, last).await;
                if let Ok(Looked::Written) = looked {
                    written.insert(key.clone(), Instant::now());
                }
                looked
            } else {
                Ok(Looked::Unchanged)
            };
            match looked {
                Ok(Looked::Written | Looked::Unchanged) => {}
                Ok(Looked::Later(wait)) => later(&work, &waiting, key, wait),
                Err(error) => tracing::warn!(%error, object = %key, "cannot write status"),
            }
        }
        written.retain(|_, at| at.elapsed() < ACKNOWLEDGE_EVERY);
    }
}

/// Marks `key` again after `wait`, unless it already waits.
fn later(
    work: &Arc<StatusWork>,
    waiting: &Arc<Mutex<HashSet<String>>>,
    key: String,
    wait: Duration,
) {
    let first = waiting.lock().is_ok_and(|mut w| w.insert(key.clone()));
    if !first {
        return;
    }
    let (work, waiting) = (Arc::clone(work), Arc::clone(waiting));
    tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        if let Ok(mut waiting) = waiting.lock() {
            waiting.remove(&key);
        }
        work.queue.mark(key);
    });
}

/// Whether `source`'s scripts are valid Lua that defines `evaluate()`.
fn scripts_verdict(source: &EventSource) -> Verdict {
    match super::scripts::check(source) {
        Ok(()) => Verdict::holds(VALID, "Valid", "its scripts compile"),
        Err(message) => Verdict::fails(VALID, "InvalidScript", message),
    }
}

/// The verdicts of EventSource `source`, given the reports of it.
pub fn source_verdicts(valid: Verdict, reports: &[&EventReport]) -> Vec<Verdict> {
    let failing: Vec<(String, String)> = reports
        .iter()
        .filter_map(|r| {
            let message = r.status.as_ref()?.agent_failure_message.clone()?;
            Some((
                format!("{}/{}", r.spec.cluster_namespace, r.spec.cluster_name),
                message,
            ))
        })
        .collect();
    let evaluated = if failing.is_empty() {
        Verdict::holds(
            EVALUATED,
            "Evaluated",
            format!("evaluated in {}", count(reports.len(), "cluster")),
        )
    } else {
        Verdict::fails(
            EVALUATED,
            "EvaluationFailed",
            first_of(&failing, |(cluster, message)| {
                format!("cannot be evaluated in cluster {cluster}: {message}")
            }),
        )
    };
    let mut verdicts = vec![valid, evaluated];
    verdicts.push(ready(
        &verdicts,
        "its scripts compile and every cluster evaluates it",
    ));
    verdicts
}

async fn write_source(
    client: &Client,
    caches: &Caches,
    name: &str,
    checked: &mut HashMap<String, (Option<i64>, Verdict)>,
) -> kube::Result<Looked> {
    let Some(source) = caches.sources.get(&ObjectRef::new(name)) else {
        checked.remove(name);
        return Ok(Looked::Unchanged);
    };
    let generation = source.metadata.generation;
    let valid = match checked.get(name) {
        Some((seen, verdict)) if *seen == generation => verdict.clone(),
        _ => {
            // The check parses on a thread of its own: keep it off the runtime's workers.
            let of = Arc::clone(&source);
            let verdict = tokio::task::spawn_blocking(move || scripts_verdict(&of))
                .await
                .unwrap_or_else(|_| {
                    Verdict::fails(VALID, "InvalidScript", "the script check failed")
                });
            checked.insert(name.to_owned(), (generation, verdict.clone()));
            verdict
        }
    };
    let reports: Vec<Arc<EventReport>> = caches
        .reports
        .state()
        .into_iter()
        .filter(|r| super::marks::report_source(r) == name)
        .collect();
    let reports: Vec<&EventReport> = reports.iter().map(AsRef::as_ref).collect();
    let verdicts = source_verdicts(valid, &reports);
    let before = source
        .status
        .as_ref()
        .map_or(&[][..], |s| &s.conditions[..]);
    let Some(conditions) = changed(before, &verdicts, generation) else {
        return Ok(Looked::Unchanged);
    };
    let api: Api<EventSource> = Api::all(client.clone());
    let patch = json!({"status": {"conditions": conditions}});
    ignore_gone(
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await,
    )?;
    Ok(Looked::Written)
}

/// The verdicts of a report at `generation`, given each consuming trigger's last pass; `None`
/// while some trigger has not yet read this generation.
pub fn report_verdicts(
    report: &EventReport,
    passes: &BTreeMap<String, Processing>,
) -> Option<Vec<Verdict>> {
    let source = &report.spec.event_source_name;
    let evaluated = match report
        .status
        .as_ref()
        .and_then(|s| s.agent_failure_message.as_ref())
    {
        Some(message) => Verdict::fails(EVALUATED, "EvaluationFailed", message.clone()),
        None => Verdict::holds(
            EVALUATED,
            "Evaluated",
            format!("the agent evaluated EventSource {source}"),
        ),
    };
    let generation = report.metadata.generation;
    if passes.values().any(|p| p.generation != generation) {
        return None;
    }
    let failed: Vec<(&String, &String)> = passes
        .iter()
        .filter_map(|(trigger, p)| Some((trigger, p.failure.as_ref()?)))
        .collect();
    let processed = if passes.is_empty() {
        Verdict::fails(
            PROCESSED,
            "NotConsumed",
            format!("no EventTrigger uses EventSource {source} in this cluster"),
        )
    } else if failed.is_empty() {
        let triggers: Vec<&String> = passes.keys().collect();
        Verdict::holds(
            PROCESSED,
            "Processed",
            format!(
                "EventTrigger {} generated its profiles",
                first_of(&triggers, |t| (*t).clone())
            ),
        )
    } else {
        Verdict::fails(
            PROCESSED,
            GENERATION_FAILED,
            first_of(&failed, |(trigger, failure)| {
                format!("EventTrigger {trigger}: {failure}")
            }),
        )
    };
    Some(vec![evaluated, processed])
}

/// Writes the status of report `namespace/name`, last written at `last` (if lately): an
/// acknowledgement of a newer generation alone waits for [`ACKNOWLEDGE_EVERY`] since.
async fn write_report(
    client: &Client,
    caches: &Caches,
    namespace: &str,
    name: &str,
    last: Option<Instant>,
) -> kube::Result<Looked> {
    let Some(report) = caches.reports.get(&ObjectRef::new(name).within(namespace)) else {
        return Ok(Looked::Unchanged);
    };
    let triggers: Vec<String> = caches
        .triggers
        .state()
        .iter()
        .map(|t| kube::ResourceExt::name_any(t.as_ref()))
        .collect();
    if caches.status.waits(&triggers, namespace, name) {
        return Ok(Looked::Unchanged);
    }
    // Only passes of triggers that still exist.
    let passes: BTreeMap<String, Processing> = caches
        .status
        .passes(namespace, name)
        .into_iter()
        .filter(|(trigger, _)| caches.triggers.get(&ObjectRef::new(trigger)).is_some())
        .collect();
    let Some(verdicts) = report_verdicts(&report, &passes) else {
        return Ok(Looked::Unchanged);
    };
    let status = report.status.clone().unwrap_or_default();
    let phase = (!passes.is_empty()).then_some(ReportPhase::Processed);
    let conditions = changed(&status.conditions, &verdicts, report.metadata.generation);
    if conditions.is_none() && status.phase == phase {
        return Ok(Looked::Unchanged);
    }
    let acknowledgement = status.phase == phase
        && conditions
            .as_ref()
            .is_some_and(|c| same_words(c, &status.conditions));
    if let Some(last) = last.filter(|_| acknowledgement) {
        let wait = ACKNOWLEDGE_EVERY.saturating_sub(last.elapsed());
        if !wait.is_zero() {
            return Ok(Looked::Later(wait));
        }
    }
    let conditions = conditions.unwrap_or(status.conditions);
    let api: Api<EventReport> = Api::namespaced(client.clone(), namespace);
    let patch = json!({"status": {"phase": phase, "conditions": conditions}});
    ignore_gone(
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await,
    )?;
    Ok(Looked::Written)
}

/// Whether `now` says what `before` says, whatever generation each observed.
fn same_words(now: &[Condition], before: &[Condition]) -> bool {
    now.len() == before.len()
        && now.iter().zip(before).all(|(a, b)| {
            let b = Condition {
                observed_generation: a.observed_generation,
                ..b.clone()
            };
            *a == b
        })
}

/// The conditions `verdicts` make, or `None` when they say what `before` says.
fn changed(
    before: &[Condition],
    verdicts: &[Verdict],
    generation: Option<i64>,
) -> Option<Vec<Condition>> {
    let conditions = merge(before, verdicts, generation, &now());
    (conditions != before).then_some(conditions)
}

/// The outcome of a request about an object, an object already gone counting as done.
pub(super) fn ignore_gone(result: kube::Result<impl Sized>) -> kube::Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn report(generation: i64, failure: Option<&str>) -> EventReport {
        serde_json::from_value(json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventReport",
            "metadata": {"name": "sveltos--es--c1", "namespace": "default", "generation": generation},
            "spec": {"clusterNamespace": "default", "clusterName": "c1", "clusterType": "Sveltos",
                     "eventSourceName": "es"},
            "status": {"agentFailureMessage": failure}
        }))
        .unwrap()
    }

    fn pass(generation: i64, failure: Option<&str>) -> Processing {
        Processing {
            generation: Some(generation),
            failure: failure.map(str::to_owned),
        }
    }

    #[tokio::test]
    async fn a_report_waits_until_every_trigger_had_a_pass_then_is_looked_at_again() {
        let work = StatusWork::default();
        let triggers = ["a".to_owned(), "b".to_owned()];
        assert!(work.waits(&triggers, "default", "r"));
        work.tried("a");
        work.queue.next_batch().await;
        assert!(work.waits(&triggers, "default", "r"), "b had no pass yet");
        // b's pass read no report at all: the waiting report is marked all the same.
        work.processed("b", Vec::new());
        let marked = work.queue.next_batch().await;
        assert!(marked.contains("EventReport/default/r"), "{marked:?}");
        assert!(!work.waits(&triggers, "default", "r"));
    }

    #[test]
    fn a_report_is_processed_when_every_trigger_read_its_generation() {
        let passes = BTreeMap::from([
            ("a".to_owned(), pass(2, None)),
            ("b".to_owned(), pass(1, None)),
        ]);
        assert!(
            report_verdicts(&report(2, None), &passes).is_none(),
            "b has not read it"
        );
        let passes = BTreeMap::from([
            ("a".to_owned(), pass(2, None)),
            ("b".to_owned(), pass(2, None)),
        ]);
        let verdicts = report_verdicts(&report(2, None), &passes).unwrap();
        assert!(verdicts.iter().all(|v| v.holds));
        assert_eq!(
            verdicts[1].message,
            "EventTrigger a (and 1 more) generated its profiles"
        );
    }

    #[test]
    fn failures_of_agent_and_triggers_are_said() {
        let passes = BTreeMap::from([
            ("a".to_owned(), pass(1, None)),
            ("b".to_owned(), pass(1, Some("bad YAML"))),
        ]);
        let verdicts = report_verdicts(&report(1, Some("script error")), &passes).unwrap();
        assert_eq!(verdicts[0].message, "script error");
        assert!(!verdicts[1].holds);
        assert_eq!(verdicts[1].message, "EventTrigger b: bad YAML");
        let alone = report_verdicts(&report(1, None), &BTreeMap::new()).unwrap();
        assert_eq!(alone[1].reason, "NotConsumed");
    }

    #[test]
    fn a_source_is_not_ready_when_a_cluster_cannot_evaluate_it() {
        let valid = Verdict::holds(VALID, "Valid", "ok");
        let good = report(1, None);
        let bad = report(1, Some("attempt to index a nil value"));
        let verdicts = source_verdicts(valid.clone(), &[&good, &bad]);
        let ready = verdicts.last().unwrap();
        assert!(!ready.holds);
        assert_eq!(
            ready.message,
            "cannot be evaluated in cluster default/c1: attempt to index a nil value"
        );
        assert!(source_verdicts(valid, &[&good]).last().unwrap().holds);
    }

    #[test]
    fn scripts_are_checked_before_any_cluster_runs_them() {
        let source: EventSource = serde_json::from_value(json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
            "metadata": {"name": "es"},
            "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Service",
                     "evaluate": "function evaluate( return end"}]}
        }))
        .unwrap();
        let verdict = scripts_verdict(&source);
        assert!(!verdict.holds);
        assert!(
            verdict
                .message
                .starts_with("resourceSelectors[0].evaluate: "),
            "{}",
            verdict.message
        );
    }
}
