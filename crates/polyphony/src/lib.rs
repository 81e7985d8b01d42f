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

/// Logs, as one warning, where the network or scenario the controller's model is asked about
/// lies outside the space the model was validated on (`polyphony_model::validation`): its error
/// there is not the one `docs/models.md` reports.
pub(crate) fn warn_outside_space(what: &str, outside: &[polyphony_model::validation::OutsideSpace]) {
    if outside.is_empty() {
        return;
    }
    let list = outside.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
    tracing::warn!(
        "{what} lies outside the space the model was validated on: {list}; its predictions there may err far more than docs/models.md reports (see its known limits)"
    );
}

/// [`warn_outside_space`] for a daemon configuration's network (its topology and classes), unless
/// its model is pktsim itself, the reference the space was drawn for.
pub(crate) fn warn_network_outside_space(c: &config::DaemonConfig) {
    if c.model.kind != polyphony_model::ModelKind::PktSim {
        warn_outside_space(
            "the configured network",
            &polyphony_model::validation::network_outside_space(&c.topology, c.dscps().len()),
        );
    }
}

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
