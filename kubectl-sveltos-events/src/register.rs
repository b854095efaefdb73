//! `register cluster` and `deregister cluster`: a managed cluster's kubeconfig Secret and
//! SveltosCluster in the management cluster, and optionally a ServiceAccount in the managed
//! cluster whose token the controllers use instead of the user's own credentials.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use api::v1beta1::SveltosCluster;
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use crate::apply::{Applier, FIELD_MANAGER, in_words};
use crate::connect::ClusterArgs;
use crate::kubeconfig::{self, Picked};
use crate::manifests::{self, AgentMode, MANAGED_BY, PART_OF};

/// Where `--service-account` puts its account in the managed cluster.
pub const ACCOUNT_NAMESPACE: &str = api::labels::SVELTOS_NAMESPACE;
/// The ServiceAccount (and its token Secret's prefix) in the managed cluster.
pub const ACCOUNT: &str = "sveltos-events";
/// Its long-lived token's Secret, which the cluster fills in.
const TOKEN_SECRET: &str = "sveltos-events-token";
/// The ClusterRoleBinding that gives it its rights.
pub const ACCOUNT_BINDING: &str = "sveltos-events-managed-cluster";
/// The field manager of what `register` writes in a managed cluster.
const REGISTER_MANAGER: &str = "kubectl-sveltos-events-register";
/// Recorded on a SveltosCluster registered with `--service-account`: the account's
/// `namespace/name`, which `deregister` names.
pub const ACCOUNT_ANNOTATION: &str = "sveltos-events.io/service-account";

/// What `register` registers.
#[derive(Debug, clap::Subcommand)]
pub enum Register {
    /// Register a cluster: its kubeconfig Secret and its SveltosCluster.
    #[command(after_help = "Examples:\n  \
        kubectl sveltos-events register cluster -n fleet --name prod-eu \\\n      \
        --cluster-kubeconfig prod-eu.kubeconfig --labels env=production,region=eu\n  \
        kubectl sveltos-events register cluster -n fleet --name edge-1 \\\n      \
        --cluster-kubeconfig ~/.kube/config --cluster-context edge-1 --service-account")]
    Cluster(RegisterArgs),
}

/// What `deregister` removes.
#[derive(Debug, clap::Subcommand)]
pub enum Deregister {
    /// Remove a cluster's SveltosCluster and kubeconfig Secret (and, given the cluster's
    /// kubeconfig, the ServiceAccount `register --service-account` made there).
    #[command(after_help = "Example:\n  \
        kubectl sveltos-events deregister cluster -n fleet --name edge-1 \\\n      \
        --cluster-kubeconfig ~/.kube/config --cluster-context edge-1")]
    Cluster(DeregisterArgs),
}

/// The SveltosCluster a command names, and the management cluster it is in.
#[derive(Debug, clap::Args)]
pub struct Named {
    #[command(flatten)]
    mgmt: ClusterArgs,
    /// Namespace of the SveltosCluster in the management cluster.
    #[arg(short, long)]
    namespace: String,
    /// Name of the SveltosCluster.
    #[arg(long)]
    name: String,
}

/// Flags of `register cluster`.
#[derive(Debug, clap::Args)]
pub struct RegisterArgs {
    #[command(flatten)]
    cluster: Named,
    /// Kubeconfig of the cluster to register.
    #[arg(long)]
    cluster_kubeconfig: PathBuf,
    /// Context of --cluster-kubeconfig (default: its current context).
    #[arg(long)]
    cluster_context: Option<String>,
    /// The API server address the controllers reach the cluster at, when it differs from
    /// the kubeconfig's (e.g. https://kubernetes.default.svc to register the management
    /// cluster itself). Verification still uses the kubeconfig's address.
    #[arg(long)]
    cluster_server: Option<String>,
    /// Labels of the SveltosCluster, `k=v,k2=v2` (what EventTriggers select clusters by).
    #[arg(long, value_parser = parse_labels, default_value = "")]
    labels: Labels,
    /// Create a ServiceAccount in the cluster (bound to cluster-admin: the deployer applies
    /// any add-on, RBAC included) and register its token instead of your own credentials.
    #[arg(long)]
    service_account: bool,
    /// Where the cluster's EventSources are evaluated: `hub` (from the management cluster) or
    /// `spoke` (an agent deployed into the cluster now). Default: install's --agent-mode.
    #[arg(long, value_enum)]
    agent_mode: Option<AgentMode>,
    /// Register without checking that the cluster answers with the registered credentials.
    #[arg(long)]
    no_verify: bool,
    /// How long to wait for the ServiceAccount's token, e.g. `30s`.
    #[arg(long, default_value = "1m", value_parser = clusters::process::parse_duration)]
    timeout: Duration,
}

/// Flags of `deregister cluster`.
#[derive(Debug, clap::Args)]
pub struct DeregisterArgs {
    #[command(flatten)]
    cluster: Named,
    /// Kubeconfig of the cluster, to remove what register made there (the ServiceAccount of
    /// --service-account, the spoke agent).
    #[arg(long)]
    cluster_kubeconfig: Option<PathBuf>,
    /// Context of --cluster-kubeconfig.
    #[arg(long, requires = "cluster_kubeconfig")]
    cluster_context: Option<String>,
}

/// Labels as `--labels` gives them.
pub type Labels = BTreeMap<String, String>;

/// Parses `k=v,k2=v2` (empty: no labels); keys and values as Kubernetes allows them.
pub fn parse_labels(text: &str) -> Result<Labels, String> {
    let mut labels = Labels::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not key=value"))?;
        if let Some(problem) = sandbox::meta::label_key_problem(key) {
            return Err(format!("{key:?} is not a valid label key: {problem}"));
        }
        if !sandbox::meta::is_label_value(value) {
            return Err(format!(
                "{value:?} (label {key}) is not a valid label value"
            ));
        }
        labels.insert(key.to_owned(), value.to_owned());
    }
    Ok(labels)
}

/// Runs `register cluster`.
pub async fn register(args: RegisterArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let Named {
        mgmt,
        namespace,
        name,
    } = &args.cluster;
    crate::install::validate_name("--name", name)?;
    crate::install::validate_name("--namespace", namespace)?;
    let picked = kubeconfig::read(&args.cluster_kubeconfig, args.cluster_context.as_deref())?;
    // Checked before anything is written: the management cluster can take the registration.
    let (mgmt, mgmt_url, _) = mgmt.connect().await?;
    ready_for_clusters(&mgmt, namespace).await?;
    let agent = crate::version::installed(&mgmt)
        .await?
        .into_iter()
        .find(|c| c.deployment.ends_with(&format!("/{}", manifests::AGENT)))
        .ok_or_else(|| {
            anyhow!(
                "the management cluster runs no sveltos-events agent (run `kubectl \
                 sveltos-events install`)"
            )
        })?;
    let mode = args.agent_mode.unwrap_or(agent.agent_mode);
    let registered = if args.service_account {
        writeln!(
            out,
            "creating ServiceAccount {ACCOUNT_NAMESPACE}/{ACCOUNT} in {} (context {})",
            picked.server(),
            picked.context
        )?;
        out.flush()?;
        // Made with the user's own credentials, from here, where exec plugins run.
        let (token, ca) = account_token(&picked, args.timeout).await?;
        picked.with_token(&token, ca.as_deref())?
    } else {
        picked.clone().self_contained()?
    };
    if !args.no_verify {
        let version = verify(&registered).await.with_context(|| {
            format!(
                "cluster {} at {} does not answer with the credentials to register \
                 (--no-verify registers it anyway)",
                name,
                registered.server()
            )
        })?;
        writeln!(out, "cluster {} answers: Kubernetes {version}", name)?;
    }
    if mode == AgentMode::Spoke {
        let objects = manifests::render_spoke(&agent.image, &agent.version, name)?;
        let client = picked.client().await?;
        let mut applier = Applier::as_manager(client, REGISTER_MANAGER, false);
        for object in &objects {
            applier
                .apply(object)
                .await
                .with_context(|| format!("deploying the spoke agent into {}", picked.server()))?;
        }
        writeln!(
            out,
            "spoke agent {} deployed into {} ({} objects)",
            agent.image,
            picked.server(),
            objects.len()
        )?;
    }
    let mut to_register = registered;
    if let Some(server) = &args.cluster_server {
        to_register.cluster.server = Some(server.clone());
    }
    let text = kubeconfig::to_yaml(&to_register.document(name))?;
    let mut cluster = SveltosCluster::new(name, Default::default());
    cluster.metadata.namespace = Some(namespace.clone());
    cluster.metadata.labels = Some(args.labels.clone());
    let mut annotations = BTreeMap::new();
    if args.service_account {
        annotations.insert(
            ACCOUNT_ANNOTATION.to_owned(),
            format!("{ACCOUNT_NAMESPACE}/{ACCOUNT}"),
        );
    }
    if mode == AgentMode::Spoke {
        annotations.insert(
            api::labels::AGENT_MODE_ANNOTATION.to_owned(),
            api::labels::AGENT_MODE_SPOKE.to_owned(),
        );
    }
    annotations.insert(
        api::labels::KUBECONFIG_REVISION_ANNOTATION.to_owned(),
        revision(&text),
    );
    cluster.metadata.annotations = Some(annotations);
    let existed = Api::<SveltosCluster>::namespaced(mgmt.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(in_words)?
        .is_some();
    clusters::registry::register(&mgmt, FIELD_MANAGER, &cluster, &text)
        .await
        .map_err(in_words)
        .with_context(|| format!("registering cluster {}/{}", namespace, name))?;
    let how = if args.service_account {
        format!("as ServiceAccount {ACCOUNT_NAMESPACE}/{ACCOUNT}")
    } else {
        format!("with the credentials of context {}", picked.context)
    };
    writeln!(
        out,
        "sveltoscluster {}/{} {} in {mgmt_url}: {} {how}",
        namespace,
        name,
        if existed { "updated" } else { "registered" },
        to_register.server()
    )?;
    writeln!(
        out,
        "`kubectl sveltos-events check` shows when the agent has connected to it"
    )?;
    Ok(())
}

/// A short fingerprint of a kubeconfig, so the agent sees new credentials at once (SipHash
/// with fixed keys: stable for a given build, which is all a change marker needs).
fn revision(kubeconfig: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    kubeconfig.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// The management cluster serves SveltosClusters and has the namespace.
async fn ready_for_clusters(mgmt: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let gvk =
        kube::core::GroupVersionKind::gvk("lib.projectsveltos.io", "v1beta1", "SveltosCluster");
    if kube::discovery::pinned_kind(mgmt, &gvk).await.is_err() {
        bail!(
            "the management cluster does not serve SveltosClusters: sveltos-events is not \
             installed there (run `kubectl sveltos-events install`)"
        );
    }
    let found = Api::<Namespace>::all(mgmt.clone())
        .get_opt(namespace)
        .await
        .map_err(in_words)
        .with_context(|| format!("reading namespace {namespace}"))?;
    if found.is_none() {
        bail!(
            "namespace {namespace} does not exist in the management cluster (create it: \
             `kubectl create namespace {namespace}`)"
        );
    }
    Ok(())
}

/// The managed cluster's objects behind `--service-account`: namespace, account, binding and
/// token Secret, labelled as the plugin's.
fn account_objects() -> Vec<serde_json::Value> {
    let labels = json!({PART_OF.0: PART_OF.1, MANAGED_BY.0: MANAGED_BY.1});
    let meta = |name: &str, namespace: Option<&str>| {
        let mut meta = json!({"name": name, "labels": labels});
        if let Some(ns) = namespace {
            meta["namespace"] = json!(ns);
        }
        meta
    };
    let mut token_meta = meta(TOKEN_SECRET, Some(ACCOUNT_NAMESPACE));
    token_meta["annotations"] = json!({"kubernetes.io/service-account.name": ACCOUNT});
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ACCOUNT_NAMESPACE, None)}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": meta(ACCOUNT, Some(ACCOUNT_NAMESPACE))}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": meta(ACCOUNT_BINDING, None),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "cluster-admin"},
               "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT,
                             "namespace": ACCOUNT_NAMESPACE}]}),
        // After the account: a token Secret naming an absent account is deleted.
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
               "metadata": token_meta}),
    ]
}

/// Creates the account in the cluster `user` signs in to and waits for its long-lived token
/// (a `kubernetes.io/service-account-token` Secret, which the cluster fills in and which
/// does not expire: the controllers have no way to renew a TokenRequest's token). Returns
/// the token and the cluster's CA certificate.
async fn account_token(
    user: &Picked,
    timeout: Duration,
) -> anyhow::Result<(String, Option<Vec<u8>>)> {
    let client = user.client().await?;
    let mut applier = Applier::as_manager(client.clone(), REGISTER_MANAGER, false);
    for object in account_objects() {
        applier
            .apply(&object)
            .await
            .with_context(|| format!("in the cluster at {}", user.server()))?;
    }
    let secrets: Api<Secret> = Api::namespaced(client, ACCOUNT_NAMESPACE);
    let name = TOKEN_SECRET;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let secret = secrets.get_opt(name).await.map_err(in_words)?;
        let data = secret.and_then(|s| s.data).unwrap_or_default();
        if let Some(token) = data.get("token") {
            let token = String::from_utf8(token.0.clone())
                .map_err(|_| anyhow!("the token in Secret {name} is not text"))?;
            return Ok((token, data.get("ca.crt").map(|c| c.0.clone())));
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "the cluster did not fill in the token of Secret {ACCOUNT_NAMESPACE}/{name} \
                 within {timeout:?} (is kube-controller-manager running there?)"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Asks the cluster who the credentials are (a SelfSubjectAccessReview needs an
/// authenticated user, where `/version` answers anyone) and its version.
async fn verify(picked: &Picked) -> anyhow::Result<String> {
    let client = picked.client().await?;
    let check = async {
        let version = client.apiserver_version().await.map_err(in_words)?;
        let review: SelfSubjectAccessReview = serde_json::from_value(json!({
            "spec": {"resourceAttributes": {"verb": "list", "resource": "namespaces"}}}))?;
        let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(in_words)
            .context("asking the cluster what these credentials may do")?;
        if !answer.status.is_some_and(|s| s.allowed) {
            bail!(
                "these credentials may not even list namespaces; the agent needs to read the cluster"
            );
        }
        anyhow::Ok(version.git_version)
    };
    tokio::time::timeout(Duration::from_secs(15), check)
        .await
        .map_err(|_| anyhow!("no answer within 15s"))?
}

/// Runs `deregister cluster`.
pub async fn deregister(args: DeregisterArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let Named {
        mgmt,
        namespace,
        name,
    } = &args.cluster;
    let (mgmt, mgmt_url, _) = mgmt.connect().await?;
    let clusters: Api<SveltosCluster> = Api::namespaced(mgmt.clone(), namespace);
    let id = format!("{}/{}", namespace, name);
    let cluster = clusters
        .get_opt(name)
        .await
        .map_err(in_words)
        .with_context(|| format!("reading sveltoscluster {id}"))?;
    let annotations = cluster
        .as_ref()
        .and_then(|c| c.metadata.annotations.clone())
        .unwrap_or_default();
    let mut left = Vec::new();
    if let Some(account) = annotations.get(ACCOUNT_ANNOTATION) {
        left.push(format!(
            "ServiceAccount {account} and ClusterRoleBinding {ACCOUNT_BINDING}"
        ));
    }
    if AgentMode::of(Some(&annotations)) == AgentMode::Spoke {
        left.push(format!(
            "the spoke agent (deployment {ACCOUNT_NAMESPACE}/{})",
            manifests::AGENT
        ));
    }
    match &cluster {
        Some(cluster) => {
            let secret = cluster.kubeconfig_secret_name();
            clusters
                .delete(name, &DeleteParams::default())
                .await
                .map_err(in_words)
                .with_context(|| format!("deleting sveltoscluster {id}"))?;
            writeln!(out, "sveltoscluster {id} deleted from {mgmt_url}")?;
            let secrets: Api<Secret> = Api::namespaced(mgmt.clone(), namespace);
            match secrets.delete(&secret, &DeleteParams::default()).await {
                Ok(_) => writeln!(out, "secret {}/{secret} deleted", namespace)?,
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => {
                    return Err(in_words(e))
                        .with_context(|| format!("deleting secret {}/{secret}", namespace));
                }
            }
        }
        None => writeln!(out, "sveltoscluster {id} is not registered in {mgmt_url}")?,
    }
    match &args.cluster_kubeconfig {
        Some(path) => {
            let picked = kubeconfig::read(path, args.cluster_context.as_deref())?;
            remove_account(&picked, out).await?;
        }
        None if !left.is_empty() => writeln!(
            out,
            "note: {} stay in the cluster; pass --cluster-kubeconfig to remove them",
            left.join(" and ")
        )?,
        None => {}
    }
    Ok(())
}

/// Deletes what `register` created in the cluster `picked` signs in to: the ServiceAccount
/// of `--service-account` and the spoke agent.
async fn remove_account(picked: &Picked, out: &mut impl Write) -> anyhow::Result<()> {
    let client = picked.client().await?;
    let mut applier = Applier::new(client, false);
    let mut objects = account_objects();
    objects.extend(manifests::render_spoke("", manifests::VERSION, "")?);
    // The namespace stays: other things may live there.
    objects.retain(|o| o["kind"] != "Namespace");
    for object in objects.iter().rev() {
        let api = applier.api_for(object).await?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let what = crate::apply::describe(object);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => writeln!(out, "{what} deleted from {}", picked.server())?,
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(in_words(e)).with_context(|| format!("deleting {what}")),
        }
    }
    Ok(())
}
