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

/// Store an object with the next resourceVersion and emit its event.
pub(super) fn commit(
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

pub(super) fn emit(
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
