//! Storage of one virtual cluster: objects, resourceVersion counter, event history, watch
//! fan-out. No HTTP here; the HTTP layer translates requests into these calls.

use crate::auth::jwt::SigningKey;
use crate::auth::rbac::Policy;
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
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::unix::fs::DirBuilderExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use tokio::sync::broadcast;

/// Number of events kept for watch resumption.
pub const HISTORY: usize = 20_000;
/// Events a live watch may fall behind before it is told 410 and must relist, as
/// kube-apiserver ends a watcher whose buffer fills. Allocated up front for every cluster, so
/// it is kept far below the history's length (20,000 slots were ~0.6 MiB a cluster).
pub const WATCH_BUFFER: usize = 4_096;
/// Bytes of watch frames the history may hold, whatever the count: resuming a watch from
/// further back gets 410 Gone and relists, as with a compacted kube-apiserver.
pub const HISTORY_BYTES: usize = 64 << 20;

/// Watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Object created.
    Added,
    /// Object changed.
    Modified,
    /// Object removed.
    Deleted,
}

impl EventType {
    /// Wire name (`ADDED`...).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as recorded in the history and fanned out to watchers.
#[derive(Debug)]
pub struct Event {
    /// resourceVersion of the change.
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// Resource of the object.
    pub gr: GroupResource,
    /// Namespace of the object ("" when cluster-scoped).
    pub namespace: String,
    /// The object after the change (before, with a new RV, for deletions).
    pub object: Arc<Value>,
    /// For a change (`Modified`), the object before it: a watch filtered by a selector
    /// tells from it whether the object entered or left the selection.
    pub previous: Option<Arc<Value>>,
    line: OnceLock<Arc<str>>,
}

impl Event {
    /// An event not recorded in the history (controllers' internal use).
    pub fn synthetic(gr: GroupResource, object: Arc<Value>) -> Self {
        let namespace = meta_str(&object, "namespace").to_owned();
        Event {
            rv: 0,
            kind: EventType::Modified,
            gr,
            namespace,
            object,
            previous: None,
            line: OnceLock::new(),
        }
    }

    /// The compact one-line JSON watch frame `{"type":..,"object":..}` (computed once).
    pub fn line(&self) -> Arc<str> {
        self.line
            .get_or_init(|| {
                let obj = serde_json::to_string(&*self.object).unwrap_or_else(|_| "{}".into());
                Arc::from(format!(
                    "{{\"type\":\"{}\",\"object\":{obj}}}\n",
                    self.kind.as_str()
                ))
            })
            .clone()
    }
}

type Objects = BTreeMap<(String, String), Arc<Value>>;

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

/// A check of the object a write is about to store (given the stored one on updates), run
/// after defaulting: admission control, such as RBAC's escalation prevention.
#[derive(Clone)]
pub struct Admission(Arc<AdmissionCheck>);

/// The function an [`Admission`] runs: (stored object, object to store).
type AdmissionCheck = dyn Fn(Option<&Value>, &Value) -> Result<()> + Send + Sync;

impl Admission {
    /// An admission check.
    pub fn new(
        check: impl Fn(Option<&Value>, &Value) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        Admission(Arc::new(check))
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission(..)")
    }
}

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer, persist nothing.
    pub dry_run: bool,
    /// Field manager (`fieldManager` or derived from the User-Agent).
    pub manager: String,
    /// Subresource written: "" or "status".
    pub subresource: String,
    /// The body is a server-side apply result that already carries its managedFields.
    pub applied: bool,
    /// A check the object must pass before it is stored.
    pub admit: Option<Admission>,
    /// What to do with fields a built-in kind does not have (`fieldValidation`).
    pub field_validation: crate::typed::FieldValidation,
    /// The warnings the write gave (unknown fields under `Warn`), for `Warning` headers.
    pub warnings: Arc<Mutex<Vec<String>>>,
}

impl WriteOptions {
    /// Decodes `object` as its built-in kind's type, as `fieldValidation` says.
    fn decode(&self, info: &ResourceInfo, object: &mut Value) -> Result<()> {
        crate::validation::decodable(info, object)?;
        let warnings = crate::typed::admit(info, object, self.field_validation)?;
        if !warnings.is_empty()
            && let Ok(mut kept) = self.warnings.lock()
        {
            kept.extend(warnings);
        }
        Ok(())
    }
}

/// Options of a deletion.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `Background` (default), `Foreground` or `Orphan`.
    pub propagation: Option<String>,
    /// Precondition on uid.
    pub uid: Option<String>,
    /// Precondition on resourceVersion.
    pub resource_version: Option<String>,
}

/// Result of a deletion.
#[derive(Debug, Clone)]
pub enum Deleted {
    /// The object is gone; this was its last state.
    Gone(Value),
    /// The object is being deleted (finalizers pending); this is its current state.
    Pending(Value),
}

/// A list query.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Label selector.
    pub labels: LabelSelector,
    /// Field selector.
    pub fields: FieldSelector,
    /// Page size (0 = all).
    pub limit: usize,
    /// Continue token from a previous page.
    pub continue_token: Option<String>,
    /// The resourceVersion to read at (`None`: the latest); a continue token says its own.
    pub at: Option<u64>,
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListResult {
    /// Matching objects.
    pub items: Vec<Arc<Value>>,
    /// resourceVersion of the list.
    pub resource_version: u64,
    /// Token for the next page.
    pub continue_token: Option<String>,
    /// Number of matching items after this page (when paginated).
    pub remaining: Option<usize>,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// Synthetic ADDED events for the current objects, then live events.
    Now,
    /// Replay every event after this resourceVersion.
    After(u64),
}

/// A started watch: events to replay, a receiver of later ones, and the RV at the start.
pub type WatchStart = (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>, u64);

/// The storage of one virtual cluster.
pub struct Store {
    state: Mutex<State>,
    tx: broadcast::Sender<Arc<Event>>,
    converter: RwLock<Option<Converter>>,
    /// The key signing this cluster's ServiceAccount tokens.
    signing_key: SigningKey,
    /// The RBAC policy last read, reused until an RBAC object changes.
    policy: Mutex<Option<Arc<Policy>>>,
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

fn not_found(info: &ResourceInfo, name: &str) -> Error {
    Error::NotFound(format!("{} \"{name}\" not found", info.qualified()))
}

fn conflict(info: &ResourceInfo, name: &str) -> Error {
    Error::Conflict {
        message: format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            info.qualified()
        ),
        fields: Vec::new(),
    }
}

fn namespaces_gr() -> GroupResource {
    GroupResource {
        group: String::new(),
        resource: "namespaces".into(),
    }
}

fn is_crd(info: &ResourceInfo) -> bool {
    info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions"
}

/// Everything but metadata and status, for generation bumps.
fn spec_differs(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
        }
        v
    };
    strip(a) != strip(b)
}

/// Whether a write changes nothing: same content and same field ownership (managedFields
/// timestamps and entry order aside), so a new manager sharing a value is still recorded,
/// while an apply that only moves its own entry is not persisted.
fn same_content(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        let md = meta::metadata_mut(&mut v);
        if let Some(Value::Array(entries)) = md.get_mut("managedFields") {
            for entry in entries.iter_mut().filter_map(Value::as_object_mut) {
                entry.remove("time");
            }
            entries.sort_by_key(|e| {
                ["manager", "operation", "subresource", "apiVersion"]
                    .map(|k| e[k].as_str().unwrap_or_default().to_owned())
            });
        }
        v
    };
    strip(a) == strip(b)
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
            .flat_map(BTreeMap::values)
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
            .flat_map(BTreeMap::values)
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
    /// relabelling, as with conversion strategy `None`).
    pub fn to_version(&self, info: &ResourceInfo, obj: &Value) -> Result<Value> {
        let av = info.api_version();
        if obj.get("apiVersion").and_then(Value::as_str) == Some(av.as_str()) {
            return Ok(obj.clone());
        }
        if crate::events::is_events_api(info) {
            return Ok(crate::events::from_core(obj));
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
            return converted.map_err(|e| {
                Error::Internal(format!(
                    "conversion webhook for {} failed: {e}",
                    info.qualified()
                ))
            });
        }
        let mut obj = obj.clone();
        obj["apiVersion"] = Value::String(av);
        Ok(obj)
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
        self.to_version(&storage, &obj)
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

    /// Get one object.
    pub fn get(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<Arc<Value>> {
        let st = self.lock();
        st.objects
            .get(&info.group_resource())
            .and_then(|m| m.get(&(ns.to_owned(), name.to_owned())))
            .cloned()
            .ok_or_else(|| not_found(info, name))
    }

    /// List objects of a resource, in one namespace or all (`ns = None`).
    pub fn list(&self, info: &ResourceInfo, ns: Option<&str>, q: &ListQuery) -> Result<ListResult> {
        let keys = paging::Keys {
            namespace: ns,
            namespaced: info.namespaced,
        };
        let (start, at) = match &q.continue_token {
            Some(t) => {
                let token = keys.decode(t)?;
                (Some(token.after), token.rv)
            }
            None => (None, q.at),
        };
        let st = self.lock();
        let gr = info.group_resource();
        let snapshot = match at {
            Some(rv) => st
                .as_of(&gr, rv)
                .map_err(|too_old| match (&start, too_old) {
                    (Some(after), true) => Error::ContinueExpired {
                        token: keys.encode(-1, after),
                    },
                    (None, true) => Error::Expired(
                        "The resourceVersion for the provided list is too old.".into(),
                    ),
                    (_, false) => Error::Storage(
                        "etcdserver: mvcc: required revision is a future revision".into(),
                    ),
                })?,
            None => None,
        };
        let listed_at = at.unwrap_or(st.rv);
        let mut items = Vec::new();
        let mut next = None;
        let mut remaining = None;
        if let Some(objs) = snapshot.as_ref().or_else(|| st.objects.get(&gr)) {
            use std::ops::Bound::{Excluded, Included, Unbounded};
            let lower = match (&start, ns) {
                (Some(k), _) => Excluded(k.clone()),
                (None, Some(n)) => Included((n.to_owned(), String::new())),
                (None, None) => Unbounded,
            };
            let mut iter = objs
                .range((lower, Unbounded))
                .take_while(|((ons, _), _)| ns.is_none_or(|n| n == ons))
                .filter(|(_, o)| {
                    q.fields
                        .pinned_name()
                        .is_none_or(|n| meta_str(o, "name") == n)
                        && q.labels.matches(o)
                        && q.fields.matches(o)
                });
            for (key, obj) in iter.by_ref() {
                items.push(obj.clone());
                if q.limit > 0 && items.len() == q.limit {
                    next = Some(key.clone());
                    break;
                }
            }
            if next.is_some() {
                let rest = iter.count();
                if rest == 0 {
                    next = None;
                } else if q.labels.is_empty() && q.fields.is_empty() {
                    // kube-apiserver counts what remains only for unfiltered lists.
                    remaining = Some(rest);
                }
            }
        }
        Ok(ListResult {
            items,
            resource_version: listed_at,
            continue_token: next.map(|key| keys.encode(listed_at as i64, &key)),
            remaining,
        })
    }

    /// Create an object.
    pub fn create(
        &self,
        info: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value> {
        if !obj.is_object() {
            return Err(Error::BadRequest(
                "the body of the request was not an object".into(),
            ));
        }
        let body_ns = meta_str(&obj, "namespace").to_owned();
        if info.namespaced && !body_ns.is_empty() && body_ns != ns {
            return Err(Error::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            ));
        }
        let mut name = meta_str(&obj, "name").to_owned();
        if name.is_empty() {
            let prefix = meta_str(&obj, "generateName");
            if prefix.is_empty() {
                return Err(Error::Invalid(format!(
                    "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                    info.kind
                )));
            }
            name = format!("{prefix}{}", meta::name_suffix());
        }
        validate_name(info, &name)?;
        validate_labels(info, &name, &obj)?;
        if is_crd(info) {
            let want = crd_name(&obj);
            if want.as_deref() != Some(name.as_str()) {
                return Err(Error::Invalid(format!(
                    "CustomResourceDefinition.apiextensions.k8s.io \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"
                )));
            }
        }
        let mut st = self.lock();
        self.writable()?;
        if info.namespaced {
            check_namespace_writable(&st, info, &name, ns)?;
        }
        let gr = info.group_resource();
        let key = (
            if info.namespaced {
                ns.to_owned()
            } else {
                String::new()
            },
            name.clone(),
        );
        if st.objects.get(&gr).is_some_and(|m| m.contains_key(&key)) {
            return Err(Error::AlreadyExists(format!(
                "{} \"{name}\" already exists",
                info.qualified()
            )));
        }
        {
            let root = obj
                .as_object_mut()
                .ok_or_else(|| Error::Internal("not an object".into()))?;
            root.insert("apiVersion".into(), Value::String(info.api_version()));
            root.insert("kind".into(), Value::String(info.kind.clone()));
        }
        if info.status
            && info.plural != "namespaces"
            && !opts.applied
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        {
            let md = meta::metadata_mut(&mut obj);
            md.insert("name".into(), Value::String(name.clone()));
            if info.namespaced {
                md.insert("namespace".into(), Value::String(ns.to_owned()));
            } else {
                md.remove("namespace");
            }
            md.insert("uid".into(), Value::String(meta::new_uid()));
            md.insert(
                "creationTimestamp".into(),
                Value::String(meta::now_rfc3339()),
            );
            md.remove("deletionTimestamp");
            md.remove("deletionGracePeriodSeconds");
            md.remove("selfLink");
            if info.generation {
                md.insert("generation".into(), json!(1));
            } else {
                md.remove("generation");
            }
        }
        meta::drop_empty_metadata(&mut obj);
        // Decoded as its type first, as kube-apiserver decodes a body before it defaults
        // and validates it.
        opts.decode(info, &mut obj)?;
        defaults::prepare_create(info, &mut obj);
        defaults::apply(info, &mut obj);
        crate::structural::validate(info, &obj)?;
        crate::validation::builtin(info, None, &obj)?;
        st.allocator.allocate(info, &mut obj);
        if info.plural == "namespaces" && info.group.is_empty() {
            meta::metadata_mut(&mut obj)
                .entry("labels")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .map(|l| {
                    l.insert(
                        "kubernetes.io/metadata.name".into(),
                        Value::String(name.clone()),
                    )
                });
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
        }
        if is_crd(info) {
            obj["status"] = crd_status(&obj);
        }
        if !opts.applied {
            patch::record_update(None, &mut obj, &writer(info, opts));
        }
        if let Some(admit) = &opts.admit {
            (admit.0)(None, &obj)?;
        }
        let obj = self.to_storage(&st, info, obj)?;
        if opts.dry_run {
            return Ok(obj);
        }
        if is_crd(info) {
            st.registry.apply_crd(&obj);
        }
        let (_, stored) = commit(&mut st, &self.tx, &gr, key, obj, EventType::Added);
        Ok(stored)
    }

    /// Replace an object (PUT), honouring resourceVersion preconditions and subresources.
    pub fn update(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value> {
        let body_name = meta_str(&obj, "name");
        if !body_name.is_empty() && body_name != name {
            return Err(Error::BadRequest(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        // Custom resources and Services refuse unconditional updates.
        let unconditional = match (info.custom, info.group.as_str(), info.plural.as_str()) {
            (true, _, _) => Some((info.qualified(), "0x0")),
            (false, "", "services") => Some((info.kind.clone(), "\"\"")),
            _ => None,
        };
        let refused = unconditional.filter(|_| meta_str(&obj, "resourceVersion").is_empty());
        self.modify(info, ns, name, opts, |_| match refused {
            Some((subject, value)) => Err(Error::Invalid(format!(
                "{subject} \"{name}\" is invalid: metadata.resourceVersion: Invalid value: {value}: must be specified for an update"
            ))),
            None => Ok(obj),
        })
    }

    /// Read-modify-write under the cluster lock; `f` receives the current object.
    pub fn modify(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &WriteOptions,
        f: impl FnOnce(&Value) -> Result<Value>,
    ) -> Result<Value> {
        let mut st = self.lock();
        self.writable()?;
        let gr = info.group_resource();
        let key = (ns.to_owned(), name.to_owned());
        let old = st
            .objects
            .get(&gr)
            .and_then(|m| m.get(&key))
            .cloned()
            .ok_or_else(|| not_found(info, name))?;
        // Writes at another version than the stored one start from the converted object.
        let old =
            if old.get("apiVersion").and_then(Value::as_str) == Some(info.api_version().as_str()) {
                old
            } else {
                Arc::new(self.to_version(info, &old)?)
            };
        let new = f(&old)?;
        let new = prepare_update(info, &old, new, opts)?;
        if let Some(admit) = &opts.admit {
            (admit.0)(Some(&old), &new)?;
        }
        if same_content(&old, &new) && !opts.dry_run {
            return Ok((*old).clone());
        }
        let new = self.to_storage(&st, info, new)?;
        if opts.dry_run {
            return Ok(new);
        }
        if is_crd(info) {
            st.registry.apply_crd(&new);
        }
        let deleting = !meta_str(&new, "deletionTimestamp").is_empty();
        let ns_pending = info.plural == "namespaces"
            && info.group.is_empty()
            && new
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
        if deleting && finalizers(&new).is_empty() && !ns_pending {
            // The DELETED event carries the last stored state (as etcd's delete does); the
            // writer gets its own.
            remove_object(&mut st, &self.tx, info, &key, (*old).clone());
            return Ok(new);
        }
        let (_, stored) = commit(&mut st, &self.tx, &gr, key, new, EventType::Modified);
        Ok(stored)
    }

    /// Server-side apply: create the object if absent, else apply onto it.
    pub fn apply(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        applied: &Value,
        force: bool,
        opts: &WriteOptions,
    ) -> Result<Value> {
        let body_name = meta_str(applied, "name");
        if !body_name.is_empty() && body_name != name {
            return Err(Error::BadRequest(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let w = writer(info, opts);
        let mut opts = opts.clone();
        opts.applied = true;
        match self.get(info, ns, name) {
            Ok(_) => self.modify(info, ns, name, &opts, |old| {
                patch::apply(Some(old), applied, &w, force)
            }),
            Err(Error::NotFound(_)) if opts.subresource.is_empty() => {
                let mut obj = patch::apply(None, applied, &w, force)?;
                meta::metadata_mut(&mut obj).insert("name".into(), Value::String(name.to_owned()));
                self.create(info, ns, obj, &opts)
            }
            Err(e) => Err(e),
        }
    }

    /// Delete an object, honouring finalizers and propagation policy.
    pub fn delete(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted> {
        let mut st = self.lock();
        self.writable()?;
        let gr = info.group_resource();
        let key = (ns.to_owned(), name.to_owned());
        let old = st
            .objects
            .get(&gr)
            .and_then(|m| m.get(&key))
            .cloned()
            .ok_or_else(|| not_found(info, name))?;
        if opts
            .uid
            .as_deref()
            .is_some_and(|u| u != meta_str(&old, "uid"))
        {
            return Err(Error::Conflict {
                message: format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the UID in the precondition ({}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                    qualified_kind(info),
                    opts.uid.as_deref().unwrap_or(""),
                    meta_str(&old, "uid")
                ),
                fields: Vec::new(),
            });
        }
        if let Some(wanted) = opts
            .resource_version
            .as_deref()
            .filter(|r| *r != meta_str(&old, "resourceVersion"))
        {
            return Err(Error::Conflict {
                message: format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the ResourceVersion in the precondition ({wanted}) does not match the ResourceVersion in record ({}). The object might have been modified",
                    qualified_kind(info),
                    meta_str(&old, "resourceVersion")
                ),
                fields: Vec::new(),
            });
        }
        let mut new = (*old).clone();
        let mut fins = finalizers(&new);
        match opts.propagation.as_deref() {
            Some("Foreground") if !fins.iter().any(|f| f == "foregroundDeletion") => {
                fins.push("foregroundDeletion".into())
            }
            Some("Orphan") if !fins.iter().any(|f| f == "orphan") => fins.push("orphan".into()),
            _ => {}
        }
        let is_namespace = info.plural == "namespaces" && info.group.is_empty();
        if fins.is_empty() && !is_namespace {
            if opts.dry_run {
                return Ok(Deleted::Gone(new));
            }
            let gone = remove_object(&mut st, &self.tx, info, &key, new);
            return Ok(Deleted::Gone(gone));
        }
        if !meta_str(&old, "deletionTimestamp").is_empty() && fins == finalizers(&old) {
            return Ok(Deleted::Pending((*old).clone()));
        }
        {
            let md = meta::metadata_mut(&mut new);
            if !md.contains_key("deletionTimestamp") {
                md.insert(
                    "deletionTimestamp".into(),
                    Value::String(meta::now_rfc3339()),
                );
                if !is_namespace {
                    md.insert("deletionGracePeriodSeconds".into(), json!(0));
                }
            }
            if fins.is_empty() {
                md.remove("finalizers");
            } else {
                md.insert("finalizers".into(), json!(fins));
            }
        }
        if is_namespace {
            new["status"]["phase"] = json!("Terminating");
        }
        if info.generation {
            let g = new["metadata"]["generation"].as_i64().unwrap_or(0);
            new["metadata"]["generation"] = json!(g + 1);
        }
        if opts.dry_run {
            return Ok(Deleted::Pending(new));
        }
        let (_, stored) = commit(&mut st, &self.tx, &gr, key, new, EventType::Modified);
        Ok(Deleted::Pending(stored))
    }

    /// Start a watch: returns the events to replay and a receiver of later ones, with no gap.
    pub fn watch(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        from: WatchFrom,
    ) -> Result<WatchStart> {
        let st = self.lock();
        let gr = info.group_resource();
        let rx = self.tx.subscribe();
        let in_ns = |e: &Event| ns.is_none_or(|n| n == e.namespace);
        let replay = match from {
            WatchFrom::Now => st
                .objects
                .get(&gr)
                .map(|m| {
                    m.iter()
                        .filter(|((ons, _), _)| ns.is_none_or(|n| n == ons))
                        .map(|((ons, _), o)| {
                            Arc::new(Event {
                                rv: st.rv,
                                kind: EventType::Added,
                                gr: gr.clone(),
                                namespace: ons.clone(),
                                object: o.clone(),
                                previous: None,
                                line: OnceLock::new(),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            WatchFrom::After(rv) => {
                let oldest = st.history.front().map(|e| e.rv).unwrap_or(st.rv + 1);
                if rv + 1 < oldest && rv < st.rv {
                    return Err(Error::Expired(format!(
                        "too old resource version: {rv} ({})",
                        oldest.saturating_sub(1)
                    )));
                }
                let start = st.history.partition_point(|e| e.rv <= rv);
                st.history
                    .range(start..)
                    .filter(|e| e.gr == gr && in_ns(e))
                    .cloned()
                    .collect()
            }
        };
        Ok((replay, rx, st.rv))
    }

    /// Objects of every resource in a namespace (namespace controller).
    pub fn namespace_contents(&self, ns: &str) -> Vec<(Arc<ResourceInfo>, String)> {
        let st = self.lock();
        let mut out = Vec::new();
        for info in st.registry.all() {
            if !info.namespaced
                || out.iter().any(|(i, _): &(Arc<ResourceInfo>, String)| {
                    i.group_resource() == info.group_resource()
                })
            {
                continue;
            }
            if let Some(objs) = st.objects.get(&info.group_resource()) {
                let range = objs.range((ns.to_owned(), String::new())..);
                for ((ons, name), _) in range {
                    if ons != ns {
                        break;
                    }
                    out.push((info.clone(), name.clone()));
                }
            }
        }
        out
    }

    /// Every object of every resource, with its resource (garbage collector scans).
    pub fn all_objects(&self) -> Vec<(Arc<ResourceInfo>, Arc<Value>)> {
        let st = self.lock();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for info in st.registry.all() {
            if !seen.insert(info.group_resource()) {
                continue;
            }
            if let Some(objs) = st.objects.get(&info.group_resource()) {
                out.extend(objs.values().map(|o| (info.clone(), o.clone())));
            }
        }
        out
    }
}

fn writer<'a>(info: &'a ResourceInfo, opts: &'a WriteOptions) -> Writer<'a> {
    Writer {
        manager: &opts.manager,
        api_version: info.api_version(),
        subresource: &opts.subresource,
        lists: if info.custom {
            crate::fields::Lists::Schema(info.schema.as_ref())
        } else {
            crate::fields::Lists::Builtin
        },
    }
}

fn crd_name(obj: &Value) -> Option<String> {
    let spec = obj.get("spec")?;
    Some(format!(
        "{}.{}",
        spec.get("names")?.get("plural")?.as_str()?,
        spec.get("group")?.as_str()?
    ))
}

fn check_namespace_writable(st: &State, info: &ResourceInfo, name: &str, ns: &str) -> Result<()> {
    let nsobj = st
        .objects
        .get(&namespaces_gr())
        .and_then(|m| m.get(&(String::new(), ns.to_owned())))
        .ok_or_else(|| Error::NotFound(format!("namespaces \"{ns}\" not found")))?;
    if !meta_str(nsobj, "deletionTimestamp").is_empty() {
        return Err(Error::Forbidden(format!(
            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
            info.qualified()
        )));
    }
    Ok(())
}

/// `Kind` (core) or `Kind.group`: how kube-apiserver names a kind in validation and
/// precondition messages.
pub fn qualified_kind(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.kind.clone()
    } else {
        format!("{}.{}", info.kind, info.group)
    }
}

/// 422 unless `name` suits the kind (Namespaces: DNS-1123 label; Services: DNS-1035
/// label; everything else: DNS-1123 subdomain).
fn validate_name(info: &ResourceInfo, name: &str) -> Result<()> {
    if info.plural == "customresourcedefinitions" {
        return Ok(());
    }
    let invalid = |why: &str| {
        Err(Error::Invalid(format!(
            "{} \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": {why}",
            qualified_kind(info)
        )))
    };
    if info.group == crate::auth::RBAC_GROUP {
        // RBAC names are path segments (`system:discovery`).
        return match name {
            "." | ".." => invalid(&format!("may not be '{name}'")),
            _ if name.contains('/') => invalid("may not contain '/'"),
            _ if name.contains('%') => invalid("may not contain '%'"),
            _ => Ok(()),
        };
    }
    let (valid, limit, rule) = match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => (meta::is_dns1123_label(name), 63, meta::DNS1123_LABEL_RULE),
        ("", "services") => (meta::is_dns1035_label(name), 63, meta::DNS1035_LABEL_RULE),
        _ => (
            meta::is_dns1123_subdomain(name),
            253,
            meta::DNS1123_SUBDOMAIN_RULE,
        ),
    };
    if valid {
        return Ok(());
    }
    if name.len() > limit {
        invalid(&format!("must be no more than {limit} characters"))
    } else {
        invalid(rule)
    }
}

/// 422 on the first label whose key or value kube-apiserver would refuse.
fn validate_labels(info: &ResourceInfo, name: &str, obj: &Value) -> Result<()> {
    let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, value) in labels {
        let problem = match (meta::label_key_problem(key), value.as_str()) {
            (Some(problem), _) => format!("\"{key}\": {problem}"),
            (None, Some(text)) if !meta::is_label_value(text) => {
                format!("\"{text}\": {}", meta::LABEL_VALUE_RULE)
            }
            _ => continue,
        };
        return Err(Error::Invalid(format!(
            "{} \"{name}\" is invalid: metadata.labels: Invalid value: {problem}",
            qualified_kind(info)
        )));
    }
    Ok(())
}

fn prepare_update(
    info: &ResourceInfo,
    old: &Value,
    mut new: Value,
    opts: &WriteOptions,
) -> Result<Value> {
    if !new.is_object() {
        return Err(Error::BadRequest(
            "the body of the request was not an object".into(),
        ));
    }
    let want = meta_str(&new, "resourceVersion");
    if !want.is_empty() && want != meta_str(old, "resourceVersion") {
        return Err(conflict(info, meta_str(old, "name")));
    }
    if opts.subresource == "status" {
        let status = new.get("status").cloned();
        let managed = new
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .cloned();
        new = old.clone();
        match status {
            Some(s) => new["status"] = s,
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        if opts.applied
            && let Some(mf) = managed
        {
            meta::metadata_mut(&mut new).insert("managedFields".into(), mf);
        }
    } else if info.status {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    if let Some(root) = new.as_object_mut() {
        root.insert("apiVersion".into(), Value::String(info.api_version()));
        root.insert("kind".into(), Value::String(info.kind.clone()));
    }
    let old_fins = finalizers(old);
    let deleting = !meta_str(old, "deletionTimestamp").is_empty();
    let added: Vec<String> = finalizers(&new)
        .into_iter()
        .filter(|f| !old_fins.contains(f))
        .collect();
    validate_labels(info, meta_str(old, "name"), &new)?;
    if deleting && !added.is_empty() {
        let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
        return Err(Error::Invalid(format!(
            "{} \"{}\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            qualified_kind(info),
            meta_str(old, "name"),
            quoted.join(", ")
        )));
    }
    {
        let old_md = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let md = meta::metadata_mut(&mut new);
        for k in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ] {
            match old_md.get(k) {
                Some(v) => md.insert(k.into(), v.clone()),
                None => md.remove(k),
            };
        }
        md.remove("selfLink");
    }
    opts.decode(info, &mut new)?;
    defaults::apply(info, &mut new);
    defaults::prepare_update(info, old, &mut new);
    crate::structural::validate(info, &new)?;
    crate::validation::builtin(info, Some(old), &new)?;
    defaults::keep_allocated(info, old, &mut new).map_err(Error::Invalid)?;
    if info.generation && spec_differs(old, &new) {
        let g = old["metadata"]["generation"].as_i64().unwrap_or(0);
        new["metadata"]["generation"] = json!(g + 1);
    }
    if is_crd(info) {
        new["status"] = crd_status_after(old.get("status"), &new);
    }
    meta::drop_empty_metadata(&mut new);
    if !opts.applied {
        patch::record_update(Some(old), &mut new, &writer(info, opts));
    }
    Ok(new)
}

impl State {
    /// The objects of `gr` as they were at `rv`, when any changed since (`None`: as they
    /// are); `Err(true)` when the history no longer reaches back to `rv`, `Err(false)` when
    /// the cluster has not reached it.
    fn as_of(&self, gr: &GroupResource, rv: u64) -> std::result::Result<Option<Objects>, bool> {
        if rv > self.rv {
            return Err(false);
        }
        if rv == self.rv {
            return Ok(None);
        }
        if self.history.front().is_none_or(|oldest| oldest.rv > rv + 1) {
            return Err(true);
        }
        let then = paging::before(&self.history, gr, rv);
        if then.is_empty() {
            return Ok(None);
        }
        let mut objects = self.objects.get(gr).cloned().unwrap_or_default();
        for (key, object) in then {
            match object {
                Some(object) => objects.insert(key, object),
                None => objects.remove(&key),
            };
        }
        Ok(Some(objects))
    }
}

/// Store an object with the next resourceVersion and emit its event.
fn commit(
    st: &mut State,
    tx: &broadcast::Sender<Arc<Event>>,
    gr: &GroupResource,
    key: (String, String),
    mut obj: Value,
    kind: EventType,
) -> (u64, Value) {
    st.rv += 1;
    let rv = st.rv;
    meta::metadata_mut(&mut obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
    let arc = Arc::new(obj);
    let previous = st
        .objects
        .entry(gr.clone())
        .or_default()
        .insert(key.clone(), arc.clone());
    let previous = previous.filter(|_| kind == EventType::Modified);
    emit(st, tx, gr, key.0, (arc.clone(), previous), kind, rv);
    (rv, (*arc).clone())
}

fn emit(
    st: &mut State,
    tx: &broadcast::Sender<Arc<Event>>,
    gr: &GroupResource,
    namespace: String,
    (object, previous): (Arc<Value>, Option<Arc<Value>>),
    kind: EventType,
    rv: u64,
) {
    let ev = Arc::new(Event {
        rv,
        kind,
        gr: gr.clone(),
        namespace,
        object,
        previous,
        line: OnceLock::new(),
    });
    if gr.group == crate::auth::RBAC_GROUP {
        st.rbac_rv = rv;
    }
    if let Some(journal) = &st.journal
        && journal.append(gr, &ev.line(), rv)
    {
        let objects = st
            .objects
            .iter()
            .map(|(gr, objects)| (gr.clone(), objects.values().cloned().collect()))
            .collect();
        journal.compact(objects);
    }
    remember(st, ev.clone());
    st.endpoints.observe(&ev);
    // No receiver is not an error: nobody is watching.
    let _ = tx.send(ev);
}

/// Keeps `ev` in the watch history, forgetting the oldest events beyond its bounds.
fn remember(st: &mut State, ev: Arc<Event>) {
    // The frame is needed by every watcher anyway; its length measures the event.
    st.history_bytes += ev.line().len();
    st.history.push_back(ev);
    while st.history.len() > HISTORY || (st.history_bytes > HISTORY_BYTES && st.history.len() > 1) {
        if let Some(old) = st.history.pop_front() {
            st.history_bytes -= old.line().len();
        }
    }
}

/// Remove an object for good: DELETED event with a new resourceVersion.
fn remove_object(
    st: &mut State,
    tx: &broadcast::Sender<Arc<Event>>,
    info: &ResourceInfo,
    key: &(String, String),
    mut last: Value,
) -> Value {
    let gr = info.group_resource();
    let before = st.objects.get_mut(&gr).and_then(|m| m.remove(key));
    st.rv += 1;
    let rv = st.rv;
    meta::metadata_mut(&mut last).insert("resourceVersion".into(), Value::String(rv.to_string()));
    let arc = Arc::new(last);
    emit(
        st,
        tx,
        &gr,
        key.0.clone(),
        (arc.clone(), before),
        EventType::Deleted,
        rv,
    );
    if is_crd(info)
        && let Some(crd_gr) = crd_group_resource(&arc)
    {
        st.registry.remove(&crd_gr);
        remove_all(st, tx, &crd_gr);
    }
    (*arc).clone()
}

/// Removes every object of `gr` (a custom resource no longer served), each with its DELETED
/// event.
fn remove_all(st: &mut State, tx: &broadcast::Sender<Arc<Event>>, gr: &GroupResource) {
    let Some(objs) = st.objects.remove(gr) else {
        return;
    };
    for ((ns, _), before) in objs {
        st.rv += 1;
        let rv = st.rv;
        let mut o = (*before).clone();
        meta::metadata_mut(&mut o).insert("resourceVersion".into(), Value::String(rv.to_string()));
        emit(
            st,
            tx,
            gr,
            ns,
            (Arc::new(o), Some(before)),
            EventType::Deleted,
            rv,
        );
    }
}

fn crd_group_resource(crd: &Value) -> Option<GroupResource> {
    let spec = crd.get("spec")?;
    Some(GroupResource {
        group: spec.get("group")?.as_str()?.to_owned(),
        resource: spec.get("names")?.get("plural")?.as_str()?.to_owned(),
    })
}
