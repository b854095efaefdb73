//! One EventSource over a set of objects: selection, per-object Lua, aggregated selection.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use api::v1beta1::{EventSource, ResourceSelector};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::runtime::LuaRuntime;
use crate::select::{Facts, identity, rejection, rejection_of_any};
use crate::verdict::{Verdict, evaluate_aggregated, evaluate_object};

/// What happened to one input object.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Outcome {
    /// Some selector selected it (before Lua).
    pub selected: bool,
    /// It is in the final matching set.
    pub matching: bool,
    /// The script's message, or why it was not selected.
    pub message: String,
}

/// The result of evaluating an EventSource over objects held as `V` (a `Value`, or an
/// [`Object`] the agent's caches share: matching objects are then not copied).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluation<V = Value> {
    /// One outcome per input object, in input order.
    pub outcomes: Vec<Outcome>,
    /// The matching objects as the EventReport would carry them (selector order, no
    /// de-duplication; the aggregation's output when there is one).
    pub matching: Vec<V>,
}

/// An object as the evaluation reads it: its [`Facts`] for selection, the whole of it only
/// for a script or a report. A `Value` is read in place; the agent's caches
/// keep objects as text ([`crate::kept::Kept`]) and parse one only when it is read whole.
pub trait Object: Clone {
    /// What selection reads.
    fn facts(&self) -> Cow<'_, Facts>;
    /// The whole object (an error when kept text does not parse back).
    fn value(&self) -> std::result::Result<Cow<'_, Value>, String>;
    /// An object an `aggregatedSelection` script returned.
    fn from_value(value: Value) -> Self;
    /// The object as compact JSON text, when it is kept so.
    fn text(&self) -> Option<Arc<str>> {
        None
    }
}

impl Object for Value {
    fn facts(&self) -> Cow<'_, Facts> {
        Cow::Owned(Facts::of(self))
    }
    fn value(&self) -> std::result::Result<Cow<'_, Value>, String> {
        Ok(Cow::Borrowed(self))
    }
    fn from_value(value: Value) -> Self {
        value
    }
}

fn name(source: &EventSource) -> String {
    source.metadata.name.clone().unwrap_or_default()
}

fn error(source: &EventSource, place: String, message: String) -> Error {
    Error::Evaluation {
        event_source: name(source),
        place,
        message,
    }
}

/// Per-object verdicts of one EventSource, remembered between evaluations so that only
/// objects that changed (new uid or resourceVersion) run their script again.
#[derive(Clone, Debug, Default)]
pub struct VerdictCache {
    verdicts: HashMap<(usize, String, String), Verdict>,
}

impl VerdictCache {
    /// Number of remembered verdicts.
    pub fn len(&self) -> usize {
        self.verdicts.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.verdicts.is_empty()
    }
}

/// The cache key of an object: its uid and resourceVersion (none for objects without both,
/// such as offline fixtures, which are then always evaluated).
pub(crate) fn version_key(object: &Value) -> Option<(String, String)> {
    let uid = api::fields::text(object, &["metadata", "uid"])?;
    let version = api::fields::text(object, &["metadata", "resourceVersion"])?;
    Some((uid.to_owned(), version.to_owned()))
}

/// Checks what can be checked of `source` without objects: every script compiles (its top
/// level runs, bounded) and defines `evaluate()`, and no selector uses CEL. The error is the
/// one evaluating it in a cluster would meet first.
pub fn validate(runtime: &LuaRuntime, source: &EventSource) -> Result<()> {
    let check = |place: String, text: &str| -> Result<()> {
        let script = runtime
            .compile(&place, text)
            .map_err(|m| error(source, place.clone(), m))?;
        if !script.defines("evaluate") {
            let message = "the script defines no global function evaluate()".to_owned();
            return Err(error(source, place, message));
        }
        Ok(())
    };
    for (s, selector) in source.spec.resource_selectors.iter().enumerate() {
        if !selector.evaluate_cel.is_empty() {
            let place = format!("resourceSelectors[{s}].evaluateCEL");
            return Err(error(
                source,
                place,
                "CEL rules are not supported yet".into(),
            ));
        }
        if !selector.evaluate.trim().is_empty() {
            check(
                format!("resourceSelectors[{s}].evaluate"),
                &selector.evaluate,
            )?;
        }
    }
    if !source.spec.aggregated_selection.trim().is_empty() {
        check(
            "aggregatedSelection".to_owned(),
            &source.spec.aggregated_selection,
        )?;
    }
    Ok(())
}

/// Evaluates `source` over `objects` with Sveltos' semantics (see README.md).
pub fn evaluate_event_source<V: Object>(
    runtime: &LuaRuntime,
    source: &EventSource,
    objects: &[V],
) -> Result<Evaluation<V>> {
    evaluate_event_source_cached(runtime, source, objects, &mut VerdictCache::default())
}

/// As [`evaluate_event_source`], reusing the verdicts in `cache` for unchanged objects and
/// leaving in it exactly the verdicts of this evaluation. The cache must be dropped when the
/// EventSource changes.
pub fn evaluate_event_source_cached<V: Object>(
    runtime: &LuaRuntime,
    source: &EventSource,
    objects: &[V],
    cache: &mut VerdictCache,
) -> Result<Evaluation<V>> {
    evaluate_with(runtime, source, objects, cache, rejection)
}

/// As [`evaluate_event_source`] over fixtures, as Sveltos' harness runs them: objects being
/// deleted are evaluated too (live, the agent skips them; scripts test
/// `metadata.deletionTimestamp`).
pub fn evaluate_fixtures<V: Object>(
    runtime: &LuaRuntime,
    source: &EventSource,
    objects: &[V],
) -> Result<Evaluation<V>> {
    let mut cache = VerdictCache::default();
    evaluate_with(runtime, source, objects, &mut cache, rejection_of_any)
}

/// Why a selector does not select an object ([`rejection`] or [`rejection_of_any`]).
type Rejection = fn(&ResourceSelector, &Facts) -> std::result::Result<Option<String>, String>;

fn evaluate_with<V: Object>(
    runtime: &LuaRuntime,
    source: &EventSource,
    objects: &[V],
    cache: &mut VerdictCache,
    rejection: Rejection,
) -> Result<Evaluation<V>> {
    let mut previous = std::mem::take(&mut cache.verdicts);
    let mut outcomes = vec![Outcome::default(); objects.len()];
    let mut kept: Vec<usize> = Vec::new();
    // Once per object, not once per selector (a `Value`'s facts are made, not kept).
    let facts: Vec<Cow<'_, Facts>> = objects.iter().map(Object::facts).collect();
    for (s, selector) in source.spec.resource_selectors.iter().enumerate() {
        let place = format!("resourceSelectors[{s}].evaluate");
        if !selector.evaluate_cel.is_empty() {
            return Err(error(
                source,
                format!("resourceSelectors[{s}].evaluateCEL"),
                "CEL rules are not supported yet".into(),
            ));
        }
        let script = if selector.evaluate.trim().is_empty() {
            None
        } else {
            Some(
                runtime
                    .script(&place, &selector.evaluate)
                    .map_err(|m| error(source, place.clone(), m))?,
            )
        };
        for (i, (object, facts)) in objects.iter().zip(&facts).enumerate() {
            let reason = rejection(selector, facts).map_err(|m| Error::Selector {
                event_source: name(source),
                message: m,
            })?;
            if let Some(reason) = reason {
                if !outcomes[i].selected && outcomes[i].message.is_empty() {
                    outcomes[i].message = format!("not selected: {reason}");
                }
                continue;
            }
            if !outcomes[i].selected {
                outcomes[i].message.clear();
            }
            outcomes[i].selected = true;
            let matching = match &script {
                None => true,
                Some(script) => {
                    let key = facts
                        .version
                        .as_ref()
                        .map(|(uid, version)| (s, uid.clone(), version.clone()));
                    let known = key.as_ref().and_then(|k| previous.remove(k));
                    let verdict = match known {
                        Some(verdict) => verdict,
                        None => object
                            .value()
                            .and_then(|value| evaluate_object(runtime, script, &value))
                            .map_err(|m| {
                                error(source, format!("{place} of {}", facts.describe()), m)
                            })?,
                    };
                    if let Some(key) = key {
                        cache.verdicts.insert(key, verdict.clone());
                    }
                    if !verdict.message.is_empty() {
                        outcomes[i].message = verdict.message;
                    }
                    verdict.matching
                }
            };
            if matching {
                outcomes[i].matching = true;
                kept.push(i);
            }
        }
    }
    previous.clear();
    let mut matching: Vec<V> = kept.iter().map(|&i| objects[i].clone()).collect();
    if !source.spec.aggregated_selection.trim().is_empty() {
        let place = "aggregatedSelection".to_owned();
        let script = runtime
            .script(&place, &source.spec.aggregated_selection)
            .map_err(|m| error(source, place.clone(), m))?;
        let out = matching
            .iter()
            .map(Object::value)
            .collect::<std::result::Result<Vec<_>, _>>()
            .and_then(|values| evaluate_aggregated(runtime, &script, &values))
            .map_err(|m| error(source, place, m))?;
        let chosen: std::collections::HashSet<_> = out.resources.iter().map(identity).collect();
        for (outcome, facts) in outcomes.iter_mut().zip(&facts) {
            outcome.matching = outcome.matching && chosen.contains(&facts.identity());
            if outcome.selected && !out.message.is_empty() {
                outcome.message.clone_from(&out.message);
            }
        }
        matching = out.resources.into_iter().map(V::from_value).collect();
    }
    Ok(Evaluation { outcomes, matching })
}
