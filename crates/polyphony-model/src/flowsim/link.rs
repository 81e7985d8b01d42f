//! One link of `flowsim`: weighted sharing across classes (GPS), processor sharing within a
//! class, plus the standing-queue and slow-start terms (see the parent module). Scratch
//! buffers are reused across links and calls.

use super::FlowSimOptions;
use crate::model::ClassParams;
use crate::topology::{HEADER_BYTES, MSS};
use polyphony_spec::BitsPerSec;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A flow as one link sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LinkFlow {
    pub flow: u32,
    pub start: f64,
    /// Wire bytes (payload and headers).
    pub work: f64,
    pub size: u64,
    pub class: u8,
    /// What the flow needs on this link when it has it to itself (ns): its wire bytes at the
    /// slower of this link and the flow's bottleneck. A flow cannot go faster than its
    /// bottleneck, so on a faster link (a fabric's uplinks) sharing costs it nothing until its
    /// share drops below that rate.
    pub idle: f64,
    /// The flow's base RTT (ns) on the first simulated link of its path, 0 on the others: a
    /// slow-start round costs one RTT however many links the flow crosses.
    pub rtt: f64,
}

struct ClassState {
    n: u32,
    /// Service every active flow of the class has received since the class's epoch, in bytes.
    s: f64,
    sum_tags: f64,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

pub(crate) struct LinkSim {
    params: Vec<ClassParams>,
    opts: FlowSimOptions,
    cls: Vec<ClassState>,
}

impl LinkSim {
    pub fn new(params: &[ClassParams], opts: FlowSimOptions) -> LinkSim {
        LinkSim {
            params: params.to_vec(),
            opts,
            cls: params
                .iter()
                .map(|_| ClassState {
                    n: 0,
                    s: 0.0,
                    sum_tags: 0.0,
                    heap: BinaryHeap::new(),
                })
                .collect(),
        }
    }

    /// Simulates `flows` (sorted by start) on a link of `rate`; adds each flow's delay beyond an
    /// idle link to `extra[flow]`. Returns the number of events.
    pub fn run(&mut self, rate: BitsPerSec, flows: &[LinkFlow], extra: &mut [f64]) -> u64 {
        let r = rate.0 as f64 / 8e9; // bytes per ns
        for c in &mut self.cls {
            c.n = 0;
            c.s = 0.0;
            c.sum_tags = 0.0;
            c.heap.clear();
        }
        let mut w_active = 0.0;
        let mut t = 0.0f64;
        let mut next = 0usize;
        let mut events = 0u64;
        let nc = self.cls.len();
        // Offered load of each class on this link (bytes per ns over the flows' span).
        let span = flows.last().map_or(1.0, |f| f.start) - flows.first().map_or(0.0, |f| f.start);
        let mut offered = vec![0.0f64; nc];
        for f in flows {
            offered[f.class as usize] += f.work;
        }
        let total: f64 = offered.iter().sum();
        let avail: Vec<f64> = offered
            .iter()
            .map(|o| (r - (total - o) / span.max(1.0)).max(r * 0.01))
            .collect();
        loop {
            // Earliest completion among active classes.
            let mut best = f64::INFINITY;
            let mut best_c = usize::MAX;
            for (ci, c) in self.cls.iter().enumerate() {
                if c.n == 0 {
                    continue;
                }
                if let Some(Reverse((tag, _))) = c.heap.peek() {
                    let rate_c = r * self.params[ci].weight / w_active;
                    let dt = (f64::from_bits(*tag) - c.s).max(0.0) * c.n as f64 / rate_c;
                    if t + dt < best {
                        best = t + dt;
                        best_c = ci;
                    }
                }
            }
            let ta = flows.get(next).map_or(f64::INFINITY, |f| f.start);
            if ta == f64::INFINITY && best_c == usize::MAX {
                break;
            }
            let tn = if ta <= best { ta } else { best };
            // Advance every active class's virtual time.
            let dt = (tn - t).max(0.0);
            if dt > 0.0 {
                for ci in 0..nc {
                    let c = &mut self.cls[ci];
                    if c.n > 0 {
                        c.s += r * self.params[ci].weight / w_active / c.n as f64 * dt;
                    }
                }
            }
            t = tn;
            events += 1;
            if ta <= best {
                let f = flows[next];
                next += 1;
                let ci = f.class as usize;
                let p = self.params[ci];
                let c = &mut self.cls[ci];
                let w_after = if c.n == 0 { w_active + p.weight } else { w_active };
                let inst = r * p.weight / w_after;
                // The queue drains at the class's share now, or faster once the other classes'
                // bursts pass: the geometric mean of the instantaneous share and the capacity
                // the other classes leave on average.
                let rate_c = (inst * avail[ci].max(inst)).sqrt();
                let mtu = (MSS + HEADER_BYTES) as f64;
                let init = p.init_cwnd.max(1) as f64;
                let mut wait = 0.0;
                if self.opts.standing_queue && c.n > 0 {
                    let remaining = (c.sum_tags - c.n as f64 * c.s).max(0.0);
                    let burst = c.n as f64 * init * mtu;
                    let q = remaining.min((self.opts.queue_factor * p.ecn_k as f64).max(burst));
                    wait = q / rate_c;
                }
                let mut rounds = 1.0;
                if self.opts.slow_start {
                    let segs = f.size.div_ceil(MSS).max(1) as f64;
                    let k_fin = (segs / init + 1.0).log2().ceil().max(1.0);
                    let k_lim = ((p.ecn_k as f64 / (init * mtu)).max(1.0)).log2().ceil() + 1.0;
                    rounds = k_fin.min(k_lim);
                }
                extra[f.flow as usize] += wait * rounds + (rounds - 1.0) * f.rtt;
                let tag = c.s + f.work;
                c.sum_tags += tag;
                c.heap.push(Reverse((tag.to_bits(), (next - 1) as u32)));
                if c.n == 0 {
                    w_active += p.weight;
                }
                c.n += 1;
            } else {
                let c = &mut self.cls[best_c];
                if let Some(Reverse((tag, idx))) = c.heap.pop() {
                    c.sum_tags -= f64::from_bits(tag);
                    c.n -= 1;
                    let lf = &flows[idx as usize];
                    extra[lf.flow as usize] += (t - lf.start - lf.idle).max(0.0);
                }
                if c.n == 0 {
                    w_active -= self.params[best_c].weight;
                    let c = &mut self.cls[best_c];
                    c.s = 0.0;
                    c.sum_tags = 0.0;
                    if w_active < 1e-12 {
                        w_active = 0.0;
                    }
                }
            }
        }
        events
    }
}
