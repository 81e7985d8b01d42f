//! Root tests of the tc actuator on real namespaces, HTB classes and a real BPF map
//! (fixture `actuators_fixture`, prefixes `ppa1`–`ppa3`).

mod actuators_fixture;

use actuators_fixture::{initial_config, must, root_or_skip, same_config, target_config, Bed, Fault, FaultRunner};
use polyphony_actuator::{Actuator, ActuatorError, Local, RollbackOutcome};
use polyphony_actuator_tc::{tc_actuator_with, TcActuator};
use polyphony_spec::{Bytes, NetworkConfig, Packets};
use std::sync::Arc;

fn tc_on(bed: &Bed, runner: Arc<FaultRunner>) -> TcActuator {
    match tc_actuator_with(bed.tc_config(), Arc::new(Local), runner) {
        Ok(a) => a,
        Err(e) => panic!("building the tc actuator: {e}"),
    }
}

fn read_full(a: &dyn Actuator, base: &NetworkConfig) -> NetworkConfig {
    a.read_back().expect("read back").overlay(base)
}

#[test]
fn tc_round_trip_plan_apply_read_back_rollback() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppa1", 0);
    let runner = Arc::new(FaultRunner::recording());
    let mut tc = tc_on(&bed, runner.clone());

    // The capability probe: this kernel has no sch_red, so the thresholds go to the BPF map.
    let probe = tc.backend().red_probe().expect("auto mode runs the probe").clone();
    println!("red probe: {probe:?}; ecn via {}", tc.backend().ecn_mechanism());
    assert!(!probe.available, "this kernel lacks sch_red: {probe:?}");
    assert!(tc.backend().ecn_mechanism().starts_with("bpf_map"));

    let initial = initial_config();
    let before = bed.snapshot();
    same_config(&read_full(&tc, &initial), &initial).expect("fixture state reads back as the initial config");

    // Dry run: the plan shows the exact commands and touches nothing.
    let target = target_config();
    let plan = tc.plan_live(&target).expect("plan");
    println!("{plan}");
    assert_eq!(bed.snapshot(), before, "planning changed the system");
    // AF21 keeps weight 0.3 and quantum 2271, so its HTB class is not touched.
    assert_eq!(plan.len(), 8, "2 HTB classes + 3 leaves + 3 map entries");
    let cmds = plan.commands();
    assert!(
        cmds.contains(&"tc -n ppa1-sw class change dev rx parent 1:1 classid 1:10 htb rate 20000000bit ceil 100000000bit quantum 1514".to_string()),
        "{cmds:#?}"
    );
    assert!(
        cmds.contains(&"bpftool map update pinned /sys/fs/bpf/polyphony/ppa1/ecn_thresh_ns key 26 0 0 0 value 0 83 7 0 0 0 0 0 any".to_string()),
        "6000 B at 100 Mbit/s = 480000 ns: {cmds:#?}"
    );

    tc.apply(&plan).expect("apply");
    same_config(&read_full(&tc, &target), &target).expect("read back equals the target");
    assert!(
        tc.plan_live(&target).expect("plan").is_empty(),
        "target in force: nothing left to do"
    );
    let after_target = bed.snapshot();

    // Minimal diff: one knob changed → one operation.
    let mut t2 = target.clone();
    t2.classes[1].ecn_threshold = Bytes(12_345);
    let p2 = tc.plan(&target, &t2).expect("plan");
    assert_eq!(p2.len(), 1, "{p2}");
    assert!(p2.steps[0].item.contains("ecn_thresh_ns[18]"), "{p2}");
    tc.apply(&p2).expect("apply");
    same_config(&read_full(&tc, &t2), &t2).expect("read back equals t2");

    // Roll back: the previous configuration (target) is in force again, byte for byte.
    tc.rollback().expect("rollback");
    same_config(&read_full(&tc, &target), &target).expect("rolled back to target");
    assert_eq!(bed.snapshot(), after_target);
    assert!(matches!(tc.rollback(), Err(ActuatorError::NothingToRollBack { .. })));

    // And back to the initial configuration: the system is exactly as the fixture built it.
    let back = tc.plan_live(&initial).expect("plan");
    tc.apply(&back).expect("apply");
    assert_eq!(bed.snapshot(), before);
}

#[test]
fn tc_invalid_targets_are_rejected_before_any_command() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppa2", 0);
    let runner = Arc::new(FaultRunner::recording());
    let mut tc = tc_on(&bed, runner.clone());
    let before = bed.snapshot();
    let mut cases: Vec<(NetworkConfig, &str)> = Vec::new();
    let mut c = target_config();
    c.classes[0].weight = 0.9; // sum 1.7: off the simplex
    cases.push((c, "weights"));
    let mut c = target_config();
    c.classes[1].ecn_threshold = Bytes(0);
    cases.push((c, "class AF21 (DSCP 18).ecn_threshold"));
    let mut c = target_config();
    c.classes[2].init_cwnd = Packets(0);
    cases.push((c, "class AF31 (DSCP 26).init_cwnd"));
    let mut c = target_config();
    c.classes[2].buffer = Some(Bytes(1000)); // below one MTU: a tc limit
    cases.push((c, "class AF31 (DSCP 26).buffer"));
    let mut c = target_config();
    c.classes[0].weight = 0.001; // quantum ratio 499 > HTB's limit
    c.classes[1].weight = 0.499;
    cases.push((c, "class AF21 (DSCP 18).weight"));
    for (bad, field) in &cases {
        runner.clear();
        let e = tc.plan_live(bad).expect_err("invalid target accepted");
        println!("rejected: {e}");
        match &e {
            ActuatorError::Invalid { field: f, .. } => assert_eq!(f, field, "{e}"),
            other => panic!("expected Invalid naming {field}, got {other}"),
        }
        assert!(runner.commands().is_empty(), "commands ran: {:?}", runner.commands());
        let e2 = tc
            .plan(&initial_config(), bad)
            .expect_err("invalid target accepted by plan");
        assert!(matches!(e2, ActuatorError::Invalid { .. }));
    }
    assert!(runner.commands().is_empty());
    assert_eq!(bed.snapshot(), before, "the system changed");
    // A plan computed from a wrong idea of the current state is refused before any change.
    let mut believed = initial_config();
    believed.classes[0].ecn_threshold = Bytes(99_000);
    let stale = tc.plan(&believed, &target_config()).expect("plan");
    match tc.apply(&stale) {
        Err(ActuatorError::Stale { item, .. }) => assert!(item.contains("ecn_thresh_ns[10]"), "{item}"),
        other => panic!("expected a stale-plan refusal, got {other:?}"),
    }
    assert_eq!(bed.snapshot(), before, "a stale plan changed the system");
    // The actuator still works afterwards.
    let plan = tc.plan_live(&target_config()).expect("plan");
    tc.apply(&plan).expect("apply");
}

#[test]
fn tc_failure_halfway_rolls_back_and_names_the_operation() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppa3", 0);
    let sw = bed.ns("sw");
    // Right before the actuator changes class 1:26, someone deletes that class (its filter first):
    // the real `tc class change` then fails in the kernel. Operation 1 (class 1:10) has been
    // applied by then and must be undone; operations 3–8 (leaves, map entries) must not run.
    let sabotage = vec![
        vec![
            "tc", "-n", &sw, "filter", "del", "dev", "rx", "parent", "1:", "prio", "1",
        ],
        vec!["tc", "-n", &sw, "class", "del", "dev", "rx", "classid", "1:26"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect();
    let runner = Arc::new(FaultRunner::new(
        |c| c.argv.iter().any(|a| a == "1:26") && c.argv.iter().any(|a| a == "change"),
        Fault::SabotageFirst(sabotage),
    ));
    let mut tc = tc_on(&bed, runner.clone());
    let initial = initial_config();
    let plan = tc.plan_live(&target_config()).expect("plan");
    let map_before = must(&["bpftool", "-j", "map", "dump", "pinned", &bed.pin()]);
    let qdisc_before = must(&["tc", "-n", &sw, "-j", "qdisc", "show", "dev", "rx", "parent", "1:10"]);
    let err = tc.apply(&plan).expect_err("the sabotaged operation must fail");
    println!("{err}");
    assert!(runner.fired());
    let ActuatorError::Failed(f) = &err else {
        panic!("expected a step failure, got {err}");
    };
    assert_eq!(f.index, 2, "{err}");
    assert_eq!(f.total, 8);
    assert!(f.item.contains("htb class 1:26"), "{err}");
    assert!(f.error.to_string().contains("No such file or directory"), "{err}");
    assert_eq!(f.rollback, RollbackOutcome::Complete { undone: 1 }, "{err}");
    assert!(
        !runner
            .commands()
            .iter()
            .any(|c| c.contains("bpftool map update") || c.contains("bfifo")),
        "operations after the failed one ran: {:#?}",
        runner.commands()
    );
    // Previous configuration in force for what still exists; nothing after the failure ran.
    let now = tc.read_back().expect("read back");
    for d in [initial.classes[0].dscp, initial.classes[1].dscp] {
        let got = now.class(d).expect("class present");
        let want = initial.class(d).expect("class in initial");
        assert!((got.weight.expect("weight") - want.weight).abs() < 1e-5, "{got:?}");
        assert_eq!(got.ecn_threshold, Some(want.ecn_threshold));
        assert_eq!(got.buffer, want.buffer);
    }
    assert_eq!(
        must(&["bpftool", "-j", "map", "dump", "pinned", &bed.pin()]),
        map_before
    );
    assert_eq!(
        must(&["tc", "-n", &sw, "-j", "qdisc", "show", "dev", "rx", "parent", "1:10"]),
        qdisc_before
    );
    // A later plan from the live state refuses the missing class instead of half-applying.
    let e = tc.plan_live(&target_config()).expect_err("class 1:26 is gone");
    assert!(e.to_string().contains("1:26"), "{e}");
}
