//! `flowsim` behaves the way the network does: a lone flow gets its ideal FCT (plus one
//! packet's store-and-forward), weights, K and initcwnd move a class's tail the right way,
//! batches equal single runs, and bad input is refused.

use polyphony_model::{FlowSim, ModelInput, NetworkModel, Topology};
use polyphony_spec::{BitsPerSec, Bytes, Dscp, Flow, HostId, Nanos, NetworkConfig, Workload};
use std::sync::Arc;

mod common;
use common::{cfg, flow, mixed, topo};

fn p99(input: &ModelInput, c: &NetworkConfig, d: Dscp) -> f64 {
    FlowSim::default().run(input, c).unwrap().sli.get(d).unwrap().p99
}

#[test]
fn lone_flow_gets_the_ideal_plus_one_store_and_forward() {
    for size in [100u64, 20_000, 1_000_000] {
        let w = Workload::new(vec![flow(0, 0, Dscp::AF11, size, 0)], Nanos(0)).unwrap();
        let mut input = ModelInput::new(Arc::new(w), topo(), vec![Dscp::AF11, Dscp::AF21]);
        input.keep_flows = true;
        let out = FlowSim::default()
            .run(&input, &cfg((0.5, 0.5), (30_000, 30_000), (64, 64)))
            .unwrap();
        let o = out.flows.unwrap()[0];
        let sf = BitsPerSec::from_mbps(100).serialization_time(Bytes(size.min(1448) + 66));
        assert_eq!(o.fct, o.ideal + sf, "size {size}");
    }
}

#[test]
fn more_weight_lowers_the_class_tail() {
    let input = mixed();
    let lo = p99(&input, &cfg((0.2, 0.8), (30_000, 30_000), (10, 10)), Dscp::AF11);
    let hi = p99(&input, &cfg((0.8, 0.2), (30_000, 30_000), (10, 10)), Dscp::AF11);
    assert!(hi < lo, "weight 0.8 gives p99 {hi}, weight 0.2 gives {lo}");
}

#[test]
fn smaller_k_lowers_the_small_flows_wait() {
    let mut flows = Vec::new();
    for i in 0..200u64 {
        flows.push(flow(2 * i, 0, Dscp::AF11, 1_000_000, i * 100_000_000));
        flows.push(flow(2 * i + 1, 1, Dscp::AF11, 1_000, i * 100_000_000 + 20_000_000));
    }
    let w = Workload::new(flows, Nanos(0)).unwrap();
    let input = ModelInput::new(Arc::new(w), topo(), vec![Dscp::AF11, Dscp::AF21]);
    let small = p99(&input, &cfg((0.5, 0.5), (3_000, 3_000), (10, 10)), Dscp::AF11);
    let large = p99(&input, &cfg((0.5, 0.5), (300_000, 3_000), (10, 10)), Dscp::AF11);
    assert!(small < large, "K 3 kB: p99 {small}; K 300 kB: p99 {large}");
}

#[test]
fn larger_initcwnd_saves_round_trips_on_an_idle_path() {
    let d = 1_000_000_000 / 10;
    let flows: Vec<Flow> = (0..20).map(|i| flow(i, 0, Dscp::AF11, 100_000, i * d)).collect();
    let w = Workload::new(flows, Nanos(0)).unwrap();
    let far = Arc::new(Topology::dumbbell(3, BitsPerSec::from_mbps(100), Nanos(1_000_000)).unwrap());
    let input = ModelInput::new(Arc::new(w), far, vec![Dscp::AF11, Dscp::AF21]);
    let iw2 = p99(&input, &cfg((0.5, 0.5), (300_000, 300_000), (2, 2)), Dscp::AF11);
    let iw64 = p99(&input, &cfg((0.5, 0.5), (300_000, 300_000), (64, 64)), Dscp::AF11);
    assert!(iw64 < iw2, "initcwnd 64: p99 {iw64}; initcwnd 2: p99 {iw2}");
}

#[test]
fn a_batch_equals_single_runs_and_is_deterministic() {
    let input = mixed();
    let cs = vec![
        cfg((0.3, 0.7), (5_000, 50_000), (4, 20)),
        cfg((0.6, 0.4), (100_000, 3_000), (32, 2)),
    ];
    let batch = FlowSim::default().evaluate(&input, &cs);
    for (b, c) in batch.iter().zip(&cs) {
        assert_eq!(b.as_ref().unwrap(), &FlowSim::default().run(&input, c).unwrap());
    }
}

#[test]
fn one_bad_configuration_does_not_spoil_the_batch() {
    let input = mixed();
    let mut bad = cfg((0.3, 0.7), (5_000, 50_000), (4, 20));
    bad.classes[0].weight = 0.9;
    let out = FlowSim::default().evaluate(&input, &[bad, cfg((0.5, 0.5), (30_000, 30_000), (10, 10))]);
    let e = out[0].as_ref().unwrap_err().to_string();
    assert!(e.contains("weights"), "{e}");
    assert!(out[1].is_ok());
}

#[test]
fn a_flow_to_a_missing_host_is_refused() {
    let w = Workload::new(
        vec![Flow {
            dst: HostId(9),
            ..flow(0, 0, Dscp::AF11, 10, 0)
        }],
        Nanos(0),
    )
    .unwrap();
    let input = ModelInput::new(Arc::new(w), topo(), vec![Dscp::AF11, Dscp::AF21]);
    let e = FlowSim::default()
        .run(&input, &cfg((0.5, 0.5), (3_000, 3_000), (10, 10)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("host 9"), "{e}");
}

#[test]
fn absurd_trace_values_are_refused_not_panicked_on() {
    for f in [
        flow(0, 0, Dscp::AF11, u64::MAX / 2, 0),
        flow(0, 0, Dscp::AF11, 100, u64::MAX - 5),
    ] {
        let w = Workload::new(vec![f], Nanos(0)).unwrap();
        let input = ModelInput::new(Arc::new(w), topo(), vec![Dscp::AF11, Dscp::AF21]);
        let c = cfg((0.5, 0.5), (3_000, 3_000), (10, 10));
        let e = FlowSim::default().run(&input, &c).unwrap_err().to_string();
        assert!(e.contains("flow 0."), "{e}");
        assert!(polyphony_model::PktSim::default().run(&input, &c).is_err());
    }
}
