//! The store's record of events: resourceVersions, the bounded history watches resume from,
//! and the fan-out to live watches.

use super::*;

impl State {
    /// The objects of `gr` as they were at `rv`, when any changed since (`None`: as they
    /// are); `Err(true)` when the history no longer reaches back to `rv`, `Err(false)` when
    /// the cluster has not reached it.
    pub(super) fn as_of(
        &self,
        gr: &GroupResource,
        rv: u64,
    ) -> std::result::Result<Option<Objects>, bool> {
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

/// The largest request etcd takes by default (`--max-request-bytes`, 1.5 MiB). kube-apiserver
/// passes its refusal of a larger object on as a 500 in etcd's words.
pub const ETCD_REQUEST_LIMIT: usize = 1536 * 1024;

/// What etcd's request holds besides the object (without its resourceVersion) and its key:
/// kube-apiserver 1.20 with etcd 3.4 stores a custom resource of 1,572,735 bytes of JSON
/// under a 44-byte key, and refuses one byte more.
const ETCD_REQUEST_FRAMING: usize = ETCD_REQUEST_LIMIT - 1_572_735 - 44;

/// The size of the etcd request that stores `ev`'s object under `key`, as kube-apiserver
/// sends it (objects are measured as JSON, as custom resources are stored).
fn etcd_request_bytes(ev: &Event, key: &(String, String)) -> usize {
    let frame = r#"{"type":"","object":}"#.len() + ev.kind.as_str().len() + 1;
    let version = r#","resourceVersion":"""#.len() + ev.rv.to_string().len();
    let group = if ev.gr.group.is_empty() {
        0
    } else {
        ev.gr.group.len() + 1
    };
    let path = "/registry/".len() + group + ev.gr.resource.len() + 1;
    let path = path + if key.0.is_empty() { 0 } else { key.0.len() + 1 } + key.1.len();
    ev.line().len().saturating_sub(frame + version) + path + ETCD_REQUEST_FRAMING
}

/// Store an object with the next resourceVersion and emit its event; an object larger than
/// etcd stores is refused, and nothing changes.
pub(super) fn commit(
    st: &mut State,
    tx: &broadcast::Sender<Arc<Event>>,
    gr: &GroupResource,
    key: (String, String),
    mut obj: Value,
    kind: EventType,
) -> Result<(u64, Arc<Value>)> {
    let rv = st.rv + 1;
    meta::metadata_mut(&mut obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
    let previous = st
        .objects
        .get(gr)
        .and_then(|objects| objects.get(&key.0, &key.1))
        .cloned()
        .filter(|_| kind == EventType::Modified);
    let mut arc = Arc::new(obj);
    let mut ev = event(gr, key.0.clone(), (arc.clone(), previous.clone()), kind, rv);
    // The watch line is needed by every watcher anyway; it measures the object too.
    if etcd_request_bytes(&ev, &key) > ETCD_REQUEST_LIMIT {
        // kube-apiserver tries once more without managedFields, which can be large.
        let mut stripped = Value::clone(&arc);
        if meta::metadata_mut(&mut stripped)
            .remove("managedFields")
            .is_some()
        {
            arc = Arc::new(stripped);
            ev = event(gr, key.0.clone(), (arc.clone(), previous), kind, rv);
        }
        if etcd_request_bytes(&ev, &key) > ETCD_REQUEST_LIMIT {
            return Err(Error::Storage("etcdserver: request is too large".into()));
        }
    }
    st.rv = rv;
    st.objects
        .entry(gr.clone())
        .or_default()
        .insert(key, arc.clone());
    publish(st, tx, ev);
    Ok((rv, arc))
}

pub(super) fn emit(
    st: &mut State,
    tx: &broadcast::Sender<Arc<Event>>,
    gr: &GroupResource,
    namespace: String,
    change: (Arc<Value>, Option<Arc<Value>>),
    kind: EventType,
    rv: u64,
) {
    publish(st, tx, event(gr, namespace, change, kind, rv));
}

/// The event of a change to `object` (from `previous`) at `rv`.
fn event(
    gr: &GroupResource,
    namespace: String,
    (object, previous): (Arc<Value>, Option<Arc<Value>>),
    kind: EventType,
    rv: u64,
) -> Arc<Event> {
    Arc::new(Event {
        rv,
        kind,
        gr: gr.clone(),
        namespace,
        object,
        previous,
        line: OnceLock::new(),
    })
}

/// Journals `ev`, keeps it in the history and sends it to the live watches.
fn publish(st: &mut State, tx: &broadcast::Sender<Arc<Event>>, ev: Arc<Event>) {
    let rv = ev.rv;
    if ev.gr.group == crate::auth::RBAC_GROUP {
        st.rbac_rv = rv;
    }
    if let Some(journal) = &st.journal
        && journal.append(&ev.gr, &ev.line(), rv)
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
pub(super) fn remember(st: &mut State, ev: Arc<Event>) {
    // The frame is needed by every watcher anyway; its length measures the event.
    st.history_bytes += ev.line().len();
    st.history.push_back(ev);
    while st.history.len() > HISTORY || (st.history_bytes > HISTORY_BYTES && st.history.len() > 1) {
        if let Some(old) = st.history.pop_front() {
            st.history_bytes -= old.line().len();
        }
    }
}
