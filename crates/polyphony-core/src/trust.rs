//! The trust region's state machine (paper §5, TuRBO-style): a radius around the best measured
//! configuration that doubles after a streak of improvements up to the initial radius (the
//! paper's fixed ε), halves after a streak of stalls, re-opens when it has stalled at its
//! minimum above every SLO, and resets on a regime shift. The controller bounds its acquisition
//! by the region only while the rolling best meets every SLO; before that it searches the whole
//! space (a region larger than ε never bounds a step).
//! Pure; serialised inside the controller's state under the field names it always had.

use crate::params::ControllerParams;
use serde::{Deserialize, Serialize};

/// The radius and the streaks that move it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustRegion {
    /// The radius (space distance) acquisition may move from the best point.
    pub radius: f64,
    improve_streak: u32,
    stall_streak: u32,
}

impl TrustRegion {
    /// The initial region: `trust_radius_init`, no streak.
    pub fn new(params: &ControllerParams) -> TrustRegion {
        TrustRegion {
            radius: params.trust_radius_init,
            improve_streak: 0,
            stall_streak: 0,
        }
    }

    /// Back to the initial region (a regime shift).
    pub fn reset(&mut self, params: &ControllerParams) {
        *self = TrustRegion::new(params);
    }

    /// One control observation: `improved` says whether it beat the rolling best `best_before`
    /// (the best before it, `None` when there was none).
    pub fn update(&mut self, improved: bool, best_before: Option<f64>, params: &ControllerParams) {
        // At most the paper's fixed ε: a larger region would send the acquisition to its edges,
        // where the residual is extrapolated.
        let max = params.trust_radius_init;
        if improved {
            self.improve_streak += 1;
            self.stall_streak = 0;
            if self.improve_streak >= params.trust_expand_after {
                self.radius = (self.radius * 2.0).min(max);
                self.improve_streak = 0;
            }
            return;
        }
        self.stall_streak += 1;
        self.improve_streak = 0;
        if self.stall_streak >= params.trust_shrink_after {
            // TuRBO's restart: a region that has shrunk to its minimum without improving, around
            // a best point that still misses an SLO (J > 1), is a local trap under noise;
            // re-open it instead of staying there.
            let at_min = self.radius <= params.trust_radius_min * (1.0 + 1e-9);
            if params.trust_restart && at_min && best_before.is_some_and(|b| b > 1.0) {
                tracing::info!(g_best = ?best_before, "trust region re-opened: stalled at its minimum radius above every SLO");
                self.radius = params.trust_radius_init;
            } else {
                self.radius = (self.radius * 0.5).max(params.trust_radius_min);
            }
            self.stall_streak = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_on_improvement_shrinks_on_stall_and_reopens_above_the_slos() {
        let p = ControllerParams::default();
        let mut t = TrustRegion::new(&p);
        // A stall period halves it; a streak of improvements doubles it back.
        for _ in 0..p.trust_shrink_after {
            t.update(false, Some(2.0), &p);
        }
        assert_eq!(t.radius, p.trust_radius_init * 0.5);
        for _ in 0..p.trust_expand_after {
            t.update(true, Some(2.0), &p);
        }
        assert_eq!(t.radius, p.trust_radius_init);
        // Stall until the minimum, then one more shrink period re-opens it (best above 1).
        let mut periods = 0;
        while t.radius > p.trust_radius_min * (1.0 + 1e-9) {
            for _ in 0..p.trust_shrink_after {
                t.update(false, Some(2.0), &p);
            }
            periods += 1;
            assert!(periods < 64, "never reached the minimum");
        }
        for _ in 0..p.trust_shrink_after {
            t.update(false, Some(2.0), &p);
        }
        assert_eq!(t.radius, p.trust_radius_init);
        // Below every SLO it stays at the minimum instead.
        let mut u = TrustRegion {
            radius: p.trust_radius_min,
            improve_streak: 0,
            stall_streak: 0,
        };
        for _ in 0..p.trust_shrink_after {
            u.update(false, Some(0.5), &p);
        }
        assert_eq!(u.radius, p.trust_radius_min);
        u.reset(&p);
        assert_eq!(u, TrustRegion::new(&p));
    }

    #[test]
    fn the_radius_never_exceeds_its_initial_value() {
        let p = ControllerParams::default();
        let mut t = TrustRegion::new(&p);
        for g in [0.8, 2.0] {
            for _ in 0..10 * p.trust_expand_after {
                t.update(true, Some(g), &p);
                assert!(t.radius <= p.trust_radius_init + 1e-12, "{}", t.radius);
            }
        }
    }
}
