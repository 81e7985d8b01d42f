//! One closed-loop run of one tuner on one ground: optional warm-up windows at design points
//! around the start (the paper's §8.5 warm-up), then per control interval: measure the
//! configuration in force, observe, propose (with flowsim replaying the interval's flows as the
//! model), apply; repeat. Records what each window measured and decided. No I/O besides the
//! ground's.

use crate::ground::{Ground, Interval};
use crate::tuners::{holds_its_configuration, initial_config, make_study_tuner};
use crate::EvalError;
use polyphony_core::{ControllerParams, Objective, Observation, Space};
use polyphony_model::NetworkModel;
use polyphony_model::{ModelContext, WindowModel};
use polyphony_spec::{KnobSpace, NetworkConfig, Scenario};
use std::sync::Arc;
use std::time::Instant;

/// What every run of a study shares.
#[derive(Clone)]
pub struct LoopSetup {
    /// The scenario (classes, SLOs, interval).
    pub scenario: Scenario,
    /// The knob space.
    pub knobs: KnobSpace,
    /// The configuration every tuner starts from (and the fixed baseline keeps).
    pub start: NetworkConfig,
    /// The study's reference configuration, if it measured one (the scale study's near-optimal
    /// baseline): what the `near-optimal` tuner holds.
    pub reference: Option<NetworkConfig>,
    /// Controller hyperparameters; the seed is replaced by each run's seed.
    pub params: ControllerParams,
    /// Measured control intervals per run.
    pub iterations: usize,
    /// Warm-up windows before the control loop (paper §8.5: the first 500 ms gather initial
    /// datapoints): window w measures design point w of [`polyphony_core::warmup::design`]
    /// around the start (`fixed` and `near-optimal` keep their configuration), the tuner gets it through
    /// [`Tuner::warm_up`], and after the last one it proposes the configuration of control
    /// iteration 0. Not counted in any metric.
    pub warmup: usize,
    /// The controller's model (flowsim) and what it needs besides the workload.
    pub model: Arc<dyn NetworkModel>,
    /// Topology and classes for model inputs.
    pub context: ModelContext,
}

/// One measured interval of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IterationRecord {
    /// 0-based interval index.
    pub iteration: usize,
    /// Configuration in force during the interval.
    pub config: NetworkConfig,
    /// Measured p99 slowdown per class, in scenario order (NaN: no flow of the class finished).
    pub p99: Vec<f64>,
    /// r_i = p99_i / SLO_i (NaN where p99 is).
    pub ratios: Vec<f64>,
    /// Measured objective J (NaN when a class had no measurement).
    pub objective: f64,
    /// Wall seconds of observe + propose (0 for a skipped interval). Not deterministic.
    pub decide_s: f64,
    /// Model evaluations the proposal used.
    pub model_evaluations: usize,
    /// Why the next configuration was chosen.
    pub reason: String,
}

/// All iterations of one (tuner, seed).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunTrace {
    /// Tuner name.
    pub tuner: String,
    /// Seed (traffic and controller).
    pub seed: u64,
    /// Per control interval (what every metric is computed on).
    pub records: Vec<IterationRecord>,
    /// Per warm-up window, before `records` (iteration = warm-up index).
    pub warmup: Vec<IterationRecord>,
}

impl RunTrace {
    /// Per-iteration ratios (for the metrics).
    pub fn ratios(&self) -> Vec<Vec<f64>> {
        self.records.iter().map(|r| r.ratios.clone()).collect()
    }
    /// Per-iteration ratios of the classes that finished a flow in the interval (a class with
    /// no flow has no SLO to miss); empty when no class did. What the SLO judgements use.
    pub fn judged_ratios(&self) -> Vec<Vec<f64>> {
        self.records
            .iter()
            .map(|r| r.ratios.iter().copied().filter(|x| !x.is_nan()).collect())
            .collect()
    }
    /// Per-iteration measured objectives.
    pub fn objectives(&self) -> Vec<f64> {
        self.records.iter().map(|r| r.objective).collect()
    }
}

/// Measures interval `index` under `config` and records it (objective NaN unless every class
/// finished a flow).
fn measure(
    ground: &mut dyn Ground,
    classes: &[polyphony_spec::TrafficClass],
    objective: &Objective,
    iteration: usize,
    index: u64,
    config: &NetworkConfig,
) -> Result<(Interval, IterationRecord), EvalError> {
    let m = ground.measure(index, config)?;
    let p99: Vec<f64> = classes
        .iter()
        .map(|c| m.sli.get(c.dscp).map_or(f64::NAN, |s| s.p99))
        .collect();
    let ratios: Vec<f64> = classes.iter().zip(&p99).map(|(c, p)| p / c.slo.max_slowdown).collect();
    let mut rec = IterationRecord {
        iteration,
        config: config.clone(),
        objective: f64::NAN,
        p99,
        ratios,
        decide_s: 0.0,
        model_evaluations: 0,
        reason: String::new(),
    };
    if rec.p99.iter().all(|p| p.is_finite() && *p > 0.0) {
        rec.objective = objective.of_ratios(&rec.ratios);
    }
    Ok((m, rec))
}

/// The configuration `tuner` starts from in this setup (`near-optimal`: the reference; an
/// error when the study has none).
pub fn tuner_start(tuner: &str, setup: &LoopSetup) -> Result<NetworkConfig, EvalError> {
    initial_config(tuner, &setup.scenario.name, &setup.start, setup.reference.as_ref())
}

/// The warm-up configurations of a run: design points around the start (see
/// [`polyphony_core::warmup`]), or, for a tuner that holds one configuration (`fixed`,
/// `near-optimal`), that configuration `setup.warmup` times.
pub fn warmup_configs(tuner: &str, seed: u64, setup: &LoopSetup) -> Result<Vec<NetworkConfig>, EvalError> {
    if holds_its_configuration(tuner) {
        return Ok(vec![tuner_start(tuner, setup)?; setup.warmup]);
    }
    let usage = |e: polyphony_core::CoreError| EvalError::Usage(e.to_string());
    let space = Space::new(&setup.knobs, setup.params.aitchison_alpha).map_err(usage)?;
    let x0 = space.point_of_config(&setup.start).map_err(usage)?;
    polyphony_core::warmup::design(&space, &x0, setup.params.trust_radius_init, setup.warmup, seed)
        .iter()
        .map(|x| space.config_of(x, &setup.start).map_err(usage))
        .collect()
}

/// Runs `tuner` for `setup.warmup` warm-up windows and then `setup.iterations` control
/// intervals on `ground`; `tick` is called after each.
pub fn run_tuner(
    tuner: &str,
    seed: u64,
    setup: &LoopSetup,
    ground: &mut dyn Ground,
    pool: &Arc<rayon::ThreadPool>,
    tick: &(dyn Fn() + Sync),
) -> Result<RunTrace, EvalError> {
    let params = ControllerParams {
        seed,
        ..setup.params.clone()
    };
    let fail = |iteration: usize, message: String| EvalError::Tuner {
        tuner: tuner.to_string(),
        seed,
        iteration,
        message,
    };
    let classes = &setup.scenario.classes;
    let mut t = make_study_tuner(
        tuner,
        &setup.scenario.name,
        classes,
        &setup.knobs,
        &setup.start,
        setup.reference.as_ref(),
        &params,
    )?;
    let objective = Objective::new(classes, params.lse_sharpness, params.fairness_weight)
        .map_err(|e| EvalError::Usage(e.to_string()))?;
    let model_of = |m: &Interval| {
        WindowModel::new(
            setup.model.clone(),
            setup.context.clone(),
            m.workload.clone(),
            pool.clone(),
        )
    };
    let mut config = tuner_start(tuner, setup)?;
    let mut warmup = Vec::with_capacity(setup.warmup);
    let mut last: Option<Interval> = None;
    for (w, cfg) in warmup_configs(tuner, seed, setup)?.into_iter().enumerate() {
        let (m, mut rec) = measure(ground, classes, &objective, w, w as u64, &cfg)?;
        if rec.objective.is_finite() {
            let t0 = Instant::now();
            t.warm_up(
                &Observation {
                    config: cfg.clone(),
                    slis: m.sli.clone(),
                    workload: Some(w as u64),
                },
                &model_of(&m),
            )
            .map_err(|e| fail(w, format!("warm-up: {e}")))?;
            rec.decide_s = t0.elapsed().as_secs_f64();
            rec.reason = format!("warm-up {}/{}", w + 1, setup.warmup);
            last = Some(m);
        } else {
            rec.reason = "warm-up: a class finished no flow in this window: not shown to the tuner".into();
        }
        warmup.push(rec);
        tick();
    }
    if let Some(m) = &last {
        // The first control configuration, chosen on the warm-up datapoints; its decision is
        // recorded on the last warm-up row (the window it was decided after).
        let t0 = Instant::now();
        let p = t
            .propose(&model_of(m))
            .map_err(|e| fail(0, format!("propose after warm-up: {e}")))?;
        if let Some(rec) = warmup.last_mut() {
            rec.decide_s += t0.elapsed().as_secs_f64();
            rec.model_evaluations += p.model_evaluations;
            rec.reason = format!("{}; then: {}", rec.reason, p.reason.text);
        }
        config = p.config;
    }
    let mut records = Vec::with_capacity(setup.iterations);
    for it in 0..setup.iterations {
        let (m, mut rec) = measure(ground, classes, &objective, it, (setup.warmup + it) as u64, &config)?;
        if rec.objective.is_finite() {
            let t0 = Instant::now();
            t.observe(&Observation {
                config: config.clone(),
                slis: m.sli.clone(),
                workload: Some((setup.warmup + it) as u64),
            })
            .map_err(|e| fail(it, format!("observe: {e}")))?;
            let p = t
                .propose(&model_of(&m))
                .map_err(|e| fail(it, format!("propose: {e}")))?;
            rec.decide_s = t0.elapsed().as_secs_f64();
            rec.model_evaluations = p.model_evaluations;
            rec.reason = p.reason.text.clone();
            config = p.config;
        } else {
            // Nothing to judge a class by: not shown to the tuner, configuration kept, and the
            // iteration counts as not compliant (NaN ratios fail every SLO test).
            rec.reason = "a class finished no flow in this interval: measurement skipped, configuration kept".into();
        }
        records.push(rec);
        tick();
    }
    Ok(RunTrace {
        tuner: tuner.to_string(),
        seed,
        records,
        warmup,
    })
}
