//! The whole sveltos-events system inside the sandbox: the CRDs, every managed cluster
//! registered as a SveltosCluster, and the agent (hub mode) and manager running in-process,
//! each as the ServiceAccount `install` makes for it, with the rights `install` grants.

use std::collections::BTreeMap;

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use tokio::task::JoinHandle;

use crate::apply::{Applier, FIELD_MANAGER};
use crate::manifests::{self, Values};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::PostParams;

/// How long the in-process controllers' tokens last (the sandbox rarely runs a day).
const TOKEN_SECONDS: i64 = 7 * 86_400;

/// The install manifests' namespaces, accounts, roles and bindings, applied to the management
/// cluster so the in-process controllers have exactly the rights a real install gives them.
/// Returns the manager's and the agent's clients, each authenticated as its account.
async fn controller_accounts(
    handle: &sandbox::ClusterHandle,
    mgmt: &Client,
) -> anyhow::Result<(Client, Client)> {
    let values = Values::defaults(manifests::VERSION);
    let mut applier = Applier::new(mgmt.clone(), false);
    for object in manifests::render(&values)? {
        let kind = object["kind"].as_str().unwrap_or_default();
        let rbac = matches!(
            kind,
            "Namespace"
                | "ServiceAccount"
                | "ClusterRole"
                | "ClusterRoleBinding"
                | "Role"
                | "RoleBinding"
        );
        if rbac {
            applier.apply(&object).await?;
        }
    }
    let manager = client_as(handle, mgmt, &values.namespace, manifests::MANAGER).await?;
    let agent = client_as(handle, mgmt, &values.namespace, manifests::AGENT).await?;
    Ok((manager, agent))
}

/// A client of the cluster authenticated as the ServiceAccount `namespace/account`, with a
/// token from the TokenRequest API.
async fn client_as(
    handle: &sandbox::ClusterHandle,
    mgmt: &Client,
    namespace: &str,
    account: &str,
) -> anyhow::Result<Client> {
    let accounts: Api<ServiceAccount> = Api::namespaced(mgmt.clone(), namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(TOKEN_SECONDS),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let issued = accounts
        .create_token_request(account, &PostParams::default(), &request)
        .await
        .with_context(|| format!("requesting a token for ServiceAccount {namespace}/{account}"))?;
    let token = issued
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .with_context(|| {
            format!("the token request for {namespace}/{account} returned no token")
        })?;
    let mut config = handle.config()?;
    config.auth_info.token = Some(token.into());
    clusters::client::client(config).context("building a client for the controller's account")
}

/// Installs (or updates) every sveltos-events CRD.
pub async fn install_crds(mgmt: &Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(mgmt.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for crd in api::crd::all().context("generating the CRDs")? {
        let name = crd.metadata.name.clone().unwrap_or_default();
        crds.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .with_context(|| format!("installing CRD {name}"))?;
    }
    Ok(())
}

/// Registers a cluster: its kubeconfig Secret `<name>-sveltos-kubeconfig` and a SveltosCluster
/// carrying `labels`, both in `namespace` (Sveltos' `register cluster`).
pub async fn register_cluster(
    mgmt: &Client,
    namespace: &str,
    name: &str,
    labels: BTreeMap<String, String>,
    kubeconfig: &str,
) -> anyhow::Result<()> {
    clusters::registry::register_cluster(mgmt, FIELD_MANAGER, namespace, name, labels, kubeconfig)
        .await
        .with_context(|| format!("registering cluster {namespace}/{name}"))
}

/// The running controllers; dropping it stops them.
pub struct Controllers {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Controllers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Labels of the sandbox's n-th managed cluster (1-based), chosen so that every seed scenario
/// works as written: `cluster-1` is `env=fv, dep=eng, federationid=cluster-a`, `cluster-2` is
/// `env=production, federationid=cluster-b`, later ones `env=fv`. Every cluster also carries
/// `sandbox.sveltos-events.io/cluster=<name>`.
pub fn sandbox_labels(index: usize, name: &str) -> BTreeMap<String, String> {
    let scenario: &[(&str, &str)] = match index {
        1 => &[("env", "fv"), ("dep", "eng"), ("federationid", "cluster-a")],
        2 => &[("env", "production"), ("federationid", "cluster-b")],
        _ => &[("env", "fv")],
    };
    let mut labels: BTreeMap<String, String> = scenario
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    labels.insert(
        "sandbox.sveltos-events.io/cluster".to_owned(),
        name.to_owned(),
    );
    labels
}

/// Installs the CRDs, registers the sandbox's managed clusters in namespace `default` with
/// [`sandbox_labels`], and starts the agent, the manager and the deployer. Returns the
/// registered clusters' labels, for the user.
pub async fn start(
    sandbox: &sandbox::Sandbox,
) -> anyhow::Result<(Controllers, Vec<(String, BTreeMap<String, String>)>)> {
    let mgmt_handle = sandbox
        .cluster("mgmt")
        .context("the sandbox has no mgmt cluster")?;
    let mgmt = mgmt_handle
        .client()
        .context("connecting to the mgmt cluster")?;
    // The CRDs convert v1alpha1 <-> v1beta1 by webhook; the sandbox runs that conversion
    // in-process.
    for cluster in sandbox.clusters() {
        cluster
            .store
            .set_converter(std::sync::Arc::new(api::convert::convert));
    }
    install_crds(&mgmt).await?;
    let (manager_client, agent_client) = controller_accounts(mgmt_handle, &mgmt).await?;
    let mut registered = Vec::new();
    for (index, cluster) in sandbox
        .clusters()
        .iter()
        .filter(|c| c.name != "mgmt")
        .enumerate()
    {
        let labels = sandbox_labels(index + 1, &cluster.name);
        register_cluster(
            &mgmt,
            "default",
            &cluster.name,
            labels.clone(),
            &cluster.kubeconfig_yaml(),
        )
        .await?;
        registered.push((cluster.name.clone(), labels));
    }
    // The same runs as the binaries', without endpoints or leader election.
    let agent = tokio::spawn(async move {
        let options = agent::run::Options {
            client: agent_client,
            mode: agent::run::Mode::Hub {
                capi_onboard_annotation: None,
            },
            http_addr: None,
        };
        if let Err(error) = agent::run::run(options, std::future::pending()).await {
            tracing::error!(%error, "the agent stopped");
        }
    });
    let manager = tokio::spawn(async move {
        let options = controller::run::Options {
            client: manager_client,
            http_addr: None,
            webhook: None,
            leader: None,
            scope: Default::default(),
            capi_onboard_annotation: None,
            no_deployer: false,
        };
        if let Err(error) = controller::run::run(options, std::future::pending()).await {
            tracing::error!(%error, "the manager stopped");
        }
    });
    Ok((
        Controllers {
            tasks: vec![agent, manager],
        },
        registered,
    ))
}
