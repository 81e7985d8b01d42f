//! `flowsim` on one link: one fluid backlog and one truncated-sum curve (`flowsim/curve.rs`)
//! per class instead of one heap entry per flow, so a flow costs O(classes + G²) arithmetic per link and configuration
//! (G = 4 curve points), no heap and no branches that depend on the configuration, and a batch
//! of configurations shares everything that does not depend on the configuration. It may touch
//! only its own state; the plan it reads is built by the parent module.
//!
//! The per-link decomposition is the parent module's: a flow's FCT is its
//! ideal FCT plus the delay each simulated link adds beyond an idle link, plus the
//! store-and-forward of its first packet on the links other than its bottleneck. On one link of
//! rate r (bytes/ns), flows in start order, per class c with weight w_c:
//!
//! * **Backlog (GPS across classes).** B_c = wire bytes of class c not yet served (fluid).
//!   Between two arrivals the link serves the backlogged classes by generalised processor
//!   sharing: class c drains at r·w_c / Σ_{B_j>0} w_j, and when a class empties its share goes
//!   to the others — solved in closed form (every backlogged class gets the same service θ per
//!   unit of weight: B_c ← (B_c − w_c·θ)⁺ with Σ_c min(B_c, w_c·θ) = r·Δt, see [`drain_fill`];
//!   above four classes one step per class that empties). An arrival adds its wire bytes s
//!   to B_c.
//! * **Flows (processor sharing within a class).** The class's truncated-sum curve
//!   T_c(x) = Σ_j min(x, rem_j) over its active flows is shifted by the per-flow service that
//!   the bytes GPS gave the class since its last arrival amount to (T_c(δ) = served), and an
//!   arrival adds min(x, s). From it: n_c = T_c's slope at 0 (the active flows) and T_c(s) (the
//!   bytes of the others a new flow of s bytes waits for under processor sharing).
//! * **Service rate.** ρ_c = √(i_c · max(a_c, i_c)): the geometric mean of the class's GPS share
//!   at the arrival, i_c = r·w_c / (w_c + Σ_{j≠c, B_j>0} w_j), and the capacity the other classes
//!   leave on average, a_c = r − (their offered bytes on the link / the span of arrivals).
//! * **Sharing.** The flow waits for the bytes of the others that processor sharing serves
//!   before it, T_c(s), and its own transfer is stretched by the flows that arrive while it
//!   runs: by 1 / (1 − u_c) on average (M/G/1 processor sharing), u_c = min(o_c / ρ_c, 0.9)
//!   with o_c the load the class's other flows offer on the link (their bytes over the span of
//!   arrivals, or over the time the link needs for all flows if that is longer). The term
//!   beyond an idle link is T_c(s)/ρ_c + s/(ρ_c·(1 − u_c)) − s/r (never negative).
//! * **K — standing queue.** Q_c = min(B_c, max(φ·K_c, n_c · initcwnd_c · MTU)), waited behind
//!   at ρ_c: DCTCP holds a backlogged class's queue near K (φ =
//!   [`FlowSimOptions::queue_factor`](super::FlowSimOptions::queue_factor)), and each active
//!   flow can put up to a full initial window into it.
//! * **initcwnd — slow-start rounds.** k = min(⌈log₂(n_seg / initcwnd + 1)⌉, rounds until the
//!   window passes K); each round waits behind Q_c once, each round after the first adds one
//!   base RTT.
//!
//! Per flow: extra = max(0, T_c(s)/ρ_c + s/(ρ_c·(1 − u_c)) − s/r) + k·Q_c/ρ_c + (k − 1)·RTT.
//!
//! Shared across the batch, and across the calls on one input (planned on the first call, kept
//! by the model value: `flowsim/cache.rs`): routes, ideal FCTs, the per-link flow lists with their segment counts and curve
//! segments, each class's largest flow and offered load, which flows are measured, and which
//! arrivals find the link empty — the link is work-conserving, so its total backlog is the same
//! in every configuration, and there the GPS pass is skipped.
//!
//! **Lanes.** The configurations of a batch run [`LANES`] (16) at a time in lock step: one
//! pass over the flows updates every lane's state, which is stored lane-innermost
//! (`[[f32; 16]; …]`) and updated with the same branch-free arithmetic in every lane (GPS
//! rounds end when no lane needs another), so the compiler turns each step into vector
//! instructions (with AVX2 and FMA, chosen at run time, two independent 8-wide ones per step,
//! which keeps both in flight; every path gives the same results, see [`pass`]). Lanes hold
//! single-precision floats (about seven significant digits of bytes and nanoseconds, far
//! finer than the model). Smaller groups run narrower passes, at a fraction of a sixteen-lane
//! pass's cost: one configuration a single lane, two to four (the controller's Nelder–Mead
//! rounds) four lanes, five to eight eight. The reductions run in the same vectorised
//! function, for the whole group at once, in one pass over the flows in flow order: the
//! latest completion, the slowdowns of the measured flows with their sums, maxima and every
//! lane's 32-bucket-per-octave histogram per class, then an exact
//! nearest-rank selection of p50, p99 and p99.9 per class and lane (the histogram locates each
//! rank's bucket; a second pass collects those buckets' values for all lanes at once, and only
//! they are selected in). Deterministic: no random draws.

// Lane loops index several arrays in lock step by lane; that form is what vectorises.
#![allow(clippy::needless_range_loop)]

use super::curve::{max, min, Curves, Point, Top, F};
use super::{FlowSimOptions, Plan};
use crate::model::{ClassParams, ModelInput, MAX_CLASSES};
use crate::topology::{HEADER_BYTES, MSS};
use polyphony_spec::{ClassSli, SliVector};

const MTU: f64 = (MSS + HEADER_BYTES) as f64;

/// One flow as an aggregate link sees it, with every term of its step that does not depend on
/// the configuration already computed.
#[derive(Debug, Clone, Copy)]
struct AggFlow {
    /// Time since the link's previous arrival (ns).
    dt: F,
    /// Wire bytes.
    work: F,
    /// Base RTT of the flow's path (ns).
    rtt: F,
    /// Segments (n_seg).
    segs: F,
    /// `work` / the link rate (ns).
    work_inv_r: F,
    /// The load the class's other flows offer on the link (bytes/ns, the look-ahead's o_c).
    load: F,
    /// 1 / the capacity the other classes leave on average (ns/byte).
    inv_avail: F,
    /// Where `work` lies on the class's curve (see `curve.rs`).
    point: Point,
    flow: u32,
    class: u8,
    /// The link has served everything that arrived before this flow. The link is
    /// work-conserving, so its total backlog does not depend on the configuration: when it is
    /// empty every class is, in every configuration, and the GPS pass can be skipped.
    idle: bool,
}

/// The configuration-independent part of one link.
struct AggLink {
    /// Bytes per ns.
    r: F,
    /// 1 / `r` (ns per byte).
    inv_r: F,
    flows: Vec<AggFlow>,
    /// Per class: the top of its truncated-sum curve (from its largest flow).
    top: [Top; MAX_CLASSES],
}

/// Everything about a batch that does not depend on the configuration.
pub(crate) struct AggPlan {
    links: Vec<AggLink>,
    classes: usize,
    /// Per class: its measured flows.
    measured: Vec<usize>,
    /// Per flow, in flow order: what the reductions need.
    ends: Vec<FlowEnd>,
}

/// One flow as the reductions see it.
#[derive(Debug, Clone, Copy)]
struct FlowEnd {
    /// Start + ideal FCT (ns).
    ideal_end: f64,
    /// 1 / the ideal FCT (1 / ns).
    inv_ideal: F,
    class: u8,
    /// It counts towards the SLIs.
    measured: bool,
}

impl AggPlan {
    pub fn new(input: &ModelInput, p: &Plan) -> AggPlan {
        let classes = input.classes.len();
        let flows = &input.workload.flows;
        let mut measured = vec![0; classes];
        let ends = flows
            .iter()
            .zip(&p.flow_class)
            .zip(&p.ideals)
            .map(|((f, &class), ideal)| {
                let m = input.measured(f.start);
                if m {
                    measured[class as usize] += 1;
                }
                FlowEnd {
                    ideal_end: f.start.0 as f64 + ideal.0 as f64,
                    inv_ideal: (1.0 / ideal.0.max(1) as f64) as F,
                    class,
                    measured: m,
                }
            })
            .collect();
        let links = p
            .links
            .iter()
            .map(|(rate, lf)| {
                let r = rate.0 as f64 / 8e9;
                let mut max_size = [0.0f64; MAX_CLASSES];
                let mut offered = [0.0f64; MAX_CLASSES];
                for f in lf {
                    let c = f.class as usize;
                    offered[c] += f.work;
                    max_size[c] = max_size[c].max(f.work);
                }
                let top = max_size.map(Top::new);
                let span = match (lf.first(), lf.last()) {
                    (Some(a), Some(b)) => (b.start - a.start).max(1.0),
                    _ => 1.0,
                };
                let total: f64 = offered.iter().sum();
                // Per class: the capacity the other classes leave on average (bytes per ns).
                let mut avail = [r as F; MAX_CLASSES];
                for (a, o) in avail.iter_mut().zip(&offered) {
                    *a = (r - (total - o) / span).max(r * 0.01) as F;
                }
                // The look-ahead's time base: the span of arrivals, but at least the time the
                // link needs for all of them (a burst cannot offer more than the line rate).
                let inv_span = (1.0 / span.max(total / r)) as F;
                let class_bytes = offered.map(|o| o as F);
                // The total backlog just before each arrival (Lindley's recursion, bytes); a
                // byte of rounding counts as empty.
                let (mut backlog, mut last) = (0.0f64, lf.first().map_or(0.0, |f| f.start));
                let flows = lf
                    .iter()
                    .map(|f| {
                        let c = f.class as usize;
                        backlog = (backlog - (f.start - last) * r).max(0.0);
                        let dt = (f.start - last) as F;
                        last = f.start;
                        let idle = backlog < 1.0;
                        backlog += f.work;
                        let work = f.work as F;
                        AggFlow {
                            dt,
                            work,
                            rtt: f.rtt as F,
                            segs: f.size.div_ceil(MSS).clamp(1, u32::MAX as u64) as u32 as F,
                            work_inv_r: f.idle as F,
                            load: max(class_bytes[c] - work, 0.0) * inv_span,
                            inv_avail: 1.0 / avail[c],
                            point: top[c].locate(work),
                            flow: f.flow,
                            class: f.class,
                            idle,
                        }
                    })
                    .collect();
                AggLink {
                    r: r as F,
                    inv_r: 1.0 / r as F,
                    flows,
                    top,
                }
            })
            .collect();
        AggPlan {
            links,
            classes,
            measured,
            ends,
        }
    }

    /// Flow arrivals the pass processes per configuration (over all links).
    pub fn arrivals(&self) -> u64 {
        self.links.iter().map(|l| l.flows.len() as u64).sum()
    }

    /// Flows that count towards the SLIs.
    pub fn measured_flows(&self) -> u64 {
        self.measured.iter().map(|&n| n as u64).sum()
    }
}

/// The knobs of `L` configurations (lanes) as the aggregate pass uses them.
struct Knobs<const L: usize> {
    w: [[F; L]; MAX_CLASSES],
    inv_w: [[F; L]; MAX_CLASSES],
    /// φ·K (bytes); 0 without the standing-queue term.
    phi_k: [[F; L]; MAX_CLASSES],
    /// initcwnd · MTU (bytes); 0 without the standing-queue term.
    burst: [[F; L]; MAX_CLASSES],
    inv_init: [[F; L]; MAX_CLASSES],
    /// Slow-start rounds after which the window passes K.
    k_lim: [[F; L]; MAX_CLASSES],
    /// Per set of classes m (bit j: class j, of the first [`FILL_CLASSES`]): 1 / Σ_{j∈m} w_j
    /// (for [`drain_fill`]).
    inv_wsum: [[F; L]; 1 << FILL_CLASSES],
}

impl<const L: usize> Knobs<L> {
    /// Lane l gets `lanes[l]`'s knobs.
    fn new(lanes: &[&[ClassParams]; L], opts: &FlowSimOptions) -> Knobs<L> {
        let mut k = Knobs {
            w: [[1.0; L]; MAX_CLASSES],
            inv_w: [[1.0; L]; MAX_CLASSES],
            phi_k: [[0.0; L]; MAX_CLASSES],
            burst: [[0.0; L]; MAX_CLASSES],
            inv_init: [[1.0; L]; MAX_CLASSES],
            k_lim: [[1.0; L]; MAX_CLASSES],
            inv_wsum: [[0.0; L]; 1 << FILL_CLASSES],
        };
        for (l, params) in lanes.iter().enumerate() {
            for (c, p) in params.iter().enumerate() {
                let init = p.init_cwnd.max(1) as f64;
                k.w[c][l] = p.weight as F;
                k.inv_w[c][l] = (1.0 / p.weight) as F;
                k.inv_init[c][l] = (1.0 / init) as F;
                if opts.standing_queue {
                    k.phi_k[c][l] = (opts.queue_factor * p.ecn_k as f64) as F;
                    k.burst[c][l] = (init * MTU) as F;
                }
                k.k_lim[c][l] = if opts.slow_start {
                    ((p.ecn_k as f64 / (init * MTU)).max(1.0).log2().ceil() + 1.0) as F
                } else {
                    1.0
                };
            }
            for (m, inv) in k.inv_wsum.iter_mut().enumerate().skip(1) {
                let sum: f64 = params
                    .iter()
                    .take(FILL_CLASSES)
                    .enumerate()
                    .filter(|&(j, _)| m >> j & 1 == 1)
                    .map(|(_, p)| p.weight)
                    .sum();
                inv[l] = if sum > 0.0 { (1.0 / sum) as F } else { 0.0 };
            }
        }
        k
    }
}

/// Up to this many classes the GPS drain is solved in closed form ([`drain_fill`]).
const FILL_CLASSES: usize = 4;

/// Drains the backlogs `b` of every lane by GPS over `dt` ns at `r` bytes/ns, in closed form
/// (for at most [`FILL_CLASSES`] classes). GPS serves every backlogged class at the same rate
/// per unit of weight, so after serving X = r·dt bytes class j holds (b_j − w_j·θ)⁺, with θ
/// the service per unit of weight where F(θ) = Σ_j min(b_j, w_j·θ) reaches X. F is concave
/// and the minimum of the lines Σ_{j∉m} b_j + θ·Σ_{j∈m} w_j over the sets m of classes, so
/// θ = max_m (X − Σ_{j∉m} b_j) / Σ_{j∈m} w_j (if X exceeds the whole backlog every class
/// empties, and so does the formula). No rounds, no division (1 / Σ w per set comes with the
/// knobs); a class left with less than a byte counts as empty (rounding).
#[inline(always)]
fn drain_fill<const L: usize, const NC: usize>(b: &mut [[F; L]; MAX_CLASSES], kn: &Knobs<L>, r: F, dt: F) {
    debug_assert!(NC <= FILL_CLASSES);
    let x = r * dt;
    // d = X − the whole backlog; then X − Σ_{j∉m} b_j = d + Σ_{j∈m} b_j.
    let mut d = [x; L];
    for j in 0..NC {
        for l in 0..L {
            d[l] -= b[j][l];
        }
    }
    let mut inm = [[0.0; L]; 1 << FILL_CLASSES];
    let mut theta = [F::NEG_INFINITY; L];
    for m in 1..1usize << NC {
        let j = m.trailing_zeros() as usize;
        let rest = m & (m - 1);
        for l in 0..L {
            inm[m][l] = inm[rest][l] + b[j][l];
            theta[l] = max(theta[l], (d[l] + inm[m][l]) * kn.inv_wsum[m][l]);
        }
    }
    for j in 0..NC {
        for l in 0..L {
            let nb = (-kn.w[j][l]).mul_add(theta[l], b[j][l]);
            b[j][l] = if nb < 1.0 { 0.0 } else { nb };
        }
    }
}

/// The largest class utilisation the look-ahead term uses (its stretch is at most 10×).
const U_MAX: F = 0.9;

/// Drains the backlogs `b` of every lane by GPS over `dt` ns at `r` bytes/ns: each round
/// serves the backlogged classes until the first of them empties (or the time is up).
#[inline(always)]
fn drain<const L: usize, const NC: usize>(b: &mut [[F; L]; MAX_CLASSES], kn: &Knobs<L>, r: F, dt: F) {
    let inv_r = 1.0 / r;
    let mut left = [dt; L];
    for _ in 0..=NC {
        let mut wa = [0.0; L];
        for c in 0..NC {
            for l in 0..L {
                wa[l] += kn.w[c][l] * (b[c][l] > 0.0) as u8 as F;
            }
        }
        // Time until each class empties, and the step: the first of those, or the time left.
        let mut empty = [[F::INFINITY; L]; MAX_CLASSES];
        let mut step = left;
        for c in 0..NC {
            for l in 0..L {
                let t = b[c][l] * wa[l] * kn.inv_w[c][l] * inv_r;
                empty[c][l] = if b[c][l] > 0.0 { t } else { F::INFINITY };
                step[l] = min(step[l], empty[c][l]);
            }
        }
        let mut per_w = [0.0; L];
        for l in 0..L {
            per_w[l] = if wa[l] > 0.0 { r * step[l] / wa[l] } else { 0.0 };
        }
        for c in 0..NC {
            for l in 0..L {
                let nb = b[c][l] - per_w[l] * kn.w[c][l];
                // The class that set the step empties exactly (no rounding residue).
                b[c][l] = if empty[c][l] <= step[l] || nb < 0.0 { 0.0 } else { nb };
            }
        }
        let mut more = false;
        for l in 0..L {
            left[l] -= step[l];
            more |= left[l] > 0.0;
        }
        if !more {
            break;
        }
    }
}

/// One link's state in `W` lanes: every class's GPS backlog and curve.
#[derive(Clone, Copy)]
struct LinkState<const W: usize> {
    b: [[F; W]; MAX_CLASSES],
    cv: [Curves<W>; MAX_CLASSES],
}

impl<const W: usize> LinkState<W> {
    const EMPTY: LinkState<W> = LinkState {
        b: [[0.0; W]; MAX_CLASSES],
        cv: [Curves::EMPTY; MAX_CLASSES],
    };
}

/// Adds each flow's delay on `link` beyond an idle link to `extra` (per lane).
///
/// Each arrival is two steps: [`arrive`] updates the link's state (drain, curve shift, the
/// flow joins its class) and returns what the flow's delay needs ([`Pending`]); [`delay`]
/// turns that into the delay. The state steps form a chain from flow to flow, the delay steps
/// do not, so the delay of the previous flow is computed after the state step of the next:
/// in program order the independent work sits next to the chain, where the processor can
/// overlap the two (same arithmetic, same results).
#[inline(always)]
fn run_link<const L: usize, const NC: usize>(link: &AggLink, kn: &Knobs<L>, extra: &mut [[F; L]]) {
    let mut st = LinkState::<L>::EMPTY;
    let mut pending: Option<(&AggFlow, Pending<L>)> = None;
    for f in &link.flows {
        // The class as a constant, so that everything indexed by it is found at compile time.
        let next = match f.class {
            0 => arrive::<L, NC, 0>(link, f, &mut st, kn),
            1 => arrive::<L, NC, 1>(link, f, &mut st, kn),
            2 => arrive::<L, NC, 2>(link, f, &mut st, kn),
            3 => arrive::<L, NC, 3>(link, f, &mut st, kn),
            4 => arrive::<L, NC, 4>(link, f, &mut st, kn),
            5 => arrive::<L, NC, 5>(link, f, &mut st, kn),
            6 => arrive::<L, NC, 6>(link, f, &mut st, kn),
            _ => arrive::<L, NC, 7>(link, f, &mut st, kn),
        };
        if let Some((pf, pd)) = pending.replace((f, next)) {
            delay(link, pf, &pd, kn, &mut extra[pf.flow as usize]);
        }
    }
    if let Some((pf, pd)) = pending {
        delay(link, pf, &pd, kn, &mut extra[pf.flow as usize]);
    }
}

/// What a flow's delay needs from the link's state at its arrival, per lane.
#[derive(Clone, Copy)]
struct Pending<const W: usize> {
    /// T_c(s): the bytes of the class's other flows served before it.
    ts: [F; W],
    /// Σ w over the backlogged classes and its own.
    wa: [F; W],
    /// The standing queue Q_c.
    q: [F; W],
}

/// Flow `f` of class `C` arrives on `link`: drain the backlogs since the previous arrival,
/// shift the class's curve, note what the flow's delay needs, add the flow to the class.
#[inline(always)]
fn arrive<const W: usize, const NC: usize, const C: usize>(
    link: &AggLink,
    f: &AggFlow,
    st: &mut LinkState<W>,
    kn: &Knobs<W>,
) -> Pending<W> {
    let mut out = Pending {
        ts: [0.0; W],
        wa: [0.0; W],
        q: [0.0; W],
    };
    if C >= NC {
        // No such class (the match above has an arm for every class index).
        return out;
    }
    let r = link.r;
    let top = &link.top[C];
    let s = f.work;
    let b = &mut st.b;
    if f.idle {
        *b = [[0.0; W]; MAX_CLASSES];
    } else if NC <= FILL_CLASSES {
        drain_fill::<W, NC>(b, kn, r, f.dt);
    } else {
        drain::<W, NC>(b, kn, r, f.dt);
    }
    let cv = &mut st.cv[C];
    if b[C].iter().all(|&x| x <= 0.0) {
        // Idle in every lane: no flow left in the class.
        *cv = Curves::EMPTY;
    } else {
        cv.serve(&b[C], top);
    }
    out.ts = cv.at(&f.point);
    // The class's GPS share, with itself counted as backlogged: 1 / share = Σw / (r·w_c).
    out.wa = kn.w[C];
    for j in 0..NC {
        if j != C {
            for l in 0..W {
                out.wa[l] += if b[j][l] > 0.0 { kn.w[j][l] } else { 0.0 };
            }
        }
    }
    for l in 0..W {
        out.q[l] = min(b[C][l], max(kn.phi_k[C][l], cv.flows(l) * kn.burst[C][l]));
    }
    for l in 0..W {
        b[C][l] += s;
    }
    cv.add(s);
    out
}

/// Adds flow `f`'s delay on `link` to `ex`, from what [`arrive`] noted.
#[inline(always)]
fn delay<const W: usize>(link: &AggLink, f: &AggFlow, pd: &Pending<W>, kn: &Knobs<W>, ex: &mut [F; W]) {
    let c = f.class as usize;
    let s = f.work;
    let inv_r = link.inv_r;
    for l in 0..W {
        let inv_share = pd.wa[l] * kn.inv_w[c][l] * inv_r;
        // 1/ρ = 1/√(share · max(avail, share)), without dividing.
        let inv_rho = (inv_share * min(f.inv_avail, inv_share)).sqrt();
        // Later arrivals share the class too: the own transfer stretches by 1 / (1 − u), u
        // the class's offered load over its service rate (processor sharing's mean).
        let u = min(f.load * inv_rho, U_MAX);
        let ps = max(pd.ts[l].mul_add(inv_rho, s * inv_rho / (1.0 - u)) - f.work_inv_r, 0.0);
        // Slow-start rounds: the bit length of ⌈segs / initcwnd⌉ (from the float's
        // exponent), at most k_lim. The product is nudged down by 2⁻²⁰ so that an exact
        // multiple cannot round up; flows long enough for that to matter hit k_lim.
        let m = (f.segs * kn.inv_init[c][l] * (1.0 - 1.0 / (1u32 << 20) as F)).ceil();
        let bits = ((m.to_bits() >> 23) as i32 - 126) as F;
        let k = min(bits, kn.k_lim[c][l]);
        ex[l] += (k - 1.0).mul_add(f.rtt, (k * pd.q[l]).mul_add(inv_rho, ps));
    }
}

/// Runs every link with the class count as a constant (so the loops over classes unroll);
/// above 4 classes the unused ones of [`MAX_CLASSES`] never hold a backlog.
#[inline(always)]
fn run_links<const L: usize>(ap: &AggPlan, kn: &Knobs<L>, ex: &mut [[F; L]]) {
    for link in &ap.links {
        match ap.classes {
            0 | 1 => run_link::<L, 1>(link, kn, ex),
            2 => run_link::<L, 2>(link, kn, ex),
            3 => run_link::<L, 3>(link, kn, ex),
            4 => run_link::<L, 4>(link, kn, ex),
            _ => run_link::<L, MAX_CLASSES>(link, kn, ex),
        }
    }
}

/// Reusable buffers of one batch.
#[derive(Default)]
pub(crate) struct AggScratch {
    /// Per flow and lane, while a group of configurations runs.
    lanes: Vec<[F; LANES]>,
    one: Vec<[F; 1]>,
    four: Vec<[F; 4]>,
    eight: Vec<[F; 8]>,
    /// Every lane's slowdowns of the measured flows per class (see [`Slowdowns`]).
    sd: Slowdowns,
}

/// The buffers of finished calls, kept by the model value for its next calls. A call's
/// buffers hold a row of lanes per flow (hundreds of kB for a few thousand flows); fresh ones
/// would have their pages faulted in on every call, about half the CPU time of a
/// single-configuration call. Holds at most as many as calls ran at once on the value; a
/// clone starts empty.
#[derive(Default)]
pub(crate) struct ScratchPool(std::sync::Mutex<Vec<AggScratch>>);

impl ScratchPool {
    /// A free scratch (a reused one when there is one).
    pub fn take(&self) -> AggScratch {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
            .unwrap_or_default()
    }

    /// Returns `s` for a later call.
    pub fn put(&self, s: AggScratch) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(s);
    }
}

impl Clone for ScratchPool {
    fn clone(&self) -> ScratchPool {
        ScratchPool::default()
    }
}

impl std::fmt::Debug for ScratchPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len();
        f.debug_struct("ScratchPool").field("held", &held).finish()
    }
}

/// Every lane's slowdowns of the measured flows, per class, as `f32` bits (slowdowns are ≥ 1,
/// so the bits order like the values and selection compares integers), one row of `width`
/// lanes per flow — the pass's width, so that a narrow pass over a large window does not move
/// sixteen lanes' worth of rows through memory. With each lane's sum (f64, in flow order) and
/// largest value, gathered in the same pass for all lanes at once.
#[derive(Default)]
struct Slowdowns {
    /// Lanes per row.
    width: usize,
    bits: Vec<Vec<u32>>,
    sum: Vec<[f64; LANES]>,
    top: Vec<[u32; LANES]>,
    /// Per class and lane: p50, p99, p99.9 (`None`: no finite slowdowns), from [`select`].
    q: Vec<[Option<[f64; 3]>; LANES]>,
    /// The selection's histograms, one per class, bucket-major with rows as wide as the pass
    /// (`hist[(class * BUCKETS + bucket) * width + lane]`: the lanes' counts of a bucket share
    /// a cache line; one array per lane would put every lane's count of a bucket in the same
    /// cache set, 4 KiB apart), all zero between passes, and the values of the buckets holding
    /// the ranks.
    hist: Vec<u32>,
    pick: Vec<Vec<u32>>,
}

/// One configuration's result inside a group: its lane of per-flow extra delays.
pub(crate) struct Lane<'a> {
    data: LaneData<'a>,
    lane: usize,
    end: f64,
    sd: &'a Slowdowns,
}

enum LaneData<'a> {
    One(&'a [[F; 1]]),
    Four(&'a [[F; 4]]),
    Eight(&'a [[F; 8]]),
    Wide(&'a [[F; LANES]]),
}

impl Lane<'_> {
    /// Each flow's extra delay (ns) beyond its ideal FCT.
    pub fn extras(&self) -> Vec<f64> {
        match self.data {
            LaneData::One(v) => v.iter().map(|e| max(e[0], 0.0) as f64).collect(),
            LaneData::Four(v) => v.iter().map(|e| max(e[self.lane], 0.0) as f64).collect(),
            LaneData::Eight(v) => v.iter().map(|e| max(e[self.lane], 0.0) as f64).collect(),
            LaneData::Wide(v) => v.iter().map(|e| max(e[self.lane], 0.0) as f64).collect(),
        }
    }

    /// The latest completion (ns).
    pub fn end(&self) -> f64 {
        self.end
    }

    /// Per-class SLIs of the measured flows (selected for the whole group at once).
    pub fn slis(&mut self, dscps: &[polyphony_spec::Dscp]) -> SliVector {
        let (sd, l) = (self.sd, self.lane);
        let classes = dscps
            .iter()
            .zip(&sd.q)
            .zip(&sd.bits)
            .zip(&sd.sum)
            .filter_map(|(((&dscp, q), v), sum)| {
                let [p50, p99, p999] = q[l]?;
                Some(ClassSli {
                    dscp,
                    flows: (v.len() / sd.width) as u64,
                    p50,
                    p99,
                    p999,
                    mean: sum[l] / (v.len() / sd.width) as f64,
                    qct: None,
                })
            })
            .collect();
        SliVector { classes }
    }
}

/// The reductions, in one pass over the flows in flow order (each flow's row of lanes read
/// once): every lane's latest completion (returned) and every lane's slowdowns of the measured
/// flows, per class, with their sums, maxima and histograms; then each class's quantiles
/// ([`select`]).
#[inline(always)]
fn reductions<const L: usize>(ap: &AggPlan, ex: &[[F; L]], out: &mut Slowdowns) -> [f64; L] {
    const { assert!(L <= LANES) };
    let mut end = [0.0f64; L];
    out.width = L;
    out.bits.resize(ap.classes, Vec::new());
    for (v, &n) in out.bits.iter_mut().zip(&ap.measured) {
        v.clear();
        v.reserve(n * L);
    }
    out.sum.clear();
    out.top.clear();
    out.q.clear();
    let Slowdowns {
        bits,
        sum: sums,
        top: tops,
        q,
        hist,
        pick,
        ..
    } = out;
    hist.resize(MAX_CLASSES * BUCKETS * LANES, 0);
    // One histogram of rows of `L` lanes per class.
    let hists = hist.as_chunks_mut::<L>().0.as_chunks_mut::<BUCKETS>().0;
    let mut sum = [[0.0f64; LANES]; MAX_CLASSES];
    let mut top = [[0u32; LANES]; MAX_CLASSES];
    for (e, fe) in ex.iter().zip(&ap.ends) {
        for l in 0..L {
            let v = fe.ideal_end + max(e[l], 0.0) as f64;
            end[l] = if v > end[l] { v } else { end[l] };
        }
        if !fe.measured {
            continue;
        }
        let c = fe.class as usize;
        let mut x = [0.0; L];
        for l in 0..L {
            x[l] = 1.0 + max(e[l], 0.0) * fe.inv_ideal;
        }
        // One step per loop, so that each vectorises.
        for l in 0..L {
            sum[c][l] += x[l] as f64;
        }
        let xb = x.map(f32::to_bits);
        for l in 0..L {
            top[c][l] = top[c][l].max(xb[l]);
        }
        count(&mut hists[c], &xb);
        bits[c].extend_from_slice(&xb);
    }
    for (c, v) in bits.iter().enumerate() {
        q.push(select::<L>(v.as_chunks::<L>().0, &top[c], &mut hists[c], pick));
        sums.push(sum[c]);
        tops.push(top[c]);
    }
    end
}

/// Counts a row of lanes' values (`f32` bits of slowdowns ≥ 1) into their histograms.
#[inline(always)]
fn count<const L: usize>(hist: &mut [[u32; L]; BUCKETS], xb: &[u32; L]) {
    let bk = buckets(xb);
    for l in 0..L {
        // Buckets are below BUCKETS (a power of two): the mask drops the bounds check.
        hist[bk[l] as usize & (BUCKETS - 1)][l] += 1;
    }
}

/// Configurations evaluated together in one pass over the flows.
pub(crate) const LANES: usize = 16;

/// Runs every link for a group of configurations (at most [`LANES`]); `done(i, lane)` is
/// called for the i-th with its results.
pub(crate) fn run_group(
    ap: &AggPlan,
    base_extra: &[f64],
    group: &[&[ClassParams]],
    opts: &FlowSimOptions,
    scratch: &mut AggScratch,
    done: impl FnMut(usize, Lane<'_>),
) {
    let AggScratch {
        lanes,
        one,
        four,
        eight,
        sd,
    } = scratch;
    match group.len() {
        0 => {}
        1 => run_narrow(ap, base_extra, group, opts, one, sd, LaneData::One, done),
        2..=4 => run_narrow(ap, base_extra, group, opts, four, sd, LaneData::Four, done),
        5..=8 => run_narrow(ap, base_extra, group, opts, eight, sd, LaneData::Eight, done),
        _ => run_narrow(ap, base_extra, group, opts, lanes, sd, LaneData::Wide, done),
    }
}

/// [`run_group`] for a group of at most `L` configurations (at least one) in a pass of `L`
/// lanes (unused lanes repeat the last configuration); `data` wraps the lanes for [`Lane`].
#[allow(clippy::too_many_arguments)]
fn run_narrow<'a, const L: usize>(
    ap: &AggPlan,
    base_extra: &[f64],
    group: &[&[ClassParams]],
    opts: &FlowSimOptions,
    lanes: &'a mut Vec<[F; L]>,
    sd: &'a mut Slowdowns,
    data: fn(&'a [[F; L]]) -> LaneData<'a>,
    mut done: impl FnMut(usize, Lane<'_>),
) {
    let Some(&last) = group.last() else {
        return;
    };
    let params: [&[ClassParams]; L] = std::array::from_fn(|l| group.get(l).copied().unwrap_or(last));
    let kn = Knobs::<L>::new(&params, opts);
    lanes.clear();
    lanes.extend(base_extra.iter().map(|&e| [e as F; L]));
    let end = pass(ap, &kn, lanes, sd);
    let (lanes, sd): (&'a [[F; L]], &'a Slowdowns) = (lanes, sd);
    for (i, &end) in end.iter().enumerate().take(group.len()) {
        done(
            i,
            Lane {
                data: data(lanes),
                lane: i,
                end,
                sd,
            },
        );
    }
}

/// The pass over the flows and its reductions (latest completions, slowdowns), compiled for
/// AVX2 and FMA when the processor has them. Fused multiply-adds (`mul_add`) round once on
/// every path — one instruction with FMA, the library's exact `fmaf` without it (slower,
/// same results) — and Rust neither contracts nor reorders other floating-point operations,
/// so every path gives the same results.
fn pass<const L: usize>(ap: &AggPlan, kn: &Knobs<L>, ex: &mut [[F; L]], sd: &mut Slowdowns) -> [f64; L] {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the processor supports AVX2 and FMA (checked just above).
            return unsafe { pass_avx2_fma(ap, kn, ex, sd) };
        }
    }
    pass_portable(ap, kn, ex, sd)
}

#[inline(always)]
fn pass_portable<const L: usize>(ap: &AggPlan, kn: &Knobs<L>, ex: &mut [[F; L]], sd: &mut Slowdowns) -> [f64; L] {
    run_links(ap, kn, ex);
    reductions(ap, ex, sd)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn pass_avx2_fma<const L: usize>(ap: &AggPlan, kn: &Knobs<L>, ex: &mut [[F; L]], sd: &mut Slowdowns) -> [f64; L] {
    pass_portable(ap, kn, ex, sd)
}

/// The nearest-rank index of quantile `q` among `n` samples (as `polyphony_spec::percentile`).
fn rank(n: usize, q: f64) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n) - 1
}

/// Histogram buckets of the selection: 32 per octave of slowdown from 1 to 2³².
const BUCKETS: usize = 1024;

/// The bucket of a slowdown ≥ 1 given as `f32` bits: its exponent and five mantissa bits, so
/// buckets order like the values (larger slowdowns share the last bucket).
#[inline(always)]
fn bucket(bits: u32) -> usize {
    // max then subtract: the saturating subtraction in a form that vectorises.
    ((bits >> 18).max(127 << 5) - (127 << 5)).min(BUCKETS as u32 - 1) as usize
}

/// The [`bucket`] of every lane of a row (one vectorised step for all lanes).
#[inline(always)]
fn buckets<const L: usize>(row: &[u32; L]) -> [u32; L] {
    let mut bk = [0u32; L];
    for l in 0..L {
        bk[l] = bucket(row[l]) as u32;
    }
    bk
}

/// p50, p99 and p99.9 of the slowdowns (≥ 1) of every lane l < `L`, given as `f32` bits
/// (`v[i][l]`), with each lane's largest value and histogram (from [`count`]; zero again on
/// return); equal to sorting and taking nearest ranks. Each lane's ranks are located in its
/// histogram (p50 counting from the bottom, p99.9 and p99 from the top, where they lie in the
/// last ≈ 1 % of the values); a pass over the rows collects, for all lanes at once, the values
/// inside those buckets (a lane mask per row, usually empty), and a selection within them
/// finishes. A lane without finite values gets `None`.
#[inline(always)]
fn select<const L: usize>(
    v: &[[u32; L]],
    top: &[u32; LANES],
    hist: &mut [[u32; L]; BUCKETS],
    pick: &mut Vec<Vec<u32>>,
) -> [Option<[f64; 3]>; LANES] {
    // Buckets in use (every value's bucket is at most its lane's largest value's).
    let nb = (0..L).map(|l| bucket(top[l]) + 1).max().unwrap_or(1);
    let out = quantiles(v, top, &hist[..nb], pick);
    hist[..nb].fill([0; L]);
    out
}

/// [`select`] given the histograms' buckets in use.
#[inline(always)]
fn quantiles<const L: usize>(
    v: &[[u32; L]],
    top: &[u32; LANES],
    hist: &[[u32; L]],
    pick: &mut Vec<Vec<u32>>,
) -> [Option<[f64; 3]>; LANES] {
    let mut out = [None; LANES];
    let n = v.len();
    let valid: [bool; L] = std::array::from_fn(|l| n > 0 && f32::from_bits(top[l]).is_finite());
    if !valid.iter().any(|&x| x) {
        return out;
    }
    let ranks = [rank(n, 0.5), rank(n, 0.99), rank(n, 0.999)];
    // Per lane: each rank's bucket (u32::MAX, never a bucket, for invalid lanes) and its rank
    // within the bucket.
    let mut target = [[u32::MAX; L]; 3];
    let mut within = [[0usize; L]; 3];
    for l in (0..L).filter(|&l| valid[l]) {
        let mut at = [(0usize, 0usize); 3];
        let mut below = 0usize;
        for (k, c) in hist.iter().map(|r| r[l]).enumerate() {
            if ranks[0] < below + c as usize {
                at[0] = (k, ranks[0] - below);
                break;
            }
            below += c as usize;
        }
        let mut above = 0usize;
        let mut next = 2;
        for (k, c) in hist.iter().map(|r| r[l]).enumerate().rev() {
            let first = n - above - c as usize;
            while next > 0 && ranks[next] >= first {
                at[next] = (k, ranks[next] - first);
                next -= 1;
            }
            above += c as usize;
            if next == 0 {
                break;
            }
        }
        for (j, &(b, r)) in at.iter().enumerate() {
            target[j][l] = b as u32;
            within[j][l] = r;
        }
    }
    pick.resize(3 * LANES, Vec::new());
    for p in pick.iter_mut() {
        p.clear();
    }
    // The values in those buckets (each row's buckets computed again, for all its lanes at
    // once). The targets go through memory (`black_box`): kept in scalar registers, they
    // would be gathered into vectors again for every row.
    let target = std::hint::black_box(target);
    for row in v {
        let bk = buckets(row);
        // 0 in a lane whose bucket is one of its targets (xor and minimum vectorise; a
        // comparison's boolean would not).
        let mut miss = [u32::MAX; L];
        for j in 0..3 {
            for l in 0..L {
                miss[l] = miss[l].min(bk[l] ^ target[j][l]);
            }
        }
        if miss.iter().fold(1, |a, &m| a & m.min(1)) == 0 {
            for j in 0..3 {
                for l in 0..L {
                    if bk[l] == target[j][l] {
                        pick[j * LANES + l].push(row[l]);
                    }
                }
            }
        }
    }
    for l in (0..L).filter(|&l| valid[l]) {
        let mut q = [0.0; 3];
        for (j, q) in q.iter_mut().enumerate() {
            let p = &mut pick[j * LANES + l];
            *q = f32::from_bits(*p.select_nth_unstable(within[j][l]).1) as f64;
        }
        out[l] = Some(q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::percentile;

    #[test]
    fn selection_equals_sorted_nearest_ranks() {
        for n in [1usize, 2, 7, 99, 100, 101, 999, 1000, 1001, 2500] {
            // Slowdowns ≥ 1 spread over many buckets, with ties, and a few beyond the last one.
            let v: Vec<f64> = (0..n)
                .map(|i| match i % 97 {
                    0 => 1e12 + i as f64,
                    _ => 1.0 + ((i * 7919) % 1013) as f64 / 7.0,
                })
                .collect();
            let mut sorted: Vec<f64> = v.iter().map(|&x| x as f32 as f64).collect();
            sorted.sort_by(f64::total_cmp);
            // Every lane holds the same values in a different order.
            let bits: Vec<[u32; LANES]> = (0..n)
                .map(|i| std::array::from_fn(|l| (v[(i + l * 7) % n] as f32).to_bits()))
                .collect();
            let top = std::array::from_fn(|l| bits.iter().map(|r| r[l]).max().unwrap_or(0));
            let mut hist = [[0; LANES]; BUCKETS];
            for row in &bits {
                count(&mut hist, row);
            }
            let q = select::<LANES>(&bits, &top, &mut hist, &mut Vec::new());
            assert_eq!(hist, [[0; LANES]; BUCKETS], "n {n}: the histograms are left zero");
            for q in q {
                let [p50, p99, p999] = q.unwrap();
                assert_eq!(Some(p50), percentile(&sorted, 0.5), "n {n}");
                assert_eq!(Some(p99), percentile(&sorted, 0.99), "n {n}");
                assert_eq!(Some(p999), percentile(&sorted, 0.999), "n {n}");
            }
        }
    }

    #[test]
    fn gps_drain_gives_an_idle_class_share_to_the_others() {
        let params = [0.25, 0.75].map(|weight| ClassParams {
            weight,
            ecn_k: 30_000,
            init_cwnd: 10,
            buffer: None,
            cca: crate::model::Cca::Dctcp,
        });
        let kn = Knobs::<1>::new(&[&params[..]], &FlowSimOptions::default());
        // Class 0 has 100 bytes, class 1 has 1000; r = 1 byte/ns. Class 0 empties at t = 400
        // (rate 0.25), then class 1 gets everything: after 1000 ns it has 1000 − 300 − 600 = 100.
        // Round by round and in closed form.
        type Drain = fn(&mut [[F; 1]; MAX_CLASSES], &Knobs<1>, F, F);
        for d in [drain::<1, 2> as Drain, drain_fill::<1, 2>] {
            let mut b = [[0.0]; MAX_CLASSES];
            b[0][0] = 100.0;
            b[1][0] = 1000.0;
            d(&mut b, &kn, 1.0, 1000.0);
            assert_eq!(b[0][0], 0.0);
            assert!((b[1][0] - 100.0).abs() < 1e-3, "{}", b[1][0]);
            d(&mut b, &kn, 1.0, 1000.0);
            assert_eq!(b, [[0.0]; MAX_CLASSES]);
        }
    }

    #[test]
    fn closed_form_drain_equals_the_round_by_round_drain() {
        let weights = [
            [0.2, 0.3, 0.5],
            [0.05, 0.05, 0.9],
            [0.6, 0.35, 0.05],
            [0.34, 0.33, 0.33],
        ];
        let backlogs = [
            [0.0, 5_000.0, 80_000.0],
            [1_514.0, 0.0, 0.0],
            [30_000.0, 2_000.0, 400.0],
            [120_000.0, 90_000.0, 60_000.0],
        ];
        for w in weights {
            let params = w.map(|weight| ClassParams {
                weight,
                ecn_k: 30_000,
                init_cwnd: 10,
                buffer: None,
                cca: crate::model::Cca::Dctcp,
            });
            let kn = Knobs::<1>::new(&[&params[..]], &FlowSimOptions::default());
            for bl in backlogs {
                for dt in [0.0, 10.0, 1_000.0, 20_000.0, 1e6] {
                    let mut rounds = [[0.0]; MAX_CLASSES];
                    for (c, &x) in bl.iter().enumerate() {
                        rounds[c][0] = x;
                    }
                    let mut fill = rounds;
                    drain::<1, 3>(&mut rounds, &kn, 12.5, dt);
                    drain_fill::<1, 3>(&mut fill, &kn, 12.5, dt);
                    for c in 0..3 {
                        let (a, b) = (rounds[c][0], fill[c][0]);
                        assert!(
                            (a - b).abs() <= 1.0 + 1e-5 * a,
                            "w {w:?} b {bl:?} dt {dt}: class {c}: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }
}
