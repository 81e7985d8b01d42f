//! The `polyphony` binary's library: the daemon, the CLI commands, metrics, the HTTP API,
//! configuration and state persistence. It wires the controller core, the network models, the
//! actuators and Workfeed; it re-implements none of their logic.
#![warn(missing_docs)]

pub mod actuation;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod delegate;
pub mod demo;
pub mod font;
pub mod fuzzing;
pub mod http;
pub mod metrics;
pub mod network;
pub mod plot;
pub mod prom_query;
pub mod recommend;
pub mod simulate;
pub mod state;

/// How the process ends: user errors (bad flags, bad config) exit 2, everything else 1.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The user asked for something invalid; nothing was applied.
    #[error("{0}")]
    Usage(String),
    /// Something went wrong while running.
    #[error("{0:#}")]
    Runtime(#[from] anyhow::Error),
}

impl Failure {
    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Runtime(_) => 1,
        }
    }
}

impl From<config::ConfigError> for Failure {
    fn from(e: config::ConfigError) -> Self {
        // The whole chain: a read error's OS reason is its source.
        Failure::Usage(format!("{:#}", anyhow::Error::from(e)))
    }
}
