//! `pktsim` against facts that need no simulator to know: a lone flow's FCT, weighted sharing,
//! work conservation, DCTCP's standing queue, loss recovery, and packet conservation in every run.

use polyphony_model::pktsim::PktRun;
use polyphony_model::{Marking, ModelInput, PktSim, PktSimOptions, Topology, HEADER_BYTES, MSS};
use polyphony_spec::{BitsPerSec, Bytes, ClassConfig, Dscp, Flow, Nanos, NetworkConfig, Packets, Workload};
use std::sync::Arc;

mod common;
use common::flow;

const RATE: u64 = 100_000_000;
const DELAY: u64 = 2_500;

fn topo() -> Arc<Topology> {
    Arc::new(Topology::dumbbell(3, BitsPerSec(RATE), Nanos(DELAY)).unwrap())
}

fn cfg(classes: &[(Dscp, f64)], k: u64, iw: u32) -> NetworkConfig {
    NetworkConfig {
        classes: classes
            .iter()
            .map(|&(dscp, weight)| ClassConfig::new(dscp, weight, Bytes(k), Packets(iw)))
            .collect(),
        port_buffer: None,
    }
}

fn run(flows: Vec<Flow>, classes: Vec<Dscp>, c: &NetworkConfig, opts: PktSimOptions) -> PktRun {
    let w = Workload::new(flows, Nanos(0)).unwrap();
    let mut input = ModelInput::new(Arc::new(w), topo(), classes);
    input.keep_flows = true;
    let r = PktSim::new(opts).run(&input, c).unwrap();
    assert!(r.conservation.holds(), "packet conservation: {:?}", r.conservation);
    assert_eq!(r.conservation.in_flight, 0, "the run drained: {:?}", r.conservation);
    assert_eq!(r.output.stats.unfinished, 0);
    r
}

fn ser(bytes: u64) -> u64 {
    (bytes * 8_000_000_000).div_ceil(RATE)
}

/// Handshake (one base RTT) + every data segment serialised back to back + the first segment's
/// store-and-forward at the sender's NIC (the switch runs one packet behind it) + two
/// propagation delays + the 67-byte app ack's return.
fn lone_flow_expected(size: u64) -> u64 {
    let n = size.div_ceil(MSS);
    let last = size - (n - 1) * MSS + HEADER_BYTES;
    let all: u64 = (0..n)
        .map(|i| if i + 1 == n { ser(last) } else { ser(MSS + HEADER_BYTES) })
        .sum();
    let base_rtt = 4 * (DELAY + ser(HEADER_BYTES));
    let first = if n == 1 { last } else { MSS + HEADER_BYTES };
    base_rtt + all + ser(first) + 2 * DELAY + 2 * (ser(HEADER_BYTES + 1) + DELAY)
}

#[test]
fn lone_flow_fct_is_handshake_plus_transmission_plus_propagation() {
    for size in [100u64, 1448, 20_000, 1_000_000, 5_000_000] {
        let c = cfg(&[(Dscp::AF11, 1.0)], 30_000, 10);
        let r = run(
            vec![flow(0, 0, Dscp::AF11, size, 1000)],
            vec![Dscp::AF11],
            &c,
            PktSimOptions::default(),
        );
        let o = r.output.flows.as_ref().unwrap()[0];
        let expect = lone_flow_expected(size) as f64;
        let err = (o.fct.0 as f64 - expect).abs() / expect;
        assert!(
            err < 0.01,
            "size {size}: fct {} vs expected {expect} ({:.3} %)",
            o.fct,
            err * 100.0
        );
        if size >= 1_000_000 {
            // Large flows: the ideal FCT itself (which leaves out one packet's store-and-forward).
            let e = (o.fct.0 as f64 - o.ideal.0 as f64).abs() / o.ideal.0 as f64;
            assert!(
                e < 0.01,
                "size {size}: fct {} vs ideal {} ({:.3} %)",
                o.fct,
                o.ideal,
                e * 100.0
            );
        }
    }
}

fn two_class_shares(w: (f64, f64), third_idle: bool) -> (f64, f64, f64) {
    let mut classes = vec![(Dscp::AF11, w.0), (Dscp::AF21, w.1)];
    if third_idle {
        classes.push((Dscp::AF31, 1.0 - w.0 - w.1));
    }
    let c = cfg(&classes, 30_000, 10);
    let opts = PktSimOptions {
        stats_window: (Nanos(100 * Nanos::MILLI.0), Nanos(1000 * Nanos::MILLI.0)),
        ..PktSimOptions::default()
    };
    let flows = vec![
        flow(0, 0, Dscp::AF11, 20_000_000, 0),
        flow(1, 1, Dscp::AF21, 20_000_000, 0),
    ];
    let r = run(flows, classes.iter().map(|c| c.0).collect(), &c, opts);
    let port = r.ports.iter().find(|p| p.link == 7).unwrap();
    let total: u64 = port.tx_bytes.iter().sum();
    let cap = RATE as f64 / 8.0 * 0.9;
    (
        port.tx_bytes[0] as f64 / total as f64,
        port.tx_bytes[1] as f64 / total as f64,
        total as f64 / cap,
    )
}

#[test]
fn weights_three_to_one_share_75_25() {
    let (a, b, util) = two_class_shares((0.75, 0.25), false);
    assert!(
        (a - 0.75).abs() <= 0.02 && (b - 0.25).abs() <= 0.02,
        "shares {a:.4} / {b:.4}"
    );
    assert!(util > 0.98, "utilisation {util}");
}

#[test]
fn idle_class_share_is_taken_by_the_others() {
    let (a, b, util) = two_class_shares((1.0 / 3.0, 1.0 / 3.0), true);
    assert!(
        (a - 0.5).abs() <= 0.02 && (b - 0.5).abs() <= 0.02,
        "shares {a:.4} / {b:.4}"
    );
    assert!(util > 0.98, "the idle third is used: utilisation {util}");
}

fn standing_queue(k: u64, marking: Marking) -> (f64, u64) {
    let c = cfg(&[(Dscp::AF11, 1.0)], k, 10);
    let opts = PktSimOptions {
        marking,
        stats_window: (Nanos(200 * Nanos::MILLI.0), Nanos(1500 * Nanos::MILLI.0)),
        ..PktSimOptions::default()
    };
    let flows = vec![
        flow(0, 0, Dscp::AF11, 15_000_000, 0),
        flow(1, 1, Dscp::AF11, 15_000_000, 0),
    ];
    let r = run(flows, vec![Dscp::AF11], &c, opts);
    let port = r.ports.iter().find(|p| p.link == 7).unwrap();
    (port.avg_queue[0], port.marks)
}

#[test]
fn dctcp_holds_the_standing_queue_near_k() {
    for k in [30_000u64, 100_000] {
        for m in [Marking::QueueBytes, Marking::Sojourn] {
            let (q, marks) = standing_queue(k, m);
            assert!(marks > 0, "K {k} {m:?}: no marks");
            let rel = q / k as f64;
            assert!(
                rel > 0.6 && rel < 1.4,
                "K {k} {m:?}: average queue {q:.0} B = {rel:.2} K"
            );
        }
    }
}

#[test]
fn drops_are_recovered_and_every_packet_is_accounted_for() {
    let mut c = cfg(&[(Dscp::AF11, 0.5), (Dscp::AF21, 0.5)], 300_000, 64);
    c.port_buffer = Some(Bytes(30_000));
    let opts = PktSimOptions {
        min_rto: Nanos(10 * Nanos::MILLI.0),
        ..PktSimOptions::default()
    };
    let flows: Vec<Flow> = (0..30)
        .map(|i| {
            flow(
                i,
                (i % 3) as u32,
                if i % 2 == 0 { Dscp::AF11 } else { Dscp::AF21 },
                200_000 + 10_000 * i,
                i * 50_000,
            )
        })
        .collect();
    let r = run(flows, vec![Dscp::AF11, Dscp::AF21], &c, opts);
    assert!(
        r.conservation.dropped > 0,
        "the small buffer must overflow: {:?}",
        r.conservation
    );
    assert_eq!(r.output.stats.measured, 30);
    for o in r.output.flows.as_ref().unwrap() {
        assert!(o.fct >= o.ideal, "flow {:?} beat the ideal", o.id);
    }
}

#[test]
fn runs_are_deterministic() {
    let c = cfg(&[(Dscp::AF11, 0.6), (Dscp::AF21, 0.4)], 20_000, 4);
    let flows: Vec<Flow> = (0..200)
        .map(|i| {
            flow(
                i,
                (i % 3) as u32,
                if i % 3 == 0 { Dscp::AF11 } else { Dscp::AF21 },
                3_000 + 7_919 * (i % 13),
                i * 20_000,
            )
        })
        .collect();
    let a = run(
        flows.clone(),
        vec![Dscp::AF11, Dscp::AF21],
        &c,
        PktSimOptions::default(),
    );
    let b = run(flows, vec![Dscp::AF11, Dscp::AF21], &c, PktSimOptions::default());
    assert_eq!(a, b);
}

#[test]
fn a_flow_of_an_unconfigured_class_is_refused() {
    let c = cfg(&[(Dscp::AF11, 1.0)], 30_000, 10);
    let w = Workload::new(vec![flow(0, 0, Dscp::AF21, 100, 0)], Nanos(0)).unwrap();
    let input = ModelInput::new(Arc::new(w), topo(), vec![Dscp::AF11]);
    let e = PktSim::default().run(&input, &c).unwrap_err().to_string();
    assert!(e.contains("DSCP 18"), "{e}");
}

#[test]
fn a_window_the_nic_limits_does_not_grow_into_a_burst() {
    // Two classes share sender 0's NIC, so neither is window-limited until the short flow ends;
    // the long flow's window must not have grown meanwhile (congestion-window validation).
    let c = cfg(&[(Dscp::AF11, 0.5), (Dscp::AF21, 0.5)], 30_000, 10);
    let flows = vec![
        flow(0, 0, Dscp::AF11, 20_000_000, 0),
        flow(1, 0, Dscp::AF21, 5_000_000, 0),
    ];
    let r = run(flows, vec![Dscp::AF11, Dscp::AF21], &c, PktSimOptions::default());
    let port = r.ports.iter().find(|p| p.link == 7).unwrap();
    assert!(
        port.max_queue[0] < 100_000,
        "AF11 queue peaked at {} B",
        port.max_queue[0]
    );
    assert_eq!(r.conservation.dropped, 0);
}

#[test]
fn losses_in_one_window_are_repaired_by_newreno_without_a_timeout() {
    // A 40-segment first flight (AF11) meets a 10-segment one (AF21) from another sender at a
    // 9 kB buffer: while both arrive the port overflows and the long flight loses segments in
    // its middle; its later segments bring duplicate ACKs, and NewReno (RFC 6582) repairs every
    // hole with one fast retransmit and partial ACKs, one hole per round trip, with no RTO.
    let mut c = cfg(&[(Dscp::AF11, 0.5), (Dscp::AF21, 0.5)], 1_000_000, 40);
    c.classes[1].init_cwnd = Packets(10);
    c.port_buffer = Some(Bytes(9_000));
    let r = run(
        vec![
            flow(0, 0, Dscp::AF11, 200_000, 1000),
            flow(1, 1, Dscp::AF21, 14_480, 1000),
        ],
        vec![Dscp::AF11, Dscp::AF21],
        &c,
        PktSimOptions::default(),
    );
    assert!(
        r.conservation.dropped > 1,
        "several segments must drop: {:?}",
        r.conservation
    );
    assert_eq!(r.output.stats.fast_retransmits, 1, "{:?}", r.output.stats);
    assert_eq!(r.output.stats.timeouts, 0, "{:?}", r.output.stats);
    for o in r.output.flows.as_ref().unwrap() {
        assert!(o.fct.0 < 100 * Nanos::MILLI.0, "flow {:?}: fct {}", o.id, o.fct);
    }
}

#[test]
fn recording_the_first_segment_changes_no_outcome_and_sees_the_queue() {
    // Two 1 MB flows from two senders overload the bottleneck and fill their class's queue
    // there (one alone cannot: every link runs at the same rate); a one-packet flow of the same
    // class from the third sender arrives 5 ms later and must find bytes ahead of it and wait.
    let c = cfg(&[(Dscp::AF11, 1.0)], 20_000, 10);
    let flows = vec![
        flow(0, 0, Dscp::AF11, 1_000_000, 0),
        flow(1, 2, Dscp::AF11, 1_000_000, 0),
        flow(2, 1, Dscp::AF11, 100, 5_000_000),
    ];
    let plain = run(flows.clone(), vec![Dscp::AF11], &c, PktSimOptions::default());
    let opts = PktSimOptions {
        first_segment: true,
        ..Default::default()
    };
    let rec = run(flows, vec![Dscp::AF11], &c, opts);
    assert_eq!(plain.output, rec.output, "the record must not change what is simulated");
    assert!(plain.first_segment.is_empty());
    assert_eq!(rec.first_segment.len(), 3);
    for r in &rec.first_segment {
        assert!(
            r.queue_ahead.is_some() && r.wait.is_some() && r.syn_wait.is_some(),
            "{r:?}"
        );
    }
    let lone = rec.first_segment[0];
    assert_eq!(
        lone.queue_ahead,
        Some(Bytes(0)),
        "the first flow meets an empty queue: {lone:?}"
    );
    let late = rec.first_segment[2];
    let ahead = late.queue_ahead.unwrap().0;
    assert!(ahead > 0, "the late flow finds the long flow's backlog: {late:?}");
    // It waits at least until the bytes ahead of it have been served at the bottleneck's rate.
    assert!(late.wait.unwrap().0 >= ser(ahead) / 2, "{late:?}");
}
