//! The acquisition step (§4.3–§4.4): minimise A_TR(x) = −EI(x) + β·max(0, d(x, x_best) − ε)²
//! over optimisation vectors (hypercube coordinates + simplex logits), multi-start.
//!
//! 1. One batch: the incumbent, the caller's extra starts (previous proposal, best samples) and
//!    random points of the trust region (or of the whole space without one) are scored in a
//!    single model call (common random numbers: one `crn_seed` for the whole proposal).
//! 2. The best few distinct starts are refined with argmin (Nelder–Mead, or L-BFGS with a
//!    forward-difference gradient whose D+1 points go to the model as one batch). Nelder–Mead
//!    asks for one point at a time, and a model scores a batch of one configuration at several
//!    times the cost per configuration of a full batch; so the starts' runs go in lock step
//!    (`nelder_mead_in_lock_step`): their initial simplices in one batch, then per round
//!    the point each run waits for, together (`Evaluator::prefetch`), with the rest of a
//!    shrink once its first vertex is waited for (`shrink_rest`). Each run takes the steps it
//!    would take alone.
//! 3. Every evaluated configuration is cached by its rounded physical value (integer knobs
//!    make plateaus; a plateau is evaluated once); the answer is the best cached point. If no
//!    point has EI above the floor, the lowest ĝ inside the trust region is proposed instead.
//!
//! J never falls below ln(N)/c ([`Objective::lower_bound`]), but the surrogate
//! Y ~ N(f + μ_R, σ_R²) can: a residual GP extrapolating an offset predicts values J cannot
//! take, and plain EI then promises improvements larger than g_best − ln(N)/c. The acquisition
//! therefore scores the surrogate censored at the bound, max(Y, ln(N)/c): EI is
//! [`crate::ei::expected_improvement_above`] (never above g_best − ln(N)/c) and ĝ is its mean
//! [`crate::ei::censored_mean`]. Clamping only the mean was tried first and measured worse: every
//! candidate predicted below the bound tied, so EI ranked them by σ alone and the controller
//! explored where the GP was most uncertain (the scale study's intermediate run,
//! `docs/evaluation.md` §5).
//!
//! The surrogate lives in the residual's space ([`crate::ResidualSpace`]): with the default
//! log residual, Y is ln J ~ N(ln f + μ_R, σ_R²), EI is the expected improvement of ln J over
//! ln g_best censored at ln(ln(N)/c), and ĝ is reported back in objective units. A class the
//! model's window has no SLI of takes its last measured ratio for every candidate
//! ([`crate::Objective::model_value`]), so a light interval does not stop the loop.
//! Candidates whose EI saturated at the bound are ordered by their uncensored mean (a 1e-9
//! tie-break), so the search is never left on a flat plateau.
//!
//! Categorical knobs (`space.rs`): the first batch also holds the incumbent's one-change
//! neighbours ([`categorical_neighbours`]) when a change fits the region, random starts change
//! one knob in half their draws ([`sample_starts`]), and Nelder–Mead's initial simplex moves each
//! categorical coordinate by one choice; every candidate is scored at its rounded choice.
//!
//! Calls only the [`PerformanceModel`] it is given; no I/O of its own.

use crate::calibration::Calibration;
use crate::ei::{censored_mean, expected_improvement_above, trust_penalty};
use crate::gp::Surrogate;
use crate::model::PerformanceModel;
use crate::objective::Objective;
use crate::params::{ControllerParams, LocalSolver};
use crate::space::Space;
use crate::CoreError;
use argmin::core::{CostFunction, Executor, Gradient, IterState, Solver, State, TerminationStatus};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::neldermead::NelderMead;
use argmin::solver::quasinewton::LBFGS;
use ndarray::Array2;
use polyphony_spec::{NetworkConfig, SliVector};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cell::RefCell;
use std::collections::HashMap;

/// Everything the acquisition needs for one proposal.
pub struct AcqContext<'a> {
    /// The knob space.
    pub space: &'a Space,
    /// Values of knobs outside the space.
    pub base: &'a NetworkConfig,
    /// The objective.
    pub objective: &'a Objective,
    /// The residual surrogate.
    pub surrogate: &'a Surrogate,
    /// The model, or `None` for the model-free variants (f ≡ 0).
    pub model: Option<&'a dyn PerformanceModel>,
    /// Common-random-number seed of this proposal.
    pub crn_seed: u64,
    /// Trust-region centre (a point).
    pub centre: &'a [f64],
    /// Trust-region radius ε; `None` disables the trust region.
    pub radius: Option<f64>,
    /// g_best: the best measured (denoised) objective in the rolling window.
    pub g_best: f64,
    /// Hyperparameters.
    pub params: &'a ControllerParams,
    /// Points already sampled (for the space-filling initial design).
    pub known: &'a [Vec<f64>],
    /// The last measured ratios (objective order): they stand in for a class the model's
    /// window has no SLI of, the same value for every candidate.
    pub stand_in: Option<&'a [f64]>,
    /// The model's per-class calibration ([`crate::calibration`]), read at each candidate;
    /// `None`: factors of 1.
    pub calibration: Option<&'a Calibration>,
    /// Safe exploration ([`ControllerParams::safe_ucb_sigmas`]), given only when a compliant
    /// configuration is known: leave the incumbent (the centre) only for a candidate whose ĝ's
    /// upper confidence bound, mean + this many σ, stays below J = 1.
    pub safe_sigmas: Option<f64>,
}

/// One scored configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// Point of the (rounded) configuration.
    pub x: Vec<f64>,
    /// The physical configuration.
    pub config: NetworkConfig,
    /// The model's SLIs (None without a model).
    pub slis: Option<SliVector>,
    /// Model objective f (0 without a model; +∞ if the model's SLIs were unusable).
    pub f: f64,
    /// Residual posterior mean μ_R.
    pub mu: f64,
    /// Residual posterior standard deviation σ_R (in the residual's units).
    pub sigma: f64,
    /// The surrogate's mean with J ≥ ln(N)/c enforced: E[max(Y, ln(N)/c)] for
    /// Y ~ N(f + μ_R, σ_R²) — never below the bound, `max(f + μ_R, bound)` when σ_R = 0. With
    /// the log residual ([`crate::ResidualSpace::Log`]) Y is ln J: ĝ = exp(E[max(Y, ln
    /// bound)]), the surrogate's geometric mean.
    pub g_hat: f64,
    /// Expected improvement (in log units with the log residual: of ln J over ln g_best).
    pub ei: f64,
    /// Distance to the trust-region centre.
    pub distance: f64,
    /// A_TR.
    pub acq: f64,
}

impl Scored {
    /// ĝ: the surrogate mean censored at ln(N)/c, where J cannot go.
    pub fn g_hat(&self) -> f64 {
        self.g_hat
    }
}

/// Result of one acquisition.
#[derive(Debug, Clone)]
pub struct AcqOutcome {
    /// The chosen configuration.
    pub best: Scored,
    /// True when no candidate had EI above the floor and the lowest ĝ was taken instead.
    pub exploit: bool,
    /// Configurations sent to the model.
    pub evaluations: usize,
    /// Calls of `PerformanceModel::predict`.
    pub calls: usize,
    /// Classes the model had no SLI of for some candidate; their measured ratio stood in.
    pub stood_in: Vec<String>,
    /// True when the safety rule replaced the acquisition's choice (its upper bound reached 1).
    pub safe: bool,
}

impl Scored {
    /// The upper confidence bound of ĝ at `sigmas` standard deviations, in objective units.
    pub fn ucb(&self, ctx: &AcqContext<'_>, sigmas: f64) -> f64 {
        let rs = ctx.params.residual;
        rs.to_objective(rs.of_f(self.f, ctx.model.is_some()) + self.mu + sigmas * self.sigma)
    }
}

/// Weight of the uncensored surrogate mean in A_TR: only breaks ties between candidates whose
/// EI saturated at the bound.
const TIE_BREAK: f64 = 1e-9;

struct Evaluator<'a> {
    ctx: &'a AcqContext<'a>,
    cache: RefCell<HashMap<Vec<u64>, Scored>>,
    order: RefCell<Vec<Vec<u64>>>,
    /// Model SLIs of configurations not yet scored ([`Evaluator::prefetch`]), by key.
    prefetched: RefCell<HashMap<Vec<u64>, SliVector>>,
    evaluations: RefCell<usize>,
    calls: RefCell<usize>,
    stood_in: RefCell<Vec<String>>,
    error: RefCell<Option<CoreError>>,
}

fn key_of(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

impl<'a> Evaluator<'a> {
    fn new(ctx: &'a AcqContext<'a>) -> Self {
        Evaluator {
            ctx,
            cache: RefCell::new(HashMap::new()),
            order: RefCell::new(Vec::new()),
            prefetched: RefCell::new(HashMap::new()),
            evaluations: RefCell::new(0),
            calls: RefCell::new(0),
            stood_in: RefCell::new(Vec::new()),
            error: RefCell::new(None),
        }
    }

    /// The configuration of optimisation vector `z`, the point of its rounded value and that
    /// point's cache key.
    fn keyed(&self, z: &[f64]) -> Result<(Vec<u64>, Vec<f64>, NetworkConfig), CoreError> {
        let c = self.ctx;
        let cfg = c.space.config_of(&c.space.point_of(z), c.base)?;
        let xr = c.space.point_of_config(&cfg)?;
        Ok((key_of(&xr), xr, cfg))
    }

    /// Whether `z`'s configuration is scored or prefetched — scoring it calls no model. (One
    /// that cannot be built counts as held: [`Self::score`] reports it without a call.)
    fn holds(&self, z: &[f64]) -> bool {
        match self.keyed(z) {
            Ok((k, _, _)) => self.cache.borrow().contains_key(&k) || self.prefetched.borrow().contains_key(&k),
            Err(_) => true,
        }
    }

    /// The score of `z` if it has been scored (as [`LockStep`] gives it to Nelder–Mead); no
    /// model call.
    fn scored(&self, z: &[f64]) -> Option<f64> {
        // One that cannot be built scores as an infinity would.
        let Ok((k, _, _)) = self.keyed(z) else {
            return Some(1e12);
        };
        let acq = self.cache.borrow().get(&k)?.acq;
        Some(if acq.is_finite() { acq } else { 1e12 })
    }

    /// Scores a batch of optimisation vectors with one model call; returns A_TR of each.
    fn score(&self, zs: &[Vec<f64>]) -> Vec<f64> {
        let mut keys = Vec::with_capacity(zs.len());
        let mut fresh: Vec<(Vec<u64>, Vec<f64>, NetworkConfig)> = Vec::new();
        for z in zs {
            let (k, xr, cfg) = match self.keyed(z) {
                Ok(v) => v,
                Err(e) => {
                    self.error.borrow_mut().get_or_insert(e);
                    keys.push(None);
                    continue;
                }
            };
            if !self.cache.borrow().contains_key(&k) && !fresh.iter().any(|(fk, _, _)| *fk == k) {
                fresh.push((k.clone(), xr, cfg));
            }
            keys.push(Some(k));
        }
        if !fresh.is_empty() && self.error.borrow().is_none() {
            self.evaluate(fresh);
        }
        let cache = self.cache.borrow();
        keys.iter()
            .map(|k| k.as_ref().and_then(|k| cache.get(k)).map_or(f64::INFINITY, |s| s.acq))
            .collect()
    }

    /// Sends the configurations of `zs` that are neither scored nor prefetched to the model in
    /// one call and keeps their SLIs for when they are scored: the refine starts' initial
    /// simplices, which Nelder–Mead would otherwise score one call per vertex (a batch of one
    /// costs the model several times more per configuration than a full batch). What is scored,
    /// in which order, and every value is unchanged: SLIs do not depend on the batch they come
    /// in. A configuration that cannot be built, or a failed call, is left to [`Self::score`],
    /// which reports it.
    fn prefetch(&self, zs: &[Vec<f64>]) {
        let c = self.ctx;
        let Some(m) = c.model else { return };
        if self.error.borrow().is_some() {
            return;
        }
        let (mut keys, mut configs) = (Vec::new(), Vec::new());
        for z in zs {
            let Ok((k, _, cfg)) = self.keyed(z) else {
                continue;
            };
            if self.cache.borrow().contains_key(&k) || self.prefetched.borrow().contains_key(&k) || keys.contains(&k) {
                continue;
            }
            keys.push(k);
            configs.push(cfg);
        }
        if configs.is_empty() {
            return;
        }
        *self.calls.borrow_mut() += 1;
        *self.evaluations.borrow_mut() += configs.len();
        if let Ok(v) = m.predict(&configs, c.crn_seed) {
            if v.len() == configs.len() {
                self.prefetched.borrow_mut().extend(keys.into_iter().zip(v));
            }
        }
    }

    fn evaluate(&self, fresh: Vec<(Vec<u64>, Vec<f64>, NetworkConfig)>) {
        let c = self.ctx;
        let slis: Vec<Option<SliVector>> = match c.model {
            Some(m) => {
                // Prefetched SLIs first; the model is called for the rest only.
                let known: Vec<Option<SliVector>> = {
                    let mut pre = self.prefetched.borrow_mut();
                    fresh.iter().map(|(k, _, _)| pre.remove(k)).collect()
                };
                let configs: Vec<NetworkConfig> = fresh
                    .iter()
                    .zip(&known)
                    .filter(|(_, s)| s.is_none())
                    .map(|((_, _, cfg), _)| cfg.clone())
                    .collect();
                let predicted = if configs.is_empty() {
                    Ok(Vec::new())
                } else {
                    *self.calls.borrow_mut() += 1;
                    *self.evaluations.borrow_mut() += configs.len();
                    m.predict(&configs, c.crn_seed)
                };
                match predicted {
                    Ok(v) if v.len() == configs.len() => {
                        let mut v = v.into_iter();
                        known.into_iter().map(|s| s.or_else(|| v.next())).collect()
                    }
                    Ok(v) => {
                        self.error
                            .borrow_mut()
                            .get_or_insert(CoreError::Model(crate::ModelError(format!(
                                "returned {} SLI vectors for {} configurations",
                                v.len(),
                                configs.len()
                            ))));
                        return;
                    }
                    Err(e) => {
                        self.error.borrow_mut().get_or_insert(CoreError::Model(e));
                        return;
                    }
                }
            }
            None => vec![None; fresh.len()],
        };
        let nf = c.space.n_features();
        let feats = Array2::from_shape_fn((fresh.len(), nf), |(i, j)| c.space.features(&fresh[i].1)[j]);
        let post = c.surrogate.predict(&feats);
        let mut cache = self.cache.borrow_mut();
        let mut order = self.order.borrow_mut();
        for (((k, xr, cfg), s), (mu, sigma)) in fresh.into_iter().zip(slis).zip(post) {
            let f = match &s {
                Some(s) => match c.objective.model_ratios(s).and_then(|r| {
                    let scale = c.calibration.map(|k| k.at(c.space, &xr));
                    c.objective.model_value(&r, scale.as_deref(), c.stand_in)
                }) {
                    Ok((v, absent)) => {
                        let mut seen = self.stood_in.borrow_mut();
                        for a in absent {
                            if !seen.contains(&a) {
                                seen.push(a);
                            }
                        }
                        v
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "model SLIs unusable; candidate discarded");
                        f64::INFINITY
                    }
                },
                None => 0.0,
            };
            let distance = c.space.distance(&xr, c.centre);
            // The surrogate lives in the residual's space (g, or ln g): Y ~ N(f' + μ_R, σ_R²).
            let rs = c.params.residual;
            let mean = rs.of_f(f, c.model.is_some()) + mu;
            let floor = rs.of_g(c.objective.lower_bound());
            let g_hat = rs.to_objective(censored_mean(mean, sigma, floor));
            let ei = expected_improvement_above(mean, sigma, rs.of_g(c.g_best), floor);
            let pen = c
                .radius
                .map_or(0.0, |r| trust_penalty(distance, r, c.params.penalty_beta));
            // EI saturates (exactly g_best − bound, in floating point) once the prediction is
            // far below the bound; a tie-break on the uncensored mean, far below any real EI
            // difference, keeps the lower prediction first so the search is not left flat.
            let acq = if f.is_finite() && mean.is_finite() {
                -ei + pen + TIE_BREAK * mean
            } else {
                f64::INFINITY
            };
            order.push(k.clone());
            cache.insert(
                k,
                Scored {
                    x: xr,
                    config: cfg,
                    slis: s,
                    f,
                    mu,
                    sigma,
                    g_hat,
                    ei,
                    distance,
                    acq,
                },
            );
        }
    }
}

struct Problem<'a, 'b> {
    ev: &'b Evaluator<'a>,
    h: f64,
}

impl CostFunction for Problem<'_, '_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, z: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        let v = self.ev.score(std::slice::from_ref(z))[0];
        // argmin's line searches dislike infinities; a large finite value keeps them working.
        Ok(if v.is_finite() { v } else { 1e12 })
    }
}

impl Gradient for Problem<'_, '_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, z: &Vec<f64>) -> Result<Vec<f64>, argmin::core::Error> {
        let mut batch = vec![z.clone()];
        for i in 0..z.len() {
            let mut p = z.clone();
            p[i] += self.h;
            batch.push(p);
        }
        let v: Vec<f64> = self
            .ev
            .score(&batch)
            .into_iter()
            .map(|a| if a.is_finite() { a } else { 1e12 })
            .collect();
        Ok((1..v.len()).map(|i| (v[i] - v[0]) / self.h).collect())
    }
}

/// Random optimisation vectors inside the trust region around `centre` (or the whole space).
///
/// Categorical knobs: without a trust region a uniform choice each; inside one, the centre's
/// choices, with one knob (drawn uniformly) changed to another choice in half the draws when a
/// change fits in the region ([`crate::space::HAMMING_STEP`] ≤ radius); the continuous part
/// then takes the room left.
pub fn sample_starts(
    space: &Space,
    centre: &[f64],
    radius: Option<f64>,
    n: usize,
    rng: &mut Xoshiro256PlusPlus,
) -> Vec<Vec<f64>> {
    let zc = space.opt_of(centre);
    let d = zc.len();
    let nh = space.n_hypercube();
    let cats = space.categorical();
    (0..n)
        .map(|_| match radius {
            None => (0..d)
                .map(|i| match space.choices_at(i) {
                    Some(k) => rng.gen_range(0..k) as f64,
                    None if i < nh => rng.gen::<f64>(),
                    None => 1.5 * standard_normal(rng),
                })
                .collect(),
            Some(r) => {
                let mut zc = zc.clone();
                if !cats.is_empty() && crate::space::HAMMING_STEP <= r && rng.gen::<bool>() {
                    let c = &cats[rng.gen_range(0..cats.len())];
                    let now = crate::space::round_choice(zc[c.at], c.choices.len()) as usize;
                    let other = (now + rng.gen_range(1..c.choices.len())) % c.choices.len();
                    zc[c.at] = other as f64;
                }
                let dir: Vec<f64> = (0..d)
                    .map(|i| {
                        if space.choices_at(i).is_some() {
                            0.0
                        } else {
                            standard_normal(rng)
                        }
                    })
                    .collect();
                let at = |t: f64| -> Vec<f64> { zc.iter().zip(&dir).map(|(a, b)| a + t * b).collect() };
                let dist = |t: f64| space.distance(&space.point_of(&at(t)), centre);
                // Largest step along `dir` that stays inside the region (bisection).
                let (mut lo, mut hi) = (0.0, 1.0);
                while dist(hi) <= r && hi < 64.0 {
                    lo = hi;
                    hi *= 2.0;
                }
                for _ in 0..12 {
                    let mid = 0.5 * (lo + hi);
                    if dist(mid) <= r {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                at(lo * rng.gen::<f64>().powf(1.0 / d as f64))
            }
        })
        .collect()
}

/// The centre with one categorical knob changed, for every knob and every other choice (the
/// Hamming-1 neighbourhood CASMOPOLITAN's local search explores), when a change fits in the
/// trust region; empty without categorical knobs. Deterministic: no draws.
pub fn categorical_neighbours(space: &Space, centre: &[f64], radius: Option<f64>) -> Vec<Vec<f64>> {
    if radius.is_some_and(|r| crate::space::HAMMING_STEP > r) {
        return Vec::new();
    }
    let zc = space.opt_of(centre);
    let mut out = Vec::new();
    for c in space.categorical() {
        let now = crate::space::round_choice(zc[c.at], c.choices.len()) as usize;
        for k in (0..c.choices.len()).filter(|&k| k != now) {
            let mut z = zc.clone();
            z[c.at] = k as f64;
            out.push(z);
        }
    }
    out
}

/// One standard normal draw (Box–Muller).
pub fn standard_normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let u1: f64 = rng.gen::<f64>().max(1e-300);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn initial_design(ctx: &AcqContext<'_>, ev: &Evaluator<'_>) -> Result<AcqOutcome, CoreError> {
    let cache = ev.cache.borrow();
    let order = ev.order.borrow();
    let spread = |s: &Scored| {
        ctx.known
            .iter()
            .map(|k| ctx.space.distance(k, &s.x))
            .fold(f64::INFINITY, f64::min)
    };
    let best = order
        .iter()
        .filter_map(|k| cache.get(k))
        .filter(|s| ctx.radius.is_none_or(|r| s.distance <= r))
        .map(|s| (spread(s), s))
        .fold(None, |b: Option<(f64, &Scored)>, (d, s)| match b {
            Some((bd, _)) if bd >= d => b,
            _ => Some((d, s)),
        })
        .map(|(_, s)| s.clone())
        .ok_or_else(|| CoreError::InvalidConfig("no candidate configuration could be built".into()))?;
    Ok(AcqOutcome {
        best,
        exploit: false,
        evaluations: 0,
        calls: 0,
        stood_in: Vec::new(),
        safe: false,
    })
}

/// Nelder–Mead's initial simplex around `z0`: `z0` and one vertex per coordinate, 0.1 along a
/// hypercube coordinate (inward at the upper edge), 0.3 along a simplex logit, one choice away
/// on a categorical one.
fn initial_simplex(space: &Space, z0: &[f64]) -> Vec<Vec<f64>> {
    let nh = space.n_hypercube();
    let mut simplex = vec![z0.to_vec()];
    for i in 0..z0.len() {
        let mut v = z0.to_vec();
        match space.choices_at(i) {
            // A categorical vertex one choice away: the simplex can move the choice, the
            // objective sees the rounded point.
            Some(k) => v[i] += if v[i] + 1.0 > (k - 1) as f64 { -1.0 } else { 1.0 },
            None => {
                let step = if i < nh { 0.1 } else { 0.3 };
                v[i] += if i < nh && v[i] + step > 1.0 { -step } else { step };
            }
        }
        simplex.push(v);
    }
    simplex
}

/// Draws per start and round of [`LocalSolver::Batched`]: one full batch of flowsim's lanes.
const BATCH_DRAWS: usize = 16;
/// Rounds of [`LocalSolver::Batched`].
const BATCH_ROUNDS: usize = 4;

/// [`LocalSolver::Batched`]: from each start, `BATCH_ROUNDS` rounds of `BATCH_DRAWS` Gaussian
/// steps (σ 0.1 along a hypercube coordinate, 0.3 along a simplex logit or a categorical
/// index, times the start's step factor), all starts' draws scored in one model call per round;
/// a start moves to its best draw when that lowers A_TR, else its step factor halves.
fn batched_search(ctx: &AcqContext<'_>, ev: &Evaluator<'_>, starts: Vec<Vec<f64>>, rng: &mut Xoshiro256PlusPlus) {
    let space = ctx.space;
    let nh = space.n_hypercube();
    let sd = |i: usize| if i < nh { 0.1 } else { 0.3 };
    let scores = ev.score(&starts);
    let mut cur: Vec<(Vec<f64>, f64, f64)> = starts.into_iter().zip(scores).map(|(z, a)| (z, a, 1.0)).collect();
    for _ in 0..BATCH_ROUNDS {
        let mut batch = Vec::with_capacity(cur.len() * BATCH_DRAWS);
        for (z, _, f) in &cur {
            for _ in 0..BATCH_DRAWS {
                let mut v = z.clone();
                for (i, x) in v.iter_mut().enumerate() {
                    *x += f * sd(i) * standard_normal(rng);
                    match space.choices_at(i) {
                        Some(k) => *x = x.clamp(0.0, (k - 1) as f64),
                        None if i < nh => *x = x.clamp(0.0, 1.0),
                        None => {}
                    }
                }
                batch.push(v);
            }
        }
        let acq = ev.score(&batch);
        if ev.error.borrow().is_some() {
            return;
        }
        for (j, (z, a, f)) in cur.iter_mut().enumerate() {
            let draws = &acq[j * BATCH_DRAWS..(j + 1) * BATCH_DRAWS];
            let best = (0..BATCH_DRAWS).min_by(|&x, &y| draws[x].total_cmp(&draws[y]));
            match best {
                Some(k) if draws[k] < *a => {
                    *z = batch[j * BATCH_DRAWS + k].clone();
                    *a = draws[k];
                }
                _ => *f *= 0.5,
            }
        }
    }
}

/// Refines start `z0` with argmin's L-BFGS ([`LocalSolver::LbfgsFiniteDiff`]); every point it
/// tries goes through `ev`.
fn refine_lbfgs(ctx: &AcqContext<'_>, ev: &Evaluator<'_>, z0: Vec<f64>) {
    let p = ctx.params;
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 5);
    let r = Executor::new(Problem { ev, h: p.acq_fd_step }, solver)
        .configure(|s| s.param(z0).max_iters(p.acq_max_iters))
        .run();
    if let Err(e) = r {
        tracing::debug!(error = %e, "L-BFGS stopped early");
    }
}

/// The cost function of [`nelder_mead_in_lock_step`]: a configuration the evaluator holds is
/// scored; any other is put in `pending` and the step fails (argmin then returns the error
/// before changing anything the caller keeps), to be retried once the round's batch is in.
/// Without `wait` every configuration is scored, calling the model for one if need be.
struct LockStep<'a, 'b> {
    ev: &'b Evaluator<'a>,
    pending: &'b RefCell<Vec<Vec<f64>>>,
    wait: bool,
}

impl CostFunction for LockStep<'_, '_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, z: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        if self.wait && !self.ev.holds(z) {
            self.pending.borrow_mut().push(z.clone());
            return Err(argmin::core::Error::msg("configuration not scored yet"));
        }
        let v = self.ev.score(std::slice::from_ref(z))[0];
        // As for the other solvers: a large finite value instead of an infinity.
        Ok(if v.is_finite() { v } else { 1e12 })
    }
}

/// The cost function of [`shrink_rest`]'s probes: a configuration `known` scores is that
/// score, any other is noted and valued `value`. Calls no model.
struct Probe<'a> {
    known: &'a dyn Fn(&[f64]) -> Option<f64>,
    asked: &'a RefCell<Vec<Vec<f64>>>,
    value: f64,
}

impl CostFunction for Probe<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, z: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        if let Some(v) = (self.known)(z) {
            return Ok(v);
        }
        self.asked.borrow_mut().push(z.clone());
        Ok(self.value)
    }
}

/// The points a Nelder–Mead step will ask for after the one it waits for now, whatever that
/// one scores: the rest of a shrink (each vertex moves towards the best, whatever the others
/// score). `known` gives the scores the step has already been given. Found by running the step
/// on two copies, valuing the waited-for point and everything after it far below, and far
/// above, every score: the points both copies ask for after the first are the shrink's (a
/// reflection or contraction takes another branch for each of the two values, so the copies
/// part at once). Fetched with the waited-for point, a shrink of a simplex of n + 1 vertices
/// costs the lock step one round instead of n.
fn shrink_rest(
    solver: &NelderMead<Vec<f64>, f64>,
    state: &IterState<Vec<f64>, (), (), (), (), f64>,
    known: &dyn Fn(&[f64]) -> Option<f64>,
) -> Vec<Vec<f64>> {
    let probe = |value: f64| {
        let asked = RefCell::new(Vec::new());
        let mut problem = argmin::core::Problem::new(Probe {
            known,
            asked: &asked,
            value,
        });
        let _ = solver.clone().next_iter(&mut problem, state.clone());
        asked.into_inner()
    };
    let (low, high) = (probe(-1e300), probe(1e300));
    low.into_iter()
        .zip(high)
        .skip(1)
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect()
}

/// One start's Nelder–Mead: argmin's solver and its state between steps.
struct NmRun {
    solver: NelderMead<Vec<f64>, f64>,
    state: IterState<Vec<f64>, (), (), (), (), f64>,
    done: bool,
}

/// Nelder–Mead from every start in `starts`, the runs in lock step. Each run is argmin's
/// solver stepped as argmin's `Executor` steps it (at most `acq_max_iters` iterations, its
/// simplex's spread as the stopping rule). The initial simplices go to the model in one batch;
/// then, round by round, every run steps until its next configuration is one the evaluator
/// does not hold, and the configurations the runs wait for (a shrink's vertices all at once,
/// [`shrink_rest`]) go to the model in one batch (a model scores a batch of a few at little
/// more than the cost of one). Each run takes the
/// steps it would take alone, through the same values — SLIs do not depend on the batch they
/// come in, and the surrogate is asked one point at a time as before — in far fewer model
/// calls. A configuration a failed batch did not deliver is scored on its own, which
/// reports the failure.
fn nelder_mead_in_lock_step(ctx: &AcqContext<'_>, ev: &Evaluator<'_>, starts: Vec<Vec<f64>>) {
    let simplices: Vec<Vec<Vec<f64>>> = starts.iter().map(|z0| initial_simplex(ctx.space, z0)).collect();
    ev.prefetch(&simplices.concat());
    let pending = RefCell::new(Vec::new());
    let mut runs = Vec::with_capacity(simplices.len());
    let mut setup = argmin::core::Problem::new(LockStep {
        ev,
        pending: &pending,
        wait: false,
    });
    for simplex in simplices {
        let Ok(mut solver) = NelderMead::new(simplex).with_sd_tolerance(1e-7) else {
            continue;
        };
        let state = IterState::new().max_iters(ctx.params.acq_max_iters);
        match solver.init(&mut setup, state) {
            Ok((mut state, _)) => {
                state.update();
                runs.push(NmRun {
                    solver,
                    state,
                    done: false,
                });
            }
            Err(e) => tracing::debug!(error = %e, "Nelder–Mead did not start"),
        }
        if ev.error.borrow().is_some() {
            return;
        }
    }
    let mut problem = argmin::core::Problem::new(LockStep {
        ev,
        pending: &pending,
        wait: true,
    });
    loop {
        let mut wanted: Vec<Vec<f64>> = Vec::new();
        for run in runs.iter_mut().filter(|r| !r.done) {
            loop {
                let status = <NelderMead<Vec<f64>, f64> as Solver<LockStep<'_, '_>, _>>::terminate_internal(
                    &mut run.solver,
                    &run.state,
                );
                if let TerminationStatus::Terminated(_) = status {
                    run.done = true;
                    break;
                }
                let before = run.solver.clone();
                match run.solver.next_iter(&mut problem, run.state.clone()) {
                    Ok((mut state, _)) => {
                        state.update();
                        state.increment_iter();
                        run.state = state;
                    }
                    Err(e) => {
                        let waits: Vec<Vec<f64>> = pending.borrow_mut().drain(..).collect();
                        if waits.is_empty() {
                            tracing::debug!(error = %e, "Nelder–Mead stopped early");
                            run.done = true;
                        } else {
                            wanted.extend(waits);
                            wanted.extend(shrink_rest(&before, &run.state, &|z: &[f64]| ev.scored(z)));
                        }
                        run.solver = before;
                        break;
                    }
                }
            }
        }
        if wanted.is_empty() {
            return;
        }
        ev.prefetch(&wanted);
        for z in wanted.iter().filter(|z| !ev.holds(z)) {
            ev.score(std::slice::from_ref(z));
        }
        if ev.error.borrow().is_some() {
            return;
        }
    }
}

/// Runs the acquisition. `extra` are additional starting points (points, not opt vectors).
pub fn acquire(
    ctx: &AcqContext<'_>,
    extra: &[Vec<f64>],
    rng: &mut Xoshiro256PlusPlus,
) -> Result<AcqOutcome, CoreError> {
    let p = ctx.params;
    let ev = Evaluator::new(ctx);
    let mut starts = vec![ctx.space.opt_of(ctx.centre)];
    starts.extend(extra.iter().map(|x| ctx.space.opt_of(x)));
    starts.extend(categorical_neighbours(ctx.space, ctx.centre, ctx.radius));
    starts.extend(sample_starts(
        ctx.space,
        ctx.centre,
        ctx.radius,
        p.acq_random_candidates,
        rng,
    ));
    let scores = ev.score(&starts);
    if let Some(e) = ev.error.borrow_mut().take() {
        return Err(e);
    }
    if ctx.model.is_none() && ctx.surrogate.is_constant() {
        // Nothing distinguishes candidates yet (no model, no fitted GP): a space-filling
        // initial design — the candidate farthest from every known point.
        return initial_design(ctx, &ev);
    }
    let mut ranked: Vec<(f64, usize)> = scores.iter().copied().zip(0..).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut chosen: Vec<Vec<f64>> = Vec::new();
    for (_, i) in ranked {
        if chosen.len() >= p.acq_refine_starts {
            break;
        }
        let x = ctx.space.point_of(&starts[i]);
        if chosen
            .iter()
            .all(|c| ctx.space.distance(&ctx.space.point_of(c), &x) > 1e-9)
        {
            chosen.push(starts[i].clone());
        }
    }
    match p.acq_solver {
        LocalSolver::Batched => batched_search(ctx, &ev, chosen, rng),
        LocalSolver::NelderMead => nelder_mead_in_lock_step(ctx, &ev, chosen),
        LocalSolver::LbfgsFiniteDiff => {
            for z0 in chosen {
                refine_lbfgs(ctx, &ev, z0);
                if ev.error.borrow().is_some() {
                    break;
                }
            }
        }
    }
    if let Some(e) = ev.error.borrow_mut().take() {
        return Err(e);
    }
    let cache = ev.cache.borrow();
    let order = ev.order.borrow();
    let all: Vec<&Scored> = order.iter().filter_map(|k| cache.get(k)).collect();
    let best = all
        .iter()
        .copied()
        .filter(|s| s.acq.is_finite())
        .min_by(|a, b| a.acq.total_cmp(&b.acq))
        .ok_or_else(|| CoreError::Model(crate::ModelError("no candidate had usable model SLIs".into())))?;
    let (best, exploit) = if best.ei > p.acq_ei_floor {
        (best.clone(), false)
    } else {
        let inside = |s: &&Scored| ctx.radius.is_none_or(|r| s.distance <= r);
        let e = all
            .iter()
            .copied()
            .filter(|s| s.acq.is_finite())
            .filter(inside)
            .min_by(|a, b| a.g_hat().total_cmp(&b.g_hat()))
            .unwrap_or(best);
        (e.clone(), true)
    };
    let (best, exploit, safe) = match ctx.safe_sigmas {
        Some(k) if best.ucb(ctx, k) >= 1.0 => {
            let inside = |s: &&Scored| ctx.radius.is_none_or(|r| s.distance <= r);
            let safe = all
                .iter()
                .copied()
                .filter(|s| s.acq.is_finite() && s.ei > p.acq_ei_floor && s.ucb(ctx, k) < 1.0)
                .filter(inside)
                .min_by(|a, b| a.acq.total_cmp(&b.acq));
            match safe {
                Some(s) => (s.clone(), false, true),
                // Nothing safe promises improvement: stay at the incumbent (the centre).
                None => {
                    let inc = all
                        .iter()
                        .copied()
                        .filter(|s| s.f.is_finite())
                        .min_by(|a, b| a.distance.total_cmp(&b.distance))
                        .unwrap_or(&best);
                    (inc.clone(), true, true)
                }
            }
        }
        _ => (best, exploit, false),
    };
    let evaluations = *ev.evaluations.borrow();
    let calls = *ev.calls.borrow();
    let stood_in = ev.stood_in.borrow().clone();
    Ok(AcqOutcome {
        best,
        exploit,
        evaluations,
        calls,
        stood_in,
        safe,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::default_initial;
    use crate::gp::SurrogateStatus;
    use crate::ModelError;
    use crate::ResidualSpace;
    use polyphony_spec::{ClassSli, Dscp, KnobSpace, TrafficClass};

    /// Every configuration gets p99 = `ratio` × its class's SLO.
    struct Flat {
        classes: Vec<TrafficClass>,
        ratio: f64,
    }

    impl PerformanceModel for Flat {
        fn predict(&self, configs: &[NetworkConfig], _crn: u64) -> Result<Vec<SliVector>, ModelError> {
            Ok(vec![at_ratio(&self.classes, self.ratio); configs.len()])
        }
    }

    /// Every class's statistics at `ratio` × its SLO threshold.
    fn at_ratio(classes: &[TrafficClass], ratio: f64) -> SliVector {
        SliVector {
            classes: classes
                .iter()
                .map(|c| {
                    let y = ratio * c.slo.threshold();
                    ClassSli {
                        dscp: c.dscp,
                        flows: 100,
                        p50: y,
                        p99: y,
                        p999: y,
                        mean: y,
                        qct: None,
                    }
                })
                .collect(),
        }
    }

    /// The scored start configuration under a constant residual surrogate (μ, σ) in `space`.
    fn scored_in(space_of_r: ResidualSpace, mu: f64, sigma: f64, g_best: f64) -> (Scored, f64) {
        let classes = vec![
            TrafficClass::new("AF11", Dscp::AF11, 10.0),
            TrafficClass::new("AF21", Dscp::AF21, 13.0),
            TrafficClass::new("AF31", Dscp::AF31, 17.0),
        ];
        let params = ControllerParams {
            residual: space_of_r,
            ..ControllerParams::default()
        };
        let objective = Objective::new(&classes, params.lse_sharpness, params.fairness_weight).unwrap();
        let dscps: Vec<Dscp> = classes.iter().map(|c| c.dscp).collect();
        let space = Space::new(&KnobSpace::per_class_default(&dscps), None).unwrap();
        let base = default_initial(&classes);
        let centre = space.point_of_config(&base).unwrap();
        let surrogate = Surrogate::constant(mu, sigma, SurrogateStatus::Disabled);
        let model = Flat {
            classes: classes.clone(),
            ratio: 0.5,
        };
        let ctx = AcqContext {
            space: &space,
            base: &base,
            objective: &objective,
            surrogate: &surrogate,
            model: Some(&model),
            crn_seed: 1,
            centre: &centre,
            radius: Some(0.3),
            g_best,
            params: &params,
            known: &[],
            stand_in: None,
            calibration: None,
            safe_sigmas: None,
        };
        let ev = Evaluator::new(&ctx);
        let acq = ev.score(&[space.opt_of(&centre)]);
        assert!(acq[0].is_finite());
        let s = ev.cache.borrow().values().next().cloned().unwrap();
        (s, objective.lower_bound())
    }

    /// The paper's additive residual.
    fn scored_with_residual(mu: f64, sigma: f64, g_best: f64) -> (Scored, f64) {
        scored_in(ResidualSpace::Additive, mu, sigma, g_best)
    }

    #[test]
    fn ei_does_not_reward_a_predicted_j_below_the_lower_bound() {
        let g_best = 0.9;
        // f ≈ 0.5 + ln(3)/c; residual means that push f + μ below ln(3)/c by 1 and by 50.
        let (a, bound) = scored_with_residual(-1.0 - 0.5, 0.2, g_best);
        let (b, _) = scored_with_residual(-50.0, 0.2, g_best);
        assert!(
            a.f + a.mu < bound && b.f + b.mu < bound,
            "{} {} {bound}",
            a.f + a.mu,
            b.f + b.mu
        );
        // Both are reported at the bound, and EI is that of a prediction at the bound.
        // ĝ is reported at (just above) the bound, never below it.
        assert!(a.g_hat() >= bound && a.g_hat() < bound + 0.01, "{}", a.g_hat());
        assert!((b.g_hat() - bound).abs() < 1e-12);
        // EI promises at most what J can improve by: g_best − bound, which the far-below
        // prediction reaches and the uncensored EI exceeds fiftyfold.
        assert!(a.ei <= g_best - bound && b.ei <= g_best - bound);
        assert!((b.ei - (g_best - bound)).abs() < 1e-12);
        assert!(crate::ei::expected_improvement(b.f + b.mu, 0.2, g_best) > 40.0);
        // The lower prediction still ranks first (no tie that σ alone would break).
        assert!(b.ei >= a.ei);
        // Many σ above the bound nothing changes.
        let (c, _) = scored_with_residual(0.1, 0.04, g_best);
        assert!((c.f + c.mu - bound) / 0.04 > 10.0);
        assert!((c.g_hat() - (c.f + c.mu)).abs() < 1e-12);
        assert!((c.ei - crate::ei::expected_improvement(c.f + c.mu, 0.04, g_best)).abs() < 1e-12);
    }

    #[test]
    fn the_log_residual_scales_the_model_and_censors_ln_j_at_the_bound() {
        let g_best = 0.9;
        // The model says f = J(0.5, 0.5, 0.5); a residual of ln 0.64 (the model overestimates
        // by 1/0.64, as at the testbed's poor start) scales it, it does not shift it.
        let (a, bound) = scored_in(ResidualSpace::Log, 0.64f64.ln(), 0.0, g_best);
        assert!(
            (a.g_hat() - 0.64 * a.f).abs() < 1e-12,
            "{} vs {}",
            a.g_hat(),
            0.64 * a.f
        );
        assert!(
            (a.ei - (g_best.ln() - (0.64 * a.f).ln())).abs() < 1e-12,
            "EI in log units: {}",
            a.ei
        );
        // A residual far below: ĝ stops at the bound and EI at ln g_best − ln bound.
        let (b, _) = scored_in(ResidualSpace::Log, -50.0, 0.2, g_best);
        assert!((b.g_hat() - bound).abs() < 1e-9, "{} vs {bound}", b.g_hat());
        assert!((b.ei - (g_best.ln() - bound.ln())).abs() < 1e-9);
        assert!(b.ei >= a.ei);
    }

    /// Every class's ratio falls as AF11's ECN threshold grows: 0.9 at 30 kB.
    struct Slope {
        classes: Vec<TrafficClass>,
    }

    impl PerformanceModel for Slope {
        fn predict(&self, configs: &[NetworkConfig], _crn: u64) -> Result<Vec<SliVector>, ModelError> {
            Ok(configs
                .iter()
                .map(|cfg| {
                    let k = cfg.class(Dscp::AF11).map_or(30_000.0, |c| c.ecn_threshold.0 as f64);
                    at_ratio(&self.classes, (0.9 * 30_000.0 / k).clamp(0.05, 5.0))
                })
                .collect())
        }
    }

    /// One acquisition from the default start with a compliant g_best = 0.9, under a constant
    /// log residual N(0, σ²), with the safety rule at `safe` σ (or off).
    fn acquire_with(sigma: f64, safe: Option<f64>) -> (AcqOutcome, f64) {
        let model = Slope { classes: classes() };
        acquire_on(&model, sigma, safe)
    }

    fn classes() -> Vec<TrafficClass> {
        vec![
            TrafficClass::new("AF11", Dscp::AF11, 10.0),
            TrafficClass::new("AF21", Dscp::AF21, 13.0),
            TrafficClass::new("AF31", Dscp::AF31, 17.0),
        ]
    }

    /// [`acquire_with`] on `model`.
    fn acquire_on(model: &dyn PerformanceModel, sigma: f64, safe: Option<f64>) -> (AcqOutcome, f64) {
        acquire_solved(model, sigma, safe, LocalSolver::NelderMead)
    }

    /// [`acquire_on`] with the local solver `solver`.
    fn acquire_solved(
        model: &dyn PerformanceModel,
        sigma: f64,
        safe: Option<f64>,
        solver: LocalSolver,
    ) -> (AcqOutcome, f64) {
        with_context(model, sigma, safe, solver, |ctx| {
            let mut rng = <Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(3);
            let out = acquire(ctx, &[], &mut rng).unwrap();
            let ucb = out.best.ucb(ctx, safe.unwrap_or(0.0));
            (out, ucb)
        })
    }

    /// `f` on the acquisition context of three classes around the default configuration.
    fn with_context<R>(
        model: &dyn PerformanceModel,
        sigma: f64,
        safe: Option<f64>,
        solver: LocalSolver,
        f: impl FnOnce(&AcqContext<'_>) -> R,
    ) -> R {
        let classes = classes();
        let params = ControllerParams {
            acq_solver: solver,
            ..ControllerParams::default()
        };
        let objective = Objective::new(&classes, params.lse_sharpness, params.fairness_weight).unwrap();
        let dscps: Vec<Dscp> = classes.iter().map(|c| c.dscp).collect();
        let space = Space::new(&KnobSpace::per_class_default(&dscps), None).unwrap();
        let base = default_initial(&classes);
        let centre = space.point_of_config(&base).unwrap();
        let surrogate = Surrogate::constant(0.0, sigma, SurrogateStatus::Disabled);
        let ctx = AcqContext {
            space: &space,
            base: &base,
            objective: &objective,
            surrogate: &surrogate,
            model: Some(model),
            crn_seed: 1,
            centre: &centre,
            radius: Some(0.3),
            g_best: 0.9,
            params: &params,
            known: &[],
            stand_in: None,
            calibration: None,
            safe_sigmas: safe,
        };
        f(&ctx)
    }

    #[test]
    fn a_compliant_incumbent_is_left_only_for_a_candidate_whose_upper_bound_stays_below_one() {
        // Wide residual: EI alone moves away (to a larger AF11 threshold) although the move's
        // upper bound at 2σ is far above 1.
        let (free, _) = acquire_with(1.5, None);
        assert!(free.best.distance > 0.05 && !free.safe, "{}", free.best.distance);
        assert!(free.best.f * (2.0f64 * 1.5).exp() > 1.0);
        // With the rule nothing is safe: the incumbent (the centre) stays.
        let (kept, ucb) = acquire_with(1.5, Some(2.0));
        assert!(kept.safe && kept.exploit, "{:?}", kept.best.distance);
        assert!(kept.best.distance < 1e-9, "{}", kept.best.distance);
        assert!(ucb >= 1.0);
        // A narrow residual: the chosen move is safe, and the rule does not change it.
        let (narrow, ucb) = acquire_with(0.05, Some(2.0));
        let (narrow_free, _) = acquire_with(0.05, None);
        assert!(ucb < 1.0 && !narrow.safe, "{ucb}");
        assert_eq!(narrow.best.x, narrow_free.best.x);
    }

    /// [`Slope`], with every call's batch size recorded; with `refuse_call`, that call (0-based)
    /// fails.
    struct Recorded {
        inner: Slope,
        sizes: std::sync::Mutex<Vec<usize>>,
        refuse_call: Option<usize>,
    }

    impl PerformanceModel for Recorded {
        fn predict(&self, configs: &[NetworkConfig], crn: u64) -> Result<Vec<SliVector>, ModelError> {
            let mut sizes = self.sizes.lock().unwrap();
            sizes.push(configs.len());
            if self.refuse_call == Some(sizes.len() - 1) {
                return Err(ModelError("refused".into()));
            }
            self.inner.predict(configs, crn)
        }
    }

    #[test]
    fn the_initial_simplices_go_to_the_model_in_one_batch_and_change_no_choice() {
        let recorded = |refuse_call| Recorded {
            inner: Slope { classes: classes() },
            sizes: std::sync::Mutex::new(Vec::new()),
            refuse_call,
        };
        let batched = recorded(None);
        let (out, _) = acquire_on(&batched, 0.05, None);
        let sizes = batched.sizes.lock().unwrap().clone();
        // The first batch (starts and random candidates), then every start's simplex at once:
        // up to one simplex of 10 vertices per start on the nine-knob space, fewer where they
        // coincide.
        let starts = ControllerParams::default().acq_refine_starts;
        assert!(sizes[0] >= 64, "{sizes:?}");
        assert!((10..=10 * starts).contains(&sizes[1]), "{sizes:?}");
        assert_eq!(out.calls, sizes.len());
        // With the simplex batch refused, every vertex is scored when its solver starts (the
        // path without the batch): the same proposal, from as many configurations.
        let one_by_one = recorded(Some(1));
        let (same, _) = acquire_on(&one_by_one, 0.05, None);
        let singles = one_by_one.sizes.lock().unwrap().clone();
        assert!(singles.len() > sizes.len() + 8, "{singles:?}");
        assert_eq!(same.best, out.best);
        assert_eq!((same.exploit, same.safe), (out.exploit, out.safe));
        assert_eq!(same.evaluations - singles[1], out.evaluations);
    }

    #[test]
    fn the_batched_search_scores_whole_rounds_at_once_and_repeats_itself() {
        let recorded = || Recorded {
            inner: Slope { classes: classes() },
            sizes: std::sync::Mutex::new(Vec::new()),
            refuse_call: None,
        };
        let m = recorded();
        let (out, _) = acquire_solved(&m, 0.05, None, LocalSolver::Batched);
        let sizes = m.sizes.lock().unwrap().clone();
        // The first batch, then BATCH_ROUNDS rounds of BATCH_DRAWS draws per start, less the
        // draws that round to a configuration already scored.
        let starts = ControllerParams::default().acq_refine_starts;
        assert_eq!(sizes.len(), 1 + BATCH_ROUNDS, "{sizes:?}");
        assert!(
            sizes[1..].iter().all(|&n| n > BATCH_DRAWS && n <= starts * BATCH_DRAWS),
            "{sizes:?}"
        );
        assert_eq!(out.evaluations, sizes.iter().sum::<usize>());
        // The same seed gives the same proposal, about as good (A_TR) as Nelder–Mead's.
        let (again, _) = acquire_solved(&recorded(), 0.05, None, LocalSolver::Batched);
        assert_eq!(again.best, out.best);
        let (nm, _) = acquire_solved(&recorded(), 0.05, None, LocalSolver::NelderMead);
        assert!(
            out.best.acq <= nm.best.acq + 0.05,
            "batched {} vs Nelder–Mead {}",
            out.best.acq,
            nm.best.acq
        );
    }

    #[test]
    fn the_rest_of_a_shrink_is_known_before_its_first_vertex_is_scored() {
        // A triangle whose reflection and inside contraction both score worse than its worst
        // vertex: the step shrinks it towards the best vertex (0, 0).
        struct Table;
        impl CostFunction for Table {
            type Param = Vec<f64>;
            type Output = f64;
            fn cost(&self, z: &Vec<f64>) -> Result<f64, argmin::core::Error> {
                Ok(z[0] + 2.0 * z[1])
            }
        }
        let mut solver = NelderMead::new(vec![vec![0.0, 0.0], vec![1.0, 0.0], vec![0.0, 1.0]]);
        let (state, _) = solver
            .init(&mut argmin::core::Problem::new(Table), IterState::new())
            .unwrap();
        let (reflection, contraction) = (vec![1.0, -1.0], vec![0.25, 0.5]);
        let shrunk = [vec![0.5, 0.0], vec![0.0, 0.5]];
        let vertex = |z: &[f64]| {
            [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
                .iter()
                .position(|v| v.as_slice() == z)
                .map(|i| i as f64)
        };
        // Waiting for the reflection, or the contraction: what follows depends on its score.
        assert!(shrink_rest(&solver, &state, &vertex).is_empty());
        let bad = |z: &[f64]| vertex(z).or((z == reflection.as_slice()).then_some(100.0));
        assert!(shrink_rest(&solver, &state, &bad).is_empty());
        // Both scored badly: waiting for the first shrunk vertex, the second is certain.
        let both = |z: &[f64]| bad(z).or((z == contraction.as_slice()).then_some(100.0));
        assert_eq!(shrink_rest(&solver, &state, &both), vec![shrunk[1].clone()]);
        // And that is the step's own next point, whatever the first one scores.
        for first in [-5.0, 0.5, 7.0] {
            let asked = RefCell::new(Vec::new());
            let known = |z: &[f64]| both(z).or((z == shrunk[0].as_slice()).then_some(first));
            let mut problem = argmin::core::Problem::new(Probe {
                known: &known,
                asked: &asked,
                value: 0.0,
            });
            solver.clone().next_iter(&mut problem, state.clone()).unwrap();
            assert_eq!(asked.into_inner(), vec![shrunk[1].clone()]);
        }
    }

    #[test]
    fn nelder_mead_in_lock_step_takes_the_steps_each_start_takes_alone() {
        let model = Recorded {
            inner: Slope { classes: classes() },
            sizes: std::sync::Mutex::new(Vec::new()),
            refuse_call: None,
        };
        with_context(&model, 0.05, None, LocalSolver::NelderMead, |ctx| {
            let mut rng = <Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(5);
            let mut starts = vec![ctx.space.opt_of(ctx.centre)];
            starts.extend(sample_starts(ctx.space, ctx.centre, ctx.radius, 2, &mut rng));
            let together = Evaluator::new(ctx);
            nelder_mead_in_lock_step(ctx, &together, starts.clone());
            // The reference: argmin's executor on each start in turn, one configuration per call.
            let alone = Evaluator::new(ctx);
            for z0 in &starts {
                let solver = NelderMead::new(initial_simplex(ctx.space, z0))
                    .with_sd_tolerance(1e-7)
                    .unwrap();
                Executor::new(Problem { ev: &alone, h: 0.02 }, solver)
                    .configure(|s| s.max_iters(ctx.params.acq_max_iters))
                    .run()
                    .unwrap();
            }
            let (a, b) = (together.cache.borrow(), alone.cache.borrow());
            assert!(b.len() > 60, "{}", b.len());
            let mut ka: Vec<_> = a.keys().collect();
            let mut kb: Vec<_> = b.keys().collect();
            ka.sort();
            kb.sort();
            assert_eq!(ka, kb, "the same configurations scored");
            for (k, s) in a.iter() {
                assert_eq!(s, &b[k]);
            }
            // The same configurations in far fewer calls: the simplices in one, then a round's
            // worth (at most one per start) per call.
            let (ca, cb) = (*together.calls.borrow(), *alone.calls.borrow());
            assert_eq!(*together.evaluations.borrow(), *alone.evaluations.borrow());
            assert!(3 * ca < 2 * cb, "{ca} calls against {cb}");
            let sizes = model.sizes.lock().unwrap().clone();
            assert!(sizes[1..ca].iter().all(|&n| n <= starts.len()), "{sizes:?}");
            assert!(sizes[1..ca].iter().any(|&n| n > 1), "{sizes:?}");
        });
    }
}
