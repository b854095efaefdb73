//! The one keymap: it drives input and writes the help, so the two cannot disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key does in a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Leave the TUI.
    Quit,
    /// Select the next row.
    Down,
    /// Select the previous row.
    Up,
    /// Select the first row.
    Top,
    /// Select the last row.
    Bottom,
    /// Type a filter.
    Filter,
    /// Drop the filter.
    ClearFilter,
    /// Type a view's name.
    Jump,
    /// The next view.
    Next,
    /// The previous view.
    Previous,
    /// The overview.
    Overview,
    /// Back: drop the filter, else go to the overview.
    Back,
    /// The selected object's YAML.
    Yaml,
    /// The selected object's details and links.
    Drill,
    /// The selected object's chain (trace or explain).
    Trace,
    /// The keys.
    Help,
}

/// Keys, as the help shows them, and what each does.
pub const KEYMAP: &[(&str, &str, Command)] = &[
    ("q / Ctrl-C", "quit", Command::Quit),
    ("j / Down", "next row", Command::Down),
    ("k / Up", "previous row", Command::Up),
    ("g / Home", "first row", Command::Top),
    ("G / End", "last row", Command::Bottom),
    (
        "/",
        "filter rows by regex (!regex: the others)",
        Command::Filter,
    ),
    ("Backspace", "drop the filter", Command::ClearFilter),
    (
        ":",
        "go to a view by name (overview, clusters, sources, triggers, reports, profiles, summaries, or short names)",
        Command::Jump,
    ),
    ("Tab", "next view", Command::Next),
    ("Shift-Tab", "previous view", Command::Previous),
    ("0", "overview", Command::Overview),
    (
        "Esc",
        "back: drop the filter, else to the overview",
        Command::Back,
    ),
    ("y", "YAML of the selected object", Command::Yaml),
    (
        "Enter",
        "the selected object's details: a report's resources, a profile's policies and clusters",
        Command::Drill,
    ),
    (
        "t",
        "the selected object's chain: what caused it, what it caused",
        Command::Trace,
    ),
    ("?", "this help", Command::Help),
];

/// The command a key means in a view.
pub fn command_for(key: KeyEvent) -> Option<Command> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    Some(match key.code {
        KeyCode::Char('c') if ctrl => Command::Quit,
        KeyCode::Char('q') => Command::Quit,
        KeyCode::Char('j') | KeyCode::Down => Command::Down,
        KeyCode::Char('k') | KeyCode::Up => Command::Up,
        KeyCode::Char('g') | KeyCode::Home => Command::Top,
        KeyCode::Char('G') | KeyCode::End => Command::Bottom,
        KeyCode::Char('/') => Command::Filter,
        KeyCode::Backspace => Command::ClearFilter,
        KeyCode::Char(':') => Command::Jump,
        KeyCode::Tab => Command::Next,
        KeyCode::BackTab => Command::Previous,
        KeyCode::Char('0') => Command::Overview,
        KeyCode::Esc => Command::Back,
        KeyCode::Char('y') => Command::Yaml,
        KeyCode::Enter => Command::Drill,
        KeyCode::Char('t') => Command::Trace,
        KeyCode::Char('?') => Command::Help,
        _ => return None,
    })
}

/// The help text, from [`KEYMAP`].
pub fn help() -> String {
    let width = KEYMAP.iter().map(|(k, _, _)| k.len()).max().unwrap_or(0);
    let mut text = String::from("Keys (in a text like this one: j/k scroll, Esc closes)\n\n");
    for (keys, what, _) in KEYMAP {
        text.push_str(&format!("  {keys:width$}   {what}\n"));
    }
    text.push_str("\nThe TUI only reads: it never writes to the cluster.\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_a_key_and_a_line_of_help() {
        let all = [
            Command::Quit,
            Command::Down,
            Command::Up,
            Command::Top,
            Command::Bottom,
            Command::Filter,
            Command::ClearFilter,
            Command::Jump,
            Command::Next,
            Command::Previous,
            Command::Overview,
            Command::Back,
            Command::Yaml,
            Command::Drill,
            Command::Trace,
            Command::Help,
        ];
        for command in all {
            assert!(
                KEYMAP.iter().any(|(_, _, c)| *c == command),
                "{command:?} not in help"
            );
        }
        // The first key the help names for each command does it.
        for (keys, _, command) in KEYMAP {
            let first = keys.split(" / ").next().unwrap();
            let code = match first {
                "Down" => KeyCode::Down,
                "Up" => KeyCode::Up,
                "Home" => KeyCode::Home,
                "End" => KeyCode::End,
                "Backspace" => KeyCode::Backspace,
                "Tab" => KeyCode::Tab,
                "Shift-Tab" => KeyCode::BackTab,
                "Enter" => KeyCode::Enter,
                "Esc" => KeyCode::Esc,
                one => KeyCode::Char(one.chars().next().unwrap()),
            };
            assert_eq!(
                command_for(KeyEvent::new(code, KeyModifiers::NONE)),
                Some(*command),
                "{keys}"
            );
        }
        assert!(help().contains("never writes"));
    }
}
