//! `uninstall`: takes sveltos-events off the management cluster in the order that leaves no
//! add-on behind: the EventTriggers first (the manager withdraws their ClusterProfiles and the
//! deployer the add-ons), then the controllers and their RBAC, and with `--crds` the CRDs and
//! every Sveltos object. Run again after an interruption, it finishes the job.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, bail};
use api::labels::{CLUSTER_PROFILE_NAME_LABEL, EVENT_TRIGGER_NAME_LABEL};
use api::v1alpha1::EventBasedAddOn;
use api::v1beta1::{ClusterProfile, ClusterSummary, EventTrigger};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::ApiResource;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::apply::{Applier, describe, in_words};
use crate::connect::ClusterArgs;
use crate::manifests::{self, MANAGED_BY, Values};
use crate::version;

/// Flags of `uninstall`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events uninstall\n  \
    kubectl sveltos-events uninstall --crds --yes")]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Namespace of the controllers (default: where they are found).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Also delete the CRDs, and with them every Sveltos object (EventSources, EventReports,
    /// ClusterProfiles, SveltosClusters, ...), and the controllers' namespace.
    #[arg(long)]
    crds: bool,
    /// Do not ask before deleting the CRDs.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Go on when the controllers are not running, leaving behind what they would withdraw.
    #[arg(long)]
    force: bool,
    /// How long to wait in all, e.g. `90s`, `5m`.
    #[arg(long, default_value = "5m", value_parser = clusters::process::parse_duration)]
    timeout: Duration,
}

/// Runs `uninstall`.
pub async fn run(args: Args, out: &mut impl Write) -> anyhow::Result<()> {
    let (client, url, _) = args.cluster.connect().await?;
    let deadline = Instant::now() + args.timeout;
    let found = version::installed(&client).await?;
    let namespace = version::namespace_of(args.namespace.as_deref(), &found);
    crate::install::validate_name("--namespace", &namespace)?;
    if args.crds && !args.yes {
        confirm(&namespace)?;
    }
    writeln!(
        out,
        "uninstalling sveltos-events from {url} (namespace {namespace})"
    )?;
    let manager = version::find(&found, &namespace, manifests::MANAGER);
    let running = manager.is_some_and(version::available);
    // The built-in deployer runs unless the manager was told --no-deployer.
    let deployer = manager.is_some_and(|m| {
        !version::container_args(m)
            .iter()
            .any(|a| a == "--no-deployer")
    });
    withdraw_triggers(&client, running, args.force, deadline, out, deployer).await?;
    if args.crds {
        withdraw_profiles(&client, running && deployer, args.force, deadline, out).await?;
    }
    remove_controllers(&client, &namespace, args.crds, deadline, out).await?;
    if args.crds {
        remove_crds(&client, deadline, out).await?;
        let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone());
        delete_one(
            &namespaces,
            &namespace,
            &format!("namespace/{namespace}"),
            out,
        )
        .await?;
        wait_for("the namespace to be deleted", deadline, out, async || {
            Ok(usize::from(
                namespaces
                    .get_opt(&namespace)
                    .await
                    .map_err(in_words)?
                    .is_some(),
            ))
        })
        .await?;
    } else {
        writeln!(
            out,
            "the CRDs and the Sveltos objects stay (EventSources, SveltosClusters, ...): \
             `uninstall --crds` removes them"
        )?;
    }
    writeln!(out, "sveltos-events is uninstalled")?;
    Ok(())
}

/// Asks on the terminal before `--crds` deletes everything.
fn confirm(namespace: &str) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!("--crds deletes every Sveltos object in the cluster; confirm with --yes");
    }
    eprint!(
        "--crds deletes the CRDs and every Sveltos object in the cluster (EventSources, \
         EventReports, ClusterProfiles, SveltosClusters; the clusters' kubeconfig Secrets \
         stay) and namespace {namespace} with everything in it. Type 'yes' to go on: "
    );
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    if answer.trim() != "yes" {
        bail!("uninstall cancelled: nothing was changed");
    }
    Ok(())
}

async fn names<K>(api: &Api<K>, labels: Option<&str>) -> anyhow::Result<BTreeSet<String>>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut params = ListParams::default();
    if let Some(selector) = labels {
        params = params.labels(selector);
    }
    let list = api.list(&params).await.map_err(in_words)?;
    Ok(list
        .items
        .iter()
        .filter_map(|o| o.meta().name.clone())
        .collect())
}

/// Waits until `left()` is zero, saying what is left whenever it changes.
async fn wait_for(
    what: &str,
    deadline: Instant,
    out: &mut impl Write,
    mut left: impl AsyncFnMut() -> anyhow::Result<usize>,
) -> anyhow::Result<()> {
    let mut last = None;
    loop {
        let n = left().await?;
        if n == 0 {
            return Ok(());
        }
        if last != Some(n) {
            writeln!(out, "waiting for {what}: {n} left")?;
            out.flush()?;
            last = Some(n);
        }
        if Instant::now() >= deadline {
            bail!(
                "still waiting for {what} ({n} left) when --timeout ran out; run uninstall \
                 again to go on"
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Deletes every EventBasedAddOn and EventTrigger and waits until the manager has withdrawn
/// them (their finalizer gone), their generated ClusterProfiles, and, when the deployer runs,
/// those profiles' ClusterSummaries (the add-ons withdrawn from the clusters).
async fn withdraw_triggers(
    client: &Client,
    running: bool,
    force: bool,
    deadline: Instant,
    out: &mut impl Write,
    deployer: bool,
) -> anyhow::Result<()> {
    let addons: Api<EventBasedAddOn> = Api::all(client.clone());
    let triggers: Api<EventTrigger> = Api::all(client.clone());
    let profiles: Api<ClusterProfile> = Api::all(client.clone());
    let generated = names(&profiles, Some(EVENT_TRIGGER_NAME_LABEL)).await?;
    // A cluster without the v1alpha1 CRD (uninstalled with --crds before) has no addons.
    let addon_names = names(&addons, None).await.unwrap_or_default();
    let trigger_names = names(&triggers, None).await?;
    if trigger_names.is_empty() && addon_names.is_empty() && generated.is_empty() {
        writeln!(out, "no EventTriggers to withdraw")?;
        return Ok(());
    }
    if !running && !force {
        bail!(
            "the manager is not running, so deleting the {} EventTriggers now would leave \
             their {} ClusterProfiles and the add-ons they deployed behind; start it again \
             (`kubectl sveltos-events check` says what is wrong), or pass --force to leave \
             them",
            trigger_names.len(),
            generated.len()
        );
    }
    writeln!(
        out,
        "deleting {} EventTriggers ({} EventBasedAddOns); the manager withdraws their {} \
         ClusterProfiles",
        trigger_names.len(),
        addon_names.len(),
        generated.len()
    )?;
    for name in &addon_names {
        delete_quiet(&addons, name).await?;
    }
    for name in &trigger_names {
        delete_quiet(&triggers, name).await?;
    }
    if !running {
        // Nobody will remove the finalizers: remove them, leaving what they guarded.
        for name in &trigger_names {
            let patch = json!({"metadata": {"finalizers": null}});
            match triggers
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) | Err(kube::Error::Api(_)) => {}
                Err(e) => return Err(in_words(e)),
            }
        }
        writeln!(
            out,
            "--force: the manager is not running; {} ClusterProfiles and their add-ons are left \
             behind",
            generated.len()
        )?;
        return Ok(());
    }
    wait_for(
        "the EventTriggers to be withdrawn",
        deadline,
        out,
        async || Ok(names(&triggers, None).await?.len()),
    )
    .await?;
    wait_for(
        "the generated ClusterProfiles to go",
        deadline,
        out,
        async || {
            Ok(names(&profiles, Some(EVENT_TRIGGER_NAME_LABEL))
                .await?
                .len())
        },
    )
    .await?;
    if deployer {
        let summaries: Api<ClusterSummary> = Api::all(client.clone());
        wait_for(
            "the add-ons to be withdrawn (ClusterSummaries)",
            deadline,
            out,
            async || {
                let list = summaries
                    .list(&ListParams::default())
                    .await
                    .map_err(in_words)?;
                Ok(list
                    .items
                    .iter()
                    .filter(|s| {
                        s.metadata
                            .labels
                            .as_ref()
                            .and_then(|l| l.get(CLUSTER_PROFILE_NAME_LABEL))
                            .is_some_and(|p| generated.contains(p))
                    })
                    .count())
            },
        )
        .await?;
    }
    writeln!(out, "every EventTrigger and its add-ons withdrawn")?;
    Ok(())
}

/// With `--crds`: deletes every ClusterProfile and waits until the deployer has withdrawn
/// their add-ons (their ClusterSummaries gone).
async fn withdraw_profiles(
    client: &Client,
    deployer_running: bool,
    force: bool,
    deadline: Instant,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let profiles: Api<ClusterProfile> = Api::all(client.clone());
    let all = names(&profiles, None).await?;
    if all.is_empty() {
        return Ok(());
    }
    if !deployer_running && !force {
        bail!(
            "the deployer is not running, so deleting the {} ClusterProfiles now would leave \
             their add-ons in the clusters; start it again, or pass --force to leave them",
            all.len()
        );
    }
    writeln!(out, "deleting {} ClusterProfiles", all.len())?;
    for name in &all {
        delete_quiet(&profiles, name).await?;
    }
    if deployer_running {
        let summaries: Api<ClusterSummary> = Api::all(client.clone());
        wait_for(
            "the add-ons to be withdrawn (ClusterSummaries)",
            deadline,
            out,
            async || Ok(names(&summaries, None).await?.len()),
        )
        .await?;
    }
    Ok(())
}

/// Deletes `name`, a NotFound being as good as done.
async fn delete_quiet<K>(api: &Api<K>, name: &str) -> anyhow::Result<bool>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
        Err(e) => Err(in_words(e)).with_context(|| format!("deleting {name}")),
    }
}

/// Deletes one rendered object (a kind the cluster no longer serves has none left).
async fn delete_object(
    applier: &mut Applier,
    object: &Value,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let Ok(api) = applier.api_for(object).await else {
        return Ok(());
    };
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    delete_one(&api, name, &describe(object), out).await
}

/// Deletes `name` and says so (nothing when it was already gone).
async fn delete_one<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    out: &mut impl Write,
) -> anyhow::Result<()>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    if delete_quiet(api, name).await? {
        writeln!(out, "{what} deleted")?;
    }
    Ok(())
}

/// Deletes what install created besides the CRDs and namespaces: the Deployments first, and
/// once their pods are gone the rest, with what the manager made at run time (its webhook
/// Secret and leader Leases, which a stopping pod could otherwise write again).
async fn remove_controllers(
    client: &Client,
    namespace: &str,
    crds: bool,
    deadline: Instant,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut values = Values::defaults(manifests::VERSION);
    values.namespace = namespace.to_owned();
    let objects = manifests::render(&values)?;
    let kept = ["CustomResourceDefinition", "Namespace"];
    let (deployments, rest): (Vec<&Value>, Vec<&Value>) = objects
        .iter()
        .rev()
        .filter(|o| !kept.contains(&o["kind"].as_str().unwrap_or_default()))
        .partition(|o| o["kind"] == "Deployment");
    let mut applier = Applier::new(client.clone(), false);
    for object in deployments {
        delete_object(&mut applier, object, out).await?;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let (key, value) = manifests::PART_OF;
    let selector = format!("{key}={value}");
    wait_for("the controller pods to stop", deadline, out, async || {
        Ok(names(&pods, Some(&selector)).await?.len())
    })
    .await?;
    for object in rest {
        delete_object(&mut applier, object, out).await?;
    }
    let secret = controller::webhook::SECRET;
    delete_one(
        &Api::<Secret>::namespaced(client.clone(), namespace),
        secret,
        &format!("secret/{secret}"),
        out,
    )
    .await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let prefix = controller::leader::lease_name("");
    for name in names(&leases, None).await? {
        if name == prefix || name.starts_with(&format!("{prefix}-")) {
            delete_one(
                &leases,
                &name,
                &format!("lease.coordination.k8s.io/{name}"),
                out,
            )
            .await?;
        }
    }
    if !crds {
        writeln!(
            out,
            "namespace {namespace} stays (it may hold your objects)"
        )?;
    }
    Ok(())
}

/// Deletes the CRDs install made, first lifting the finalizers of their remaining objects
/// (the controllers that would remove them are gone), and waits until they are gone.
async fn remove_crds(
    client: &Client,
    deadline: Instant,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let (key, value) = MANAGED_BY;
    let ours = crds
        .list(&ListParams::default().labels(&format!("{key}={value}")))
        .await
        .map_err(in_words)?;
    for crd in &ours.items {
        let name = crd.metadata.name.clone().unwrap_or_default();
        lift_finalizers(client, crd).await?;
        delete_one(
            &crds,
            &name,
            &format!("customresourcedefinition/{name}"),
            out,
        )
        .await?;
    }
    let names: Vec<String> = ours
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    wait_for("the CRDs to be deleted", deadline, out, async || {
        let mut left = 0;
        for name in &names {
            if crds.get_opt(name).await.map_err(in_words)?.is_some() {
                left += 1;
            }
        }
        Ok(left)
    })
    .await
}

/// Removes the Sveltos finalizers (`*projectsveltos.io*`) of every object of `crd`.
async fn lift_finalizers(client: &Client, crd: &CustomResourceDefinition) -> anyhow::Result<()> {
    let spec = &crd.spec;
    let Some(version) = spec.versions.iter().find(|v| v.storage) else {
        return Ok(());
    };
    let resource = ApiResource {
        group: spec.group.clone(),
        version: version.name.clone(),
        api_version: format!("{}/{}", spec.group, version.name),
        kind: spec.names.kind.clone(),
        plural: spec.names.plural.clone(),
    };
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let list = match all.list(&ListParams::default()).await {
        Ok(list) => list,
        Err(_) => return Ok(()),
    };
    for object in list.items {
        let finalizers = object.metadata.finalizers.clone().unwrap_or_default();
        let kept: Vec<&String> = finalizers
            .iter()
            .filter(|f| !f.contains("projectsveltos.io"))
            .collect();
        if kept.len() == finalizers.len() {
            continue;
        }
        let api: Api<DynamicObject> = match &object.metadata.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let name = object.metadata.name.clone().unwrap_or_default();
        let patch = json!({"metadata": {"finalizers": kept}});
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => {
                return Err(in_words(e)).with_context(|| format!("lifting finalizers of {name}"));
            }
        }
    }
    Ok(())
}
