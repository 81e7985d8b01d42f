//! Root test of a composite of the tc and iproute actuators: a failure in the second actuator
//! rolls back the first (fixture `actuators_fixture`, prefix `ppa5`).

mod actuators_fixture;

use actuators_fixture::{
    composite_step_failure, initial_config, root_or_skip, same_config, target_config, Bed, Fault, FaultRunner,
};
use polyphony_actuator::{Actuator, Composite, Local, RollbackOutcome};
use polyphony_actuator_iproute::iproute_actuator_with;
use polyphony_actuator_tc::tc_actuator_with;
use std::sync::Arc;

#[test]
fn composite_failure_in_iproute_rolls_back_tc_too() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppa5", 2);
    let tc_runner = Arc::new(FaultRunner::recording());
    // The second route change (sender h1, table 110) is refused by the runner; every other
    // command runs for real.
    let ip_runner = Arc::new(FaultRunner::new(
        |c| c.argv.iter().any(|a| a == "ppa5-h1") && c.argv.iter().any(|a| a == "replace"),
        Fault::Refuse,
    ));
    let tc = tc_actuator_with(bed.tc_config(), Arc::new(Local), tc_runner.clone()).expect("tc");
    let ip = iproute_actuator_with(bed.iproute_config(), Arc::new(Local), ip_runner.clone()).expect("iproute");
    let mut all = Composite::new(vec![Box::new(tc), Box::new(ip)]).expect("composite");
    assert_eq!(all.name(), "tc+iproute");
    let owns = all.owns();
    assert!(owns.weight && owns.ecn_threshold && owns.init_cwnd && owns.buffer);

    let initial = initial_config();
    let target = target_config();
    let before = bed.snapshot();
    let base = all.read_back().expect("read back").overlay(&initial);
    same_config(&base, &initial).expect("initial state");

    let plan = all.plan_live(&target).expect("plan");
    println!("{plan}");
    assert_eq!(plan.len(), 8 + 6);
    let err = all
        .apply(&plan)
        .expect_err("the refused operation must fail the whole apply");
    println!("{err}");
    assert!(ip_runner.fired());
    let (f, others) = composite_step_failure(&err);
    assert_eq!(f.actuator, "iproute");
    assert_eq!((f.index, f.total), (2, 6), "{err}");
    assert!(f.item.contains("ppa5-h1 table 110"), "{err}");
    assert!(f.error.to_string().contains("injected"), "{err}");
    assert_eq!(f.rollback, RollbackOutcome::Complete { undone: 1 });
    assert_eq!(*others, RollbackOutcome::Complete { undone: 8 }, "{err}");
    // Nothing half-applied: every object is exactly as before.
    assert_eq!(bed.snapshot(), before);

    // Without the fault (it fires once), the same plan applies, reads back, and rolls back.
    all.apply(&plan).expect("apply");
    let got = all.read_back().expect("read back").overlay(&initial);
    same_config(&got, &target).expect("read back equals target");
    all.rollback().expect("rollback");
    assert_eq!(bed.snapshot(), before);
}
