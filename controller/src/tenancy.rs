//! Multi-tenancy on the management side. A tenant is named, as in Sveltos, by the labels
//! `projectsveltos.io/serviceaccount-name` and `projectsveltos.io/serviceaccount-namespace`
//! on its EventTriggers and EventSources (stamped by an admission policy). Sveltos copies them
//! onto what it generates and restricts tenants only inside managed clusters; it lets a
//! tenant's trigger read any ConfigMap or Secret of the management cluster and use any
//! EventSource. Here a tenant's EventTrigger acts only within its service account's namespace:
//! every object it references (policyRefs, valuesFrom, generators, templateResourceRefs) must
//! live there, and its EventSource must belong to the same tenant. Anything else fails the cluster's
//! pass with a message saying so; an admin trigger (no labels) is not restricted.

use std::collections::BTreeMap;

use api::labels::{SERVICE_ACCOUNT_NAME_LABEL, SERVICE_ACCOUNT_NAMESPACE_LABEL};

use crate::instantiate::{Lookup, Referenced};

/// The service account a tenant's objects carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// Namespace of the service account: the only one the tenant may reference objects in.
    pub namespace: String,
    /// Name of the service account.
    pub name: String,
}

impl std::fmt::Display for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The tenant an object's labels name, if any (either label alone names one too, with the
/// other part empty, so that a half-labelled object is never treated as an admin's).
pub fn tenant_of(labels: Option<&BTreeMap<String, String>>) -> Option<Tenant> {
    let labels = labels?;
    let namespace = labels.get(SERVICE_ACCOUNT_NAMESPACE_LABEL);
    let name = labels.get(SERVICE_ACCOUNT_NAME_LABEL);
    if namespace.is_none() && name.is_none() {
        return None;
    }
    Some(Tenant {
        namespace: namespace.cloned().unwrap_or_default(),
        name: name.cloned().unwrap_or_default(),
    })
}

/// Whether a trigger of `tenant` may use an EventSource of `source_tenant`.
pub fn check_event_source(
    tenant: &Tenant,
    source: &str,
    source_tenant: Option<&Tenant>,
) -> Result<(), String> {
    match source_tenant {
        Some(owner) if owner == tenant => Ok(()),
        Some(owner) => Err(format!(
            "EventSource {source} belongs to tenant {owner}, not to this trigger's tenant {tenant}"
        )),
        None => Err(format!(
            "EventSource {source} is not labelled for tenant {tenant} (service-account labels); \
             a tenant's trigger may only use its own EventSources"
        )),
    }
}

/// The objects a tenant's trigger may read: those of its own namespace.
pub struct TenantLookup<'a> {
    /// Every object.
    pub inner: &'a dyn Lookup,
    /// The reading tenant.
    pub tenant: &'a Tenant,
}

impl Lookup for TenantLookup<'_> {
    fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Referenced> {
        if self.refused(kind, namespace, name).is_some() {
            return None;
        }
        self.inner.get(kind, namespace, name)
    }

    fn refused(&self, kind: &str, namespace: &str, name: &str) -> Option<String> {
        (namespace != self.tenant.namespace || namespace.is_empty()).then(|| {
            format!(
                "tenant {} may only reference objects in namespace {:?}; {kind} {namespace}/{name} is outside it",
                self.tenant, self.tenant.namespace
            )
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::testing::Objects;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn eng() -> Tenant {
        Tenant {
            namespace: "eng".into(),
            name: "ops".into(),
        }
    }

    #[test]
    fn tenants_are_named_by_either_label() {
        assert_eq!(tenant_of(None), None);
        assert_eq!(tenant_of(Some(&labels(&[("app", "x")]))), None);
        let both = labels(&[
            (SERVICE_ACCOUNT_NAMESPACE_LABEL, "eng"),
            (SERVICE_ACCOUNT_NAME_LABEL, "ops"),
        ]);
        assert_eq!(tenant_of(Some(&both)), Some(eng()));
        let half = labels(&[(SERVICE_ACCOUNT_NAME_LABEL, "ops")]);
        assert_eq!(tenant_of(Some(&half)).unwrap().namespace, "");
    }

    #[test]
    fn a_tenant_reads_only_its_namespace() {
        let object = |namespace: &str| Referenced {
            kind: "ConfigMap".into(),
            namespace: namespace.into(),
            name: "policy".into(),
            ..Default::default()
        };
        let all = Objects(vec![object("eng"), object("finance")]);
        let tenant = eng();
        let lookup = TenantLookup {
            inner: &all,
            tenant: &tenant,
        };
        assert!(lookup.get("ConfigMap", "eng", "policy").is_some());
        assert!(lookup.refused("ConfigMap", "eng", "policy").is_none());
        assert!(lookup.get("ConfigMap", "finance", "policy").is_none());
        let reason = lookup.refused("ConfigMap", "finance", "policy").unwrap();
        assert!(reason.contains("tenant eng/ops"), "{reason}");
        assert!(reason.contains("ConfigMap finance/policy"), "{reason}");
        // A half-labelled tenant (no namespace) reads nothing.
        let nowhere = Tenant {
            namespace: String::new(),
            name: "ops".into(),
        };
        let lookup = TenantLookup {
            inner: &all,
            tenant: &nowhere,
        };
        assert!(lookup.refused("ConfigMap", "", "policy").is_some());
    }

    #[test]
    fn a_tenant_uses_only_its_own_event_sources() {
        let tenant = eng();
        assert!(check_event_source(&tenant, "mine", Some(&eng())).is_ok());
        let other = Tenant {
            namespace: "finance".into(),
            name: "ops".into(),
        };
        let reason = check_event_source(&tenant, "theirs", Some(&other)).unwrap_err();
        assert!(reason.contains("belongs to tenant finance/ops"), "{reason}");
        let reason = check_event_source(&tenant, "admin", None).unwrap_err();
        assert!(
            reason.contains("not labelled for tenant eng/ops"),
            "{reason}"
        );
    }
}
