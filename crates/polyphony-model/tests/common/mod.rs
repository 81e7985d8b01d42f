//! Helpers shared by the integration tests.
#![allow(dead_code)]

use polyphony_model::{ModelInput, Topology};
use polyphony_spec::{
    BitsPerSec, Bytes, ClassConfig, Dscp, Flow, FlowId, HostId, Nanos, NetworkConfig, Packets, Workload,
};
use std::sync::Arc;

/// A flow from `src` to the dumbbell's receiver (host 3).
pub fn flow(id: u64, src: u32, dscp: Dscp, size: u64, start: u64) -> Flow {
    Flow::new(FlowId(id), HostId(src), HostId(3), dscp, Bytes(size), Nanos(start))
}

/// The testbed's dumbbell: three senders, 100 Mbit/s, 2.5 µs per link.
pub fn topo() -> Arc<Topology> {
    Arc::new(Topology::dumbbell(3, BitsPerSec::from_mbps(100), Nanos(2_500)).unwrap())
}

/// A two-class (AF11, AF21) configuration: weights, ECN thresholds (bytes), initial windows.
pub fn cfg(w: (f64, f64), k: (u64, u64), iw: (u32, u32)) -> NetworkConfig {
    let c = |dscp, weight, k, iw| ClassConfig::new(dscp, weight, Bytes(k), Packets(iw));
    NetworkConfig {
        classes: vec![c(Dscp::AF11, w.0, k.0, iw.0), c(Dscp::AF21, w.1, k.1, iw.1)],
        port_buffer: None,
    }
}

/// Class AF11: a stream of small flows; AF21: a few long flows keeping the link busy.
pub fn mixed() -> ModelInput {
    let mut flows = Vec::new();
    let mut id = 0;
    for i in 0..400u64 {
        flows.push(flow(
            id,
            (i % 3) as u32,
            Dscp::AF11,
            2_000 + (i * 7_919) % 30_000,
            i * 1_000_000,
        ));
        id += 1;
    }
    for i in 0..8u64 {
        flows.push(flow(id, (i % 3) as u32, Dscp::AF21, 3_000_000, i * 50_000_000));
        id += 1;
    }
    let w = Workload::new(flows, Nanos(0)).unwrap();
    ModelInput::new(Arc::new(w), topo(), vec![Dscp::AF11, Dscp::AF21])
}
