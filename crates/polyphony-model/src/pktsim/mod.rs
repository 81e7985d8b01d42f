//! `pktsim`: a discrete-event, packet-level simulator — the embedded "live" network and the
//! accuracy reference for `flowsim`.
//!
//! * **Switch ports** are output-queued with one FIFO per class, served by deficit round robin
//!   with quanta proportional to the class weights (work-conserving: an idle class's share goes
//!   to the others), a shared per-port buffer (the configuration's `port_buffer`, else
//!   [`PktSimOptions::default_port_buffer`]) and optional per-class limits; a packet that does
//!   not fit is dropped. Host NICs are ports too (same scheduler, unlimited buffer, no marking).
//! * **ECN**: [`Marking::QueueBytes`] sets CE on a data packet entering a switch class queue
//!   whose length (including the packet) exceeds K; [`Marking::Sojourn`] sets CE on a data packet
//!   leaving a switch queue after waiting longer than K·8/C (the testbed's tc-BPF marker).
//!   Only ECN-capable packets are marked: those of classes running DCTCP. A class on NewReno
//!   or CUBIC sends non-ECT packets, which the switch drops when its buffer is full instead.
//! * **Senders** run their class's congestion control (`ClassConfig::congestion_control`;
//!   unset means DCTCP): **NewReno** (`reno`, RFC 5681 slow start and congestion avoidance,
//!   ssthresh = cwnd/2 on loss), **CUBIC** (`cubic`, RFC 9438 with β = 0.7, fast convergence
//!   and the Reno-friendly region; no HyStart — see `cc.rs`), both without ECN, or **DCTCP**
//!   (RFC 8257): α EWMA with g = 1/16 per window of data, cwnd cut by α/2
//!   at most once per window on ECE and held (no growth) until that window is acknowledged, as
//!   Linux's CWR state does; slow start from the class's initcwnd (the window grows only while
//!   it limits the sender: RFC 7661 / Linux's `tcp_is_cwnd_limited`); NewReno (RFC 6582) fast
//!   retransmit on three duplicate ACKs with window inflation during recovery, partial ACKs
//!   retransmitting the next hole, no new fast retransmit before the recovery point after a
//!   timeout (for every algorithm); DCTCP halves cwnd on loss (Linux's `dctcp_react_to_loss`); RTO with a minimum (Linux:
//!   200 ms, rto = srtt + max(4·rttvar, min)), restarted by new ACKs and fast retransmits (not by
//!   duplicate ACKs), exponential back-off, go-back-N after a timeout. The receiver ACKs every segment, echoes CE in ECE,
//!   and buffers out-of-order segments. A sender keeps at most about 1 ms of its NIC's line
//!   rate queued at the NIC (Linux's TCP small queues, [`PktSimOptions::tsq_window`]); without
//!   it a window that the switch never marks would pile up in the host's unmarked queue.
//! * **A flow's life**: SYN → SYN-ACK → data → the receiver's one-byte application ack of the
//!   last byte, which is also the final cumulative ACK. The FCT runs from the SYN's creation to
//!   the sender receiving that ack (the definition in `polyphony_spec::IdealFct`).
//! * **Conservation**: every packet created is delivered, dropped or still in flight; the run
//!   reports the four counters ([`Conservation`]) and the tests check them.
//!
//! Time is integer nanoseconds; events with equal times run in creation order, so a run is a
//! deterministic function of (workload, topology, configuration, options).

mod cc;

/// CUBIC's multiplicative decrease β (RFC 9438), as pktsim simulates it.
pub const CUBIC_BETA: f64 = cc::BETA;
mod engine;
mod port;

pub use port::PortStats;

use crate::error::ModelError;
use crate::model::{prepare, ModelInput, ModelOutput, NetworkModel};
use polyphony_spec::{Bytes, Nanos, NetworkConfig};

/// Where the ECN marker looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Marking {
    /// Mark on enqueue when the class queue exceeds K bytes (DCTCP's switch marking).
    #[default]
    QueueBytes,
    /// Mark on dequeue when the packet waited longer than K·8/C (the testbed's marker).
    Sojourn,
}

/// Tunables of the packet simulator (not knobs of the network).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PktSimOptions {
    /// ECN marking mode.
    pub marking: Marking,
    /// Minimum retransmission timeout (Linux: 200 ms).
    pub min_rto: Nanos,
    /// Retransmission timeout before any RTT sample, also for the SYN (Linux: 1 s).
    pub initial_rto: Nanos,
    /// Shared buffer of a switch port when the configuration gives none.
    pub default_port_buffer: Bytes,
    /// Stop this long after the last flow's start even if flows are unfinished.
    pub drain_limit: Nanos,
    /// DCTCP's EWMA gain g.
    pub dctcp_g: f64,
    /// DRR quantum of a class with weight 1/N among N classes (quanta scale with weight).
    pub drr_quantum: Bytes,
    /// Window `[from, until)` over which port statistics are gathered.
    pub stats_window: (Nanos, Nanos),
    /// TCP small queues: a flow keeps at most this much of its NIC's line rate (and at least
    /// two full packets) queued at its sender's NIC; the rest waits in the socket (Linux:
    /// about 1 ms of the pacing rate).
    pub tsq_window: Nanos,
    /// Record the congestion window of the flow with this index (workload order) after every
    /// ACK it receives, in [`PktRun::cwnd_trace`] (for tests and diagnosis; `None`: no trace).
    pub trace_flow: Option<u64>,
    /// Record what each flow's first data segment and its SYN met at the first switch port they
    /// entered, in [`PktRun::first_segment`] (for diagnosis; false: nothing recorded). Changes
    /// no outcome.
    pub first_segment: bool,
}

impl Default for PktSimOptions {
    fn default() -> PktSimOptions {
        PktSimOptions {
            marking: Marking::QueueBytes,
            min_rto: Nanos(200 * Nanos::MILLI.0),
            initial_rto: Nanos::SECOND,
            default_port_buffer: Bytes(1_000_000),
            drain_limit: Nanos(30 * Nanos::SECOND.0),
            dctcp_g: 1.0 / 16.0,
            drr_quantum: Bytes(1514),
            stats_window: (Nanos(0), Nanos(u64::MAX)),
            tsq_window: Nanos::MILLI,
            trace_flow: None,
            first_segment: false,
        }
    }
}

/// Packet accounting of one run: `created = delivered + dropped + in_flight`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Conservation {
    /// Packets created by hosts (data, retransmissions, SYNs, ACKs).
    pub created: u64,
    /// Packets that reached their destination host.
    pub delivered: u64,
    /// Packets dropped at full buffers.
    pub dropped: u64,
    /// Packets still queued or on a wire when the run stopped (counted from the queues and the
    /// pending events, independently of the other three).
    pub in_flight: u64,
}

impl Conservation {
    /// Whether every packet is accounted for.
    pub fn holds(&self) -> bool {
        self.created == self.delivered + self.dropped + self.in_flight
    }
}

/// Everything one packet-level run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct PktRun {
    /// SLIs, outcomes and counters.
    pub output: ModelOutput,
    /// Statistics of every switch port (host NICs left out), by link id.
    pub ports: Vec<PortStats>,
    /// Packet accounting.
    pub conservation: Conservation,
    /// The traced flow's window after each ACK ([`PktSimOptions::trace_flow`]).
    pub cwnd_trace: Vec<CwndSample>,
    /// Per flow (workload order) with [`PktSimOptions::first_segment`]: what its first data
    /// segment and its SYN met at the first switch port. Empty without the option.
    pub first_segment: Vec<FirstSegment>,
}

/// What one flow's first data segment and its (first) SYN met at the first switch port they
/// entered ([`PktSimOptions::first_segment`]); `None` where the packet never got there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct FirstSegment {
    /// The flow's class's queue ahead of its first data segment when it was enqueued.
    pub queue_ahead: Option<Bytes>,
    /// How long that segment waited there before its transmission began.
    pub wait: Option<Nanos>,
    /// How long the flow's SYN waited there before its transmission began.
    pub syn_wait: Option<Nanos>,
}

/// One point of a congestion-window trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CwndSample {
    /// When the ACK arrived.
    pub t: Nanos,
    /// The window after it, in segments.
    pub cwnd: f64,
    /// The slow-start threshold after it, in segments (infinite before the first loss).
    pub ssthresh: f64,
    /// Whether the sender is in fast recovery.
    pub in_recovery: bool,
}

/// The packet-level model.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PktSim {
    /// Simulator tunables.
    pub options: PktSimOptions,
}

impl PktSim {
    /// A simulator with the given options.
    pub fn new(options: PktSimOptions) -> PktSim {
        PktSim { options }
    }

    /// Runs one configuration and returns port statistics and packet accounting as well.
    pub fn run(&self, input: &ModelInput, cfg: &NetworkConfig) -> Result<PktRun, ModelError> {
        let prep = prepare(input, cfg)?;
        Ok(engine::run(input, cfg, &prep, &self.options))
    }
}

impl NetworkModel for PktSim {
    fn name(&self) -> &'static str {
        "pktsim"
    }
    fn evaluate(&self, input: &ModelInput, configs: &[NetworkConfig]) -> Vec<Result<ModelOutput, ModelError>> {
        configs.iter().map(|c| self.run(input, c).map(|r| r.output)).collect()
    }
}
