//! Escalation prevention: a user may write a Role or ClusterRole only with rules it holds
//! itself (or the `escalate` verb), and bind a role only when it holds the role's rules (or
//! the `bind` verb on it), as kube-apiserver's RBAC storage enforces.

use super::rbac::{Policy, Rule, authorize};
use super::{Attributes, RBAC_GROUP, User, go_quoted};
use crate::error::{Error, Result};
use crate::meta::meta_str;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

/// Every single-verb, single-resource (or single-URL) rule a rule grants (`BreakdownRule`).
fn breakdown(rule: &Rule) -> Vec<Rule> {
    let mut out = Vec::new();
    let one = |s: &String| vec![s.clone()];
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = Rule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Rule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    out.extend(rule.resource_names.iter().map(|n| Rule {
                        resource_names: one(n),
                        ..base.clone()
                    }));
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(Rule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Rule::default()
            });
        }
    }
    out
}

fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, "*") || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

fn urls_cover(owner: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|url| {
        owner.iter().any(|o| {
            o == url
                || o.strip_suffix('*')
                    .is_some_and(|prefix| url.starts_with(prefix))
        })
    })
}

fn rule_covers(owner: &Rule, sub: &Rule) -> bool {
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    (has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs))
        && (has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups))
        && resources_cover(&owner.resources, &sub.resources)
        && urls_cover(&owner.non_resource_urls, &sub.non_resource_urls)
        && names
}

/// The parts of `wanted` that `owner` does not cover (`Covers`).
pub fn uncovered(owner: &[Rule], wanted: &[Rule]) -> Vec<Rule> {
    wanted
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

/// Simple rules (one group, one resource, at most one name) merged by their verbs
/// (`CompactRules`).
fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut simple: BTreeMap<(String, String, Option<String>), Rule> = BTreeMap::new();
    let mut out = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule);
            continue;
        }
        let key = (
            rule.api_groups[0].clone(),
            rule.resources[0].clone(),
            rule.resource_names.first().cloned(),
        );
        match simple.get_mut(&key) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => {
                simple.insert(key, rule);
            }
        }
    }
    out.extend(simple.into_values());
    out
}

/// A rule as escalation errors print it (`CompactString`).
pub fn compact_string(rule: &Rule) -> String {
    let parts: Vec<String> = [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ]
    .iter()
    .filter(|(_, items)| !items.is_empty())
    .map(|(label, items)| format!("{label}:{}", go_quoted(items)))
    .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Refuses `rules` unless `user` holds them all in `namespace` (`ConfirmNoEscalation`).
pub fn confirm_no_escalation(
    policy: &Policy,
    user: &User,
    namespace: &str,
    rules: &[Rule],
) -> std::result::Result<(), String> {
    let (owned, errors) = policy.rules_for(user, namespace);
    let missing = uncovered(&owned, rules);
    if missing.is_empty() {
        return Ok(());
    }
    let described: BTreeSet<String> = compact(missing).iter().map(compact_string).collect();
    let mut message = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        go_quoted(&user.groups),
        described.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(message)
}

/// Whether a write changes only what the garbage collector may change (owners and
/// finalizers), which needs no escalation check (`IsOnlyMutatingGCFields`).
fn only_gc_fields(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in [
                "ownerReferences",
                "finalizers",
                "managedFields",
                "resourceVersion",
                "generation",
            ] {
                md.remove(key);
            }
        }
        v
    };
    strip(old) == strip(new)
}

fn forbidden(resource: &str, name: &str, why: &str) -> Error {
    Error::Forbidden(format!(
        "{resource}.{RBAC_GROUP} {name:?} is forbidden: {why}"
    ))
}

/// The check a write of an RBAC object by `user` must pass: `resource` is `roles`,
/// `clusterroles`, `rolebindings` or `clusterrolebindings`; `old` is the stored object of an
/// update.
pub fn admit(
    policy: &Policy,
    user: &User,
    resource: &str,
    namespace: &str,
    old: Option<&Value>,
    new: &Value,
) -> Result<()> {
    if user.is_master() || old.is_some_and(|old| only_gc_fields(old, new)) {
        return Ok(());
    }
    let name = meta_str(new, "name");
    match resource {
        "roles" | "clusterroles" => {
            let escalate = Attributes::resource("escalate", RBAC_GROUP, resource, namespace, name);
            if authorize(policy, user, &escalate).allowed {
                return Ok(());
            }
            confirm_no_escalation(policy, user, namespace, &Rule::of_role(new))
                .map_err(|why| forbidden(resource, name, &why))?;
            let aggregates =
                |role: &Value| role.get("aggregationRule").is_some_and(|r| !r.is_null());
            if resource == "clusterroles" && (aggregates(new) || old.is_some_and(aggregates)) {
                let everything = Rule {
                    verbs: vec!["*".into()],
                    api_groups: vec!["*".into()],
                    resources: vec!["*".into()],
                    ..Rule::default()
                };
                let urls = Rule {
                    verbs: vec!["*".into()],
                    non_resource_urls: vec!["*".into()],
                    ..Rule::default()
                };
                confirm_no_escalation(policy, user, namespace, &[everything, urls]).map_err(
                    |_| {
                        forbidden(
                            resource,
                            name,
                            "must have cluster-admin privileges to use the aggregationRule",
                        )
                    },
                )?;
            }
            Ok(())
        }
        "rolebindings" | "clusterrolebindings" => {
            let role_ref = &new["roleRef"];
            let role_resource = match role_ref["kind"].as_str() {
                Some("ClusterRole") => "clusterroles",
                Some("Role") => "roles",
                _ => "",
            };
            let role_name = role_ref["name"].as_str().unwrap_or_default();
            let bind = Attributes::resource(
                "bind",
                role_ref["apiGroup"].as_str().unwrap_or_default(),
                role_resource,
                namespace,
                role_name,
            );
            if !role_resource.is_empty() && authorize(policy, user, &bind).allowed {
                return Ok(());
            }
            let role_namespace = if role_resource == "roles" {
                namespace
            } else {
                ""
            };
            let rules = policy
                .role_ref_rules(role_ref, role_namespace)
                .map_err(|_| {
                    Error::NotFound(format!(
                        "{role_resource}.{RBAC_GROUP} {role_name:?} not found"
                    ))
                })?;
            confirm_no_escalation(policy, user, namespace, &rules)
                .map_err(|why| forbidden(resource, name, &why))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], resources: &[&str]) -> Rule {
        Rule {
            verbs: verbs.iter().map(|s| (*s).to_owned()).collect(),
            api_groups: vec![String::new()],
            resources: resources.iter().map(|s| (*s).to_owned()).collect(),
            ..Rule::default()
        }
    }

    #[test]
    fn coverage_breaks_rules_down_and_reports_what_is_missing() {
        let owner = [rule(&["get", "list"], &["pods", "*/status"])];
        assert!(uncovered(&owner, &[rule(&["get"], &["pods", "services/status"])]).is_empty());
        let missing = uncovered(&owner, &[rule(&["get", "delete", "watch"], &["pods"])]);
        let text: Vec<String> = compact(missing).iter().map(compact_string).collect();
        assert_eq!(
            text,
            ["{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"watch\"]}"]
        );
    }
}
