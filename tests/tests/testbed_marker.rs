//! The sojourn-time ECN marker marks under load and not when idle: the stamp taken at the
//! switch's egress before HTB survives the veth into the receiver, the judge there measures
//! the time spent queued and sets CE only above the class's threshold.

mod testbed_common;
use testbed_common::*;

use polyphony_spec::{Dscp, Nanos, Workload};
use testbed::marker::MarkerStats;

fn af11(tb: &testbed::Testbed) -> MarkerStats {
    testbed::marker::stats(&tb.names)
        .expect("bpftool map dump")
        .into_iter()
        .find(|m| m.dscp == Dscp::AF11.value())
        .unwrap_or_default()
}

#[test]
fn marks_under_load_and_not_when_idle() {
    if !can_run() {
        return;
    }
    let _s = serial();
    let sc = scenario("reference-medium");
    let _g = Guard("ppt2".into());
    let tb = testbed::up(&sc, &testbed::TestbedOptions::new("ppt2")).expect("up");
    let thresholds = testbed::marker::thresholds(&tb.names).expect("thresholds");
    assert!(
        thresholds.contains(&(10, 2_400_000)),
        "K = 30 kB at 100 Mbit/s is 2.4 ms: {thresholds:?}"
    );

    // Idle: small flows far apart never queue.
    let idle: Vec<_> = (0..60)
        .map(|i| flow(i, (i % 3) as u32, Dscp::AF11, 3_000, i as f64 * 0.02))
        .collect();
    let before = af11(&tb);
    run(&tb, &Workload::new(idle, Nanos(0)).expect("workload"), 1.5);
    let after = af11(&tb);
    assert!(after.packets > before.packets + 100, "{before:?} → {after:?}");
    // Idle packets never queue behind each other, so a mark here can only come from the host
    // delaying a dequeue by more than the 2.4 ms threshold (a CPU stall of this shared 2-vCPU VM:
    // CI at 0d6182b saw 3 such marks in one run). Allow at most 3 % of the idle packets; the
    // loaded phase below marks 40–65 %.
    let idle_marked = after.marked - before.marked;
    let idle_packets = after.packets - before.packets;
    assert!(
        idle_marked * 100 <= idle_packets * 3,
        "marked {idle_marked} of {idle_packets} packets on an idle network (more than 3 %)"
    );
    assert_eq!(after.unstamped, 0, "stamps lost on the way: {after:?}");

    // Loaded: three long flows of one class fill its queue.
    let load: Vec<_> = (0..3)
        .map(|i| flow(i, i as u32, Dscp::AF11, 400_000_000, 0.0))
        .collect();
    let mut p = plan(&tb, 3.0);
    p.drain = Nanos::from_secs_f64(0.5);
    emu::run(
        &p,
        &Workload::new(load, Nanos(0)).expect("workload"),
        Nanos::from_secs_f64(3.0),
        &Default::default(),
    )
    .expect("emu");
    let loaded = af11(&tb);
    let (pk, mk) = (loaded.packets - after.packets, loaded.marked - after.marked);
    let avg = (loaded.sojourn_sum_ns - after.sojourn_sum_ns) as f64 / pk.max(1) as f64;
    println!(
        "loaded: {pk} packets, {mk} marked, mean sojourn {avg:.0} ns, max {} ns",
        loaded.sojourn_max_ns
    );
    assert!(mk > 0, "no CE mark under load: {loaded:?}");
    // DCTCP reacts to the marks: the queue stays well below the 41 ms the 512 kB buffer allows
    // (measured: 11–13 ms mean with three flows at a 2.4 ms threshold on this shared machine;
    // without a reaction the bfifo stays full).
    assert!(
        avg < 20_000_000.0,
        "mean sojourn {avg} ns: DCTCP did not react to the marks"
    );
}
