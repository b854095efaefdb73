//! What a watch event asks of the deployer: which ClusterProfiles to deploy again. Pure
//! functions of the event and the profiles the caches hold; `run` marks the answer.

use std::sync::Arc;

use api::v1beta1::ClusterProfileSpec;

use super::summaries::Summary;
use crate::identity::ClusterRef;
use crate::kept::Meta;
use crate::kept::profile::KeptProfile;

/// A ConfigMap or Secret that changed.
pub struct Object<'a> {
    /// `ConfigMap` or `Secret`.
    pub kind: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
}

/// Every profile, and every profile gone that still has summaries to withdraw (a cluster or a
/// set changed: any of them may now match other clusters).
pub fn every(profiles: &[Arc<KeptProfile>], summaries: &[Arc<Summary>]) -> Vec<String> {
    let names = profiles.iter().map(|p| p.metadata.name().to_owned());
    names
        .chain(summaries.iter().map(|s| s.profile.to_string()))
        .collect()
}

/// The profiles a change of registered cluster `cluster` concerns: those that select by
/// labels or sets (it may join or leave them), those that name it, and those with a summary
/// in it (deployed there). A cluster turning ready, or being labelled, leaves the others as
/// they were: at 1,000 clusters, re-marking every profile on each cluster's first connection
/// kept the deployer re-applying what it had deployed.
pub fn of_cluster(
    cluster: &ClusterRef,
    profiles: &[Arc<KeptProfile>],
    summaries: &[Arc<Summary>],
) -> Vec<String> {
    let concerned = |p: &KeptProfile| {
        let reach = p.reach();
        reach.selects || reach.named.contains(cluster)
    };
    let names = profiles
        .iter()
        .filter(|p| concerned(p))
        .map(|p| p.metadata.name().to_owned());
    let deployed = summaries
        .iter()
        .filter(|s| s.cluster == *cluster)
        .map(|s| s.profile.to_string());
    names.chain(deployed).collect()
}

/// The profiles among `candidates` that a change of `object` concerns: those that may read it
/// (see [`refers_to`]), or every candidate when it is a cluster's kubeconfig (`kubeconfig`),
/// which every profile deploying there reads.
pub fn referring(
    object: &Object<'_>,
    kubeconfig: bool,
    candidates: &[Arc<KeptProfile>],
) -> Vec<String> {
    // A spec that cannot be read (see `KeptProfile::spec`) is marked: its pass tells why.
    let refers = |p: &KeptProfile| {
        (p.spec()).map_or(true, |spec| {
            refers_to(&spec, object.kind, object.namespace, object.name)
        })
    };
    candidates
        .iter()
        .filter(|p| kubeconfig || refers(p))
        .map(|p| p.metadata.name().to_owned())
        .collect()
}

/// Whether `spec` may read the `kind` object `namespace/name`: a policyRef or
/// templateResourceRef names it, or names it through a template (which any object may match).
pub fn refers_to(spec: &ClusterProfileSpec, kind: &str, namespace: &str, name: &str) -> bool {
    let may_be = |wanted: &str, actual: &str| wanted == actual || wanted.contains("{{");
    let policies = spec.policy_refs.iter().any(|r| {
        r.kind == kind
            && may_be(&r.name, name)
            && (r.namespace.is_empty() || may_be(&r.namespace, namespace))
    });
    policies
        || spec.template_resource_refs.iter().any(|r| {
            let resource = &r.resource;
            resource.kind.as_deref() == Some(kind)
                && may_be(resource.name.as_deref().unwrap_or_default(), name)
                && resource
                    .namespace
                    .as_deref()
                    .is_none_or(|n| n.is_empty() || may_be(n, namespace))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn spec(value: Value) -> ClusterProfileSpec {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("bad test spec: {e}"))
    }

    fn profile(name: &str, value: Value) -> Arc<KeptProfile> {
        let profile = api::v1beta1::ClusterProfile::new(name, spec(value));
        Arc::new(KeptProfile::from(profile))
    }

    /// A summary of `profile` in Sveltos cluster `ns/cluster`.
    fn summary(profile: &str, cluster: &str) -> Arc<Summary> {
        let summary = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "ns",
                         "labels": {api::labels::CLUSTER_PROFILE_NAME_LABEL: profile}},
            "spec": {"clusterNamespace": "ns", "clusterName": cluster, "clusterType": "Sveltos",
                     "clusterProfileSpec": {}}
        }));
        let summary = summary.unwrap_or_else(|e| panic!("bad test summary: {e}"));
        Arc::new(Summary::new(summary))
    }

    #[test]
    fn a_profile_refers_to_the_objects_its_refs_name() {
        let profile = spec(json!({"policyRefs": [
            {"kind": "ConfigMap", "namespace": "projectsveltos", "name": "np-1"},
            {"kind": "Secret", "name": "creds"},
        ]}));
        assert!(refers_to(&profile, "ConfigMap", "projectsveltos", "np-1"));
        assert!(!refers_to(&profile, "ConfigMap", "projectsveltos", "np-2"));
        assert!(!refers_to(&profile, "Secret", "projectsveltos", "np-1"));
        assert!(!refers_to(&profile, "ConfigMap", "default", "np-1"));
        // No namespace: the cluster's, whichever it is.
        assert!(refers_to(&profile, "Secret", "anywhere", "creds"));
    }

    #[test]
    fn templated_refs_may_refer_to_anything_of_their_kind() {
        let profile = spec(json!({
            "policyRefs": [
                {"kind": "ConfigMap", "namespace": "{{ .Cluster.metadata.namespace }}", "name": "fixed"},
            ],
            "templateResourceRefs": [{
                "resource": {"apiVersion": "v1", "kind": "Secret", "name": "{{ .Cluster.metadata.name }}-creds"},
                "identifier": "creds",
            }],
        }));
        assert!(refers_to(&profile, "ConfigMap", "team-a", "fixed"));
        assert!(!refers_to(&profile, "ConfigMap", "team-a", "other"));
        assert!(refers_to(&profile, "Secret", "team-a", "c1-creds"));
        assert!(!refers_to(&profile, "ConfigMap", "team-a", "c1-creds"));
    }

    #[test]
    fn a_change_concerns_the_profiles_that_read_it_and_a_kubeconfig_every_one() {
        let profiles = [
            profile(
                "reads-np",
                json!({"policyRefs": [{"kind": "ConfigMap", "namespace": "ns", "name": "np"}]}),
            ),
            profile(
                "reads-other",
                json!({"policyRefs": [{"kind": "ConfigMap", "namespace": "ns", "name": "other"}]}),
            ),
        ];
        let np = Object {
            kind: "ConfigMap",
            namespace: "ns",
            name: "np",
        };
        assert_eq!(referring(&np, false, &profiles), ["reads-np"]);
        let kubeconfig = Object {
            kind: "Secret",
            namespace: "ns",
            name: "c1-kubeconfig",
        };
        assert_eq!(
            referring(&kubeconfig, true, &profiles),
            ["reads-np", "reads-other"]
        );
        assert!(referring(&kubeconfig, false, &profiles).is_empty());
    }

    #[test]
    fn every_profile_includes_those_gone_with_summaries_left() {
        let profiles = [profile("p1", json!({}))];
        assert_eq!(every(&profiles, &[summary("gone", "c1")]), ["p1", "gone"]);
    }

    #[test]
    fn a_cluster_change_concerns_the_profiles_that_may_select_name_or_deploy_to_it() {
        let cluster = |name: &str| {
            json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                   "namespace": "ns", "name": name})
        };
        let profiles = [
            profile("names-c1", json!({"clusterRefs": [cluster("c1")]})),
            profile("names-c2", json!({"clusterRefs": [cluster("c2")]})),
            profile(
                "by-labels",
                json!({"clusterSelector": {"matchLabels": {"env": "fv"}}}),
            ),
            profile("by-set", json!({"setRefs": ["set"]})),
            profile("nothing", json!({})),
        ];
        // names-c2 deployed to c1 before its clusterRefs changed: it has to withdraw there.
        let c1 = ClusterRef {
            namespace: "ns".into(),
            name: "c1".into(),
            cluster_type: api::v1beta1::ClusterType::Sveltos,
        };
        assert_eq!(
            of_cluster(&c1, &profiles, &[summary("names-c2", "c1")]),
            ["names-c1", "by-labels", "by-set", "names-c2"]
        );
        let c3 = ClusterRef {
            name: "c3".into(),
            ..c1
        };
        assert_eq!(of_cluster(&c3, &profiles, &[]), ["by-labels", "by-set"]);
    }
}
