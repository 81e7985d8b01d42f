//! Partition-aggregate queries through both models: the responses are simulated as ordinary
//! flows, and each class's query completion times (last response end − query start) come out
//! of the per-flow results the same way for pktsim and flowsim, with and without per-flow
//! outcomes kept.

use polyphony_model::{
    default_config, mix_cdfs, synthesize, three_class_scenario, FlowSim, ModelInput, NetworkModel, PktSim,
    SynthesisOptions, Topology,
};
use polyphony_spec::{Bytes, Dscp, IncastSpec, Nanos, NetworkConfig, QctSli, Scenario, TopologySpec};
use std::sync::Arc;

/// The reference dumbbell with AF31 as incast queries: 8 responders of 20 kB each, σ = 0.5
/// (queries rarely overlap, so a query's time is its own).
fn scenario() -> Scenario {
    let mut s = three_class_scenario(
        "incast",
        TopologySpec::Dumbbell {
            senders: 3,
            rate_mbps: 100.0,
            link_delay_us: 2.5,
        },
        ["meta-cache", "meta-web", "meta-hadoop"],
        [11.0, 15.0, 20.0],
        1.0,
    );
    s.mix[2].size_cdf.clear();
    s.mix[2].load = 0.15;
    s.mix[2].sigma = 0.5;
    s.mix[2].incast = Some(IncastSpec {
        fan_in: 8,
        response_bytes: Some(Bytes(20_000)),
    });
    s.validate().unwrap();
    s
}

fn input(s: &Scenario, keep: bool) -> ModelInput {
    let topo = Topology::from_spec(&s.topology).unwrap();
    let w = synthesize(
        s,
        &topo,
        &mix_cdfs(s).unwrap(),
        &SynthesisOptions::new(Nanos::SECOND, 4),
    )
    .unwrap();
    let mut i = ModelInput::new(Arc::new(w), Arc::new(topo), s.dscps());
    i.keep_flows = keep;
    i
}

/// The configuration with AF31's class buffer set.
fn with_buffer(s: &Scenario, b: u64) -> NetworkConfig {
    let mut c = default_config(s);
    c.classes[2].buffer = Some(Bytes(b));
    c
}

#[test]
fn both_models_report_qct_from_their_per_flow_results() {
    let s = scenario();
    let cfg = default_config(&s);
    let models: [Box<dyn NetworkModel>; 2] = [Box::new(PktSim::default()), Box::new(FlowSim::default())];
    for m in &models {
        let kept = m
            .evaluate(&input(&s, true), std::slice::from_ref(&cfg))
            .remove(0)
            .unwrap();
        let flows = kept.flows.as_ref().unwrap();
        let q = kept.sli.get(Dscp::AF31).and_then(|c| c.qct).expect("AF31 has QCTs");
        // The SLI is the aggregation of the per-flow outcomes.
        assert_eq!(Some(q), QctSli::from_outcomes(flows, Dscp::AF31), "{}", m.name());
        assert!(q.queries > 8, "{}: {} queries", m.name(), q.queries);
        // A query ends with its slowest response: its QCT is at least the longest response FCT
        // of 8 × 20 kB through one 100 Mbit/s port (≈ 13 ms of serialisation for all of them).
        assert!(q.p50 >= Nanos(13_000_000), "{}: p50 QCT {}", m.name(), q.p50);
        assert!(q.p50 <= q.p99 && q.p99 <= q.p999);
        // Classes without queries have no QCT; the fast path (no per-flow outcomes kept) gives
        // the same SLIs.
        assert!(kept.sli.get(Dscp::AF11).unwrap().qct.is_none());
        let fast = m
            .evaluate(&input(&s, false), std::slice::from_ref(&cfg))
            .remove(0)
            .unwrap();
        assert_eq!(fast.sli, kept.sli, "{}", m.name());
    }
}

#[test]
fn pktsim_incast_into_a_small_class_buffer_loses_packets_and_time() {
    // 8 responders × initcwnd 10 × 1.5 kB ≈ 120 kB arrive at once: a 30 kB class buffer drops,
    // and the retransmission timeouts (200 ms minimum) put the p99 QCT far above a 1 MB buffer's.
    let s = scenario();
    let i = input(&s, false);
    let out = PktSim::default().evaluate(&i, &[with_buffer(&s, 30_000), with_buffer(&s, 1_000_000)]);
    let (small, big) = (out[0].as_ref().unwrap(), out[1].as_ref().unwrap());
    let qct = |o: &polyphony_model::ModelOutput| o.sli.get(Dscp::AF31).unwrap().qct.unwrap().p99;
    assert!(small.stats.dropped > 0 && small.stats.timeouts > 0, "{:?}", small.stats);
    assert!(qct(small) > Nanos(200_000_000), "small buffer p99 QCT {}", qct(small));
    assert!(qct(big) < Nanos(100_000_000), "large buffer p99 QCT {}", qct(big));
}
