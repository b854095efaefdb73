//! `kubectl-sveltos_events`: the sveltos-events kubectl plugin.

use clap::{CommandFactory, Parser, Subcommand};
use kubectl_sveltos_events::{
    chain, check, complete, install, offline, register, sandbox_command, tui, uninstall, version,
};

/// mimalloc rather than glibc's malloc (the sandbox allocates per request and per watch
/// event): see the workspace's Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Event-driven add-ons for Kubernetes, the Sveltos way.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl-sveltos_events",
    bin_name = "kubectl sveltos-events",
    version,
    about
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Log lines (standard error): text, or json (one object a line).
    #[arg(long, global = true, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
}

/// What `kubectl sveltos-events` alone prints: what to run first.
const GUIDE: &str = "\
sveltos-events: deploy add-ons to Kubernetes clusters when events happen in them.

Start here:
  kubectl sveltos-events sandbox --dir /tmp/sbx --demo   try it all locally, in one process
  kubectl sveltos-events check --pre                     can this cluster and user install it?
  kubectl sveltos-events install                         the controllers, on the current context
  kubectl sveltos-events register cluster -n NS --name NAME --cluster-kubeconfig FILE --service-account
  kubectl sveltos-events check                           everything running and connected?

Then:
  kubectl sveltos-events tui                             events, reports, profiles and add-ons, live
  kubectl sveltos-events explain KIND/NAME -n NS --cluster NS/CLUSTER   why is this deployed?
  kubectl sveltos-events trace KIND/NAME -n NS --cluster NS/CLUSTER     what did this cause?

Every command: kubectl sveltos-events help, or COMMAND --help (each shows an example).
";

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an in-process Kubernetes API server: a management cluster and N managed clusters.
    Sandbox(sandbox_command::Args),
    /// Install (or upgrade) the CRDs, the manager and the agent on the management cluster.
    Install(install::Args),
    /// Check the installation (`--pre`: what install needs); exit 0 healthy, 1 problems, 2
    /// could not check.
    Check(check::Args),
    /// Why was this deployed: from an add-on (or a ClusterProfile or EventReport) up to the
    /// event that caused it, each link checked.
    ///
    /// Example: `kubectl sveltos-events explain networkpolicy/front-my-service -n default
    /// --cluster default/cluster-1`. Exit 0 the chain is whole, 1 a link is broken (it says
    /// why), 2 the command could not run.
    Explain(chain::cli::Args),
    /// What did this cause: from a resource of a managed cluster (or an EventSource,
    /// EventTrigger or ClusterProfile) down to the add-ons deployed for it, each link checked.
    ///
    /// Example: `kubectl sveltos-events trace service/my-service -n default --cluster
    /// default/cluster-1`. Exit 0 the chain is whole, 1 a link is broken (it says why), 2 the
    /// command could not run.
    Trace(chain::cli::Args),
    /// What the manager would create for EventTriggers, offline: ClusterProfiles and
    /// instantiated ConfigMaps/Secrets from files, no cluster needed.
    Render(offline::Args),
    /// A live view of events, reports, generated ClusterProfiles and add-ons as they happen.
    Tui(tui::Args),
    /// Show what sveltos-events did or would do: `show addons`, `show usage`, `show dryrun`.
    #[command(subcommand)]
    Show(Show),
    /// Withdraw every EventTrigger's add-ons, then remove the controllers (and the CRDs with
    /// --crds).
    Uninstall(uninstall::Args),
    /// Register a managed cluster with the management cluster.
    #[command(subcommand)]
    Register(register::Register),
    /// Remove a registered cluster.
    #[command(subcommand)]
    Deregister(register::Deregister),
    /// Print the plugin's version and the versions of the controllers in the cluster.
    Version(version::Args),
    /// Print a shell completion script for the binary (kubectl itself completes `kubectl
    /// sveltos-events` through `kubectl_complete-sveltos_events`).
    Completion(complete::Args),
    /// Evaluate an EventSource (selectors and Lua) over resource files, or check fixture
    /// folders, offline.
    Eval(agent::cli::EvalArgs),
}

/// What `show` shows.
#[derive(Debug, Subcommand)]
enum Show {
    /// The add-ons deployed in each cluster, read live, with the profile that deployed them.
    Addons(chain::addons::AddonsArgs),
    /// Which clusters a ClusterProfile, or a ConfigMap/Secret that profiles or EventTriggers
    /// reference, affects.
    Usage(chain::usage::UsageArgs),
    /// What the profiles in syncMode DryRun would do in each cluster, with every diff in full.
    Dryrun(chain::dryrun::DryRunArgs),
}

/// Logs (`RUST_LOG`, default [`clusters::process::DEFAULT_LOG_FILTER`]) to standard error, coloured only on a terminal, as JSON
/// lines with `json`; the TUI owns the terminal, so its logs go to `--log-file` or nowhere.
fn init_logging(command: Option<&Command>, json: bool) -> anyhow::Result<()> {
    use std::io::IsTerminal as _;
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let writer = match command {
        Some(Command::Tui(args)) => match &args.log_file {
            Some(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| {
                        anyhow::anyhow!("cannot open --log-file {}: {e}", path.display())
                    })?;
                BoxMakeWriter::new(std::sync::Mutex::new(file))
            }
            None => BoxMakeWriter::new(std::io::sink),
        },
        _ => BoxMakeWriter::new(std::io::stderr),
    };
    let filter = clusters::process::log_filter();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    if json {
        logs.json().init();
    } else {
        let tui = matches!(command, Some(Command::Tui(_)));
        logs.with_ansi(!tui && std::io::stderr().is_terminal())
            .init();
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    clusters::process::no_huge_pages();
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__complete") {
        init_logging(None, false)?;
        let (candidates, directive) = complete::candidates(&Cli::command(), &args[2..]).await;
        return Ok(complete::print(
            &candidates,
            directive,
            &mut std::io::stdout(),
        )?);
    }
    let cli = Cli::parse();
    let command = cli.command;
    init_logging(command.as_ref(), cli.log_format == "json")?;
    let Some(command) = command else {
        print!("{GUIDE}");
        return Ok(());
    };
    match command {
        Command::Sandbox(args) => exit_with(sandbox_command::run(args).await),
        Command::Install(args) => exit_on_error(install::run(args, &mut std::io::stdout()).await),
        Command::Check(args) => exit_with(check::run(args, &mut std::io::stdout()).await),
        Command::Explain(args) => exit_with(
            chain::cli::run(args, chain::cli::Direction::Upward, &mut std::io::stdout()).await,
        ),
        Command::Trace(args) => exit_with(
            chain::cli::run(
                args,
                chain::cli::Direction::Downward,
                &mut std::io::stdout(),
            )
            .await,
        ),
        Command::Render(args) => exit_with(offline::run(
            &args,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        )),
        Command::Tui(args) => exit_on_error(tui::run(args).await),
        Command::Show(Show::Addons(args)) => {
            exit_with(chain::addons::show_addons(args, &mut std::io::stdout()).await)
        }
        Command::Show(Show::Usage(args)) => {
            exit_with(chain::usage::show_usage(args, &mut std::io::stdout()).await)
        }
        Command::Show(Show::Dryrun(args)) => {
            exit_with(chain::dryrun::show_dryrun(args, &mut std::io::stdout()).await)
        }
        Command::Uninstall(args) => {
            exit_on_error(uninstall::run(args, &mut std::io::stdout()).await)
        }
        Command::Register(register::Register::Cluster(args)) => {
            exit_on_error(register::register(args, &mut std::io::stdout()).await)
        }
        Command::Deregister(register::Deregister::Cluster(args)) => {
            exit_on_error(register::deregister(args, &mut std::io::stdout()).await)
        }
        Command::Version(args) => exit_on_error(version::run(args, &mut std::io::stdout()).await),
        Command::Completion(args) => {
            complete::script(&mut Cli::command(), args.shell, &mut std::io::stdout());
            Ok(())
        }
        Command::Eval(args) => {
            let code = agent::cli::run(&args, &mut std::io::stdout().lock());
            std::process::exit(i32::from(code));
        }
    }
}

/// Ends the process with the code a command chose, or as [`exit_on_error`] on an error.
fn exit_with(result: anyhow::Result<u8>) -> ! {
    match result {
        Ok(code) => std::process::exit(i32::from(code)),
        Err(error) => exit_on_error(Err(error)),
    }
}

/// Ends the process as the plugin's commands promise: the error's sentence and its causes on
/// stderr, exit code 2 ("could not run"); 0 on success.
fn exit_on_error(result: anyhow::Result<()>) -> ! {
    match result {
        Ok(()) => std::process::exit(0),
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::exit(2)
        }
    }
}
