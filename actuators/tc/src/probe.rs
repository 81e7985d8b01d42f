//! Capability probe: does the kernel (where the commands run) have the `red` qdisc?
//!
//! The probe adds a `red … ecn` qdisc to the loopback device of a throwaway network namespace
//! (`unshare --net`), which disappears with the probing process: nothing managed is touched and
//! nothing is left behind.

use polyphony_actuator::{Command, RunError, Runner, Transport};

/// The probe's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedProbe {
    /// Whether a `red … ecn` qdisc could be created.
    pub available: bool,
    /// What the kernel said (for logs and `polyphony` status).
    pub detail: String,
}

/// The command the probe runs (before the transport wraps it).
pub fn probe_command(tc: &str) -> Command {
    Command::new([
        "unshare",
        "--net",
        "--",
        tc,
        "qdisc",
        "add",
        "dev",
        "lo",
        "root",
        "red",
        "limit",
        "120000",
        "min",
        "30000",
        "max",
        "30001",
        "avpkt",
        "1500",
        "burst",
        "21",
        "bandwidth",
        "100mbit",
        "probability",
        "1",
        "ecn",
    ])
}

/// Runs the probe through `transport` and `runner`. `Err` when the probe itself could not run
/// (the device is unreachable, `unshare` is missing): the answer would be a guess.
pub fn probe_red(runner: &dyn Runner, transport: &dyn Transport, tc: &str) -> Result<RedProbe, RunError> {
    let cmd = transport.wrap(probe_command(tc));
    match runner.run(&cmd) {
        Ok(_) => Ok(RedProbe {
            available: true,
            detail: "sch_red present: `red … ecn` accepted".into(),
        }),
        Err(RunError::Failed { stderr, .. })
            if stderr.contains("qdisc kind is unknown") || stderr.contains("Unknown qdisc") =>
        {
            Ok(RedProbe {
                available: false,
                detail: format!("sch_red unavailable: {stderr}"),
            })
        }
        Err(e) => Err(e),
    }
}
