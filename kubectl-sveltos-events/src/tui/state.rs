//! The TUI's state and how keys and watch updates change it. Nothing here draws or talks to a
//! cluster: [`State::on_key`] returns the one effect that needs the outside (a trace).

use std::collections::{BTreeMap, VecDeque};

use regex::Regex;
use serde_json::Value;

use super::feed::{KINDS, Update};
use super::input::{Command, command_for};
use super::view::{Row, View};

/// How many activity lines the overview keeps.
const ACTIVITY: usize = 200;

/// What the user is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Browsing a view.
    Normal,
    /// Typing a filter after `/`.
    Filter(String),
    /// Typing a view name after `:`.
    Jump(String),
    /// Reading a text: help, YAML or a trace, scrolled by this many lines.
    Reading {
        /// The title.
        title: String,
        /// The text.
        text: String,
        /// Lines scrolled.
        scroll: u16,
    },
}

/// An effect a key asks for that needs the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Read live what ClusterProfile `profile` deployed in each cluster, and show it under
    /// `text` (the details already shown as `title`).
    Deployed {
        /// The title of the details shown.
        title: String,
        /// The details.
        text: String,
        /// The profile.
        profile: String,
    },
    /// Trace (or explain) the object `kind` `namespace/name`.
    Trace {
        /// Its kind.
        kind: String,
        /// Its namespace.
        namespace: Option<String>,
        /// Its name.
        name: String,
    },
}

/// A row filter: a regex, or its inverse with a leading `!`.
#[derive(Debug, Clone)]
pub struct Filter {
    /// What was typed.
    pub text: String,
    regex: Regex,
    inverse: bool,
}

impl Filter {
    /// The filter `text` means, or why it is not a regex.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let (inverse, pattern) = match text.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let regex = Regex::new(&format!("(?i){pattern}")).map_err(|e| e.to_string())?;
        Ok(Filter {
            text: text.to_owned(),
            regex,
            inverse,
        })
    }

    /// Whether a row whose cells join to `line` is shown.
    pub fn keeps(&self, line: &str) -> bool {
        self.regex.is_match(line) != self.inverse
    }
}

/// One line of the activity feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    /// When it was seen (`HH:MM:SS`, UTC).
    pub at: String,
    /// What happened.
    pub text: String,
}

/// Everything the TUI shows.
#[derive(Debug, Clone)]
pub struct State {
    /// The view shown.
    pub view: View,
    /// The selected row of a list view.
    pub selected: usize,
    /// What the user is doing.
    pub mode: Mode,
    /// The filter of list views.
    pub filter: Option<Filter>,
    /// Why the last filter was refused.
    pub notice: Option<String>,
    /// Every object, by kind and `namespace/name`.
    pub objects: BTreeMap<&'static str, BTreeMap<String, Value>>,
    /// Why a kind's watch failed (cleared when it delivers again).
    pub failures: BTreeMap<&'static str, String>,
    /// Recent changes, newest first.
    pub activity: VecDeque<Activity>,
    /// The management cluster's address, for the header.
    pub server: String,
    /// Whether to colour (off with NO_COLOR).
    pub colour: bool,
    /// Set when the user quits.
    pub quit: bool,
}

/// `namespace/name` (or `name`) of an object.
pub fn key(object: &Value) -> String {
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    match meta["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

impl State {
    /// An empty state for the cluster at `server`.
    pub fn new(server: &str, colour: bool) -> Self {
        State {
            view: View::Overview,
            selected: 0,
            mode: Mode::Normal,
            filter: None,
            notice: None,
            objects: KINDS.iter().map(|k| (*k, BTreeMap::new())).collect(),
            failures: BTreeMap::new(),
            activity: VecDeque::new(),
            server: server.to_owned(),
            colour,
            quit: false,
        }
    }

    /// The objects of `kind`.
    pub fn of(&self, kind: &str) -> impl Iterator<Item = &Value> {
        self.objects.get(kind).into_iter().flat_map(|m| m.values())
    }

    /// The rows of the current view, filtered.
    pub fn rows(&self) -> Vec<Row> {
        self.view
            .rows(self)
            .into_iter()
            .filter(|row| {
                self.filter
                    .as_ref()
                    .is_none_or(|f| f.keeps(&row.cells.join(" ")))
            })
            .collect()
    }

    /// Applies a watch update; `at` is the time it arrived (`HH:MM:SS`).
    pub fn on_update(&mut self, update: Update, at: &str) {
        let (kind, text) = match update {
            Update::Listed(kind, objects) => {
                self.failures.remove(kind);
                let map = objects.into_iter().map(|o| (key(&o), o)).collect();
                self.objects.insert(kind, map);
                return;
            }
            Update::Applied(kind, object) => {
                self.failures.remove(kind);
                let name = key(&object);
                let text = super::view::describe_change(kind, &object)
                    .unwrap_or_else(|| format!("{kind} {name} changed"));
                let known = self.objects.entry(kind).or_default();
                let same = known.get(&name).is_some_and(|old| {
                    old["metadata"]["resourceVersion"] == object["metadata"]["resourceVersion"]
                });
                known.insert(name, object);
                if same {
                    return;
                }
                (kind, text)
            }
            Update::Deleted(kind, object) => {
                let name = key(&object);
                if let Some(map) = self.objects.get_mut(kind) {
                    map.remove(&name);
                }
                (kind, format!("{kind} {name} deleted"))
            }
            Update::Failed(kind, why) => {
                self.failures.insert(kind, why);
                return;
            }
        };
        let _ = kind;
        self.activity.push_front(Activity {
            at: at.to_owned(),
            text,
        });
        self.activity.truncate(ACTIVITY);
        self.clamp();
    }

    /// Keeps the selection on a row. Runs on every watch event, so without a filter it counts
    /// the objects instead of building every row.
    fn clamp(&mut self) {
        let rows = match (&self.filter, self.view.kind()) {
            (_, None) => 0,
            (None, Some(kind)) => self.objects.get(kind).map_or(0, BTreeMap::len),
            (Some(_), Some(_)) => self.rows().len(),
        };
        self.selected = self.selected.min(rows.saturating_sub(1));
    }

    /// Applies a key; returns the effect it asks for, if any.
    pub fn on_key(&mut self, key: crossterm::event::KeyEvent) -> Option<Effect> {
        use crossterm::event::KeyCode;
        match &mut self.mode {
            Mode::Filter(text) | Mode::Jump(text) => {
                match key.code {
                    KeyCode::Char(c) => text.push(c),
                    KeyCode::Backspace => {
                        text.pop();
                    }
                    KeyCode::Esc => self.mode = Mode::Normal,
                    KeyCode::Enter => self.finish_input(),
                    _ => {}
                }
                return None;
            }
            Mode::Reading { scroll, .. } => {
                match key.code {
                    KeyCode::Down | KeyCode::Char('j') => *scroll = scroll.saturating_add(1),
                    KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
                    KeyCode::PageDown | KeyCode::Char(' ') => *scroll = scroll.saturating_add(20),
                    KeyCode::PageUp => *scroll = scroll.saturating_sub(20),
                    KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter => self.mode = Mode::Normal,
                    _ => {}
                }
                return None;
            }
            Mode::Normal => {}
        }
        let command = command_for(key)?;
        self.run(command)
    }

    fn finish_input(&mut self) {
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Filter(text) if text.is_empty() => self.filter = None,
            Mode::Filter(text) => match Filter::parse(&text) {
                Ok(filter) => {
                    self.filter = Some(filter);
                    self.notice = None;
                }
                Err(why) => self.notice = Some(format!("not a filter: {why}")),
            },
            Mode::Jump(text) => match View::named(&text) {
                Some(view) => self.show(view),
                None => self.notice = Some(format!("no view {text:?} (? lists them)")),
            },
            _ => {}
        }
        self.clamp();
    }

    fn show(&mut self, view: View) {
        self.view = view;
        self.selected = 0;
        self.notice = None;
    }

    /// Runs a command of the keymap.
    pub fn run(&mut self, command: Command) -> Option<Effect> {
        let rows = self.rows();
        match command {
            Command::Quit => self.quit = true,
            Command::Down => self.selected = (self.selected + 1).min(rows.len().saturating_sub(1)),
            Command::Up => self.selected = self.selected.saturating_sub(1),
            Command::Top => self.selected = 0,
            Command::Bottom => self.selected = rows.len().saturating_sub(1),
            Command::Filter => self.mode = Mode::Filter(String::new()),
            Command::Jump => self.mode = Mode::Jump(String::new()),
            Command::ClearFilter => self.filter = None,
            Command::Help => {
                self.mode = Mode::Reading {
                    title: "help".to_owned(),
                    text: super::input::help(),
                    scroll: 0,
                }
            }
            Command::Next => self.show(self.view.next()),
            Command::Previous => self.show(self.view.previous()),
            Command::Overview => self.show(View::Overview),
            Command::Yaml => {
                if let Some(object) = rows.get(self.selected).and_then(|r| self.object_of(r)) {
                    let text = serde_saphyr::to_string(object)
                        .unwrap_or_else(|e| format!("cannot show it: {e}"));
                    self.mode = Mode::Reading {
                        title: format!("YAML {}", rows[self.selected].key),
                        text,
                        scroll: 0,
                    };
                }
            }
            Command::Drill => {
                let row = rows.get(self.selected)?;
                let kind = self.view.kind()?;
                let text = super::drill::details(self, kind, &row.key)?;
                let title = format!("{kind} {}", row.key);
                if kind == "ClusterProfile" {
                    self.show_text(
                        title.clone(),
                        format!("{text}\nDeployed objects: reading them in each cluster...\n"),
                    );
                    return Some(Effect::Deployed {
                        title,
                        text,
                        profile: row.key.clone(),
                    });
                }
                self.show_text(title, text);
            }
            Command::Trace => {
                let row = rows.get(self.selected)?;
                let kind = self.view.kind()?;
                let (namespace, name) = match row.key.split_once('/') {
                    Some((ns, name)) => (Some(ns.to_owned()), name.to_owned()),
                    None => (None, row.key.clone()),
                };
                return Some(Effect::Trace {
                    kind: kind.to_owned(),
                    namespace,
                    name,
                });
            }
        }
        None
    }

    fn object_of(&self, row: &Row) -> Option<&Value> {
        self.objects.get(self.view.kind()?)?.get(&row.key)
    }

    /// Replaces the text titled `title` if it is still shown (where it was scrolled to);
    /// otherwise the user has moved on and it is dropped.
    pub fn replace_text(&mut self, title: &str, text: String) {
        if let Mode::Reading {
            title: shown,
            text: old,
            ..
        } = &mut self.mode
            && shown == title
        {
            *old = text;
        }
    }

    /// Shows a trace's (or its error's) text.
    pub fn show_text(&mut self, title: String, text: String) {
        self.mode = Mode::Reading {
            title,
            text,
            scroll: 0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use serde_json::json;

    fn press(state: &mut State, keys: &str) -> Option<Effect> {
        let mut effect = None;
        for c in keys.chars() {
            let code = match c {
                '\n' => KeyCode::Enter,
                '\x1b' => KeyCode::Esc,
                c => KeyCode::Char(c),
            };
            effect = state.on_key(KeyEvent::new(code, KeyModifiers::NONE));
        }
        effect
    }

    fn report(name: &str, cluster: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "default", "resourceVersion": "1"},
               "spec": {"clusterNamespace": "default", "clusterName": cluster,
                        "eventSourceName": "s", "matchingResources": [{"name": "a"}]}})
    }

    fn loaded() -> State {
        let mut state = State::new("https://x", false);
        let reports = vec![report("r1", "cluster-1"), report("r2", "cluster-2")];
        state.on_update(Update::Listed("EventReport", reports), "00:00:00");
        state
    }

    #[test]
    fn views_are_reached_by_name_and_filtered_by_regex_or_its_inverse() {
        let mut state = loaded();
        press(&mut state, ":reports\n");
        assert_eq!(state.view, View::Reports);
        assert_eq!(state.rows().len(), 2);
        press(&mut state, "/cluster-2\n");
        assert_eq!(state.rows().len(), 1);
        press(&mut state, "/!cluster-2\n");
        assert_eq!(state.rows()[0].key, "default/r1");
        press(&mut state, "/(\n");
        assert!(
            state
                .notice
                .as_deref()
                .unwrap_or_default()
                .starts_with("not a filter")
        );
        press(&mut state, ":nowhere\n");
        assert!(
            state
                .notice
                .as_deref()
                .unwrap_or_default()
                .contains("no view")
        );
        assert_eq!(state.view, View::Reports);
    }

    #[test]
    fn selection_stays_in_bounds_and_follows_deletions() {
        let mut state = loaded();
        press(&mut state, ":er\n");
        press(&mut state, "jjjj");
        assert_eq!(state.selected, 1);
        state.on_update(
            Update::Deleted("EventReport", report("r2", "cluster-2")),
            "00:00:01",
        );
        assert_eq!(state.selected, 0);
        assert_eq!(state.activity[0].text, "EventReport default/r2 deleted");
        press(&mut state, "kkk");
        assert_eq!(state.selected, 0);
    }

    #[test]
    fn help_yaml_and_trace_open_and_close_and_q_quits() {
        let mut state = loaded();
        press(&mut state, "?");
        assert!(matches!(&state.mode, Mode::Reading { title, .. } if title == "help"));
        press(&mut state, "\x1b:reports\ny");
        assert!(matches!(&state.mode, Mode::Reading { text, .. } if text.contains("cluster-1")));
        press(&mut state, "\x1b");
        let effect = press(&mut state, "t");
        assert_eq!(
            effect,
            Some(Effect::Trace {
                kind: "EventReport".into(),
                namespace: Some("default".into()),
                name: "r1".into()
            })
        );
        assert!(!state.quit);
        press(&mut state, "q");
        assert!(state.quit);
    }

    #[test]
    fn enter_shows_a_reports_resources_and_a_profiles_clusters_then_what_it_deployed() {
        let mut state = loaded();
        let profile = json!({"metadata": {"name": "p", "resourceVersion": "1", "labels": {
            "eventtrigger.lib.projectsveltos.io/eventtriggername": "t",
            "eventtrigger.lib.projectsveltos.io/eventreportname": "s",
            "eventtrigger.lib.projectsveltos.io/clusterNamespace": "default",
            "eventtrigger.lib.projectsveltos.io/clustername": "cluster-1",
            "eventtrigger.lib.projectsveltos.io/resourcename": "a"}},
            "spec": {"policyRefs": [{"kind": "ConfigMap", "namespace": "projectsveltos",
                                     "name": "sveltos-x"}]}});
        let summary = json!({"metadata": {"name": "p-sveltos-cluster-1", "namespace": "default",
            "labels": {"projectsveltos.io/cluster-profile-name": "p"}},
            "spec": {"clusterNamespace": "default", "clusterName": "cluster-1"},
            "status": {"featureSummaries": [{"featureID": "Resources", "status": "Failed",
                                              "failureMessage": "conflict"}]}});
        state.on_update(Update::Listed("ClusterProfile", vec![profile]), "0");
        state.on_update(Update::Listed("ClusterSummary", vec![summary]), "0");

        press(&mut state, ":reports\n");
        assert_eq!(press(&mut state, "\n"), None);
        let Mode::Reading { title, text, .. } = &state.mode else {
            panic!("{:?}", state.mode)
        };
        assert_eq!(title, "EventReport default/r1");
        assert!(text.contains("Matching resources (1):\n   a"), "{text}");
        assert!(
            text.contains("ClusterProfiles made from it (1):\n  p  (EventTrigger t, for a)"),
            "{text}"
        );

        press(&mut state, "\x1b:profiles\n");
        let effect = press(&mut state, "\n");
        let Some(Effect::Deployed { title, profile, .. }) = effect else {
            panic!("{effect:?}")
        };
        assert_eq!(
            (title.as_str(), profile.as_str()),
            ("ClusterProfile p", "p")
        );
        let Mode::Reading { text, .. } = &state.mode else {
            panic!("{:?}", state.mode)
        };
        assert!(
            text.contains("Made by EventTrigger t\n  for a in cluster default/cluster-1"),
            "{text}"
        );
        assert!(
            text.contains("ConfigMap projectsveltos/sveltos-x  (instantiated for the event)"),
            "{text}"
        );
        assert!(
            text.contains("default/cluster-1  Failed: conflict"),
            "{text}"
        );
        assert!(text.contains("reading them in each cluster"), "{text}");
        // The live answer replaces the text while it is shown, and only then.
        state.replace_text("ClusterProfile p", "read".into());
        assert!(matches!(&state.mode, Mode::Reading { text, .. } if text == "read"));
        press(&mut state, "\x1b");
        state.replace_text("ClusterProfile p", "late".into());
        assert_eq!(state.mode, Mode::Normal);
    }

    #[test]
    fn a_failed_watch_is_remembered_until_it_delivers_again() {
        let mut state = loaded();
        state.on_update(Update::Failed("EventReport", "gone".into()), "00:00:02");
        assert_eq!(state.failures["EventReport"], "gone");
        state.on_update(
            Update::Applied("EventReport", report("r3", "c")),
            "00:00:03",
        );
        assert!(state.failures.is_empty());
        assert_eq!(state.of("EventReport").count(), 3);
    }
}
