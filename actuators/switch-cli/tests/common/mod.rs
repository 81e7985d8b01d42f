//! Helpers shared by the switch-cli integration tests.
#![allow(dead_code)]

use polyphony_actuator::SshConfig;
use polyphony_actuator_switch_cli::{QueueMap, VendorConfig};
use polyphony_spec::{BitsPerSec, Dscp};

/// The vendor switch's SSH target.
pub fn ssh() -> SshConfig {
    polyphony_actuator::golden::sample_ssh("s4048.example.net", "polyphony")
}

/// A vendor switch with AF11/AF21/AF31 on queues 1/2/3 of one 10G port.
pub fn vendor() -> VendorConfig {
    VendorConfig {
        name: "switch".into(),
        ssh: ssh(),
        ports: vec!["TenGigabitEthernet 1/48".into()],
        queues: vec![
            QueueMap {
                dscp: Dscp::AF11,
                queue: 1,
            },
            QueueMap {
                dscp: Dscp::AF21,
                queue: 2,
            },
            QueueMap {
                dscp: Dscp::AF31,
                queue: 3,
            },
        ],
        link_rate: BitsPerSec::from_gbps(10),
        object_prefix: "polyphony".into(),
        timeout_ms: 30_000,
    }
}
