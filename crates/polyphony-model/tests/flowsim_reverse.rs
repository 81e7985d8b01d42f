//! `flowsim`'s experimental reverse direction (`FlowSimOptions::reverse_queue`, off by
//! default): a flow's SYN-ACK, ACKs and application ack leave through its receiver's NIC in the
//! flow's class, behind that host's own outgoing data (as in `pktsim`).
//! A flow to a receiver that sends nothing is unchanged; a flow to a receiver that is sending a
//! long flow of the same class waits about k + 1 times that class's NIC queue (TCP small
//! queues: 1 ms of line rate) — as `pktsim` shows; a flow of another class does not.

use polyphony_model::{FlowSim, FlowSimOptions, ModelInput, NetworkModel, PktSim, Topology};
use polyphony_spec::{
    BitsPerSec, Bytes, ClassConfig, Dscp, Flow, FlowId, HostId, Nanos, NetworkConfig, Packets, Workload,
};
use std::sync::Arc;

/// 2 racks × 2 hosts, one spine; 10 Gbit/s hosts, 40 Gbit/s fabric (a host's NIC is the
/// slowest link of its flows, so it is where its own data queues), 1 µs links.
fn fabric() -> Arc<Topology> {
    Arc::new(
        Topology::leaf_spine(
            2,
            2,
            1,
            BitsPerSec::from_gbps(10),
            BitsPerSec::from_gbps(40),
            Nanos(1_000),
        )
        .unwrap(),
    )
}

fn cfg() -> NetworkConfig {
    let c = |dscp, weight| ClassConfig::new(dscp, weight, Bytes(60_000), Packets(10));
    NetworkConfig {
        classes: vec![c(Dscp::AF11, 0.5), c(Dscp::AF21, 0.5)],
        port_buffer: None,
    }
}

fn flow(id: u64, src: u32, dst: u32, dscp: Dscp, size: u64, start_ns: u64) -> Flow {
    Flow::new(FlowId(id), HostId(src), HostId(dst), dscp, Bytes(size), Nanos(start_ns))
}

/// The FCT (ns) of the last flow of `flows` under `m`.
fn last_fct(m: &dyn NetworkModel, flows: Vec<Flow>) -> f64 {
    let n = flows.len();
    let w = Workload::new(flows, Nanos(0)).unwrap();
    let mut input = ModelInput::new(Arc::new(w), fabric(), vec![Dscp::AF11, Dscp::AF21]);
    input.keep_flows = true;
    let out = m.evaluate(&input, &[cfg()]).remove(0).unwrap();
    out.flows.unwrap()[n - 1].fct.0 as f64
}

/// Host 0 sends 20 MB of `long` to host 2 from t = 0; at 2 ms host 3 sends `size` bytes of
/// `short` to host 0 (with `busy`; else alone).
fn probe_case(busy: bool, long: Dscp, short: Dscp, size: u64) -> Vec<Flow> {
    let mut v = Vec::new();
    if busy {
        v.push(flow(0, 0, 2, long, 20_000_000, 0));
    }
    v.push(flow(1, 3, 0, short, size, 2_000_000));
    v
}

fn off() -> FlowSim {
    FlowSim::default()
}

fn on() -> FlowSim {
    FlowSim::new(FlowSimOptions {
        reverse_queue: true,
        ..FlowSimOptions::default()
    })
}

#[test]
fn a_flow_to_an_idle_receiver_is_unchanged() {
    // Host 0 sends to host 2, host 3 to host 1 (which sends nothing): the reverse direction
    // adds nothing, bit for bit.
    let flows = vec![
        flow(0, 0, 2, Dscp::AF11, 20_000_000, 0),
        flow(1, 3, 1, Dscp::AF11, 5_000, 2_000_000),
    ];
    assert_eq!(last_fct(&on(), flows.clone()), last_fct(&off(), flows));
    // And a lone flow.
    let lone = probe_case(false, Dscp::AF11, Dscp::AF11, 5_000);
    assert_eq!(last_fct(&on(), lone.clone()), last_fct(&off(), lone));
}

/// What host 0 sending 20 MB of `long` adds to the FCT of a 1000-byte AF11 flow to it under `m`.
fn added(m: &dyn NetworkModel, long: Dscp) -> f64 {
    last_fct(m, probe_case(true, long, Dscp::AF11, 1_000)) - last_fct(m, probe_case(false, long, Dscp::AF11, 1_000))
}

#[test]
fn a_flow_to_a_sending_receiver_waits_behind_its_nic_queue_like_pktsim() {
    // One segment: k = 1, so the SYN-ACK and the application ack each wait behind host 0's
    // AF11 queue at its NIC: TCP small queues hold 1 ms of 10 Gbit/s, served at the full rate
    // (AF21 is idle there): about 2 ms in all.
    let (f, p) = (added(&on(), Dscp::AF11), added(&PktSim::default(), Dscp::AF11));
    assert!((f - 2e6).abs() < 0.05 * 2e6, "flowsim adds {f} ns, expected ≈ 2 ms");
    assert!((f - p).abs() < 0.25 * p, "flowsim adds {f} ns, pktsim {p} ns");
    // Without the reverse direction flowsim adds nothing.
    let o = added(&off(), Dscp::AF11);
    assert!(o.abs() < 1e3, "without the reverse direction flowsim adds {o} ns");
}

#[test]
fn another_class_does_not_wait_behind_the_receivers_data() {
    let (f, p) = (added(&on(), Dscp::AF21), added(&PktSim::default(), Dscp::AF21));
    // pktsim: at most a packet's serialisation or two behind the other class (DRR).
    assert!(f.abs() < 5e3, "flowsim adds {f} ns");
    assert!(p.abs() < 5e3, "pktsim adds {p} ns");
}
