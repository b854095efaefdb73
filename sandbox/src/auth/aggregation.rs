//! kube-controller-manager's ClusterRole aggregation controller: a ClusterRole with an
//! `aggregationRule` gets the rules of every other ClusterRole its selectors match, in name
//! order, each rule once.

use super::RBAC_GROUP;
use super::rbac::Rule;
use crate::meta::meta_str;
use crate::selector::LabelSelector;
use crate::store::{Event, Store, WriteOptions};
use serde_json::Value;
use std::sync::Arc;

/// The field manager of the controller's writes.
const MANAGER: &str = "clusterrole-aggregation-controller";

/// Reacts to one event: any ClusterRole change may change what aggregates.
pub fn handle(store: &Store, ev: &Event) {
    if ev.gr.group == RBAC_GROUP && ev.gr.resource == "clusterroles" {
        reconcile(store);
    }
}

fn selectors(role: &Value) -> Option<Vec<LabelSelector>> {
    let list = role
        .pointer("/aggregationRule/clusterRoleSelectors")?
        .as_array()?;
    list.iter().map(LabelSelector::from_object).collect()
}

/// Brings every aggregated ClusterRole's rules up to date.
pub fn reconcile(store: &Store) {
    let Some(info) = store.resolve(RBAC_GROUP, "v1", "clusterroles") else {
        return;
    };
    let Ok(page) = store.list(&info, None, &Default::default()) else {
        return;
    };
    let mut roles: Vec<Arc<Value>> = page.items;
    roles.sort_by(|a, b| meta_str(a, "name").cmp(meta_str(b, "name")));
    for role in &roles {
        let Some(selectors) = selectors(role) else {
            continue;
        };
        let name = meta_str(role, "name");
        let mut rules: Vec<Rule> = Vec::new();
        for other in roles.iter().filter(|o| meta_str(o, "name") != name) {
            if !selectors.iter().any(|s| s.matches(other)) {
                continue;
            }
            for rule in Rule::of_role(other) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
        if rules == Rule::of_role(role) {
            continue;
        }
        let rules: Vec<Value> = rules.iter().map(Rule::to_json).collect();
        let opts = WriteOptions {
            manager: MANAGER.into(),
            ..WriteOptions::default()
        };
        let result = store.modify(&info, "", name, &opts, |old| {
            let mut new = old.clone();
            new["rules"] = Value::Array(rules);
            Ok(new)
        });
        if let Err(error) = result {
            tracing::debug!(%error, %name, "aggregation controller: update failed");
        }
    }
}
