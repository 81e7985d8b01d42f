//! Actuator for per-class initial congestion windows through `ip route` in per-class routing
//! tables.
//!
//! Per `docs/testbed.md`, each sender namespace has, per class DSCP d, a rule
//! `fwmark 0x100+d lookup 100+d` (the testbed creates the rules) and in table `100+d` the route
//! to the receivers' prefix. This actuator sets `initcwnd N` on that route with
//! `ip route replace DEST via GW dev DEV table 100+d initcwnd N` in every sender namespace and
//! reads it back with `ip -j -4 route show table all` (one command per namespace). It touches
//! only routes to the configured destination in tables `table_base..=table_base+63`.
//!
//! Commands rather than a netlink crate: the dry run must show the exact operations an operator
//! can replay, and the same argument vectors run over SSH for remote hosts.
#![warn(missing_docs)]

mod backend;
mod config;

pub use backend::{IprouteBackend, RouteItem, RouteValue};
pub use config::{IprouteConfig, SenderRoute};

use polyphony_actuator::{ActuatorError, Engine, Local, Runner, SystemRunner, Transport};
use std::sync::Arc;
use std::time::Duration;

/// The iproute actuator: the generic engine driving an [`IprouteBackend`].
pub type IprouteActuator = Engine<IprouteBackend>;

/// Builds the iproute actuator for `cfg`; commands run on this machine.
pub fn iproute_actuator(cfg: IprouteConfig) -> Result<IprouteActuator, ActuatorError> {
    let runner: Arc<dyn Runner> = Arc::new(SystemRunner::new(Duration::from_millis(cfg.timeout_ms)));
    iproute_actuator_with(cfg, Arc::new(Local), runner)
}

/// Builds the iproute actuator with an explicit transport and runner. When the configuration
/// lists congestion-control algorithms, every sender's kernel must offer and allow each
/// ([`IprouteBackend::check_congestion_controls`]); the error says which sysctl lacks which.
pub fn iproute_actuator_with(
    cfg: IprouteConfig,
    transport: Arc<dyn Transport>,
    runner: Arc<dyn Runner>,
) -> Result<IprouteActuator, ActuatorError> {
    let backend = IprouteBackend::new(cfg, transport)?;
    backend.check_congestion_controls(runner.as_ref())?;
    Ok(Engine::new(backend, runner))
}
