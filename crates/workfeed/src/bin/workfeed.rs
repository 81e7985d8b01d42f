//! Stand-alone `workfeed agent|aggregator` (the `polyphony` binary mounts the same commands).
//! Metrics are registered but not served here; the daemon serves them.

use clap::Parser;
use prometheus_client::registry::Registry;
use workfeed::cli::{run_agent_command, run_aggregator_command, WorkfeedCommand};

#[derive(Parser)]
#[command(name = "workfeed", about = "Workfeed: eBPF flow capture, agents and aggregators")]
struct Cli {
    #[command(subcommand)]
    command: WorkfeedCommand,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Logs go to stderr, as the other binaries' do, coloured only on a terminal: under systemd
    // the escape codes would land in the journal.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let mut registry = Registry::default();
    // SIGINT or SIGTERM (what systemd sends) stop the command; the agent then drains and
    // detaches the probe.
    let shutdown = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    };
    match cli.command {
        WorkfeedCommand::Agent(a) => run_agent_command(*a, &mut registry, shutdown).await?,
        WorkfeedCommand::Aggregator(a) => run_aggregator_command(*a, &mut registry, shutdown).await?,
    }
    Ok(())
}
