//! A round-level fluid replay of the switch ports, for asking whether a deterministic replay of
//! the workload's window bursts tells which flows meet a queue peak in pktsim.
//!
//! Every flow sends its SYN at its start and its data in rounds: one window per round, the next
//! round one base RTT plus the waits its first byte found along the path after the round's
//! start (ACK clocking). The window starts at initcwnd and doubles per round until a round finds
//! a class queue above K; then DCTCP: α ← (1 − g)·α + g·F per round (F = 1 if the round found a
//! queue above K, g = 1/16, α starts at 1), a marked round cuts the window by α/2, an unmarked
//! one adds a segment. A sender's NIC does not serialise its rounds (with it the dev CV of
//! `docs/results/model-validation/replay.md` is no better and the uncorrected p99 worse). A round
//! reaches each switch port of its path as a pulse at the rate of the link feeding that port,
//! after the propagation and store-and-forward of the links before it plus the waits it found
//! upstream. Every port serves its class queues as fluid GPS by weight (work-conserving); a
//! round's wait at a port is the queue it finds there over its class's service rate at that
//! moment. Losses, the ACK path and other congestion controls are not modelled.

use anyhow::{Context, Result};
use polyphony_model::{ModelInput, HEADER_BYTES, MSS};
use polyphony_spec::{FlowOutcome, NetworkConfig};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One flow as the replay needs it.
#[derive(Debug, Clone, Copy)]
pub struct Flow {
    /// Start (ns).
    pub start: f64,
    /// Payload bytes.
    pub size: u64,
    /// Sending host.
    pub src: u32,
    /// Class index.
    pub class: usize,
    /// Base RTT (ns).
    pub rtt: f64,
    /// Initial window (segments).
    pub init_cwnd: u32,
    /// ECN threshold (bytes).
    pub k: f64,
    /// The switch ports of the path: (port, offset of the first byte's arrival after it leaves
    /// the NIC with no queue on the way (ns), rate of the link feeding the port (bytes/ns)).
    pub hops: [(u32, f64, f64); 3],
    /// How many of `hops` are used.
    pub n_hops: u8,
}

/// What the replay gives a flow.
#[derive(Debug, Clone, Copy, Default)]
pub struct Charge {
    /// Class queue ahead of the first data round (bytes).
    pub first: f64,
    /// Class queue ahead of the SYN (bytes).
    pub syn: f64,
    /// Σ over the SYN and every round of the wait found (ns).
    pub wait: f64,
    /// Start to the last byte's departure from the last switch port (ns).
    pub fct: f64,
    /// Rounds sent in slow start and after it.
    pub rounds: [u32; 2],
}

#[derive(Clone, Copy)]
enum Ev {
    /// A round is ready to send (window known).
    Round(usize),
    /// A pulse starts arriving at hop `.1` of flow `.0`: wire bytes, 0 SYN / 1 first data / 2 later.
    Pulse(usize, u8, f64, u8),
    /// A pulse of class `.1` at port `.0` ends, arriving at rate `.2`.
    End(u32, usize, f64),
}

/// Most classes a replay serves.
pub const MAX_CLASSES: usize = 8;

/// Fluid GPS state of one switch port.
struct Port {
    rate: f64,
    n: usize,
    weight: [f64; MAX_CLASSES],
    q: [f64; MAX_CLASSES],
    input: [f64; MAX_CLASSES],
    now: f64,
}

// A class index selects its weight, queue, input and service at once.
#[allow(clippy::needless_range_loop)]
impl Port {
    /// Service rate of each class now (bytes/ns): water-filling by weight over the classes'
    /// demands (unbounded while backlogged, else their input rate).
    fn service(&self) -> [f64; MAX_CLASSES] {
        let mut s = [0.0; MAX_CLASSES];
        let mut open: u32 = 0;
        for c in 0..self.n {
            if self.q[c] > 0.0 || self.input[c] > 0.0 {
                open |= 1 << c;
            }
        }
        let mut left = self.rate;
        while open != 0 && left > 1e-12 {
            let mut wsum = 0.0;
            for c in 0..self.n {
                if open & (1 << c) != 0 {
                    wsum += self.weight[c];
                }
            }
            let mut capped: u32 = 0;
            for c in 0..self.n {
                if open & (1 << c) != 0 && self.q[c] <= 0.0 && self.input[c] <= left * self.weight[c] / wsum {
                    capped |= 1 << c;
                }
            }
            if capped == 0 {
                for c in 0..self.n {
                    if open & (1 << c) != 0 {
                        s[c] = left * self.weight[c] / wsum;
                    }
                }
                break;
            }
            for c in 0..self.n {
                if capped & (1 << c) != 0 {
                    s[c] = self.input[c];
                    left -= self.input[c];
                }
            }
            open &= !capped;
        }
        s
    }

    fn advance(&mut self, t: f64) {
        if t <= self.now {
            return;
        }
        let idle = self.q[..self.n].iter().all(|&q| q == 0.0) && self.input[..self.n].iter().sum::<f64>() <= self.rate;
        if idle {
            self.now = t;
            return;
        }
        while self.now < t {
            let s = self.service();
            let mut step = t - self.now;
            for c in 0..self.n {
                let d = self.input[c] - s[c];
                if self.q[c] > 0.0 && d < 0.0 {
                    step = step.min(self.q[c] / -d);
                }
            }
            for c in 0..self.n {
                self.q[c] = (self.q[c] + (self.input[c] - s[c]) * step).max(0.0);
                if self.q[c] < 1e-6 {
                    self.q[c] = 0.0;
                }
            }
            self.now += step.max(1e-9);
        }
    }
}

struct St {
    round_start: f64,
    round_wait: f64,
    marked: bool,
    w: f64,
    alpha: f64,
    slow_start: bool,
    sent: f64,
    segs: f64,
}

/// Replays `flows` at switch ports of rates `port_bpn` (bytes/ns), at most [`MAX_CLASSES`]
/// classes weighted `weight`.
///
/// With `ack_clock` false a round follows the last one's start by one base RTT whatever it found
/// on the way (the rounds' times then depend on the windows alone).
pub fn replay(flows: &[Flow], port_bpn: &[f64], weight: &[f64], ack_clock: bool) -> Vec<Charge> {
    let clock = if ack_clock { 1.0 } else { 0.0 };
    let wire = (MSS + HEADER_BYTES) as f64;
    let t0 = flows.iter().map(|f| f.start).fold(f64::INFINITY, f64::min).max(0.0);
    let n = weight.len().min(MAX_CLASSES);
    let mut w = [0.0; MAX_CLASSES];
    w[..n].copy_from_slice(&weight[..n]);
    let mut ports: Vec<Port> = port_bpn
        .iter()
        .map(|&rate| Port {
            rate,
            n,
            weight: w,
            q: [0.0; MAX_CLASSES],
            input: [0.0; MAX_CLASSES],
            now: t0,
        })
        .collect();
    let mut st: Vec<St> = flows
        .iter()
        .map(|f| St {
            w: f.init_cwnd.max(1) as f64,
            alpha: 1.0,
            slow_start: true,
            sent: 0.0,
            segs: f.size.div_ceil(MSS).max(1) as f64,
            round_start: f.start,
            round_wait: 0.0,
            marked: false,
        })
        .collect();
    let mut out = vec![Charge::default(); flows.len()];
    let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut evs: Vec<(f64, Ev)> = Vec::new();
    let push = |heap: &mut BinaryHeap<Reverse<(u64, u64)>>, evs: &mut Vec<(f64, Ev)>, t: f64, e: Ev| {
        // Times are non-negative; their bit patterns order like the values.
        heap.push(Reverse((t.max(0.0).to_bits(), evs.len() as u64)));
        evs.push((t, e));
    };
    for (i, f) in flows.iter().enumerate() {
        if f.n_hops > 0 {
            push(
                &mut heap,
                &mut evs,
                f.start + f.hops[0].1,
                Ev::Pulse(i, 0, HEADER_BYTES as f64, 0),
            );
        }
    }
    while let Some(Reverse((_, id))) = heap.pop() {
        let (t, e) = evs[id as usize];
        match e {
            Ev::Round(i) => {
                let f = &flows[i];
                let s = &mut st[i];
                let n = s.w.floor().max(1.0).min(s.segs - s.sent);
                s.sent += n;
                s.round_start = t;
                s.round_wait = 0.0;
                s.marked = false;
                let kind = if s.sent == n { 1 } else { 2 };
                out[i].rounds[usize::from(!s.slow_start)] += 1;
                push(&mut heap, &mut evs, t + f.hops[0].1, Ev::Pulse(i, 0, n * wire, kind));
            }
            Ev::Pulse(i, h, bytes, kind) => {
                let f = &flows[i];
                let c = f.class;
                let (pid, off, up) = f.hops[h as usize];
                let port = &mut ports[pid as usize];
                port.advance(t);
                let q = port.q[c];
                port.input[c] += up;
                let svc = port.service()[c].max(1e-12);
                let wait = q / svc;
                let o = &mut out[i];
                o.wait += wait;
                let s = &mut st[i];
                s.round_wait += wait;
                s.marked |= q > f.k;
                if h == 0 {
                    match kind {
                        0 => o.syn = q,
                        1 => o.first = q,
                        _ => {}
                    }
                }
                push(&mut heap, &mut evs, t + bytes / up, Ev::End(pid, c, up));
                if h + 1 < f.n_hops {
                    let next = f.hops[h as usize + 1].1 - off;
                    push(&mut heap, &mut evs, t + wait + next, Ev::Pulse(i, h + 1, bytes, kind));
                    continue;
                }
                if kind == 0 {
                    // SYN-ACK back one RTT after the SYN's waits; the first round follows.
                    push(
                        &mut heap,
                        &mut evs,
                        f.start + f.rtt + clock * s.round_wait,
                        Ev::Round(i),
                    );
                    continue;
                }
                if s.sent >= s.segs {
                    o.fct = t + wait + bytes / svc.min(up) - f.start;
                    continue;
                }
                let marked = s.marked;
                if marked || !s.slow_start {
                    s.alpha = (1.0 - 1.0 / 16.0) * s.alpha + if marked { 1.0 / 16.0 } else { 0.0 };
                }
                if marked {
                    s.w = (s.w * (1.0 - s.alpha / 2.0)).max(1.0);
                    s.slow_start = false;
                } else if s.slow_start {
                    s.w *= 2.0;
                } else {
                    s.w += 1.0;
                }
                push(
                    &mut heap,
                    &mut evs,
                    s.round_start + f.rtt + clock * s.round_wait,
                    Ev::Round(i),
                );
            }
            Ev::End(pid, c, up) => {
                let port = &mut ports[pid as usize];
                port.advance(t);
                port.input[c] = (port.input[c] - up).max(0.0);
            }
        }
    }
    out
}

/// What [`replay`] gives `f` with no other flow: no queue anywhere, so no mark, slow start
/// throughout, rounds one RTT apart.
pub fn alone(f: &Flow, port_bpn: &[f64]) -> f64 {
    let wire = (MSS + HEADER_BYTES) as f64;
    let segs = f.size.div_ceil(MSS).max(1) as f64;
    let (pid, off, up) = f.hops[f.n_hops.max(1) as usize - 1];
    let last = up.min(port_bpn.get(pid as usize).copied().unwrap_or(up));
    let (mut w, mut sent, mut t) = (f.init_cwnd.max(1) as f64, 0.0, f.start + f.rtt);
    loop {
        let n = w.floor().max(1.0).min(segs - sent);
        sent += n;
        if sent >= segs {
            return t + off + n * wire / last - f.start;
        }
        w *= 2.0;
        t += f.rtt;
    }
}

/// The replay of `input` under `cfg` (workload order) and each flow replayed alone (`None`
/// for an empty workload). More than [`MAX_CLASSES`] classes is an error.
pub fn replay_input(
    input: &ModelInput,
    cfg: &NetworkConfig,
    ack_clock: bool,
) -> Result<Option<(Vec<Charge>, Vec<f64>)>> {
    if input.classes.len() > MAX_CLASSES {
        anyhow::bail!(
            "the replay serves at most {MAX_CLASSES} classes, the input has {}",
            input.classes.len()
        );
    }
    let topo = input.topology.as_ref().clone().with_ecmp_salt(input.seed);
    if input.workload.flows.is_empty() {
        return Ok(None);
    }
    let wire = (MSS + HEADER_BYTES) as f64;
    let links = topo.links();
    // Switch ports: the links leaving a switch, numbered densely.
    let mut port_of = vec![u32::MAX; links.len()];
    let mut port_bpn = Vec::new();
    for (l, x) in links.iter().enumerate() {
        if !topo.is_host(x.from) {
            port_of[l] = port_bpn.len() as u32;
            port_bpn.push(x.rate.0 as f64 / 8e9);
        }
    }
    let flows: Vec<Flow> = input
        .workload
        .flows
        .iter()
        .map(|f| -> Result<Flow> {
            let cc = cfg.class(f.dscp).context("a flow's class is not configured")?;
            let path = topo.route(f.src, f.dst, f.id.0);
            let ls = path.links();
            let mut hops = [(0u32, 0.0f64, 0.0f64); 3];
            let mut n = 0;
            let mut off = 0.0;
            for w in ls.windows(2) {
                let (a, b) = (links[w[0] as usize], w[1] as usize);
                let up = a.rate.0 as f64 / 8e9;
                off += a.delay.0 as f64 + wire / up;
                if port_of[b] != u32::MAX && n < 3 {
                    hops[n] = (port_of[b], off, up);
                    n += 1;
                }
            }
            Ok(Flow {
                start: f.start.0 as f64,
                size: f.size.0,
                src: f.src.0,
                class: input.classes.iter().position(|&d| d == f.dscp).unwrap_or(0),
                rtt: topo.base_rtt(f.src, f.dst).0 as f64,
                init_cwnd: cc.init_cwnd.0,
                k: cc.ecn_threshold.0 as f64,
                hops,
                n_hops: n as u8,
            })
        })
        .collect::<Result<_>>()?;
    let weights: Vec<f64> = input
        .classes
        .iter()
        .map(|&d| cfg.class(d).map_or(1.0, |c| c.weight))
        .collect();
    let idle: Vec<f64> = flows.iter().map(|f| alone(f, &port_bpn)).collect();
    Ok(Some((replay(&flows, &port_bpn, &weights, ack_clock), idle)))
}

/// Per class of `input` (its order), the p99 slowdown of the replay over the `measured` flows
/// (each flow's ideal FCT plus the replay's FCT over its replay alone; NaN for a class without
/// measured flows).
pub fn class_p99(
    input: &ModelInput,
    cfg: &NetworkConfig,
    measured: &[FlowOutcome],
    ack_clock: bool,
) -> Result<Option<Vec<f64>>> {
    let Some((all, idle)) = replay_input(input, cfg, ack_clock)? else {
        return Ok(None);
    };
    Ok(Some(
        input
            .classes
            .iter()
            .map(|&d| {
                let mut v: Vec<f64> = measured
                    .iter()
                    .filter(|f| f.dscp == d)
                    .map(|f| {
                        let i = f.id.0 as usize;
                        let ideal = f.ideal.0 as f64;
                        (ideal + all[i].fct - idle[i]).max(1.0) / ideal
                    })
                    .collect();
                v.sort_by(f64::total_cmp);
                polyphony_spec::percentile(&v, 0.99).unwrap_or(f64::NAN)
            })
            .collect(),
    ))
}
