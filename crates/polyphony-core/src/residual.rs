//! The space in which the residual GP learns the model's error (§4.2), and the transforms
//! in and out of it. Pure arithmetic; no state.
//!
//! The paper corrects the model additively: R = g − f, ĝ = f + μ_R. That works while the
//! model's error is roughly the same number of objective units everywhere. It is not here: J
//! spans ln(N)/c ≈ 0.1 at a configuration that meets every SLO easily to 20–30 at a poor one,
//! and the model's error grows with J (flowsim's slowdown error is relative: docs/models.md).
//! A residual measured at a poor start (g = 16.8 where f = 26.4: R = −9.6, seen on the
//! testbed) then carries over to every good candidate (f ≈ 2 → ĝ = −7.6, below anything J can
//! take), every candidate is censored at J's lower bound, and EI cannot tell them apart.
//!
//! [`ResidualSpace::Log`] learns the error as a ratio instead: R = ln g − ln f, ĝ = f·e^{μ_R},
//! and EI is taken on ln J (improvement in log units against ln g_best, censored at
//! ln(ln(N)/c)). The same measurement then says "the model overestimates by a factor 1.6",
//! which keeps the model's ranking of good candidates. Model-free variants (f ≡ 0) learn ln g
//! itself. [`ResidualSpace::Additive`] is the paper's form, kept for comparison.

use serde::{Deserialize, Serialize};

/// How the residual GP represents the model's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResidualSpace {
    /// R = g − f (the paper's form).
    Additive,
    /// R = ln g − ln f: a multiplicative error; EI on ln J.
    Log,
}

/// The smallest J the log transform takes (J > 0 always; this only guards a zero).
const TINY: f64 = 1e-12;

impl ResidualSpace {
    /// A measured objective g (or g_best, or J's lower bound) in the residual's space.
    /// `Log` maps a lower bound of 0 (one class) to −∞.
    pub fn of_g(self, g: f64) -> f64 {
        match self {
            ResidualSpace::Additive => g,
            ResidualSpace::Log if g <= 0.0 => f64::NEG_INFINITY,
            ResidualSpace::Log => g.ln(),
        }
    }

    /// The model's objective f in the residual's space; `with_model = false` (model-free
    /// variants, f ≡ 0) gives 0, so that the GP learns g (or ln g) itself. An unusable f
    /// (+∞) stays +∞.
    pub fn of_f(self, f: f64, with_model: bool) -> f64 {
        if !with_model {
            return 0.0;
        }
        match self {
            ResidualSpace::Additive => f,
            ResidualSpace::Log => f.max(TINY).ln(),
        }
    }

    /// The residual of one measurement: g − f, or ln g − ln f.
    pub fn residual(self, g: f64, f: f64, with_model: bool) -> f64 {
        self.of_g(g.max(TINY)) - self.of_f(f, with_model)
    }

    /// A value of the residual's space back in objective units.
    pub fn to_objective(self, v: f64) -> f64 {
        match self {
            ResidualSpace::Additive => v,
            ResidualSpace::Log => v.exp(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_learned_at_a_poor_configuration_keeps_good_candidates_above_the_bound() {
        // The testbed's first interval: g = 16.8 where the model said 26.4.
        let r_add = ResidualSpace::Additive.residual(16.8, 26.4, true);
        let r_log = ResidualSpace::Log.residual(16.8, 26.4, true);
        // Carried over to a good candidate the model puts at f = 2:
        let add = 2.0 + r_add;
        let log = ResidualSpace::Log.to_objective(ResidualSpace::Log.of_f(2.0, true) + r_log);
        assert!(add < 0.0, "additive: {add}, below anything J can take");
        assert!((log - 2.0 * 16.8 / 26.4).abs() < 1e-9, "log: {log}");
    }

    #[test]
    fn model_free_variants_learn_the_objective_itself() {
        assert_eq!(ResidualSpace::Additive.residual(3.0, 0.0, false), 3.0);
        assert!((ResidualSpace::Log.residual(3.0, 0.0, false) - 3.0f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn the_transforms_invert_and_handle_the_edges() {
        for s in [ResidualSpace::Additive, ResidualSpace::Log] {
            for g in [0.11, 1.0, 17.5] {
                assert!((s.to_objective(s.of_g(g)) - g).abs() < 1e-12);
            }
        }
        assert_eq!(ResidualSpace::Log.of_g(0.0), f64::NEG_INFINITY);
        assert_eq!(ResidualSpace::Log.of_f(f64::INFINITY, true), f64::INFINITY);
    }
}
