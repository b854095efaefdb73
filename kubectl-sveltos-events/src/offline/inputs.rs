//! What `render` reads: files and folders of YAML or JSON documents (`-` is standard input),
//! read as `kubectl apply -f` reads them (a List as its items), sorted by what each document is
//! to the manager (an EventTrigger, an EventSource, a ConfigMap or Secret a trigger references,
//! a cluster) and, for everything else, a resource of the source cluster.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail};
use api::load::Object;
use api::v1beta1::{ClusterSet, EventSource, EventTrigger};
use controller::fleet::Cluster;
use controller::instantiate::Referenced;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::Value;

/// How many files `render` reads at most (a folder of a whole repository is a mistake).
const MAX_FILES: usize = 10_000;

/// The documents of the files, sorted.
#[derive(Default)]
pub struct Inputs {
    /// EventTriggers, and EventBasedAddOns as the EventTriggers they stand for.
    pub triggers: Vec<EventTrigger>,
    /// EventSources.
    pub sources: Vec<EventSource>,
    /// ConfigMaps and Secrets of the management cluster that triggers reference.
    pub referenced: Vec<Referenced>,
    /// SveltosClusters and Cluster API Clusters.
    pub clusters: Vec<Cluster>,
    /// ClusterSets (triggers' `clusterSetRefs`, profiles' `setRefs`).
    pub cluster_sets: Vec<ClusterSet>,
    /// The management cluster's objects as written: the referenced ConfigMaps and Secrets,
    /// the clusters and ClusterSets (what `templateResourceRefs` may name).
    pub management: Vec<Value>,
    /// Every other object: the source cluster's resources.
    pub resources: Vec<Value>,
    /// Documents left out, with why (objects the manager writes, not reads).
    pub skipped: Vec<String>,
    /// What the reader let pass that the user should know (a repeated key, a file named that
    /// holds nothing).
    pub notes: Vec<String>,
}

/// Reads every document of `paths` (files, `-` for standard input, or folders read
/// recursively for `.yaml`, `.yml` and `.json` files, in name order).
pub fn read(paths: &[PathBuf]) -> anyhow::Result<Inputs> {
    agent::files::stdin_at_most_once(paths.iter().map(PathBuf::as_path))?;
    let mut files = Vec::new();
    let mut visited = 0;
    for path in paths {
        collect(path, &mut files, &mut visited)?;
    }
    // A file named twice (`-f dir -f dir/trigger.yaml`) is read once.
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    let mut inputs = Inputs::default();
    let mut config_objects = Vec::new();
    for file in &files {
        let read = agent::files::read_resources(file)?;
        inputs.notes.extend(read.notes);
        // A file found in a folder may well be empty; one named on the command line is said.
        if read.objects.is_empty() && paths.contains(file) {
            let name = agent::files::name(file);
            inputs.notes.push(agent::files::hold_nothing(&[name]));
        }
        let file = agent::files::name(file);
        for mut document in read.objects {
            default_namespace(&mut document);
            store_string_data(&mut document);
            let describe = agent::select::describe(&document);
            let place = format!("{file}: {describe}");
            let object = api::load::object(document).with_context(|| place.clone())?;
            sort(object, &mut inputs, &mut config_objects, place)
                .with_context(|| format!("{file}: {describe}"))?;
        }
    }
    for (object, place) in config_objects {
        let found = referenced(&object).with_context(|| place)?;
        if is_referenced(&inputs.triggers, &found) {
            inputs.referenced.push(found);
            inputs.management.push(object);
        } else {
            inputs.resources.push(object);
        }
    }
    Ok(inputs)
}

/// The kinds render knows to be namespaced get `default` when written without a namespace,
/// as `kubectl apply` gives them (other kinds' scope is not known offline).
fn default_namespace(document: &mut Value) {
    let (group, _, kind) = agent::select::gvk(document);
    let namespaced = matches!(
        (group, kind),
        ("", "ConfigMap" | "Secret")
            | ("lib.projectsveltos.io", "SveltosCluster")
            | ("cluster.x-k8s.io", "Cluster")
    );
    let missing = document["metadata"]["namespace"]
        .as_str()
        .is_none_or(str::is_empty);
    if namespaced && missing && document["metadata"].is_object() {
        document["metadata"]["namespace"] = Value::String("default".to_owned());
    }
}

/// A Secret's `stringData` written into its `data`, base64-encoded, as kube-apiserver stores
/// it (an EventSource and every template read the stored object).
fn store_string_data(document: &mut Value) {
    use base64::Engine;
    if agent::select::gvk(document) != ("", "v1", "Secret") {
        return;
    }
    let Some(Value::Object(strings)) = document
        .as_object_mut()
        .and_then(|fields| fields.remove("stringData"))
    else {
        return;
    };
    if !document["data"].is_object() {
        document["data"] = Value::Object(serde_json::Map::new());
    }
    for (key, value) in strings {
        let text = value.as_str().unwrap_or_default();
        let encoded = base64::engine::general_purpose::STANDARD.encode(text);
        document["data"][&key] = Value::String(encoded);
    }
}

/// How many folder entries render looks at, at most.
const MAX_ENTRIES: usize = 100_000;

fn collect(path: &Path, files: &mut Vec<PathBuf>, visited: &mut usize) -> anyhow::Result<()> {
    if agent::files::is_stdin(path) {
        files.push(path.to_owned());
        return Ok(());
    }
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_dir() {
        files.push(path.to_owned());
        return Ok(());
    }
    let mut entries = Vec::new();
    for entry in
        std::fs::read_dir(path).with_context(|| format!("cannot list {}", path.display()))?
    {
        let entry = entry.with_context(|| format!("cannot list {}", path.display()))?;
        *visited += 1;
        if *visited > MAX_ENTRIES || files.len() > MAX_FILES {
            bail!(
                "more than {MAX_FILES} files or {MAX_ENTRIES} entries under {}",
                path.display()
            );
        }
        // Folders are followed only when they are folders, not links: a link loop ends nowhere.
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot read {}", entry.path().display()))?;
        let wanted = entry
            .path()
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
        if kind.is_dir() || wanted {
            entries.push((entry.path(), kind.is_dir()));
        }
    }
    entries.sort();
    for (entry, is_dir) in entries {
        if is_dir {
            collect(&entry, files, visited)?;
        } else {
            files.push(entry);
        }
    }
    Ok(())
}

fn sort(
    object: Object,
    inputs: &mut Inputs,
    config: &mut Vec<(Value, String)>,
    place: String,
) -> anyhow::Result<()> {
    match object {
        Object::EventTrigger(trigger) => inputs.triggers.push(*trigger),
        Object::EventBasedAddOn(addon) => inputs.triggers.push(addon.to_event_trigger()?),
        Object::EventSource(source) => inputs.sources.push(*source),
        Object::SveltosCluster(cluster) => {
            inputs.clusters.push(Cluster::from_sveltos(&cluster)?);
            inputs.management.push(serde_json::to_value(&cluster)?);
        }
        Object::EventReport(_) | Object::ClusterProfile(_) | Object::ClusterSummary(_) => {
            inputs.skipped.push(api::load::describe(&object));
        }
        Object::Other(value) => {
            let (group, _, kind) = agent::select::gvk(&value);
            match (group, kind) {
                ("cluster.x-k8s.io", "Cluster") => {
                    inputs.clusters.push(Cluster::from_capi(&value));
                    inputs.management.push(value);
                }
                ("lib.projectsveltos.io", "ClusterSet") => {
                    inputs.cluster_sets.push(typed::<ClusterSet>(&value)?);
                    inputs.management.push(value);
                }
                ("", "ConfigMap" | "Secret") => config.push((value, place)),
                _ => inputs.resources.push(value),
            }
        }
    }
    Ok(())
}

/// A ConfigMap or Secret document (the only kinds queued for this) as the manager reads it.
fn referenced(object: &Value) -> anyhow::Result<Referenced> {
    Ok(match agent::select::gvk(object).2 {
        "Secret" => Referenced::from_secret(&typed::<Secret>(object)?),
        _ => Referenced::from_config_map(&typed::<ConfigMap>(object)?.into()),
    })
}

/// Whether a trigger reads `found` from the management cluster: its policyRefs,
/// kustomizationRefs, generators or templateResourceRefs name it. A reference whose name or
/// namespace is a template may name any object of its kind, so it claims them all: a
/// ConfigMap meant as the source cluster's resource must then not match such a reference.
fn is_referenced(triggers: &[EventTrigger], found: &Referenced) -> bool {
    let names = |kind: &str, namespace: &str, name: &str| {
        let templated = |text: &str| text.contains("{{");
        kind == found.kind
            && (name == found.name || templated(name))
            && (namespace.is_empty() || namespace == found.namespace || templated(namespace))
    };
    triggers.iter().any(|trigger| {
        let spec = &trigger.spec;
        let text = |field: &Option<String>| field.clone().unwrap_or_default();
        spec.policy_refs
            .iter()
            .any(|r| names(&r.kind, &r.namespace, &r.name))
            || spec
                .kustomization_refs
                .iter()
                .any(|r| names(&r.kind, &r.namespace, &r.name))
            || spec
                .config_map_generator
                .iter()
                .any(|g| names("ConfigMap", &g.namespace, &g.name))
            || spec
                .secret_generator
                .iter()
                .any(|g| names("Secret", &g.namespace, &g.name))
            || spec.template_resource_refs.iter().any(|r| {
                let resource = &r.resource;
                names(
                    &text(&resource.kind),
                    &text(&resource.namespace),
                    &text(&resource.name),
                )
            })
    })
}

/// `object` as a typed `T`.
fn typed<T: serde::de::DeserializeOwned>(object: &Value) -> anyhow::Result<T> {
    serde_json::from_value(object.clone()).map_err(|e| anyhow!("not a valid object: {e}"))
}
