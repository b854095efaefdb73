//! Durable state of one virtual cluster: an append-only journal of its changes beside a
//! snapshot of its objects, both plain text in one folder.
//!
//! Every line is `<crc32, 8 hex digits> <group>\t<resource>\t<watch frame>`, the frame being
//! the `{"type":..,"object":..}` the change was already serialized into for watchers, so
//! journaling costs one copy. Writes queue their line under the store's lock (which keeps the
//! journal in resourceVersion order); one flusher thread writes and fsyncs what queued (a group
//! commit: one fsync covers every write that arrived meanwhile), and a write is answered only
//! once it is synced ([`Journal::synced`]). When the journal outgrows the last snapshot, the
//! flusher writes the objects to a new snapshot, renames it into place and empties the journal.
//!
//! Loading reads the snapshot, then the journal's later records. A torn last record (a crash
//! in the middle of an append) is dropped with a warning; any other damage refuses the whole
//! folder in words, never half-loading it.

use crate::error::{Error, Result};
use crate::registry::GroupResource;
use crate::store::EventType;
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use tokio::sync::watch;

/// File name of the snapshot.
pub const SNAPSHOT: &str = "snapshot";
/// File name of the journal.
pub const JOURNAL: &str = "journal";
/// First line of a snapshot, before its resourceVersion.
const HEADER: &str = "sveltos-events-sandbox snapshot v1 rv=";
/// The journal is compacted once it is this large and twice the snapshot's size.
const COMPACT_FLOOR: u64 = 16 << 20;

/// One stored change.
#[derive(Debug)]
pub struct Record {
    /// Resource of the object.
    pub gr: GroupResource,
    /// What happened (snapshot records are `Added`).
    pub kind: EventType,
    /// The object after the change (its last state, for deletions).
    pub object: Value,
    /// resourceVersion of the change.
    pub rv: u64,
}

/// What a folder held.
#[derive(Debug, Default)]
pub struct Loaded {
    /// resourceVersion the cluster had reached.
    pub rv: u64,
    /// The objects at the snapshot's resourceVersion.
    pub snapshot: Vec<Record>,
    /// The changes after it, in order.
    pub journal: Vec<Record>,
    /// Bytes of the snapshot file.
    snapshot_bytes: u64,
    /// Bytes of the journal's whole records (a torn tail excluded).
    journal_bytes: u64,
}

impl Loaded {
    /// Nothing was stored: a new cluster.
    pub fn is_empty(&self) -> bool {
        self.rv == 0
    }
}

/// The line of a change.
fn encode(out: &mut Vec<u8>, gr: &GroupResource, frame: &str) {
    let frame = frame.trim_end_matches('\n');
    let mut crc = crc32fast::Hasher::new();
    for part in [gr.group.as_str(), "\t", gr.resource.as_str(), "\t", frame] {
        crc.update(part.as_bytes());
    }
    let _ = write!(out, "{:08x} ", crc.finalize());
    for part in [
        gr.group.as_str(),
        "\t",
        gr.resource.as_str(),
        "\t",
        frame,
        "\n",
    ] {
        out.extend_from_slice(part.as_bytes());
    }
}

/// Why a stored line does not read back (the reason of [`Error::Damaged`]).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The snapshot's first line is not the sandbox's header.
    #[error("not a sandbox snapshot")]
    NotSnapshot,
    /// A snapshot's last line lacks its newline.
    #[error("an unfinished last line")]
    Unfinished,
    /// The line is not UTF-8 text.
    #[error("not UTF-8")]
    NotUtf8,
    /// The line does not start with a hexadecimal checksum.
    #[error("no checksum")]
    NoChecksum,
    /// The line's checksum does not match its contents.
    #[error("checksum mismatch")]
    ChecksumMismatch,
    /// The group, resource or frame is missing.
    #[error("missing fields")]
    MissingFields,
    /// The frame is not JSON.
    #[error("not a watch frame: {0}")]
    NotFrame(serde_json::Error),
    /// The frame's `type` is not `ADDED`, `MODIFIED` or `DELETED`.
    #[error("unknown change type")]
    UnknownType,
    /// The frame's object has no numeric resourceVersion.
    #[error("an object without a resourceVersion")]
    NoResourceVersion,
    /// A journal record does not follow the one before it.
    #[error("resourceVersion {rv} follows {after}: records are missing or out of order")]
    OutOfOrder {
        /// The record's resourceVersion.
        rv: u64,
        /// The resourceVersion read before it.
        after: u64,
    },
}

/// A line (without its newline) checked and read back.
fn decode(line: &[u8]) -> std::result::Result<Record, RecordError> {
    let text = std::str::from_utf8(line).map_err(|_| RecordError::NotUtf8)?;
    let (crc, body) = text.split_once(' ').ok_or(RecordError::NoChecksum)?;
    let crc = u32::from_str_radix(crc, 16).map_err(|_| RecordError::NoChecksum)?;
    if crc32fast::hash(body.as_bytes()) != crc {
        return Err(RecordError::ChecksumMismatch);
    }
    let mut parts = body.splitn(3, '\t');
    let (Some(group), Some(resource), Some(frame)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(RecordError::MissingFields);
    };
    let mut frame: Value = serde_json::from_str(frame).map_err(RecordError::NotFrame)?;
    let kind = match frame["type"].as_str() {
        Some("ADDED") => EventType::Added,
        Some("MODIFIED") => EventType::Modified,
        Some("DELETED") => EventType::Deleted,
        _ => return Err(RecordError::UnknownType),
    };
    let object = frame["object"].take();
    let rv = object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or(RecordError::NoResourceVersion)?;
    let gr = GroupResource {
        group: group.to_owned(),
        resource: resource.to_owned(),
    };
    Ok(Record {
        gr,
        kind,
        object,
        rv,
    })
}

/// Reads what `dir` holds (nothing when it has no state yet).
pub fn load(dir: &Path) -> Result<Loaded> {
    let mut loaded = Loaded::default();
    let snapshot = dir.join(SNAPSHOT);
    match fs::read(&snapshot) {
        Ok(bytes) => read_snapshot(&snapshot, &bytes, &mut loaded)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::file("read", &snapshot)(e)),
    }
    let journal = dir.join(JOURNAL);
    match fs::read(&journal) {
        Ok(bytes) => read_journal(&journal, &bytes, &mut loaded)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::file("read", &journal)(e)),
    }
    Ok(loaded)
}

fn read_snapshot(path: &Path, bytes: &[u8], loaded: &mut Loaded) -> Result<()> {
    let corrupt = |offset: usize, reason: RecordError| Error::Damaged {
        path: path.to_owned(),
        offset: offset as u64,
        reason,
    };
    let mut offset = 0;
    let mut lines = bytes.split_inclusive(|b| *b == b'\n');
    let header = lines.next().unwrap_or_default();
    let rv = std::str::from_utf8(header)
        .ok()
        .and_then(|h| h.strip_suffix('\n')?.strip_prefix(HEADER)?.parse().ok())
        .ok_or_else(|| corrupt(0, RecordError::NotSnapshot))?;
    offset += header.len();
    for line in lines {
        let Some(body) = line.strip_suffix(b"\n") else {
            // Snapshots are renamed into place whole: an unfinished line is damage.
            return Err(corrupt(offset, RecordError::Unfinished));
        };
        let record = decode(body).map_err(|reason| corrupt(offset, reason))?;
        offset += line.len();
        loaded.snapshot.push(record);
    }
    loaded.rv = rv;
    loaded.snapshot_bytes = bytes.len() as u64;
    Ok(())
}

fn read_journal(path: &Path, bytes: &[u8], loaded: &mut Loaded) -> Result<()> {
    let corrupt = |offset: usize, reason: RecordError| Error::Damaged {
        path: path.to_owned(),
        offset: offset as u64,
        reason,
    };
    let mut offset = 0;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        // Only the last line can lack its newline: an append the crash cut short, whose
        // write was never answered. A whole line that does not read back is damage.
        let Some(body) = line.strip_suffix(b"\n") else {
            tracing::warn!(
                path = %path.display(),
                offset,
                bytes = line.len(),
                "dropping the journal's torn last record (the sandbox stopped in the middle \
                 of a write that was never answered)"
            );
            break;
        };
        let record = decode(body).map_err(|reason| corrupt(offset, reason))?;
        if record.rv <= loaded.rv && loaded.journal.is_empty() {
            // Written before the snapshot that now holds it (a compaction cut short).
        } else if record.rv == loaded.rv + 1 {
            loaded.rv = record.rv;
            loaded.journal.push(record);
        } else {
            // Every resourceVersion is one change, journaled in order.
            return Err(corrupt(
                offset,
                RecordError::OutOfOrder {
                    rv: record.rv,
                    after: loaded.rv,
                },
            ));
        }
        offset += line.len();
    }
    loaded.journal_bytes = offset as u64;
    Ok(())
}

/// How far the journal is on disk.
#[derive(Debug, Clone, Default)]
pub struct Synced {
    /// Every change up to this resourceVersion is on disk.
    pub rv: u64,
    /// Why writing stopped, if it did (every later write then fails).
    pub failed: Option<Arc<str>>,
}

/// The objects of a snapshot, by resource.
pub type Objects = Vec<(GroupResource, Vec<Arc<Value>>)>;

/// Work for the flusher.
#[derive(Default)]
struct Queue {
    /// Lines not yet written.
    lines: Vec<u8>,
    /// resourceVersion of the last queued line.
    rv: u64,
    /// A snapshot to write once `lines[..at]` is written: (at, rv, objects, journal bytes then).
    snapshot: Option<(usize, u64, Objects, u64)>,
    /// A snapshot is asked for or being written.
    compacting: bool,
    /// Bytes the journal holds or will once `lines` is written.
    journal_bytes: u64,
    /// Bytes of the last snapshot.
    snapshot_bytes: u64,
    /// No more work: flush and stop.
    closed: bool,
}

struct Shared {
    dir: PathBuf,
    queue: Mutex<Queue>,
    work: Condvar,
    synced: watch::Sender<Synced>,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The journal of one cluster, open for appending.
pub struct Journal {
    shared: Arc<Shared>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Journal({})", self.shared.dir.display())
    }
}

impl Journal {
    /// Opens `dir`'s journal after [`load`] read it: a torn tail is cut off, and appends go
    /// after the last whole record.
    pub fn open(dir: &Path, loaded: &Loaded) -> Result<Journal> {
        let path = dir.join(JOURNAL);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .map_err(Error::file("open", &path))?;
        let length = file.metadata().map_err(Error::file("read", &path))?.len();
        if length != loaded.journal_bytes {
            file.set_len(loaded.journal_bytes)
                .and_then(|()| file.sync_data())
                .map_err(Error::file("truncate", &path))?;
        }
        sync_dir(dir).map_err(Error::file("sync", dir))?;
        let (synced, _) = watch::channel(Synced {
            rv: loaded.rv,
            failed: None,
        });
        let shared = Arc::new(Shared {
            dir: dir.to_owned(),
            queue: Mutex::new(Queue {
                rv: loaded.rv,
                journal_bytes: loaded.journal_bytes,
                snapshot_bytes: loaded.snapshot_bytes,
                ..Queue::default()
            }),
            work: Condvar::new(),
            synced,
        });
        let flusher = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("sandbox-journal".into())
                .spawn(move || flush(&shared, file))
                .map_err(Error::file("start the writer of", &path))?
        };
        Ok(Journal {
            shared,
            flusher: Mutex::new(Some(flusher)),
        })
    }

    /// Queues the change at `rv` (its watch `frame`); true when the journal has outgrown the
    /// snapshot and [`Journal::compact`] should follow.
    pub fn append(&self, gr: &GroupResource, frame: &str, rv: u64) -> bool {
        let mut queue = self.shared.queue();
        let before = queue.lines.len();
        encode(&mut queue.lines, gr, frame);
        queue.journal_bytes += (queue.lines.len() - before) as u64;
        queue.rv = rv;
        self.shared.work.notify_one();
        !queue.compacting && queue.journal_bytes > COMPACT_FLOOR.max(2 * queue.snapshot_bytes)
    }

    /// Queues a snapshot of `objects`, the whole cluster as of the last appended change.
    pub fn compact(&self, objects: Objects) {
        let mut queue = self.shared.queue();
        if !queue.compacting {
            let at = queue.lines.len();
            let (rv, bytes) = (queue.rv, queue.journal_bytes);
            queue.snapshot = Some((at, rv, objects, bytes));
            queue.compacting = true;
            self.shared.work.notify_one();
        }
    }

    /// Why the journal stopped keeping changes, if it did.
    pub fn failed(&self) -> Option<Arc<str>> {
        self.shared.synced.borrow().failed.clone()
    }

    /// Where the journal is on disk, to wait on.
    pub fn synced(&self) -> watch::Receiver<Synced> {
        self.shared.synced.subscribe()
    }

    /// Writes what is queued and stops the flusher.
    pub fn close(&self) {
        self.shared.queue().closed = true;
        self.shared.work.notify_one();
        let flusher = self.flusher.lock().ok().and_then(|mut f| f.take());
        if let Some(flusher) = flusher
            && flusher.join().is_err()
        {
            tracing::error!(dir = %self.shared.dir.display(), "the journal writer panicked");
        }
        // A write after this is not kept: its writer is told so rather than left waiting.
        self.shared.synced.send_modify(|s| {
            s.failed
                .get_or_insert_with(|| Arc::from("the sandbox is shutting down"));
        });
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.close();
    }
}

/// Should the flusher thread end other than by [`Journal::close`] (a panic), writers waiting
/// for it are told the journal failed rather than left waiting.
struct Failing<'a>(&'a Shared);

impl Drop for Failing<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0
                .synced
                .send_modify(|s| s.failed = Some(Arc::from("the journal writer crashed")));
        }
    }
}

/// The flusher thread: writes and syncs queued lines and snapshots until closed.
fn flush(shared: &Shared, mut file: File) {
    let _failing = Failing(shared);
    let path = shared.dir.join(JOURNAL);
    loop {
        let (lines, rv, snapshot, closed) = {
            let mut queue = shared.queue();
            while queue.lines.is_empty() && queue.snapshot.is_none() && !queue.closed {
                queue = shared.work.wait(queue).unwrap_or_else(|e| e.into_inner());
            }
            let lines = std::mem::take(&mut queue.lines);
            (lines, queue.rv, queue.snapshot.take(), queue.closed)
        };
        if lines.is_empty() && snapshot.is_none() {
            if closed {
                return;
            }
            continue;
        }
        if shared.synced.borrow().failed.is_some() {
            continue;
        }
        let written = match snapshot {
            None => append(&mut file, &lines, &path),
            Some((at, snapshot_rv, objects, bytes)) => {
                let (before, after) = lines.split_at(at);
                append(&mut file, before, &path)
                    .and_then(|()| write_snapshot(&shared.dir, snapshot_rv, &objects))
                    .and_then(|snapshot_bytes| {
                        file.set_len(0)
                            .and_then(|()| file.sync_data())
                            .map_err(Error::file("empty", &path))?;
                        let mut queue = shared.queue();
                        queue.journal_bytes = queue.journal_bytes.saturating_sub(bytes);
                        queue.snapshot_bytes = snapshot_bytes;
                        queue.compacting = false;
                        Ok(())
                    })
                    .and_then(|()| append(&mut file, after, &path))
            }
        };
        match written {
            Ok(()) => shared.synced.send_modify(|s| s.rv = s.rv.max(rv)),
            Err(error) => {
                tracing::error!(%error, "the sandbox can no longer store writes");
                shared
                    .synced
                    .send_modify(|s| s.failed = Some(Arc::from(error.to_string())));
            }
        }
    }
}

fn append(file: &mut File, lines: &[u8], path: &Path) -> Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    file.write_all(lines)
        .and_then(|()| file.sync_data())
        .map_err(Error::file("write", path))
}

/// Writes `objects` as the snapshot at `rv`, atomically; returns its size.
fn write_snapshot(dir: &Path, rv: u64, objects: &Objects) -> Result<u64> {
    let path = dir.join(SNAPSHOT);
    let partial = dir.join(format!("{SNAPSHOT}.partial"));
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .map_err(Error::file("create", &partial))?;
    let mut out = BufWriter::new(file);
    let mut line = Vec::new();
    let mut size = 0u64;
    let header = format!("{HEADER}{rv}\n");
    out.write_all(header.as_bytes())
        .map_err(Error::file("write", &partial))?;
    size += header.len() as u64;
    for (gr, objects) in objects {
        for object in objects {
            line.clear();
            let object = serde_json::to_string(&**object).unwrap_or_else(|_| "{}".into());
            let frame = format!("{{\"type\":\"ADDED\",\"object\":{object}}}");
            encode(&mut line, gr, &frame);
            out.write_all(&line)
                .map_err(Error::file("write", &partial))?;
            size += line.len() as u64;
        }
    }
    let file = out
        .into_inner()
        .map_err(|e| Error::file("write", &partial)(e.into_error()))?;
    file.sync_all().map_err(Error::file("sync", &partial))?;
    fs::rename(&partial, &path).map_err(Error::file("replace", &path))?;
    sync_dir(dir).map_err(Error::file("sync", dir))?;
    Ok(size)
}

/// Makes a rename or creation in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn gr() -> GroupResource {
        GroupResource {
            group: String::new(),
            resource: "configmaps".into(),
        }
    }

    fn frame(kind: &str, name: &str, rv: u64) -> String {
        json!({"type": kind, "object": {"metadata": {"name": name, "resourceVersion": rv.to_string()}}})
            .to_string()
            + "\n"
    }

    async fn written(journal: &Journal, rv: u64) {
        let mut synced = journal.synced();
        synced.wait_for(|s| s.rv >= rv).await.unwrap();
    }

    #[tokio::test]
    async fn what_is_appended_loads_back_in_order() {
        let dir = tempdir("order");
        let journal = Journal::open(&dir, &load(&dir).unwrap()).unwrap();
        journal.append(&gr(), &frame("ADDED", "a", 1), 1);
        journal.append(&gr(), &frame("MODIFIED", "a", 2), 2);
        journal.append(&gr(), &frame("DELETED", "a", 3), 3);
        written(&journal, 3).await;
        drop(journal);
        let loaded = load(&dir).unwrap();
        assert_eq!(loaded.rv, 3);
        let kinds: Vec<_> = loaded.journal.iter().map(|r| (r.kind, r.rv)).collect();
        assert_eq!(
            kinds,
            [
                (EventType::Added, 1),
                (EventType::Modified, 2),
                (EventType::Deleted, 3)
            ]
        );
    }

    #[tokio::test]
    async fn a_write_after_close_fails_rather_than_waits() {
        let dir = tempdir("closed");
        let journal = Journal::open(&dir, &load(&dir).unwrap()).unwrap();
        journal.close();
        journal.append(&gr(), &frame("ADDED", "a", 1), 1);
        let mut synced = journal.synced();
        let state = synced
            .wait_for(|s| s.rv >= 1 || s.failed.is_some())
            .await
            .unwrap()
            .clone();
        assert_eq!(state.rv, 0);
        assert!(state.failed.is_some());
    }

    #[test]
    fn a_torn_last_record_is_dropped_and_cut_off() {
        let dir = tempdir("torn");
        let mut bytes = Vec::new();
        encode(&mut bytes, &gr(), &frame("ADDED", "a", 1));
        let whole = bytes.len();
        encode(&mut bytes, &gr(), &frame("ADDED", "b", 2));
        bytes.truncate(bytes.len() - 7);
        fs::write(dir.join(JOURNAL), &bytes).unwrap();
        let loaded = load(&dir).unwrap();
        assert_eq!(loaded.rv, 1);
        assert_eq!(loaded.journal.len(), 1);
        drop(Journal::open(&dir, &loaded).unwrap());
        assert_eq!(fs::metadata(dir.join(JOURNAL)).unwrap().len(), whole as u64);
    }

    #[test]
    fn a_whole_last_record_that_does_not_read_back_is_damage_not_a_tear() {
        let dir = tempdir("whole");
        let mut bytes = Vec::new();
        encode(&mut bytes, &gr(), &frame("ADDED", "a", 1));
        let second = bytes.len();
        encode(&mut bytes, &gr(), &frame("ADDED", "b", 2));
        bytes[second + 30] ^= 1;
        fs::write(dir.join(JOURNAL), &bytes).unwrap();
        let error = load(&dir).unwrap_err().to_string();
        assert!(
            error.contains(&format!("at byte {second} (checksum mismatch)")),
            "{error}"
        );
    }

    #[test]
    fn a_missing_record_is_damage() {
        let dir = tempdir("gap");
        let mut bytes = Vec::new();
        encode(&mut bytes, &gr(), &frame("ADDED", "a", 1));
        let second = bytes.len();
        encode(&mut bytes, &gr(), &frame("ADDED", "c", 3));
        fs::write(dir.join(JOURNAL), &bytes).unwrap();
        let error = load(&dir).unwrap_err().to_string();
        assert!(
            error.contains(&format!("at byte {second} (resourceVersion 3 follows 1")),
            "{error}"
        );
    }

    #[test]
    fn damage_before_the_end_refuses_everything() {
        let dir = tempdir("damage");
        let mut bytes = Vec::new();
        encode(&mut bytes, &gr(), &frame("ADDED", "a", 1));
        let second = bytes.len();
        encode(&mut bytes, &gr(), &frame("ADDED", "b", 2));
        encode(&mut bytes, &gr(), &frame("ADDED", "c", 3));
        bytes[second + 30] ^= 1;
        fs::write(dir.join(JOURNAL), &bytes).unwrap();
        let error = load(&dir).unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "journal is damaged at byte {second} (checksum mismatch)"
            )),
            "{error}"
        );
    }

    #[tokio::test]
    async fn compaction_keeps_every_object_and_empties_the_journal() {
        let dir = tempdir("compact");
        let journal = Journal::open(&dir, &load(&dir).unwrap()).unwrap();
        journal.append(&gr(), &frame("ADDED", "a", 1), 1);
        journal.append(&gr(), &frame("ADDED", "b", 2), 2);
        let object = |name: &str, rv: u64| {
            Arc::new(json!({"metadata": {"name": name, "resourceVersion": rv.to_string()}}))
        };
        journal.compact(vec![(gr(), vec![object("a", 1), object("b", 2)])]);
        journal.append(&gr(), &frame("ADDED", "c", 3), 3);
        written(&journal, 3).await;
        drop(journal);
        let loaded = load(&dir).unwrap();
        let names = |records: &[Record]| -> Vec<String> {
            records
                .iter()
                .map(|r| r.object["metadata"]["name"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(names(&loaded.snapshot), ["a", "b"]);
        assert_eq!(names(&loaded.journal), ["c"]);
        assert_eq!(loaded.rv, 3);
    }

    #[test]
    fn records_older_than_the_snapshot_are_skipped() {
        let dir = tempdir("older");
        let mut snapshot = format!("{HEADER}2\n").into_bytes();
        encode(&mut snapshot, &gr(), &frame("ADDED", "a", 2));
        fs::write(dir.join(SNAPSHOT), &snapshot).unwrap();
        let mut journal = Vec::new();
        encode(&mut journal, &gr(), &frame("ADDED", "a", 1));
        encode(&mut journal, &gr(), &frame("MODIFIED", "a", 2));
        encode(&mut journal, &gr(), &frame("ADDED", "b", 3));
        fs::write(dir.join(JOURNAL), &journal).unwrap();
        let loaded = load(&dir).unwrap();
        assert_eq!(loaded.snapshot.len(), 1);
        assert_eq!(loaded.journal.len(), 1);
        assert_eq!(loaded.rv, 3);
    }

    fn tempdir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "sandbox-journal-{name}-{}-{}",
            std::process::id(),
            crate::meta::random_u64()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }
}
