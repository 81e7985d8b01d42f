//! Helpers shared by the switch-cli integration tests.
#![allow(dead_code)]

use polyphony_actuator::SshConfig;
use polyphony_actuator_switch_cli::{QueueMap, VendorConfig};
use polyphony_spec::{BitsPerSec, Dscp};

/// An SSH target with fixed paths (rendered into the golden files).
pub fn ssh() -> SshConfig {
    SshConfig {
        host: "s4048.example.net".into(),
        user: "polyphony".into(),
        port: 22,
        identity: "/etc/polyphony/switch_ed25519".into(),
        known_hosts: "/etc/polyphony/known_hosts".into(),
        connect_timeout_secs: 5,
        client_namespace: None,
        ssh: "ssh".into(),
    }
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
