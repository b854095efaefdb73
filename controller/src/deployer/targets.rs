//! The clusters the deployer writes to: the management cluster (`deploymentType: Local`) and
//! each registered cluster through its kubeconfig Secret, with the kinds each serves.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use api::v1beta1::ClusterType;
use clusters::registry::{Registration, config_from_kubeconfig};
use clusters::words::words;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use kube::runtime::reflector::{ObjectRef, Store};
use sha2::{Digest, Sha256};

use crate::identity::ClusterRef;

/// Where an object goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// The management cluster.
    Local,
    /// A registered cluster.
    Remote(ClusterRef),
}

/// A kind as a cluster serves it.
#[derive(Debug, Clone)]
pub struct Served {
    /// How to address it.
    pub resource: ApiResource,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

impl Served {
    /// The API of this kind in `namespace` (ignored for cluster-scoped kinds).
    pub fn api(&self, client: Client, namespace: &str) -> Api<DynamicObject> {
        if self.namespaced {
            Api::namespaced_with(client, namespace, &self.resource)
        } else {
            Api::all_with(client, &self.resource)
        }
    }
}

/// Clients and discovery results, kept between passes and shared by the passes that run at
/// once (locked only to read or note a result, never while asking a cluster). A cluster's
/// client is let go when unused for a while ([`Targets::drop_idle`]): each holds a task,
/// its buffers and TLS settings (~20 KB without a connection), and at 1,000 clusters most
/// are idle at any time.
pub struct Targets {
    mgmt: Client,
    known: Mutex<Known>,
}

/// What [`Targets`] found out.
#[derive(Default)]
struct Known {
    remote: HashMap<ClusterRef, Remote>,
    kinds: HashMap<(Target, GroupVersionKind), Served>,
    /// Namespaces seen to exist (or created): a deployment into one asks no more.
    namespaces: HashSet<(Target, String)>,
}

/// A registered cluster's client, built from the kubeconfig of SHA-256 `kubeconfig`.
struct Remote {
    kubeconfig: [u8; 32],
    /// None once dropped for being idle: built again when next needed.
    client: Option<Client>,
    used: Instant,
    /// Its credentials come from an exec plugin, whose token the client keeps until it
    /// expires: let go, it would run the plugin again at each pass after a pause.
    lasting: bool,
}

impl Targets {
    /// Starts with the management cluster's client.
    pub fn new(mgmt: Client) -> Self {
        Targets {
            mgmt,
            known: Mutex::default(),
        }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        // A panic elsewhere while it was held leaves caches, not invariants: keep using them.
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The management cluster's client.
    pub fn mgmt(&self) -> &Client {
        &self.mgmt
    }

    /// The client of `target`, built from the cluster's kubeconfig Secret (rebuilt when the
    /// kubeconfig changes); `registration` finds a cluster's object.
    pub async fn client(
        &self,
        target: &Target,
        registration: impl Fn(&ClusterRef) -> Option<Registration>,
        secrets: &Store<Secret>,
    ) -> Result<Client, String> {
        let cluster = match target {
            Target::Local => return Ok(self.mgmt.clone()),
            Target::Remote(cluster) => cluster,
        };
        let object = registration(cluster).ok_or_else(|| {
            let kind = match cluster.cluster_type {
                ClusterType::Sveltos => "SveltosCluster",
                ClusterType::Capi => "Cluster API Cluster",
            };
            format!(
                "{kind} {}/{} does not exist",
                cluster.namespace, cluster.name
            )
        })?;
        let secret_name = object.secret_name();
        let secret = secrets
            .get(&ObjectRef::new(&secret_name).within(&cluster.namespace))
            .ok_or_else(|| {
                format!(
                    "kubeconfig Secret {}/{secret_name} does not exist",
                    cluster.namespace
                )
            })?;
        let no_data = BTreeMap::new();
        let bytes = object
            .kubeconfig_from_secret(secret.data.as_ref().unwrap_or(&no_data))
            .map_err(|e| format!("kubeconfig Secret {}/{secret_name}: {e}", cluster.namespace))?;
        // The kubeconfig itself, not the Secret's version: other keys may change, and a
        // SveltosCluster may come to name another key of the same Secret.
        let kubeconfig: [u8; 32] = Sha256::digest(bytes).into();
        let same_kubeconfig = match self.known().remote.get_mut(cluster) {
            Some(remote) if remote.kubeconfig == kubeconfig => {
                if let Some(client) = &remote.client {
                    remote.used = Instant::now();
                    return Ok(client.clone());
                }
                true
            }
            _ => false,
        };
        let invalid = |e: String| {
            format!(
                "kubeconfig in Secret {}/{secret_name} is not valid: {e}",
                cluster.namespace
            )
        };
        let text = std::str::from_utf8(bytes).map_err(|e| invalid(e.to_string()))?;
        let config = config_from_kubeconfig(text)
            .await
            .map_err(|e| invalid(e.to_string()))?;
        let lasting = config.auth_info.exec.is_some();
        let client = clusters::client::client(config).map_err(|e| invalid(e.to_string()))?;
        let mut known = self.known();
        if !same_kubeconfig {
            // Another kubeconfig may reach another cluster: what was found out may not hold.
            known.kinds.retain(|(t, _), _| t != target);
            known.namespaces.retain(|(t, _)| t != target);
        }
        let remote = Remote {
            kubeconfig,
            client: Some(client.clone()),
            used: Instant::now(),
            lasting,
        };
        known.remote.insert(cluster.clone(), remote);
        Ok(client)
    }

    /// Lets go of the clients not used for `idle` (what was found out about their clusters
    /// stays, and the next pass there builds the client again).
    pub fn drop_idle(&self, idle: Duration) {
        for remote in self.known().remote.values_mut() {
            if !remote.lasting && remote.used.elapsed() >= idle {
                remote.client = None;
            }
        }
    }

    /// How `target` serves `gvk`, or why it cannot be used.
    pub async fn kind(
        &self,
        target: &Target,
        client: &Client,
        gvk: &GroupVersionKind,
    ) -> Result<Served, String> {
        let key = (target.clone(), gvk.clone());
        if let Some(served) = self.known().kinds.get(&key) {
            return Ok(served.clone());
        }
        let (resource, capabilities) =
            kube::discovery::pinned_kind(client, gvk)
                .await
                .map_err(|e| {
                    let kind = format!("{}/{} {}", gvk.group, gvk.version, gvk.kind);
                    match &e {
                        // Discovery of a group/version the server does not have.
                        kube::Error::Api(status) if status.code == 404 => format!(
                            "the cluster does not serve {kind}: it has no API {}/{} (is its \
                             CustomResourceDefinition installed?)",
                            gvk.group, gvk.version
                        ),
                        _ => format!("the cluster does not serve {kind}: {}", words(&e)),
                    }
                })?;
        let served = Served {
            resource,
            namespaced: capabilities.scope == Scope::Namespaced,
        };
        self.known().kinds.insert(key, served.clone());
        Ok(served)
    }

    /// Whether namespace `place` (target, name) was seen to exist.
    pub fn namespace_exists(&self, place: &(Target, String)) -> bool {
        self.known().namespaces.contains(place)
    }

    /// Notes whether namespace `place` exists: a write into a namespace found missing
    /// (deleted since) forgets it, and the next deployment there makes it again.
    pub fn note_namespace(&self, place: (Target, String), exists: bool) {
        let mut known = self.known();
        if exists {
            known.namespaces.insert(place);
        } else {
            known.namespaces.remove(&place);
        }
    }

    /// Forgets what a cluster serves (its CRDs may have changed).
    pub fn forget_kinds(&self, target: &Target) {
        self.known().kinds.retain(|(t, _), _| t != target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::v1beta1::SveltosCluster;
    use kube::runtime::reflector::store;
    use kube::runtime::watcher::Event;
    use std::sync::Arc;

    /// A kubeconfig Secret at `version` for `server`, its user's credentials from `user`.
    fn secret(version: &str, server: &str, user: &str) -> Secret {
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\nusers:\n- name: u\n  user:\n{user}"
        );
        let mut secret: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c-sveltos-kubeconfig", "namespace": "ns",
                         "resourceVersion": version},
        }))
        .unwrap();
        let data = k8s_openapi::ByteString(kubeconfig.into_bytes());
        secret.data = Some([("kubeconfig".to_owned(), data)].into());
        secret
    }

    #[tokio::test]
    async fn an_idle_client_is_let_go_and_built_again_knowing_what_it_knew() {
        let mgmt = Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()));
        let targets = Targets::new(mgmt.unwrap());
        let cluster: SveltosCluster = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c", "namespace": "ns"}, "spec": {}
        }))
        .unwrap();
        let registration = Registration::Sveltos(Arc::new(cluster));
        let reference = ClusterRef {
            namespace: "ns".into(),
            name: "c".into(),
            cluster_type: ClusterType::Sveltos,
        };
        let target = Target::Remote(reference.clone());
        let (secrets, mut writer) = store::<Secret>();
        writer.apply_watcher_event(&Event::Apply(secret("1", "http://127.0.0.1:9", TOKEN)));
        let client = || targets.client(&target, |_| Some(registration.clone()), &secrets);
        let held = |targets: &Targets| targets.known().remote[&reference].client.is_some();
        let gvk = GroupVersionKind::gvk("networking.k8s.io", "v1", "NetworkPolicy");
        let kind = (target.clone(), gvk.clone());
        let discovered = |targets: &Targets| targets.known().kinds.contains_key(&kind);
        let served = Served {
            resource: ApiResource::from_gvk(&gvk),
            namespaced: true,
        };

        client().await.unwrap();
        targets.known().kinds.insert(kind.clone(), served);
        targets.drop_idle(Duration::from_secs(60));
        assert!(held(&targets), "a client in use was let go");
        targets.drop_idle(Duration::ZERO);
        assert!(!held(&targets), "an idle client was kept");

        // Built again from the same Secret: what discovery found still holds.
        client().await.unwrap();
        assert!(held(&targets));
        assert!(discovered(&targets));

        // The Secret changed, its kubeconfig did not: the same client, what it knew holds.
        writer.apply_watcher_event(&Event::Apply(secret("2", "http://127.0.0.1:9", TOKEN)));
        client().await.unwrap();
        assert!(discovered(&targets));

        // Another kubeconfig may reach another cluster: discovery starts over.
        writer.apply_watcher_event(&Event::Apply(secret("3", "http://127.0.0.1:10", TOKEN)));
        client().await.unwrap();
        assert!(!discovered(&targets));

        // A client whose token an exec plugin gives keeps it: it is not let go.
        let credential = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}"#;
        let exec = format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n\
             \x20     args: [\"-c\", \"echo '{}'\"]\n",
            credential.replace('"', "\\\"")
        );
        writer.apply_watcher_event(&Event::Apply(secret("4", "http://127.0.0.1:10", &exec)));
        client().await.unwrap();
        targets.drop_idle(Duration::ZERO);
        assert!(held(&targets), "a client with an exec plugin was let go");
    }

    const TOKEN: &str = "    token: t\n";
}
