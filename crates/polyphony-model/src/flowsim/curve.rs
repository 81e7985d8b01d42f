//! The truncated-sum curve of one processor-sharing class: the aggregate state that lets
//! `flowsim`'s aggregate mode answer "how much of the class's backlog stands in front of a
//! flow of x bytes" without keeping its flows.
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
//! The curve is kept at fixed points x_0 < … < x_{G−1} (a geometric grid) plus (x_max, B), with
//! x_max the largest flow the class can hold; between points it is interpolated linearly
//! (exact for the points themselves after an arrival; an approximation after service).

/// Points of the grid.
pub(crate) const G: usize = 4;
/// log₂ of the grid's ratio (×4 per point).
const STEP_LOG2: u32 = 3;
/// x_0: one full packet on the wire.
const X0: f64 = 1514.0;

/// The grid x_g = x_0 · 4^g.
pub(crate) const GRID: [f64; G] = {
    let mut g = [0.0; G];
    let mut i = 0;
    while i < G {
        g[i] = X0 * (1u64 << (STEP_LOG2 * i as u32)) as f64;
        i += 1;
    }
    g
};

/// 1 / (x_g − x_{g−1}) for g ≥ 1 (index 0: 1 / x_0).
const INV_WIDTH: [f64; G] = {
    let mut w = [0.0; G];
    w[0] = 1.0 / X0;
    let mut i = 1;
    while i < G {
        w[i] = 1.0 / (GRID[i] - GRID[i - 1]);
        i += 1;
    }
    w
};

/// The grid segment holding x > x_0: g with x_{g−1} < x ≤ x_g (G: beyond the last point).
#[inline]
fn segment(x: f64) -> usize {
    // floor(log₂(x / x_0)) from the exponent bits, then / STEP_LOG2, + 1.
    let y = x * (1.0 / X0);
    let e = ((y.to_bits() >> 52) as i64 - 1023).max(0) as u32;
    let g = (e / STEP_LOG2) as usize + 1;
    // x on a grid point belongs to the segment below it.
    let g = if g <= G && x <= GRID[g - 1] { g - 1 } else { g };
    g.clamp(1, G)
}

/// The top of the curve: the largest remaining size a class can hold, and 1 / (that − x_{G−1}).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Top {
    x: f64,
    inv_width: f64,
}

impl Top {
    /// For a class whose largest flow is `max_size` bytes.
    pub fn new(max_size: f64) -> Top {
        let x = max_size.max(GRID[G - 1]) + 1.0;
        Top {
            x,
            inv_width: 1.0 / (x - GRID[G - 1]),
        }
    }
}

/// T at the grid points and the backlog B (= T at the top).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Curve {
    pub t: [f64; G],
    pub b: f64,
}

impl Curve {
    pub const EMPTY: Curve = Curve { t: [0.0; G], b: 0.0 };

    /// T(x), interpolated.
    #[inline]
    pub fn at(&self, x: f64, top: &Top) -> f64 {
        if x <= X0 {
            return self.t[0] * x * INV_WIDTH[0];
        }
        let g = segment(x);
        let (x0, y0) = (GRID[g - 1], self.t[g - 1]);
        if g < G {
            y0 + (self.t[g] - y0) * (x - x0) * INV_WIDTH[g]
        } else if x >= top.x {
            self.b
        } else {
            y0 + (self.b - y0) * (x - x0) * top.inv_width
        }
    }

    /// The per-flow service δ with T(δ) = `served` (0 ≤ served < B), and the grid segment
    /// holding δ (0: below x_0).
    #[inline]
    fn inverse(&self, served: f64, top: &Top) -> (f64, usize) {
        if served <= self.t[0] {
            return (served / self.t[0] * X0, 0);
        }
        let mut g = 1;
        while g < G && self.t[g] < served {
            g += 1;
        }
        let (x0, y0) = (GRID[g - 1], self.t[g - 1]);
        let (x1, y1) = if g < G { (GRID[g], self.t[g]) } else { (top.x, self.b) };
        if y1 <= y0 {
            return (x0, g);
        }
        (x0 + (x1 - x0) * (served - y0) / (y1 - y0), g)
    }

    /// Processor sharing has served the class since the curve was last updated, leaving a
    /// backlog of `b` bytes (≤ the curve's): shifts the curve by T⁻¹(served).
    #[inline]
    pub fn serve(&mut self, b: f64, top: &Top) {
        let served = self.b - b;
        if b <= 0.0 {
            *self = Curve::EMPTY;
            return;
        }
        if served <= 0.0 {
            return;
        }
        let (d, gd) = self.inverse(served, top);
        let mut t = [0.0; G];
        // x_g + d lies above x_g and above d: start the segment walk at the higher of the two.
        let mut seg = gd.max(1);
        for (g, tg) in t.iter_mut().enumerate() {
            let y = GRID[g] + d;
            seg = seg.max(g + 1);
            while seg < G && GRID[seg] < y {
                seg += 1;
            }
            let (x0, y0) = (GRID[seg - 1], self.t[seg - 1]);
            let v = if seg < G {
                y0 + (self.t[seg] - y0) * (y - x0) * INV_WIDTH[seg]
            } else if y >= top.x {
                self.b
            } else {
                y0 + (self.b - y0) * (y - x0) * top.inv_width
            };
            *tg = (v - served).clamp(0.0, b);
        }
        self.t = t;
        self.b = b;
    }

    /// A flow of `s` bytes arrives.
    #[inline]
    pub fn add(&mut self, s: f64) {
        for (tg, x) in self.t.iter_mut().zip(GRID) {
            *tg += s.min(x);
        }
        self.b += s;
    }

    /// The number of active flows (T's slope at 0, counting flows with less than one packet
    /// left as fractions).
    #[inline]
    pub fn flows(&self) -> f64 {
        self.t[0] * INV_WIDTH[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_bracket_their_points() {
        for x in [
            1514.5,
            2000.0,
            GRID[1],
            GRID[1] + 1.0,
            GRID[G - 2] * 0.999,
            GRID[G - 1],
            1e12,
        ] {
            let g = segment(x);
            assert!(GRID[g - 1] < x && (g == G || x <= GRID[g]), "x {x} segment {g}");
        }
    }

    #[test]
    fn arrivals_and_processor_sharing_service_are_tracked() {
        let mut c = Curve::EMPTY;
        c.add(1_000.0);
        c.add(100_000.0);
        assert!((c.flows() - (1.0 + 1_000.0 / 1514.0)).abs() < 1e-9);
        let top = Top::new(100_000.0);
        assert_eq!(c.at(1e9, &top), 101_000.0);
        assert_eq!(c.at(GRID[1], &top), 1_000.0 + GRID[1]);
        // Both get 1 000 bytes of service: the small flow is done, the large has 99 000 left
        // (within the grid's resolution: below x_0 the curve is taken as linear).
        c.serve(99_000.0, &top);
        assert!((c.flows() - 1.0).abs() < 0.2, "{}", c.flows());
        assert!(
            (c.at(5_000.0, &top) - 5_000.0).abs() < 1_500.0,
            "{}",
            c.at(5_000.0, &top)
        );
        assert_eq!(c.at(1e9, &top), 99_000.0);
        c.serve(0.0, &top);
        assert_eq!(c.flows(), 0.0);
    }
}
