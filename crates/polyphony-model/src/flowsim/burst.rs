//! Synchronized-burst loss of partition-aggregate queries (incast).
//!
//! The responses of one query start together by construction, so their first windows reach
//! the requester's port at once: fan-in × min(initcwnd, response) segments, arriving at the
//! senders' NIC rates while the class queue drains at its service rate. What does not fit in
//! the class's buffer (its own `buffer` limit, else the port buffer) is dropped. flowsim's
//! fluid queues have no drops, so for the flows of a query this module replays the query's
//! rounds packet by packet at that one port — the responses' windows in flow order at each
//! sender's NIC, merged by arrival time, each packet accepted while the queue has room — and
//! adds to each response the time the losses cost it:
//!
//! * a response whose losses are followed by at least three segments that arrive (in the
//!   same window, or sent in the next round as the segments before the first loss are
//!   acknowledged) fast-retransmits and recovers one lost segment per round (NewReno);
//! * otherwise it waits for a retransmission timeout — pktsim's: srtt + max(4·rttvar, min RTO)
//!   after the handshake's sample (srtt = the base RTT, rttvar = half of it), doubled on every
//!   further timeout — then restarts from a window of one segment (slow start to half the
//!   window it lost in).
//!
//! The added delay is the replay's completion time minus the same replay's completion with an
//! unlimited buffer, so the rounds and queueing flowsim already models are not counted twice.
//! Between rounds the queue is taken as drained; ECN marks, other classes' packets and the
//! loss of a SYN (pktsim's initial RTO) are not modelled. Flows without a query are untouched.

use super::FlowSimOptions;
use crate::model::ClassParams;
use crate::topology::{HEADER_BYTES, MSS};

/// One response of a query as the replay needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Response {
    /// Index in the workload.
    pub flow: u32,
    /// Segments of the response.
    pub segs: u32,
    /// Sending host (responses of one host share its NIC in flow order).
    pub host: u32,
    /// The sender NIC's rate (bit/s).
    pub nic_bps: f64,
    /// Base RTT (ns).
    pub rtt: f64,
}

/// The responses of one query.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    /// The class index of its responses.
    pub class: u8,
    /// The rate of the port where they converge, the last link to the requester (bit/s).
    pub port_bps: f64,
    /// In workload order.
    pub responses: Vec<Response>,
}

const SEG_WIRE: f64 = (MSS + HEADER_BYTES) as f64;

#[derive(Debug, Clone)]
struct St {
    delivered: u32,
    cwnd: f64,
    ssthresh: f64,
    rto: f64,
    ready: f64,
    done: f64,
    /// When (after its round's start) each delivered segment of the last round left the port:
    /// the acknowledgements that clock the next round (empty: the window leaves as a burst).
    pace: Vec<f64>,
}

/// Each response's added delay (ns) from losses at its query's port, in `q.responses` order.
pub(crate) fn loss_delays(q: &Query, params: &[ClassParams], port_buffer: u64, opts: &FlowSimOptions) -> Vec<f64> {
    let p = &params[q.class as usize];
    let buffer = p.buffer.unwrap_or(port_buffer) as f64;
    let wsum: f64 = params.iter().map(|c| c.weight).sum();
    // The class's guaranteed share of the port (its weight among the classes'): on the
    // development seeds this gave a smaller p99 QCT error than the full port rate (55.6 vs
    // 59.9 %), the other classes' queues being often backlogged at a burst.
    let service = q.port_bps * (p.weight / wsum.max(1e-12)).min(1.0);
    // The replay's queue never holds more than the whole query: no loss.
    let total: f64 = q.responses.iter().map(|r| r.segs as f64 * SEG_WIRE).sum();
    if total <= buffer {
        return vec![0.0; q.responses.len()];
    }
    let lossy = replay(q, p, buffer, service, opts);
    if lossy.iter().all(|&(_, lost)| !lost) {
        return vec![0.0; q.responses.len()];
    }
    let ideal = replay(q, p, f64::INFINITY, service, opts);
    lossy
        .iter()
        .zip(&ideal)
        .map(|(&(a, _), &(b, _))| (a - b).max(0.0))
        .collect()
}

/// Completion time (ns after the query's start) of each response and whether it lost a
/// segment, replaying the rounds at the port with `buffer` bytes served at `service` bit/s.
fn replay(q: &Query, p: &ClassParams, buffer: f64, service: f64, opts: &FlowSimOptions) -> Vec<(f64, bool)> {
    let min_rto = opts.packet.min_rto.0 as f64;
    let mut st: Vec<St> = q
        .responses
        .iter()
        .map(|r| St {
            delivered: 0,
            cwnd: p.init_cwnd.max(1) as f64,
            ssthresh: f64::INFINITY,
            // pktsim's RTO after the handshake's RTT sample s: s + max(4 · s/2, min RTO).
            rto: r.rtt + (2.0 * r.rtt).max(min_rto),
            ready: 0.0,
            done: f64::NAN,
            pace: Vec::new(),
        })
        .collect();
    let mut lost_any = vec![false; st.len()];
    // Per packet of a round: (arrival time, response index, position in its window).
    let mut arrivals: Vec<(f64, usize, u32)> = Vec::new();
    let mut fate: Vec<Vec<f64>> = vec![Vec::new(); st.len()];
    // Bounded: every round delivers at least one segment of some response or backs one off.
    for _ in 0..10_000 {
        let Some(t) = st.iter().filter(|s| s.done.is_nan()).map(|s| s.ready).reduce(f64::min) else {
            break;
        };
        let in_round: Vec<usize> = (0..st.len())
            .filter(|&j| st[j].done.is_nan() && st[j].ready <= t + 1.0)
            .collect();
        // A window after a round of acknowledgements leaves as they arrive (slow start: two
        // segments per acknowledged one); a first window, or one after a timeout, leaves as a
        // burst at the sender's NIC rate, the NIC sending its responses one after another.
        arrivals.clear();
        let mut nic_clock: Vec<(u32, f64)> = Vec::new();
        for &j in &in_round {
            let r = &q.responses[j];
            let s = &st[j];
            let w = (s.cwnd.floor() as u32).max(1).min(r.segs - s.delivered);
            if s.pace.is_empty() {
                let clock = match nic_clock.iter_mut().find(|(h, _)| *h == r.host) {
                    Some((_, c)) => c,
                    None => {
                        nic_clock.push((r.host, 0.0));
                        &mut nic_clock.last_mut().expect("just pushed").1
                    }
                };
                for k in 0..w {
                    *clock += SEG_WIRE * 8e9 / r.nic_bps;
                    arrivals.push((*clock, j, k));
                }
            } else {
                let per_ack = if s.cwnd < s.ssthresh { 2 } else { 1 };
                for k in 0..w {
                    let a = s.pace[((k / per_ack) as usize).min(s.pace.len() - 1)];
                    arrivals.push((a, j, k));
                }
            }
            fate[j].clear();
            fate[j].resize(w as usize, f64::NAN);
        }
        arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
        // The port: the class queue drains at `service`; a packet enters while it fits and
        // leaves when the queue ahead of it and itself have drained.
        let (mut queue, mut last) = (0.0f64, 0.0f64);
        for &(a, j, k) in &arrivals {
            queue = (queue - (a - last).max(0.0) * service / 8e9).max(0.0);
            last = last.max(a);
            if queue + SEG_WIRE <= buffer {
                queue += SEG_WIRE;
                fate[j][k as usize] = last + queue * 8e9 / service;
            }
        }
        for &j in &in_round {
            let r = &q.responses[j];
            let s = &mut st[j];
            let f = &fate[j];
            let w = f.len() as u32;
            let last_ack = f.iter().cloned().filter(|d| !d.is_nan()).fold(0.0, f64::max) + r.rtt;
            s.pace.clear();
            s.pace.extend(f.iter().cloned().filter(|d| !d.is_nan()));
            let Some(first_loss) = f.iter().position(|d| d.is_nan()) else {
                s.delivered += w;
                s.cwnd = if s.cwnd < s.ssthresh {
                    s.cwnd + w as f64
                } else {
                    s.cwnd + 1.0
                };
                s.ready = t + r.rtt;
                if s.delivered >= r.segs {
                    s.done = t + last_ack;
                }
                continue;
            };
            lost_any[j] = true;
            let lost = f.iter().filter(|d| d.is_nan()).count() as u32;
            let arrived_after = f[first_loss..].iter().filter(|d| !d.is_nan()).count() as u32;
            // Segments the acknowledgements of the first `first_loss` release (slow start: two
            // per acknowledged segment), beyond this window.
            let beyond = r.segs - s.delivered - w;
            let released = (2 * first_loss as u32).min(beyond);
            let loss_window = s.cwnd;
            s.ssthresh = (loss_window / 2.0).max(2.0);
            if arrived_after + released >= 3 {
                // Fast retransmit; NewReno recovers one hole per round.
                s.delivered += w;
                s.cwnd = s.ssthresh;
                s.ready = t + last_ack + r.rtt * lost as f64;
                if s.delivered >= r.segs {
                    s.done = s.ready;
                }
            } else {
                // Timeout, armed at the last acknowledgement that advanced (or at the send),
                // then go-back-N from one segment.
                s.delivered += w - lost;
                let armed = if first_loss > 0 { t + last_ack } else { t };
                s.ready = armed + s.rto;
                s.rto *= 2.0;
                s.cwnd = 1.0;
                s.pace.clear();
            }
        }
    }
    st.iter()
        .zip(lost_any)
        .map(|(s, l)| (if s.done.is_nan() { s.ready } else { s.done }, l))
        .collect()
}
