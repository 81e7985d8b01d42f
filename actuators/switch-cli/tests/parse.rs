//! Read-back parsers of the vendor dialects, on sample outputs in the format each switch prints
//! (`tests/golden/*.show.*`; written for these tests after the vendors' documented formats, not
//! captured from hardware).

use polyphony_actuator::SshConfig;
use polyphony_actuator_switch_cli::{DellOs9, Dialect, QueueItem, QueueMap, QueueValue, Sonic, VendorConfig};
use polyphony_spec::{BitsPerSec, Bytes, Dscp};

fn cfg() -> VendorConfig {
    VendorConfig {
        name: "switch".into(),
        ssh: SshConfig {
            host: "sw".into(),
            user: "u".into(),
            port: 22,
            identity: "/k".into(),
            known_hosts: "/h".into(),
            connect_timeout_secs: 5,
            client_namespace: None,
            ssh: "ssh".into(),
        },
        ports: vec![],
        queues: vec![
            QueueMap {
                dscp: Dscp::AF11,
                queue: 1,
            },
            QueueMap {
                dscp: Dscp::AF21,
                queue: 2,
            },
        ],
        link_rate: BitsPerSec::from_gbps(10),
        object_prefix: "polyphony".into(),
        timeout_ms: 1000,
    }
}

fn sample(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn os9_running_config_reads_back_weights_and_attached_profiles_only() {
    let s = DellOs9
        .parse(&cfg(), &[sample("dell-os9.show.running-config.txt")])
        .expect("parse");
    let w1 = s
        .get(&QueueItem::Weight {
            queue: 1,
            dscp: Dscp::AF11,
        })
        .cloned()
        .flatten();
    assert_eq!(w1, Some(QueueValue::Percent(20)));
    let k1 = s
        .get(&QueueItem::Ecn {
            queue: 1,
            dscp: Dscp::AF11,
        })
        .cloned()
        .flatten();
    assert_eq!(
        k1,
        Some(QueueValue::Thresholds {
            min: Bytes(20 * 1024),
            max: Bytes(21 * 1024)
        })
    );
    // Queue 2's profile exists but is not attached with `wred ecn`: not in force.
    assert!(
        !s.contains_key(&QueueItem::Ecn {
            queue: 2,
            dscp: Dscp::AF21
        }),
        "{s:?}"
    );
    assert_eq!(
        s.get(&QueueItem::Weight {
            queue: 2,
            dscp: Dscp::AF21
        })
        .cloned()
        .flatten(),
        Some(QueueValue::Percent(80))
    );
}

#[test]
fn sonic_cfggen_json_reads_back() {
    let s = Sonic
        .parse(
            &cfg(),
            &[
                sample("sonic.show.scheduler.json"),
                sample("sonic.show.wred_profile.json"),
            ],
        )
        .expect("parse");
    assert_eq!(
        s.get(&QueueItem::Weight {
            queue: 2,
            dscp: Dscp::AF21
        })
        .cloned()
        .flatten(),
        Some(QueueValue::Percent(67))
    );
    assert_eq!(
        s.get(&QueueItem::Ecn {
            queue: 1,
            dscp: Dscp::AF11
        })
        .cloned()
        .flatten(),
        Some(QueueValue::Thresholds {
            min: Bytes(20_000),
            max: Bytes(20_001)
        })
    );
    assert!(Sonic.parse(&cfg(), &["{not json".into(), String::new()]).is_err());
}
