//! The manager against the sandbox's management cluster: an EventReport and an EventTrigger
//! become a ClusterProfile and an instantiated ConfigMap; they follow the events and go away
//! with the report, and with the trigger.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up, not user input

use std::time::Duration;

use api::labels::{
    CLUSTER_NAME_LABEL, EVENT_TRIGGER_FINALIZER, EVENT_TRIGGER_NAME_LABEL, RESOURCE_NAME_LABEL,
    SVELTOS_NAMESPACE,
};
use api::v1beta1::{ClusterProfile, EventReport, EventTrigger, SveltosCluster};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use sandbox::{Sandbox, SandboxOptions};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(20);

async fn eventually<T, F, Fut>(what: &str, f: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = f().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn create(client: &Client, object: Value) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    let namespace = object["metadata"]["namespace"].as_str();
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

async fn install_crds(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in api::crd::all().unwrap() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
}

fn report(services: &[&str]) -> Value {
    let matching: Vec<Value> = services
        .iter()
        .map(|name| json!({"apiVersion": "v1", "kind": "Service", "namespace": "apps", "name": name}))
        .collect();
    let collected: Vec<String> = services
        .iter()
        .map(|name| {
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "apps"}})
                .to_string()
        })
        .collect();
    let mut report: EventReport = serde_json::from_value(json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventReport",
        "metadata": {
            "name": "sveltos--sveltos-service--cluster-1", "namespace": "fleet",
            "labels": {
                "projectsveltos.io/eventsource-name": "sveltos-service",
                "eventreport.projectsveltos.io/cluster-name": "cluster-1",
                "eventreport.projectsveltos.io/cluster-type": "sveltos"
            }
        },
        "spec": {
            "clusterNamespace": "fleet", "clusterName": "cluster-1", "clusterType": "Sveltos",
            "eventSourceName": "sveltos-service", "matchingResources": matching
        }
    }))
    .unwrap();
    report.spec.resources = Some(ByteString(collected.join("\n---\n").into_bytes()));
    serde_json::to_value(report).unwrap()
}

async fn set_up(client: &Client) {
    install_crds(client).await;
    for namespace in ["fleet", "apps"] {
        create(
            client,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        )
        .await;
    }
    create(
        client,
        json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": "cluster-1", "namespace": "fleet", "labels": {"env": "fv"}},
            "spec": {}
        }),
    )
    .await;
    // Status is a subresource: a registered cluster turns ready through it, as with Sveltos.
    let clusters: Api<SveltosCluster> = Api::namespaced(client.clone(), "fleet");
    let ready = json!({"status": {"ready": true}});
    clusters
        .patch_status("cluster-1", &PatchParams::default(), &Patch::Merge(&ready))
        .await
        .unwrap();
    create(
        client,
        json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventSource",
            "metadata": {"name": "sveltos-service"},
            "spec": {"collectResources": true, "resourceSelectors": [{"group": "", "version": "v1", "kind": "Service"}]}
        }),
    )
    .await;
    create(
        client,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "network-policy", "namespace": "default",
                "annotations": {"projectsveltos.io/instantiate": "ok"}
            },
            "data": {"policy.yaml": "kind: NetworkPolicy\napiVersion: networking.k8s.io/v1\nmetadata:\n  name: front-{{ .Resource.metadata.name }}\n  namespace: {{ .Resource.metadata.namespace }}\n"}
        }),
    )
    .await;
    create(client, report(&["web", "api"])).await;
    create(
        client,
        json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventTrigger",
            "metadata": {"name": "service-network-policy"},
            "spec": {
                "sourceClusterSelector": {"matchLabels": {"env": "fv"}},
                "eventSourceName": "sveltos-service",
                "oneForEvent": true,
                "policyRefs": [{"kind": "ConfigMap", "namespace": "default", "name": "network-policy"}]
            }
        }),
    )
    .await;
}

async fn profiles(client: &Client) -> Vec<ClusterProfile> {
    let api: Api<ClusterProfile> = Api::all(client.clone());
    let labels = format!("{EVENT_TRIGGER_NAME_LABEL}=service-network-policy");
    api.list(&ListParams::default().labels(&labels))
        .await
        .unwrap()
        .items
}

async fn config_maps(client: &Client) -> Vec<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), SVELTOS_NAMESPACE);
    let labels = format!("{EVENT_TRIGGER_NAME_LABEL}=service-network-policy");
    api.list(&ListParams::default().labels(&labels))
        .await
        .unwrap()
        .items
}

fn label<'a>(meta: &'a kube::api::ObjectMeta, key: &str) -> &'a str {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map_or("", String::as_str)
}

/// A sandbox with the scenario set up and the manager running.
async fn running() -> (
    Sandbox,
    Client,
    tokio::task::JoinHandle<Result<(), sveltos_events_controller::manager::ManagerError>>,
) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("sveltos_events_controller=debug,kube_runtime=warn")
        .with_test_writer()
        .try_init();
    let sandbox = Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: 0,
        ..Default::default()
    })
    .await
    .unwrap();
    let client = sandbox.clusters()[0].client().unwrap();
    set_up(&client).await;
    let watches = sveltos_events_controller::watches::Watches::start(
        &client,
        Default::default(),
        clusters::capi::CapiClusters::none(),
    );
    let manager = tokio::spawn(sveltos_events_controller::manager::run(
        client.clone(),
        watches,
        sveltos_events_controller::serve::Telemetry::new(),
        std::future::pending(),
    ));

    (sandbox, client, manager)
}

async fn generated_bodies(client: &Client) -> Vec<String> {
    let mut bodies: Vec<String> = config_maps(client)
        .await
        .iter()
        .filter_map(|m| m.data.as_ref()?.get("policy.yaml").cloned())
        .collect();
    bodies.sort();
    bodies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_become_profiles_and_go_away_with_events_and_triggers() {
    let (sandbox, client, manager) = running().await;
    // One ClusterProfile and one instantiated ConfigMap per matching Service.
    let found = eventually("two profiles", || async {
        let found = profiles(&client).await;
        (found.len() == 2).then_some(found)
    })
    .await;
    let mut resources: Vec<&str> = found
        .iter()
        .map(|p| label(&p.metadata, RESOURCE_NAME_LABEL))
        .collect();
    resources.sort_unstable();
    assert_eq!(resources, ["api", "web"]);
    for profile in &found {
        assert_eq!(label(&profile.metadata, CLUSTER_NAME_LABEL), "cluster-1");
        let refs = &profile.spec.policy_refs;
        assert_eq!(refs.len(), 1, "{refs:?}");
        assert_eq!(refs[0].namespace, SVELTOS_NAMESPACE);
    }
    let maps = eventually("two configmaps", || async {
        let maps = config_maps(&client).await;
        (maps.len() == 2).then_some(maps)
    })
    .await;
    let mut bodies: Vec<String> = maps
        .iter()
        .map(|m| m.data.as_ref().unwrap()["policy.yaml"].clone())
        .collect();
    bodies.sort();
    assert_eq!(
        bodies,
        [
            "kind: NetworkPolicy\napiVersion: networking.k8s.io/v1\nmetadata:\n  name: front-api\n  namespace: apps\n",
            "kind: NetworkPolicy\napiVersion: networking.k8s.io/v1\nmetadata:\n  name: front-web\n  namespace: apps\n",
        ]
    );
    for profile in &found {
        let referenced = &profile.spec.policy_refs[0].name;
        assert!(
            maps.iter()
                .any(|m| m.metadata.name.as_ref() == Some(referenced)),
            "{referenced} missing"
        );
    }

    // The trigger carries Sveltos' finalizer and reports the matching cluster.
    let triggers: Api<EventTrigger> = Api::all(client.clone());
    let trigger = eventually("trigger status", || async {
        let t = triggers.get("service-network-policy").await.unwrap();
        t.status
            .as_ref()
            .is_some_and(|s| !s.cluster_info.is_empty())
            .then_some(t)
    })
    .await;
    assert!(
        trigger
            .metadata
            .finalizers
            .unwrap_or_default()
            .iter()
            .any(|f| f == EVENT_TRIGGER_FINALIZER)
    );
    let status = trigger.status.unwrap();
    assert_eq!(
        status.matching_cluster_refs[0].name.as_deref(),
        Some("cluster-1")
    );

    // One event goes: its profile and ConfigMap go with it.
    let reports: Api<EventReport> = Api::namespaced(client.clone(), "fleet");
    let shrunk = json!({"spec": report(&["web"])["spec"]});
    reports
        .patch(
            "sveltos--sveltos-service--cluster-1",
            &PatchParams::default(),
            &Patch::Merge(&shrunk),
        )
        .await
        .unwrap();
    eventually("one profile and one configmap", || async {
        let p = profiles(&client).await;
        let m = config_maps(&client).await;
        (p.len() == 1 && m.len() == 1 && label(&p[0].metadata, RESOURCE_NAME_LABEL) == "web")
            .then_some(())
    })
    .await;

    // The trigger goes: everything it generated goes, then the trigger itself.
    triggers
        .delete("service-network-policy", &DeleteParams::default())
        .await
        .unwrap();
    eventually("cleanup after trigger deletion", || async {
        let gone = triggers
            .get_opt("service-network-policy")
            .await
            .unwrap()
            .is_none();
        (gone && profiles(&client).await.is_empty() && config_maps(&client).await.is_empty())
            .then_some(())
    })
    .await;

    manager.abort();
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_profiles_deleted_or_unlabelled_by_hand_come_back_and_others_stay_alone() {
    let (sandbox, client, manager) = running().await;
    let names = || async {
        let mut names: Vec<String> = profiles(&client)
            .await
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect();
        names.sort();
        names
    };
    let generated = eventually("two profiles", || async {
        let found = names().await;
        (found.len() == 2).then_some(found)
    })
    .await;
    // A profile of the user's own, which the manager reads through the same cache.
    create(
        &client,
        json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
            "metadata": {"name": "mine", "labels": {"team": "a"}},
            "spec": {"clusterSelector": {"matchLabels": {"env": "fv"}}}}),
    )
    .await;
    let api: Api<ClusterProfile> = Api::all(client.clone());
    let unlabel = json!({"metadata": {"labels": {EVENT_TRIGGER_NAME_LABEL: null}}});
    api.patch(
        &generated[0],
        &PatchParams::default(),
        &Patch::Merge(&unlabel),
    )
    .await
    .unwrap();
    eventually("the unlabelled profile back", || async {
        (names().await == generated).then_some(())
    })
    .await;
    api.delete(&generated[1], &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deleted profile back", || async {
        (names().await == generated).then_some(())
    })
    .await;
    let mine = api.get("mine").await.unwrap();
    assert_eq!(
        mine.metadata.labels,
        Some([("team".to_owned(), "a".to_owned())].into())
    );
    assert!(mine.spec.policy_refs.is_empty());
    assert_eq!(profiles(&client).await.len(), 2);

    manager.abort();
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_edits_source_deletion_and_cluster_relabelling_converge() {
    let (sandbox, client, manager) = running().await;
    eventually("two profiles", || async {
        (profiles(&client).await.len() == 2).then_some(())
    })
    .await;

    // Editing the referenced template re-renders every generated ConfigMap.
    let templates: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let edge = "kind: NetworkPolicy\napiVersion: networking.k8s.io/v1\nmetadata:\n  name: edge-";
    let edited =
        json!({"data": {"policy.yaml": format!("{edge}{{{{ .Resource.metadata.name }}}}\n")}});
    templates
        .patch(
            "network-policy",
            &PatchParams::default(),
            &Patch::Merge(&edited),
        )
        .await
        .unwrap();
    eventually("re-rendered ConfigMaps", || async {
        let wanted = [format!("{edge}api\n"), format!("{edge}web\n")];
        (generated_bodies(&client).await == wanted).then_some(())
    })
    .await;

    // Deleting the EventSource withdraws what it produced; recreating it brings it back.
    let sources: Api<api::v1beta1::EventSource> = Api::all(client.clone());
    let source = sources.get("sveltos-service").await.unwrap();
    sources
        .delete("sveltos-service", &DeleteParams::default())
        .await
        .unwrap();
    eventually("withdrawal after EventSource deletion", || async {
        (profiles(&client).await.is_empty() && config_maps(&client).await.is_empty()).then_some(())
    })
    .await;
    let mut again = serde_json::to_value(&source).unwrap();
    again["metadata"] = json!({"name": "sveltos-service"});
    create(&client, again).await;
    eventually("profiles back", || async {
        (profiles(&client).await.len() == 2).then_some(())
    })
    .await;

    // A cluster that stops matching loses its profiles and the trigger's status drops it.
    let clusters: Api<SveltosCluster> = Api::namespaced(client.clone(), "fleet");
    let relabelled = json!({"metadata": {"labels": {"env": "production"}}});
    clusters
        .patch(
            "cluster-1",
            &PatchParams::default(),
            &Patch::Merge(&relabelled),
        )
        .await
        .unwrap();
    let triggers: Api<EventTrigger> = Api::all(client.clone());
    eventually("withdrawal after relabelling", || async {
        let trigger = triggers.get("service-network-policy").await.unwrap();
        let unmatched = trigger
            .status
            .is_some_and(|s| s.matching_cluster_refs.is_empty());
        (unmatched && profiles(&client).await.is_empty() && config_maps(&client).await.is_empty())
            .then_some(())
    })
    .await;

    manager.abort();
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_template_fails_its_cluster_in_the_status_and_spares_other_triggers() {
    let (sandbox, client, manager) = running().await;
    create(
        &client,
        json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "EventTrigger",
            "metadata": {"name": "broken"},
            "spec": {
                "sourceClusterSelector": {"matchLabels": {"env": "fv"}},
                "eventSourceName": "sveltos-service",
                "oneForEvent": true,
                "policyRefs": [{"kind": "ConfigMap", "namespace": "default", "name": "absent"}]
            }
        }),
    )
    .await;
    let triggers: Api<EventTrigger> = Api::all(client.clone());
    let info = eventually("failure in status", || async {
        let trigger = triggers.get("broken").await.unwrap();
        trigger
            .status
            .and_then(|s| s.cluster_info.into_iter().next())
            .filter(|i| i.failure_message.is_some())
    })
    .await;
    assert_eq!(
        info.status,
        Some(api::v1beta1::SveltosFeatureStatus::Failed)
    );
    let message = info.failure_message.unwrap_or_default();
    assert!(message.contains("default/absent"), "{message}");
    // The failure is also a Kubernetes Event on the trigger.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::all(client.clone());
    let event = eventually("Warning event", || async {
        let list = events.list(&ListParams::default()).await.unwrap();
        list.items
            .into_iter()
            .find(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("broken"))
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let note = event.note.unwrap_or_default();
    assert!(
        note.contains("cluster fleet/cluster-1") && note.contains("default/absent"),
        "{note}"
    );
    // The healthy trigger is unaffected.
    eventually("healthy trigger's profiles", || async {
        (profiles(&client).await.len() == 2).then_some(())
    })
    .await;

    manager.abort();
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_whose_event_source_name_stops_rendering_keeps_its_profiles() {
    let (sandbox, client, manager) = running().await;
    eventually("two profiles", || async {
        (profiles(&client).await.len() == 2).then_some(())
    })
    .await;
    // The cluster has no label `source`: its eventSourceName fails to render from now on.
    let triggers: Api<EventTrigger> = Api::all(client.clone());
    let name = json!({"spec": {"eventSourceName": "{{ .Cluster.metadata.labels.source }}"}});
    triggers
        .patch(
            "service-network-policy",
            &PatchParams::default(),
            &Patch::Merge(&name),
        )
        .await
        .unwrap();
    let info = eventually("failure in status", || async {
        let trigger = triggers.get("service-network-policy").await.unwrap();
        let info = trigger.status?.cluster_info.into_iter().next()?;
        info.failure_message
            .as_deref()
            .is_some_and(|m| m.contains("eventSourceName"))
            .then_some(info)
    })
    .await;
    assert_eq!(
        info.status,
        Some(api::v1beta1::SveltosFeatureStatus::Failed)
    );
    // A failed cluster's objects stay as they are (the pass that failed may be wrong).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(profiles(&client).await.len(), 2);
    assert_eq!(config_maps(&client).await.len(), 2);

    manager.abort();
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_based_add_on_acts_through_the_event_trigger_it_owns() {
    let (sandbox, client, manager) = running().await;
    // Seed 001's EventBasedAddOn, verbatim but for its name: a string selector, v1alpha1.
    create(
        &client,
        json!({
            "apiVersion": "lib.projectsveltos.io/v1alpha1", "kind": "EventBasedAddOn",
            "metadata": {"name": "legacy-network-policy"},
            "spec": {
                "clusterSelector": "env=fv",
                "eventSourceName": "sveltos-service",
                "oneForEvent": true,
                "policyRefs": [{"name": "network-policy", "namespace": "default", "kind": "ConfigMap"}]
            }
        }),
    )
    .await;
    let api: Api<ClusterProfile> = Api::all(client.clone());
    let legacy =
        ListParams::default().labels(&format!("{EVENT_TRIGGER_NAME_LABEL}=legacy-network-policy"));
    eventually("profiles of the EventBasedAddOn", || async {
        (api.list(&legacy).await.unwrap().items.len() == 2).then_some(())
    })
    .await;
    let triggers: Api<EventTrigger> = Api::all(client.clone());
    let trigger = triggers.get("legacy-network-policy").await.unwrap();
    let owner = &trigger.metadata.owner_references.unwrap_or_default()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("EventBasedAddOn", "legacy-network-policy")
    );
    assert_eq!(
        trigger
            .spec
            .source_cluster_selector
            .match_labels
            .unwrap_or_default()["env"],
        "fv"
    );

    // Deleting the EventBasedAddOn collects its trigger, which withdraws its profiles.
    let addons: Api<api::v1alpha1::EventBasedAddOn> = Api::all(client.clone());
    addons
        .delete("legacy-network-policy", &DeleteParams::default())
        .await
        .unwrap();
    eventually("withdrawal after EventBasedAddOn deletion", || async {
        let gone = triggers
            .get_opt("legacy-network-policy")
            .await
            .unwrap()
            .is_none();
        (gone && api.list(&legacy).await.unwrap().items.is_empty()).then_some(())
    })
    .await;
    // The other trigger is untouched.
    assert_eq!(profiles(&client).await.len(), 2);

    manager.abort();
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_that_cannot_be_read_fails_its_cluster_until_it_can() {
    let (sandbox, client, manager) = running().await;
    let triggers: Api<EventTrigger> = Api::all(client.clone());
    let cluster_status = || async {
        let trigger = triggers.get("service-network-policy").await.unwrap();
        let info = trigger
            .status
            .and_then(|s| s.cluster_info.into_iter().next());
        info.map(|i| (i.status, i.failure_message))
    };
    eventually("profiles and a provisioned cluster", || async {
        let provisioned = Some(api::v1beta1::SveltosFeatureStatus::Provisioned);
        let status = cluster_status().await;
        (profiles(&client).await.len() == 2 && status.is_some_and(|s| s.0 == provisioned))
            .then_some(())
    })
    .await;

    // The report now names secret data no companion Secret holds: only its cluster's pass
    // reads it, and that pass fails in the status while the profiles stay as they are.
    let reports: Api<EventReport> = Api::namespaced(client.clone(), "fleet");
    let name = "sveltos--sveltos-service--cluster-1";
    let unreadable = json!({
        "metadata": {"annotations": {api::secret_data::SECRET_DATA_ANNOTATION: "digest"}},
        "spec": report(&["web", "api", "db"])["spec"],
    });
    reports
        .patch(name, &PatchParams::default(), &Patch::Merge(&unreadable))
        .await
        .unwrap();
    let message = eventually("the cluster's failure", || async {
        let (status, message) = cluster_status().await?;
        (status == Some(api::v1beta1::SveltosFeatureStatus::Failed)).then_some(message?)
    })
    .await;
    assert!(message.contains("names secret data"), "{message}");
    assert_eq!(
        profiles(&client).await.len(),
        2,
        "a failed cluster keeps what it has"
    );

    // Readable again: its events become profiles and the failure goes.
    let readable =
        json!({"metadata": {"annotations": {api::secret_data::SECRET_DATA_ANNOTATION: null}}});
    reports
        .patch(name, &PatchParams::default(), &Patch::Merge(&readable))
        .await
        .unwrap();
    eventually("three profiles and a provisioned cluster", || async {
        let status = cluster_status().await?;
        let provisioned = status == (Some(api::v1beta1::SveltosFeatureStatus::Provisioned), None);
        (profiles(&client).await.len() == 3 && provisioned).then_some(())
    })
    .await;

    manager.abort();
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_report_generations_is_acknowledged_in_one_status_write() {
    let (sandbox, client, manager) = running().await;
    let name = "sveltos--sveltos-service--cluster-1";
    let reports: Api<EventReport> = Api::namespaced(client.clone(), "fleet");
    // The generation the Processed condition acknowledges, and the report's own.
    let acknowledged = || async {
        let report = reports.get(name).await.ok()?;
        let conditions = report.status?.conditions;
        let processed = conditions.iter().find(|c| c.type_ == "Processed")?;
        Some((processed.observed_generation?, report.metadata.generation?))
    };
    eventually("the first generation acknowledged", || async {
        acknowledged().await.filter(|(seen, now)| seen == now)
    })
    .await;
    // The generations the status writes acknowledged, as a watch sees them.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let watched = tokio::spawn({
        let (reports, seen) = (reports.clone(), seen.clone());
        async move {
            use futures_util::StreamExt;
            let stream = kube::runtime::watcher(reports, Default::default());
            let mut stream = std::pin::pin!(kube::runtime::WatchStreamExt::applied_objects(stream));
            while let Some(Ok(report)) = stream.next().await {
                let conditions = report.status.map(|s| s.conditions).unwrap_or_default();
                if let Some(c) = conditions.iter().find(|c| c.type_ == "Processed") {
                    seen.lock().unwrap().insert(c.observed_generation);
                }
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let burst = [
        ["web", "api", "db"],
        ["web", "api", "mq"],
        ["web", "db", "mq"],
    ];
    for services in burst.iter().chain(&burst) {
        let changed = json!({"spec": report(services)["spec"]});
        reports
            .patch(name, &PatchParams::default(), &Patch::Merge(&changed))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    // The last generation is acknowledged, once the burst is over.
    eventually("the last generation acknowledged", || async {
        acknowledged().await.filter(|(seen, now)| seen == now)
    })
    .await;
    let quiet = sveltos_events_controller::manager::status::ACKNOWLEDGE_EVERY;
    tokio::time::sleep(quiet + Duration::from_millis(300)).await;
    watched.abort();
    let seen = seen.lock().unwrap().clone();
    // The watch saw the first acknowledgement, then at most two more for six generations
    // (one within the burst, one after it), the last among them.
    assert!(
        (2..=3).contains(&seen.len()),
        "acknowledged generations: {seen:?}"
    );
    manager.abort();
    sandbox.shutdown().await;
}
