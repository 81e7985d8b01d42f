//! The command-line front end (`polyphony testbed up|down|status`, or the stand-alone
//! `pp-testbed`): clap arguments and `run_cli`, which prints JSON.

use crate::{down, status, up, TestbedError, TestbedOptions};
use polyphony_spec::{BitsPerSec, Scenario};
use std::path::PathBuf;

/// `testbed` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct TestbedArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TestbedCommand,
}

/// The subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum TestbedCommand {
    /// Build (or complete) an instance for a scenario.
    Up {
        /// Scenario TOML.
        #[arg(long)]
        scenario: PathBuf,
        /// Instance prefix.
        #[arg(long, default_value = "pp")]
        prefix: String,
        /// Bottleneck rate in Mbit/s (default: the scenario's).
        #[arg(long)]
        rate_mbps: Option<u64>,
    },
    /// Remove everything an instance made.
    Down {
        /// Instance prefix.
        #[arg(long, default_value = "pp")]
        prefix: String,
    },
    /// Print an instance's status.
    Status {
        /// Instance prefix.
        #[arg(long, default_value = "pp")]
        prefix: String,
    },
}

/// Runs a subcommand; returns the JSON to print.
pub fn run_cli(a: &TestbedArgs) -> Result<String, TestbedError> {
    let json = |v: serde_json::Result<String>| v.unwrap_or_default();
    match &a.command {
        TestbedCommand::Up {
            scenario,
            prefix,
            rate_mbps,
        } => {
            let text = std::fs::read_to_string(scenario).map_err(|e| TestbedError::io(scenario.display(), e))?;
            let sc = Scenario::from_toml(&text, &scenario.display().to_string())
                .map_err(|e| TestbedError::invalid("--scenario", scenario.display(), e.to_string()))?;
            let mut o = TestbedOptions::new(prefix);
            o.rate = rate_mbps.map(BitsPerSec::from_mbps);
            let tb = up(&sc, &o)?;
            Ok(json(serde_json::to_string_pretty(&tb.state)))
        }
        TestbedCommand::Down { prefix } => Ok(json(serde_json::to_string_pretty(&down(prefix)?))),
        TestbedCommand::Status { prefix } => Ok(json(serde_json::to_string_pretty(&status(prefix)?))),
    }
}
