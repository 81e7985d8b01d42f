//! The Polyphony controller: one `observe` per measured interval, one `propose` per control
//! iteration. It wires the pieces of §4–§5 together — objective, denoiser, rolling best and
//! regime shifts, sample admission, the residual GP, and the trust-region EI acquisition —
//! and carries all of its state in serde-serialisable fields, so a restored controller
//! proposes exactly what the original would. The only outside call is the
//! [`PerformanceModel`] passed to `propose`. No I/O, no clock, no threads of its own.

use crate::acquire::{acquire, AcqContext};
use crate::adapt::{Measured, RegimeDetector, RollingBest};
use crate::calibration::Calibration;
use crate::denoise::{Denoiser, DenoiserSettings};
use crate::gp::{self, FitMode, GpSettings, Surrogate, SurrogateStatus};
use crate::model::PerformanceModel;
use crate::objective::Objective;
use crate::params::ControllerParams;
use crate::residual::ResidualSpace;
use crate::samples::{Admission, Sample, SampleWindow};
use crate::space::Space;
use crate::trust::TrustRegion;
use crate::CoreError;
use ndarray::{Array1, Array2};
use polyphony_spec::{Bytes, KnobSpace, NetworkConfig, Packets, Scenario, SliVector, TrafficClass};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Which components are switched on: the full controller and its ablations (paper §8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    /// Penalise moves beyond ε from the best configuration.
    pub trust_region: bool,
    /// Use the performance model f (otherwise f ≡ 0 and the GP learns g itself).
    pub model: bool,
    /// Learn the residual with a GP (otherwise ĝ = f, σ = 0: the open-loop model).
    pub correction: bool,
    /// Smooth g with the adaptive denoiser.
    pub denoiser: bool,
}

impl Variant {
    /// Polyphony, everything on.
    pub const FULL: Variant = Variant {
        trust_region: true,
        model: true,
        correction: true,
        denoiser: true,
    };
    /// Ablation: no trust region.
    pub const NO_TRUST_REGION: Variant = Variant {
        trust_region: false,
        ..Variant::FULL
    };
    /// Ablation: no residual correction (open-loop model).
    pub const NO_CORRECTION: Variant = Variant {
        correction: false,
        ..Variant::FULL
    };
    /// Ablation: no model (GP on g alone), trust region kept.
    pub const NO_MODEL: Variant = Variant {
        model: false,
        ..Variant::FULL
    };
    /// Ablation: no denoiser.
    pub const NO_DENOISER: Variant = Variant {
        denoiser: false,
        ..Variant::FULL
    };
    /// Model-free GP-EI Bayesian optimisation over the whole space.
    pub const WHOLE_SPACE_BO: Variant = Variant {
        trust_region: false,
        model: false,
        correction: true,
        denoiser: true,
    };

    /// A short name for tables and logs.
    pub fn name(&self) -> &'static str {
        match *self {
            Variant::FULL => "polyphony",
            Variant::NO_TRUST_REGION => "no-trust-region",
            Variant::NO_CORRECTION => "no-correction",
            Variant::NO_MODEL => "no-model",
            Variant::NO_DENOISER => "no-denoiser",
            Variant::WHOLE_SPACE_BO => "whole-space-bo",
            _ => "polyphony-custom",
        }
    }
}

/// One measured interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// The configuration that was applied during the interval.
    pub config: NetworkConfig,
    /// The SLIs measured during the interval.
    pub slis: SliVector,
    /// An identifier of the workload window the model should use (changes when the workload
    /// changes); it selects the common-random-number seed.
    #[serde(default)]
    pub workload: Option<u64>,
}

/// What `observe` concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObserveReport {
    /// Iteration number of this observation (0-based).
    pub iteration: u64,
    /// Per-class ratios r_i = y_i / v_i.
    pub ratios: Vec<f64>,
    /// Raw objective g.
    pub g_raw: f64,
    /// Denoised objective.
    pub g: f64,
    /// Denoiser kernel width (0 = off).
    pub denoiser_width: f64,
    /// Rolling best after this observation.
    pub g_best: f64,
    /// Whether this observation completed a regime shift.
    pub regime_shift: bool,
    /// Trust-region radius after this observation.
    pub trust_radius: f64,
}

/// Why a configuration was proposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonKind {
    /// The acquisition's best point: highest EI inside the trust region.
    ExpectedImprovement,
    /// No point promised improvement: the lowest predicted ĝ inside the region, or, under safe
    /// exploration, no point promised a safe one: the incumbent.
    Exploit,
    /// A regime shift was detected; the region was re-centred on the current configuration.
    RegimeShift,
    /// A baseline tuner's own rule.
    Baseline,
    /// A warm-up window: the next design point (see [`crate::step`]).
    WarmUp,
    /// The interval was not usable; the tuner was not asked.
    Skipped,
    /// The measurement broke the guard: back to the last known good configuration.
    Guard,
    /// The tuner could not propose; the configuration in force stays.
    Held,
}

/// The reason of a proposal: a machine-readable kind and a sentence for operators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    /// Kind.
    pub kind: ReasonKind,
    /// Human text, e.g. "regime shift: re-centred on the current configuration".
    pub text: String,
}

/// The next configuration and everything known about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// Proposal number (0-based).
    pub iteration: u64,
    /// The configuration to apply.
    pub config: NetworkConfig,
    /// Its point in normalised coordinates.
    pub point: Vec<f64>,
    /// The model's SLIs at the configuration (None for model-free tuners).
    pub model_slis: Option<SliVector>,
    /// Predicted objective ĝ = E[max(f + μ_R + σ_R·ε, ln(N)/c)]: the surrogate's mean with J's
    /// lower bound enforced (`max(f + μ_R, ln(N)/c)` when σ_R = 0; None when the tuner has no
    /// surrogate). With the log residual, exp(E[max(ln f + μ_R + σ_R·ε, ln(ln(N)/c))]).
    pub g_hat: Option<f64>,
    /// Its standard deviation σ_R (a factor e^{σ_R} with the log residual).
    pub sigma: Option<f64>,
    /// Expected improvement over g_best.
    pub expected_improvement: Option<f64>,
    /// The best measured (denoised) objective in the rolling window.
    pub g_best: Option<f64>,
    /// Trust-region radius used (None without a trust region).
    pub trust_radius: Option<f64>,
    /// Why.
    pub reason: Reason,
    /// How the residual surrogate came about (fits, fallbacks).
    pub surrogate: SurrogateStatus,
    /// Admission decisions taken for the observations since the last proposal.
    pub admissions: Vec<Admission>,
    /// Samples in the rolling window.
    pub samples: usize,
    /// Configurations evaluated by the model for this proposal.
    pub model_evaluations: usize,
    /// Calls of the model (batches).
    pub model_calls: usize,
    /// The model's per-class calibration factors at the proposed configuration (objective
    /// order; `None` without a model or with `model_calibration` off): the measured ratio is
    /// expected to be this many times the model's there.
    #[serde(default)]
    pub model_scale: Option<Vec<f64>>,
    /// The model's per-class ratios (objective order, before calibration; NaN: a class it saw
    /// no flow of) at the configuration measured last, on the window it was measured in: the
    /// measured ratio over this is the model's miss on this network. `None` without a model.
    #[serde(default)]
    pub observed_model_ratios: Option<Vec<f64>>,
}

/// What admitting the pending observations did.
struct Admitted {
    admissions: Vec<Admission>,
    /// Configurations the model evaluated.
    evaluations: usize,
    /// Its calls.
    calls: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Pending {
    iteration: u64,
    x: Vec<f64>,
    config: NetworkConfig,
    g: f64,
    /// The measured ratios: they stand in for a class the model's window has no SLI of.
    #[serde(default)]
    ratios: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    iteration: u64,
    proposals: u64,
    rng: Xoshiro256PlusPlus,
    denoiser: Denoiser,
    best: RollingBest,
    regime: RegimeDetector,
    samples: SampleWindow,
    pending: Vec<Pending>,
    /// Flattened: the state file keeps its `radius`, `improve_streak`, `stall_streak` keys.
    #[serde(flatten)]
    trust: TrustRegion,
    hyper: Option<gp::Hyper>,
    workload: Option<u64>,
    regime_shift_pending: bool,
    last_proposal: Option<Vec<f64>>,
    /// The denoised g of each warm-up window since the last control observation, and the
    /// first warm-up point; pooled into one rolling-best entry (see [`Controller::warm_up`]).
    #[serde(default)]
    warmup_g: Vec<f64>,
    #[serde(default)]
    warmup_centre: Option<Vec<f64>>,
    /// The last measured ratios, in objective order: the acquisition's stand-in for a class
    /// the model's window has no SLI of ([`Objective::model_value`]).
    #[serde(default)]
    last_ratios: Option<Vec<f64>>,
    /// The model's per-class ratios at the latest observation scored, with its iteration
    /// ([`Proposal::observed_model_ratios`]).
    #[serde(default)]
    observed_model: Option<(u64, Vec<f64>)>,
}

impl State {
    /// A measured (denoised) g at `x`: into the rolling best, and pending admission.
    fn record(&mut self, x: Vec<f64>, config: &NetworkConfig, g: f64, ratios: &[f64]) {
        self.last_ratios = Some(ratios.to_vec());
        self.best.push(Measured {
            iteration: self.iteration,
            g,
            x: x.clone(),
        });
        self.pending.push(Pending {
            iteration: self.iteration,
            x,
            config: config.clone(),
            g,
            ratios: ratios.to_vec(),
        });
    }
}

/// The Polyphony controller (all variants). Serialise it to persist it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Controller {
    space: Space,
    objective: Objective,
    base: NetworkConfig,
    params: ControllerParams,
    variant: Variant,
    state: State,
}

/// The starting configuration used when a scenario has none: equal weights, K = 30 kB
/// (20 full-size packets), initial window 10 (Linux's default).
pub fn default_initial(classes: &[TrafficClass]) -> NetworkConfig {
    let dscps: Vec<_> = classes.iter().map(|c| c.dscp).collect();
    NetworkConfig::uniform(&dscps, Bytes(30_000), Packets(10))
}

/// Brings a saved state of an earlier version to the current form: `params.denoiser_enabled`
/// (removed; the variant's `denoiser` flag says the same) is folded into `variant.denoiser`, and
/// `params.trust_radius_max` (removed; it bounded a region that no longer bounds any step) is
/// dropped.
fn migrate_state(v: &mut serde_json::Value) {
    let params = v.get_mut("params").and_then(serde_json::Value::as_object_mut);
    let old = params.and_then(|p| {
        p.remove("trust_radius_max");
        p.remove("denoiser_enabled")
    });
    if old.and_then(|x| x.as_bool()) == Some(false) {
        if let Some(d) = v.pointer_mut("/variant/denoiser") {
            *d = serde_json::Value::Bool(false);
        }
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Controller {
    /// A controller for `classes` over `space`, starting from `initial` (whose values also fill
    /// knobs outside the space).
    pub fn new(
        classes: &[TrafficClass],
        space: &KnobSpace,
        initial: NetworkConfig,
        params: ControllerParams,
        variant: Variant,
    ) -> Result<Controller, CoreError> {
        params.validate()?;
        let space = Space::new(space, params.aitchison_alpha)?;
        let objective = Objective::new(classes, params.lse_sharpness, params.fairness_weight)?;
        initial
            .validate()
            .map_err(|e| CoreError::InvalidConfig(format!("initial configuration: {e}")))?;
        for c in classes {
            if initial.class(c.dscp).is_none() {
                return Err(CoreError::InvalidConfig(format!(
                    "initial configuration has no entry for class {} (DSCP {})",
                    c.name, c.dscp
                )));
            }
        }
        let x0 = space.point_of_config(&initial)?;
        space.config_of(&x0, &initial)?.validate().map_err(|e| {
            CoreError::InvalidConfig(format!("the knob space cannot express a valid configuration: {e}"))
        })?;
        let denoiser = Denoiser::new(DenoiserSettings {
            enabled: variant.denoiser,
            window: params.denoiser_volatility_window,
            off_below: params.denoiser_off_below,
            volatility_per_width: params.denoiser_volatility_per_width,
            max_width: params.denoiser_max_width,
            config_radius: params.denoiser_config_radius,
        });
        let state = State {
            iteration: 0,
            proposals: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(params.seed),
            denoiser,
            best: RollingBest::new(params.best_window),
            regime: RegimeDetector::new(params.regime_factor, params.regime_patience),
            samples: SampleWindow::new(params.sample_window),
            pending: Vec::new(),
            trust: TrustRegion::new(&params),
            hyper: None,
            workload: None,
            regime_shift_pending: false,
            last_proposal: None,
            warmup_g: Vec::new(),
            warmup_centre: None,
            last_ratios: None,
            observed_model: None,
        };
        Ok(Controller {
            space,
            objective,
            base: initial,
            params,
            variant,
            state,
        })
    }

    /// A controller for a scenario: its classes, its knob space ([`Scenario::knob_space`]: the
    /// scenario's own or [`KnobSpace::per_class_default`]) and its initial configuration (or
    /// [`default_initial`]).
    pub fn from_scenario(
        scenario: &Scenario,
        params: ControllerParams,
        variant: Variant,
    ) -> Result<Controller, CoreError> {
        let space = scenario.knob_space();
        let initial = scenario
            .initial
            .clone()
            .unwrap_or_else(|| default_initial(&scenario.classes));
        Controller::new(&scenario.classes, &space, initial, params, variant)
    }

    /// The validated knob space.
    pub fn space(&self) -> &Space {
        &self.space
    }
    /// The objective.
    pub fn objective(&self) -> &Objective {
        &self.objective
    }
    /// The hyperparameters.
    pub fn params(&self) -> &ControllerParams {
        &self.params
    }
    /// The variant.
    pub fn variant(&self) -> Variant {
        self.variant
    }
    /// The initial configuration.
    pub fn initial(&self) -> &NetworkConfig {
        &self.base
    }
    /// Number of samples in the rolling window.
    pub fn samples(&self) -> usize {
        self.state.samples.len()
    }
    /// The rolling window of admitted samples (oldest first through
    /// [`SampleWindow::samples`]): what the residual GP is fitted on, for callers that show or
    /// export them without going through the serialised form.
    pub fn sample_window(&self) -> &SampleWindow {
        &self.state.samples
    }

    /// The whole state as JSON.
    pub fn to_json(&self) -> Result<String, CoreError> {
        serde_json::to_string(self).map_err(|e| CoreError::State(e.to_string()))
    }
    /// A controller from [`Controller::to_json`]'s output.
    pub fn from_json(s: &str) -> Result<Controller, CoreError> {
        let bad = |e: serde_json::Error| CoreError::State(format!("{e}: is this a saved controller state?"));
        let mut v: serde_json::Value = serde_json::from_str(s).map_err(bad)?;
        migrate_state(&mut v);
        let c: Controller = serde_json::from_value(v).map_err(bad)?;
        c.params.validate()?;
        Ok(c)
    }

    /// This controller under new SLO thresholds or class weights for the same classes: the
    /// same DSCPs in the same order, each with the same SLI (kind and percentile). A ratio is
    /// an SLI over its threshold, so every stored measured and modelled ratio is rescaled by
    /// old threshold / new threshold and every stored objective value recomputed from them:
    /// the samples the residual GP learns from, the measurements awaiting admission and the
    /// last measured ratios. The denoiser's history and the pooled warm-up hold objective
    /// values without their ratios and start afresh; the rolling best is rebuilt from the
    /// kept samples and pending measurements (their undenoised values); the regime detector's
    /// streak restarts. Samples from states saved before ratios were kept are dropped. The
    /// trust region, the GP's hyperparameters, the iteration count and the random state carry
    /// over.
    pub fn retarget(&self, classes: &[TrafficClass]) -> Result<Controller, CoreError> {
        let objective = Objective::new(classes, self.params.lse_sharpness, self.params.fairness_weight)?;
        let (old, new) = (self.objective.targets(), objective.targets());
        if old.len() != new.len() {
            return Err(CoreError::InvalidObjective(format!(
                "{} classes given for a controller of {}: only thresholds and weights can change",
                new.len(),
                old.len()
            )));
        }
        for (a, b) in old.iter().zip(new) {
            if a.dscp != b.dscp
                || a.slo.kind() != b.slo.kind()
                || (a.slo.percentile() - b.slo.percentile()).abs() > 1e-12
            {
                return Err(CoreError::InvalidObjective(format!(
                    "class {} (DSCP {}) {} cannot become {} (DSCP {}) {}: only thresholds and weights can change",
                    a.name,
                    a.dscp,
                    a.slo.describe(),
                    b.name,
                    b.dscp,
                    b.slo.describe()
                )));
            }
        }
        let k: Vec<f64> = old
            .iter()
            .zip(new)
            .map(|(a, b)| a.slo.threshold() / b.slo.threshold())
            .collect();
        let rescale = |r: &mut Vec<f64>| {
            if r.len() != k.len() {
                return false;
            }
            for (x, k) in r.iter_mut().zip(&k) {
                *x *= k;
            }
            true
        };
        let mut c = self.clone();
        c.objective = objective;
        let (objective, st) = (&c.objective, &mut c.state);
        st.samples.retain_mut(|s| {
            if !rescale(&mut s.ratios) {
                return false;
            }
            if !s.model_ratios.is_empty() && !rescale(&mut s.model_ratios) {
                return false;
            }
            s.g = objective.of_ratios(&s.ratios);
            s.f = if s.model_ratios.is_empty() {
                s.f
            } else {
                objective
                    .model_value(&s.model_ratios, None, Some(&s.ratios))
                    .map_or(s.f, |(v, _)| v)
            };
            true
        });
        st.pending.retain_mut(|p| {
            let kept = rescale(&mut p.ratios);
            if kept {
                p.g = objective.of_ratios(&p.ratios);
            }
            kept
        });
        if let Some(r) = &mut st.last_ratios {
            if !rescale(r) {
                st.last_ratios = None;
            }
        }
        st.denoiser.reset();
        st.warmup_g.clear();
        st.warmup_centre = None;
        st.regime = RegimeDetector::new(self.params.regime_factor, self.params.regime_patience);
        let mut measured: Vec<Measured> = st
            .samples
            .samples()
            .map(|s| (s.iteration, s.g, &s.x))
            .chain(st.pending.iter().map(|p| (p.iteration, p.g, &p.x)))
            .map(|(iteration, g, x)| Measured {
                iteration,
                g,
                x: x.clone(),
            })
            .collect();
        measured.sort_by_key(|m| m.iteration);
        st.best.reset();
        for m in measured {
            st.best.push(m);
        }
        Ok(c)
    }

    /// Records one measured interval.
    pub fn observe(&mut self, obs: &Observation) -> Result<ObserveReport, CoreError> {
        let ratios = self.objective.ratios(&obs.slis)?;
        let g_raw = self.objective.of_ratios(&ratios);
        let x = self.space.point_of_config(&obs.config)?;
        let st = &mut self.state;
        st.workload = obs.workload;
        st.warmup_g.clear();
        st.warmup_centre = None;
        let before = st.best.best().map(|m| m.g);
        let mut d = st.denoiser.push(g_raw, &x, &self.space);
        let shift = st.regime.update(d.value, before);
        if shift {
            tracing::info!(g = d.value, g_best = ?before, "regime shift: re-centring on the current configuration");
            st.best.reset();
            st.denoiser.reset();
            d = st.denoiser.push(g_raw, &x, &self.space);
            st.trust.reset(&self.params);
            st.regime_shift_pending = true;
        } else {
            let improved = before.is_none_or(|b| d.value < b - 1e-3 * b.abs());
            st.trust.update(improved, before, &self.params);
        }
        st.record(x, &obs.config, d.value, &ratios);
        let report = ObserveReport {
            iteration: st.iteration,
            ratios,
            g_raw,
            g: d.value,
            denoiser_width: d.width,
            g_best: st.best.best().map_or(d.value, |m| m.g),
            regime_shift: shift,
            trust_radius: st.trust.radius,
        };
        st.iteration += 1;
        Ok(report)
    }

    fn gp_settings(&self) -> GpSettings {
        GpSettings {
            nuggets: self.params.gp_nuggets.clone(),
            means: self.params.gp_means.clone(),
            max_eval: self.params.gp_max_eval,
            min_samples: self.params.gp_min_samples,
            prior_sigma: self.params.gp_prior_sigma,
            bounded: true,
        }
    }

    fn training(&self) -> (Array2<f64>, Array1<f64>) {
        let s: Vec<&Sample> = self.state.samples.samples().collect();
        let nf = self.space.n_features();
        let feats: Vec<Vec<f64>> = s.iter().map(|s| self.space.features(&s.x)).collect();
        let calibration = self.calibration();
        (
            Array2::from_shape_fn((s.len(), nf), |(i, j)| feats[i][j]),
            Array1::from_iter(s.iter().map(|s| {
                self.params
                    .residual
                    .residual(s.g, self.sample_f(s, calibration.as_ref()), self.variant.model)
            })),
        )
    }

    /// The per-class calibration of the model from the admitted samples
    /// ([`crate::calibration`]); `None` when switched off, without a model, or without
    /// correction — the no-correction ablation is the open-loop model, which learns nothing
    /// from measurements.
    pub fn calibration(&self) -> Option<Calibration> {
        if !(self.params.model_calibration && self.variant.model && self.variant.correction) {
            return None;
        }
        let samples = self
            .state
            .samples
            .samples()
            .map(|s| (s.x.as_slice(), s.ratios.as_slice(), s.model_ratios.as_slice()));
        Some(Calibration::new(
            samples,
            self.objective.targets().len(),
            self.params.calibration_length,
        ))
    }

    /// f of a stored sample under the calibration (its stored, uncalibrated f when it carries
    /// no per-class ratios, as in older states).
    fn sample_f(&self, s: &Sample, calibration: Option<&Calibration>) -> f64 {
        if !self.variant.model || s.model_ratios.is_empty() {
            return s.f;
        }
        let scale = calibration.map(|c| c.at(&self.space, &s.x));
        self.objective
            .model_value(&s.model_ratios, scale.as_deref(), Some(&s.ratios))
            .map_or(s.f, |(v, _)| v)
    }

    /// The common-random-number seed of the current workload.
    pub fn crn_seed(&self) -> u64 {
        splitmix(self.params.seed ^ splitmix(self.state.workload.unwrap_or(0)))
    }

    /// Gathers one initial datapoint before the control loop starts (the paper's warm-up,
    /// §8.5: "the first 500 ms are used to gather an initial set of datapoints"). The
    /// measurement enters, if admitted, the sample window — with f evaluated by `model` on this
    /// interval's workload, exactly as a control iteration's sample would be — so the residual
    /// GP learns from every warm-up window. The rolling best, however, does not receive each
    /// window: the consecutive warm-up windows are pooled into ONE entry at the first warm-up
    /// configuration (the design's centre, the start) whose g is the median of their denoised
    /// values. The design spans no more than one control step, so its windows differ mostly
    /// in measurement noise; their minimum would be a lucky window that the control loop
    /// rarely beats, pinning the trust region. The warm-up does not count towards regime
    /// shifts or trust-region growth, since the caller, not the controller, chose the
    /// configuration. Returns the admission decision (empty when the model's SLIs at the
    /// configuration were unusable, e.g. a class without flows in the model's window). A
    /// failing model call is an error and leaves the controller as it was, so the same
    /// observation can be offered again. Pick the configurations with
    /// [`crate::warmup::design`].
    pub fn warm_up(&mut self, obs: &Observation, model: &dyn PerformanceModel) -> Result<Vec<Admission>, CoreError> {
        let before = self.state.clone();
        let out = self.warm_up_inner(obs, model);
        if out.is_err() {
            self.state = before;
        }
        out
    }

    fn warm_up_inner(&mut self, obs: &Observation, model: &dyn PerformanceModel) -> Result<Vec<Admission>, CoreError> {
        let ratios = self.objective.ratios(&obs.slis)?;
        let g_raw = self.objective.of_ratios(&ratios);
        let x = self.space.point_of_config(&obs.config)?;
        let st = &mut self.state;
        st.workload = obs.workload;
        let d = st.denoiser.push(g_raw, &x, &self.space);
        if !st.warmup_g.is_empty() {
            // The previous pooled warm-up entry is the newest in the window; replace it.
            st.best.pop_last();
        }
        st.warmup_g.push(d.value);
        let centre = st.warmup_centre.get_or_insert_with(|| x.clone()).clone();
        st.best.push(Measured {
            iteration: st.iteration,
            g: crate::denoise::median(&mut st.warmup_g.clone()).unwrap_or(d.value),
            x: centre,
        });
        st.last_ratios = Some(ratios.clone());
        st.pending.push(Pending {
            iteration: st.iteration,
            x,
            config: obs.config.clone(),
            g: d.value,
            ratios,
        });
        st.iteration += 1;
        let model = if self.variant.model { Some(model) } else { None };
        let crn = self.crn_seed();
        Ok(self.admit_pending(model, crn)?.admissions)
    }

    /// Scores the observations since the last proposal with the model (one batch, on the
    /// current workload) and applies the admission rule to each.
    fn admit_pending(&mut self, model: Option<&dyn PerformanceModel>, crn: u64) -> Result<Admitted, CoreError> {
        let mut evaluations = 0;
        let mut calls = 0;
        // 1. The model's view of the new observations, in one batch.
        let pending = std::mem::take(&mut self.state.pending);
        // Per observation: the model's per-class ratios (NaN: a class it saw no flow of) and
        // f, uncalibrated (absent classes take the measured ratio).
        let fs: Vec<(Vec<f64>, f64)> = match model {
            Some(m) if !pending.is_empty() => {
                let cfgs: Vec<NetworkConfig> = pending.iter().map(|p| p.config.clone()).collect();
                calls += 1;
                evaluations += cfgs.len();
                let out = match m.predict(&cfgs, crn) {
                    Ok(o) => o,
                    Err(e) => {
                        self.state.pending = pending;
                        return Err(e.into());
                    }
                };
                if out.len() != cfgs.len() {
                    self.state.pending = pending;
                    return Err(CoreError::Model(crate::ModelError(format!(
                        "returned {} SLI vectors for {} configurations",
                        out.len(),
                        cfgs.len()
                    ))));
                }
                out.iter()
                    .zip(&pending)
                    .map(|(s, p)| {
                        let stand_in = (!p.ratios.is_empty()).then_some(p.ratios.as_slice());
                        match self.objective.model_ratios(s) {
                            Ok(r) => {
                                let f = self
                                    .objective
                                    .model_value(&r, None, stand_in)
                                    .map_or(f64::NAN, |(v, _)| v);
                                (r, f)
                            }
                            Err(_) => (Vec::new(), f64::NAN),
                        }
                    })
                    .collect()
            }
            _ => vec![(Vec::new(), 0.0); pending.len()],
        };
        // The model's view of the latest observation, for the proposal to show.
        if let Some((p, (r, _))) = pending.iter().zip(&fs).max_by_key(|(p, _)| p.iteration) {
            self.state.observed_model = (model.is_some() && !r.is_empty()).then(|| (p.iteration, r.clone()));
        }
        // 2. Admission.
        let gs = self.gp_settings();
        let mut admissions = Vec::new();
        for (p, (model_ratios, f)) in pending.into_iter().zip(fs) {
            if !f.is_finite() {
                tracing::warn!(
                    iteration = p.iteration,
                    "model SLIs at an observed configuration unusable; sample skipped"
                );
                continue;
            }
            let sample = Sample {
                iteration: p.iteration,
                x: p.x,
                g: p.g,
                f,
                ratios: p.ratios,
                model_ratios,
            };
            let surprising = if self.variant.correction && self.state.samples.len() >= gs.min_samples {
                let (x, y) = self.training();
                let s = gp::fit(&x, &y, self.state.hyper.as_ref(), FitMode::Fixed, &gs);
                let feat = Array2::from_shape_vec((1, self.space.n_features()), self.space.features(&sample.x))
                    .map_err(|e| CoreError::State(e.to_string()))?;
                let (mu, sd) = s.predict(&feat)[0];
                let f = self.sample_f(&sample, self.calibration().as_ref());
                (self.params.residual.residual(sample.g, f, self.variant.model) - mu).abs()
                    > self.params.surprise_sigmas * sd.max(1e-12)
            } else {
                false
            };
            admissions.push(self.state.samples.consider(
                &self.space,
                sample,
                surprising,
                self.params.novelty_radius,
                self.params.duplicate_radius,
            ));
        }
        Ok(Admitted {
            admissions,
            evaluations,
            calls,
        })
    }

    /// Proposes the next configuration. Calls `model` in batches (several configurations
    /// per call, all with the same `crn_seed`).
    pub fn propose(&mut self, model: &dyn PerformanceModel) -> Result<Proposal, CoreError> {
        let Some(best) = self.state.best.best().cloned() else {
            return Err(CoreError::NoObservation);
        };
        let model = if self.variant.model { Some(model) } else { None };
        let crn = self.crn_seed();
        // 1–2. The model's view of the new observations, and admission.
        let Admitted {
            admissions,
            mut evaluations,
            mut calls,
        } = self.admit_pending(model, crn)?;
        let gs = self.gp_settings();
        // 3. The residual surrogate.
        let surrogate = if self.variant.correction {
            let (x, y) = self.training();
            let mode = if self
                .state
                .proposals
                .is_multiple_of(self.params.gp_reselect_every as u64)
            {
                FitMode::Select
            } else {
                FitMode::Refit
            };
            let s = gp::fit(&x, &y, self.state.hyper.as_ref(), mode, &gs);
            if s.hyper.is_some() {
                self.state.hyper = s.hyper.clone();
            }
            s
        } else {
            Surrogate::constant(0.0, 0.0, SurrogateStatus::Disabled)
        };
        // 4. Acquisition.
        // The region bounds the step around a compliant incumbent only: while g_best ≥ 1 (no
        // configuration in the rolling window has J < 1, which implies max r < 1; one that met
        // every SLO by a small margin can still have J ≥ 1) the acquisition searches the whole
        // space, where the model's compliant region is one step away (scale-dev page).
        let radius = (self.variant.trust_region && best.g < 1.0).then_some(self.state.trust.radius);
        let mut extra: Vec<Vec<f64>> = self.state.last_proposal.iter().cloned().collect();
        let mut by_g: Vec<&Sample> = self.state.samples.samples().collect();
        by_g.sort_by(|a, b| a.g.total_cmp(&b.g));
        extra.extend(by_g.iter().take(3).map(|s| s.x.clone()));
        let known: Vec<Vec<f64>> = self.state.samples.samples().map(|s| s.x.clone()).collect();
        let calibration = self.calibration();
        let ctx = AcqContext {
            known: &known,
            space: &self.space,
            base: &self.base,
            objective: &self.objective,
            surrogate: &surrogate,
            model,
            crn_seed: crn,
            centre: &best.x,
            radius,
            g_best: best.g,
            params: &self.params,
            stand_in: self.state.last_ratios.as_deref(),
            calibration: calibration.as_ref(),
            safe_sigmas: (best.g < 1.0).then_some(self.params.safe_ucb_sigmas),
        };
        let out = acquire(&ctx, &extra, &mut self.state.rng)?;
        evaluations += out.evaluations;
        calls += out.calls;
        let b = out.best;
        let stood_in = if out.stood_in.is_empty() {
            String::new()
        } else {
            format!(
                "; the model's window completed no flow of {}: the measured ratio stands in",
                out.stood_in.join(", ")
            )
        };
        let mut reason = if self.state.regime_shift_pending {
            Reason {
                kind: ReasonKind::RegimeShift,
                text: format!(
                    "regime shift: g exceeded {}·g_best for {} consecutive intervals; re-centred on the current configuration",
                    self.params.regime_factor, self.params.regime_patience
                ),
            }
        } else if self.variant.correction && !self.variant.model && surrogate.is_constant() {
            Reason {
                kind: ReasonKind::ExpectedImprovement,
                text: "initial design: no model and too few samples for a GP; the candidate farthest from every sample"
                    .into(),
            }
        } else if out.exploit && out.safe {
            Reason {
                kind: ReasonKind::Exploit,
                text: format!(
                    "no candidate promises a safe improvement over g_best = {:.4}; holding the incumbent, where ĝ = {:.4}",
                    best.g,
                    b.g_hat()
                ),
            }
        } else if out.exploit {
            Reason {
                kind: ReasonKind::Exploit,
                text: format!(
                    "no candidate promises improvement over g_best = {:.4} (EI ≤ {:e}); proposing the lowest predicted ĝ = {:.4} in the region",
                    best.g, self.params.acq_ei_floor, b.g_hat()
                ),
            }
        } else {
            Reason {
                kind: ReasonKind::ExpectedImprovement,
                text: format!(
                    "expected improvement {:.4}{} over g_best = {:.4}: ĝ = {:.4} {} at distance {:.3}{}",
                    b.ei,
                    match self.params.residual {
                        ResidualSpace::Additive => "",
                        ResidualSpace::Log => " (of ln J)",
                    },
                    best.g,
                    b.g_hat(),
                    match self.params.residual {
                        ResidualSpace::Additive => format!("± {:.4}", b.sigma),
                        ResidualSpace::Log => format!("×÷ {:.3}", b.sigma.exp()),
                    },
                    b.distance,
                    match radius {
                        Some(r) => format!(" (radius {r:.3})"),
                        None if self.variant.trust_region =>
                            " (whole space: g_best ≥ 1; the region opens once a measured J is below 1)".into(),
                        None => " (no trust region)".into(),
                    }
                ),
            }
        };
        if out.safe {
            reason.text += &format!(
                "; safe exploration: g_best = {:.4} meets every SLO, so only a candidate whose ĝ stays below 1 at {} σ leaves it",
                best.g,
                self.params.safe_ucb_sigmas
            );
        }
        reason.text += &stood_in;
        let scale = calibration.map(|c| c.at(&self.space, &b.x));
        if let Some(s) = scale.as_ref().filter(|s| s.iter().any(|v| (v - 1.0).abs() > 0.05)) {
            let f: Vec<String> = s.iter().map(|v| format!("{v:.2}")).collect();
            reason.text += &format!("; model calibrated per class ×{}", f.join("/"));
        }
        let proposal = Proposal {
            iteration: self.state.proposals,
            config: b.config.clone(),
            point: b.x.clone(),
            model_slis: b.slis.clone(),
            g_hat: Some(b.g_hat()),
            sigma: Some(b.sigma),
            expected_improvement: Some(b.ei),
            g_best: Some(best.g),
            trust_radius: radius,
            reason,
            surrogate: surrogate.status.clone(),
            admissions,
            samples: self.state.samples.len(),
            model_evaluations: evaluations,
            model_calls: calls,
            model_scale: scale,
            observed_model_ratios: self
                .state
                .observed_model
                .as_ref()
                .filter(|(i, _)| *i + 1 == self.state.iteration)
                .map(|(_, r)| r.clone()),
        };
        self.state.last_proposal = Some(b.x);
        self.state.proposals += 1;
        self.state.regime_shift_pending = false;
        Ok(proposal)
    }
}
