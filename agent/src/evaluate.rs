//! One EventSource over a set of objects: selection, per-object Lua, aggregated selection.

use api::v1beta1::EventSource;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::runtime::LuaRuntime;
use crate::select::{identity, rejection};
use crate::verdict::{evaluate_aggregated, evaluate_object};

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

/// The result of evaluating an EventSource.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// One outcome per input object, in input order.
    pub outcomes: Vec<Outcome>,
    /// The matching objects as the EventReport would carry them (selector order, no
    /// de-duplication; the aggregation's output when there is one).
    pub matching: Vec<Value>,
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

/// Evaluates `source` over `objects` with Sveltos' semantics (see README.md).
pub fn evaluate_event_source(
    runtime: &LuaRuntime,
    source: &EventSource,
    objects: &[Value],
) -> Result<Evaluation> {
    let mut outcomes = vec![Outcome::default(); objects.len()];
    let mut kept: Vec<usize> = Vec::new();
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
        for (i, object) in objects.iter().enumerate() {
            let reason = rejection(selector, object).map_err(|m| Error::Selector {
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
                    let verdict = evaluate_object(runtime, script, object)
                        .map_err(|m| error(source, place.clone(), m))?;
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
    let mut matching: Vec<Value> = kept.iter().map(|&i| objects[i].clone()).collect();
    if !source.spec.aggregated_selection.trim().is_empty() {
        let place = "aggregatedSelection".to_owned();
        let script = runtime
            .script(&place, &source.spec.aggregated_selection)
            .map_err(|m| error(source, place.clone(), m))?;
        let out = evaluate_aggregated(runtime, &script, &matching)
            .map_err(|m| error(source, place, m))?;
        let chosen: std::collections::HashSet<_> = out.resources.iter().map(identity).collect();
        for (outcome, object) in outcomes.iter_mut().zip(objects) {
            outcome.matching = outcome.matching && chosen.contains(&identity(object));
            if outcome.selected && !out.message.is_empty() {
                outcome.message.clone_from(&out.message);
            }
        }
        matching = out.resources;
    }
    Ok(Evaluation { outcomes, matching })
}
