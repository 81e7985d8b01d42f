//! The trust region's state machine (paper §5, TuRBO-style): a radius around the best measured
//! configuration that doubles after a streak of improvements (up to the initial radius — the
//! paper's fixed ε — once a compliant configuration is known), halves after a streak of stalls,
//! re-opens when it has stalled at its minimum above every SLO, and resets on a regime shift.
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
    /// (the best before it, `None` when there was none); `compliant` whether a configuration
    /// meeting every SLO (J < 1) is known, this observation included.
    pub fn update(&mut self, improved: bool, best_before: Option<f64>, compliant: bool, params: &ControllerParams) {
        // With a compliant configuration known, the paper's fixed ε: TuRBO's growth serves to
        // find a compliant region; a region grown to the whole space after that sends the
        // acquisition to its edges, where the residual is extrapolated.
        let max = if compliant {
            params.trust_radius_init
        } else {
            params.trust_radius_max
        };
        self.radius = self.radius.min(max);
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
        for _ in 0..p.trust_expand_after {
            t.update(true, Some(2.0), false, &p);
        }
        assert_eq!(t.radius, (p.trust_radius_init * 2.0).min(p.trust_radius_max));
        // Stall until the minimum, then one more shrink period re-opens it (best above 1).
        let mut periods = 0;
        while t.radius > p.trust_radius_min * (1.0 + 1e-9) {
            for _ in 0..p.trust_shrink_after {
                t.update(false, Some(2.0), false, &p);
            }
            periods += 1;
            assert!(periods < 64, "never reached the minimum");
        }
        for _ in 0..p.trust_shrink_after {
            t.update(false, Some(2.0), false, &p);
        }
        assert_eq!(t.radius, p.trust_radius_init);
        // Below every SLO it stays at the minimum instead.
        let mut u = TrustRegion {
            radius: p.trust_radius_min,
            improve_streak: 0,
            stall_streak: 0,
        };
        for _ in 0..p.trust_shrink_after {
            u.update(false, Some(0.5), true, &p);
        }
        assert_eq!(u.radius, p.trust_radius_min);
        u.reset(&p);
        assert_eq!(u, TrustRegion::new(&p));
    }

    #[test]
    fn with_a_compliant_configuration_known_the_radius_stays_at_its_initial_value() {
        let p = ControllerParams::default();
        let mut t = TrustRegion::new(&p);
        for _ in 0..10 * p.trust_expand_after {
            t.update(true, Some(0.8), true, &p);
            assert!(t.radius <= p.trust_radius_init + 1e-12, "{}", t.radius);
        }
        // A region grown while nothing was compliant shrinks back once something is.
        for _ in 0..10 * p.trust_expand_after {
            t.update(true, Some(2.0), false, &p);
        }
        assert_eq!(t.radius, p.trust_radius_max);
        t.update(true, Some(1.2), true, &p);
        assert!(t.radius <= p.trust_radius_init + 1e-12, "{}", t.radius);
    }
}
