//! `check`: a checklist of the installation's health (`--pre`: of what install needs), as
//! `flux check` gives one. Exit 0 healthy, 1 problems found, 2 could not check.

use std::collections::BTreeSet;
use std::io::Write;

use anyhow::Context;
use api::v1beta1::SveltosCluster;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::ApiResource;
use serde::Serialize;
use serde_json::{Value, json};

use crate::apply::{Applier, in_words};
use crate::connect::ClusterArgs;
use crate::manifests::{self, Values};
use crate::version;

/// How `check` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// The checklist, one line per check.
    Text,
    /// `{"healthy": .., "checks": [{"name", "status", "message"}]}`.
    Json,
}

/// Flags of `check`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events check --pre\n  \
    kubectl sveltos-events check -o json\n\n\
    Exit codes: 0 healthy, 1 problems found, 2 could not check.")]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Check what install needs, before installing: the server's version and your rights.
    #[arg(long)]
    pre: bool,
    /// Namespace of the controllers (default: where they are found).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    output: Output,
}

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Healthy.
    Ok,
    /// Worth knowing; not a failure.
    Warning,
    /// A problem.
    Failed,
    /// The check itself could not run.
    Error,
}

/// One line of the checklist.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: &'static str,
    /// How it came out.
    pub status: Status,
    /// What was found, in words.
    pub message: String,
}

impl Check {
    fn new(name: &'static str, status: Status, message: impl Into<String>) -> Self {
        Check {
            name,
            status,
            message: message.into(),
        }
    }

    /// A check that ran (`Ok(Ok)` healthy, `Ok(Err)` a problem) or could not (`Err`).
    fn from(name: &'static str, result: anyhow::Result<Result<String, String>>) -> Self {
        match result {
            Ok(Ok(message)) => Check::new(name, Status::Ok, message),
            Ok(Err(problem)) => Check::new(name, Status::Failed, problem),
            Err(error) => Check::new(name, Status::Error, format!("could not check: {error:#}")),
        }
    }
}

/// Runs `check`; returns the exit code.
pub async fn run(args: Args, out: &mut impl Write) -> anyhow::Result<u8> {
    let (client, url, server) = args.cluster.connect().await?;
    let mut checks = vec![server_version(&server)];
    if args.pre {
        let objects = manifests::render(&Values::defaults(manifests::VERSION))?;
        checks.push(Check::from(
            "rights",
            missing_rights(&client, &objects).await.map(|missing| {
                if missing.is_empty() {
                    Ok("you may create and update everything install writes".to_owned())
                } else {
                    Err(format!("install also needs to {}", missing.join("; ")))
                }
            }),
        ));
        checks.push(Check::from(
            "Sveltos' Go controllers",
            go_controllers(&client, true).await.map(|found| {
                if found.is_empty() {
                    Ok("none running".to_owned())
                } else {
                    Err(format!(
                        "{} runs here and would act on the same objects",
                        found.join(", ")
                    ))
                }
            }),
        ));
    } else {
        checks.extend(installation(&client, args.namespace.as_deref()).await);
    }
    let code = exit_code(&checks);
    match args.output {
        Output::Json => {
            let report = json!({"server": url, "healthy": code == 0, "checks": checks});
            writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        }
        Output::Text => {
            let what = if args.pre {
                "prerequisites"
            } else {
                "installation"
            };
            writeln!(out, "► checking the {what} in {url}")?;
            for check in &checks {
                let mark = match check.status {
                    Status::Ok => "✔",
                    Status::Warning => "!",
                    Status::Failed | Status::Error => "✗",
                };
                writeln!(out, "{mark} {}: {}", check.name, check.message)?;
            }
            let failed = checks.iter().filter(|c| c.status == Status::Failed).count();
            let unchecked = checks.iter().filter(|c| c.status == Status::Error).count();
            match code {
                0 => writeln!(out, "✔ all checks passed")?,
                1 => writeln!(out, "✗ {failed} of {} checks failed", checks.len())?,
                _ => writeln!(out, "✗ {unchecked} checks could not run")?,
            }
        }
    }
    Ok(code)
}

/// 1 when a check failed, else 2 when one could not run, else 0.
fn exit_code(checks: &[Check]) -> u8 {
    if checks.iter().any(|c| c.status == Status::Failed) {
        1
    } else if checks.iter().any(|c| c.status == Status::Error) {
        2
    } else {
        0
    }
}

fn server_version(server: &str) -> Check {
    let name = "Kubernetes";
    match crate::install::minor_version(server) {
        Some(minor) if minor >= crate::install::MIN_MINOR => Check::new(
            name,
            Status::Ok,
            format!("{server} >= 1.{}", crate::install::MIN_MINOR),
        ),
        Some(_) => Check::new(
            name,
            Status::Failed,
            format!(
                "{server}: sveltos-events needs 1.{} or later",
                crate::install::MIN_MINOR
            ),
        ),
        None => Check::new(
            name,
            Status::Error,
            format!("cannot read the version {server:?}"),
        ),
    }
}

/// What the caller may not do of what applying `objects` takes (`get`, `create` and `patch`
/// of each kind, where it goes), as `verb resource.group [in namespace]`.
pub async fn missing_rights(client: &Client, objects: &[Value]) -> anyhow::Result<Vec<String>> {
    let mut applier = Applier::new(client.clone(), true);
    let mut wanted = BTreeSet::new();
    for object in objects {
        let (resource, caps) = applier.resource_for(object).await?;
        let namespace = match caps.scope {
            kube::discovery::Scope::Namespaced => object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_owned(),
            kube::discovery::Scope::Cluster => String::new(),
        };
        for verb in ["get", "create", "patch"] {
            wanted.insert((
                resource.group.clone(),
                resource.plural.clone(),
                namespace.clone(),
                verb,
            ));
        }
    }
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    // Asked all at once: thirty round trips one after another are seconds on a far cluster.
    let answers =
        futures_util::future::join_all(wanted.iter().map(|(group, plural, namespace, verb)| {
            let reviews = reviews.clone();
            async move {
                let review: SelfSubjectAccessReview = serde_json::from_value(json!({
                    "spec": {"resourceAttributes": {
                        "group": group, "resource": plural, "verb": verb,
                        "namespace": namespace}}}))?;
                let answer = reviews
                    .create(&PostParams::default(), &review)
                    .await
                    .map_err(in_words)
                    .context("asking the API server what you may do (SelfSubjectAccessReview)")?;
                anyhow::Ok(answer.status.is_some_and(|s| s.allowed))
            }
        }))
        .await;
    // Verbs missing per (resource, namespace), in the order get, create, patch.
    let mut missing: Vec<((String, String), Vec<&str>)> = Vec::new();
    for ((group, plural, namespace, verb), allowed) in wanted.into_iter().zip(answers) {
        if allowed? {
            continue;
        }
        let resource = if group.is_empty() {
            plural
        } else {
            format!("{plural}.{group}")
        };
        let key = (resource, namespace);
        match missing.iter_mut().find(|(k, _)| *k == key) {
            Some((_, verbs)) => verbs.push(verb),
            None => missing.push((key, vec![verb])),
        }
    }
    let missing = missing
        .into_iter()
        .map(|((resource, namespace), mut verbs)| {
            verbs.sort_by_key(|v| ["get", "create", "patch"].iter().position(|w| w == v));
            let place = if namespace.is_empty() {
                String::new()
            } else {
                format!(" in {namespace}")
            };
            format!("{} {resource}{place}", verbs.join("/"))
        })
        .collect();
    Ok(missing)
}

/// Sveltos' own controllers that would act on the objects sveltos-events handles:
/// `event-manager` always, `addon-controller` when our deployer runs.
pub async fn go_controllers(client: &Client, deployer: bool) -> anyhow::Result<Vec<String>> {
    let deployments: Api<Deployment> = Api::all(client.clone());
    let mut names = vec!["event-manager"];
    if deployer {
        names.push("addon-controller");
    }
    let mut found = Vec::new();
    for name in names {
        let list = deployments
            .list(&ListParams::default().fields(&format!("metadata.name={name}")))
            .await
            .map_err(in_words)
            .context("looking for Sveltos' controllers")?;
        for d in list.items {
            found.push(format!(
                "deployment {}/{name}",
                d.metadata.namespace.unwrap_or_default()
            ));
        }
    }
    Ok(found)
}

/// The checks of an installation.
async fn installation(client: &Client, namespace: Option<&str>) -> Vec<Check> {
    let found = version::installed(client).await;
    let listed = found.as_deref().unwrap_or_default();
    let namespace = version::namespace_of(namespace, listed);
    let manager = version::find(listed, &namespace, manifests::MANAGER);
    let agent = version::find(listed, &namespace, manifests::AGENT);
    let shard = manager
        .and_then(|d| {
            version::container_args(d)
                .iter()
                .find_map(|a| a.strip_prefix("--shard-key=").map(str::to_owned))
        })
        .unwrap_or_default();
    let deployments = match &found {
        Ok(_) => Ok(controllers(&namespace, manager, agent)),
        Err(e) => Err(anyhow::anyhow!("{e:#}")),
    };
    vec![
        Check::from("CRDs", crds(client).await),
        Check::from("controllers", deployments),
        Check::from("leader", leader(client, &namespace, &shard).await),
        Check::from("conversion webhook", webhook(client).await),
        clusters(client, agent.is_some_and(version::available)).await,
        memory(client, &namespace).await,
        skew(found),
    ]
}

/// No controller's container was last ended for lack of memory: a manager holding more
/// generated profiles than its limit allows restarts over and over, and `controllers` may
/// catch it available between two kills.
async fn memory(client: &Client, namespace: &str) -> Check {
    let name = "memory";
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{}={}", manifests::PART_OF.0, manifests::PART_OF.1);
    let listed = match pods.list(&ListParams::default().labels(&selector)).await {
        Ok(listed) => listed,
        // Not a reason to fail the checklist: the other checks say whether it works.
        Err(error) => {
            let error = in_words(error);
            return Check::new(name, Status::Warning, format!("not checked: {error:#}"));
        }
    };
    let killed: Vec<String> = listed
        .iter()
        .flat_map(|pod| {
            let statuses = pod
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref());
            statuses.into_iter().flatten().filter_map(move |container| {
                let last = container.last_state.as_ref()?.terminated.as_ref()?;
                (last.reason.as_deref() == Some("OOMKilled")).then(|| {
                    let pod = pod.metadata.name.as_deref().unwrap_or_default();
                    format!("pod {pod} ({} restarts)", container.restart_count)
                })
            })
        })
        .collect();
    if killed.is_empty() {
        return Check::new(name, Status::Ok, "no controller ran out of memory");
    }
    Check::new(
        name,
        Status::Warning,
        format!(
            "killed for lack of memory: {}; raise the limit with `kubectl sveltos-events \
             install --manager-memory 2Gi` (or --agent-memory): the manager needs about \
             19 KiB per generated ClusterProfile",
            killed.join(", ")
        ),
    )
}

type Outcome = anyhow::Result<Result<String, String>>;

/// Every CRD install writes is there, Established, serving every version it should.
async fn crds(client: &Client) -> Outcome {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut problems = Vec::new();
    let wanted = api::crd::all().context("generating the CRDs")?;
    for want in &wanted {
        let name = want.metadata.name.clone().unwrap_or_default();
        let Some(have) = api.get_opt(&name).await.map_err(in_words)? else {
            problems.push(format!("{name} missing"));
            continue;
        };
        let established = have
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if !established {
            problems.push(format!("{name} not Established"));
        }
        let served: BTreeSet<&str> = have
            .spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.as_str())
            .collect();
        for version in want.spec.versions.iter().filter(|v| v.served) {
            if !served.contains(version.name.as_str()) {
                problems.push(format!("{name} does not serve {}", version.name));
            }
        }
    }
    if problems.is_empty() {
        Ok(Ok(format!(
            "{} established, every version served",
            wanted.len()
        )))
    } else {
        Ok(Err(format!(
            "{} (run `kubectl sveltos-events install`)",
            problems.join("; ")
        )))
    }
}

/// Both Deployments (as found in `namespace`) have every replica available.
fn controllers(
    namespace: &str,
    manager: Option<&Deployment>,
    agent: Option<&Deployment>,
) -> Result<String, String> {
    let mut problems = Vec::new();
    let mut ready = Vec::new();
    for (name, found) in [(manifests::MANAGER, manager), (manifests::AGENT, agent)] {
        let Some(d) = found else {
            problems.push(format!("deployment {namespace}/{name} missing"));
            continue;
        };
        let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let have = d
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        if have < want {
            problems.push(format!(
                "deployment {namespace}/{name}: {have} of {want} available \
                 (`kubectl -n {namespace} describe deployment {name}`)"
            ));
        } else {
            ready.push(format!("{name} {have}/{want}"));
        }
    }
    if problems.is_empty() {
        Ok(format!("available: {}", ready.join(", ")))
    } else {
        Err(problems.join("; "))
    }
}

/// The manager's leader Lease is held and was renewed within its duration.
async fn leader(client: &Client, namespace: &str, shard: &str) -> Outcome {
    let name = controller::leader::lease_name(shard);
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let Some(lease) = api.get_opt(&name).await.map_err(in_words)? else {
        return Ok(Err(format!(
            "lease {namespace}/{name} missing: no manager has led yet"
        )));
    };
    let spec = lease.spec.unwrap_or_default();
    let holder = spec.holder_identity.unwrap_or_default();
    if holder.is_empty() {
        return Ok(Err(format!("lease {namespace}/{name} is held by nobody")));
    }
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(15));
    let Some(renewed) = spec.renew_time else {
        return Ok(Err(format!("lease {namespace}/{name} was never renewed")));
    };
    let age = k8s_openapi::jiff::Timestamp::now()
        .duration_since(renewed.0)
        .as_secs();
    Ok(if age <= duration {
        Ok(format!("{holder} leads (renewed {age}s ago)"))
    } else {
        Err(format!(
            "{holder} last renewed lease {namespace}/{name} {age}s ago, more than its {duration}s: \
             the manager is not leading"
        ))
    })
}

/// The API server converts through the webhook: a v1alpha1 EventSource created as a dry run
/// is converted to the stored version, and back, by the manager's `/convert`.
async fn webhook(client: &Client) -> Outcome {
    let resource = ApiResource {
        group: api::labels::LIB_GROUP.to_owned(),
        version: "v1alpha1".to_owned(),
        api_version: format!("{}/v1alpha1", api::labels::LIB_GROUP),
        kind: "EventSource".to_owned(),
        plural: "eventsources".to_owned(),
    };
    let source: DynamicObject = serde_json::from_value(json!({
        "apiVersion": resource.api_version, "kind": "EventSource",
        "metadata": {"generateName": "sveltos-events-check-"},
        "spec": {"group": "", "version": "v1", "kind": "Service"}}))?;
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    Ok(match api.create(&params, &source).await {
        Ok(_) => Ok("a v1alpha1 EventSource converts (server dry run)".to_owned()),
        Err(error @ kube::Error::Api(_)) => Err(clusters::words::words(&error)),
        Err(e) => return Err(e.into()),
    })
}

/// Every registered SveltosCluster is connected (as the agent last recorded it: when the agent
/// is not running, that record may be stale, and the check says so rather than pass).
async fn clusters(client: &Client, agent_running: bool) -> Check {
    let name = "clusters";
    let api: Api<SveltosCluster> = Api::all(client.clone());
    let list = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(e) => {
            return Check::new(
                name,
                Status::Error,
                format!("could not check: {:#}", in_words(e)),
            );
        }
    };
    if list.is_empty() {
        return Check::new(
            name,
            Status::Warning,
            "none registered (`kubectl sveltos-events register cluster`)",
        );
    }
    let mut problems = Vec::new();
    for cluster in &list {
        let id = format!(
            "{}/{}",
            cluster.metadata.namespace.as_deref().unwrap_or_default(),
            cluster.metadata.name.as_deref().unwrap_or_default()
        );
        match &cluster.status {
            Some(s) if s.ready && s.failure_message.is_none() => {}
            Some(s) if s.failure_message.is_some() => problems.push(format!(
                "{id}: {}",
                s.failure_message.as_deref().unwrap_or_default()
            )),
            _ => problems.push(format!("{id}: not connected yet")),
        }
    }
    if !agent_running {
        return Check::new(
            name,
            Status::Failed,
            format!(
                "the agent is not running, so nothing follows the {} registered clusters (its \
                 last record: {} connected)",
                list.len(),
                list.len() - problems.len()
            ),
        );
    }
    if problems.is_empty() {
        Check::new(
            name,
            Status::Ok,
            format!("{} of {} connected", list.len(), list.len()),
        )
    } else {
        Check::new(
            name,
            Status::Failed,
            format!(
                "{} of {} connected; {}",
                list.len() - problems.len(),
                list.len(),
                problems.join("; ")
            ),
        )
    }
}

/// The controllers run the plugin's version.
fn skew(found: anyhow::Result<Vec<crate::version::Installed>>) -> Check {
    let name = "versions";
    let found = match found {
        Ok(found) => found,
        Err(e) => return Check::new(name, Status::Error, format!("could not check: {e:#}")),
    };
    let differ: Vec<String> = found
        .iter()
        .filter(|c| c.version.trim_start_matches('v') != manifests::VERSION)
        .map(|c| {
            format!(
                "{} runs v{}",
                c.deployment,
                c.version.trim_start_matches('v')
            )
        })
        .collect();
    if differ.is_empty() {
        Check::new(
            name,
            Status::Ok,
            format!("controllers and plugin at v{}", manifests::VERSION),
        )
    } else {
        Check::new(
            name,
            Status::Warning,
            format!(
                "the plugin is v{}; {}",
                manifests::VERSION,
                differ.join(", ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_outranks_a_check_that_could_not_run() {
        let check = |status| Check::new("x", status, "");
        assert_eq!(exit_code(&[check(Status::Ok), check(Status::Warning)]), 0);
        assert_eq!(exit_code(&[check(Status::Error), check(Status::Ok)]), 2);
        assert_eq!(exit_code(&[check(Status::Error), check(Status::Failed)]), 1);
    }

    #[test]
    fn controllers_of_another_version_than_the_plugin_are_a_warning() {
        let at = |version: &str| crate::version::Installed {
            deployment: "projectsveltos/sveltos-events-manager".to_owned(),
            version: version.to_owned(),
            image: String::new(),
            agent_mode: manifests::AgentMode::Hub,
            object: Default::default(),
        };
        let same = skew(Ok(vec![at(&format!("v{}", manifests::VERSION))]));
        assert_eq!(same.status, Status::Ok);
        let older = skew(Ok(vec![at("v0.0.1")]));
        assert_eq!(older.status, Status::Warning);
        assert!(
            older
                .message
                .contains("projectsveltos/sveltos-events-manager runs v0.0.1"),
            "{}",
            older.message
        );
        assert_eq!(skew(Err(anyhow::anyhow!("refused"))).status, Status::Error);
    }

    #[test]
    fn old_servers_fail_the_version_check() {
        assert_eq!(server_version("v1.19.4").status, Status::Failed);
        assert_eq!(server_version("v1.20.2").status, Status::Ok);
        assert_eq!(server_version("weird").status, Status::Error);
    }
}
