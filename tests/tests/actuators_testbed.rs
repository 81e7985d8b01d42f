//! The actuators on the real namespace testbed (`crates/testbed`, prefix `ppa8`): they read
//! exactly the configuration the testbed applied (the contract of `docs/testbed.md` holds on
//! both sides), then apply, read back and roll back a new one.

use polyphony_actuator::{Actuator, Composite};
use polyphony_actuator_iproute::{iproute_actuator, IprouteConfig, SenderRoute};
use polyphony_actuator_tc::{tc_actuator, EcnMode, TcConfig};
use polyphony_e2e::is_root;
use polyphony_spec::{Bytes, NetworkConfig, Packets, Scenario};

const PREFIX: &str = "ppa8";

/// Tears the instance down when dropped, also when an assertion fails.
struct Down;
impl Drop for Down {
    fn drop(&mut self) {
        if let Err(e) = testbed::down(PREFIX) {
            eprintln!("teardown of {PREFIX} failed: {e}");
        }
    }
}

fn close(got: &NetworkConfig, want: &NetworkConfig) -> bool {
    got.classes.iter().zip(&want.classes).all(|(g, w)| {
        (g.weight - w.weight).abs() < 1e-5 && g.ecn_threshold == w.ecn_threshold && g.init_cwnd == w.init_cwnd
    })
}

#[test]
fn actuators_drive_the_real_testbed() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let path = format!(
        "{}/../configs/scenarios/reference-medium.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let sc = Scenario::from_toml(&std::fs::read_to_string(&path).expect("scenario"), &path).expect("scenario");
    let _down = Down;
    let mut opts = testbed::TestbedOptions::new(PREFIX);
    opts.measure_rtt = false;
    let tb = testbed::up(&sc, &opts).expect("testbed up");
    let applied = tb.state.config.clone();

    let mut tcc = TcConfig::new(Some(tb.names.switch()), "rx", tb.state.rate);
    tcc.ecn = EcnMode::Auto;
    tcc.ecn_map_pin = Some(tb.names.thresh_map().into());
    tcc.manage_buffers = false;
    let ipc = IprouteConfig::new(
        "198.18.100.0/24",
        (0..tb.state.senders)
            .map(|i| SenderRoute {
                namespace: Some(tb.names.sender(i)),
                gateway: Some(format!("198.18.{}.1", i + 1)),
                device: "eth0".into(),
            })
            .collect(),
    );
    let mut all = Composite::new(vec![
        Box::new(tc_actuator(tcc).expect("tc")),
        Box::new(iproute_actuator(ipc).expect("iproute")),
    ])
    .expect("composite");

    let live = all.read_back().expect("read back").overlay(&applied);
    assert!(
        close(&live, &applied),
        "read back {live:?}\nthe testbed applied {applied:?}"
    );
    let noop = all.plan_live(&applied).expect("plan");
    println!("plan for the configuration already in force:\n{noop}");
    assert!(
        noop.is_empty(),
        "the actuators disagree with the testbed's rendering:\n{noop}"
    );

    let mut target = applied.clone();
    let n = target.classes.len() as f64;
    for (i, c) in target.classes.iter_mut().enumerate() {
        c.weight = (i as f64 + 1.0) / (n * (n + 1.0) / 2.0);
        c.ecn_threshold = Bytes(15_000 * (i as u64 + 1));
        c.init_cwnd = Packets(4 << i);
    }
    let plan = all.plan_live(&target).expect("plan");
    println!("{plan}");
    all.apply(&plan).expect("apply");
    let got = all.read_back().expect("read back").overlay(&applied);
    assert!(close(&got, &target), "read back {got:?}\nwanted {target:?}");
    all.rollback().expect("rollback");
    assert!(
        all.plan_live(&applied).expect("plan").is_empty(),
        "rollback left a difference"
    );
}
