//! Helpers shared by the integration tests.
#![allow(dead_code)]

use polyphony_spec::{Bytes, Dscp, Flow, FlowId, HostId, Nanos};

/// A flow from `src` to the dumbbell's receiver (host 3).
pub fn flow(id: u64, src: u32, dscp: Dscp, size: u64, start: u64) -> Flow {
    Flow {
        id: FlowId(id),
        src: HostId(src),
        dst: HostId(3),
        dscp,
        size: Bytes(size),
        start: Nanos(start),
        weight: 1.0,
    }
}
