//! The clusters a chain crosses: the management cluster and each managed cluster, reached as
//! the controllers reach it (its registration's kubeconfig Secret), with the kinds each serves.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use anyhow::{Context, anyhow};
use api::capi;
use api::v1beta1::{ClusterType, SveltosCluster};
use clusters::registry::Registration;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Scope};
use serde_json::Value;

use super::MANAGEMENT;
use crate::apply::in_words;
use api::labels::{OWNER_NAME_ANNOTATION, REASON_LABEL};

/// A kind a cluster serves and the names kubectl users call it by (lower case).
struct Known {
    resource: ApiResource,
    scope: Scope,
    names: Vec<String>,
}

impl Known {
    fn new(group: &str, version: &str, r: APIResource) -> Known {
        let api_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        let mut names = vec![
            r.kind.to_lowercase(),
            r.name.clone(),
            r.singular_name.clone(),
        ];
        names.extend(r.short_names.unwrap_or_default());
        Known {
            resource: ApiResource {
                group: group.to_owned(),
                version: version.to_owned(),
                api_version,
                kind: r.kind,
                plural: r.name,
            },
            scope: if r.namespaced {
                Scope::Namespaced
            } else {
                Scope::Cluster
            },
            names: names.into_iter().map(|n| n.to_lowercase()).collect(),
        }
    }
}

/// Clients and discovered kinds, per cluster, made on first use.
pub struct Fleet {
    mgmt: Client,
    clients: HashMap<String, Result<Client, String>>,
    kinds: HashMap<String, Vec<Known>>,
    /// `(cluster, Kind.version.group)` -> the kind, resolved once.
    gvks: HashMap<(String, String), (ApiResource, Scope)>,
    /// `(cluster, Kind.version.group)` -> the objects of that kind the deployer put there,
    /// listed once: many summaries name the same kind in the same cluster.
    deployed: HashMap<(String, String), Vec<Value>>,
    /// `namespace/name` -> the cluster registered so, read once.
    registered: HashMap<String, Option<Registered>>,
}

/// A managed cluster as the management cluster registers it.
#[derive(Debug, Clone)]
pub struct Registered {
    /// A SveltosCluster or a Cluster API Cluster.
    pub cluster_type: ClusterType,
    /// The object.
    pub object: Value,
}

impl Registered {
    /// Whether it is paused (`spec.paused`, or Cluster API's paused annotation).
    pub fn paused(&self) -> bool {
        match self.cluster_type {
            ClusterType::Sveltos => self.object["spec"]["paused"] == true,
            ClusterType::Capi => capi::CapiCluster(&self.object).paused(),
        }
    }

    /// Its labels.
    pub fn labels(&self) -> BTreeMap<String, String> {
        serde_json::from_value(self.object["metadata"]["labels"].clone()).unwrap_or_default()
    }
}

impl Fleet {
    /// The fleet seen from the management cluster `mgmt`.
    pub fn new(mgmt: Client) -> Self {
        Fleet {
            mgmt,
            clients: HashMap::new(),
            kinds: HashMap::new(),
            gvks: HashMap::new(),
            deployed: HashMap::new(),
            registered: HashMap::new(),
        }
    }

    /// The client of `cluster` (`management`, or a SveltosCluster's `namespace/name`); the
    /// error says why it cannot be reached, in words.
    pub async fn client(&mut self, cluster: &str) -> Result<Client, String> {
        if cluster == MANAGEMENT {
            return Ok(self.mgmt.clone());
        }
        if let Some(known) = self.clients.get(cluster) {
            return known.clone();
        }
        let reached = self.reach(cluster).await;
        self.clients.insert(cluster.to_owned(), reached.clone());
        reached
    }

    async fn reach(&mut self, cluster: &str) -> Result<Client, String> {
        let registered = self
            .registered(cluster)
            .await
            .map_err(|e| format!("{e:#}"))?
            .ok_or_else(|| {
                format!("no SveltosCluster or Cluster API Cluster {cluster} is registered")
            })?;
        let registration = match registered.cluster_type {
            ClusterType::Sveltos => {
                let cluster: SveltosCluster = serde_json::from_value(registered.object)
                    .map_err(|e| format!("SveltosCluster {cluster} cannot be read: {e}"))?;
                Registration::Sveltos(Arc::new(cluster))
            }
            ClusterType::Capi => Registration::Capi(Arc::new(registered.object)),
        };
        clusters::registry::connect(&self.mgmt, &registration)
            .await
            .map(|(client, _)| client)
            .map_err(|e| e.to_string())
    }

    /// The SveltosCluster, or else the Cluster API Cluster, registered as `cluster`
    /// (`namespace/name`), read once.
    pub async fn registered(&mut self, cluster: &str) -> anyhow::Result<Option<Registered>> {
        if let Some(known) = self.registered.get(cluster) {
            return Ok(known.clone());
        }
        let (namespace, name) = cluster
            .split_once('/')
            .ok_or_else(|| anyhow!("{cluster:?} is not a cluster's namespace/name"))?;
        let (resource, scope) = sveltos_kind("SveltosCluster");
        let mgmt = self.mgmt.clone();
        let sveltos = Self::get_with(mgmt, MANAGEMENT, &resource, &scope, Some(namespace), name);
        let found = match sveltos.await? {
            Some(object) => Some(Registered {
                cluster_type: ClusterType::Sveltos,
                object,
            }),
            None => self
                .capi_cluster(namespace, name)
                .await?
                .map(|object| Registered {
                    cluster_type: ClusterType::Capi,
                    object,
                }),
        };
        self.registered.insert(cluster.to_owned(), found.clone());
        Ok(found)
    }

    /// The type of the cluster registered as `cluster` (a SveltosCluster when none is).
    pub async fn cluster_type(&mut self, cluster: &str) -> anyhow::Result<ClusterType> {
        Ok(self
            .registered(cluster)
            .await?
            .map(|r| r.cluster_type)
            .unwrap_or_default())
    }

    /// The Cluster API Cluster `namespace/name`, read in the version its CRD serves; `None`
    /// when Cluster API is not installed.
    async fn capi_cluster(&self, namespace: &str, name: &str) -> anyhow::Result<Option<Value>> {
        let crd = Api::<CustomResourceDefinition>::all(self.mgmt.clone())
            .get_opt(capi::CRD_NAME)
            .await
            .map_err(in_words)
            .context("reading Cluster API's CustomResourceDefinition")?;
        let Some(version) = crd.as_ref().and_then(capi::served_version) else {
            return Ok(None);
        };
        let gvk = GroupVersionKind::gvk(capi::GROUP, &version, capi::KIND);
        let resource = ApiResource::from_gvk_with_plural(&gvk, capi::PLURAL);
        let mgmt = self.mgmt.clone();
        Self::get_with(
            mgmt,
            MANAGEMENT,
            &resource,
            &Scope::Namespaced,
            Some(namespace),
            name,
        )
        .await
    }

    /// The kinds `cluster` serves (preferred versions), with their short names: kube's
    /// `Discovery` drops those, and kubectl users type them (`svc`, `netpol`).
    async fn discovered(&mut self, cluster: &str) -> anyhow::Result<&[Known]> {
        if !self.kinds.contains_key(cluster) {
            let client = self.client(cluster).await.map_err(|e| anyhow!(e))?;
            let context = || format!("discovering the kinds cluster {cluster} serves");
            let mut lists = Vec::new();
            let core = client
                .list_core_api_versions()
                .await
                .with_context(context)?;
            for version in core.versions {
                let list = client
                    .list_core_api_resources(&version)
                    .await
                    .with_context(context)?;
                lists.push((String::new(), version, list));
            }
            for group in client.list_api_groups().await.with_context(context)?.groups {
                let Some(preferred) = group
                    .preferred_version
                    .or_else(|| group.versions.first().cloned())
                else {
                    continue;
                };
                let list = client
                    .list_api_group_resources(&preferred.group_version)
                    .await
                    .with_context(context)?;
                lists.push((group.name, preferred.version, list));
            }
            let kinds = lists
                .into_iter()
                .flat_map(|(group, version, list)| {
                    list.resources
                        .into_iter()
                        .filter(|r| !r.name.contains('/'))
                        .map(move |r| Known::new(&group, &version, r))
                })
                .collect();
            self.kinds.insert(cluster.to_owned(), kinds);
        }
        Ok(self
            .kinds
            .get(cluster)
            .map(Vec::as_slice)
            .unwrap_or_default())
    }

    /// The kinds `cluster` serves, as kubectl users type them (`service`, `eventtrigger`).
    pub async fn kind_names(&mut self, cluster: &str) -> anyhow::Result<Vec<String>> {
        let mut names: Vec<String> = self
            .discovered(cluster)
            .await?
            .iter()
            .map(|known| known.resource.kind.to_lowercase())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The names of the objects of the kind `text` names in `cluster` (in `namespace`, for a
    /// namespaced kind).
    pub async fn names(
        &mut self,
        cluster: &str,
        text: &str,
        namespace: &str,
    ) -> anyhow::Result<Vec<String>> {
        let (resource, scope) = self.resolve(cluster, text).await?;
        let client = self.client(cluster).await.map_err(|e| anyhow!(e))?;
        let list = Self::api(client, &resource, &scope, Some(namespace))
            .list_metadata(&ListParams::default())
            .await
            .map_err(in_words)
            .with_context(|| format!("listing {} in {cluster}", resource.plural))?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect())
    }

    /// The kind `text` names in `cluster`, as kubectl reads it: `Kind`, its plural, singular
    /// or short name, any case, optionally `.group`.
    pub async fn resolve(
        &mut self,
        cluster: &str,
        text: &str,
    ) -> anyhow::Result<(ApiResource, Scope)> {
        let wanted = text.to_lowercase();
        let (word, group) = match wanted.split_once('.') {
            Some((word, group)) => (word.to_owned(), Some(group.to_owned())),
            None => (wanted.clone(), None),
        };
        let kinds = self.discovered(cluster).await?;
        let found = kinds.iter().find(|known| {
            known.names.contains(&word) && group.as_ref().is_none_or(|g| *g == known.resource.group)
        });
        found
            .map(|known| (known.resource.clone(), known.scope.clone()))
            .ok_or_else(|| anyhow!("cluster {cluster} serves no kind {text:?}"))
    }

    /// The kind of a ClusterSummary's `Kind.version.group` entry, in `cluster`.
    pub async fn resolve_gvk(
        &mut self,
        cluster: &str,
        entry: &str,
    ) -> anyhow::Result<(ApiResource, Scope)> {
        let key = (cluster.to_owned(), entry.to_owned());
        if let Some(known) = self.gvks.get(&key) {
            return Ok(known.clone());
        }
        let mut parts = entry.splitn(3, '.');
        let kind = parts.next().unwrap_or_default();
        let version = parts.next().unwrap_or_default();
        let group = parts.next().unwrap_or_default();
        let client = self.client(cluster).await.map_err(|e| anyhow!(e))?;
        let (resource, caps) =
            kube::discovery::pinned_kind(&client, &GroupVersionKind::gvk(group, version, kind))
                .await
                .with_context(|| format!("cluster {cluster} does not serve {entry}"))?;
        self.gvks
            .insert(key, (resource.clone(), caps.scope.clone()));
        Ok((resource, caps.scope))
    }

    /// The objects of kind `entry` (`Kind.version.group`) in `cluster` that `profile` deployed:
    /// Sveltos' reason label, and the profile in its owner annotation.
    pub async fn deployed_by(
        &mut self,
        cluster: &str,
        entry: &str,
        profile: &str,
    ) -> anyhow::Result<Vec<Value>> {
        let key = (cluster.to_owned(), entry.to_owned());
        if !self.deployed.contains_key(&key) {
            let resource = self.resolve_gvk(cluster, entry).await?;
            let objects = self.list(cluster, &resource, None, REASON_LABEL).await?;
            self.deployed.insert(key.clone(), objects);
        }
        Ok(self.deployed[&key]
            .iter()
            .filter(|o| super::meta(o, "annotations", OWNER_NAME_ANNOTATION) == profile)
            .cloned()
            .collect())
    }

    fn api(
        client: Client,
        resource: &ApiResource,
        scope: &Scope,
        namespace: Option<&str>,
    ) -> Api<DynamicObject> {
        match (scope, namespace) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client, ns, resource),
            _ => Api::all_with(client, resource),
        }
    }

    /// The object `name` (in `namespace` for a namespaced kind), as JSON with its kind set.
    pub async fn get(
        &mut self,
        cluster: &str,
        (resource, scope): &(ApiResource, Scope),
        namespace: Option<&str>,
        name: &str,
    ) -> anyhow::Result<Option<Value>> {
        let client = self.client(cluster).await.map_err(|e| anyhow!(e))?;
        Self::get_with(client, cluster, resource, scope, namespace, name).await
    }

    /// [`Fleet::get`] with `client` (of `cluster`, as messages name it).
    async fn get_with(
        client: Client,
        cluster: &str,
        resource: &ApiResource,
        scope: &Scope,
        namespace: Option<&str>,
        name: &str,
    ) -> anyhow::Result<Option<Value>> {
        let found = Self::api(client, resource, scope, namespace)
            .get_opt(name)
            .await
            .map_err(in_words)
            .with_context(|| format!("reading {} {name} in {cluster}", resource.kind))?;
        Ok(found.map(|o| serde_json::to_value(o).unwrap_or_default()))
    }

    /// The management cluster's object of Sveltos kind `kind` (see [`sveltos_kind`]).
    pub async fn sveltos(
        &mut self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> anyhow::Result<Option<Value>> {
        self.get(MANAGEMENT, &sveltos_kind(kind), namespace, name)
            .await
    }

    /// The management cluster's objects of Sveltos kind `kind` carrying `labels`, in
    /// `namespace` or everywhere.
    pub async fn sveltos_list(
        &mut self,
        kind: &str,
        namespace: Option<&str>,
        labels: &str,
    ) -> anyhow::Result<Vec<Value>> {
        self.list(MANAGEMENT, &sveltos_kind(kind), namespace, labels)
            .await
    }

    /// The objects carrying `labels` (a selector), in `namespace` or everywhere.
    pub async fn list(
        &mut self,
        cluster: &str,
        (resource, scope): &(ApiResource, Scope),
        namespace: Option<&str>,
        labels: &str,
    ) -> anyhow::Result<Vec<Value>> {
        let client = self.client(cluster).await.map_err(|e| anyhow!(e))?;
        let list = Self::api(client, resource, scope, namespace)
            .list(&ListParams::default().labels(labels))
            .await
            .map_err(in_words)
            .with_context(|| format!("listing {} in {cluster}", resource.plural))?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .collect())
    }
}

/// The Sveltos kinds of the management cluster the chain reads, by kind.
pub fn sveltos_kind(kind: &str) -> (ApiResource, Scope) {
    let (group, plural, scope) = match kind {
        "EventSource" => ("lib.projectsveltos.io", "eventsources", Scope::Cluster),
        "EventTrigger" => ("lib.projectsveltos.io", "eventtriggers", Scope::Cluster),
        "EventReport" => ("lib.projectsveltos.io", "eventreports", Scope::Namespaced),
        "ClusterProfile" => (
            "config.projectsveltos.io",
            "clusterprofiles",
            Scope::Cluster,
        ),
        "ClusterSummary" => (
            "config.projectsveltos.io",
            "clustersummaries",
            Scope::Namespaced,
        ),
        "SveltosCluster" => (
            "lib.projectsveltos.io",
            "sveltosclusters",
            Scope::Namespaced,
        ),
        "ClusterReport" => (
            "config.projectsveltos.io",
            "clusterreports",
            Scope::Namespaced,
        ),
        "ConfigMap" => ("", "configmaps", Scope::Namespaced),
        _ => ("", "secrets", Scope::Namespaced),
    };
    let version = if group.is_empty() { "v1" } else { "v1beta1" };
    let resource = ApiResource {
        group: group.to_owned(),
        version: version.to_owned(),
        api_version: if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    };
    (resource, scope)
}
