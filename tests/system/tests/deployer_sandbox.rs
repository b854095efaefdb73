//! The deployer alone on the sandbox, with ClusterProfiles written by hand: `syncMode: DryRun`
//! reports and changes nothing, conflicts follow `continueOnConflict`, and a paused profile
//! or cluster is left exactly as it is.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

mod support;

use api::v1beta1::{ClusterProfile, ClusterReport, ClusterSummary, FeatureStatus, SveltosCluster};
use controller::serve::Telemetry;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use sandbox::Sandbox;
use serde_json::{Value, json};
use support::{apply, eventually, one_registered_cluster};
use tokio::task::JoinHandle;

/// The sandbox with `cluster-1` registered as `default/cluster-1` (`env=fv`) and the
/// deployer running alone.
struct Fixture {
    sandbox: Sandbox,
    deployer: JoinHandle<()>,
    telemetry: std::sync::Arc<Telemetry>,
    mgmt: Client,
    managed: Client,
    /// The deployer's client of the management cluster.
    client: Client,
}

/// Runs the deployer with `client`, counting into `telemetry`.
fn spawn_deployer(client: &Client, telemetry: &std::sync::Arc<Telemetry>) -> JoinHandle<()> {
    let (client, counted) = (client.clone(), telemetry.clone());
    tokio::spawn(async move {
        let watches = controller::watches::Watches::start(
            &client,
            Default::default(),
            clusters::capi::CapiClusters::none(),
        );
        let _ = controller::deployer::run(client, watches, counted, std::future::pending()).await;
    })
}

impl Fixture {
    async fn start() -> Self {
        Self::start_as(None).await
    }

    /// [`Fixture::start`] with the deployer signed in to the management cluster as `user`
    /// (impersonated), who may read everything there and write nothing until granted more.
    async fn start_as(user: Option<&str>) -> Self {
        let (sandbox, mgmt, managed) = one_registered_cluster().await;
        // No agent runs here to find the cluster reachable: say it is.
        let clusters: Api<SveltosCluster> = Api::namespaced(mgmt.clone(), "default");
        let ready = json!({"status": {"ready": true}});
        clusters
            .patch_status("cluster-1", &PatchParams::default(), &Patch::Merge(&ready))
            .await
            .unwrap();
        let client = match user {
            None => mgmt.clone(),
            Some(user) => {
                let read = json!([{"apiGroups": ["*"], "resources": ["*"],
                                   "verbs": ["get", "list", "watch"]}]);
                grant(&mgmt, &format!("{user}-reads"), user, read).await;
                let mut config = sandbox.cluster("mgmt").unwrap().config().unwrap();
                config.auth_info.impersonate = Some(user.to_owned());
                Client::try_from(config).unwrap()
            }
        };
        let telemetry = Telemetry::new();
        // Objects made while the deployer fills its caches may be seen twice (in the list
        // and as a change): the tests start from a deployer that watches.
        telemetry.expect("deployer");
        let deployer = spawn_deployer(&client, &telemetry);
        eventually("the deployer's caches filled", || async {
            telemetry.is_ready()
        })
        .await;
        Fixture {
            sandbox,
            deployer,
            telemetry,
            mgmt,
            managed,
            client,
        }
    }

    /// Stops the deployer, runs `meanwhile`, and starts a new deployer, which knows only
    /// what the management cluster holds, as after a crash.
    async fn restart_deployer_after(&mut self, meanwhile: impl std::future::Future<Output = ()>) {
        self.deployer.abort();
        let _ = (&mut self.deployer).await;
        meanwhile.await;
        self.deployer = spawn_deployer(&self.client, &self.telemetry);
    }

    async fn stop(self) {
        self.deployer.abort();
        self.sandbox.shutdown().await;
    }

    /// Sets or removes `profile.projectsveltos.io/paused` on a profile.
    async fn pause_profile(&self, name: &str, paused: bool) {
        let value = if paused { json!("true") } else { Value::Null };
        let patch =
            json!({"metadata": {"annotations": {"profile.projectsveltos.io/paused": value}}});
        merge(
            &self.mgmt,
            "config.projectsveltos.io/v1beta1",
            "ClusterProfile",
            name,
            patch,
        )
        .await;
    }

    /// Deploys one profile per `(profile, object, value)`, each from its own policy
    /// `<profile>-policy` holding ConfigMap `<object>`, and waits for every object.
    async fn deploy_each(&self, units: &[(&str, &str, &str)]) {
        for (name, object, value) in units {
            let policy_name = format!("{name}-policy");
            apply(&self.mgmt, policy(&policy_name, object, value)).await;
            apply(
                &self.mgmt,
                profile(name, &[policy_name.as_str()], json!({})),
            )
            .await;
        }
        eventually("every object deployed", || async {
            for (_, object, _) in units {
                if value_of(&self.managed, object).await.is_none() {
                    return false;
                }
            }
            true
        })
        .await;
    }

    /// Sets `spec.paused` of cluster-1.
    async fn pause_cluster(&self, paused: bool) {
        let patch = json!({"spec": {"paused": paused}});
        merge(
            &self.mgmt,
            "lib.projectsveltos.io/v1beta1",
            "SveltosCluster",
            "cluster-1",
            patch,
        )
        .await;
    }
}

/// A policy ConfigMap `default/<name>` holding a ConfigMap `<object>` with `value`.
fn policy(name: &str, object: &str, value: &str) -> Value {
    let content = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {object}\n  namespace: default\ndata:\n  value: {value}\n"
    );
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default"},
           "data": {"object.yaml": content}})
}

/// A ClusterProfile for `env=fv` deploying the policy ConfigMaps `refs`, with `extra` spec
/// fields.
fn profile(name: &str, refs: &[&str], extra: Value) -> Value {
    let refs: Vec<Value> = refs
        .iter()
        .map(|r| json!({"kind": "ConfigMap", "namespace": "default", "name": r}))
        .collect();
    let mut spec = json!({"clusterSelector": {"matchLabels": {"env": "fv"}}, "policyRefs": refs});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
           "metadata": {"name": name}, "spec": spec})
}

/// The `value` of ConfigMap `default/<name>` in `client`'s cluster, if it exists.
async fn value_of(client: &Client, name: &str) -> Option<String> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let found = api.get_opt(name).await.unwrap()?;
    Some(found.data?.get("value")?.clone())
}

/// The Resources feature of the summary of `profile` in cluster-1: status and message.
async fn resources_feature(mgmt: &Client, profile: &str) -> Option<(FeatureStatus, String)> {
    let api: Api<ClusterSummary> = Api::namespaced(mgmt.clone(), "default");
    let summary = api
        .get_opt(&format!("{profile}-sveltos-cluster-1"))
        .await
        .unwrap()?;
    let feature = summary
        .status?
        .feature_summaries
        .into_iter()
        .find(|f| f.feature_id == api::v1beta1::FeatureId::Resources)?;
    Some((feature.status?, feature.failure_message.unwrap_or_default()))
}

/// `(kind name, action)` of every object the DryRun report of `profile` lists.
async fn dry_run_actions(mgmt: &Client, profile: &str) -> Option<Vec<(String, String)>> {
    let api: Api<ClusterReport> = Api::namespaced(mgmt.clone(), "default");
    let report = api
        .get_opt(&format!("{profile}--sveltos--cluster-1"))
        .await
        .unwrap()?;
    let mut actions: Vec<(String, String)> = report
        .status?
        .resource_reports
        .into_iter()
        .map(|r| (format!("{} {}", r.resource.kind, r.resource.name), r.action))
        .collect();
    actions.sort();
    Some(actions)
}

fn pairs(items: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    Some(
        items
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect(),
    )
}

async fn merge(client: &Client, api_version: &str, kind: &str, name: &str, patch: Value) {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    let (resource, caps) = kube::discovery::pinned_kind(client, &gvk).await.unwrap();
    let api: Api<kube::core::DynamicObject> = if caps.scope == kube::discovery::Scope::Namespaced {
        Api::namespaced_with(client.clone(), "default", &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    };
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_reports_what_would_change_and_changes_nothing() {
    let fixture = Fixture::start().await;
    let (mgmt, managed) = (&fixture.mgmt, &fixture.managed);
    apply(mgmt, policy("web-policy", "web", "one")).await;
    apply(
        mgmt,
        profile("dry", &["web-policy"], json!({"syncMode": "DryRun"})),
    )
    .await;
    eventually("a report that web would be created", || async {
        dry_run_actions(mgmt, "dry").await == pairs(&[("ConfigMap web", "Create")])
    })
    .await;
    assert_eq!(value_of(managed, "web").await, None);
    assert_eq!(
        resources_feature(mgmt, "dry").await,
        Some((
            FeatureStatus::FailedNonRetriable,
            "mode is DryRun. Nothing is reconciled".to_owned()
        ))
    );

    // Out of DryRun: deployed for real, and the report goes.
    apply(
        mgmt,
        profile("dry", &["web-policy"], json!({"syncMode": "Continuous"})),
    )
    .await;
    eventually("web deployed and the report gone", || async {
        value_of(managed, "web").await.as_deref() == Some("one")
            && dry_run_actions(mgmt, "dry").await.is_none()
    })
    .await;

    // Back in DryRun, a changed policy and a dropped one are reported, not carried out.
    apply(mgmt, policy("extra-policy", "extra", "x")).await;
    apply(
        mgmt,
        profile("dry", &["extra-policy"], json!({"syncMode": "DryRun"})),
    )
    .await;
    apply(mgmt, policy("web-policy", "web", "two")).await;
    eventually("a report of the create and the delete", || async {
        dry_run_actions(mgmt, "dry").await
            == pairs(&[("ConfigMap extra", "Create"), ("ConfigMap web", "Delete")])
    })
    .await;
    apply(
        mgmt,
        profile("dry", &["web-policy"], json!({"syncMode": "DryRun"})),
    )
    .await;
    eventually("a report of the update", || async {
        dry_run_actions(mgmt, "dry").await == pairs(&[("ConfigMap web", "Update")])
    })
    .await;
    assert_eq!(value_of(managed, "web").await.as_deref(), Some("one"));
    assert_eq!(value_of(managed, "extra").await, None);

    // Deleting a DryRun profile withdraws nothing: dry runs change nothing.
    let profiles: Api<api::v1beta1::ClusterProfile> = Api::all(mgmt.clone());
    profiles.delete("dry", &Default::default()).await.unwrap();
    eventually("the summary gone", || async {
        resources_feature(mgmt, "dry").await.is_none()
    })
    .await;
    assert_eq!(value_of(managed, "web").await.as_deref(), Some("one"));
    fixture.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_stops_the_profile_unless_it_continues_on_conflict() {
    let fixture = Fixture::start().await;
    let (mgmt, managed) = (&fixture.mgmt, &fixture.managed);
    apply(mgmt, policy("first-policy", "shared", "first")).await;
    apply(mgmt, policy("second-policy", "shared", "second")).await;
    apply(mgmt, policy("own-policy", "own", "mine")).await;
    apply(mgmt, profile("first", &["first-policy"], json!({}))).await;
    eventually("the first profile's object", || async {
        value_of(managed, "shared").await.as_deref() == Some("first")
    })
    .await;

    // Same object from another reference, same tier: the first owner keeps it, and the
    // conflict stops the second profile before its own object.
    // The second profile: the shared object first, then its own.
    let second = |extra| profile("second", &["second-policy", "own-policy"], extra);
    apply(mgmt, second(json!({}))).await;
    eventually("the conflict in the second profile's summary", || async {
        resources_feature(mgmt, "second")
            .await
            .is_some_and(|(status, message)| {
                status == FeatureStatus::Failed && message.contains("conflict on ConfigMap shared")
            })
    })
    .await;
    assert_eq!(value_of(managed, "own").await, None);

    // continueOnError does not cover conflicts; continueOnConflict does.
    apply(mgmt, second(json!({"continueOnError": true}))).await;
    let summaries: Api<ClusterSummary> = Api::namespaced(mgmt.clone(), "default");
    eventually("the deployer's pass with continueOnError", || async {
        summaries
            .get_opt("second-sveltos-cluster-1")
            .await
            .unwrap()
            .is_some_and(|s| s.spec.cluster_profile_spec.continue_on_error)
    })
    .await;
    assert_eq!(value_of(managed, "own").await, None);
    apply(mgmt, second(json!({"continueOnConflict": true}))).await;
    eventually("the second profile's own object", || async {
        value_of(managed, "own").await.as_deref() == Some("mine")
    })
    .await;
    assert_eq!(value_of(managed, "shared").await.as_deref(), Some("first"));
    let (status, _) = resources_feature(mgmt, "second").await.unwrap();
    assert_eq!(
        status,
        FeatureStatus::Failed,
        "the conflict is still reported"
    );
    fixture.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_profile_or_cluster_is_left_as_it_is() {
    let fixture = Fixture::start().await;
    let (mgmt, managed) = (&fixture.mgmt, &fixture.managed);
    fixture
        .deploy_each(&[("held", "held", "one"), ("probe", "probe", "one")])
        .await;

    // A paused profile: its policy changes, and only the unpaused probe follows.
    fixture.pause_profile("held", true).await;
    apply(mgmt, policy("held-policy", "held", "two")).await;
    apply(mgmt, policy("probe-policy", "probe", "two")).await;
    eventually("the probe updated", || async {
        value_of(managed, "probe").await.as_deref() == Some("two")
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(value_of(managed, "held").await.as_deref(), Some("one"));
    fixture.pause_profile("held", false).await;
    eventually("the resumed profile's update", || async {
        value_of(managed, "held").await.as_deref() == Some("two")
    })
    .await;

    // A paused cluster keeps matching: its objects are neither updated nor withdrawn.
    fixture.pause_cluster(true).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let profiles: Api<api::v1beta1::ClusterProfile> = Api::all(mgmt.clone());
    profiles.delete("held", &Default::default()).await.unwrap();
    apply(mgmt, policy("probe-policy", "probe", "three")).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(value_of(managed, "held").await.as_deref(), Some("two"));
    assert_eq!(value_of(managed, "probe").await.as_deref(), Some("two"));
    assert!(resources_feature(mgmt, "held").await.is_some());

    // Resumed: the deleted profile's object is withdrawn, the probe catches up.
    fixture.pause_cluster(false).await;
    eventually("withdrawal and catch-up after resuming", || async {
        value_of(managed, "held").await.is_none()
            && value_of(managed, "probe").await.as_deref() == Some("three")
            && resources_feature(mgmt, "held").await.is_none()
    })
    .await;
    fixture.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_deleted_after_a_deployment_is_made_again_by_the_next() {
    let fixture = Fixture::start().await;
    let (mgmt, managed) = (&fixture.mgmt, &fixture.managed);
    let policy = |value: &str| {
        let content = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: apps\ndata:\n  value: {value}\n"
        );
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "apps-policy", "namespace": "default"},
               "data": {"object.yaml": content}})
    };
    let in_apps: Api<ConfigMap> = Api::namespaced(managed.clone(), "apps");
    let value = || async {
        let found = in_apps.get_opt("web").await.unwrap()?;
        found.data?.get("value").cloned()
    };
    apply(mgmt, policy("one")).await;
    apply(mgmt, profile("apps", &["apps-policy"], json!({}))).await;
    eventually("deployed into a namespace made for it", || async {
        value().await.as_deref() == Some("one")
    })
    .await;
    // The namespace goes (its objects with it); the next deployment must not take it for
    // granted because the last one made it.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(managed.clone());
    namespaces
        .delete("apps", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    eventually("the namespace gone", || async {
        namespaces.get_opt("apps").await.unwrap().is_none()
    })
    .await;
    apply(mgmt, policy("two")).await;
    eventually("deployed again, namespace and all", || async {
        value().await.as_deref() == Some("two")
    })
    .await;
    fixture.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_a_policy_no_longer_holds_is_deleted() {
    let fixture = Fixture::start().await;
    let (mgmt, managed) = (&fixture.mgmt, &fixture.managed);
    fixture
        .deploy_each(&[("web", "web", "one"), ("other", "other", "x")])
        .await;
    // The policy now holds a differently named object: the old one goes, the other
    // profile's object of the same kind stays.
    apply(mgmt, policy("web-policy", "web-2", "two")).await;
    eventually("the renamed object alone", || async {
        value_of(managed, "web").await.is_none()
            && value_of(managed, "web-2").await.as_deref() == Some("two")
    })
    .await;
    assert_eq!(value_of(managed, "other").await.as_deref(), Some("x"));
    fixture.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_policy_is_refused_in_words_not_deployed_as_text() {
    let fixture = Fixture::start().await;
    let mgmt = &fixture.mgmt;
    let mut lua = policy("lua-policy", "from-lua", "x");
    lua["metadata"]["annotations"] = json!({"projectsveltos.io/lua": "ok"});
    apply(mgmt, lua).await;
    apply(mgmt, profile("lua", &["lua-policy"], json!({}))).await;
    eventually("the refusal in the summary", || async {
        resources_feature(mgmt, "lua")
            .await
            .is_some_and(|(status, message)| {
                status == FeatureStatus::Failed && message.contains("projectsveltos.io/lua")
            })
    })
    .await;
    assert_eq!(value_of(&fixture.managed, "from-lua").await, None);
    fixture.stop().await;
}

/// A ClusterRole `name` with `rules`, bound to user `user`.
async fn grant(mgmt: &Client, name: &str, user: &str, rules: Value) {
    apply(
        mgmt,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": rules}),
    )
    .await;
    apply(
        mgmt,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_deployed_before_its_cluster_summary_records_it() {
    // The deployer may read everything and write nothing: it cannot record a ClusterSummary.
    let fixture = Fixture::start_as(Some("deployer")).await;
    let (mgmt, managed) = (&fixture.mgmt, &fixture.managed);
    apply(mgmt, policy("web-policy", "web", "one")).await;
    apply(mgmt, profile("web", &["web-policy"], json!({}))).await;
    // Were anything deployed before its summary is written, a profile deleted meanwhile would
    // leave it behind for good: once a pass has failed, nothing is in the cluster.
    eventually("a deployer pass refused", || async {
        fixture.telemetry.encode().contains(r#"outcome="error""#)
    })
    .await;
    assert_eq!(value_of(managed, "web").await, None);

    // Allowed to record it, the deployer deploys on its next try.
    let write = json!([{"apiGroups": ["config.projectsveltos.io"],
        "resources": ["clustersummaries", "clustersummaries/status", "clusterprofiles/status"],
        "verbs": ["create", "patch", "update", "delete"]}]);
    grant(mgmt, "deployer-records", "deployer", write).await;
    eventually("the object deployed once recorded", || async {
        value_of(managed, "web").await.as_deref() == Some("one")
    })
    .await;
    let summaries: Api<ClusterSummary> = Api::namespaced(mgmt.clone(), "default");
    let summary = summaries.list(&Default::default()).await.unwrap().items;
    assert_eq!(summary.len(), 1);
    fixture.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_pass_deployed_without_recording_its_outcome_is_withdrawn() {
    // The deployer may write a summary's spec but not its status: its passes deploy, then
    // fail to record what they deployed, as a pass cut short by an outage or a crash does.
    let mut fixture = Fixture::start_as(Some("deployer")).await;
    let (mgmt, managed) = (&fixture.mgmt.clone(), &fixture.managed.clone());
    let write = json!([{"apiGroups": ["config.projectsveltos.io"],
        "resources": ["clustersummaries", "clusterprofiles/status"],
        "verbs": ["create", "patch", "update", "delete"]}]);
    grant(mgmt, "deployer-specs", "deployer", write).await;
    apply(mgmt, policy("web-policy", "web", "one")).await;
    apply(mgmt, profile("web", &["web-policy"], json!({}))).await;
    eventually("the object deployed", || async {
        value_of(managed, "web").await.as_deref() == Some("one")
    })
    .await;
    let summaries: Api<ClusterSummary> = Api::namespaced(mgmt.clone(), "default");
    let listed = summaries.list(&Default::default()).await.unwrap().items;
    assert!(
        listed.iter().all(|s| s.status.is_none()),
        "no outcome may be recorded: {listed:?}"
    );

    // The profile goes while no deployer runs; the next knows only what the pass recorded
    // before deploying to say which kinds to look through.
    fixture
        .restart_deployer_after(async {
            let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
            profiles.delete("web", &Default::default()).await.unwrap();
        })
        .await;
    eventually("the object withdrawn and its summary gone", || async {
        value_of(managed, "web").await.is_none()
            && summaries
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty()
    })
    .await;
    fixture.stop().await;
}

/// Passes the deployer has made so far, whatever their outcome.
fn deployer_passes(telemetry: &Telemetry) -> u64 {
    telemetry
        .encode()
        .lines()
        .filter(|l| l.starts_with(r#"sveltos_events_reconcile_passes_total{controller="deployer""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_is_one_pass_and_its_own_writes_start_no_other() {
    let fixture = Fixture::start().await;
    let mgmt = &fixture.mgmt;
    fixture.deploy_each(&[("web", "web", "one")]).await;
    let profiles: Api<ClusterProfile> = Api::all(mgmt.clone());
    eventually(
        "the outcome recorded in the summary and the profile",
        || async {
            let matching = profiles.get("web").await.unwrap().status;
            resources_feature(mgmt, "web").await.map(|f| f.0) == Some(FeatureStatus::Provisioned)
                && matching.is_some_and(|s| !s.matching_cluster_refs.is_empty())
        },
    )
    .await;
    // Whatever the events of those writes would start has started by now.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(deployer_passes(&fixture.telemetry), 1);

    // A change someone else makes is one more pass.
    apply(mgmt, policy("web-policy", "web", "two")).await;
    eventually("the new value deployed", || async {
        value_of(&fixture.managed, "web").await.as_deref() == Some("two")
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(deployer_passes(&fixture.telemetry), 2);
    fixture.stop().await;
}
