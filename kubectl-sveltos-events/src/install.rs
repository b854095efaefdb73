//! `install`: puts the CRDs, the manager and the agent on the management cluster.

use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::apply::{self, Applier, Outcome};
use crate::connect::ClusterArgs;
use crate::manifests::{self, Values};

/// Kubernetes versions `install` accepts: 1.20 and later (1.20 is what the real servers on
/// our test machines run). Servers before 1.25 do not know the CRDs' CEL rules
/// (`x-kubernetes-validations`): they are left out there, and such a server does not enforce
/// them.
pub const MIN_MINOR: u32 = 20;
/// The first minor version that keeps `x-kubernetes-validations`.
const CEL_MINOR: u32 = 25;

/// How `--dry-run` works, as kubectl spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DryRun {
    /// Print what would be applied; contact no cluster.
    Client,
    /// Send every object to the API server as a dry run: validated, never stored.
    Server,
}

/// Flags of `install`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    kubectl sveltos-events install\n  \
    kubectl sveltos-events install --export > sveltos-events.yaml\n  \
    kubectl sveltos-events install --dry-run=server --context staging")]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Namespace of the controllers.
    #[arg(short, long, default_value = api::labels::SVELTOS_NAMESPACE)]
    namespace: String,
    /// The controllers' version (default: the plugin's own).
    #[arg(long, default_value = manifests::VERSION)]
    version: String,
    /// The controllers' image (default: the published image of --version).
    #[arg(long)]
    image: Option<String>,
    /// Replicas of the manager (one leads; the others wait on the leader Lease).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10))]
    replicas: u32,
    /// The shard the manager handles (clusters annotated `sharding.projectsveltos.io/key`).
    #[arg(long, default_value = "")]
    shard_key: String,
    /// Where clusters registered from now on have their EventSources evaluated: `hub` (by the
    /// agent here, nothing runs in managed clusters) or `spoke` (`register cluster` deploys
    /// an agent into each; the agent here relays its reports).
    #[arg(long, value_enum, default_value = "hub")]
    agent_mode: manifests::AgentMode,
    /// Leave deployment of ClusterProfiles to Sveltos' addon-controller.
    #[arg(long)]
    no_deployer: bool,
    /// Memory limit of the manager, e.g. `2Gi`: it holds every generated ClusterProfile,
    /// ConfigMap and ClusterSummary, about 19 KiB per event (512Mi: ~24,000 profiles).
    /// Default: the installed one when upgrading, else 512Mi.
    #[arg(long, value_parser = memory_limit)]
    manager_memory: Option<String>,
    /// Memory limit of the agent, e.g. `1Gi` (512Mi holds 1,000 clusters x 100 objects).
    /// Default: the installed one when upgrading, else 512Mi.
    #[arg(long, value_parser = memory_limit)]
    agent_memory: Option<String>,
    /// Install even where Sveltos' own controllers run, over CRDs another tool installed, or
    /// over CRDs of a newer sveltos-events.
    #[arg(long)]
    force: bool,
    /// Print the manifests (`kubectl apply -f -` takes them) and exit.
    #[arg(long, conflicts_with = "dry_run")]
    export: bool,
    /// `client`: print what would be applied; `server`: validate every object on the server.
    #[arg(long, value_enum)]
    dry_run: Option<DryRun>,
    /// Wait for the CRDs to be Established and the Deployments to be available.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true")]
    wait: bool,
    /// How long to wait in all, e.g. `90s`, `5m`.
    #[arg(long, default_value = "5m", value_parser = clusters::process::parse_duration)]
    timeout: Duration,
}

impl Args {
    fn values(&self) -> anyhow::Result<Values> {
        validate_name("--namespace", &self.namespace)?;
        if !self.shard_key.is_empty() {
            validate_name("--shard-key", &self.shard_key)?;
        }
        let mut values = Values::defaults(self.version.trim_start_matches('v'));
        values.namespace = self.namespace.clone();
        if let Some(image) = &self.image {
            values.image = image.clone();
        }
        values.replicas = self.replicas;
        values.shard_key = self.shard_key.clone();
        values.deployer = !self.no_deployer;
        values.agent_mode = self.agent_mode;
        if let Some(limit) = &self.manager_memory {
            values.manager_memory = limit.clone();
        }
        if let Some(limit) = &self.agent_memory {
            values.agent_memory = limit.clone();
        }
        Ok(values)
    }

    /// Keeps the memory limits of the controllers installed in the namespace where no flag
    /// sets them: an upgrade without `--manager-memory` must not take back a limit raised
    /// for a large fleet (the manager would be killed for lack of memory).
    async fn keep_installed_limits(&self, client: &kube::Client, values: &mut Values) -> bool {
        let Ok(found) = crate::version::installed(client).await else {
            return false;
        };
        let mut kept = false;
        for (flag, name, limit) in [
            (
                &self.manager_memory,
                manifests::MANAGER,
                &mut values.manager_memory,
            ),
            (
                &self.agent_memory,
                manifests::AGENT,
                &mut values.agent_memory,
            ),
        ] {
            let installed = crate::version::find(&found, &values.namespace, name)
                .and_then(crate::version::memory_limit);
            if flag.is_none()
                && let Some(installed) = installed
                && installed != *limit
            {
                *limit = installed;
                kept = true;
            }
        }
        kept
    }
}

/// A memory limit as Kubernetes writes quantities (`512Mi`, `2Gi`, `1.5G`, `800000000`), at
/// least the controllers' request ([`manifests::MEMORY_REQUEST`]), which a limit may not be
/// below.
fn memory_limit(value: &str) -> Result<String, String> {
    let request = manifests::MEMORY_REQUEST;
    if bytes_of(value)? < bytes_of(request)? {
        return Err(format!(
            "{value} is less than the {request} the controllers request"
        ));
    }
    Ok(value.to_owned())
}

/// The bytes a memory quantity stands for.
fn bytes_of(value: &str) -> Result<f64, String> {
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let factor: f64 = match &value[digits.len()..] {
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        suffix => {
            return Err(format!(
                "{suffix:?} is not a unit of memory: use Ki, Mi, Gi, Ti, k, M, G or T"
            ));
        }
    };
    let number_shaped = !digits.is_empty()
        && !digits.starts_with('.')
        && !digits.ends_with('.')
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.matches('.').count() <= 1;
    match digits.parse::<f64>() {
        Ok(number) if number_shaped => Ok(number * factor),
        _ => Err(format!("{value:?} is not a quantity such as 512Mi or 2Gi")),
    }
}

/// A DNS label, as namespaces and the names built from a shard key must be.
pub fn validate_name(flag: &str, value: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        sandbox::meta::is_dns1123_label(value),
        "{flag} {value:?} is not a valid name: lower-case letters, digits and '-', at most 63"
    );
    Ok(())
}

/// Runs `install`; the exit code is 0 on success.
pub async fn run(args: Args, out: &mut impl Write) -> anyhow::Result<()> {
    let mut values = args.values()?;
    if args.export || args.dry_run == Some(DryRun::Client) {
        let objects = manifests::render(&values)?;
        out.write_all(manifests::to_yaml(&objects)?.as_bytes())?;
        return Ok(());
    }
    let (client, url, server_version) = args.cluster.connect().await?;
    let minor = minor_version(&server_version).with_context(|| {
        format!("the API server at {url} reports a version we cannot read: {server_version}")
    })?;
    anyhow::ensure!(
        minor >= MIN_MINOR,
        "the API server at {url} runs Kubernetes {server_version}; sveltos-events needs 1.{MIN_MINOR} or later"
    );
    if args.keep_installed_limits(&client, &mut values).await {
        writeln!(
            out,
            "keeping the installed memory limits: manager {}, agent {}",
            values.manager_memory, values.agent_memory
        )?;
    }
    let objects = manifests::render(&values)?;
    preflight(&client, &objects, &values, args.force, out).await?;
    let objects = if minor < CEL_MINOR {
        writeln!(
            out,
            "note: Kubernetes {server_version} does not know CRD validation rules (CEL, \
             1.{CEL_MINOR}+): they are left out, so this server will not enforce them"
        )?;
        objects.into_iter().map(without_cel_rules).collect()
    } else {
        objects
    };
    let dry_run = args.dry_run == Some(DryRun::Server);
    let suffix = if dry_run { " (server dry run)" } else { "" };
    writeln!(
        out,
        "installing sveltos-events {} into {url} (Kubernetes {server_version}), namespace {}{suffix}",
        values.version, values.namespace
    )?;
    // One deadline for all the waiting, as --timeout says.
    let deadline = tokio::time::Instant::now() + args.timeout;
    let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
    let mut applier = Applier::new(client.clone(), dry_run);
    let mut counts = [0usize; 3];
    // A server dry run cannot check what goes into a namespace that does not exist yet (a
    // real server answers NotFound): those objects are named, not checked.
    let mut absent_namespaces = std::collections::BTreeSet::new();
    for object in &objects {
        if let Some(ns) = object["metadata"]["namespace"].as_str()
            && absent_namespaces.contains(ns)
        {
            writeln!(
                out,
                "{} not checked: namespace {ns} does not exist yet{suffix}",
                apply::describe(object)
            )?;
            continue;
        }
        let outcome = applier.apply(object).await?;
        if dry_run && outcome == Outcome::Created && object["kind"] == "Namespace" {
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            absent_namespaces.insert(name.to_owned());
        }
        counts[outcome as usize] += 1;
        writeln!(
            out,
            "{} {}{suffix}",
            apply::describe(object),
            outcome.word()
        )?;
        // Later objects may be custom resources of this CRD: wait for it to be served.
        if !dry_run
            && outcome != Outcome::Unchanged
            && object["kind"] == "CustomResourceDefinition"
            && args.wait
        {
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            apply::crd_established(&client, name, left()).await?;
        }
    }
    let [created, configured, unchanged] = counts;
    if dry_run {
        let checked = if absent_namespaces.is_empty() {
            "every object"
        } else {
            "every object it could check"
        };
        writeln!(
            out,
            "dry run: the server accepted {checked}; nothing was changed"
        )?;
        return Ok(());
    }
    if created + configured == 0 {
        writeln!(
            out,
            "nothing to change: sveltos-events {} is installed as asked",
            values.version
        )?;
    } else {
        writeln!(
            out,
            "{created} created, {configured} configured, {unchanged} unchanged"
        )?;
    }
    if args.wait {
        for name in [manifests::MANAGER, manifests::AGENT] {
            writeln!(
                out,
                "waiting for deployment {}/{name} to be available...",
                values.namespace
            )?;
            out.flush()?;
            apply::deployment_available(&client, &values.namespace, name, left()).await?;
            writeln!(out, "deployment {}/{name} is available", values.namespace)?;
        }
        writeln!(
            out,
            "sveltos-events {} is installed and running",
            values.version
        )?;
    } else {
        writeln!(
            out,
            "not waiting for the controllers (--wait=false); `kubectl -n {} get deployments` shows when they are ready",
            values.namespace
        )?;
    }
    Ok(())
}

/// What must hold before install changes anything: the caller's rights, no Sveltos Go
/// controller acting on the same objects, and CRDs that are ours and not newer (the last two
/// give way to `--force`).
async fn preflight(
    client: &kube::Client,
    objects: &[serde_json::Value],
    values: &Values,
    force: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let missing = crate::check::missing_rights(client, objects).await?;
    anyhow::ensure!(
        missing.is_empty(),
        "you may not install sveltos-events here; it also needs to {}",
        missing.join("; ")
    );
    let mut conflicts = crate::check::go_controllers(client, values.deployer)
        .await?
        .into_iter()
        .map(|d| format!("Sveltos' {d} would act on the same objects"))
        .collect::<Vec<_>>();
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    for object in objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
    {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let Some(crd) = crds.get_opt(name).await.map_err(apply::in_words)? else {
            continue;
        };
        let labels = crd.metadata.labels.unwrap_or_default();
        let (key, ours) = manifests::MANAGED_BY;
        if labels.get(key).map(String::as_str) != Some(ours) {
            conflicts.push(format!(
                "CRD {name} was installed by another tool (Sveltos itself?)"
            ));
            continue;
        }
        let installed = labels
            .get(manifests::VERSION_LABEL)
            .map(|v| v.trim_start_matches('v'))
            .unwrap_or("0");
        if newer(installed, &values.version) {
            conflicts.push(format!(
                "CRD {name} is from sveltos-events v{installed}, newer than v{}",
                values.version
            ));
        } else if installed != values.version {
            writeln!(
                out,
                "CRD {name}: upgrading from v{installed} to v{}",
                values.version
            )?;
        }
    }
    if conflicts.is_empty() {
        return Ok(());
    }
    if force {
        for conflict in &conflicts {
            writeln!(out, "--force: going on although {conflict}")?;
        }
        return Ok(());
    }
    anyhow::bail!(
        "nothing was changed: {}; --force installs anyway",
        conflicts.join("; ")
    )
}

/// `a` is a later `major.minor.patch` than `b` (pre-release tags ignored).
fn newer(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> {
        v.split(['-', '+'])
            .next()
            .unwrap_or_default()
            .split('.')
            .map(|n| n.parse().unwrap_or(0))
            .collect()
    };
    parts(a) > parts(b)
}

/// The minor version of `v1.20.2`, `v1.28.3-gke.100`, `v1.30+`...
pub fn minor_version(git_version: &str) -> Option<u32> {
    let mut parts = git_version.trim_start_matches('v').split('.');
    let _major = parts.next()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    minor.parse().ok()
}

/// The object without any `x-kubernetes-validations` (for servers before 1.25).
fn without_cel_rules(mut object: serde_json::Value) -> serde_json::Value {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.remove("x-kubernetes-validations");
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if object["kind"] == "CustomResourceDefinition" {
        strip(&mut object);
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_kubectl_writes_them() {
        assert_eq!(minor_version("v1.20.2"), Some(20));
        assert_eq!(minor_version("v1.28.3-gke.100"), Some(28));
        assert_eq!(minor_version("v1.30+"), Some(30));
        assert_eq!(minor_version("garbage"), None);
    }

    #[test]
    fn versions_compare_by_number() {
        assert!(newer("0.10.0", "0.9.1"));
        assert!(newer("1.0.0", "0.99.0"));
        assert!(!newer("0.1.0", "0.1.0"));
        assert!(!newer("0.1.0-rc.1", "0.1.0"));
        assert!(!newer("0.0.9", "0.1.0"));
    }

    #[test]
    fn names_are_dns_labels() {
        assert!(validate_name("-n", "projectsveltos").is_ok());
        assert!(validate_name("-n", "Bad").is_err());
        assert!(validate_name("-n", "a b").is_err());
        assert!(validate_name("-n", "-x").is_err());
        assert!(validate_name("-n", &"a".repeat(64)).is_err());
    }

    #[test]
    fn memory_limits_are_quantities_no_lower_than_the_request() {
        for good in ["512Mi", "2Gi", "1.5G", "134217728", "1Ti", "200M"] {
            assert_eq!(memory_limit(good).as_deref(), Ok(good));
        }
        let refused = |value: &str| memory_limit(value).unwrap_err();
        assert!(
            refused("2GB").contains("\"GB\" is not a unit"),
            "{}",
            refused("2GB")
        );
        assert!(refused("64Mi").contains("less than the 128Mi"));
        assert!(refused("134217727").contains("less than"));
        for bad in ["", "Gi", "-1Gi", "1..5Gi", ".5Gi", "1e9", "1 Gi"] {
            assert!(refused(bad).contains("is not"), "{bad:?}: {}", refused(bad));
        }
    }

    #[test]
    fn each_controller_gets_its_memory_limit() {
        let mut values = Values::defaults("1.0.0");
        values.manager_memory = "2Gi".into();
        values.agent_memory = "1Gi".into();
        let objects = manifests::render(&values).unwrap();
        let limit = |name: &str| {
            let deployment = objects
                .iter()
                .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == name)
                .unwrap();
            let resources = &deployment["spec"]["template"]["spec"]["containers"][0]["resources"];
            (
                resources["limits"]["memory"].clone(),
                resources["requests"]["memory"].clone(),
            )
        };
        assert_eq!(limit(manifests::MANAGER), ("2Gi".into(), "128Mi".into()));
        assert_eq!(limit(manifests::AGENT), ("1Gi".into(), "128Mi".into()));
    }

    #[test]
    fn old_servers_get_crds_without_cel_rules_and_nothing_else_changes() {
        let objects = manifests::render(&Values::defaults("1.0.0")).unwrap();
        let text = |o: &serde_json::Value| o.to_string();
        assert!(
            objects
                .iter()
                .any(|o| text(o).contains("x-kubernetes-validations"))
        );
        for object in objects {
            let stripped = without_cel_rules(object.clone());
            assert!(!text(&stripped).contains("x-kubernetes-validations"));
            if object["kind"] != "CustomResourceDefinition" {
                assert_eq!(stripped, object);
            }
        }
    }
}
