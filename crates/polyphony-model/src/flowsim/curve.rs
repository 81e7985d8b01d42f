//! The truncated-sum curve of one processor-sharing class: the aggregate state that lets
//! `flowsim`'s aggregate mode answer "how much of the class's backlog stands in front of a
//! flow of x bytes" without keeping its flows. Pure arithmetic on its own state.
//!
//! For the active flows j of a class with remaining bytes rem_j,
//! T(x) = Σ_j min(x, rem_j). T is concave and piecewise linear, T(0) = 0, its slope at 0 is the
//! number of active flows, and T(∞) = B, the class's backlog. Three facts make it cheap:
//!
//! * an arrival of s bytes adds min(x, s) to T(x);
//! * processor sharing gives every active flow the same service δ, after which
//!   T'(x) = Σ_j min(x, (rem_j − δ)⁺) = T(x + δ) − T(δ), and the class was served T(δ) bytes —
//!   so the δ behind a served amount S is T⁻¹(S), and successive services compose (δ₁ + δ₂);
//! * T(s) is the processor-sharing delay (in bytes of the class's service) that the active
//!   flows impose on a new flow of s bytes, and T(w) the bytes they can have in flight with
//!   windows of w bytes.
//!
//! The curve is kept at fixed points x_0 < … < x_{G−1} (a geometric grid) plus (x_top, B), with
//! x_top just above the largest flow the class can hold; between points it is interpolated
//! linearly (exact at the points after an arrival; an approximation after service). The
//! interpolant of a concave curve is the minimum of its segments' lines, so shifting needs no
//! search: every operation is the same straight-line arithmetic (selects, no branches) for
//! every lane, and `L` configurations (lanes) are updated together (the compiler vectorises the
//! loops over lanes). The lines are evaluated as intercept + slope · x with fused
//! multiply-adds, and T⁻¹ finds its segment by a two-deep tree of selects (the curve is
//! non-decreasing, so the segments starting below a level form a prefix).

// Lane loops index several arrays in lock step by lane; that form is what vectorises.
#![allow(clippy::needless_range_loop)]

/// The lanes' floating-point type: single precision, so a vector holds twice the lanes
/// (bytes and nanoseconds keep about seven significant digits, far finer than the model).
pub(crate) type F = f32;

/// Points of the grid.
pub(crate) const G: usize = 4;
/// x_0: one full packet on the wire.
const X0: F = 1514.0;
/// The grid's ratio.
const RATIO: F = 8.0;

/// The grid x_g = x_0 · 8^g.
pub(crate) const GRID: [F; G] = {
    let mut g = [0.0; G];
    let mut x = X0;
    let mut i = 0;
    while i < G {
        g[i] = x;
        x *= RATIO;
        i += 1;
    }
    g
};

/// Where segment k starts (k = 0: at 0; k ≥ 1: at x_{k−1}); segment G ends at the top.
const SEG_X: [F; G + 1] = {
    let mut s = [0.0; G + 1];
    let mut i = 1;
    while i <= G {
        s[i] = GRID[i - 1];
        i += 1;
    }
    s
};

/// 1 / the width of segments 0..G−1 (segment G's depends on the class: [`Top`]).
const INV_WIDTH: [F; G] = {
    let mut w = [0.0; G];
    w[0] = 1.0 / X0;
    let mut i = 1;
    while i < G {
        w[i] = 1.0 / (GRID[i] - GRID[i - 1]);
        i += 1;
    }
    w
};

/// The top of a class's curve: just above the largest flow it can hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Top {
    /// 1 / (top − x_{G−1}).
    pub inv_width: F,
}

impl Top {
    /// For a class whose largest flow is `max_size` bytes.
    pub fn new(max_size: f64) -> Top {
        let x = (max_size as F).max(GRID[G - 1]) + 1.0;
        Top {
            inv_width: 1.0 / (x - GRID[G - 1]),
        }
    }

    /// The segment (0..=G) holding `s` bytes (s < the top).
    pub fn segment(&self, s: f64) -> u8 {
        let s = s as F;
        GRID.iter().filter(|&&x| x < s).count() as u8
    }

    /// Where a flow of `s` bytes lies on the curve, for [`Curves::at`]: its segment k, 1 / the
    /// segment's width and s − the segment's start (configuration-independent, so computed
    /// once per flow and link).
    pub fn locate(&self, s: F) -> Point {
        let k = self.segment(s as f64) as usize;
        Point {
            k: k as u8,
            inv_width: if k < G { INV_WIDTH[k] } else { self.inv_width },
            dx: s - SEG_X[k],
        }
    }
}

/// A flow's place on its class's curve (from [`Top::locate`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Point {
    /// The segment (0..=G).
    pub k: u8,
    /// 1 / its width.
    pub inv_width: F,
    /// The flow's size − the segment's start.
    pub dx: F,
}

/// The smaller of two lane values (the plain comparison, which vectorises to one instruction).
#[inline(always)]
pub(crate) fn min(a: F, b: F) -> F {
    if a < b {
        a
    } else {
        b
    }
}

/// The larger of two lane values (see [`min`]).
#[inline(always)]
pub(crate) fn max(a: F, b: F) -> F {
    if a > b {
        a
    } else {
        b
    }
}

/// `a` where `mask` is all ones, `b` where it is zero (bitwise, so it vectorises to a blend).
#[inline(always)]
fn pick(mask: u32, a: F, b: F) -> F {
    F::from_bits((a.to_bits() & mask) | (b.to_bits() & !mask))
}

/// Per lane, `v[k]` for the last k whose segment starts below `level` (`y[k] < level`; k = 0
/// when none does; those k form a prefix), by a tree of selects: two deep. Which form of
/// select the compiler turns into vector blends depends on the width: a comparison choosing
/// between floats at four and eight lanes (there the bitwise form became scalar integer work:
/// a four-lane pass took 1.2× as long, an eight-lane one 1.25×), the bitwise [`pick`] at one
/// and sixteen (there the comparison form took 1.1× / 1.4× as long; `examples/aggregate_batch`).
#[inline(always)]
fn last_below<const L: usize>(y: &[[F; L]; G + 2], level: &[F; L], v: &[[F; L]; G + 1]) -> [F; L] {
    let mut out = [0.0; L];
    for l in 0..L {
        let s = level[l];
        if L == 4 || L == 8 {
            let lo = if y[1][l] < s { v[1][l] } else { v[0][l] };
            let hi = if y[3][l] < s { v[3][l] } else { v[2][l] };
            let mid = if y[2][l] < s { hi } else { lo };
            out[l] = if y[4][l] < s { v[4][l] } else { mid };
        } else {
            let m = |k: usize| ((y[k][l] < s) as u32).wrapping_neg();
            let lo = pick(m(1), v[1][l], v[0][l]);
            let hi = pick(m(3), v[3][l], v[2][l]);
            out[l] = pick(m(4), v[4][l], pick(m(2), hi, lo));
        }
    }
    out
}

/// One class's curve in `L` configurations at once, per lane: `y[0]` = T(0) = 0, `y[1 + g]` =
/// T at grid point g, `y[G + 1]` = the backlog B (T at the top). Segment k runs from `y[k]`
/// to `y[k + 1]`, so every segment is read the same way, without a branch on k.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Curves<const L: usize> {
    pub y: [[F; L]; G + 2],
}

impl<const L: usize> Curves<L> {
    pub const EMPTY: Curves<L> = Curves { y: [[0.0; L]; G + 2] };

    /// T(s) in every lane, `p` = `top.locate(s)`.
    #[inline(always)]
    pub fn at(&self, p: &Point) -> [F; L] {
        let k = (p.k as usize).min(G);
        let (lo, hi) = (&self.y[k], &self.y[k + 1]);
        let mut v = [0.0; L];
        for l in 0..L {
            v[l] = ((hi[l] - lo[l]) * p.inv_width).mul_add(p.dx, lo[l]);
        }
        v
    }

    /// Processor sharing has served the class since the curve was last updated, leaving
    /// backlogs `b` (≤ the curve's): shifts every lane's curve by T⁻¹(served). (Loops run over
    /// lanes innermost, so they vectorise.)
    #[inline(always)]
    pub fn serve(&mut self, b: &[F; L], top: &Top) {
        let y = &self.y;
        // Each segment's slope (segment k starts at y[k]).
        let mut slope = [[0.0; L]; G + 1];
        for k in 0..=G {
            let iw = if k < G { INV_WIDTH[k] } else { top.inv_width };
            for l in 0..L {
                slope[k][l] = (y[k + 1][l] - y[k][l]) * iw;
            }
        }
        let mut served = [0.0; L];
        for l in 0..L {
            served[l] = max(y[G + 1][l] - b[l], 0.0);
        }
        // T⁻¹(served) on the segment holding it: the last k whose start y[k] lies below
        // `served`. The curve is non-decreasing, so the segments starting below form a prefix,
        // and the last of them is picked by a tree of selects on the comparisons (independent
        // of each other: two selects deep instead of a chain of four updates).
        const { assert!(G == 4, "the select tree below is written for four grid points") };
        let seg_x: [[F; L]; G + 1] = SEG_X.map(|x| [x; L]);
        let sx = last_below(y, &served, &seg_x);
        let sy = last_below(y, &served, &std::array::from_fn(|k| y[k]));
        let sl = last_below(y, &served, &slope);
        let mut d = [0.0; L];
        for l in 0..L {
            d[l] = if sl[l] > 0.0 {
                sx[l] + (served[l] - sy[l]) / sl[l]
            } else {
                sx[l]
            };
        }
        // T(x_g + d) − served: the smallest of the segments' lines and the level B. x_g + d lies
        // beyond x_g, in segment g + 1 or later, and on a concave curve the lines of earlier
        // segments lie above it there. Each line as intercept + slope · x, fused.
        let mut c = [[0.0; L]; G + 1];
        for k in 1..=G {
            for l in 0..L {
                c[k][l] = (-slope[k][l]).mul_add(SEG_X[k], y[k][l]);
            }
        }
        let mut t = [[0.0; L]; G];
        for g in 0..G {
            let mut v = y[G + 1];
            let mut z = [0.0; L];
            for l in 0..L {
                z[l] = GRID[g] + d[l];
            }
            for k in g + 1..=G {
                for l in 0..L {
                    v[l] = min(v[l], slope[k][l].mul_add(z[l], c[k][l]));
                }
            }
            for l in 0..L {
                t[g][l] = min(max(v[l] - served[l], 0.0), max(b[l], 0.0));
            }
        }
        self.y[1..=G].copy_from_slice(&t);
        for l in 0..L {
            self.y[G + 1][l] = max(b[l], 0.0);
        }
    }

    /// A flow of `s` bytes arrives in every lane.
    #[inline(always)]
    pub fn add(&mut self, s: F) {
        for (tg, x) in self.y[1..=G].iter_mut().zip(GRID) {
            let m = min(s, x);
            for v in tg.iter_mut() {
                *v += m;
            }
        }
        for v in &mut self.y[G + 1] {
            *v += s;
        }
    }

    /// The number of active flows per lane (T's slope at 0, counting flows with less than one
    /// packet left as fractions).
    #[inline(always)]
    pub fn flows(&self, l: usize) -> F {
        self.y[1][l] * INV_WIDTH[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_bracket_their_points() {
        let top = Top::new(1e9);
        for s in [1.0, 1514.0, 1515.0, GRID[1], GRID[1] + 1.0, GRID[G - 1] + 1.0, 1e8] {
            let k = top.segment(s as f64) as usize;
            assert!(SEG_X[k] < s || k == 0, "s {s} segment {k}");
            assert!(k == G || s <= GRID[k], "s {s} segment {k}");
        }
    }

    #[test]
    fn arrivals_and_processor_sharing_service_are_tracked() {
        let mut c = Curves::<1>::EMPTY;
        c.add(1_000.0);
        c.add(100_000.0);
        assert!((c.flows(0) - (1.0 + 1_000.0 / 1514.0)).abs() < 1e-6);
        let top = Top::new(100_000.0);
        assert_eq!(c.at(&top.locate(GRID[G - 1])), [101_000.0]);
        assert_eq!(c.at(&top.locate(GRID[1])), [1_000.0 + GRID[1]]);
        // Both get 1 000 bytes of service: the small flow is done, the large has 99 000 left
        // (within the grid's resolution: below x_0 the curve is taken as linear).
        c.serve(&[99_000.0], &top);
        assert!((c.flows(0) - 1.0).abs() < 0.2, "{}", c.flows(0));
        let t5 = c.at(&top.locate(5_000.0))[0];
        assert!((t5 - 5_000.0).abs() < 1_500.0, "{t5}");
        assert_eq!(c.y[G + 1], [99_000.0]);
        c.serve(&[0.0], &top);
        assert_eq!((c.flows(0), c.y[G + 1]), (0.0, [0.0]));
    }

    #[test]
    fn lanes_are_independent() {
        let top = Top::new(1e6);
        let mut two = Curves::<2>::EMPTY;
        let (mut a, mut b) = (Curves::<1>::EMPTY, Curves::<1>::EMPTY);
        for s in [3_000.0, 50_000.0, 700.0, 400_000.0] {
            two.add(s);
            a.add(s);
            b.add(s);
        }
        two.serve(&[300_000.0, 100_000.0], &top);
        a.serve(&[300_000.0], &top);
        b.serve(&[100_000.0], &top);
        for g in 0..G + 2 {
            assert_eq!(two.y[g], [a.y[g][0], b.y[g][0]]);
        }
    }
}
