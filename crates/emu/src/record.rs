//! The generator's outputs: one [`FlowRecord`] per flow (the ground-truth log, JSON lines) and
//! one [`IntervalSummary`] per measurement interval (JSON lines). Formats are documented in
//! `docs/testbed.md`.

use polyphony_spec::{ClassSli, Dscp, FlowId, FlowOutcome, Nanos, QueryId};
use serde::{Deserialize, Serialize};

/// What happened to one flow. Timestamps are CLOCK_MONOTONIC nanoseconds (comparable with
/// eBPF `bpf_ktime_get_ns`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowRecord {
    /// The workload's flow id.
    pub id: FlowId,
    /// Class code point.
    pub dscp: Dscp,
    /// Class name.
    pub class: String,
    /// Payload bytes.
    pub size: u64,
    /// Sending host index.
    pub src_host: u32,
    /// Sender address.
    pub src_addr: String,
    /// Sender port (0 if the socket never got one).
    pub src_port: u16,
    /// Receiver address.
    pub dst_addr: String,
    /// Receiver port.
    pub dst_port: u16,
    /// Scheduled arrival, relative to the start of the run (ns).
    pub sched_ns: u64,
    /// CLOCK_MONOTONIC just before `connect()`.
    pub start_ns: u64,
    /// CLOCK_MONOTONIC when the receiver's 1-byte application ack arrived; `None` if the flow
    /// did not finish.
    pub end_ns: Option<u64>,
    /// `end_ns - start_ns`.
    pub fct_ns: Option<u64>,
    /// Ideal FCT (see `polyphony_spec::IdealFct`).
    pub ideal_ns: u64,
    /// `fct_ns / ideal_ns`.
    pub slowdown: Option<f64>,
    /// TCP_INFO `snd_cwnd` right after the handshake: the initial window the route gave.
    pub init_cwnd: Option<u32>,
    /// Why the flow did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The query the flow answers (a partition-aggregate response), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryId>,
    /// A response: CLOCK_MONOTONIC when the requester sent the query's request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_ns: Option<u64>,
    /// A response: CLOCK_MONOTONIC when the requester read the response's last byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_ns: Option<u64>,
}

impl FlowRecord {
    /// The outcome in the shared vocabulary, for finished flows. A query's response is timed
    /// at the requester: from the request's sending to the reading of the response's last byte,
    /// so that the query's completion time ([`polyphony_spec::QctSli`]) is measured there.
    pub fn outcome(&self) -> Option<FlowOutcome> {
        let fct = match self.query {
            None => self.fct_ns?,
            Some(_) => self.received_ns?.checked_sub(self.request_ns?)?,
        };
        self.fct_ns?;
        Some(FlowOutcome {
            id: self.id,
            dscp: self.dscp,
            size: polyphony_spec::Bytes(self.size),
            start: Nanos(self.sched_ns),
            fct: Nanos(fct),
            ideal: Nanos(self.ideal_ns),
            query: self.query,
        })
    }
}

/// Per-class statistics of one measurement interval (flows grouped by completion time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSummary {
    /// Interval number, from 0.
    pub interval: u64,
    /// CLOCK_MONOTONIC start of the interval.
    pub start_ns: u64,
    /// CLOCK_MONOTONIC end of the interval.
    pub end_ns: u64,
    /// One entry per class that completed flows in the interval.
    pub classes: Vec<ClassSli>,
    /// Flows that failed (error or timeout) with their scheduled start in this interval.
    pub failed: u64,
}

/// The summary of a whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Per-class statistics over every finished flow.
    pub classes: Vec<ClassSli>,
    /// Flows scheduled.
    pub scheduled: u64,
    /// Flows finished.
    pub finished: u64,
    /// Flows that failed or did not finish before the deadline.
    pub failed: u64,
    /// Flows not started because the sender already had its maximum of open flows.
    pub skipped: u64,
    /// The base RTT the slowdowns divide by.
    pub base_rtt: Nanos,
    /// Wall time of the run.
    pub wall: Nanos,
}
