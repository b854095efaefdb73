//! The registered clusters of a management cluster (SveltosClusters and Cluster API Clusters),
//! registering one with its kubeconfig Secret, and reaching one through that Secret.

use std::collections::BTreeMap;
use std::sync::Arc;

use api::capi;
use api::labels::{AGENT_MODE_ANNOTATION, AGENT_MODE_SPOKE};
use api::v1beta1::{ClusterType, SveltosCluster};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, Config};
use serde_json::Value;

use crate::capi::CapiClusters;
use api::cluster_ref::ClusterRef as ClusterId;

/// Registers a cluster as Sveltos' `register cluster` does: its kubeconfig Secret (named as
/// [`SveltosCluster::kubeconfig_secret_name`] says) and a SveltosCluster carrying `labels`,
/// both in `namespace`, written by server-side apply as `field_manager`.
pub async fn register_cluster(
    mgmt: &Client,
    field_manager: &str,
    namespace: &str,
    name: &str,
    labels: BTreeMap<String, String>,
    kubeconfig: &str,
) -> kube::Result<()> {
    let mut cluster = SveltosCluster::new(name, Default::default());
    cluster.metadata.namespace = Some(namespace.to_owned());
    cluster.metadata.labels = Some(labels);
    register(mgmt, field_manager, &cluster, kubeconfig).await
}

/// Registers `cluster` (its namespace, name, labels, annotations and spec as given) with its
/// kubeconfig Secret, both written by server-side apply as `field_manager`: the Secret first,
/// so the cluster never appears without its credentials.
pub async fn register(
    mgmt: &Client,
    field_manager: &str,
    cluster: &SveltosCluster,
    kubeconfig: &str,
) -> kube::Result<()> {
    let params = PatchParams::apply(field_manager).force();
    let namespace = cluster.metadata.namespace.as_deref().unwrap_or("default");
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    let secret_name = cluster.kubeconfig_secret_name();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(secret_name.clone()),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "kubeconfig".to_owned(),
            ByteString(kubeconfig.as_bytes().to_vec()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(mgmt.clone(), namespace)
        .patch(&secret_name, &params, &Patch::Apply(&secret))
        .await?;
    Api::<SveltosCluster>::namespaced(mgmt.clone(), namespace)
        .patch(name, &params, &Patch::Apply(cluster))
        .await?;
    Ok(())
}

/// Why a cluster cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The kubeconfig Secret is missing or unreadable.
    #[error("cannot read kubeconfig Secret {secret}: {reason}")]
    Secret {
        /// `namespace/name` of the Secret.
        secret: String,
        /// What is wrong.
        reason: SecretError,
    },
    /// The kubeconfig does not load.
    #[error("the kubeconfig in Secret {secret} is not valid: {reason}")]
    Kubeconfig {
        /// `namespace/name` of the Secret.
        secret: String,
        /// What is wrong.
        reason: KubeconfigError,
    },
    /// The cluster did not answer.
    #[error("the cluster does not answer: {}", crate::words::words(.0))]
    Unreachable(kube::Error),
}

/// Why a cluster's kubeconfig Secret could not be read (the reason of
/// [`ConnectError::Secret`]).
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// Reading the Secret from the management cluster failed.
    #[error("{0}")]
    Read(kube::Error),
    /// The Secret has no key holding the kubeconfig.
    #[error("{0}")]
    Key(api::MissingKubeconfigKey),
}

/// Why the kubeconfig in a cluster's Secret could not be used (the reason of
/// [`ConnectError::Kubeconfig`]).
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The kubeconfig is not UTF-8 text.
    #[error("{0}")]
    Text(std::string::FromUtf8Error),
    /// The kubeconfig does not parse or names no usable context.
    #[error("{0}")]
    Load(kube::config::KubeconfigError),
    /// No client could be built from it (TLS material, proxy, ...).
    #[error("{0}")]
    Client(kube::Error),
}

/// The registered clusters of the management cluster, kept current by watches: SveltosClusters
/// and Cluster API clusters.
#[derive(Clone)]
pub struct Registry {
    /// SveltosClusters.
    pub sveltos: Store<SveltosCluster>,
    /// Cluster API clusters.
    pub capi: CapiClusters,
}

impl Registry {
    /// The object of cluster `id`, if it is registered.
    pub fn get(&self, id: &ClusterId) -> Option<Registration> {
        match id.cluster_type {
            ClusterType::Sveltos => self
                .sveltos
                .get(&ObjectRef::new(&id.name).within(&id.namespace))
                .map(Registration::Sveltos),
            ClusterType::Capi => self
                .capi
                .get(&id.namespace, &id.name)
                .map(Registration::Capi),
        }
    }

    /// Every registered cluster.
    pub fn all(&self) -> impl Iterator<Item = Registration> + use<> {
        let sveltos = self.sveltos.state().into_iter().map(Registration::Sveltos);
        sveltos.chain(self.capi.state().into_iter().map(Registration::Capi))
    }

    /// Waits until both caches are filled; false if a watch ended first.
    pub async fn ready(&self) -> bool {
        self.sveltos.wait_until_ready().await.is_ok() && self.capi.wait_until_ready().await
    }
}

/// A cluster the hub serves, as it is registered in the management cluster.
#[derive(Clone, Debug)]
pub enum Registration {
    /// A SveltosCluster: the hub reports the connection in its status.
    Sveltos(Arc<SveltosCluster>),
    /// A Cluster API `Cluster` (JSON): Cluster API writes its kubeconfig Secret and status.
    Capi(Arc<Value>),
}

impl Registration {
    /// The cluster's identity.
    pub fn id(&self) -> ClusterId {
        match self {
            Registration::Sveltos(cluster) => ClusterId::sveltos(
                cluster.metadata.namespace.as_deref().unwrap_or_default(),
                cluster.metadata.name.as_deref().unwrap_or_default(),
            ),
            Registration::Capi(cluster) => {
                let cluster = capi::CapiCluster(cluster);
                ClusterId {
                    namespace: cluster.namespace().to_owned(),
                    name: cluster.name().to_owned(),
                    cluster_type: ClusterType::Capi,
                }
            }
        }
    }

    /// The value of annotation `key` on the cluster's object.
    pub fn annotation(&self, key: &str) -> Option<String> {
        match self {
            Registration::Sveltos(cluster) => cluster
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key).cloned()),
            Registration::Capi(cluster) => capi::CapiCluster(cluster).annotations().remove(key),
        }
    }

    /// Whether the cluster runs its own agent (spoke mode).
    pub fn is_spoke(&self) -> bool {
        self.annotation(AGENT_MODE_ANNOTATION)
            .is_some_and(|mode| mode == AGENT_MODE_SPOKE)
    }

    /// Name of the Secret (in the cluster's namespace) holding the kubeconfig.
    pub fn secret_name(&self) -> String {
        match self {
            Registration::Sveltos(cluster) => cluster.kubeconfig_secret_name(),
            Registration::Capi(cluster) => {
                capi::kubeconfig_secret_name(capi::CapiCluster(cluster).name())
            }
        }
    }

    /// The kubeconfig in the `data` of the cluster's Secret: for a SveltosCluster key
    /// `kubeconfigKeyName`, else `kubeconfig`, else `value`, else the only key; for Cluster API
    /// key `value`. `Err` says which key is missing.
    pub fn kubeconfig_from_secret<'a>(
        &self,
        data: &'a BTreeMap<String, ByteString>,
    ) -> Result<&'a [u8], api::MissingKubeconfigKey> {
        match self {
            Registration::Sveltos(cluster) => cluster.kubeconfig_from_secret(data),
            Registration::Capi(_) => capi::kubeconfig_from_secret(data),
        }
    }

    /// The kubeconfig bytes of the cluster, read from its Secret.
    async fn kubeconfig(&self, mgmt: &Client) -> Result<Vec<u8>, ConnectError> {
        let id = self.id();
        let name = self.secret_name();
        let secret_name = format!("{}/{name}", id.namespace);
        let secrets: Api<Secret> = Api::namespaced(mgmt.clone(), &id.namespace);
        let secret = secrets
            .get_opt(&name)
            .await
            .map_err(|e| ConnectError::Secret {
                secret: secret_name.clone(),
                reason: SecretError::Read(e),
            })?;
        let data = secret.and_then(|s| s.data).unwrap_or_default();
        self.kubeconfig_from_secret(&data)
            .map(<[u8]>::to_vec)
            .map_err(|missing| ConnectError::Secret {
                secret: secret_name,
                reason: SecretError::Key(missing),
            })
    }
}

/// Why [`load_config`] found no cluster.
#[derive(Debug, thiserror::Error)]
pub enum LoadConfigError {
    /// The named kubeconfig file could not be read or used.
    #[error("reading kubeconfig {path}: {source}")]
    File {
        /// The file.
        path: String,
        /// What was wrong with it.
        source: kube::config::KubeconfigError,
    },
    /// `$KUBECONFIG` or `~/.kube/config` could not be read or lacks the context.
    #[error("loading the kubeconfig ($KUBECONFIG or ~/.kube/config): {0}")]
    Default(kube::config::KubeconfigError),
    /// Neither a kubeconfig nor an in-cluster account was found.
    #[error("finding the cluster ($KUBECONFIG, ~/.kube/config or in-cluster): {0}")]
    Infer(kube::config::InferConfigError),
}

/// The cluster a process is pointed at, as kubectl finds it: the kubeconfig file `path`
/// (its `context`, else its current one); without a file, `$KUBECONFIG` or `~/.kube/config`
/// when a context is named, else kube's inference (`$KUBECONFIG`, `~/.kube/config`, then the
/// in-cluster ServiceAccount).
pub async fn load_config(
    path: Option<&std::path::Path>,
    context: Option<&str>,
) -> Result<Config, LoadConfigError> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    match path {
        Some(path) => {
            let file = |source| LoadConfigError::File {
                path: path.display().to_string(),
                source,
            };
            let kubeconfig = Kubeconfig::read_from(path).map_err(file)?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(file)
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(LoadConfigError::Default),
        None => Config::infer().await.map_err(LoadConfigError::Infer),
    }
}

/// The client configuration a kubeconfig document describes (its current context).
pub async fn config_from_kubeconfig(text: &str) -> Result<Config, kube::config::KubeconfigError> {
    let kubeconfig = Kubeconfig::from_yaml(text)?;
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await
}

/// A client for `cluster` through its kubeconfig Secret, checked by asking its version
/// (returned with it).
pub async fn connect(
    mgmt: &Client,
    cluster: &Registration,
) -> Result<(Client, String), ConnectError> {
    let bytes = cluster.kubeconfig(mgmt).await?;
    let secret = format!("{}/{}", cluster.id().namespace, cluster.secret_name());
    let invalid = |reason: KubeconfigError| ConnectError::Kubeconfig {
        secret: secret.clone(),
        reason,
    };
    let text = String::from_utf8(bytes).map_err(|e| invalid(KubeconfigError::Text(e)))?;
    let config = config_from_kubeconfig(&text)
        .await
        .map_err(|e| invalid(KubeconfigError::Load(e)))?;
    let client = crate::client::client(config).map_err(|e| invalid(KubeconfigError::Client(e)))?;
    let version = client
        .apiserver_version()
        .await
        .map_err(ConnectError::Unreachable)?;
    Ok((client, version.git_version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_errors_read_as_one_sentence_with_the_cause() {
        let missing = ConnectError::Secret {
            secret: "fleet/c1-kubeconfig".to_owned(),
            reason: SecretError::Key(api::MissingKubeconfigKey {
                keys: "value".to_owned(),
            }),
        };
        assert_eq!(
            missing.to_string(),
            "cannot read kubeconfig Secret fleet/c1-kubeconfig: no key value"
        );
        let Err(text) = String::from_utf8(vec![0xff]) else {
            unreachable!("0xff is not UTF-8");
        };
        let invalid = ConnectError::Kubeconfig {
            secret: "fleet/c1-kubeconfig".to_owned(),
            reason: KubeconfigError::Text(text.clone()),
        };
        assert_eq!(
            invalid.to_string(),
            format!("the kubeconfig in Secret fleet/c1-kubeconfig is not valid: {text}")
        );
        let crate_level: crate::Error = invalid.into();
        assert!(
            crate_level
                .to_string()
                .starts_with("the kubeconfig in Secret")
        );
    }
}
