//! `sandbox --merge-kubeconfig`: the sandbox's clusters added to the user's own kubeconfig as
//! `sveltos-sandbox-<cluster>` contexts, and taken out again by `sandbox reset`.

use anyhow::{Context, bail};
use kube::config::Kubeconfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Prefix of every name the sandbox adds to the user's kubeconfig.
const PREFIX: &str = "sveltos-sandbox-";

/// Where the folder remembers what it merged: `{"path": .., "contexts": {name: server}}`.
const RECORD: &str = "merged-kubeconfig.json";

/// What was merged, and where.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Record {
    path: PathBuf,
    /// Each added context (and its cluster, and its user `<name>-admin`) with the server it
    /// pointed at: another sandbox folder merged since owns the names if it changed them.
    contexts: BTreeMap<String, String>,
}

/// The user's kubeconfig, as kubectl picks the file it writes: $KUBECONFIG's first file, or
/// ~/.kube/config.
fn users_kubeconfig() -> anyhow::Result<PathBuf> {
    if let Some(list) = std::env::var_os("KUBECONFIG")
        && let Some(first) = std::env::split_paths(&list).find(|p| !p.as_os_str().is_empty())
    {
        return Ok(first);
    }
    let home = std::env::var_os("HOME").context("neither KUBECONFIG nor HOME is set")?;
    Ok(PathBuf::from(home).join(".kube").join("config"))
}

/// Adds `clusters` to the user's kubeconfig (replacing what an earlier merge added); its path.
pub fn merge(dir: &Path, clusters: &[sandbox::ClusterHandle]) -> anyhow::Result<PathBuf> {
    let path = users_kubeconfig()?;
    // Through a symbolic link, to the file it names (the link stays a link).
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let ours = Kubeconfig::from_yaml(&sandbox::sandbox::kubeconfig(clusters))
        .context("reading back the sandbox's kubeconfig")?;
    let mut added = BTreeMap::new();
    edit(&path, |file| {
        for mut c in ours.clusters.clone() {
            c.name = format!("{PREFIX}{}", c.name);
            let server = c.cluster.as_ref().and_then(|c| c.server.clone());
            added.insert(c.name.clone(), server.unwrap_or_default());
            file.clusters.retain(|x| x.name != c.name);
            file.clusters.push(c);
        }
        for mut u in ours.auth_infos.clone() {
            u.name = format!("{PREFIX}{}", u.name);
            file.auth_infos.retain(|x| x.name != u.name);
            file.auth_infos.push(u);
        }
        for mut x in ours.contexts.clone() {
            x.name = format!("{PREFIX}{}", x.name);
            if let Some(context) = &mut x.context {
                context.cluster = format!("{PREFIX}{}", context.cluster);
                context.user = context.user.as_ref().map(|u| format!("{PREFIX}{u}"));
            }
            file.contexts.retain(|c| c.name != x.name);
            file.contexts.push(x);
        }
    })?;
    let mut record = read_record(dir)?.unwrap_or_default();
    if record.path != path {
        record = Record::default();
    }
    record.path = path.clone();
    record.contexts.extend(added);
    let record_path = dir.join(RECORD);
    std::fs::write(&record_path, serde_json::to_vec_pretty(&record)?)
        .with_context(|| format!("cannot write {}", record_path.display()))?;
    Ok(path)
}

/// Removes what [`merge`] added to the user's kubeconfig, if it did; that file's path.
pub fn unmerge(dir: &Path) -> anyhow::Result<Option<PathBuf>> {
    let Some(record) = read_record(dir)? else {
        return Ok(None);
    };
    if record.path.exists() {
        edit(&record.path, |file| {
            // Ours: the names this folder added whose cluster still points where it did.
            let ours: Vec<String> = record
                .contexts
                .iter()
                .filter(|(name, server)| {
                    file.clusters.iter().any(|c| {
                        &c.name == *name
                            && c.cluster.as_ref().and_then(|c| c.server.as_ref()) == Some(*server)
                    })
                })
                .map(|(name, _)| name.clone())
                .collect();
            // Each context names a cluster and a user of the same name and `-admin`.
            let gone = |name: &str| {
                ours.iter()
                    .any(|n| name == n.as_str() || name.strip_suffix("-admin") == Some(n.as_str()))
            };
            file.contexts.retain(|c| !gone(&c.name));
            file.clusters.retain(|c| !gone(&c.name));
            file.auth_infos.retain(|u| !gone(&u.name));
            if file.current_context.as_deref().is_some_and(gone) {
                file.current_context = None;
            }
        })?;
    }
    let record_path = dir.join(RECORD);
    std::fs::remove_file(&record_path)
        .with_context(|| format!("cannot remove {}", record_path.display()))?;
    Ok(Some(record.path))
}

fn read_record(dir: &Path) -> anyhow::Result<Option<Record>> {
    let path = dir.join(RECORD);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{} is damaged", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Reads the kubeconfig at `path` (an empty one when there is none), changes it, and writes
/// it back whole, holding `<path>.lock` meanwhile as kubectl does.
fn edit(path: &Path, change: impl FnOnce(&mut Kubeconfig)) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let lock = PathBuf::from(format!("{}.lock", path.display()));
    if let Err(e) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock)
    {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            bail!(
                "{} is being changed by another program (remove {} if none is)",
                path.display(),
                lock.display()
            );
        }
        return Err(e).with_context(|| format!("cannot create {}", lock.display()));
    }
    let result = (|| {
        // Read as written: `read_from` would make relative paths absolute.
        let mut file = if path.exists() {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            Kubeconfig::from_yaml(&text)
                .with_context(|| format!("{} is not a kubeconfig", path.display()))?
        } else {
            Kubeconfig {
                api_version: Some("v1".into()),
                kind: Some("Config".into()),
                ..Kubeconfig::default()
            }
        };
        change(&mut file);
        let text = crate::kubeconfig::to_yaml(&file)?;
        Ok(sandbox::sandbox::write_private(path, text.as_bytes())?)
    })();
    let _ = std::fs::remove_file(&lock);
    result
}
