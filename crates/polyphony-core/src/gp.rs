//! The residual surrogate (§4.2): a Gaussian process on R = g − f fitted with egobox-gp,
//! its kernel (squared-exponential, Matérn 3/2, Matérn 5/2, absolute-exponential) and mean
//! (constant, linear) chosen by BIC computed here, an explicit nugget, and the fallbacks when
//! a fit fails (previous hyperparameters, then the prior). Never panics: egobox calls run
//! under `catch_unwind` and every error becomes a reported fallback.
//!
//! BIC. egobox reports the *reduced* (concentrated) likelihood `L_r = −n·(log10 σ̂² +
//! log10|R|/n)` of the standardised targets. The natural-log likelihood of the targets is
//! `ln L = (ln 10 / 2)·L_r − (n/2)(1 + ln 2π) − n·ln s_y` (s_y the targets' standard
//! deviation), and `BIC = p·ln n − 2·ln L` with p = #θ + #β + 1 (σ²). Lower is better.
//! Pure computation; no I/O.

use egobox_gp::correlation_models::{
    AbsoluteExponentialCorr, CorrelationModel, Matern32Corr, Matern52Corr, SquaredExponentialCorr,
};
use egobox_gp::mean_models::{ConstantMean, LinearMean, RegressionModel};
use egobox_gp::{GaussianProcess, ThetaTuning};
use linfa::prelude::{Dataset, Fit};
use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Correlation kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    /// exp(−Σ θ²d²/2).
    SquaredExponential,
    /// Matérn ν = 3/2.
    Matern32,
    /// Matérn ν = 5/2.
    Matern52,
    /// exp(−Σ θ|d|).
    AbsoluteExponential,
}

/// Regression (mean) model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeanKind {
    /// A constant.
    Constant,
    /// Affine in the features.
    Linear,
}

/// Every kernel × mean candidate, in the order they are tried.
pub const CANDIDATES: [(Kernel, MeanKind); 8] = [
    (Kernel::SquaredExponential, MeanKind::Constant),
    (Kernel::Matern52, MeanKind::Constant),
    (Kernel::Matern32, MeanKind::Constant),
    (Kernel::AbsoluteExponential, MeanKind::Constant),
    (Kernel::SquaredExponential, MeanKind::Linear),
    (Kernel::Matern52, MeanKind::Linear),
    (Kernel::Matern32, MeanKind::Linear),
    (Kernel::AbsoluteExponential, MeanKind::Linear),
];

/// Fitted hyperparameters: enough to rebuild the same GP from the same data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hyper {
    /// Kernel.
    pub kernel: Kernel,
    /// Mean.
    pub mean: MeanKind,
    /// Length-scale parameters θ (one per feature).
    pub theta: Vec<f64>,
    /// Nugget (relative to the process variance) the fit used.
    pub nugget: f64,
    /// BIC of the fit that produced θ.
    pub bic: f64,
}

/// How the surrogate in use came about; reported in every proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SurrogateStatus {
    /// No residual correction (open-loop model).
    Disabled,
    /// Too few samples: the prior (mean of the residuals, prior σ).
    Prior {
        /// Why the prior is in use.
        why: String,
    },
    /// A GP was fitted; `selected` when the kernel/mean selection ran this time.
    Fitted {
        /// The hyperparameters in use.
        hyper: Hyper,
        /// Whether the BIC selection over all candidates ran on this proposal.
        selected: bool,
        /// Candidates whose fit failed on this proposal.
        failed: usize,
    },
    /// The fit failed; the previous hyperparameters (fixed) were used.
    PreviousFit {
        /// The reused hyperparameters.
        hyper: Hyper,
        /// The error of the failed fit.
        why: String,
    },
    /// Every fit failed; the prior is in use.
    FallbackPrior {
        /// The error of the failed fit.
        why: String,
    },
}

/// Fit settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GpSettings {
    /// Candidate nuggets (relative to the process variance), chosen by BIC with the kernel.
    pub nuggets: Vec<f64>,
    /// Mean models the selection may choose from (every [`CANDIDATES`] pair whose mean is
    /// listed); a previous fit with another mean is not reused.
    pub means: Vec<MeanKind>,
    /// Cobyla evaluations per fit.
    pub max_eval: usize,
    /// Fewest samples for a fit.
    pub min_samples: usize,
    /// Prior σ when no fit.
    pub prior_sigma: f64,
    /// Bound a fitted surrogate by its samples: its mean within their range, its σ at most
    /// their spread (at least `prior_sigma`). Far from its data a GP reverts to its prior; with
    /// a linear mean, or hyperparameters fitted to ~10 noisy windows, it instead extrapolates a
    /// trend through noise and a variance without limit (×÷ 5·10⁵ seen on the testbed), which
    /// EI then chases to the region's edge. The controller always bounds.
    pub bounded: bool,
}

trait Predict: Send + Sync {
    fn valvar(&self, x: &Array2<f64>) -> Option<(Array1<f64>, Array1<f64>)>;
}

impl<M: RegressionModel<f64> + Send, C: CorrelationModel<f64> + Send> Predict for GaussianProcess<f64, M, C> {
    fn valvar(&self, x: &Array2<f64>) -> Option<(Array1<f64>, Array1<f64>)> {
        catch_unwind(AssertUnwindSafe(|| self.predict_valvar(x))).ok()?.ok()
    }
}

/// A surrogate of the residual: a fitted GP or a constant prior.
pub struct Surrogate {
    gp: Option<Box<dyn Predict>>,
    prior_mean: f64,
    prior_sigma: f64,
    /// (lowest mean, highest mean, largest σ) when the fit is bounded by its samples.
    bounds: Option<(f64, f64, f64)>,
    /// How this surrogate came about.
    pub status: SurrogateStatus,
    /// The hyperparameters to carry to the next fit (warm start), if any.
    pub hyper: Option<Hyper>,
}

impl std::fmt::Debug for Surrogate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Surrogate").field("status", &self.status).finish()
    }
}

impl Surrogate {
    /// A constant surrogate (used when there is no residual correction: μ = 0, σ = 0).
    pub fn constant(mean: f64, sigma: f64, status: SurrogateStatus) -> Surrogate {
        Surrogate {
            gp: None,
            prior_mean: mean,
            prior_sigma: sigma,
            bounds: None,
            status,
            hyper: None,
        }
    }

    /// True when no GP is in use (the prediction is the same everywhere).
    pub fn is_constant(&self) -> bool {
        self.gp.is_none()
    }

    /// Posterior mean and standard deviation at each row of `features`.
    pub fn predict(&self, features: &Array2<f64>) -> Vec<(f64, f64)> {
        if let Some(gp) = &self.gp {
            if let Some((m, v)) = gp.valvar(features) {
                if m.iter().chain(v.iter()).all(|a| a.is_finite()) {
                    let (lo, hi, sd) = self.bounds.unwrap_or((f64::NEG_INFINITY, f64::INFINITY, f64::INFINITY));
                    return m
                        .iter()
                        .zip(v.iter())
                        .map(|(a, b)| (a.clamp(lo, hi), b.max(0.0).sqrt().min(sd)))
                        .collect();
                }
            }
        }
        vec![(self.prior_mean, self.prior_sigma); features.nrows()]
    }
}

struct OneFit {
    gp: Box<dyn Predict>,
    hyper: Hyper,
}

/// One fit's inputs.
struct Req<'a> {
    kinds: (Kernel, MeanKind),
    x: &'a Array2<f64>,
    y: &'a Array1<f64>,
    theta: Option<&'a [f64]>,
    optimise: bool,
    nugget: f64,
    max_eval: usize,
}

fn fit_generic<M, C>(mean: M, corr: C, r: &Req<'_>) -> Result<OneFit, String>
where
    M: RegressionModel<f64> + Send + 'static,
    C: CorrelationModel<f64> + Send + 'static,
{
    let Req {
        kinds,
        x,
        y,
        theta,
        optimise,
        nugget,
        max_eval,
    } = *r;
    let d = x.ncols();
    let init = match theta {
        Some(t) if t.len() == d && t.iter().all(|v| v.is_finite() && *v > 0.0) => Array1::from(t.to_vec()),
        _ => Array1::from_elem(d, ThetaTuning::<f64>::DEFAULT_INIT),
    };
    let tuning = if optimise {
        ThetaTuning::Full {
            init,
            bounds: Array1::from_elem(d, ThetaTuning::<f64>::DEFAULT_BOUNDS),
        }
    } else {
        ThetaTuning::Fixed(init)
    };
    // n_start = 0: one deterministic start (egobox's n_start = 1 draws from entropy).
    let params = GaussianProcess::<f64, M, C>::params(mean, corr)
        .theta_tuning(tuning)
        .n_start(0)
        .max_eval(max_eval)
        .nugget(nugget);
    let data = Dataset::new(x.clone(), y.clone());
    let gp = catch_unwind(AssertUnwindSafe(|| params.fit(&data)))
        .map_err(|_| format!("{kinds:?}: egobox panicked while fitting"))?
        .map_err(|e| format!("{kinds:?}: {e}"))?;
    let n = x.nrows() as f64;
    let mean_y = y.mean().unwrap_or(0.0);
    let sd_y = (y.iter().map(|v| (v - mean_y).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    let sd_y = if sd_y > 0.0 { sd_y } else { 1.0 };
    let ln_l = std::f64::consts::LN_10 / 2.0 * gp.likelihood()
        - n / 2.0 * (1.0 + (2.0 * std::f64::consts::PI).ln())
        - n * sd_y.ln();
    let n_beta = match kinds.1 {
        MeanKind::Constant => 1,
        MeanKind::Linear => d + 1,
    };
    let p = (d + n_beta + 1) as f64;
    let bic = p * n.ln() - 2.0 * ln_l;
    if !bic.is_finite() {
        return Err(format!("{kinds:?}: non-finite likelihood"));
    }
    let hyper = Hyper {
        kernel: kinds.0,
        mean: kinds.1,
        theta: gp.theta().to_vec(),
        nugget,
        bic,
    };
    Ok(OneFit {
        gp: Box::new(gp),
        hyper,
    })
}

fn fit_one(r: &Req<'_>) -> Result<OneFit, String> {
    let (kinds, x) = (r.kinds, r.x);
    if kinds.1 == MeanKind::Linear && x.nrows() < x.ncols() + 3 {
        return Err(format!(
            "{kinds:?}: {} samples are too few for a linear mean in {} dimensions",
            x.nrows(),
            x.ncols()
        ));
    }
    macro_rules! go {
        ($m:expr, $c:expr) => {
            fit_generic($m, $c, r)
        };
    }
    match kinds {
        (Kernel::SquaredExponential, MeanKind::Constant) => go!(ConstantMean(), SquaredExponentialCorr()),
        (Kernel::Matern32, MeanKind::Constant) => go!(ConstantMean(), Matern32Corr()),
        (Kernel::Matern52, MeanKind::Constant) => go!(ConstantMean(), Matern52Corr()),
        (Kernel::AbsoluteExponential, MeanKind::Constant) => go!(ConstantMean(), AbsoluteExponentialCorr()),
        (Kernel::SquaredExponential, MeanKind::Linear) => go!(LinearMean(), SquaredExponentialCorr()),
        (Kernel::Matern32, MeanKind::Linear) => go!(LinearMean(), Matern32Corr()),
        (Kernel::Matern52, MeanKind::Linear) => go!(LinearMean(), Matern52Corr()),
        (Kernel::AbsoluteExponential, MeanKind::Linear) => go!(LinearMean(), AbsoluteExponentialCorr()),
    }
}

fn prior_of(y: &Array1<f64>, s: &GpSettings) -> (f64, f64) {
    if y.is_empty() {
        return (0.0, s.prior_sigma);
    }
    let m = y.mean().unwrap_or(0.0);
    let sd = (y.iter().map(|v| (v - m).powi(2)).sum::<f64>() / y.len() as f64).sqrt();
    (m, sd.max(s.prior_sigma))
}

/// How to fit this time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitMode {
    /// Fit every kernel × mean, then the winner at every nugget (warm-started where θ is known); keep the lowest BIC.
    Select,
    /// Refit the previous kernel/mean, optimising θ from the previous value.
    Refit,
    /// Rebuild with the previous θ fixed (no optimisation): cheap, for admission checks.
    Fixed,
}

/// Fits the residual surrogate on features `x` (rows) and residuals `y`.
pub fn fit(x: &Array2<f64>, y: &Array1<f64>, prev: Option<&Hyper>, mode: FitMode, s: &GpSettings) -> Surrogate {
    let (pm, ps) = prior_of(y, s);
    let bounds = s.bounded.then(|| {
        let lo = y.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi, ps)
    });
    if x.nrows() < s.min_samples {
        return Surrogate::constant(
            pm,
            ps,
            SurrogateStatus::Prior {
                why: format!("{} sample(s) < {} needed for a GP fit", x.nrows(), s.min_samples),
            },
        );
    }
    let prev = prev.filter(|h| s.means.contains(&h.mean));
    let mode = if prev.is_none() { FitMode::Select } else { mode };
    let attempt: Result<(OneFit, bool, usize), String> = match (mode, prev) {
        (FitMode::Select, _) => {
            let mut best: Option<OneFit> = None;
            let mut failed = 0;
            let mut last_err = String::new();
            // Coordinate-wise BIC search: every kernel × mean at the current nugget (the
            // previous one, or the middle candidate), then the winner at every other nugget.
            // 8 + (nuggets − 1) fits instead of 8 × nuggets.
            let nugget0 = prev.map(|h| h.nugget).unwrap_or_else(|| s.nuggets[s.nuggets.len() / 2]);
            let mut consider = |req: Req<'_>, best: &mut Option<OneFit>| match fit_one(&req) {
                Ok(f) => {
                    if best.as_ref().is_none_or(|b| f.hyper.bic < b.hyper.bic) {
                        *best = Some(f);
                    }
                }
                Err(e) => {
                    failed += 1;
                    last_err = e;
                }
            };
            for kinds in CANDIDATES.into_iter().filter(|k| s.means.contains(&k.1)) {
                let warm = prev
                    .filter(|h| h.kernel == kinds.0 && h.mean == kinds.1)
                    .map(|h| h.theta.as_slice());
                let req = Req {
                    kinds,
                    x,
                    y,
                    theta: warm,
                    optimise: true,
                    nugget: nugget0,
                    max_eval: s.max_eval,
                };
                consider(req, &mut best);
            }
            if let Some((kinds, theta)) = best
                .as_ref()
                .map(|b| ((b.hyper.kernel, b.hyper.mean), b.hyper.theta.clone()))
            {
                for &nugget in s.nuggets.iter().filter(|n| **n != nugget0) {
                    let req = Req {
                        kinds,
                        x,
                        y,
                        theta: Some(&theta),
                        optimise: true,
                        nugget,
                        max_eval: s.max_eval,
                    };
                    consider(req, &mut best);
                }
            }
            best.map(|b| (b, true, failed)).ok_or(last_err)
        }
        (m, Some(h)) => fit_one(&Req {
            kinds: (h.kernel, h.mean),
            x,
            y,
            theta: Some(&h.theta),
            optimise: m == FitMode::Refit,
            nugget: h.nugget,
            max_eval: s.max_eval,
        })
        .map(|f| (f, false, 0)),
        (_, None) => Err("no previous fit".into()),
    };
    match attempt {
        Ok((f, selected, failed)) => Surrogate {
            gp: Some(f.gp),
            prior_mean: pm,
            prior_sigma: ps,
            bounds,
            status: SurrogateStatus::Fitted {
                hyper: f.hyper.clone(),
                selected,
                failed,
            },
            hyper: Some(f.hyper),
        },
        Err(why) => {
            if let Some(h) = prev {
                let req = Req {
                    kinds: (h.kernel, h.mean),
                    x,
                    y,
                    theta: Some(&h.theta),
                    optimise: false,
                    nugget: h.nugget,
                    max_eval: s.max_eval,
                };
                if let Ok(f) = fit_one(&req) {
                    tracing::warn!(%why, "GP fit failed; reusing the previous hyperparameters");
                    return Surrogate {
                        gp: Some(f.gp),
                        prior_mean: pm,
                        prior_sigma: ps,
                        bounds,
                        status: SurrogateStatus::PreviousFit { hyper: h.clone(), why },
                        hyper: Some(h.clone()),
                    };
                }
            }
            tracing::warn!(%why, "GP fit failed; using the prior");
            Surrogate {
                hyper: prev.cloned(),
                ..Surrogate::constant(pm, ps, SurrogateStatus::FallbackPrior { why })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn settings() -> GpSettings {
        GpSettings {
            nuggets: vec![1e-6],
            means: vec![MeanKind::Constant, MeanKind::Linear],
            max_eval: 200,
            min_samples: 3,
            prior_sigma: 0.3,
            bounded: false,
        }
    }

    fn bias(p: &[f64]) -> f64 {
        0.4 * (2.0 * p[0]).sin() + 0.3 * (p[1] - 0.5).powi(2)
    }

    #[test]
    fn recovers_a_known_smooth_bias() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let pts: Vec<[f64; 2]> = (0..30).map(|_| [rng.gen::<f64>(), rng.gen::<f64>()]).collect();
        let x = Array2::from_shape_fn((30, 2), |(i, j)| pts[i][j]);
        let y = Array1::from_iter(pts.iter().map(|p| bias(p)));
        let s = fit(&x, &y, None, FitMode::Select, &settings());
        assert!(
            matches!(s.status, SurrogateStatus::Fitted { selected: true, .. }),
            "{:?}",
            s.status
        );
        let test: Vec<[f64; 2]> = (0..50)
            .map(|_| [0.1 + 0.8 * rng.gen::<f64>(), 0.1 + 0.8 * rng.gen::<f64>()])
            .collect();
        let tx = Array2::from_shape_fn((50, 2), |(i, j)| test[i][j]);
        let pred = s.predict(&tx);
        let max_err = test
            .iter()
            .zip(&pred)
            .map(|(p, (m, _))| (bias(p) - m).abs())
            .fold(0.0, f64::max);
        assert!(max_err < 0.02, "max error {max_err}");
        // Fixed rebuild from the selected θ gives the same predictions.
        let h = s.hyper.clone().unwrap();
        let again = fit(&x, &y, Some(&h), FitMode::Fixed, &settings());
        let p2 = again.predict(&tx);
        for (a, b) in pred.iter().zip(&p2) {
            assert!((a.0 - b.0).abs() < 1e-9);
        }
    }

    #[test]
    fn too_few_samples_use_the_prior() {
        let x = Array2::zeros((2, 3));
        let y = Array1::from(vec![0.1, 0.3]);
        let s = fit(&x, &y, None, FitMode::Select, &settings());
        assert!(matches!(s.status, SurrogateStatus::Prior { .. }));
        let p = s.predict(&Array2::zeros((1, 3)));
        assert!((p[0].0 - 0.2).abs() < 1e-12 && p[0].1 >= 0.3);
    }

    #[test]
    fn a_fit_that_cannot_succeed_falls_back_and_says_so() {
        // Identical residuals: zero variance, every candidate's likelihood is degenerate.
        let x = Array2::from_shape_fn((8, 2), |(i, j)| (i * 2 + j) as f64 / 16.0);
        let y = Array1::from_elem(8, 0.25);
        let s = fit(&x, &y, None, FitMode::Select, &settings());
        let p = s.predict(&Array2::from_elem((3, 2), 0.3));
        for (m, sd) in p {
            assert!((m - 0.25).abs() < 1e-6 && sd.is_finite(), "{m} {sd} {:?}", s.status);
        }
        if let SurrogateStatus::FallbackPrior { why } = &s.status {
            assert!(!why.is_empty());
        }
        // With previous hyperparameters, a failing refit reports the reuse or the prior.
        let prev = Hyper {
            kernel: Kernel::Matern52,
            mean: MeanKind::Linear,
            theta: vec![1.0, 1.0],
            nugget: 0.1,
            bic: 0.0,
        };
        let x3 = Array2::from_shape_fn((3, 2), |(i, j)| (i + j) as f64);
        let y3 = Array1::from(vec![0.1, 0.2, 0.3]);
        let s = fit(&x3, &y3, Some(&prev), FitMode::Refit, &settings());
        assert!(
            matches!(
                s.status,
                SurrogateStatus::PreviousFit { .. } | SurrogateStatus::FallbackPrior { .. }
            ),
            "a linear mean on 3 samples in 2 dimensions cannot be fitted: {:?}",
            s.status
        );
        assert!(s.predict(&Array2::zeros((1, 2)))[0].0.is_finite());
    }

    #[test]
    fn a_constant_mean_only_fit_does_not_extrapolate_a_noisy_trend() {
        // Residuals that are noise around 0.2 with a spurious slope along the first feature,
        // sampled in a small cluster (like warm-up windows near the start).
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let n = 16;
        let pts: Vec<[f64; 3]> = (0..n)
            .map(|_| [0.4 + 0.2 * rng.gen::<f64>(), 0.4 + 0.2 * rng.gen::<f64>(), 0.5])
            .collect();
        let x = Array2::from_shape_fn((n, 3), |(i, j)| pts[i][j]);
        let y = Array1::from_iter(
            pts.iter()
                .map(|p| 0.2 + 3.0 * (p[0] - 0.5) + 0.2 * (rng.gen::<f64>() - 0.5)),
        );
        let constant_only = GpSettings {
            nuggets: vec![5.0],
            means: vec![MeanKind::Constant],
            ..settings()
        };
        let s = fit(&x, &y, None, FitMode::Select, &constant_only);
        match &s.status {
            SurrogateStatus::Fitted { hyper, .. } => assert_eq!(hyper.mean, MeanKind::Constant),
            other => panic!("expected a fit, got {other:?}"),
        }
        // Far from the samples the constant-mean residual returns to the samples' level; it
        // does not carry the slope to the edge of the space.
        let far = Array2::from_shape_vec((2, 3), vec![0.0, 0.5, 0.5, 1.0, 0.5, 0.5]).unwrap();
        let mean_y = y.mean().unwrap();
        for (m, sd) in s.predict(&far) {
            assert!((m - mean_y).abs() < 0.15, "far prediction {m} vs sample mean {mean_y}");
            assert!(sd.is_finite());
        }
        // A previous linear fit is not reused when only the constant mean is allowed.
        let prev = Hyper {
            kernel: Kernel::Matern52,
            mean: MeanKind::Linear,
            theta: vec![1.0; 3],
            nugget: 5.0,
            bic: 0.0,
        };
        let again = fit(&x, &y, Some(&prev), FitMode::Refit, &constant_only);
        match &again.status {
            SurrogateStatus::Fitted { hyper, selected, .. } => {
                assert_eq!(hyper.mean, MeanKind::Constant);
                assert!(selected, "a disallowed previous fit triggers a fresh selection");
            }
            other => panic!("expected a fit, got {other:?}"),
        }
    }

    #[test]
    fn duplicated_rows_never_panic() {
        let x = Array2::from_elem((6, 2), 0.5);
        let y = Array1::from(vec![0.1, 0.2, 0.3, 0.1, 0.2, 0.3]);
        let s = fit(&x, &y, None, FitMode::Select, &settings());
        let p = s.predict(&Array2::from_elem((1, 2), 0.5));
        assert!(p[0].0.is_finite() && p[0].1.is_finite(), "{:?}", s.status);
    }

    #[test]
    fn a_bounded_fit_stays_within_what_its_samples_showed() {
        // A steep trend seen in a small cluster, predicted at the space's far corner.
        let n = 8;
        let x = Array2::from_shape_fn((n, 2), |(i, j)| 0.45 + 0.1 * ((i * (j + 1)) % n) as f64 / n as f64);
        let y = Array1::from_iter((0..n).map(|i| 2.0 * x[[i, 0]] + 0.05 * ((i % 3) as f64 - 1.0)));
        let far = Array2::from_shape_vec((2, 2), vec![0.0, 0.0, 1.0, 1.0]).unwrap();
        let (lo, hi) = y
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
        let (_, spread) = prior_of(&y, &settings());
        let bounded = GpSettings {
            bounded: true,
            ..settings()
        };
        let s = fit(&x, &y, None, FitMode::Select, &bounded);
        assert!(matches!(s.status, SurrogateStatus::Fitted { .. }), "{:?}", s.status);
        for (m, sd) in s.predict(&far) {
            assert!(m >= lo - 1e-12 && m <= hi + 1e-12, "mean {m} outside [{lo}, {hi}]");
            assert!(sd <= spread + 1e-12, "σ {sd} above the samples' spread {spread}");
        }
        // Unbounded, the same fit leaves that range at the far corner.
        let free = fit(&x, &y, None, FitMode::Select, &settings());
        assert!(
            free.predict(&far)
                .iter()
                .any(|(m, sd)| *m < lo || *m > hi || *sd > spread),
            "{:?}",
            free.predict(&far)
        );
    }
}
