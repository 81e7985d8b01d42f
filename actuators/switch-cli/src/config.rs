//! The switch actuator's configuration: one TOML table with a `dialect` key.
//!
//! ```toml
//! [actuators.switch]
//! dialect = "dell-os9"
//! ssh = { host = "s4048", identity = "/etc/polyphony/id_ed25519", known_hosts = "/etc/polyphony/known_hosts" }
//! ports = ["TenGigabitEthernet 1/48"]
//! queues = [{ dscp = 10, queue = 1 }, { dscp = 18, queue = 2 }]
//! link_rate = 10000000000
//! ```

use polyphony_actuator::SshConfig;
use polyphony_spec::{BitsPerSec, Dscp};
use serde::{Deserialize, Serialize};

/// Which switch, how to reach it, and its dialect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dialect", rename_all = "kebab-case")]
pub enum SwitchConfig {
    /// Dell Networking OS9 (FTOS).
    DellOs9(VendorConfig),
    /// SONiC.
    Sonic(VendorConfig),
}

impl SwitchConfig {
    /// Per-command timeout in milliseconds.
    pub fn timeout_ms(&self) -> u64 {
        match self {
            SwitchConfig::DellOs9(v) | SwitchConfig::Sonic(v) => v.timeout_ms,
        }
    }
}

/// Which egress queue serves a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueMap {
    /// The class.
    pub dscp: Dscp,
    /// Its egress queue (0..=7).
    pub queue: u8,
}

fn default_name() -> String {
    "switch".into()
}
fn default_prefix() -> String {
    "polyphony".into()
}
fn default_timeout_ms() -> u64 {
    30_000
}

/// A vendor switch (OS9, SONiC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendorConfig {
    /// Actuator name in plans and logs.
    #[serde(default = "default_name")]
    pub name: String,
    /// How to reach the switch.
    pub ssh: SshConfig,
    /// The congested egress ports (used by the one-time setup script that attaches the
    /// per-queue objects), e.g. `TenGigabitEthernet 1/48` or `Ethernet0`.
    pub ports: Vec<String>,
    /// Class → queue.
    pub queues: Vec<QueueMap>,
    /// Port rate (documentation and limits; thresholds are in bytes on these switches).
    pub link_rate: BitsPerSec,
    /// Prefix of the objects this actuator owns (`<prefix>-q3`, `<prefix>.k3`, …).
    #[serde(default = "default_prefix")]
    pub object_prefix: String,
    /// Per-command timeout in milliseconds (a CLI session over SSH).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialects_parse_from_toml() {
        let os9: SwitchConfig = toml::from_str(
            r#"dialect = "dell-os9"
ports = ["TenGigabitEthernet 1/48"]
queues = [{ dscp = 10, queue = 1 }, { dscp = 18, queue = 2 }]
link_rate = 10000000000
ssh = { host = "s4048", identity = "/k", known_hosts = "/h" }"#,
        )
        .unwrap();
        assert!(matches!(os9, SwitchConfig::DellOs9(_)));
        let bad: Result<SwitchConfig, _> = toml::from_str("dialect = \"junos\"");
        assert!(bad.is_err());
    }
}
