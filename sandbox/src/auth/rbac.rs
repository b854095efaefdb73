//! The RBAC authorizer: rules of Roles and ClusterRoles, granted to subjects by RoleBindings
//! and ClusterRoleBindings, decide every request (kube-apiserver's `rbac` authorizer and its
//! rule resolver).
//!
//! A [`Policy`] is an index of the cluster's RBAC objects built once per change of any of
//! them: bindings by subject, each with its role's rules resolved, so a decision only looks
//! at the bindings naming the user or one of its groups.

use super::{Attributes, RBAC_GROUP, User, service_account_user};
use crate::meta::{meta_str, strings};
use crate::store::Store;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// One policy rule (`rbacv1.PolicyRule`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    /// Verbs (`*` for all).
    pub verbs: Vec<String>,
    /// API groups (`*` for all).
    pub api_groups: Vec<String>,
    /// Resources, `resource/subresource`, `*/subresource` or `*`.
    pub resources: Vec<String>,
    /// Object names (none: any).
    pub resource_names: Vec<String>,
    /// Non-resource URLs, a trailing `*` matching any suffix.
    pub non_resource_urls: Vec<String>,
}

impl Rule {
    /// A rule from its JSON form.
    pub fn from_json(value: &Value) -> Rule {
        Rule {
            verbs: strings(&value["verbs"]),
            api_groups: strings(&value["apiGroups"]),
            resources: strings(&value["resources"]),
            resource_names: strings(&value["resourceNames"]),
            non_resource_urls: strings(&value["nonResourceURLs"]),
        }
    }

    /// The rules of a Role or ClusterRole.
    pub fn of_role(role: &Value) -> Vec<Rule> {
        role["rules"]
            .as_array()
            .map(|rules| rules.iter().map(Rule::from_json).collect())
            .unwrap_or_default()
    }

    /// The JSON form, omitting empty lists as the API does.
    pub fn to_json(&self) -> Value {
        let mut out = json!({"verbs": self.verbs});
        for (key, items) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !items.is_empty() {
                out[key] = json!(items);
            }
        }
        out
    }

    /// Whether this rule allows the request (`RuleAllows`).
    pub fn allows(&self, attrs: &Attributes) -> bool {
        let verb = self.verbs.iter().any(|v| v == "*" || *v == attrs.verb);
        if !verb {
            return false;
        }
        if !attrs.resource_request {
            return self.non_resource_urls.iter().any(|url| {
                url == "*"
                    || *url == attrs.path
                    || url
                        .strip_suffix('*')
                        .is_some_and(|prefix| attrs.path.starts_with(prefix))
            });
        }
        let group = self
            .api_groups
            .iter()
            .any(|g| g == "*" || *g == attrs.group);
        group && self.matches_resource(attrs) && self.matches_name(&attrs.name)
    }

    fn matches_resource(&self, attrs: &Attributes) -> bool {
        let sub = attrs.subresource.as_str();
        self.resources.iter().any(|r| {
            if r == "*" {
                return true;
            }
            if sub.is_empty() {
                return *r == attrs.resource;
            }
            r.split_once('/').is_some_and(|(resource, subresource)| {
                subresource == sub && (resource == attrs.resource || resource == "*")
            })
        })
    }

    fn matches_name(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }
}

/// A binding's subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Subject {
    User(String),
    Group(String),
}

/// One subject's grant through one binding.
#[derive(Debug)]
struct Grant {
    /// The binding's namespace (empty: a ClusterRoleBinding).
    namespace: String,
    /// The role's rules, or why they could not be resolved.
    rules: Result<Arc<[Rule]>, Arc<str>>,
    /// `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`, for review answers.
    source: String,
}

/// The cluster's RBAC objects, indexed for decisions.
#[derive(Debug, Default)]
pub struct Policy {
    grants: HashMap<Subject, Vec<Grant>>,
    /// ClusterRoles' rules by name.
    cluster_roles: HashMap<String, Arc<[Rule]>>,
    /// Roles' rules by (namespace, name).
    roles: HashMap<(String, String), Arc<[Rule]>>,
    /// The store's RBAC change stamp this index was built at.
    stamp: u64,
}

/// What a decision found: allowed (and by which binding), or not (and the errors met).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// `RBAC: allowed by ...` when allowed, `RBAC: [errors]` when denied with resolution
    /// errors, else empty.
    pub reason: String,
}

/// How kube-apiserver describes a subject in review reasons.
fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let kind = subject["kind"].as_str().unwrap_or_default();
    let name = subject["name"].as_str().unwrap_or_default();
    if kind == "ServiceAccount" {
        let ns = subject["namespace"].as_str().unwrap_or_default();
        let ns = if ns.is_empty() { binding_namespace } else { ns };
        return format!("{kind} \"{name}/{ns}\"");
    }
    format!("{kind} {name:?}")
}

impl Policy {
    /// Reads every Role, ClusterRole and binding of `store`.
    pub fn load(store: &Store, stamp: u64) -> Policy {
        let list = |plural: &str| -> Vec<Arc<Value>> {
            store
                .resolve(RBAC_GROUP, "v1", plural)
                .and_then(|info| store.list(&info, None, &Default::default()).ok())
                .map(|page| page.items)
                .unwrap_or_default()
        };
        let mut policy = Policy {
            stamp,
            ..Policy::default()
        };
        for role in list("clusterroles") {
            let rules: Arc<[Rule]> = Rule::of_role(&role).into();
            policy
                .cluster_roles
                .insert(meta_str(&role, "name").to_owned(), rules);
        }
        for role in list("roles") {
            let key = (
                meta_str(&role, "namespace").to_owned(),
                meta_str(&role, "name").to_owned(),
            );
            policy.roles.insert(key, Rule::of_role(&role).into());
        }
        for binding in list("clusterrolebindings")
            .into_iter()
            .chain(list("rolebindings"))
        {
            policy.add_binding(&binding);
        }
        policy
    }

    /// The stamp this policy was built at.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// The rules a binding's `roleRef` names in `namespace`, or kube-apiserver's error.
    pub fn role_ref_rules(&self, role_ref: &Value, namespace: &str) -> Result<Arc<[Rule]>, String> {
        let name = role_ref["name"].as_str().unwrap_or_default();
        match role_ref["kind"].as_str().unwrap_or_default() {
            "ClusterRole" => self
                .cluster_roles
                .get(name)
                .cloned()
                .ok_or_else(|| format!("clusterrole.{RBAC_GROUP} \"{name}\" not found")),
            "Role" => self
                .roles
                .get(&(namespace.to_owned(), name.to_owned()))
                .cloned()
                .ok_or_else(|| format!("role.{RBAC_GROUP} \"{name}\" not found")),
            kind => Err(format!("unsupported role reference kind: \"{kind}\"")),
        }
    }

    fn add_binding(&mut self, binding: &Value) {
        let namespace = meta_str(binding, "namespace").to_owned();
        let name = meta_str(binding, "name");
        let role_ref = &binding["roleRef"];
        let rules = self.role_ref_rules(role_ref, &namespace).map_err(Arc::from);
        let role = format!(
            "{} {:?}",
            role_ref["kind"].as_str().unwrap_or_default(),
            role_ref["name"].as_str().unwrap_or_default()
        );
        let binding_desc = if namespace.is_empty() {
            format!("ClusterRoleBinding {name:?} of {role}")
        } else {
            format!("RoleBinding \"{name}/{namespace}\" of {role}")
        };
        for subject in binding["subjects"].as_array().into_iter().flatten() {
            let name = subject["name"].as_str().unwrap_or_default().to_owned();
            let key = match subject["kind"].as_str().unwrap_or_default() {
                "User" => Subject::User(name),
                "Group" => Subject::Group(name),
                "ServiceAccount" => {
                    let ns = subject["namespace"].as_str().unwrap_or_default();
                    let ns = if ns.is_empty() { &namespace } else { ns };
                    if ns.is_empty() {
                        continue;
                    }
                    Subject::User(service_account_user(ns, &name))
                }
                _ => continue,
            };
            self.grants.entry(key).or_default().push(Grant {
                namespace: namespace.clone(),
                rules: rules.clone(),
                source: format!(
                    "{binding_desc} to {}",
                    describe_subject(subject, &namespace)
                ),
            });
        }
    }

    /// Every grant applying to `user` in `namespace` (cluster-wide ones first, as the rule
    /// resolver visits ClusterRoleBindings before RoleBindings).
    fn grants_for<'a>(
        &'a self,
        user: &'a User,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a Grant> {
        let subjects = std::iter::once(Subject::User(user.name.clone()))
            .chain(user.groups.iter().cloned().map(Subject::Group));
        let grants: Vec<&Grant> = subjects
            .filter_map(|s| self.grants.get(&s))
            .flatten()
            .collect();
        let cluster = grants
            .clone()
            .into_iter()
            .filter(|g| g.namespace.is_empty());
        let local = grants
            .into_iter()
            .filter(move |g| !namespace.is_empty() && g.namespace == namespace);
        cluster.chain(local)
    }

    /// Whether RBAC allows `user` the request (system:masters aside: see [`authorize`]).
    pub fn decide(&self, user: &User, attrs: &Attributes) -> Decision {
        let mut errors = Vec::new();
        for grant in self.grants_for(user, &attrs.namespace) {
            match &grant.rules {
                Ok(rules) if rules.iter().any(|r| r.allows(attrs)) => {
                    return Decision {
                        allowed: true,
                        reason: format!("RBAC: allowed by {}", grant.source),
                    };
                }
                Ok(_) => {}
                Err(error) => errors.push(error.to_string()),
            }
        }
        let reason = match errors.len() {
            0 => String::new(),
            1 => format!("RBAC: {}", errors[0]),
            _ => format!("RBAC: [{}]", errors.join(", ")),
        };
        Decision {
            allowed: false,
            reason,
        }
    }

    /// Every rule `user` holds in `namespace` ("" : cluster-wide only), and the errors met
    /// resolving its bindings' roles (`RulesFor`).
    pub fn rules_for(&self, user: &User, namespace: &str) -> (Vec<Rule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for grant in self.grants_for(user, namespace) {
            match &grant.rules {
                Ok(granted) => rules.extend(granted.iter().cloned()),
                Err(error) => errors.push(error.to_string()),
            }
        }
        (rules, errors)
    }
}

/// The authorizer chain of kube-apiserver: members of `system:masters` may do anything, then
/// RBAC decides.
pub fn authorize(policy: &Policy, user: &User, attrs: &Attributes) -> Decision {
    if user.is_master() {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    policy.decide(user, attrs)
}

/// kube-apiserver's words for a refused request (`forbiddenMessage`).
pub fn forbidden_message(user: &User, attrs: &Attributes) -> String {
    let who = &user.name;
    let verb = &attrs.verb;
    if !attrs.resource_request {
        return format!("User {who:?} cannot {verb} path {:?}", attrs.path);
    }
    let resource = attrs.combined_resource();
    let group = &attrs.group;
    if attrs.namespace.is_empty() {
        format!(
            "User {who:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
        )
    } else {
        format!(
            "User {who:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {:?}",
            attrs.namespace
        )
    }
}

/// The 403 `Status` kube-apiserver answers a refused request with.
pub fn forbidden_status(user: &User, attrs: &Attributes, reason: &str) -> Value {
    let mut message = forbidden_message(user, attrs);
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let qualified = if attrs.group.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}.{}", attrs.resource, attrs.group)
    };
    let (message, details) = if !attrs.resource_request || qualified.is_empty() {
        (format!("forbidden: {message}"), json!({}))
    } else {
        let mut details = json!({"kind": attrs.resource});
        if !attrs.group.is_empty() {
            details["group"] = json!(attrs.group);
        }
        if attrs.name.is_empty() {
            (format!("{qualified} is forbidden: {message}"), details)
        } else {
            details["name"] = json!(attrs.name);
            (
                format!("{qualified} {:?} is forbidden: {message}", attrs.name),
                details,
            )
        }
    };
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Forbidden", "details": details, "code": 403,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Rule {
        let v = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        Rule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            non_resource_urls: Vec::new(),
        }
    }

    fn attrs(verb: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            subresource: sub.into(),
            ..Attributes::resource(verb, "", resource, "ns", name)
        }
    }

    #[test]
    fn rules_match_verbs_resources_subresources_and_names() {
        let r = rule(&["get"], &[""], &["pods"], &[]);
        assert!(r.allows(&attrs("get", "pods", "", "a")));
        assert!(!r.allows(&attrs("list", "pods", "", "")));
        assert!(!r.allows(&attrs("get", "pods", "log", "a")));
        let r = rule(&["*"], &[""], &["*/status"], &[]);
        assert!(r.allows(&attrs("update", "pods", "status", "a")));
        assert!(!r.allows(&attrs("update", "pods", "", "a")));
        let r = rule(&["get"], &[""], &["pods/log"], &["a"]);
        assert!(r.allows(&attrs("get", "pods", "log", "a")));
        assert!(!r.allows(&attrs("get", "pods", "log", "b")));
        let r = rule(&["get"], &["apps"], &["*"], &[]);
        assert!(!r.allows(&attrs("get", "pods", "", "a")));
        let url = Rule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz/*".into()],
            ..Rule::default()
        };
        let path = |p: &str| Attributes {
            verb: "get".into(),
            path: p.into(),
            ..Attributes::default()
        };
        assert!(url.allows(&path("/healthz/etcd")));
        assert!(!url.allows(&path("/version")));
    }

    #[test]
    fn refusals_are_worded_as_kube_apiserver_words_them() {
        let user = User::service_account("ns", "sa", "");
        let status = forbidden_status(&user, &attrs("list", "pods", "", ""), "");
        assert_eq!(
            status["message"],
            "pods is forbidden: User \"system:serviceaccount:ns:sa\" cannot list resource \"pods\" in API group \"\" in the namespace \"ns\""
        );
        let a = Attributes::resource("get", "apps", "deployments", "", "web");
        let status = forbidden_status(&user, &a, "");
        assert_eq!(
            status["message"],
            "deployments.apps \"web\" is forbidden: User \"system:serviceaccount:ns:sa\" cannot get resource \"deployments\" in API group \"apps\" at the cluster scope"
        );
        assert_eq!(
            status["details"],
            json!({"kind": "deployments", "group": "apps", "name": "web"})
        );
    }
}
