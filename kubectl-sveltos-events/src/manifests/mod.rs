//! The install manifests: every CRD of `api/crds` and the controllers (namespaces, service
//! accounts, least-privilege RBAC, Deployments, the webhook Service), rendered from
//! `controllers.yaml` with minijinja. `install` applies them; `install --export` prints them.

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};

/// The template of everything but the CRDs.
const CONTROLLERS: &str = include_str!("controllers.yaml");
/// One controller's Deployment, included by the other two.
const DEPLOYMENT: &str = include_str!("deployment.yaml");
/// The spoke-mode agent in a managed cluster.
const SPOKE: &str = include_str!("spoke.yaml");

/// The plugin's version, which is also the default version of the controllers it installs.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where the controllers' image is published; `--image` overrides it.
pub const IMAGE_REPOSITORY: &str = "ghcr.io/sveltos-events/sveltos-events";

/// The manager's container command, Deployment, ServiceAccount and Service (the one the
/// CRDs' conversion webhook names).
pub const MANAGER: &str = api::crd::CONVERSION_SERVICE;
/// The agent's container command and ServiceAccount.
pub const AGENT: &str = "sveltos-events-agent";

/// Labels on every object install writes; `uninstall` finds them by the first two.
pub const PART_OF: (&str, &str) = ("app.kubernetes.io/part-of", "sveltos-events");
/// See [`PART_OF`].
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kubectl-sveltos-events");

/// The label recording which version wrote an object (the CRDs and the controllers).
pub const VERSION_LABEL: &str = "app.kubernetes.io/version";

/// Each controller's memory limit unless `install` is told otherwise.
pub const MEMORY_LIMIT: &str = "512Mi";
/// The memory each controller requests (a limit may not be lower).
pub const MEMORY_REQUEST: &str = "128Mi";

/// What the manifests are rendered with (install's flags).
#[derive(Debug, Clone)]
pub struct Values {
    /// Namespace of the controllers, their Service, Lease and webhook Secret.
    pub namespace: String,
    /// The controllers' image.
    pub image: String,
    /// The version recorded in `app.kubernetes.io/version`.
    pub version: String,
    /// Replicas of the manager (leader election keeps one acting).
    pub replicas: u32,
    /// The shard the manager handles (`--shard-key`); empty for the default shard.
    pub shard_key: String,
    /// Whether the manager deploys ClusterProfiles itself (else Sveltos' addon-controller).
    pub deployer: bool,
    /// Where the agent evaluates EventSources for clusters registered from now on.
    pub agent_mode: AgentMode,
    /// The manager's memory limit (a Kubernetes quantity).
    pub manager_memory: String,
    /// The agent's memory limit (a Kubernetes quantity).
    pub agent_memory: String,
}

/// Where a cluster's EventSources are evaluated (`--agent-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AgentMode {
    /// By the agent in the management cluster, through the registered kubeconfig: nothing
    /// runs in managed clusters.
    #[default]
    Hub,
    /// By an agent `register cluster` deploys in each managed cluster; the hub agent relays.
    Spoke,
}

impl AgentMode {
    /// The mode recorded on a Deployment's annotations (hub when absent).
    pub fn of(annotations: Option<&std::collections::BTreeMap<String, String>>) -> Self {
        match annotations.and_then(|a| a.get(api::labels::AGENT_MODE_ANNOTATION)) {
            Some(mode) if mode == api::labels::AGENT_MODE_SPOKE => AgentMode::Spoke,
            _ => AgentMode::Hub,
        }
    }

    fn word(self) -> &'static str {
        match self {
            AgentMode::Hub => "hub",
            AgentMode::Spoke => api::labels::AGENT_MODE_SPOKE,
        }
    }
}

impl Values {
    /// The values for `version` with every other flag at its default.
    pub fn defaults(version: &str) -> Self {
        Values {
            namespace: api::labels::SVELTOS_NAMESPACE.to_owned(),
            image: format!("{IMAGE_REPOSITORY}:v{version}"),
            version: version.to_owned(),
            replicas: 1,
            shard_key: String::new(),
            deployer: true,
            agent_mode: AgentMode::Hub,
            manager_memory: MEMORY_LIMIT.to_owned(),
            agent_memory: MEMORY_LIMIT.to_owned(),
        }
    }
}

#[derive(Serialize)]
struct Controller {
    name: &'static str,
    container: &'static str,
    args: Vec<String>,
    replicas: u32,
    recreate: bool,
    ports: Value,
    annotations: Value,
    memory: String,
}

#[derive(Serialize)]
struct Binding {
    name: &'static str,
    account: &'static str,
}

#[derive(Serialize)]
struct RoleBinding {
    name: &'static str,
    namespace: String,
    accounts: Vec<&'static str>,
}

/// Every object to install, in apply order: CRDs, then namespaces, accounts, RBAC, Service and
/// Deployments.
pub fn render(values: &Values) -> anyhow::Result<Vec<Value>> {
    let crds = api::crd::all().context("generating the CRDs")?;
    // The CRDs the manager's webhook converts: it may write their CA bundle, and only theirs.
    let converted: Vec<String> = crds
        .iter()
        .filter(|crd| {
            crd.spec
                .conversion
                .as_ref()
                .is_some_and(|c| c.strategy == "Webhook")
        })
        .filter_map(|crd| crd.metadata.name.clone())
        .collect();
    let mut objects = Vec::new();
    for crd in crds {
        let mut crd = serde_json::to_value(&crd).context("encoding a CRD")?;
        if let Some(service) = crd.pointer_mut("/spec/conversion/webhook/clientConfig/service") {
            service["namespace"] = json!(values.namespace);
        }
        let labels = &mut crd["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        for (key, value) in [PART_OF, MANAGED_BY] {
            labels[key] = json!(value);
        }
        labels[VERSION_LABEL] = json!(values.version);
        objects.push(crd);
    }
    objects.extend(controllers(values, &converted)?);
    Ok(objects)
}

fn controllers(values: &Values, converted_crds: &[String]) -> anyhow::Result<Vec<Value>> {
    let sveltos_namespace = api::labels::SVELTOS_NAMESPACE;
    let mut manager_args = vec![
        "--json-logs".to_owned(),
        "--http-addr=0.0.0.0:8080".to_owned(),
        "--webhook-addr=0.0.0.0:9443".to_owned(),
    ];
    if !values.shard_key.is_empty() {
        manager_args.push(format!("--shard-key={}", values.shard_key));
    }
    if !values.deployer {
        manager_args.push("--no-deployer".to_owned());
    }
    // With `protocol`, a key of the list, for the reason the template gives at the Service.
    let port =
        |name: &str, port: u16| json!({"name": name, "containerPort": port, "protocol": "TCP"});
    let controllers = vec![
        Controller {
            name: MANAGER,
            container: "manager",
            args: manager_args,
            replicas: values.replicas,
            recreate: false,
            ports: json!([port("http", 8080), port("webhook", 9443)]),
            annotations: json!({}),
            memory: values.manager_memory.clone(),
        },
        Controller {
            name: AGENT,
            container: "agent",
            args: vec![
                "--mode=hub".to_owned(),
                "--json-logs".to_owned(),
                "--http-addr=0.0.0.0:8081".to_owned(),
            ],
            replicas: 1,
            recreate: true,
            ports: json!([port("http", 8081)]),
            annotations: json!({api::labels::AGENT_MODE_ANNOTATION: values.agent_mode.word()}),
            memory: values.agent_memory.clone(),
        },
    ];
    let mut cluster_roles = vec![
        Binding {
            name: MANAGER,
            account: MANAGER,
        },
        Binding {
            name: AGENT,
            account: AGENT,
        },
    ];
    if values.deployer {
        cluster_roles.push(Binding {
            name: "sveltos-events-deployer",
            account: MANAGER,
        });
    }
    let roles = vec![
        RoleBinding {
            name: MANAGER,
            namespace: values.namespace.clone(),
            accounts: vec![MANAGER],
        },
        RoleBinding {
            name: "sveltos-events-manager-generated",
            namespace: sveltos_namespace.to_owned(),
            accounts: vec![MANAGER],
        },
        RoleBinding {
            name: "sveltos-events-events",
            namespace: "default".to_owned(),
            accounts: vec![MANAGER, AGENT],
        },
    ];
    render_template(
        "controllers.yaml",
        json!({
            "namespace": values.namespace,
            "sveltos_namespace": sveltos_namespace,
            "image": values.image,
            "version": values.version,
            "memory_request": MEMORY_REQUEST,
            "lease": controller::leader::lease_name(&values.shard_key),
            "webhook_secret": controller::webhook::SECRET,
            "converted_crds": converted_crds,
            "deployer": values.deployer,
            "controllers": controllers,
            "cluster_roles": cluster_roles,
            "roles": roles,
        }),
    )
}

/// The spoke-mode agent for the managed cluster `cluster`, running `image` at `version`.
pub fn render_spoke(image: &str, version: &str, cluster: &str) -> anyhow::Result<Vec<Value>> {
    let agent = Controller {
        name: AGENT,
        container: "agent",
        args: vec![
            "--mode=spoke".to_owned(),
            "--json-logs".to_owned(),
            format!("--cluster-name={cluster}"),
            "--http-addr=0.0.0.0:8081".to_owned(),
        ],
        replicas: 1,
        recreate: true,
        ports: json!([{"name": "http", "containerPort": 8081, "protocol": "TCP"}]),
        annotations: json!({api::labels::AGENT_MODE_ANNOTATION: AgentMode::Spoke.word()}),
        memory: MEMORY_LIMIT.to_owned(),
    };
    render_template(
        "spoke.yaml",
        json!({
            "namespace": api::labels::SVELTOS_NAMESPACE,
            "image": image,
            "version": version,
            "memory_request": MEMORY_REQUEST,
            "controllers": [agent],
        }),
    )
}

/// Renders one of the templates with `context` into its objects.
fn render_template(name: &str, context: Value) -> anyhow::Result<Vec<Value>> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    for (template, text) in [
        ("controllers.yaml", CONTROLLERS),
        ("deployment.yaml", DEPLOYMENT),
        ("spoke.yaml", SPOKE),
    ] {
        env.add_template(template, text)
            .with_context(|| format!("parsing the template {template}"))?;
    }
    let text = env
        .get_template(name)
        .and_then(|t| t.render(minijinja::Value::from(minijinja::value::Serde(context))))
        .with_context(|| format!("rendering the template {name}"))?;
    let objects = api::load::documents(&text).context("reading the rendered manifests")?;
    Ok(objects.into_iter().filter(|o| !o.is_null()).collect())
}

/// The objects as one multi-document YAML stream, as `kubectl apply -f -` takes it.
pub fn to_yaml(objects: &[Value]) -> anyhow::Result<String> {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object).context("writing YAML")?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
