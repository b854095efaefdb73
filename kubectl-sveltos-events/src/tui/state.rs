//! The TUI's state and how keys and watch updates change it. Nothing here draws or talks to a
//! cluster: [`State::on_key`] returns the one effect that needs the outside (a trace).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use regex::Regex;
use serde_json::Value;

use super::feed::{KINDS, Update};
use super::input::{Command, command_for};
use super::scope::Scope;
use super::view::{Row, View};

/// How many activity lines the overview keeps.
const ACTIVITY: usize = 200;

/// The kinds whose changes are the hops of an event's path.
const HOPS: [&str; 3] = ["EventReport", "ClusterProfile", "ClusterSummary"];

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
    /// When the watch last delivered a change of each EventReport, ClusterProfile and
    /// ClusterSummary (milliseconds since the epoch): the hops of an event's path.
    pub arrivals: HashMap<(&'static str, String), i64>,
    /// ClusterSummaries that became Provisioned before their ClusterProfile arrived (the two
    /// come by different watches), with when: their path is told once it does.
    unpathed: HashMap<String, Option<i64>>,
    /// The last activity line of each object: a change that would say the same again (a
    /// status written twice) adds none.
    said: HashMap<(&'static str, String), String>,
    /// The management cluster's address, for the header.
    pub server: String,
    /// The clusters whose rows are shown (`-n`, `--cluster`).
    pub scope: Scope,
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
            arrivals: HashMap::new(),
            unpathed: HashMap::new(),
            said: HashMap::new(),
            server: server.to_owned(),
            scope: Scope::everything(),
            colour,
            quit: false,
        }
    }

    /// The same state showing only the rows of `scope`.
    pub fn scoped(self, scope: Scope) -> Self {
        State { scope, ..self }
    }

    /// The objects of `kind` in the scope.
    pub fn of(&self, kind: &str) -> impl Iterator<Item = &Value> {
        let deployed_here = if kind == "ClusterProfile" {
            self.profiles_deployed_here()
        } else {
            HashSet::new()
        };
        self.objects
            .get(kind)
            .into_iter()
            .flat_map(|m| m.values())
            .filter(move |o| self.keeps(kind, o, &deployed_here))
    }

    /// The profiles with a ClusterSummary in the scope (none is needed without a scope): a
    /// profile is of a cluster it deploys in.
    fn profiles_deployed_here(&self) -> HashSet<&str> {
        if self.scope.is_everything() {
            return HashSet::new();
        }
        self.of("ClusterSummary")
            .map(|s| crate::chain::meta(s, "labels", api::labels::CLUSTER_PROFILE_NAME_LABEL))
            .collect()
    }

    /// Whether `object` of `kind` is in the scope, `deployed_here` naming the profiles that
    /// deploy in it.
    fn keeps(&self, kind: &str, object: &Value, deployed_here: &HashSet<&str>) -> bool {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        self.scope
            .keeps(kind, object, || deployed_here.contains(name))
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

    /// Applies a watch update; `at` is the time it arrived (`HH:MM:SS`), with no clock for
    /// the hops of a path.
    pub fn on_update(&mut self, update: Update, at: &str) {
        self.on_update_at(update, at, None);
    }

    /// Applies a watch update that arrived at `at` (`HH:MM:SS`), `millis` since the epoch.
    /// A ClusterSummary that becomes Provisioned for a generated profile writes the event's
    /// whole path in the activity feed, each hop with the time it took.
    pub fn on_update_at(&mut self, update: Update, at: &str, millis: Option<i64>) {
        let (kind, text) = match update {
            Update::Listed(kind, objects) => {
                self.failures.remove(kind);
                let listed = objects.into_iter().map(|o| (key(&o), o));
                let known = self.objects.entry(kind).or_default();
                if kind == "Event" {
                    // One list per reporter: each adds its own.
                    known.extend(listed);
                } else {
                    *known = listed.collect();
                }
                self.clamp();
                return;
            }
            Update::Applied(kind, object) => {
                self.failures.remove(kind);
                let name = key(&object);
                let mut text = super::view::describe_change(kind, &object)
                    .unwrap_or_else(|| format!("{kind} {name} changed"));
                let known = self.objects.entry(kind).or_default();
                let old = known.get(&name);
                let same = old.is_some_and(|old| {
                    old["metadata"]["resourceVersion"] == object["metadata"]["resourceVersion"]
                });
                let provisioned = kind == "ClusterSummary"
                    && super::view::provisioned(&object)
                    && !old.is_some_and(super::view::provisioned);
                known.insert(name.clone(), object);
                if same {
                    return;
                }
                if let Some(millis) = millis
                    && HOPS.contains(&kind)
                {
                    self.arrivals.insert((kind, name.clone()), millis);
                }
                if provisioned {
                    match self.path(&name, millis) {
                        Some(path) => text = path,
                        None => {
                            self.unpathed.insert(name.clone(), millis);
                        }
                    }
                }
                if kind == "ClusterProfile" {
                    self.tell_unpathed(&name, at);
                }
                if !self.in_scope(kind, &name) {
                    return;
                }
                if self.said.get(&(kind, name.clone())) == Some(&text) {
                    return;
                }
                self.said.insert((kind, name), text.clone());
                (kind, text)
            }
            Update::Deleted(kind, object) => {
                let name = key(&object);
                let shown = self.in_scope(kind, &name);
                if let Some(map) = self.objects.get_mut(kind) {
                    map.remove(&name);
                }
                self.arrivals.remove(&(kind, name.clone()));
                self.said.remove(&(kind, name.clone()));
                if !shown {
                    return;
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

    /// Tells the path of each summary that was provisioned before `profile` arrived.
    fn tell_unpathed(&mut self, profile: &str, at: &str) {
        use api::labels::CLUSTER_PROFILE_NAME_LABEL;
        let waiting: Vec<(String, Option<i64>)> = self
            .unpathed
            .iter()
            .filter(|(summary, _)| {
                self.objects
                    .get("ClusterSummary")
                    .and_then(|m| m.get(*summary))
                    .is_some_and(|s| {
                        crate::chain::meta(s, "labels", CLUSTER_PROFILE_NAME_LABEL) == profile
                    })
            })
            .map(|(summary, millis)| (summary.clone(), *millis))
            .collect();
        for (summary, millis) in waiting {
            self.unpathed.remove(&summary);
            if let Some(path) = self.path(&summary, millis)
                && self.in_scope("ClusterSummary", &summary)
            {
                self.said.insert(("ClusterSummary", summary), path.clone());
                self.activity.push_front(Activity {
                    at: at.to_owned(),
                    text: path,
                });
            }
        }
    }

    /// The path of the event that ClusterSummary `summary` just deployed: resource (in its
    /// source cluster) -> EventReport -> ClusterProfile -> deployed, each hop with the time
    /// between the watch's deliveries (`?` for one the TUI did not see change). `None` for a
    /// profile no EventTrigger generated.
    fn path(&self, summary: &str, now: Option<i64>) -> Option<String> {
        use crate::chain::{meta, spec_cluster};
        use api::labels::{
            CLUSTER_NAME_LABEL, CLUSTER_NAMESPACE_LABEL, CLUSTER_PROFILE_NAME_LABEL,
            CLUSTER_TYPE_LABEL, EVENT_REPORT_NAME_LABEL,
        };
        let summary = self.objects.get("ClusterSummary")?.get(summary)?;
        let profile_name = meta(summary, "labels", CLUSTER_PROFILE_NAME_LABEL);
        let profile = self.objects.get("ClusterProfile")?.get(profile_name)?;
        let source = meta(profile, "labels", EVENT_REPORT_NAME_LABEL);
        if source.is_empty() {
            return None;
        }
        let namespace = meta(profile, "labels", CLUSTER_NAMESPACE_LABEL);
        let cluster = meta(profile, "labels", CLUSTER_NAME_LABEL);
        let cluster_type =
            api::v1beta1::ClusterType::parse(meta(profile, "labels", CLUSTER_TYPE_LABEL))
                .unwrap_or_default();
        let report = format!(
            "{namespace}/{}",
            api::v1beta1::event_report_name(source, cluster, cluster_type)
        );
        let seen = |kind, name: &str| self.arrivals.get(&(kind, name.to_owned())).copied();
        let hop = |from: Option<i64>, to: Option<i64>| match (from, to) {
            (Some(from), Some(to)) => {
                format!("+{:.2}s", (to - from).max(0) as f64 / 1000.0)
            }
            _ => "+?".to_owned(),
        };
        let reported = seen("EventReport", &report);
        let generated = seen("ClusterProfile", profile_name);
        let what =
            super::drill::resource_of(profile).unwrap_or_else(|| format!("the events of {source}"));
        Some(format!(
            "{what} in {namespace}/{cluster} → EventReport → ClusterProfile {} → deployed in {} {}",
            hop(reported, generated),
            spec_cluster(summary),
            hop(generated, now)
        ))
    }

    /// Whether the object `kind` `name` (known) is in the scope.
    fn in_scope(&self, kind: &str, name: &str) -> bool {
        let Some(object) = self.objects.get(kind).and_then(|m| m.get(name)) else {
            return false;
        };
        let deployed_here = if kind == "ClusterProfile" {
            self.profiles_deployed_here()
        } else {
            HashSet::new()
        };
        self.keeps(kind, object, &deployed_here)
    }

    /// Keeps the selection on a row. Runs on every watch event, so without a filter it counts
    /// the objects instead of building every row.
    fn clamp(&mut self) {
        let rows = match (&self.filter, self.view.kind()) {
            (_, None) => 0,
            (None, Some(kind)) if self.scope.is_everything() => {
                self.objects.get(kind).map_or(0, BTreeMap::len)
            }
            (None, Some(kind)) => self.of(kind).count(),
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
            Command::Back if self.filter.is_some() => self.filter = None,
            Command::Back => self.show(View::Overview),
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
        // Esc backs out: first the filter, then the view.
        press(&mut state, "\x1b");
        assert!(state.filter.is_none());
        assert_eq!(state.view, View::Reports);
        press(&mut state, "\x1b");
        assert_eq!(state.view, View::Overview);
        press(&mut state, ":reports\n");
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

    /// ClusterProfile `p`, generated by EventTrigger `t` for Service default/my-service in
    /// cluster-1.
    fn generated_profile() -> Value {
        json!({"metadata": {"name": "p", "resourceVersion": "1", "labels": {
            "eventtrigger.lib.projectsveltos.io/eventtriggername": "t",
            "eventtrigger.lib.projectsveltos.io/eventreportname": "s",
            "eventtrigger.lib.projectsveltos.io/clusterNamespace": "default",
            "eventtrigger.lib.projectsveltos.io/clustername": "cluster-1",
            "eventtrigger.lib.projectsveltos.io/clustertype": "Sveltos",
            "eventtrigger.lib.projectsveltos.io/resourcenamespace": "default",
            "eventtrigger.lib.projectsveltos.io/resourcename": "my-service"}}})
    }

    #[test]
    fn a_deployment_writes_the_events_path_with_each_hop_timed() {
        let mut state = State::new("x", false);
        let report = json!({"metadata": {"name": "sveltos--s--cluster-1", "namespace": "default",
            "resourceVersion": "1"}, "spec": {"clusterNamespace": "default",
            "clusterName": "cluster-1", "eventSourceName": "s"}});
        let profile = generated_profile();
        let summary = |version: &str, status: &str| {
            json!({"metadata": {"name": "p-sveltos-cluster-2", "namespace": "default",
                "resourceVersion": version,
                "labels": {"projectsveltos.io/cluster-profile-name": "p"}},
                "spec": {"clusterNamespace": "default", "clusterName": "cluster-2"},
                "status": {"featureSummaries": [{"featureID": "Resources", "status": status}]}})
        };
        state.on_update_at(
            Update::Applied("EventReport", report),
            "10:00:01",
            Some(1_000),
        );
        state.on_update_at(
            Update::Applied("ClusterProfile", profile),
            "10:00:01",
            Some(1_120),
        );
        let pending = summary("1", "Provisioning");
        state.on_update_at(
            Update::Applied("ClusterSummary", pending),
            "10:00:01",
            Some(1_200),
        );
        let done = summary("2", "Provisioned");
        state.on_update_at(
            Update::Applied("ClusterSummary", done),
            "10:00:01",
            Some(1_420),
        );
        assert_eq!(
            state.activity[0].text,
            "default/my-service in default/cluster-1 → EventReport → ClusterProfile +0.12s → \
             deployed in default/cluster-2 +0.30s"
        );
        // Provisioned again (a later change): no second path.
        let again = summary("3", "Provisioned");
        state.on_update_at(
            Update::Applied("ClusterSummary", again),
            "10:00:02",
            Some(2_000),
        );
        assert!(
            state.activity[0].text.starts_with("ClusterSummary "),
            "{:?}",
            state.activity[0]
        );
        // A change that says the same again (its status written twice) adds no line.
        let lines = state.activity.len();
        let twice = summary("4", "Provisioned");
        state.on_update_at(
            Update::Applied("ClusterSummary", twice),
            "10:00:03",
            Some(3_000),
        );
        assert_eq!(state.activity.len(), lines);
    }

    #[test]
    fn a_summary_provisioned_before_its_profile_arrived_gets_its_path_when_it_does() {
        let mut state = State::new("x", false);
        let profile = generated_profile();
        let summary = json!({"metadata": {"name": "p-sveltos-cluster-1", "namespace": "default",
            "resourceVersion": "2", "labels": {"projectsveltos.io/cluster-profile-name": "p"}},
            "spec": {"clusterNamespace": "default", "clusterName": "cluster-1"},
            "status": {"featureSummaries": [{"featureID": "Resources", "status": "Provisioned"}]}});
        state.on_update_at(
            Update::Applied("ClusterSummary", summary),
            "10:00:01",
            Some(1_000),
        );
        assert!(state.activity[0].text.starts_with("ClusterSummary "));
        state.on_update_at(
            Update::Applied("ClusterProfile", profile),
            "10:00:01",
            Some(1_050),
        );
        let texts: Vec<&str> = state.activity.iter().map(|a| a.text.as_str()).collect();
        assert!(
            texts.iter().any(|t| t.starts_with(
                "default/my-service in default/cluster-1 → EventReport → ClusterProfile +? → \
                 deployed in default/cluster-1 +0.00s"
            )),
            "{texts:?}"
        );
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

    #[test]
    fn a_scoped_state_shows_and_says_only_its_clusters_rows() {
        let scope = Scope::new(None, Some("default/cluster-2")).expect("a valid cluster");
        let mut state = loaded().scoped(scope);
        let keys = |state: &State| state.rows().into_iter().map(|r| r.key).collect::<Vec<_>>();
        press(&mut state, ":reports\n");
        assert_eq!(keys(&state), ["default/r2"]);
        // Another cluster's change is known but neither shown nor said.
        state.on_update(
            Update::Applied("EventReport", report("r3", "cluster-1")),
            "00:00:01",
        );
        state.on_update(
            Update::Deleted("EventReport", report("r1", "cluster-1")),
            "00:00:02",
        );
        assert!(state.activity.is_empty(), "{:?}", state.activity);
        assert_eq!(keys(&state), ["default/r2"]);
        state.on_update(
            Update::Applied("EventReport", report("r4", "cluster-2")),
            "00:00:03",
        );
        assert_eq!(state.activity.len(), 1);
        assert_eq!(keys(&state), ["default/r2", "default/r4"]);
        // A profile made elsewhere is this cluster's once one of its summaries is.
        let profile = json!({"metadata": {"name": "p", "resourceVersion": "1"}});
        state.on_update(Update::Applied("ClusterProfile", profile), "00:00:04");
        assert_eq!(state.of("ClusterProfile").count(), 0);
        let summary = json!({"metadata": {"name": "p-sveltos-cluster-2", "namespace": "default",
            "resourceVersion": "1", "labels": {"projectsveltos.io/cluster-profile-name": "p"}},
            "spec": {"clusterNamespace": "default", "clusterName": "cluster-2"}});
        state.on_update(Update::Applied("ClusterSummary", summary), "00:00:05");
        assert_eq!(state.of("ClusterProfile").count(), 1);
    }
}
