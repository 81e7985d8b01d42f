//! The subcommands that belong to other crates, mounted under `polyphony`: `testbed`
//! (crates/testbed), `emu` (crates/emu) and `workfeed agent|aggregator` (crates/workfeed). Each
//! runs the crate's own front end; this module only maps their errors to exit codes (invalid
//! input, including an unusable listen address given on the command line → 2) and prints their
//! output.

use crate::Failure;
use anyhow::anyhow;

/// `polyphony testbed up|down|status`.
pub fn testbed(a: &testbed::TestbedArgs) -> Result<(), Failure> {
    match testbed::run_cli(a) {
        Ok(json) => {
            println!("{json}");
            Ok(())
        }
        Err(e @ testbed::TestbedError::Invalid { .. }) => Err(Failure::Usage(e.to_string())),
        Err(e) => Err(Failure::Runtime(anyhow!("{e}"))),
    }
}

/// `polyphony emu`.
pub fn emu(a: &emu::EmuArgs) -> Result<(), Failure> {
    match emu::run_cli(a) {
        Ok(summary) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&summary).map_err(|e| Failure::Runtime(e.into()))?
            );
            Ok(())
        }
        // An unusable `--metrics-listen` address (in use, not local) is a bad argument too.
        Err(e @ (emu::EmuError::Invalid { .. } | emu::EmuError::Input { .. } | emu::EmuError::Listen { .. })) => {
            Err(Failure::Usage(e.to_string()))
        }
        Err(e) => Err(Failure::Runtime(anyhow!("{e}"))),
    }
}

/// `polyphony workfeed agent|aggregator`: runs until SIGINT/SIGTERM.
pub fn workfeed(cmd: workfeed::cli::WorkfeedCommand) -> Result<(), Failure> {
    use workfeed::cli::{run_agent_command, run_aggregator_command, WorkfeedCommand};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Runtime(e.into()))?;
    rt.block_on(async move {
        let mut registry = prometheus_client::registry::Registry::default();
        let shutdown = async {
            let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
            match term {
                Ok(mut t) => {
                    tokio::select! {
                        _ = t.recv() => {}
                        _ = tokio::signal::ctrl_c() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        };
        let r = match cmd {
            WorkfeedCommand::Agent(a) => run_agent_command(*a, &mut registry, shutdown).await,
            WorkfeedCommand::Aggregator(a) => run_aggregator_command(*a, &mut registry, shutdown).await,
        };
        // Bad settings exit 2 (nothing ran), as every other subcommand's do.
        r.map_err(|e| {
            if e.is_usage() {
                Failure::Usage(e.to_string())
            } else {
                Failure::Runtime(anyhow!("{e}"))
            }
        })
    })
}
