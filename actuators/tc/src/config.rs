//! The tc actuator's configuration (a TOML table in the daemon's configuration).

use polyphony_spec::{BitsPerSec, Dscp};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How ECN thresholds are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMode {
    /// `red` leaves when the kernel has `sch_red` (probed), otherwise the BPF map.
    #[default]
    Auto,
    /// Sojourn thresholds in the testbed marker's pinned BPF map.
    BpfMap,
    /// A `red … ecn` leaf per class (replaces the `bfifo` leaf; needs `sch_red`).
    Red,
    /// ECN thresholds are not managed by this actuator.
    None,
}

fn default_name() -> String {
    "tc".into()
}
fn default_parent() -> String {
    "1:1".into()
}
fn default_mtu() -> u32 {
    1500
}
fn default_min_quantum() -> u32 {
    1514
}
fn default_true() -> bool {
    true
}
fn default_timeout_ms() -> u64 {
    10_000
}
fn default_tc() -> String {
    "tc".into()
}
fn default_bpftool() -> String {
    "bpftool".into()
}

/// Where the HTB tree is and how to drive it.
///
/// ```toml
/// namespace = "pp-sw"
/// device = "rx"
/// link_rate = 100000000
/// ecn_map_pin = "/sys/fs/bpf/polyphony/pp/ecn_thresh_ns"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcConfig {
    /// Actuator name in plans and logs (unique within a composite).
    #[serde(default = "default_name")]
    pub name: String,
    /// Network namespace of the device (`tc -n NAME`); none = the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The bottleneck device whose egress carries the HTB tree.
    pub device: String,
    /// Link rate C in bit/s: the parent class rate and every class's ceil.
    pub link_rate: BitsPerSec,
    /// The parent class of the per-class HTB classes; its major number is the classes' major.
    #[serde(default = "default_parent")]
    pub parent: String,
    /// The classes managed (empty = every class found on the device and in targets). Class ids
    /// are `<major>:<d in decimal>` per the testbed contract.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<Dscp>,
    /// ECN mechanism.
    #[serde(default)]
    pub ecn: EcnMode,
    /// The pinned threshold map (u32 DSCP → u64 ns), needed for `ecn = "bpf_map"` and `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_map_pin: Option<PathBuf>,
    /// MTU in bytes: the smallest class buffer, and `avpkt` of `red`.
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// The quantum of the class with the smallest weight (bytes; one full Ethernet frame, as
    /// the testbed uses); the others get proportionally more.
    #[serde(default = "default_min_quantum")]
    pub min_quantum: u32,
    /// Whether per-class buffers (`buffer` knob) are applied to the `bfifo` leaves.
    #[serde(default = "default_true")]
    pub manage_buffers: bool,
    /// Per-command timeout in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// The `tc` binary.
    #[serde(default = "default_tc")]
    pub tc: String,
    /// The `bpftool` binary.
    #[serde(default = "default_bpftool")]
    pub bpftool: String,
}

impl TcConfig {
    /// A configuration with defaults for everything but the device and link rate.
    pub fn new(namespace: Option<String>, device: impl Into<String>, link_rate: BitsPerSec) -> Self {
        TcConfig {
            name: default_name(),
            namespace,
            device: device.into(),
            link_rate,
            parent: default_parent(),
            classes: Vec::new(),
            ecn: EcnMode::Auto,
            ecn_map_pin: None,
            mtu: default_mtu(),
            min_quantum: default_min_quantum(),
            manage_buffers: true,
            timeout_ms: default_timeout_ms(),
            tc: default_tc(),
            bpftool: default_bpftool(),
        }
    }
}

/// A Linux switch driven with tc over SSH (`dialect = "linux-tc"` of the daemon's
/// `[actuators.switch]`): how to reach it and its tc tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcOverSsh {
    /// How to reach the switch.
    pub ssh: polyphony_actuator::SshConfig,
    /// The tc tree on the switch (namespace, device, link rate, threshold map).
    pub tc: TcConfig,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_toml_gets_contract_defaults() {
        let c: TcConfig = toml::from_str(
            "namespace = \"pp-sw\"\ndevice = \"rx\"\nlink_rate = 100000000\necn_map_pin = \"/sys/fs/bpf/polyphony/pp/ecn_thresh_ns\"",
        )
        .unwrap();
        assert_eq!(c.parent, "1:1");
        assert_eq!(c.ecn, EcnMode::Auto);
        assert_eq!(c.mtu, 1500);
        assert_eq!(c.link_rate, BitsPerSec::from_mbps(100));
    }

    #[test]
    fn misspelled_key_is_rejected() {
        let r: Result<TcConfig, _> = toml::from_str("device = \"rx\"\nlink_rate = 1\nlinkrate = 2");
        assert!(r.is_err());
    }
}
