//! Golden test of the tc actuator driving a remote Linux switch over SSH: the dry-run plan from
//! one configuration to another, every command wrapped in the SSH client's invocation.
//! Regenerate after an intended change with
//! `UPDATE_GOLDEN=1 cargo test -p polyphony-actuator-tc --test golden` and review the diff.

use polyphony_actuator::golden::{assert_golden, sample_change, sample_ssh, NoCommands};
use polyphony_actuator::Actuator;
use polyphony_actuator_tc::{tc_over_ssh_with, EcnMode, TcConfig, TcOverSsh};
use polyphony_spec::BitsPerSec;
use std::path::Path;
use std::sync::Arc;

#[test]
fn linux_switch_over_ssh_plan_is_golden() {
    let mut tc = TcConfig::new(None, "rx", BitsPerSec::from_mbps(100));
    tc.ecn = EcnMode::BpfMap;
    tc.ecn_map_pin = Some("/sys/fs/bpf/polyphony/pp/ecn_thresh_ns".into());
    let ssh = sample_ssh("198.18.100.1", "root");
    let a = tc_over_ssh_with(TcOverSsh { ssh, tc }, Arc::new(NoCommands)).expect("build");
    assert_eq!(a.name(), "switch", "a remote tree is named after the switch");
    let (from, to) = sample_change();
    let plan = a.plan(&from, &to).expect("plan").to_string();
    assert_golden(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"),
        "linux-tc-over-ssh.plan.txt",
        &plan,
    );
}

#[test]
fn the_ssh_table_parses_and_an_unknown_key_is_refused() {
    let ok: TcOverSsh = toml::from_str(
        r#"ssh = { host = "198.18.100.1", identity = "/k", known_hosts = "/h" }
tc = { device = "rx", link_rate = 100000000, ecn_map_pin = "/sys/fs/bpf/polyphony/pp/ecn_thresh_ns" }"#,
    )
    .expect("valid");
    assert_eq!(ok.ssh.host, "198.18.100.1");
    let e = toml::from_str::<TcOverSsh>(
        r#"ssh = { host = "h", identity = "/k", known_hosts = "/h" }
tc = { device = "rx", link_rate = 100000000 }
dialekt = "linux-tc""#,
    )
    .expect_err("unknown key");
    assert!(e.to_string().contains("dialekt"), "{e}");
}
