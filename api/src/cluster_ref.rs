//! A registered cluster's identity, as every component addresses it: namespace, name and type
//! (SveltosCluster or Cluster API Cluster), and its object reference form.

use k8s_openapi::api::core::v1::ObjectReference;

use crate::v1beta1::ClusterType;

/// apiVersion of SveltosClusters.
pub const SVELTOS_CLUSTER_API_VERSION: &str = "lib.projectsveltos.io/v1beta1";
/// apiVersion given to Cluster API clusters when their own is not known.
pub const CAPI_DEFAULT_API_VERSION: &str = "cluster.x-k8s.io/v1beta1";

/// A registered cluster: namespace and name of its object, and its type.
#[derive(Debug, Clone, Eq, PartialOrd, Ord)]
pub struct ClusterRef {
    /// Namespace of the SveltosCluster or Cluster API Cluster.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `Sveltos` or `Capi`.
    pub cluster_type: ClusterType,
}

/// Equal when all three are: the name first, as clusters mostly share their namespace and
/// controllers look a cluster up among a fleet's thousand.
impl PartialEq for ClusterRef {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.namespace == other.namespace
            && self.cluster_type == other.cluster_type
    }
}

impl std::hash::Hash for ClusterRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.namespace.hash(state);
        self.name.hash(state);
        self.cluster_type.hash(state);
    }
}

impl ClusterRef {
    /// A SveltosCluster's identity.
    pub fn sveltos(namespace: &str, name: &str) -> Self {
        ClusterRef {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            cluster_type: ClusterType::Sveltos,
        }
    }

    /// The cluster an object reference names: a SveltosCluster when its API group is
    /// `lib.projectsveltos.io`, else a Cluster API cluster (Sveltos' rule); `None` without a
    /// name.
    pub fn from_reference(reference: &ObjectReference) -> Option<ClusterRef> {
        let name = reference.name.clone().filter(|n| !n.is_empty())?;
        let sveltos = reference
            .api_version
            .as_deref()
            .is_some_and(|v| v.starts_with("lib.projectsveltos.io/"));
        Some(ClusterRef {
            namespace: reference.namespace.clone().unwrap_or_default(),
            name,
            cluster_type: if sveltos {
                ClusterType::Sveltos
            } else {
                ClusterType::Capi
            },
        })
    }

    /// How other objects refer to this cluster; a Cluster API cluster by `capi_api_version`.
    pub fn object_reference(&self, capi_api_version: &str) -> ObjectReference {
        let (api_version, kind) = match self.cluster_type {
            ClusterType::Sveltos => (SVELTOS_CLUSTER_API_VERSION, "SveltosCluster"),
            ClusterType::Capi => (capi_api_version, "Cluster"),
        };
        ObjectReference {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
            namespace: Some(self.namespace.clone()),
            name: Some(self.name.clone()),
            ..Default::default()
        }
    }
}

impl std::fmt::Display for ClusterRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cluster_type {
            ClusterType::Sveltos => write!(f, "{}/{}", self.namespace, self.name),
            ClusterType::Capi => write!(f, "{}/{} (Cluster API)", self.namespace, self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn refs_are_equal_and_hash_alike_only_when_all_three_parts_are() {
        use std::hash::BuildHasher;
        let one = ClusterRef::sveltos("default", "c1");
        let mut capi = one.clone();
        capi.cluster_type = ClusterType::Capi;
        for other in [
            ClusterRef::sveltos("other", "c1"),
            ClusterRef::sveltos("default", "c2"),
            capi,
        ] {
            assert_ne!(one, other);
        }
        let same = ClusterRef::sveltos("default", "c1");
        assert_eq!(one, same);
        let state = std::collections::hash_map::RandomState::new();
        assert_eq!(state.hash_one(&one), state.hash_one(&same));
    }

    #[test]
    fn references_go_both_ways() {
        let capi = ClusterRef {
            namespace: "ns".into(),
            name: "w".into(),
            cluster_type: ClusterType::Capi,
        };
        let reference = capi.object_reference("cluster.x-k8s.io/v1beta2");
        assert_eq!(reference.kind.as_deref(), Some("Cluster"));
        assert_eq!(ClusterRef::from_reference(&reference).unwrap(), capi);
        let sveltos = ClusterRef::sveltos("ns", "c");
        let reference = sveltos.object_reference(CAPI_DEFAULT_API_VERSION);
        assert_eq!(reference.kind.as_deref(), Some("SveltosCluster"));
        assert_eq!(ClusterRef::from_reference(&reference).unwrap(), sveltos);
        assert_eq!(capi.to_string(), "ns/w (Cluster API)");
    }
}
