//! Root test of per-class congestion control through the iproute actuator (fixture
//! `actuators_fixture`, prefix `ppa9`): after an apply that gives AF21 an algorithm other than
//! the senders' default (one the kernel offers and allows), a new AF21 connection runs it
//! while a new AF11 connection keeps the default, as `ss -ti` shows on the live sockets; a failure injected halfway through the next apply leaves every
//! route as it was, and a rollback returns AF21's new connections to the default.

mod actuators_fixture;

use actuators_fixture::conn::{default_and_other, new_connection_runs, receiver};
use actuators_fixture::{initial_config, root_or_skip, Bed, Fault, FaultRunner};
use polyphony_actuator::{Actuator, Local};
use polyphony_actuator_iproute::iproute_actuator_with;
use polyphony_spec::{CongestionControl, Dscp};
use std::sync::Arc;

#[test]
fn per_class_congestion_control_reaches_new_connections_of_that_class_only_and_rolls_back() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppa9", 2);
    let h0 = bed.ns("h0");
    let (default, other) = default_and_other(&bed);
    let Some(other) = other else {
        println!("skipped: no algorithm besides the default {default} is both available and allowed");
        return;
    };
    let other = other.as_str();
    println!("senders' default {default}, AF21 gets {other}");
    // The receiver accepts the test's four connections.
    let server = receiver(&bed, 4);

    let mut cfg = bed.iproute_config();
    cfg.congestion_controls = vec![CongestionControl::new(other).expect("name")];
    // Halfway through the first apply (after both senders' AF21 routes), the first sender's
    // AF31 route change is refused; every other command runs for real.
    let runner = Arc::new(FaultRunner::new(
        move |c| c.argv.contains(&h0) && c.argv.iter().any(|a| a == "126"),
        Fault::Refuse,
    ));
    let mut ip = iproute_actuator_with(cfg, Arc::new(Local), runner.clone()).expect("iproute");
    assert!(ip.owns().congestion_control);
    let initial = initial_config();
    let mut target = initial.clone();
    target.classes[1].congestion_control = Some(CongestionControl::new(other).expect("name"));
    target.classes[2].init_cwnd = polyphony_spec::Packets(20);
    let before = bed.snapshot();

    let plan = ip.plan_live(&target).expect("plan");
    println!("{plan}");
    assert!(plan.to_string().contains(&format!("congctl {other}")), "{plan}");
    let err = ip
        .apply(&plan)
        .expect_err("the refused route change must fail the apply");
    println!("{err}");
    assert!(runner.fired());
    assert_eq!(bed.snapshot(), before, "a failed apply left routes changed");
    assert_eq!(new_connection_runs(&bed, Dscp::AF21), default);

    ip.apply(&plan).expect("apply");
    let back = ip.read_back().expect("read back").overlay(&initial);
    assert_eq!(back.classes[1].congestion_control, target.classes[1].congestion_control);
    assert_eq!(back.classes[0].congestion_control, None);
    assert_eq!(new_connection_runs(&bed, Dscp::AF21), other);
    assert_eq!(new_connection_runs(&bed, Dscp::AF11), default);

    ip.rollback().expect("rollback");
    assert_eq!(bed.snapshot(), before);
    assert_eq!(new_connection_runs(&bed, Dscp::AF21), default);
    server.join().expect("server thread");
}
