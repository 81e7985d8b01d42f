//! `flowsim`'s aggregate mode ([`FlowSimMode::Aggregate`](super::FlowSimMode)): per link, one
//! fluid backlog and one truncated-sum curve (`flowsim/curve.rs`) per class instead of one heap
//! entry per flow, so a flow costs O(classes + G) per link and configuration (G = 4 curve
//! points), and a batch of configurations shares everything that does not depend on the
//! configuration.
//!
//! Same per-link decomposition as the per-flow mode (the parent module): a flow's FCT is its
//! ideal FCT plus the delay each simulated link adds beyond an idle link, plus the
//! store-and-forward of its first packet on the links other than its bottleneck. On one link of
//! rate r (bytes/ns), flows in start order, per class c with weight w_c:
//!
//! * **Backlog (GPS across classes).** B_c = wire bytes of class c not yet served (fluid).
//!   Between two arrivals the link serves the backlogged classes by generalised processor
//!   sharing: class c drains at r·w_c / Σ_{B_j>0} w_j, and when a class empties its share goes
//!   to the others (solved exactly, one step per class that empties). An arrival adds its
//!   wire bytes s to B_c.
//! * **Flows (processor sharing within a class).** The class's truncated-sum curve
//!   T_c(x) = Σ_j min(x, rem_j) over its active flows is shifted by the per-flow service that
//!   the bytes GPS gave the class since its last arrival amount to (T_c(δ) = served), and an
//!   arrival adds min(x, s). From it: n_c = T_c's slope at 0 (the active flows) and T_c(s) (the
//!   bytes of the others a new flow of s bytes waits for under processor sharing).
//! * **Service rate.** ρ_c = √(i_c · max(a_c, i_c)): the geometric mean of the class's GPS share
//!   at the arrival, i_c = r·w_c / (w_c + Σ_{j≠c, B_j>0} w_j), and the capacity the other classes
//!   leave on average, a_c = r − (their offered bytes on the link / the span of arrivals) — as
//!   in the per-flow mode's standing-queue drain.
//! * **Sharing.** The flow's transfer under processor sharing takes (T_c(s) + s) / ρ_c; the
//!   term beyond an idle link is that minus s / r (never negative). Later arrivals are not
//!   looked ahead to.
//! * **K — standing queue.** Q_c = min(B_c, max(φ·K_c, n_c · initcwnd_c · MTU)), waited behind
//!   at ρ_c: DCTCP holds a backlogged class's queue near K (φ =
//!   [`FlowSimOptions::queue_factor`](super::FlowSimOptions::queue_factor)), and each active
//!   flow can put up to a full initial window into it (the per-flow mode's term).
//! * **initcwnd — slow-start rounds.** k = min(⌈log₂(n_seg / initcwnd + 1)⌉, rounds until the
//!   window passes K); each round waits behind Q_c once, each round after the first adds one
//!   base RTT.
//!
//! Per flow: extra = max(0, (T_c(s) + s)/ρ_c − s/r) + k·Q_c/ρ_c + (k − 1)·RTT.
//!
//! Shared across the batch (computed once per [`NetworkModel::evaluate`](crate::NetworkModel)
//! call): routes, ideal FCTs, the per-link flow lists with their segment counts, each class's
//! largest flow and offered load, which flows are measured. Per configuration only the pass
//! above runs, followed by a selection (not a sort) of each class's p50, p99 and p99.9
//! slowdown. Deterministic: no random draws.

use super::curve::{Curve, Top};
use super::{FlowSimOptions, Plan};
use crate::model::{ClassParams, ModelInput, MAX_CLASSES};
use crate::topology::{HEADER_BYTES, MSS};
use polyphony_spec::{ClassSli, SliVector};

const MTU: f64 = (MSS + HEADER_BYTES) as f64;

/// One flow as an aggregate link sees it.
#[derive(Debug, Clone, Copy)]
struct AggFlow {
    start: f64,
    /// Wire bytes.
    work: f64,
    /// Base RTT of the flow's path (ns).
    rtt: f64,
    flow: u32,
    segs: u32,
    class: u8,
}

/// The configuration-independent part of one link.
struct AggLink {
    /// Bytes per ns.
    r: f64,
    flows: Vec<AggFlow>,
    /// Per class: the capacity the other classes leave on average (bytes per ns).
    avail: [f64; MAX_CLASSES],
    /// Per class: the top of its truncated-sum curve (from its largest flow).
    top: [Top; MAX_CLASSES],
}

/// Everything about a batch that does not depend on the configuration.
pub(crate) struct AggPlan {
    links: Vec<AggLink>,
    classes: usize,
    /// Per flow: its class index, or `u8::MAX` when it is not measured.
    measured_class: Vec<u8>,
    /// Per flow: 1 / its ideal FCT (ns).
    inv_ideal: Vec<f64>,
    /// Per flow: start + ideal FCT (ns).
    ideal_end: Vec<f64>,
}

impl AggPlan {
    pub fn new(input: &ModelInput, p: &Plan) -> AggPlan {
        let classes = input.classes.len();
        let flows = &input.workload.flows;
        let measured_class = flows
            .iter()
            .zip(&p.flow_class)
            .map(|(f, &c)| if input.measured(f.start) { c } else { u8::MAX })
            .collect();
        let inv_ideal = p.ideals.iter().map(|i| 1.0 / i.0.max(1) as f64).collect();
        let ideal_end = flows
            .iter()
            .zip(&p.ideals)
            .map(|(f, i)| f.start.0 as f64 + i.0 as f64)
            .collect();
        let links = p
            .links
            .iter()
            .map(|(rate, lf)| {
                let r = rate.0 as f64 / 8e9;
                let mut max_size = [0.0f64; MAX_CLASSES];
                let mut offered = [0.0f64; MAX_CLASSES];
                let flows = lf
                    .iter()
                    .map(|f| {
                        let c = f.class as usize;
                        offered[c] += f.work;
                        max_size[c] = max_size[c].max(f.work);
                        AggFlow {
                            start: f.start,
                            work: f.work,
                            rtt: p.rtts[f.flow as usize] as f64,
                            flow: f.flow,
                            segs: f.size.div_ceil(MSS).clamp(1, u32::MAX as u64) as u32,
                            class: f.class,
                        }
                    })
                    .collect::<Vec<_>>();
                let span = match (lf.first(), lf.last()) {
                    (Some(a), Some(b)) => (b.start - a.start).max(1.0),
                    _ => 1.0,
                };
                let total: f64 = offered.iter().sum();
                let mut avail = [r; MAX_CLASSES];
                for (a, o) in avail.iter_mut().zip(&offered) {
                    *a = (r - (total - o) / span).max(r * 0.01);
                }
                AggLink {
                    r,
                    flows,
                    avail,
                    top: max_size.map(Top::new),
                }
            })
            .collect();
        AggPlan {
            links,
            classes,
            measured_class,
            inv_ideal,
            ideal_end,
        }
    }

    /// Flows that count towards the SLIs.
    pub fn measured_flows(&self) -> u64 {
        self.measured_class.iter().filter(|&&c| c != u8::MAX).count() as u64
    }
}

/// A configuration's knobs as the aggregate pass uses them.
struct Knobs {
    w: [f64; MAX_CLASSES],
    /// φ·K (bytes); 0 without the standing-queue term.
    phi_k: [f64; MAX_CLASSES],
    /// initcwnd · MTU (bytes); 0 without the standing-queue term.
    burst: [f64; MAX_CLASSES],
    init: [u32; MAX_CLASSES],
    /// Slow-start rounds after which the window passes K.
    k_lim: [u32; MAX_CLASSES],
}

impl Knobs {
    fn new(params: &[ClassParams], opts: &FlowSimOptions) -> Knobs {
        let mut k = Knobs {
            w: [0.0; MAX_CLASSES],
            phi_k: [0.0; MAX_CLASSES],
            burst: [0.0; MAX_CLASSES],
            init: [1; MAX_CLASSES],
            k_lim: [1; MAX_CLASSES],
        };
        for (c, p) in params.iter().enumerate() {
            let init = p.init_cwnd.max(1);
            k.w[c] = p.weight;
            k.init[c] = init;
            if opts.standing_queue {
                k.phi_k[c] = opts.queue_factor * p.ecn_k as f64;
                k.burst[c] = init as f64 * MTU;
            }
            k.k_lim[c] = if opts.slow_start {
                ((p.ecn_k as f64 / (init as f64 * MTU)).max(1.0).log2().ceil() + 1.0) as u32
            } else {
                1
            };
        }
        k
    }
}

/// Per set of backlogged classes (a bit mask), the GPS rates on one link under one
/// configuration: computed once per configuration and link, so the pass over the flows
/// multiplies instead of dividing.
struct Rates {
    /// Per mask: r / Σ_{c ∈ mask} w_c (bytes per ns per unit of weight).
    per_w: Vec<f64>,
    /// Per mask and class c ∈ mask: 1 / (r·w_c / Σ w) — ns per byte of class c's GPS share.
    inv_share: Vec<[f64; MAX_CLASSES]>,
    /// Per mask and class c (the arriving class, counted in the mask): 1 / ρ_c, ρ_c the
    /// geometric mean of its share and the capacity the others leave on average.
    inv_rho: Vec<[f64; MAX_CLASSES]>,
}

impl Rates {
    fn new(link: &AggLink, kn: &Knobs, nc: usize) -> Rates {
        let masks = 1usize << nc;
        let mut per_w = vec![0.0; masks];
        let mut inv_share = vec![[0.0; MAX_CLASSES]; masks];
        let mut inv_rho = vec![[0.0; MAX_CLASSES]; masks];
        for m in 1..masks {
            let wa: f64 = (0..nc).filter(|c| m >> c & 1 == 1).map(|c| kn.w[c]).sum();
            per_w[m] = link.r / wa;
            for c in (0..nc).filter(|c| m >> c & 1 == 1) {
                let share = link.r * kn.w[c] / wa;
                inv_share[m][c] = 1.0 / share;
                inv_rho[m][c] = 1.0 / (share * link.avail[c].max(share)).sqrt();
            }
        }
        Rates {
            per_w,
            inv_share,
            inv_rho,
        }
    }
}

/// Drains the backlogs `b` (classes in `mask` backlogged) by GPS over `dt` ns; returns the
/// new mask.
#[inline]
fn drain(b: &mut [f64; MAX_CLASSES], mut mask: usize, rates: &Rates, w: &[f64; MAX_CLASSES], mut dt: f64) -> usize {
    while mask != 0 && dt > 0.0 {
        let inv = &rates.inv_share[mask];
        // Time until the first class empties.
        let mut first = f64::INFINITY;
        let mut who = 0;
        let mut m = mask;
        while m != 0 {
            let c = m.trailing_zeros() as usize;
            m &= m - 1;
            let t = b[c] * inv[c];
            if t < first {
                first = t;
                who = c;
            }
        }
        let step = first.min(dt);
        let per_w = rates.per_w[mask] * step;
        let mut m = mask;
        while m != 0 {
            let c = m.trailing_zeros() as usize;
            m &= m - 1;
            b[c] = (b[c] - per_w * w[c]).max(0.0);
        }
        if first <= dt {
            // The class that set `first` empties exactly (no rounding residue).
            b[who] = 0.0;
            mask &= !(1 << who);
        }
        dt -= step;
    }
    mask
}

/// Adds each flow's delay on `link` beyond an idle link to `extra`. Returns arrivals processed.
fn run_link(link: &AggLink, kn: &Knobs, nc: usize, extra: &mut [f64]) -> u64 {
    let rates = Rates::new(link, kn, nc);
    let inv_r = 1.0 / link.r;
    let mut b = [0.0f64; MAX_CLASSES];
    let mut mask = 0usize;
    let mut cv = [Curve::EMPTY; MAX_CLASSES];
    let mut t = link.flows.first().map_or(0.0, |f| f.start);
    for f in &link.flows {
        mask = drain(&mut b, mask, &rates, &kn.w, f.start - t);
        t = f.start;
        let c = f.class as usize;
        let top = &link.top[c];
        let curve = &mut cv[c];
        curve.serve(b[c], top);
        let inv_rho = rates.inv_rho[mask | 1 << c][c];
        let s = f.work;
        let share = ((curve.at(s, top) + s) * inv_rho - s * inv_r).max(0.0);
        let q = b[c].min(kn.phi_k[c].max(curve.flows() * kn.burst[c]));
        let init = kn.init[c];
        let rounds = if f.segs <= init {
            1
        } else {
            let m = f.segs.div_ceil(init);
            (u32::BITS - m.leading_zeros()).min(kn.k_lim[c]).max(1)
        };
        let k = rounds as f64;
        extra[f.flow as usize] += share + k * q * inv_rho + (k - 1.0) * f.rtt;
        b[c] += s;
        mask |= 1 << c;
        curve.add(s);
    }
    link.flows.len() as u64
}

/// Reusable buffers of one batch.
pub(crate) struct AggScratch {
    pub extra: Vec<f64>,
    /// Per class: the measured flows' slowdowns as `f64` bits (slowdowns are positive, so the
    /// bits order like the values and selection compares integers).
    per_class: Vec<Vec<u64>>,
}

impl AggScratch {
    pub fn new(classes: usize) -> AggScratch {
        AggScratch {
            extra: Vec::new(),
            per_class: vec![Vec::new(); classes],
        }
    }
}

/// Runs every link for one configuration, leaving each flow's total extra delay (ns, beyond its
/// ideal FCT) in `scratch.extra`. Returns arrivals processed.
pub(crate) fn run(
    ap: &AggPlan,
    base_extra: &[f64],
    params: &[ClassParams],
    opts: &FlowSimOptions,
    scratch: &mut AggScratch,
) -> u64 {
    let kn = Knobs::new(params, opts);
    scratch.extra.clear();
    scratch.extra.extend_from_slice(base_extra);
    ap.links
        .iter()
        .map(|l| run_link(l, &kn, ap.classes, &mut scratch.extra))
        .sum()
}

/// Per-class SLIs from the extras in `scratch` (measured flows only), by selection, and the
/// latest completion (ns).
pub(crate) fn slis(ap: &AggPlan, scratch: &mut AggScratch, dscps: &[polyphony_spec::Dscp]) -> (SliVector, f64) {
    for v in &mut scratch.per_class {
        v.clear();
    }
    let mut end = 0.0f64;
    for (i, &e) in scratch.extra.iter().enumerate() {
        let e = e.max(0.0);
        end = end.max(ap.ideal_end[i] + e);
        let c = ap.measured_class[i];
        if c != u8::MAX {
            let s = 1.0 + e * ap.inv_ideal[i];
            scratch.per_class[c as usize].push(s.to_bits());
        }
    }
    let classes = dscps
        .iter()
        .zip(&mut scratch.per_class)
        .filter_map(|(&d, v)| select_sli(d, v))
        .collect();
    (SliVector { classes }, end)
}

/// The nearest-rank index of quantile `q` among `n` samples (as `polyphony_spec::percentile`).
fn rank(n: usize, q: f64) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n) - 1
}

/// p50, p99, p99.9 and mean of the positive values whose bits are `v` (reordered), equal to
/// sorting and taking nearest ranks.
fn select_sli(dscp: polyphony_spec::Dscp, v: &mut [u64]) -> Option<ClassSli> {
    let n = v.len();
    if n == 0 || v.iter().any(|&s| !f64::from_bits(s).is_finite()) {
        return None;
    }
    let (i50, i99, i999) = (rank(n, 0.5), rank(n, 0.99), rank(n, 0.999));
    let (lo, &mut p99, hi) = v.select_nth_unstable(i99);
    let p999 = if i999 > i99 {
        *hi.select_nth_unstable(i999 - i99 - 1).1
    } else {
        p99
    };
    let p50 = if i50 < i99 { *lo.select_nth_unstable(i50).1 } else { p99 };
    Some(ClassSli {
        dscp,
        flows: n as u64,
        p50: f64::from_bits(p50),
        p99: f64::from_bits(p99),
        p999: f64::from_bits(p999),
        mean: v.iter().map(|&s| f64::from_bits(s)).sum::<f64>() / n as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::{percentile, Dscp};

    #[test]
    fn selection_equals_sorted_nearest_ranks() {
        for n in [1usize, 2, 7, 99, 100, 101, 999, 1000, 1001, 2500] {
            let v: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1013) as f64 + 0.5).collect();
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            let mut bits: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
            let s = select_sli(Dscp::AF11, &mut bits).unwrap();
            assert_eq!(Some(s.p50), percentile(&sorted, 0.5), "n {n}");
            assert_eq!(Some(s.p99), percentile(&sorted, 0.99), "n {n}");
            assert_eq!(Some(s.p999), percentile(&sorted, 0.999), "n {n}");
        }
    }

    #[test]
    fn gps_drain_gives_an_idle_class_share_to_the_others() {
        let params = [0.25, 0.75].map(|weight| ClassParams {
            weight,
            ecn_k: 30_000,
            init_cwnd: 10,
            buffer: None,
        });
        let kn = Knobs::new(&params, &FlowSimOptions::default());
        let link = AggLink {
            r: 1.0,
            flows: Vec::new(),
            avail: [1.0; MAX_CLASSES],
            top: [Top::new(0.0); MAX_CLASSES],
        };
        let rates = Rates::new(&link, &kn, 2);
        // Class 0 has 100 bytes, class 1 has 1000; r = 1 byte/ns. Class 0 empties at t = 400
        // (rate 0.25), then class 1 gets everything: after 1000 ns it has 1000 − 300 − 600 = 100.
        let mut b = [100.0, 1000.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let mask = drain(&mut b, 0b11, &rates, &kn.w, 1000.0);
        assert_eq!((b[0], mask), (0.0, 0b10));
        assert!((b[1] - 100.0).abs() < 1e-9, "{}", b[1]);
        let mask = drain(&mut b, mask, &rates, &kn.w, 1000.0);
        assert_eq!((b, mask), ([0.0; MAX_CLASSES], 0));
    }
}
