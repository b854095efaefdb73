//! Drawing: a pure function of the state.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row as TableRow, Table, Wrap};

use super::feed::{KINDS, NOT_ANSWERING};
use super::state::{Mode, State};
use super::view::{Health, View};

/// Draws `state` on `frame`.
pub fn draw(frame: &mut Frame, state: &State) {
    let failures = banner(state);
    let [header, banner_area, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(failures.len() as u16),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(header_line(state)), header);
    let red = paint(state, Color::Red);
    frame.render_widget(
        Paragraph::new(
            failures
                .into_iter()
                .map(|f| Line::styled(f, red))
                .collect::<Vec<_>>(),
        ),
        banner_area,
    );
    match state.view {
        View::Overview => overview(frame, state, body),
        view => list(frame, state, view, body),
    }
    frame.render_widget(Paragraph::new(footer_line(state)), footer);
    if let Mode::Reading {
        title,
        text,
        scroll,
    } = &state.mode
    {
        let area = centered(frame.area());
        frame.render_widget(Clear, area);
        let block = Block::default()
            .borders(Borders::ALL)
            .title(format!(" {title} (Esc closes) "));
        // Not wrapped: a tree or YAML keeps its shape; what is wider than the screen is cut.
        frame.render_widget(
            Paragraph::new(text.as_str())
                .block(block)
                .scroll((*scroll, 0)),
            area,
        );
    }
}

fn paint(state: &State, colour: Color) -> Style {
    if state.colour {
        Style::default().fg(colour)
    } else {
        Style::default()
    }
}

fn health_style(state: &State, health: Health) -> Style {
    match health {
        Health::Plain => Style::default(),
        Health::Good => paint(state, Color::Green),
        Health::Pending => paint(state, Color::Yellow),
        Health::Bad => paint(state, Color::Red),
    }
}

/// One line per distinct watch failure (a cluster without the CRDs fails every kind alike,
/// an API server gone fails every watch, each with its own transport error).
fn banner(state: &State) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut unanswered = false;
    for (kind, why) in &state.failures {
        if why.starts_with(NOT_ANSWERING) {
            unanswered = true;
        } else if why.contains("not installed") {
            if !lines.contains(why) {
                lines.push(why.clone());
            }
        } else {
            lines.push(format!("{kind}: {why}"));
        }
    }
    if unanswered {
        lines.insert(0, format!("{NOT_ANSWERING}; retrying, what is shown stays"));
    }
    lines
}

fn header_line(state: &State) -> Line<'static> {
    let title = state.view.names()[0];
    let mut spans = vec![
        Span::styled(
            " sveltos-events ",
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!("│ {} │ {title}", state.server)),
    ];
    if let Some(scope) = state.scope.describe() {
        spans.push(Span::raw(format!(" │ {scope}")));
    }
    if let Some(filter) = &state.filter {
        spans.push(Span::raw(format!(" │ filter /{}", filter.text)));
    }
    Line::from(spans)
}

fn footer_line(state: &State) -> Line<'static> {
    match &state.mode {
        Mode::Filter(text) => Line::raw(format!("/{text}▏ (Enter applies, Esc cancels)")),
        Mode::Jump(text) => Line::raw(format!(":{text}▏ (Enter goes, Esc cancels)")),
        _ => match &state.notice {
            Some(notice) => Line::styled(notice.clone(), paint(state, Color::Red)),
            None => Line::raw(
                "? help  : view  / filter  Tab next  Enter details  y yaml  t trace  q quit",
            ),
        },
    }
}

fn overview(frame: &mut Frame, state: &State, area: Rect) {
    let [counts, activity] = Layout::vertical([
        Constraint::Length(KINDS.len() as u16 + 2),
        Constraint::Min(1),
    ])
    .areas(area);
    let lines: Vec<Line> = View::lists()
        .map(|view| {
            let rows = view.rows(state);
            let count = |h: Health| rows.iter().filter(|r| r.health == h).count();
            let mut spans = vec![Span::raw(format!(
                "{:<10} {:>5}",
                view.names()[0],
                rows.len()
            ))];
            for (health, word) in [
                (Health::Good, "ok"),
                (Health::Pending, "pending"),
                (Health::Bad, "failed"),
            ] {
                let n = count(health);
                if n > 0 {
                    spans.push(Span::styled(
                        format!("  {n} {word}"),
                        health_style(state, health),
                    ));
                }
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" overview ")),
        counts,
    );
    let feed: Vec<Line> = state
        .activity
        .iter()
        .map(|a| Line::raw(format!("{}  {}", a.at, a.text)))
        .collect();
    let feed = if feed.is_empty() {
        vec![Line::raw(
            "waiting for changes: events, reports, profiles and add-ons appear here as they happen",
        )]
    } else {
        feed
    };
    // Wrapped: an event's path is longer than a narrow terminal, and every hop matters.
    frame.render_widget(
        Paragraph::new(feed)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" activity ")),
        activity,
    );
}

fn list(frame: &mut Frame, state: &State, view: View, area: Rect) {
    let rows = state.rows();
    let columns = view.columns();
    let mut widths: Vec<usize> = columns.iter().map(|c| c.len()).collect();
    for row in &rows {
        for (i, cell) in row.cells.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let constraints: Vec<Constraint> = widths
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i + 1 == widths.len() {
                Constraint::Min(*w as u16)
            } else {
                Constraint::Length(*w as u16)
            }
        })
        .collect();
    let selected = state.selected.min(rows.len().saturating_sub(1));
    let visible = area.height.saturating_sub(3) as usize;
    let first = selected.saturating_sub(visible.saturating_sub(1));
    let body: Vec<TableRow> = rows
        .iter()
        .enumerate()
        .skip(first)
        .map(|(i, row)| {
            let mut style = health_style(state, row.health);
            if i == selected {
                style = style.add_modifier(Modifier::REVERSED);
            }
            TableRow::new(row.cells.clone()).style(style)
        })
        .collect();
    let title = format!(" {} ({}) ", view.names()[0], rows.len());
    let table = Table::new(body, constraints)
        .header(
            TableRow::new(columns.to_vec()).style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(table, area);
}

fn centered(area: Rect) -> Rect {
    let [_, middle, _] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let [_, centre, _] = Layout::horizontal([
        Constraint::Length(2),
        Constraint::Min(10),
        Constraint::Length(2),
    ])
    .areas(middle);
    centre
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::feed::Update;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use serde_json::json;

    fn screen(state: &State, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| draw(frame, state)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        let mut text = String::new();
        for y in 0..height {
            for x in 0..width {
                text.push_str(buffer[(x, y)].symbol());
            }
            text.push('\n');
        }
        text
    }

    fn state() -> State {
        let mut state = State::new("https://127.0.0.1:6443", false);
        let summary = json!({"metadata": {"name": "p-sveltos-c1", "namespace": "default",
            "labels": {"projectsveltos.io/cluster-profile-name": "p"}},
            "spec": {"clusterNamespace": "default", "clusterName": "c1"},
            "status": {"featureSummaries": [{"featureID": "Resources", "status": "Provisioned"}]}});
        state.on_update(Update::Listed("ClusterSummary", vec![]), "10:00:00");
        state.on_update(Update::Applied("ClusterSummary", summary), "10:00:01");
        state
    }

    #[test]
    fn the_overview_fits_80x24_with_counts_and_the_activity_feed() {
        let text = screen(&state(), 80, 24);
        assert!(text.contains("sveltos-events"), "{text}");
        assert!(text.contains("summaries      1  1 ok"), "{text}");
        assert!(
            text.contains("10:00:01  ClusterSummary default/p-sveltos-c1: Provisioned"),
            "{text}"
        );
        assert!(text.contains("? help"), "{text}");
    }

    #[test]
    fn a_list_shows_columns_and_rows_and_a_failure_banner() {
        let mut state = state();
        state.view = View::Summaries;
        state.on_update(Update::Failed("EventReport", "sveltos-events is not installed in this cluster: run `kubectl sveltos-events install`".into()), "10:00:02");
        let text = screen(&state, 100, 12);
        assert!(text.contains("NAMESPACE/NAME"), "{text}");
        assert!(text.contains("default/p-sveltos-c1"), "{text}");
        assert!(text.contains("Provisioned"), "{text}");
        assert!(text.contains("is not installed in this cluster"), "{text}");
    }

    #[test]
    fn an_api_server_gone_is_one_line_whatever_each_watch_says() {
        let mut state = state();
        for (kind, error) in [("EventReport", "connection refused"), ("Event", "reset")] {
            let why = format!("{NOT_ANSWERING} ({error})");
            state.on_update(Update::Failed(kind, why), "10:00:02");
        }
        state.on_update(
            Update::Failed("EventSource", "hidden: you may not list it".into()),
            "10:00:02",
        );
        let lines = banner(&state);
        assert_eq!(
            lines,
            [
                "the API server is not answering; retrying, what is shown stays",
                "EventSource: hidden: you may not list it"
            ]
        );
        // What was shown stays.
        assert!(screen(&state, 100, 24).contains("summaries      1  1 ok"));
    }

    /// Whole frames against `src/tui/snapshots/NAME.txt` (`SVELTOS_EVENTS_UPDATE_GOLDEN=1`
    /// rewrites them): what a user sees, to the cell.
    #[test]
    fn frames_match_their_snapshots() {
        let mut list = state();
        list.view = View::Summaries;
        let mut drilled = state();
        drilled.view = View::Summaries;
        drilled.run(crate::tui::input::Command::Drill);
        let mut gone = state();
        let why = format!("{NOT_ANSWERING} (connection refused)");
        gone.on_update(Update::Failed("EventReport", why), "10:00:02");
        for (name, state, width, height) in [
            ("overview-80x24", state(), 80, 24),
            ("summaries-100x12", list, 100, 12),
            ("drill-80x24", drilled, 80, 24),
            ("gone-80x24", gone, 80, 24),
        ] {
            let frame = screen(&state, width, height);
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src/tui/snapshots")
                .join(format!("{name}.txt"));
            if std::env::var_os("SVELTOS_EVENTS_UPDATE_GOLDEN").is_some() {
                std::fs::write(&path, &frame).unwrap();
                continue;
            }
            let expected = std::fs::read_to_string(&path).unwrap_or_default();
            assert_eq!(
                frame,
                expected,
                "{name} differs from {} (SVELTOS_EVENTS_UPDATE_GOLDEN=1 rewrites it)",
                path.display()
            );
        }
    }

    #[test]
    fn help_is_drawn_over_the_view() {
        let mut state = state();
        state.run(crate::tui::input::Command::Help);
        let text = screen(&state, 80, 24);
        assert!(text.contains("help (Esc closes)"), "{text}");
        assert!(text.contains("filter rows by regex"), "{text}");
    }
}
