//! The event loop of `pktsim`: the packet slab, the event heap, hosts' TCP senders (DCTCP,
//! NewReno, CUBIC) and receivers, and forwarding along precomputed routes. See the parent
//! module for the model.

use super::cc::Cubic;
use super::port::Port;
use super::{Conservation, CwndSample, FirstSegment, Marking, PktRun, PktSimOptions};
use crate::model::{finish, Cca, ModelInput, Prepared, RunStats};
use crate::topology::{Path, HEADER_BYTES, MSS};
use polyphony_spec::{Bytes, Nanos, NetworkConfig};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What a simulated packet is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Syn,
    SynAck,
    Data,
    Ack,
    /// The receiver's acknowledgement of the last byte: the flow is complete.
    AppAck,
}

/// What a scheduled event does: a port finishes serialising, a packet reaches the next hop, a
/// flow's retransmission timer fires.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum EvKind {
    TxDone,
    Arrive,
    Timer,
}

const MAX_RTO: u64 = 60_000_000_000;

#[derive(Clone, Copy)]
struct Pkt {
    t_enq: u64,
    flow: u32,
    seq: u32,
    wire: u16,
    kind: Kind,
    hop: u8,
    ce: bool,
    ece: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Ev {
    t: u64,
    seq: u64,
    kind: EvKind,
    arg: u32,
}
impl Ord for Ev {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum St {
    Idle,
    SynSent,
    Open,
    Done,
}

struct Fl {
    fwd: Path,
    rev: Path,
    class: u8,
    state: St,
    n: u32,
    last_payload: u32,
    una: u32,
    nxt: u32,
    cwnd: f64,
    ssthresh: f64,
    alpha: f64,
    win_end: u32,
    acked_win: u32,
    marked_win: u32,
    cwr_end: u32,
    /// No window growth until `una` reaches this: the round after an ECN reduction (Linux's
    /// CWR state). Apart from `cwr_end`, which a timeout also sets: in the Loss state Linux
    /// still grows the window (slow start from one segment).
    hold_end: u32,
    dupacks: u32,
    recover: u32,
    in_recovery: bool,
    /// NewReno's window inflation during fast recovery, in segments (RFC 6582 §3.2).
    infl: f64,
    srtt: u64,
    rttvar: u64,
    rto: u64,
    rtt_seq: u32,
    rtt_time: u64,
    deadline: u64,
    timer_at: u64,
    syn_time: u64,
    /// Data bytes of this flow sitting in its sender's NIC queue (TCP small queues).
    nic_bytes: u32,
    /// CUBIC's state (unused by the other algorithms).
    cubic: Cubic,
    // receiver side
    rcv_nxt: u32,
    ooo: Vec<u64>,
    done_at: u64,
}

struct Sim<'a> {
    now: u64,
    seq: u64,
    /// Packet events (transmissions ending, packets arriving).
    heap: BinaryHeap<Ev>,
    /// Retransmission timers, kept apart so the packet heap stays small.
    timers: BinaryHeap<Ev>,
    pkts: Vec<Pkt>,
    free: Vec<u32>,
    ports: Vec<Port>,
    flows: Vec<Fl>,
    quantum: Vec<i64>,
    class_limit: Vec<Option<u64>>,
    k_bytes: Vec<u64>,
    /// Each class's congestion control.
    cca: Vec<Cca>,
    opts: &'a PktSimOptions,
    /// The flow whose window is traced, and the trace.
    trace_flow: Option<u32>,
    trace: Vec<CwndSample>,
    /// [`PktRun::first_segment`] (empty unless recorded).
    first_segment: Vec<FirstSegment>,
    /// Per-link TSQ limit in bytes (meaningful for host NICs).
    tsq: Vec<u32>,
    win: (u64, u64),
    created: u64,
    delivered: u64,
    dropped: u64,
    marked: u64,
    host_pkts: u64,
    events: u64,
    timeouts: u64,
    fast_retransmits: u64,
    open_flows: usize,
}

pub(super) fn run(input: &ModelInput, cfg: &NetworkConfig, prep: &Prepared, opts: &PktSimOptions) -> PktRun {
    let topo = input.topology.as_ref().clone().with_ecmp_salt(input.seed);
    let nc = prep.classes.len();
    let port_limit = cfg.port_buffer.map_or(opts.default_port_buffer.0, |b| b.0);
    let ports: Vec<Port> = topo
        .links()
        .iter()
        .map(|l| {
            let sw = !topo.is_host(l.from);
            Port::new(l.rate.0, l.delay.0, sw, nc, if sw { port_limit } else { u64::MAX })
        })
        .collect();
    let q0 = opts.drr_quantum.0 as f64 * nc as f64;
    let flows: Vec<Fl> = input
        .workload
        .flows
        .iter()
        .zip(&prep.flow_class)
        .map(|(f, &c)| {
            let n = f.size.0.div_ceil(MSS).max(1) as u32;
            Fl {
                fwd: topo.route(f.src, f.dst, f.id.0),
                rev: topo.route(f.dst, f.src, f.id.0),
                class: c,
                state: St::Idle,
                n,
                last_payload: (f.size.0 - (n as u64 - 1) * MSS) as u32,
                una: 0,
                nxt: 0,
                cwnd: prep.classes[c as usize].init_cwnd as f64,
                ssthresh: f64::INFINITY,
                alpha: 1.0,
                win_end: 0,
                acked_win: 0,
                marked_win: 0,
                cwr_end: 0,
                hold_end: 0,
                dupacks: 0,
                recover: 0,
                in_recovery: false,
                infl: 0.0,
                srtt: 0,
                rttvar: 0,
                rto: opts.initial_rto.0,
                rtt_seq: 0,
                rtt_time: 0,
                deadline: 0,
                timer_at: 0,
                syn_time: 0,
                nic_bytes: 0,
                cubic: Cubic::default(),
                rcv_nxt: 0,
                ooo: Vec::new(),
                done_at: 0,
            }
        })
        .collect();
    let mut sim = Sim {
        now: 0,
        seq: 0,
        heap: BinaryHeap::with_capacity(1024),
        timers: BinaryHeap::with_capacity(1024),
        pkts: Vec::with_capacity(4096),
        free: Vec::with_capacity(4096),
        ports,
        flows,
        quantum: prep
            .classes
            .iter()
            .map(|c| ((c.weight * q0).round() as i64).max(1))
            .collect(),
        class_limit: prep.classes.iter().map(|c| c.buffer).collect(),
        k_bytes: prep.classes.iter().map(|c| c.ecn_k).collect(),
        cca: prep.classes.iter().map(|c| c.cca).collect(),
        opts,
        trace_flow: opts.trace_flow.and_then(|i| u32::try_from(i).ok()),
        trace: Vec::new(),
        first_segment: if opts.first_segment {
            vec![FirstSegment::default(); input.workload.flows.len()]
        } else {
            Vec::new()
        },
        tsq: topo
            .links()
            .iter()
            .map(|l| {
                let per_ms = l.rate.0 / 8 / 1000 * opts.tsq_window.0 / Nanos::MILLI.0;
                per_ms.max(2 * (MSS + HEADER_BYTES)).min(u32::MAX as u64) as u32
            })
            .collect(),
        win: (opts.stats_window.0 .0, opts.stats_window.1 .0),
        created: 0,
        delivered: 0,
        dropped: 0,
        marked: 0,
        host_pkts: 0,
        events: 0,
        timeouts: 0,
        fast_retransmits: 0,
        open_flows: 0,
    };
    let starts: Vec<u64> = input.workload.flows.iter().map(|f| f.start.0).collect();
    let horizon = starts.last().copied().unwrap_or(0).saturating_add(opts.drain_limit.0);
    let mut next_flow = 0usize;
    loop {
        // The earliest of: the next packet event, the next timer, the next flow start.
        let pe = sim.heap.peek().map(|e| (e.t, e.seq));
        let te = sim.timers.peek().map(|e| (e.t, e.seq));
        let from_timers = match (pe, te) {
            (Some(p), Some(t)) => t < p,
            (None, Some(_)) => true,
            _ => false,
        };
        let next_ev = if from_timers { te } else { pe }.map(|x| x.0);
        let take_flow = next_flow < starts.len() && next_ev.is_none_or(|t| starts[next_flow] <= t);
        if take_flow {
            let t = starts[next_flow];
            if t > horizon {
                break;
            }
            sim.now = t;
            sim.start_flow(next_flow as u32);
            next_flow += 1;
            continue;
        }
        let popped = if from_timers { sim.timers.pop() } else { sim.heap.pop() };
        let Some(ev) = popped else { break };
        if ev.t > horizon {
            if ev.kind != EvKind::Timer {
                sim.heap.push(ev); // still on a wire: counted as in flight below
            }
            break;
        }
        if ev.kind == EvKind::Timer {
            let f = &sim.flows[ev.arg as usize];
            if f.state == St::Done || f.timer_at != ev.t {
                continue; // a finished flow's or a superseded timer: not an event of the network
            }
        }
        sim.now = ev.t;
        sim.events += 1;
        match ev.kind {
            EvKind::TxDone => {
                sim.ports[ev.arg as usize].busy = false;
                sim.kick(ev.arg as usize);
            }
            EvKind::Arrive => sim.arrive(ev.arg),
            EvKind::Timer => sim.timer(ev.arg),
        }
    }
    let end = sim.now;
    // In flight: packets still queued at ports plus packets on a wire (pending arrivals).
    let on_wire = sim.heap.iter().filter(|e| e.kind == EvKind::Arrive).count() as u64;
    let queued: u64 = sim.ports.iter().map(|p| p.queued_packets()).sum();
    let conservation = Conservation {
        created: sim.created,
        delivered: sim.delivered,
        dropped: sim.dropped,
        in_flight: on_wire + queued,
    };
    if !conservation.holds() {
        tracing::error!(
            ?conservation,
            "pktsim lost track of packets: created ≠ delivered + dropped + in flight"
        );
    }
    tracing::debug!(
        flows = sim.flows.len(),
        packets = sim.host_pkts,
        events = sim.events,
        dropped = sim.dropped,
        timeouts = sim.timeouts,
        end_ns = end,
        "pktsim run finished"
    );
    let fct: Vec<Option<Nanos>> = sim
        .flows
        .iter()
        .zip(&starts)
        .map(|(f, &s)| (f.state == St::Done).then(|| Nanos(f.done_at - s)))
        .collect();
    let stats = RunStats {
        packets: sim.host_pkts,
        dropped: sim.dropped,
        marked: sim.marked,
        events: sim.events,
        timeouts: sim.timeouts,
        fast_retransmits: sim.fast_retransmits,
        ..RunStats::default()
    };
    let output = finish(input, &fct, None, Nanos(end), stats);
    let win = sim.win;
    let ports = sim
        .ports
        .iter_mut()
        .enumerate()
        .filter(|(_, p)| p.switch)
        .map(|(i, p)| p.stats(i as u32, end, win))
        .collect();
    PktRun {
        output,
        ports,
        conservation,
        cwnd_trace: sim.trace,
        first_segment: sim.first_segment,
    }
}

impl Sim<'_> {
    #[inline]
    fn push_ev(&mut self, t: u64, kind: EvKind, arg: u32) {
        self.seq += 1;
        let ev = Ev {
            t,
            seq: self.seq,
            kind,
            arg,
        };
        if kind == EvKind::Timer {
            self.timers.push(ev);
        } else {
            self.heap.push(ev);
        }
    }

    fn alloc(&mut self, p: Pkt) -> u32 {
        self.created += 1;
        if let Some(i) = self.free.pop() {
            self.pkts[i as usize] = p;
            i
        } else {
            self.pkts.push(p);
            (self.pkts.len() - 1) as u32
        }
    }

    fn path_of(&self, p: &Pkt) -> Path {
        let f = &self.flows[p.flow as usize];
        if p.kind == Kind::Syn || p.kind == Kind::Data {
            f.fwd
        } else {
            f.rev
        }
    }

    /// Creates a packet at its source host and queues it on the first link.
    fn send(&mut self, flow: u32, kind: Kind, seq: u32, ece: bool) {
        let wire = match kind {
            Kind::Data => {
                let f = &self.flows[flow as usize];
                let pl = if seq + 1 == f.n { f.last_payload as u64 } else { MSS };
                pl + HEADER_BYTES
            }
            Kind::AppAck => HEADER_BYTES + 1,
            Kind::Syn | Kind::SynAck | Kind::Ack => HEADER_BYTES,
        };
        if kind == Kind::Data {
            self.flows[flow as usize].nic_bytes += wire as u32;
        }
        let i = self.alloc(Pkt {
            t_enq: 0,
            flow,
            seq,
            wire: wire as u16,
            kind,
            hop: 0,
            ce: false,
            ece,
        });
        self.host_pkts += 1;
        self.enqueue(i);
    }

    /// Puts packet `i` into the queue of the link at its current hop.
    fn enqueue(&mut self, i: u32) {
        let p = self.pkts[i as usize];
        let link = self.path_of(&p).links()[p.hop as usize] as usize;
        let c = self.flows[p.flow as usize].class as usize;
        let b = p.wire as u64;
        let port = &mut self.ports[link];
        if !port.fits(c, b, if port.switch { self.class_limit[c] } else { None }) {
            port.drops += 1;
            self.dropped += 1;
            self.free.push(i);
            return;
        }
        let mut ce = p.ce;
        if port.switch
            && p.kind == Kind::Data
            && self.opts.marking == Marking::QueueBytes
            && self.cca[c].ecn()
            && port.qbytes[c] + b > self.k_bytes[c]
            && !ce
        {
            ce = true;
            port.marks += 1;
            self.marked += 1;
        }
        if !self.first_segment.is_empty() && port.switch && p.kind == Kind::Data && p.seq == 0 {
            if let Some(r) = self
                .first_segment
                .get_mut(p.flow as usize)
                .filter(|r| r.queue_ahead.is_none())
            {
                r.queue_ahead = Some(Bytes(port.qbytes[c]));
            }
        }
        let pk = &mut self.pkts[i as usize];
        pk.ce = ce;
        pk.t_enq = self.now;
        port.push(c, i, b, self.now, self.win);
        if !port.busy {
            self.kick(link);
        }
    }

    /// Starts the next transmission on an idle port.
    fn kick(&mut self, link: usize) {
        let now = self.now;
        let win = self.win;
        let pkts = &self.pkts;
        let port = &mut self.ports[link];
        if port.busy {
            return;
        }
        let Some(i) = port.pop(&self.quantum, |j| pkts[j as usize].wire as u64, now, win) else {
            return;
        };
        let p = &mut self.pkts[i as usize];
        let c = self.flows[p.flow as usize].class as usize;
        if port.switch && p.kind == Kind::Data && self.opts.marking == Marking::Sojourn && !p.ce && self.cca[c].ecn() {
            let k_ns = (self.k_bytes[c] * 8_000_000_000) / port.rate;
            if now - p.t_enq > k_ns {
                p.ce = true;
                port.marks += 1;
                self.marked += 1;
            }
        }
        if !self.first_segment.is_empty() && port.switch {
            if let Some(r) = self.first_segment.get_mut(p.flow as usize) {
                if p.kind == Kind::Data && p.seq == 0 && r.queue_ahead.is_some() && r.wait.is_none() {
                    r.wait = Some(Nanos(now - p.t_enq));
                } else if p.kind == Kind::Syn && r.syn_wait.is_none() {
                    r.syn_wait = Some(Nanos(now - p.t_enq));
                }
            }
        }
        port.busy = true;
        let ser = port.ser(p.wire as u64);
        let delay = port.delay;
        let host_data = !port.switch && p.kind == Kind::Data && p.hop == 0;
        let (flow, wire) = (p.flow, p.wire as u32);
        self.push_ev(now + ser, EvKind::TxDone, link as u32);
        self.push_ev(now + ser + delay, EvKind::Arrive, i);
        if host_data {
            let f = &mut self.flows[flow as usize];
            f.nic_bytes = f.nic_bytes.saturating_sub(wire);
            if f.state == St::Open {
                self.try_send(flow);
            }
        }
    }

    /// A packet reached the far end of its current link.
    fn arrive(&mut self, i: u32) {
        let p = &mut self.pkts[i as usize];
        p.hop += 1;
        let p = *p;
        if (p.hop as usize) < self.path_of(&p).links().len() {
            self.enqueue(i);
            return;
        }
        self.delivered += 1;
        self.free.push(i);
        match p.kind {
            Kind::Syn => self.send(p.flow, Kind::SynAck, 0, false),
            Kind::Data => self.receive_data(p.flow, p.seq, p.ce),
            Kind::SynAck | Kind::Ack | Kind::AppAck => self.receive_ack(p.flow, p.kind, p.seq, p.ece),
        }
    }

    fn start_flow(&mut self, flow: u32) {
        let now = self.now;
        let f = &mut self.flows[flow as usize];
        f.state = St::SynSent;
        f.syn_time = now;
        let d = now + f.rto;
        self.open_flows += 1;
        self.send(flow, Kind::Syn, 0, false);
        self.arm(flow, d);
    }

    fn arm(&mut self, flow: u32, deadline: u64) {
        let f = &mut self.flows[flow as usize];
        f.deadline = deadline;
        if f.timer_at == 0 || deadline < f.timer_at {
            f.timer_at = deadline;
            self.push_ev(deadline, EvKind::Timer, flow);
        }
    }

    fn timer(&mut self, flow: u32) {
        let now = self.now;
        let f = &mut self.flows[flow as usize];
        if f.timer_at != now {
            return; // superseded by an earlier timer event
        }
        f.timer_at = 0;
        if f.deadline == 0 || f.state == St::Done {
            return;
        }
        if f.deadline > now {
            let d = f.deadline;
            self.arm(flow, d);
            return;
        }
        // Retransmission timeout.
        self.timeouts += 1;
        f.ssthresh = loss_ssthresh(f, self.cca[f.class as usize]);
        f.cwnd = 1.0;
        // RFC 6582 §4 / Linux's high_seq: no fast retransmit until everything sent before the
        // timeout is acknowledged, and no ECN reduction for that window either (Linux's
        // tcp_enter_cwr acts only in the Open and Disorder states).
        f.recover = f.recover.max(f.nxt);
        f.cwr_end = f.cwr_end.max(f.nxt);
        f.infl = 0.0;
        f.nxt = f.una;
        f.in_recovery = false;
        f.dupacks = 0;
        f.rtt_time = 0;
        f.rto = (f.rto * 2).min(MAX_RTO);
        let d = now + f.rto;
        if f.state == St::SynSent {
            self.send(flow, Kind::Syn, 0, false);
        } else {
            self.try_send(flow);
        }
        self.arm(flow, d);
    }

    fn receive_data(&mut self, flow: u32, seq: u32, ce: bool) {
        let f = &mut self.flows[flow as usize];
        if seq == f.rcv_nxt {
            f.rcv_nxt += 1;
            while f.rcv_nxt < f.n && !f.ooo.is_empty() {
                let (w, b) = ((f.rcv_nxt / 64) as usize, f.rcv_nxt % 64);
                if f.ooo[w] & (1 << b) == 0 {
                    break;
                }
                f.ooo[w] &= !(1 << b);
                f.rcv_nxt += 1;
            }
        } else if seq > f.rcv_nxt && seq < f.n {
            if f.ooo.is_empty() {
                f.ooo = vec![0; (f.n as usize).div_ceil(64)];
            }
            f.ooo[(seq / 64) as usize] |= 1 << (seq % 64);
        }
        let (ack, kind) = if f.rcv_nxt >= f.n {
            (f.n, Kind::AppAck)
        } else {
            (f.rcv_nxt, Kind::Ack)
        };
        self.send(flow, kind, ack, ce);
    }

    fn receive_ack(&mut self, flow: u32, kind: Kind, ack: u32, ece: bool) {
        let now = self.now;
        let g = self.opts.dctcp_g;
        let min_rto = self.opts.min_rto.0;
        let f = &mut self.flows[flow as usize];
        let cca = self.cca[f.class as usize];
        if kind == Kind::SynAck {
            if f.state == St::SynSent {
                f.state = St::Open;
                if f.rto == self.opts.initial_rto.0 {
                    rtt_sample(f, now - f.syn_time, min_rto);
                }
                f.win_end = 0;
                self.try_send(flow);
                self.rearm(flow);
            }
            return;
        }
        if f.state != St::Open {
            return;
        }
        let advanced = ack > f.una;
        let mut fast_retransmit = false;
        if ack > f.una {
            let newly = ack - f.una;
            // Congestion-window validation (RFC 7661, Linux's tcp_is_cwnd_limited): the window
            // only grows while it is what limits the sender, not the NIC or the application.
            let in_flight = (f.nxt - f.una) as f64;
            let cwnd_limited = if f.cwnd < f.ssthresh {
                f.cwnd < 2.0 * in_flight
            } else {
                in_flight + 1.0 >= f.cwnd
            };
            f.acked_win += newly;
            if ece {
                f.marked_win += newly;
            }
            if f.rtt_time != 0 && ack > f.rtt_seq {
                let s = now - f.rtt_time;
                f.rtt_time = 0;
                rtt_sample(f, s, min_rto);
            }
            f.una = ack;
            if f.nxt < f.una {
                f.nxt = f.una;
            }
            f.dupacks = 0;
            if f.una > f.win_end {
                let frac = if f.acked_win > 0 {
                    f.marked_win as f64 / f.acked_win as f64
                } else {
                    0.0
                };
                f.alpha = (1.0 - g) * f.alpha + g * frac;
                f.acked_win = 0;
                f.marked_win = 0;
                f.win_end = f.nxt;
            }
            if f.in_recovery {
                if f.una >= f.recover {
                    f.in_recovery = false;
                    f.cwnd = f.ssthresh;
                    f.infl = 0.0;
                } else if f.una < f.n {
                    // Partial ACK (RFC 6582 §3.2 step 5): deflate the window by the data it
                    // acknowledges, add one segment back, retransmit the next hole.
                    f.infl = f.infl - newly as f64 + 1.0;
                    let u = f.una;
                    f.rtt_time = 0;
                    self.send(flow, Kind::Data, u, false);
                }
            } else if cwnd_limited && f.una >= f.hold_end {
                // The window grows only outside the round after an ECN reduction (Linux's CWR
                // state: tcp_cong_control reduces there and never calls tcp_cong_avoid; ns-3's
                // CA_CWR likewise skips IncreaseWindow).
                let f = &mut self.flows[flow as usize];
                if f.cwnd < f.ssthresh {
                    f.cwnd += newly as f64;
                } else if cca == Cca::Cubic {
                    f.cwnd = f.cubic.on_ack(f.cwnd, newly as f64, now, f.srtt);
                } else {
                    f.cwnd += newly as f64 / f.cwnd;
                }
            }
        } else if ack == f.una && f.nxt > f.una && kind == Kind::Ack {
            f.dupacks += 1;
            if ece {
                f.marked_win += 1;
            }
            f.acked_win += 1;
            if f.in_recovery {
                // Every further duplicate ACK is a segment that left the network (RFC 6582 §3.2
                // step 4: inflate the window by one).
                f.infl += 1.0;
            } else if f.dupacks == 3 && f.una >= f.recover {
                // Fast retransmit, unless this is still the window of an earlier loss (RFC 6582
                // §4); ECE in the window being recovered reduces no further.
                f.ssthresh = loss_ssthresh(f, cca);
                f.cwnd = f.ssthresh;
                f.in_recovery = true;
                f.recover = f.nxt;
                f.infl = 3.0;
                f.cwr_end = f.cwr_end.max(f.nxt);
                f.rtt_time = 0;
                fast_retransmit = true;
                self.fast_retransmits += 1;
                let u = f.una;
                self.send(flow, Kind::Data, u, false);
            }
        }
        let f = &mut self.flows[flow as usize];
        debug_assert!(!ece || cca.ecn(), "a packet of a non-ECN class was marked");
        if ece && f.una >= f.cwr_end {
            f.cwnd = (f.cwnd * (1.0 - f.alpha / 2.0)).max(2.0);
            f.ssthresh = f.cwnd;
            f.cwr_end = f.nxt.max(f.una + 1);
            f.hold_end = f.cwr_end;
        }
        if self.trace_flow == Some(flow) {
            self.trace.push(CwndSample {
                t: Nanos(now),
                cwnd: f.cwnd,
                ssthresh: f.ssthresh,
                in_recovery: f.in_recovery,
            });
        }
        let f = &mut self.flows[flow as usize];
        if kind == Kind::AppAck && ack >= f.n {
            f.state = St::Done;
            f.done_at = now;
            f.deadline = 0;
            f.ooo = Vec::new();
            self.open_flows -= 1;
            return;
        }
        self.try_send(flow);
        let f = &self.flows[flow as usize];
        // The retransmission timer restarts when new data is acknowledged or the head is fast
        // retransmitted (Linux: tcp_rearm_rto, tcp_xmit_retransmit_queue), not on a duplicate ACK.
        if advanced || fast_retransmit || f.deadline == 0 {
            self.rearm(flow);
        }
    }

    fn rearm(&mut self, flow: u32) {
        let f = &self.flows[flow as usize];
        if f.una >= f.nxt {
            self.flows[flow as usize].deadline = 0;
        } else {
            let d = self.now + f.rto;
            self.arm(flow, d);
        }
    }

    fn try_send(&mut self, flow: u32) {
        let now = self.now;
        loop {
            let tsq = self.tsq[self.flows[flow as usize].fwd.links()[0] as usize];
            let f = &mut self.flows[flow as usize];
            let wnd = if f.in_recovery { f.cwnd + f.infl } else { f.cwnd }.max(1.0) as u32;
            if f.nxt >= f.n || f.nxt - f.una >= wnd || f.nic_bytes >= tsq {
                break;
            }
            let s = f.nxt;
            f.nxt += 1;
            if f.rtt_time == 0 {
                f.rtt_time = now;
                f.rtt_seq = s;
            }
            self.send(flow, Kind::Data, s, false);
        }
    }
}

/// The slow-start threshold after a loss (fast retransmit or timeout): half the window for
/// NewReno (RFC 5681) and DCTCP (Linux's `dctcp_ssthresh` on loss), β·cwnd for CUBIC.
fn loss_ssthresh(f: &mut Fl, cca: Cca) -> f64 {
    match cca {
        Cca::Cubic => f.cubic.on_loss(f.cwnd),
        Cca::Dctcp | Cca::NewReno => (f.cwnd / 2.0).max(2.0),
    }
}

/// RFC 6298 smoothing with Linux's floor: rto = srtt + max(4·rttvar, min_rto).
fn rtt_sample(f: &mut Fl, s: u64, min_rto: u64) {
    if f.srtt == 0 {
        f.srtt = s.max(1);
        f.rttvar = s / 2;
    } else {
        let d = f.srtt.abs_diff(s);
        f.rttvar = (3 * f.rttvar + d) / 4;
        f.srtt = (7 * f.srtt + s) / 8;
    }
    f.rto = (f.srtt + (4 * f.rttvar).max(min_rto)).min(MAX_RTO);
}
