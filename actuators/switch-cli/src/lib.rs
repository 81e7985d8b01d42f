//! Actuator that renders and applies per-queue scheduling weights and WRED/ECN thresholds
//! through switch CLIs over SSH.
//!
//! Dialects ([`SwitchConfig`]; a Linux switch is driven by the tc actuator over SSH instead,
//! `polyphony_actuator_tc::tc_over_ssh`):
//! - `dell-os9`: Dell Networking OS9 (FTOS), e.g. the S4048-ON of the paper: one
//!   `qos-policy-output` per queue with `bandwidth-percentage`, one `wred-profile` per queue with
//!   `threshold min K max K+1 max-drop-rate 100` and `wred ecn`; read back from
//!   `show running-config`. OS9 has no commit/rollback: each step is applied at once and undone
//!   by re-applying the previous values.
//! - `sonic`: SONiC CONFIG_DB `SCHEDULER` (DWRR weights) and `WRED_PROFILE` (`ecn_all`, green
//!   thresholds in bytes) entries written with `sonic-db-cli`, read back with
//!   `sonic-cfggen -d --var-json`.
//!
//! Every SSH command uses key authentication only, strict host-key checking against the
//! configured `known_hosts`, and a connect timeout ([`polyphony_actuator::SshTransport`]).
#![warn(missing_docs)]

mod config;
mod dialect;
mod os9;
mod sonic;
mod vendor;

pub use config::{QueueMap, SwitchConfig, VendorConfig};
pub use dialect::{percentages, Dialect, QueueItem, QueueValue};
pub use os9::DellOs9;
pub use sonic::Sonic;
pub use vendor::VendorBackend;

use polyphony_actuator::{Actuator, ActuatorError, Engine, Runner, SshTransport, SystemRunner, Transport};
use std::sync::Arc;
use std::time::Duration;

/// Builds the switch actuator for `cfg` (commands run through the `ssh` client).
pub fn switch_actuator(cfg: SwitchConfig) -> Result<Box<dyn Actuator + Send>, ActuatorError> {
    let runner: Arc<dyn Runner> = Arc::new(SystemRunner::new(Duration::from_millis(cfg.timeout_ms())));
    switch_actuator_with(cfg, runner)
}

/// Builds the switch actuator with an explicit runner.
pub fn switch_actuator_with(
    cfg: SwitchConfig,
    runner: Arc<dyn Runner>,
) -> Result<Box<dyn Actuator + Send>, ActuatorError> {
    Ok(match cfg {
        SwitchConfig::DellOs9(v) => {
            let transport: Arc<dyn Transport> = Arc::new(SshTransport::new(v.ssh.clone()));
            Box::new(Engine::new(VendorBackend::new(v, DellOs9, transport)?, runner))
        }
        SwitchConfig::Sonic(v) => {
            let transport: Arc<dyn Transport> = Arc::new(SshTransport::new(v.ssh.clone()));
            Box::new(Engine::new(VendorBackend::new(v, Sonic, transport)?, runner))
        }
    })
}
