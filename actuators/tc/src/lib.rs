//! Actuator for Linux tc: per-class HTB weights, ECN thresholds (in the testbed marker's BPF map,
//! or a `red … ecn` leaf where the kernel has `sch_red`), and per-class buffer limits (`bfifo`).
//!
//! The objects follow `docs/testbed.md`: root HTB `1:`, parent class `1:1` at the link rate C,
//! class `1:<d>` per DSCP d with a `bfifo` leaf, thresholds in a hash map pinned at
//! `/sys/fs/bpf/polyphony/P/ecn_thresh_ns` (u32 DSCP → u64 sojourn ns). This actuator changes
//! existing classes, leaves and map entries; it never builds or removes the tree (the testbed
//! owns that). Mapping of knobs to settings (see [`rates`]):
//! - weight w → `rate` = w·C (rounded to what tc prints exactly), `ceil` = C,
//!   `quantum` = q_min · w / min(w) (q_min = 1514 B, one full frame; proportional to w);
//! - ECN threshold K bytes → sojourn K·8/C ns in the map, or `red min K max K+1 … ecn`;
//! - buffer → `bfifo limit`.
//!
//! The same tree on a remote Linux switch is driven over SSH ([`tc_over_ssh`], configured by
//! [`TcOverSsh`]): every command and read-back goes through the SSH transport.
#![warn(missing_docs)]

mod backend;
mod config;
mod parse;
mod probe;
pub mod rates;

pub use backend::{TcBackend, TcItem, TcValue};
pub use config::{EcnMode, TcConfig, TcOverSsh};
pub use probe::{probe_red, RedProbe};

use polyphony_actuator::{ActuatorError, Engine, Local, Runner, SshTransport, SystemRunner, Transport};
use std::sync::Arc;
use std::time::Duration;

/// The tc actuator: the generic engine driving a [`TcBackend`].
pub type TcActuator = Engine<TcBackend>;

/// Builds the tc actuator for `cfg` on this machine (commands run locally with the configured
/// timeout). With `ecn = "auto"` this runs the `red` capability probe (in a throwaway network
/// namespace; nothing managed is touched).
pub fn tc_actuator(cfg: TcConfig) -> Result<TcActuator, ActuatorError> {
    let runner: Arc<dyn Runner> = Arc::new(SystemRunner::new(Duration::from_millis(cfg.timeout_ms)));
    tc_actuator_with(cfg, Arc::new(Local), runner)
}

/// Builds the tc actuator with an explicit transport (e.g. SSH to a remote Linux switch) and
/// runner.
pub fn tc_actuator_with(
    cfg: TcConfig,
    transport: Arc<dyn Transport>,
    runner: Arc<dyn Runner>,
) -> Result<TcActuator, ActuatorError> {
    let backend = TcBackend::new(cfg, transport, runner.as_ref())?;
    Ok(Engine::new(backend, runner))
}

/// Builds the tc actuator for a remote Linux switch reached over SSH (commands run through the
/// `ssh` client with the configured timeout). A tc tree still named `tc` is named `switch`.
pub fn tc_over_ssh(cfg: TcOverSsh) -> Result<TcActuator, ActuatorError> {
    let runner: Arc<dyn Runner> = Arc::new(SystemRunner::new(Duration::from_millis(cfg.tc.timeout_ms)));
    tc_over_ssh_with(cfg, runner)
}

/// [`tc_over_ssh`] with an explicit runner.
pub fn tc_over_ssh_with(cfg: TcOverSsh, runner: Arc<dyn Runner>) -> Result<TcActuator, ActuatorError> {
    let TcOverSsh { ssh, mut tc } = cfg;
    if tc.name == "tc" {
        tc.name = "switch".into();
    }
    tc_actuator_with(tc, Arc::new(SshTransport::new(ssh)), runner)
}
