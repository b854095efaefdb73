//! `sandbox --demo`: applies the seed documents' NetworkPolicy scenario in the running sandbox
//! and narrates each hop (EventReport, ClusterProfile, NetworkPolicy) with its latency.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

const EVENT_SOURCE: &str = include_str!("../../examples/network-policy/eventsource.yaml");
const EVENT_TRIGGER: &str = include_str!("../../examples/network-policy/eventtrigger.yaml");
const TEMPLATE: &str = include_str!("../../examples/network-policy/configmap.yaml");
const SERVICE: &str = include_str!("../../examples/network-policy/managed/service.yaml");

/// Longest wait for one hop.
const HOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Applies every document of `text` to `client`'s cluster (server-side apply).
pub async fn apply_documents(client: &Client, text: &str) -> anyhow::Result<Vec<String>> {
    let mut applied = Vec::new();
    for document in api::load::documents(text).context("reading the example")? {
        let api_version = document
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = document
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
            .await
            .with_context(|| format!("the cluster does not serve {api_version} {kind}"))?;
        let name = document
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let namespace = document
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        let api: Api<DynamicObject> = if capabilities.scope == kube::discovery::Scope::Namespaced {
            Api::namespaced_with(client.clone(), namespace, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        let params = PatchParams::apply("kubectl-sveltos-events-demo").force();
        api.patch(&name, &params, &Patch::Apply(&document))
            .await
            .with_context(|| format!("applying {kind} {name}"))?;
        applied.push(format!("{kind} {name}"));
    }
    Ok(applied)
}

/// Waits for `check` to find something; `what` names it in the timeout error.
async fn hop<T, F, Fut>(what: &str, check: F) -> anyhow::Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + HOP_TIMEOUT;
    loop {
        if let Some(found) = check().await? {
            return Ok(found);
        }
        if Instant::now() > deadline {
            bail!("{what} did not appear within {HOP_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn dynamic(
    client: &Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        plural,
    );
    match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

fn millis(start: Instant) -> String {
    format!("{:.1} ms", start.elapsed().as_secs_f64() * 1000.0)
}

/// Runs the demo against the sandbox's `mgmt` and `cluster-1`.
pub async fn run(sandbox: &sandbox::Sandbox) -> anyhow::Result<()> {
    let mgmt = sandbox
        .cluster("mgmt")
        .context("the sandbox has no mgmt cluster")?
        .client()?;
    let managed = sandbox
        .cluster("cluster-1")
        .context("--demo needs at least one managed cluster (--clusters 1 or more)")?
        .client()?;
    println!("\ndemo: the seed documents' NetworkPolicy scenario (examples/network-policy/)");
    let mut defined = Vec::new();
    for text in [EVENT_SOURCE, EVENT_TRIGGER, TEMPLATE] {
        defined.extend(apply_documents(&mgmt, text).await?);
    }
    println!("  1. mgmt: applied {}", defined.join(", "));
    let start = Instant::now();
    apply_documents(&managed, SERVICE).await?;
    println!("  2. cluster-1: created Service default/my-service (label sveltos=fv)");

    let reports = dynamic(
        &mgmt,
        "lib.projectsveltos.io",
        "v1beta1",
        "EventReport",
        "eventreports",
        Some("default"),
    );
    hop("the EventReport", || async {
        Ok(reports
            .get_opt("sveltos--sveltos-service--cluster-1")
            .await?
            .filter(|r| {
                r.data
                    .pointer("/spec/matchingResources/0/name")
                    .and_then(Value::as_str)
                    == Some("my-service")
            }))
    })
    .await?;
    println!(
        "  3. agent: EventReport default/sveltos--sveltos-service--cluster-1 lists the Service ({})",
        millis(start)
    );

    let profiles = dynamic(
        &mgmt,
        "config.projectsveltos.io",
        "v1beta1",
        "ClusterProfile",
        "clusterprofiles",
        None,
    );
    let selector = kube::api::ListParams::default()
        .labels("eventtrigger.lib.projectsveltos.io/eventtriggername=service-network-policy");
    let profile = hop("the ClusterProfile", || async {
        Ok(profiles.list(&selector).await?.items.into_iter().next())
    })
    .await?;
    println!(
        "  4. manager: ClusterProfile {} and its instantiated ConfigMap in projectsveltos ({})",
        profile.metadata.name.unwrap_or_default(),
        millis(start)
    );

    let policies = dynamic(
        &managed,
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        Some("default"),
    );
    hop("the NetworkPolicy", || async {
        Ok(policies.get_opt("front-my-service").await?)
    })
    .await?;
    println!(
        "  5. deployer: NetworkPolicy default/front-my-service is in cluster-1 ({})",
        millis(start)
    );
    println!(
        "  see it:   kubectl --kubeconfig {} get networkpolicy front-my-service -o yaml",
        kubeconfig(sandbox, "cluster-1")
    );
    println!(
        "  undo it:  kubectl --kubeconfig {} delete service my-service",
        kubeconfig(sandbox, "cluster-1")
    );
    Ok(())
}

fn kubeconfig(sandbox: &sandbox::Sandbox, cluster: &str) -> String {
    sandbox
        .cluster(cluster)
        .and_then(|c| c.kubeconfig.as_deref())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| format!("{cluster}.kubeconfig"))
}
