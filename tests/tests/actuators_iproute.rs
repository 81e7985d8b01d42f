//! Root tests of the iproute actuator on real sender namespaces with fwmark rules and per-class
//! tables (fixture `actuators_fixture`, prefix `ppa4`).

mod actuators_fixture;

use actuators_fixture::{initial_config, must, root_or_skip, target_config, Bed, FaultRunner};
use polyphony_actuator::{Actuator, ActuatorError, Local};
use polyphony_actuator_iproute::iproute_actuator_with;
use polyphony_spec::Packets;
use std::sync::Arc;

#[test]
fn iproute_round_trip_and_invalid_windows() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppa4", 3);
    let runner = Arc::new(FaultRunner::recording());
    let mut ip = iproute_actuator_with(bed.iproute_config(), Arc::new(Local), runner.clone())
        .expect("build the iproute actuator");
    let initial = initial_config();
    let target = target_config();
    let before = bed.snapshot();
    let rb = ip.read_back().expect("read back");
    for c in &initial.classes {
        assert_eq!(rb.class(c.dscp).and_then(|p| p.init_cwnd), Some(c.init_cwnd));
    }

    // Invalid windows: rejected before any command, system untouched.
    let mut bad = target.clone();
    bad.classes[0].init_cwnd = Packets(0);
    runner.clear();
    let e = ip.plan_live(&bad).expect_err("initcwnd 0 accepted");
    assert!(e.to_string().contains("class AF11 (DSCP 10).init_cwnd"), "{e}");
    let mut bad = target.clone();
    bad.classes[2].init_cwnd = Packets(100_000);
    let e = ip.plan_live(&bad).expect_err("initcwnd above the limit accepted");
    assert!(
        matches!(&e, ActuatorError::Invalid { field, .. } if field == "class AF31 (DSCP 26).init_cwnd"),
        "{e}"
    );
    assert!(runner.commands().is_empty(), "{:?}", runner.commands());
    assert_eq!(bed.snapshot(), before);

    // Plan: one route per (sender, class), with the exact command.
    let plan = ip.plan_live(&target).expect("plan");
    println!("{plan}");
    assert_eq!(plan.len(), 9);
    assert!(plan.commands().contains(
        &"ip -n ppa4-h1 route replace 198.18.100.0/24 via 198.18.2.1 dev eth0 table 118 initcwnd 16".to_string()
    ));
    assert_eq!(bed.snapshot(), before, "planning changed the system");
    ip.apply(&plan).expect("apply");
    let rb = ip.read_back().expect("read back");
    for c in &target.classes {
        assert_eq!(rb.class(c.dscp).and_then(|p| p.init_cwnd), Some(c.init_cwnd), "{rb:?}");
    }
    // Independently of the actuator: the kernel's route in h2's table 126 carries initcwnd 32.
    let route = must(&["ip", "-n", "ppa4-h2", "route", "show", "table", "126"]);
    assert!(route.contains("initcwnd 32"), "{route}");
    assert!(ip.plan_live(&target).expect("plan").is_empty());

    ip.rollback().expect("rollback");
    assert_eq!(bed.snapshot(), before, "rollback did not restore the routes");
}
