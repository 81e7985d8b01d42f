//! Golden tests of the rendered configurations per dialect: the dry-run plan from one
//! configuration to another, and the one-time setup scripts. Regenerate after an intended
//! change with `UPDATE_GOLDEN=1 cargo test -p polyphony-actuator-switch-cli --test golden`
//! and review the diff.

mod common;

use common::vendor;
use polyphony_actuator::golden::{assert_golden, sample_change, NoCommands};
use polyphony_actuator_switch_cli::{switch_actuator_with, DellOs9, Sonic, SwitchConfig, VendorBackend};
use polyphony_spec::{Bytes, Dscp, Packets};
use std::path::Path;
use std::sync::Arc;

fn golden(name: &str, actual: &str) {
    assert_golden(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"),
        name,
        actual,
    );
}

fn plan_text(cfg: SwitchConfig) -> String {
    let a = switch_actuator_with(cfg, Arc::new(NoCommands)).expect("build");
    let (from, to) = sample_change();
    a.plan(&from, &to).expect("plan").to_string()
}

#[test]
fn dell_os9_plan_is_golden() {
    golden("dell-os9.plan.txt", &plan_text(SwitchConfig::DellOs9(vendor())));
}

#[test]
fn sonic_plan_is_golden() {
    golden("sonic.plan.txt", &plan_text(SwitchConfig::Sonic(vendor())));
}

#[test]
fn setup_scripts_are_golden() {
    let t: Arc<dyn polyphony_actuator::Transport> = Arc::new(polyphony_actuator::Local);
    let os9 = VendorBackend::new(vendor(), DellOs9, t.clone()).expect("os9");
    golden("dell-os9.setup.txt", &os9.setup_script());
    let mut v = vendor();
    v.ports = vec!["Ethernet0".into(), "Ethernet4".into()];
    let sonic = VendorBackend::new(v, Sonic, t).expect("sonic");
    golden("sonic.setup.txt", &sonic.setup_script());
}

#[test]
fn invalid_targets_name_class_and_knob_without_commands() {
    let a = switch_actuator_with(SwitchConfig::DellOs9(vendor()), Arc::new(NoCommands)).expect("build");
    let (from, mut to) = sample_change();
    to.classes[2].ecn_threshold = Bytes(64 * 1024 * 1024);
    let e = a.plan(&from, &to).expect_err("K above the buffer accepted");
    assert!(e.to_string().contains("class AF31 (DSCP 26).ecn_threshold"), "{e}");
    let mut to2 = from.clone();
    to2.classes.push(polyphony_spec::ClassConfig::new(
        Dscp::new(46).expect("EF"),
        0.1,
        Bytes(1000),
        Packets(10),
    ));
    for c in to2.classes.iter_mut().take(3) {
        c.weight = 0.3;
    }
    let e = a.plan(&from, &to2).expect_err("unmapped class accepted");
    assert!(
        e.to_string().contains("class EF (DSCP 46).weight") && e.to_string().contains("no egress queue"),
        "{e}"
    );
}
