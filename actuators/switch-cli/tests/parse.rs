//! Read-back parsers of the vendor dialects, on sample outputs in the format each switch prints
//! (`tests/golden/*.show.*`; written for these tests after the vendors' documented formats, not
//! captured from hardware).

mod common;

use polyphony_actuator::NativeState;
use polyphony_actuator_switch_cli::{DellOs9, Dialect, QueueItem, QueueValue, Sonic, VendorConfig};
use polyphony_spec::{Bytes, Dscp};

fn cfg() -> VendorConfig {
    let mut v = common::vendor();
    v.queues.truncate(2);
    v
}

/// The value of `item` in a parsed state (`None`: absent).
fn value(s: &NativeState<QueueItem, QueueValue>, item: QueueItem) -> Option<QueueValue> {
    s.get(&item).cloned().flatten()
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
    let (q1, q2) = ((1, Dscp::AF11), (2, Dscp::AF21));
    let weight = |(queue, dscp): (u8, Dscp)| value(&s, QueueItem::Weight { queue, dscp });
    let ecn = |(queue, dscp): (u8, Dscp)| value(&s, QueueItem::Ecn { queue, dscp });
    assert_eq!(weight(q1), Some(QueueValue::Percent(20)));
    assert_eq!(weight(q2), Some(QueueValue::Percent(80)));
    assert_eq!(
        ecn(q1),
        Some(QueueValue::Thresholds {
            min: Bytes(20 * 1024),
            max: Bytes(21 * 1024)
        })
    );
    // Queue 2's profile exists but is not attached with `wred ecn`: not in force.
    assert_eq!(ecn(q2), None, "{s:?}");
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
        value(
            &s,
            QueueItem::Weight {
                queue: 2,
                dscp: Dscp::AF21
            }
        ),
        Some(QueueValue::Percent(67))
    );
    assert_eq!(
        value(
            &s,
            QueueItem::Ecn {
                queue: 1,
                dscp: Dscp::AF11
            }
        ),
        Some(QueueValue::Thresholds {
            min: Bytes(20_000),
            max: Bytes(20_001)
        })
    );
    assert!(Sonic.parse(&cfg(), &["{not json".into(), String::new()]).is_err());
}
