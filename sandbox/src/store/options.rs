//! What callers tell the store about a write, a deletion, a list or a watch.

use super::*;

/// A check of the object a write is about to store (given the stored one on updates), run
/// after defaulting: admission control, such as RBAC's escalation prevention.
#[derive(Clone)]
pub struct Admission(pub(super) Arc<AdmissionCheck>);

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
    pub(super) fn decode(&self, info: &ResourceInfo, object: &mut Value) -> Result<()> {
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
