//! `tui`: a live view of the management cluster (SveltosClusters and Cluster API clusters,
//! EventSources, EventTriggers, EventReports, ClusterProfiles, ClusterSummaries, ClusterReports,
//! the controllers' Events and the activity between them), driven by watches. State ([`state`]), keys ([`input`]), views ([`view`]), drawing ([`render`], a pure
//! function of the state) and data ([`feed`]) are apart. It never writes to the cluster.

pub mod drill;
pub mod feed;
pub mod input;
pub mod render;
pub mod scope;
pub mod state;
pub mod view;

use anyhow::Context;
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures_util::StreamExt;
use ratatui::DefaultTerminal;
use tokio::sync::mpsc;

use crate::chain::{self, MANAGEMENT, Target};
use crate::connect::ClusterArgs;
use state::{Effect, State};

/// Flags of `tui`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  kubectl sveltos-events tui --context mgmt\n  \
    kubectl sveltos-events tui --cluster default/cluster-1\n\n\
    Keys: ? help, : view, / filter, Enter details, y YAML, t trace, q quit. NO_COLOR turns\n    colours off."
)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Only the managed clusters in this namespace, and their reports, profiles and
    /// summaries (namespaced kinds are watched there alone).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Only this managed cluster (`NAMESPACE/NAME`), and its reports, profiles and summaries.
    #[arg(long = "cluster", value_name = "NAMESPACE/NAME")]
    managed: Option<String>,
    /// Write the log (watch retries, warnings; `RUST_LOG` sets the level) to this file: the
    /// screen never shows it.
    #[arg(long)]
    pub log_file: Option<std::path::PathBuf>,
}

/// Runs the TUI until the user quits (or SIGTERM); the terminal is restored on every way out,
/// a panic included.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let scope =
        scope::Scope::new(args.namespace, args.managed.as_deref()).map_err(anyhow::Error::msg)?;
    let (client, url, _) = args.cluster.connect().await?;
    let colour = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut updates = feed::start(client.clone(), scope.namespace());
    let mut state = State::new(&url, colour).scoped(scope);
    let mut terminal = ratatui::try_init().context("setting up the terminal")?;
    let result = event_loop(&mut terminal, &mut state, &mut updates, client).await;
    ratatui::restore();
    result
}

/// The time now, as the activity feed shows it (`HH:MM:SS`, UTC) and in milliseconds.
fn now() -> (String, i64) {
    let now = k8s_openapi::jiff::Timestamp::now();
    (now.strftime("%H:%M:%S").to_string(), now.as_millisecond())
}

async fn event_loop(
    terminal: &mut DefaultTerminal,
    state: &mut State,
    updates: &mut mpsc::Receiver<feed::Update>,
    client: kube::Client,
) -> anyhow::Result<()> {
    let mut keys = EventStream::new();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listening for SIGTERM")?;
    let (traced, mut traces) = mpsc::channel::<(String, String)>(4);
    let (read, mut reads) = mpsc::channel::<(String, String)>(4);
    loop {
        terminal
            .draw(|frame| render::draw(frame, state))
            .context("drawing")?;
        if state.quit {
            return Ok(());
        }
        tokio::select! {
            event = keys.next() => match event {
                Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                    match state.on_key(key) {
                        Some(Effect::Deployed { title, text, profile }) => {
                            let done = read.clone();
                            tokio::spawn(deployed(client.clone(), title, text, profile, done));
                        }
                        Some(effect) => {
                            tokio::spawn(trace(client.clone(), effect, traced.clone()));
                        }
                        None => {}
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error).context("reading the terminal"),
                None => return Ok(()),
            },
            Some(update) = updates.recv() => {
                let (at, millis) = now();
                state.on_update_at(update, &at, Some(millis));
                // A burst (a relist, many changes) is drawn once.
                while let Ok(update) = updates.try_recv() {
                    let (at, millis) = now();
                    state.on_update_at(update, &at, Some(millis));
                }
            }
            Some((title, text)) = traces.recv() => state.show_text(title, text),
            Some((title, text)) = reads.recv() => state.replace_text(&title, text),
            _ = terminate.recv() => return Ok(()),
        }
    }
}

/// Runs the chain engine for the selected object: down from an EventSource, EventTrigger or
/// ClusterProfile (a ClusterSummary or ClusterReport: its profile), up from an EventReport.
async fn trace(client: kube::Client, effect: Effect, done: mpsc::Sender<(String, String)>) {
    let Effect::Trace {
        kind,
        namespace,
        name,
    } = effect
    else {
        return;
    };
    let mut fleet = chain::fleet::Fleet::new(client);
    let target = |kind, name| Target {
        cluster: MANAGEMENT,
        kind,
        namespace: namespace.as_deref(),
        name,
    };
    let result = match kind.as_str() {
        "EventReport" => chain::explain::explain(&mut fleet, target("EventReport", &name)).await,
        // A summary's (or dry-run report's) chain is its profile's, which its label names.
        "ClusterSummary" | "ClusterReport" => {
            match fleet.sveltos(&kind, namespace.as_deref(), &name).await {
                Ok(Some(summary)) => {
                    let profile =
                        chain::meta(&summary, "labels", api::labels::CLUSTER_PROFILE_NAME_LABEL)
                            .to_owned();
                    let target = Target {
                        namespace: None,
                        ..target("ClusterProfile", &profile)
                    };
                    chain::trace::trace(&mut fleet, target).await
                }
                Ok(None) => Err(anyhow::anyhow!("it is gone")),
                Err(e) => Err(e),
            }
        }
        "SveltosCluster" | "Cluster" => Err(anyhow::anyhow!(
            "a cluster has no chain of its own: trace one of its reports or summaries"
        )),
        "Event" => Err(anyhow::anyhow!(
            "an Event has no chain of its own: trace the object it is about"
        )),
        _ => chain::trace::trace(&mut fleet, target(&kind, &name)).await,
    };
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let text = match result
        .and_then(|node| chain::render::render(&node, chain::render::Format::Text, now))
    {
        Ok(text) => text,
        Err(error) => format!("cannot trace it: {error:#}"),
    };
    let _ = done.send((format!("chain of {kind} {name}"), text)).await;
}

/// Reads what `profile` deployed in each of its clusters (its summaries' records, each kind
/// listed live by Sveltos' labels) and sends `text` with them under `title`.
async fn deployed(
    client: kube::Client,
    title: String,
    mut text: String,
    profile: String,
    done: mpsc::Sender<(String, String)>,
) {
    use std::fmt::Write as _;
    let mut fleet = chain::fleet::Fleet::new(client);
    let selector = format!("{}={profile}", api::labels::CLUSTER_PROFILE_NAME_LABEL);
    let _ = writeln!(text, "\nDeployed objects:");
    match fleet.sveltos_list("ClusterSummary", None, &selector).await {
        Ok(summaries) if summaries.is_empty() => {
            let _ = writeln!(text, "  none: the profile matches no cluster yet");
        }
        Ok(summaries) => {
            for summary in &summaries {
                let cluster = chain::spec_cluster(summary);
                let found = chain::addons::deployed(&mut fleet, summary, &profile, &cluster).await;
                let _ = writeln!(text, "  in {cluster}:");
                if found.is_empty() {
                    let _ = writeln!(text, "    nothing yet");
                }
                for object in found {
                    let _ = match object {
                        Ok((kind, object)) => {
                            writeln!(text, "    {kind} {}", state::key(&object))
                        }
                        Err((entry, why)) => writeln!(text, "    {entry}: cannot be read: {why}"),
                    };
                }
            }
        }
        Err(error) => {
            let _ = writeln!(text, "  cannot be read: {error:#}");
        }
    }
    let _ = done.send((title, text)).await;
}
