//! Every hyperparameter of the controller, with its default and the reason for it, in one
//! place. Validation names the offending field. Pure data; touches nothing else.

use crate::gp::MeanKind;
use crate::residual::ResidualSpace;
use crate::CoreError;
use serde::{Deserialize, Serialize};

/// Local solver used to refine acquisition candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalSolver {
    /// argmin's Nelder–Mead: derivative-free, one model evaluation per step.
    NelderMead,
    /// argmin's L-BFGS with a forward finite-difference gradient (one batch of D+1 model
    /// evaluations per gradient).
    LbfgsFiniteDiff,
    /// A batched (1+λ) local search: each round draws λ = 16 Gaussian steps around every
    /// start, scores all of them in one model call, moves each start to its best draw if that
    /// improves it and halves its step otherwise (4 rounds).
    Batched,
}

/// All controller hyperparameters. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ControllerParams {
    /// Seed of every random choice (candidate sampling, common-random-number seeds). Same seed,
    /// same observations, same model → same proposals.
    pub seed: u64,
    /// LSE sharpness c. 10 keeps the smooth maximum within ln(3)/10 ≈ 0.11 of the true maximum
    /// for three classes (ratios are O(1)) while staying smooth enough for the optimiser.
    pub lse_sharpness: f64,
    /// Fairness weight λ. 0.5: fairness matters, but one unit of worst-class ratio outweighs
    /// the mean absolute deviation (which is at most ~(N−1)/N of the spread).
    pub fairness_weight: f64,
    /// Trust-region penalty β. 1e4, as in the paper (§4.4).
    pub penalty_beta: f64,
    /// Initial trust-region radius ε in normalised units, the bound on a step from a compliant
    /// incumbent (before one is known the acquisition searches the whole space). 0.45: a move
    /// of 0.45 along one hypercube axis is ~45 % of a knob's (log) range — small enough that
    /// the residual GP's local correction stays valid.
    /// Chosen over 0.3 and 0.6 on development seeds of every study (ahead of 0.3 on each; 0.6
    /// loses under load shifts): docs/results/scale-dev/README.md.
    pub trust_radius_init: f64,
    /// Smallest radius. 0.1: a weight move of ~0.07 (a class's share changing by a fifth)
    /// is ~0.08 away; a smaller region could not fix a starved class in one step.
    pub trust_radius_min: f64,
    /// Consecutive improvements of g_best before the radius doubles. 2, after TuRBO-style
    /// trust regions: expand when the local model is proving right.
    pub trust_expand_after: u32,
    /// Consecutive non-improvements before the radius halves. 3: tolerate noise before
    /// concluding the region is too large.
    pub trust_shrink_after: u32,
    /// Re-open the region to `trust_radius_init` when it would shrink again at its minimum
    /// while the best measured J is above 1 (some SLO still missed) — TuRBO's restart. The
    /// region bounds a step only once the best J is below 1, so this decides the radius a first
    /// compliant incumbent starts with (ε rather than the minimum). On; docs/controller.md.
    pub trust_restart: bool,
    /// Safe exploration (our addition, after SafeOpt-style safe Bayesian optimisation): once
    /// a measured configuration meets every SLO (g_best < 1), a candidate is proposed only if
    /// the upper confidence bound of its ĝ, mean + this many σ of the residual (in the
    /// residual's space), stays below 1; otherwise the best candidate that does, or the
    /// incumbent. 2: a one-sided ≈ 98 % bound. Measured in docs/evaluation.md §5.
    pub safe_ucb_sigmas: f64,
    /// Aitchison weight α of the distance (§4.4). `None` = automatic: α = (n−1)/D², where D is
    /// the Aitchison distance between two opposite corners of the floored simplex, so that
    /// crossing a whole simplex block costs as much as crossing its n−1 free hypercube axes.
    pub aitchison_alpha: Option<f64>,
    /// Rolling-best window W_g (iterations). 10: long enough that a noisy good sample keeps
    /// the trust region anchored for a while, short enough to forget a stale regime.
    pub best_window: usize,
    /// Rolling sample window W_s. 50: the GP stays cheap (O(W_s³)) and old regimes age out.
    pub sample_window: usize,
    /// Regime-shift factor φ: g > φ·g_best counts as an exceedance. 1.5: well above the
    /// ~5–10 % measurement noise of p99 slowdowns, well below a real load shift's jump.
    pub regime_factor: f64,
    /// Consecutive exceedances k before a regime shift is declared. 3: one or two bad
    /// intervals are noise or an unlucky probe; three are a new regime.
    pub regime_patience: u32,
    /// A configuration is novel if its distance to every stored sample exceeds this. 0.05:
    /// about a knob-rounding step; closer points only make the GP ill-conditioned.
    pub novelty_radius: f64,
    /// A sample is surprising if |R − μ_R| exceeds this many σ_R. 3: a three-sigma miss.
    pub surprise_sigmas: f64,
    /// Two configurations closer than this are the same configuration (never admitted twice).
    pub duplicate_radius: f64,
    /// Samples used to estimate volatility. 6: a few control intervals.
    pub denoiser_volatility_window: usize,
    /// Relative volatility below which the denoiser switches off. 0.02: below 2 % the signal
    /// is stable and smoothing would only add lag.
    pub denoiser_off_below: f64,
    /// Relative volatility that earns one sample of Gaussian width. 0.05: 5 % jitter → width 1.
    /// To be refined with testbed noise measurements.
    pub denoiser_volatility_per_width: f64,
    /// Widest smoothing kernel, in samples. 2: keeps the lag below ~3 intervals so a regime
    /// shift still shows within `regime_patience` iterations.
    pub denoiser_max_width: f64,
    /// Configuration-distance scale ρ of the denoiser's kernel: measurements of
    /// configurations farther apart than ~2ρ are not averaged. 0.05, the novelty radius: only
    /// repeated measurements of (nearly) the same configuration are smoothed.
    pub denoiser_config_radius: f64,
    /// Candidate GP nuggets (noise variance relative to the process variance), chosen by BIC
    /// together with the kernel: 0.01 (nearly noise-free residual), 0.1, 0.5 (noise as large
    /// as half the residual's variation — p99 slowdowns over one interval are that noisy).
    pub gp_nuggets: Vec<f64>,
    /// Mean models the kernel/mean selection may choose from ([`MeanKind`]). Both (`constant`,
    /// `linear`) by default. `["constant"]` keeps the residual's trend out of the fit: a linear
    /// mean has one coefficient per feature, fitted by least squares from the admitted samples,
    /// and with few, noisy samples (the scale study's 50 ms windows) those coefficients are
    /// noise that the acquisition extrapolates to the trust region's edge.
    pub gp_means: Vec<MeanKind>,
    /// Re-run the kernel/mean/nugget selection (8 kernel×mean pairs, then the winner at each
    /// other nugget: 10 fits by BIC) every this many proposals; in
    /// between only the selected candidate is refitted, warm-started. 5: see docs/controller.md
    /// (a selection costs ~10 refits and the choice rarely changes between proposals).
    pub gp_reselect_every: u32,
    /// Cobyla evaluations per hyperparameter fit. 60: a warm-started fit converges in far
    /// fewer; the cap bounds the worst case.
    pub gp_max_eval: usize,
    /// Fewest admitted samples before a GP is fitted; below, the prior is used. 3.
    pub gp_min_samples: usize,
    /// Where the residual GP learns the model's error ([`ResidualSpace`]): `log` (R = ln g −
    /// ln f, EI on ln J) or `additive` (the paper's R = g − f). Log: the model's error on J
    /// is relative, and an additive residual learned at a poor configuration pushes every
    /// good candidate below J's lower bound (`crate::residual`; measurements in
    /// docs/controller.md).
    pub residual: ResidualSpace,
    /// Calibrate the model per class before the objective ([`crate::calibration`]): each
    /// class's predicted ratio is multiplied by the median factor the model missed that class
    /// by over the admitted samples. On: a scalar residual cannot correct a model that errs
    /// differently per class (measured in docs/controller.md). Like the residual GP, it is part
    /// of the correction: the no-correction variant (open-loop model) does not calibrate.
    pub model_calibration: bool,
    /// Length scale ℓ of the calibration ([`crate::calibration`]), in space distance: a
    /// sample's log miss weighs exp(−d²/2ℓ²) at distance d, against a pseudo-sample of no miss.
    /// 0.2: a sample counts 0.61 at that distance and 0.08 one trust-region step (0.45) away,
    /// so a factor is the nearby samples' and a step into unmeasured space takes the model as
    /// it is (0.4 measured no better on development scenarios: docs/results/scale-dev/README.md).
    pub calibration_length: f64,
    /// Prior standard deviation of the residual before any fit, in the residual's units
    /// (objective units, or log units with `residual = log`). 0.3: the order of a 30 % model
    /// error (on a ratio near 1, when additive).
    pub gp_prior_sigma: f64,
    /// Random candidates scored in the first batch. 64.
    pub acq_random_candidates: usize,
    /// Best starts refined with the local solver. 4: the Nelder–Mead runs go in lock step, and
    /// flowsim evaluates up to four configurations in one pass for about the cost of one, so a
    /// fourth run costs next to nothing (docs/controller.md).
    pub acq_refine_starts: usize,
    /// Local solver; chosen by measurement (docs/controller.md).
    pub acq_solver: LocalSolver,
    /// Iterations of the local solver per start. 30.
    pub acq_max_iters: u64,
    /// Finite-difference step for the gradient solver, in optimisation coordinates. 0.02:
    /// larger than integer-knob rounding plateaus at mid range.
    pub acq_fd_step: f64,
    /// Below this EI, the proposal exploits (lowest ĝ inside the region) instead.
    pub acq_ei_floor: f64,
}

impl Default for ControllerParams {
    fn default() -> Self {
        ControllerParams {
            seed: 0,
            lse_sharpness: 10.0,
            fairness_weight: 0.5,
            penalty_beta: 1e4,
            trust_radius_init: 0.45,
            trust_radius_min: 0.1,
            trust_expand_after: 2,
            trust_shrink_after: 3,
            trust_restart: true,
            safe_ucb_sigmas: 2.0,
            aitchison_alpha: None,
            best_window: 10,
            sample_window: 50,
            regime_factor: 1.5,
            regime_patience: 3,
            novelty_radius: 0.05,
            surprise_sigmas: 3.0,
            duplicate_radius: 1e-6,
            denoiser_volatility_window: 6,
            denoiser_off_below: 0.02,
            denoiser_volatility_per_width: 0.05,
            denoiser_max_width: 2.0,
            denoiser_config_radius: 0.05,
            gp_nuggets: vec![0.01, 0.1, 0.5],
            gp_means: vec![MeanKind::Constant, MeanKind::Linear],
            gp_reselect_every: 5,
            gp_max_eval: 60,
            gp_min_samples: 3,
            residual: ResidualSpace::Log,
            model_calibration: true,
            calibration_length: 0.2,
            gp_prior_sigma: 0.3,
            acq_random_candidates: 64,
            acq_refine_starts: 4,
            acq_solver: LocalSolver::NelderMead,
            acq_max_iters: 30,
            acq_fd_step: 0.02,
            acq_ei_floor: 1e-6,
        }
    }
}

/// The hyperparameters an operator sets (the daemon's `[controller]` table): the objective's
/// shape, the trust region, the windows, regime detection, and the compute budget of one
/// decision. The rest of [`ControllerParams`] — the method's variant switches that studies
/// compare (residual space, per-class calibration, the GP's mean and nugget sets, the local
/// solver, the denoiser's internals, the Aitchison weight, the trust-region restart) — keep the
/// defaults chosen by measurement and are set only by the evaluation harness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OperatorParams {
    /// See [`ControllerParams::seed`].
    pub seed: u64,
    /// See [`ControllerParams::lse_sharpness`].
    pub lse_sharpness: f64,
    /// See [`ControllerParams::fairness_weight`].
    pub fairness_weight: f64,
    /// See [`ControllerParams::trust_radius_init`].
    pub trust_radius_init: f64,
    /// See [`ControllerParams::trust_radius_min`].
    pub trust_radius_min: f64,
    /// See [`ControllerParams::best_window`].
    pub best_window: usize,
    /// See [`ControllerParams::sample_window`].
    pub sample_window: usize,
    /// See [`ControllerParams::regime_factor`].
    pub regime_factor: f64,
    /// See [`ControllerParams::regime_patience`].
    pub regime_patience: u32,
    /// See [`ControllerParams::gp_min_samples`].
    pub gp_min_samples: usize,
    /// See [`ControllerParams::gp_max_eval`].
    pub gp_max_eval: usize,
    /// See [`ControllerParams::acq_random_candidates`].
    pub acq_random_candidates: usize,
    /// See [`ControllerParams::acq_refine_starts`].
    pub acq_refine_starts: usize,
    /// See [`ControllerParams::acq_max_iters`].
    pub acq_max_iters: u64,
}

impl Default for OperatorParams {
    fn default() -> Self {
        ControllerParams::default().operator()
    }
}

impl From<OperatorParams> for ControllerParams {
    fn from(o: OperatorParams) -> ControllerParams {
        ControllerParams {
            seed: o.seed,
            lse_sharpness: o.lse_sharpness,
            fairness_weight: o.fairness_weight,
            trust_radius_init: o.trust_radius_init,
            trust_radius_min: o.trust_radius_min,
            best_window: o.best_window,
            sample_window: o.sample_window,
            regime_factor: o.regime_factor,
            regime_patience: o.regime_patience,
            gp_min_samples: o.gp_min_samples,
            gp_max_eval: o.gp_max_eval,
            acq_random_candidates: o.acq_random_candidates,
            acq_refine_starts: o.acq_refine_starts,
            acq_max_iters: o.acq_max_iters,
            ..ControllerParams::default()
        }
    }
}

impl ControllerParams {
    /// The operator-settable part of these parameters.
    pub fn operator(&self) -> OperatorParams {
        OperatorParams {
            seed: self.seed,
            lse_sharpness: self.lse_sharpness,
            fairness_weight: self.fairness_weight,
            trust_radius_init: self.trust_radius_init,
            trust_radius_min: self.trust_radius_min,
            best_window: self.best_window,
            sample_window: self.sample_window,
            regime_factor: self.regime_factor,
            regime_patience: self.regime_patience,
            gp_min_samples: self.gp_min_samples,
            gp_max_eval: self.gp_max_eval,
            acq_random_candidates: self.acq_random_candidates,
            acq_refine_starts: self.acq_refine_starts,
            acq_max_iters: self.acq_max_iters,
        }
    }
}

fn bad(field: &str, value: impl ToString, why: &str) -> CoreError {
    CoreError::InvalidParam {
        field: field.into(),
        value: polyphony_spec::compact_value(value.to_string()),
        why: why.into(),
    }
}

fn positive(field: &str, v: f64) -> Result<(), CoreError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(bad(field, v, "must be a finite number > 0"))
    }
}

fn non_negative(field: &str, v: f64) -> Result<(), CoreError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(bad(field, v, "must be a finite number ≥ 0"))
    }
}

fn at_least(field: &str, v: usize, min: usize) -> Result<(), CoreError> {
    if v >= min {
        Ok(())
    } else {
        Err(bad(field, v, &format!("must be at least {min}")))
    }
}

/// Bounds a decision's compute budget: past these a typo (an extra zero or three) would stall
/// every decision or exhaust the node's memory rather than tune better.
fn at_most(field: &str, v: usize, max: usize, why: &str) -> Result<(), CoreError> {
    if v <= max {
        Ok(())
    } else {
        Err(bad(field, v, &format!("must be at most {max} ({why})")))
    }
}

impl ControllerParams {
    /// Checks every field; the error names the first offending one.
    pub fn validate(&self) -> Result<(), CoreError> {
        positive("lse_sharpness", self.lse_sharpness)?;
        non_negative("fairness_weight", self.fairness_weight)?;
        non_negative("penalty_beta", self.penalty_beta)?;
        positive("trust_radius_min", self.trust_radius_min)?;
        positive("trust_radius_init", self.trust_radius_init)?;
        positive("calibration_length", self.calibration_length)?;
        if self.trust_radius_min > self.trust_radius_init {
            return Err(bad(
                "trust_radius_init",
                self.trust_radius_init,
                &format!("must be at least trust_radius_min ({})", self.trust_radius_min),
            ));
        }
        at_least("trust_expand_after", self.trust_expand_after as usize, 1)?;
        at_least("trust_shrink_after", self.trust_shrink_after as usize, 1)?;
        if let Some(a) = self.aitchison_alpha {
            non_negative("aitchison_alpha", a)?;
        }
        non_negative("safe_ucb_sigmas", self.safe_ucb_sigmas)?;
        at_least("best_window", self.best_window, 1)?;
        at_least("sample_window", self.sample_window, 2)?;
        at_most(
            "sample_window",
            self.sample_window,
            1000,
            "the residual GP's fit grows with its cube",
        )?;
        if !(self.regime_factor.is_finite() && self.regime_factor > 1.0) {
            return Err(bad(
                "regime_factor",
                self.regime_factor,
                "must be a finite number > 1 (g > φ·g_best marks an exceedance)",
            ));
        }
        at_least("regime_patience", self.regime_patience as usize, 1)?;
        non_negative("novelty_radius", self.novelty_radius)?;
        positive("surprise_sigmas", self.surprise_sigmas)?;
        positive("duplicate_radius", self.duplicate_radius)?;
        at_least("denoiser_volatility_window", self.denoiser_volatility_window, 2)?;
        non_negative("denoiser_off_below", self.denoiser_off_below)?;
        positive("denoiser_volatility_per_width", self.denoiser_volatility_per_width)?;
        non_negative("denoiser_max_width", self.denoiser_max_width)?;
        positive("denoiser_config_radius", self.denoiser_config_radius)?;
        if self.gp_nuggets.is_empty() {
            return Err(bad("gp_nuggets", "[]", "give at least one candidate nugget"));
        }
        for (i, n) in self.gp_nuggets.iter().enumerate() {
            if !(n.is_finite() && *n > 0.0 && *n < 10.0) {
                return Err(bad(
                    &format!("gp_nuggets[{i}]"),
                    n,
                    "must lie in (0, 10): it is the noise variance relative to the process variance",
                ));
            }
        }
        if self.gp_means.is_empty() {
            return Err(bad(
                "gp_means",
                "[]",
                "give at least one mean model (\"constant\" or \"linear\")",
            ));
        }
        at_least("gp_reselect_every", self.gp_reselect_every as usize, 1)?;
        at_least("gp_max_eval", self.gp_max_eval, 25)?;
        at_most(
            "gp_max_eval",
            self.gp_max_eval,
            10_000,
            "likelihood evaluations per GP fit",
        )?;
        at_least("gp_min_samples", self.gp_min_samples, 2)?;
        positive("gp_prior_sigma", self.gp_prior_sigma)?;
        at_least("acq_refine_starts", self.acq_refine_starts, 1)?;
        at_most(
            "acq_refine_starts",
            self.acq_refine_starts,
            64,
            "local searches per decision",
        )?;
        at_most(
            "acq_random_candidates",
            self.acq_random_candidates,
            10_000,
            "model evaluations per decision",
        )?;
        at_least("acq_max_iters", self.acq_max_iters as usize, 1)?;
        at_most(
            "acq_max_iters",
            usize::try_from(self.acq_max_iters).unwrap_or(usize::MAX),
            10_000,
            "iterations of each local search",
        )?;
        positive("acq_fd_step", self.acq_fd_step)?;
        non_negative("acq_ei_floor", self.acq_ei_floor)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(ControllerParams::default().validate(), Ok(()));
    }

    #[test]
    fn a_compute_budget_past_its_bound_is_refused_naming_it() {
        let with = |f: &dyn Fn(&mut ControllerParams)| {
            let mut p = ControllerParams::default();
            f(&mut p);
            p.validate().map_err(|e| e.to_string())
        };
        let e = with(&|p| p.acq_random_candidates = 100_000_000).unwrap_err();
        assert!(
            e.contains("acq_random_candidates = 100000000") && e.contains("at most 10000"),
            "{e}"
        );
        assert!(with(&|p| p.acq_random_candidates = 10_000).is_ok());
        assert!(with(&|p| p.sample_window = 1001).unwrap_err().contains("sample_window"));
        assert!(with(&|p| p.gp_max_eval = 1_000_000)
            .unwrap_err()
            .contains("gp_max_eval"));
        assert!(with(&|p| p.acq_max_iters = u64::MAX)
            .unwrap_err()
            .contains("acq_max_iters"));
        assert!(with(&|p| p.acq_refine_starts = 65)
            .unwrap_err()
            .contains("acq_refine_starts"));
    }

    #[test]
    fn operator_params_carry_their_keys_and_leave_the_variant_switches_at_their_defaults() {
        assert_eq!(
            ControllerParams::from(OperatorParams::default()),
            ControllerParams::default()
        );
        let o: OperatorParams = serde_json::from_str(r#"{"seed": 7, "regime_factor": 3.0}"#).unwrap();
        let p = ControllerParams::from(o.clone());
        assert_eq!((p.seed, p.regime_factor), (7, 3.0));
        assert_eq!(p.operator(), o);
        assert_eq!(p.residual, ControllerParams::default().residual);
        let e = serde_json::from_str::<OperatorParams>(r#"{"residual": "additive"}"#).unwrap_err();
        assert!(e.to_string().contains("residual"), "{e}");
    }

    #[test]
    fn bad_field_is_named() {
        let p = ControllerParams {
            regime_factor: 0.9,
            ..Default::default()
        };
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("regime_factor = 0.9"), "{e}");
        let p = ControllerParams {
            trust_radius_init: 0.05,
            ..Default::default()
        };
        let e = p.validate().unwrap_err().to_string();
        assert!(
            e.contains("trust_radius_init = 0.05") && e.contains("trust_radius_min"),
            "{e}"
        );
        let p = ControllerParams {
            regime_factor: -1e300,
            ..Default::default()
        };
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("regime_factor = -1e300:"), "{e}");
    }

    #[test]
    fn params_read_from_toml_with_defaults() {
        let p: ControllerParams = serde_json::from_str(r#"{"sample_window": 20}"#).unwrap();
        assert_eq!(p.sample_window, 20);
        assert_eq!(p.penalty_beta, 1e4);
        assert!(serde_json::from_str::<ControllerParams>(r#"{"sample_windw": 20}"#).is_err());
    }

    #[test]
    fn mean_models_read_from_json_and_an_empty_list_is_refused() {
        let p: ControllerParams = serde_json::from_str(r#"{"gp_means": ["constant"]}"#).unwrap();
        assert_eq!(p.gp_means, vec![MeanKind::Constant]);
        assert_eq!(p.validate(), Ok(()));
        assert!(serde_json::from_str::<ControllerParams>(r#"{"gp_means": ["quadratic"]}"#).is_err());
        let p: ControllerParams = serde_json::from_str(r#"{"gp_means": []}"#).unwrap();
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("gp_means"), "{e}");
    }
}
