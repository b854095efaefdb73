//! The deployer's own writes and their watch events. The event of a write (the object at the
//! resourceVersion the write left) tells the deployer nothing it did not know, so it marks no
//! profile: without this, every deployment ran a second, idle pass that applied each add-on
//! again, because the summary and profile writes of the first came back as changes.
//!
//! A write's event may come before its response. So a write is announced first
//! ([`Echoes::writing`]): events of the object meanwhile are held, and when the response
//! tells the version ([`Echoes::written`]) those of other versions (someone else's changes)
//! are let through; a failed write lets every held one through.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};

use kube::api::ObjectMeta;

use crate::queue::Queue;

/// Writes past this many unmatched ones are forgotten all at once: an echo that never comes
/// (a relist folded it into a later version) must not be kept forever, and forgetting one
/// costs only an idle pass.
const MOST: usize = 65_536;

/// `(kind, namespace, name)` of an object.
type Place = (&'static str, String, String);

#[derive(Debug, Default)]
struct State {
    /// Objects being written, with the versions of their events held meanwhile.
    writing: HashMap<Place, Vec<String>>,
    /// Versions written whose event has not come yet.
    expected: HashSet<(Place, String)>,
}

/// The deployer's writes whose watch events are still on the way (one write at a time per
/// object: the deployer's passes run one after another).
#[derive(Default)]
pub struct Echoes {
    state: Mutex<State>,
    /// Where profiles go for another pass.
    queue: Arc<Queue>,
}

impl Echoes {
    /// Echoes of writes made for profiles of `queue`.
    pub fn new(queue: Arc<Queue>) -> Self {
        Echoes {
            state: Mutex::default(),
            queue,
        }
    }

    /// Makes `write` of `kind` object `namespace/name` in a pass over `profile`, which is
    /// marked for another pass when the object changed besides meanwhile.
    pub async fn write(
        &self,
        (kind, namespace, name): (&'static str, &str, &str),
        profile: &str,
        write: impl Future<Output = kube::Result<ObjectMeta>>,
    ) -> kube::Result<ObjectMeta> {
        self.writing(kind, namespace, name);
        let result = write.await;
        let written = result.as_ref().ok();
        if self.written(kind, namespace, name, written) {
            self.queue.mark(profile);
        }
        result
    }

    /// Announces a write of `kind` object `namespace/name`.
    fn writing(&self, kind: &'static str, namespace: &str, name: &str) {
        if let Ok(mut state) = self.state.lock() {
            let place = (kind, namespace.to_owned(), name.to_owned());
            state.writing.entry(place).or_default();
        }
    }

    /// Ends an announced write: `written` is the object as the server answered, `None` when
    /// the write failed. True when an event held meanwhile was not the write's own: the
    /// object changed besides, and its profile needs another pass.
    fn written(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
        written: Option<&ObjectMeta>,
    ) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return true;
        };
        let place = (kind, namespace.to_owned(), name.to_owned());
        let held = state.writing.remove(&place).unwrap_or_default();
        let version = written.and_then(|w| w.resource_version.clone());
        let Some(version) = version else {
            return !held.is_empty();
        };
        let others = held.iter().any(|v| *v != version);
        if !held.contains(&version) {
            if state.expected.len() >= MOST {
                state.expected.clear();
            }
            state.expected.insert((place, version));
        }
        others
    }

    /// Whether a watched `kind` object `(namespace, name)` at `version` is the echo of a
    /// write, or held until its write answers; false when it is news.
    pub fn is_echo(
        &self,
        kind: &'static str,
        (namespace, name): (&str, &str),
        version: Option<&str>,
    ) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        let key = (
            (kind, namespace.to_owned(), name.to_owned()),
            version.unwrap_or_default().to_owned(),
        );
        // An earlier write's echo, even one that comes while the next write is on its way.
        if state.expected.remove(&key) {
            return true;
        }
        let (place, version) = key;
        match state.writing.get_mut(&place) {
            Some(held) => {
                held.push(version);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: &str = "ClusterSummary";

    fn meta(name: &str, version: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            resource_version: Some(version.to_owned()),
            ..Default::default()
        }
    }

    /// Writes `name`, answered at `version`; whether another pass is needed.
    fn write(echoes: &Echoes, name: &str, version: &str) -> bool {
        echoes.writing(KIND, "default", name);
        echoes.written(KIND, "default", name, Some(&meta(name, version)))
    }

    #[test]
    fn only_the_version_a_write_left_is_its_echo_and_only_once() {
        let echoes = Echoes::default();
        assert!(!write(&echoes, "a", "7"));
        assert!(!write(&echoes, "a", "8"));
        // Another version, another object, another kind: changes made by someone else.
        assert!(!echoes.is_echo(KIND, ("default", "a"), Some("9")));
        assert!(!echoes.is_echo(KIND, ("default", "b"), Some("7")));
        assert!(!echoes.is_echo("ClusterProfile", ("default", "a"), Some("7")));
        // Both writes' echoes, in any order, each once.
        assert!(echoes.is_echo(KIND, ("default", "a"), Some("8")));
        assert!(echoes.is_echo(KIND, ("default", "a"), Some("7")));
        assert!(!echoes.is_echo(KIND, ("default", "a"), Some("7")));
    }

    #[test]
    fn events_before_the_answer_wait_for_it() {
        let echoes = Echoes::default();
        // The write's own event, come before its answer: nothing to do, nothing kept.
        echoes.writing(KIND, "default", "a");
        assert!(echoes.is_echo(KIND, ("default", "a"), Some("5")));
        assert!(!echoes.written(KIND, "default", "a", Some(&meta("a", "5"))));
        assert!(!echoes.is_echo(KIND, ("default", "a"), Some("5")));
        // Someone else's change meanwhile: another pass.
        echoes.writing(KIND, "default", "a");
        assert!(echoes.is_echo(KIND, ("default", "a"), Some("6")));
        assert!(echoes.written(KIND, "default", "a", Some(&meta("a", "7"))));
        assert!(echoes.is_echo(KIND, ("default", "a"), Some("7")));
        // A failed write lets what came meanwhile through.
        echoes.writing(KIND, "default", "a");
        assert!(echoes.is_echo(KIND, ("default", "a"), Some("8")));
        assert!(echoes.written(KIND, "default", "a", None));
        echoes.writing(KIND, "default", "a");
        assert!(!echoes.written(KIND, "default", "a", None));
    }

    #[test]
    fn an_earlier_writes_echo_during_the_next_write_is_still_an_echo() {
        let echoes = Echoes::default();
        // A pass writes the summary's spec, then its status; the spec's event comes late.
        assert!(!write(&echoes, "a", "7"));
        echoes.writing(KIND, "default", "a");
        assert!(echoes.is_echo(KIND, ("default", "a"), Some("7")));
        assert!(!echoes.written(KIND, "default", "a", Some(&meta("a", "8"))));
        assert!(echoes.is_echo(KIND, ("default", "a"), Some("8")));
    }

    #[test]
    fn echoes_that_never_come_are_let_go() {
        let echoes = Echoes::default();
        for version in 0..=MOST {
            write(&echoes, "a", &version.to_string());
        }
        let expected = echoes
            .state
            .lock()
            .map(|s| s.expected.len())
            .unwrap_or_default();
        assert!(expected <= MOST, "{expected} kept");
        assert!(echoes.is_echo(KIND, ("default", "a"), Some(&MOST.to_string())));
    }
}
