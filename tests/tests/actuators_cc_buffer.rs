//! Root test of a class's congestion control and a class's buffer changed in one apply of the
//! tc+iproute composite (fixture `actuators_fixture`, prefix `ppac`): the iproute actuator
//! checks the senders' kernels (an algorithm missing from `tcp_available_congestion_control`
//! or `tcp_allowed_congestion_control` is refused, naming the sysctl); a failure injected
//! halfway through the apply (after the tc buffer change and the first sender's route) leaves
//! both as they were; the apply then gives AF21's new connections the other algorithm — as
//! `ss -ti` shows on live sockets, while AF11's new connections and the connections opened
//! before keep theirs (`congctl` on a route acts when a connection starts) — and AF31's bfifo
//! the new limit, read back from tc; a rollback undoes both.

mod actuators_fixture;

use actuators_fixture::conn::{default_and_other, new_connection_runs, open, receiver, runs};
use actuators_fixture::{composite_step_failure, initial_config, must, root_or_skip, Bed, Fault, FaultRunner};
use polyphony_actuator::{Actuator, Composite, Local, RollbackOutcome};
use polyphony_actuator_iproute::iproute_actuator_with;
use polyphony_actuator_tc::tc_actuator_with;
use polyphony_spec::{Bytes, CongestionControl, Dscp};
use std::sync::Arc;

/// The `limit` of the bfifo under class `dscp`'s HTB class, as `tc -j qdisc show` prints it.
fn bfifo_limit(bed: &Bed, dscp: Dscp) -> u64 {
    let out = must(&["tc", "-n", &bed.ns("sw"), "-j", "qdisc", "show", "dev", "rx"]);
    let qdiscs: serde_json::Value = serde_json::from_str(&out).expect("tc -j prints JSON");
    let parent = format!("1:{}", dscp.value());
    qdiscs
        .as_array()
        .expect("an array of qdiscs")
        .iter()
        .find(|q| q["kind"] == "bfifo" && q["parent"] == parent.as_str())
        .and_then(|q| q["options"]["limit"].as_u64())
        .unwrap_or_else(|| panic!("no bfifo under {parent}:\n{out}"))
}

#[test]
fn congestion_control_and_buffer_change_in_one_apply_and_roll_back_together() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppac", 2);
    let h0 = bed.ns("h0");
    let h1 = bed.ns("h1");
    let avail = must(&[
        "ip",
        "netns",
        "exec",
        &h0,
        "cat",
        "/proc/sys/net/ipv4/tcp_available_congestion_control",
    ]);
    let allowed = must(&[
        "ip",
        "netns",
        "exec",
        &h0,
        "cat",
        "/proc/sys/net/ipv4/tcp_allowed_congestion_control",
    ]);
    println!("available: {} · allowed: {}", avail.trim(), allowed.trim());

    // The kernel check: a name this kernel does not offer, and (where one exists) an offered
    // one it does not allow, are refused when the actuator is built, naming what is missing.
    let has = |list: &str, a: &str| list.split_whitespace().any(|x| x == a);
    let refused = |name: &str| {
        let mut cfg = bed.iproute_config();
        cfg.congestion_controls = vec![CongestionControl::new(name).expect("name")];
        iproute_actuator_with(cfg, Arc::new(Local), Arc::new(FaultRunner::recording()))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let absent = ["vegas", "htcp", "westwood", "illinois", "pp_none"]
        .into_iter()
        .find(|a| !has(&avail, a))
        .expect("one of these is not loaded");
    let e = refused(absent);
    println!("{e}");
    assert!(
        e.contains(absent) && e.contains("tcp_available_congestion_control") && e.contains(&h0),
        "{e}"
    );
    match avail.split_whitespace().find(|a| !has(&allowed, a)) {
        Some(disallowed) => {
            let e = refused(disallowed);
            println!("{e}");
            assert!(
                e.contains(disallowed) && e.contains("tcp_allowed_congestion_control"),
                "{e}"
            );
        }
        None => println!("every available algorithm is allowed: the not-allowed case is not exercised"),
    }

    let (default, other) = default_and_other(&bed);
    let Some(other) = other else {
        println!("skipped: no algorithm besides the default {default} is both available and allowed");
        return;
    };
    println!("senders' default {default}, AF21 gets {other}");
    // Two connections kept open across the applies, then four short ones.
    let server = receiver(&bed, 6);
    let old_af21 = open(&bed, Dscp::AF21);
    let old_af11 = open(&bed, Dscp::AF11);

    // One apply: tc first (AF31's buffer 100 kB → 60 kB), then iproute (AF21's algorithm on
    // both senders' routes); the second sender's route change is refused.
    let mut cfg = bed.iproute_config();
    cfg.congestion_controls = vec![CongestionControl::new(&other).expect("name")];
    let ip_runner = Arc::new(FaultRunner::new(
        move |c| c.argv.contains(&h1) && c.argv.iter().any(|a| a == "replace"),
        Fault::Refuse,
    ));
    let ip = iproute_actuator_with(cfg, Arc::new(Local), ip_runner.clone()).expect("iproute");
    let tc = tc_actuator_with(bed.tc_config(), Arc::new(Local), Arc::new(FaultRunner::recording())).expect("tc");
    let mut all = Composite::new(vec![Box::new(tc), Box::new(ip)]).expect("composite");
    let owns = all.owns();
    assert!(owns.buffer && owns.congestion_control);

    let initial = initial_config();
    let mut target = initial.clone();
    target.classes[1].congestion_control = Some(CongestionControl::new(&other).expect("name"));
    target.classes[2].buffer = Some(Bytes(60_000));
    let before = bed.snapshot();
    assert_eq!(bfifo_limit(&bed, Dscp::AF31), 100_000);

    let plan = all.plan_live(&target).expect("plan");
    println!("{plan}");
    let text = plan.to_string();
    assert!(
        text.contains(&format!("congctl {other}")) && text.contains("60000"),
        "{plan}"
    );
    let err = all
        .apply(&plan)
        .expect_err("the refused route change must fail the apply");
    println!("{err}");
    assert!(ip_runner.fired());
    let (f, others) = composite_step_failure(&err);
    assert_eq!((f.actuator.as_str(), f.index, f.total), ("iproute", 2, 2), "{err}");
    assert_eq!(f.rollback, RollbackOutcome::Complete { undone: 1 }, "{err}");
    assert!(
        matches!(others, RollbackOutcome::Complete { undone } if *undone >= 1),
        "{err}"
    );
    assert_eq!(bed.snapshot(), before, "a failed apply left something changed");
    assert_eq!(bfifo_limit(&bed, Dscp::AF31), 100_000);
    assert_eq!(new_connection_runs(&bed, Dscp::AF21), default);

    // The same plan without the fault (it fires once).
    all.apply(&plan).expect("apply");
    let back = all.read_back().expect("read back").overlay(&initial);
    assert_eq!(back.classes[1].congestion_control, target.classes[1].congestion_control);
    assert_eq!(back.classes[0].congestion_control, None);
    assert_eq!(back.classes[2].buffer, Some(Bytes(60_000)));
    assert_eq!(bfifo_limit(&bed, Dscp::AF31), 60_000);
    assert_eq!(bfifo_limit(&bed, Dscp::AF21), 100_000);
    assert_eq!(new_connection_runs(&bed, Dscp::AF21), other);
    assert_eq!(new_connection_runs(&bed, Dscp::AF11), default);
    assert_eq!(
        runs(&bed, &old_af21),
        default,
        "a connection keeps the algorithm it started with"
    );
    assert_eq!(runs(&bed, &old_af11), default);

    all.rollback().expect("rollback");
    assert_eq!(bed.snapshot(), before);
    assert_eq!(bfifo_limit(&bed, Dscp::AF31), 100_000);
    assert_eq!(new_connection_runs(&bed, Dscp::AF21), default);
    drop((old_af21, old_af11));
    server.join().expect("server thread");
}
