//! Support for the actuator crates' golden tests: a runner that refuses to run anything (so a
//! test proves that planning is pure), the one configuration change every dialect renders
//! ([`sample_change`]), an SSH target with fixed paths ([`sample_ssh`]), and the comparison of a
//! rendering with its committed golden file, regenerated on request with `UPDATE_GOLDEN=1`.

use crate::{Command, Output, RunError, Runner, SshConfig};
use polyphony_spec::{Bytes, Dscp, NetworkConfig, Packets};
use std::path::Path;

/// The change every golden plan renders: from equal weights, K = 30 kB, initcwnd 10 for AF11,
/// AF21, AF31 to weights 0.2 / ⅓ / 0.4666667 with K = 20 / 30 / 90 kB.
pub fn sample_change() -> (NetworkConfig, NetworkConfig) {
    let dscps = [Dscp::AF11, Dscp::AF21, Dscp::AF31];
    let from = NetworkConfig::uniform(&dscps, Bytes(30_000), Packets(10));
    let mut to = from.clone();
    for (c, (w, k)) in to
        .classes
        .iter_mut()
        .zip([(0.2, 20_000), (1.0 / 3.0, 30_000), (0.4666667, 90_000)])
    {
        c.weight = w;
        c.ecn_threshold = Bytes(k);
    }
    (from, to)
}

/// An SSH target `user@host` with fixed key and known-hosts paths (rendered into golden files).
pub fn sample_ssh(host: &str, user: &str) -> SshConfig {
    SshConfig {
        host: host.into(),
        user: user.into(),
        port: 22,
        identity: "/etc/polyphony/switch_ed25519".into(),
        known_hosts: "/etc/polyphony/known_hosts".into(),
        connect_timeout_secs: 5,
        client_namespace: None,
        ssh: "ssh".into(),
    }
}

/// A runner that fails the calling test if asked to run anything: planning must not.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCommands;

impl Runner for NoCommands {
    fn run(&self, cmd: &Command) -> Result<Output, RunError> {
        panic!("planning ran a command: {cmd}");
    }
}

/// Asserts that `actual` equals the golden file `dir/name`; with `UPDATE_GOLDEN` set in the
/// environment, writes `actual` there instead (review the diff before committing).
pub fn assert_golden(dir: &Path, name: &str, actual: &str) {
    let path = dir.join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("{}: cannot write: {e}", path.display()));
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1 to create it", path.display()));
    assert_eq!(
        actual, want,
        "rendering of {name} changed; review and regenerate with UPDATE_GOLDEN=1"
    );
}
