//! Watch events as the store records and sends them.

use super::*;

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
    /// The event as a watch frame, made once for every watcher.
    pub(super) line: OnceLock<Arc<str>>,
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
