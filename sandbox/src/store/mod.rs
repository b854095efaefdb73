//! Storage of one virtual cluster: objects, resourceVersion counter, event history, watch
//! fan-out. No HTTP here; the HTTP layer translates requests into these calls.

use crate::auth::jwt::SigningKey;
use crate::auth::rbac::Policy;
use crate::auth::token_cache::TokenCache;
use crate::defaults;
use crate::error::{Error, Result};
use crate::journal::{self, Journal};
use crate::meta::{self, finalizers, meta_str};
use crate::paging;
use crate::patch::{self, Writer};
use crate::registry::{GroupResource, Registry, ResourceInfo, crd_status, crd_status_after};
use crate::selector::{FieldSelector, LabelSelector};
use crate::webhook::Endpoints;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::DirBuilderExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use tokio::sync::broadcast;

mod checks;
mod delete;
mod event;
mod history;
mod objects;
mod options;
mod read;
mod write;

use checks::{conflict, is_crd, namespaces_gr, not_found, validate_labels, validate_name};
use delete::{remove_all, remove_object};
use history::{commit, emit, remember};
use objects::Objects;

pub use checks::qualified_kind;
pub use event::{Event, EventType};
pub use options::{
    Admission, DeleteOptions, Deleted, ListQuery, ListResult, WatchFrom, WatchStart, WriteOptions,
};

/// Number of events kept for watch resumption.
pub const HISTORY: usize = 20_000;

/// Events a live watch may fall behind before it is told 410 and must relist, as
/// kube-apiserver ends a watcher whose buffer fills. Allocated up front for every cluster, so
/// it is kept far below the history's length (20,000 slots were ~0.6 MiB a cluster).
pub const WATCH_BUFFER: usize = 4_096;

/// Bytes of watch frames the history may hold, whatever the count: resuming a watch from
/// further back gets 410 Gone and relists, as with a compacted kube-apiserver.
pub const HISTORY_BYTES: usize = 64 << 20;

struct State {
    rv: u64,
    registry: Registry,
    objects: HashMap<GroupResource, Objects>,
    history: VecDeque<Arc<Event>>,
    /// Sum of the watch-frame lengths of `history`.
    history_bytes: usize,
    /// Cluster IPs and node ports of Services.
    allocator: defaults::Allocator,
    /// resourceVersion of the last write to an RBAC object (when the policy must be re-read).
    rbac_rv: u64,
    /// Where Services' pods are, for conversion webhooks (shared with [`Store`]).
    endpoints: Arc<Endpoints>,
    /// Where changes are kept on disk (none: in memory alone).
    journal: Option<Arc<Journal>>,
}

impl State {
    /// The stored object `ns/name` of `info`'s resource, or kube-apiserver's 404.
    fn stored(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<Arc<Value>> {
        self.objects
            .get(&info.group_resource())
            .and_then(|m| m.get(ns, name))
            .cloned()
            .ok_or_else(|| not_found(info, name))
    }
}

/// The storage of one virtual cluster.
pub struct Store {
    state: Mutex<State>,
    tx: broadcast::Sender<Arc<Event>>,
    converter: RwLock<Option<Converter>>,
    /// The key signing this cluster's ServiceAccount tokens.
    signing_key: SigningKey,
    /// The RBAC policy last read, reused until an RBAC object changes.
    policy: Mutex<Option<Arc<Policy>>>,
    /// Tokens that authenticated lately.
    tokens: TokenCache,
    /// Where Services' pods are, read by conversions without the state lock.
    endpoints: Arc<Endpoints>,
    /// Where changes are kept on disk (none: in memory alone).
    journal: Option<Arc<Journal>>,
    /// What the API server in front of this store is made to do wrong, for tests.
    faults: crate::faults::Faults,
}

/// Converts a custom object to the given apiVersion, as a CRD's conversion webhook would.
pub type Converter = Arc<dyn Fn(&Value, &str) -> std::result::Result<Value, String> + Send + Sync>;

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl Store {
    /// A new cluster with built-in resources and the four standard namespaces, in memory.
    pub fn new() -> Self {
        let store = Self::blank(SigningKey::generate(), None);
        store.standard_namespaces();
        store
    }

    /// The cluster whose state `dir` keeps (a new one when it keeps none): its objects, its
    /// resourceVersion, the recent changes watches resume from, and its token signing key.
    /// Every change from now on is journaled there; see [`Store::persisted`].
    pub fn open(dir: &Path) -> Result<Self> {
        // Secrets are kept there: the owner alone may look.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(Error::file("create", dir))?;
        let key_path = dir.join("signing-key");
        let key = SigningKey::load_or_create(&key_path)
            .map_err(Error::file("read or create", &key_path))?;
        let loaded = journal::load(dir)?;
        let journal = Arc::new(Journal::open(dir, &loaded)?);
        let fresh = loaded.is_empty();
        let store = Self::blank(key, Some(journal.clone()));
        store.restore(loaded);
        {
            let mut st = store.lock();
            st.journal = Some(journal);
            // A crash in the middle of a CRD's deletion can leave some of its objects.
            let unserved: Vec<GroupResource> = st
                .objects
                .keys()
                .filter(|gr| st.registry.by_group_resource(gr).is_none())
                .cloned()
                .collect();
            for gr in unserved {
                tracing::warn!(resource = %gr.resource, group = %gr.group, "removing objects whose CRD is gone");
                remove_all(&mut st, &store.tx, &gr);
            }
        }
        if fresh {
            store.standard_namespaces();
        }
        Ok(store)
    }

    fn blank(signing_key: SigningKey, journal: Option<Arc<Journal>>) -> Self {
        let (tx, _) = broadcast::channel(WATCH_BUFFER);
        let endpoints = Arc::new(Endpoints::default());
        Store {
            state: Mutex::new(State {
                rv: 0,
                registry: Registry::builtin(),
                objects: HashMap::new(),
                history: VecDeque::new(),
                history_bytes: 0,
                allocator: defaults::Allocator::default(),
                rbac_rv: 0,
                endpoints: endpoints.clone(),
                journal: None,
            }),
            tx,
            converter: RwLock::new(None),
            signing_key,
            policy: Mutex::new(None),
            tokens: TokenCache::default(),
            endpoints,
            journal,
            faults: crate::faults::Faults::default(),
        }
    }

    /// The faults injected into this cluster's API server.
    pub fn faults(&self) -> &crate::faults::Faults {
        &self.faults
    }

    fn standard_namespaces(&self) {
        if let Some(ns) = self.resolve("", "v1", "namespaces") {
            for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
                let obj =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                let opts = WriteOptions {
                    manager: "kube-apiserver".into(),
                    ..WriteOptions::default()
                };
                // Creating the standard namespaces in an empty store cannot fail.
                let _ = self.create(&ns, "", obj, &opts);
            }
        }
    }

    /// Puts back what a journal held: objects, resourceVersion, the served custom resources,
    /// allocated Service addresses, and the journal's changes as the watch history.
    fn restore(&self, loaded: journal::Loaded) {
        let mut guard = self.lock();
        let st = &mut *guard;
        let from_snapshot = loaded.snapshot.len();
        for (index, record) in loaded
            .snapshot
            .into_iter()
            .chain(loaded.journal)
            .enumerate()
        {
            let namespace = meta_str(&record.object, "namespace").to_owned();
            let key = (
                namespace.clone(),
                meta_str(&record.object, "name").to_owned(),
            );
            let object = Arc::new(record.object);
            let objects = st.objects.entry(record.gr.clone()).or_default();
            let previous = match record.kind {
                EventType::Deleted => objects.remove(&key),
                _ => objects.insert(key, object.clone()),
            };
            let ev = Arc::new(Event {
                rv: record.rv,
                kind: record.kind,
                gr: record.gr,
                namespace,
                object,
                previous: previous.filter(|_| record.kind != EventType::Added),
                line: OnceLock::new(),
            });
            st.endpoints.observe(&ev);
            if index >= from_snapshot {
                remember(st, ev);
            }
        }
        st.rv = loaded.rv;
        st.rbac_rv = loaded.rv;
        let crds = GroupResource {
            group: "apiextensions.k8s.io".into(),
            resource: "customresourcedefinitions".into(),
        };
        let crds: Vec<Arc<Value>> = st
            .objects
            .get(&crds)
            .into_iter()
            .flat_map(Objects::values)
            .cloned()
            .collect();
        for crd in crds {
            st.registry.apply_crd(&crd);
        }
        let services = GroupResource {
            group: String::new(),
            resource: "services".into(),
        };
        for service in st
            .objects
            .get(&services)
            .into_iter()
            .flat_map(Objects::values)
        {
            st.allocator.observe(service);
        }
    }

    /// Waits until every change made so far is on disk (at once when the store is in
    /// memory): a write is answered only then. Fails once the journal can no longer be
    /// written.
    pub async fn persisted(&self) -> Result<()> {
        if self.journal.is_none() {
            return Ok(());
        }
        self.persisted_to(self.resource_version()).await
    }

    /// Waits until every change up to `rv` is on disk (at once when the store is in memory):
    /// what a watch sends, a restart cannot take back.
    pub async fn persisted_to(&self, rv: u64) -> Result<()> {
        let Some(journal) = &self.journal else {
            return Ok(());
        };
        let mut synced = journal.synced();
        let state = synced
            .wait_for(|s| s.rv >= rv || s.failed.is_some())
            .await
            .map_err(|_| Error::Internal("the sandbox's journal writer stopped".into()))?;
        match &state.failed {
            Some(why) if state.rv < rv => Err(Error::Internal(format!(
                "the sandbox could not store the change: {why}"
            ))),
            _ => Ok(()),
        }
    }

    /// Refuses a change once the journal can no longer keep changes (a change it cannot keep
    /// must not show either: it would be gone at the next start).
    fn writable(&self) -> Result<()> {
        match self.journal.as_ref().and_then(|j| j.failed()) {
            Some(why) => Err(Error::Internal(format!(
                "the sandbox can no longer store changes: {why}"
            ))),
            None => Ok(()),
        }
    }

    /// Writes out what the journal still holds and stops it (nothing more is kept after).
    pub fn close(&self) {
        if let Some(journal) = &self.journal {
            journal.close();
        }
    }

    /// The key signing this cluster's ServiceAccount tokens.
    pub fn signing_key(&self) -> &SigningKey {
        &self.signing_key
    }

    /// Tokens that authenticated lately (kube-apiserver's token cache).
    pub fn token_cache(&self) -> &TokenCache {
        &self.tokens
    }

    /// The cluster's RBAC policy, read again only after an RBAC object changed.
    pub fn policy(&self) -> Arc<Policy> {
        let stamp = self.lock().rbac_rv;
        let cached = self.policy.lock().ok().and_then(|slot| slot.clone());
        if let Some(policy) = cached.filter(|p| p.stamp() == stamp) {
            return policy;
        }
        let policy = Arc::new(Policy::load(self, stamp));
        if let Ok(mut slot) = self.policy.lock() {
            *slot = Some(policy.clone());
        }
        policy
    }

    /// Installs the conversion every CRD with `conversion.strategy: Webhook` uses (the
    /// sandbox runs it in-process where a real API server would call the webhook service).
    pub fn set_converter(&self, converter: Converter) {
        if let Ok(mut slot) = self.converter.write() {
            *slot = Some(converter);
        }
    }

    /// `obj` as `info`'s version serves it. Objects are stored in the version they were
    /// written in; reads convert them (webhook CRDs through the converter, others by
    /// relabelling, as with conversion strategy `None`). An object already in that version is
    /// borrowed, not copied: most reads and every write's answer are.
    pub fn to_version<'a>(&self, info: &ResourceInfo, obj: &'a Value) -> Result<Cow<'a, Value>> {
        let av = info.api_version();
        if obj.get("apiVersion").and_then(Value::as_str) == Some(av.as_str()) {
            return Ok(Cow::Borrowed(obj));
        }
        if crate::events::is_events_api(info) {
            return Ok(Cow::Owned(crate::events::from_core(obj)));
        }
        if info.conversion_webhook {
            let converter = self.converter.read().ok().and_then(|c| c.clone());
            let converted = match (converter, &info.webhook) {
                (Some(converter), _) => converter(obj, &av),
                (None, Some(webhook)) => {
                    crate::webhook::convert(webhook, &self.endpoints, obj, &av)
                }
                (None, None) => Err("the CRD names no webhook".into()),
            };
            return converted.map(Cow::Owned).map_err(|e| {
                Error::Internal(format!(
                    "conversion webhook for {} failed: {e}",
                    info.qualified()
                ))
            });
        }
        let mut obj = obj.clone();
        obj["apiVersion"] = Value::String(av);
        Ok(Cow::Owned(obj))
    }

    /// `obj` (written in `info`'s version) in the version it is stored in: converted by the
    /// webhook when `info` is not the storage version of a webhook-converted kind, and Events
    /// written through `events.k8s.io` in their core form.
    fn to_storage(&self, st: &State, info: &ResourceInfo, obj: Value) -> Result<Value> {
        if crate::events::is_events_api(info) {
            return Ok(crate::events::to_core(&obj));
        }
        let Some(storage) = info
            .storage_version
            .as_deref()
            .and_then(|v| st.registry.get(&info.group, v, &info.plural))
        else {
            return Ok(obj);
        };
        Ok(self.converted(&storage, &obj)?.unwrap_or(obj))
    }

    /// `obj` converted to `info`'s version ([`Store::to_version`]), or none when it is in
    /// that version already (the caller keeps what it holds).
    fn converted(&self, info: &ResourceInfo, obj: &Value) -> Result<Option<Value>> {
        Ok(match self.to_version(info, obj)? {
            Cow::Borrowed(_) => None,
            Cow::Owned(converted) => Some(converted),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Look a served resource up.
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.lock().registry.get(group, version, plural)
    }

    /// Any served version of a group resource.
    pub fn resolve_group_resource(&self, gr: &GroupResource) -> Option<Arc<ResourceInfo>> {
        self.lock().registry.by_group_resource(gr).cloned()
    }

    /// A snapshot of the registry (discovery, OpenAPI).
    pub fn registry(&self) -> Registry {
        self.lock().registry.clone()
    }

    /// Current resourceVersion of the cluster.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }

    /// Subscribe to every future event of the cluster.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
}
