//! One closed-loop run of one tuner on one ground, driven through the core's one control step
//! ([`ControlStep`], the same the daemon and the demo run): per interval, measure the
//! configuration in force on the ground, hand it to the step with flowsim replaying the
//! interval's flows as the model, time the decision, put the decided configuration in force;
//! optional warm-up windows at design points around the start come first (the paper's §8.5
//! warm-up). Records what each window measured and decided. No I/O besides the ground's.

use crate::ground::{Ground, Interval};
use crate::tuners::{holds_its_configuration, initial_config, make_study_tuner};
use crate::{thread_cpu_s, EvalError};
use polyphony_core::step::warmup_design;
use polyphony_core::{ControlStep, ControllerParams, CoreError, Decision, Phase, StepInput, StepPolicy, Tuner};
use polyphony_model::NetworkModel;
use polyphony_model::{ModelContext, WindowModel};
use polyphony_spec::{KnobSpace, ModelError, NetworkConfig, PerformanceModel, Scenario, SliVector};
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
    /// The guard of the control step ([`StepPolicy::guard`]); the studies run without.
    pub guard: Option<f64>,
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
    /// Measured SLI per class, in scenario order, in its SLO's unit: the p99 slowdown, or the
    /// p99 query completion time in µs for a `qct_p99` SLO (NaN: nothing of the class finished).
    pub p99: Vec<f64>,
    /// r_i = p99_i / SLO_i (NaN where p99 is).
    pub ratios: Vec<f64>,
    /// The model's r_i at the configuration in force, on the interval's own flows, before
    /// calibration ([`polyphony_core::Proposal::observed_model_ratios`]; NaN where it saw no
    /// flow of the class); empty when the decision made no proposal or the tuner has no model.
    pub model_ratios: Vec<f64>,
    /// Measured objective J (NaN when a class had no measurement).
    pub objective: f64,
    /// Wall seconds the controller spent deciding after this interval, outside the model's
    /// calls ([`DecideTime::wall_s`]). Not deterministic.
    pub decide_wall_s: f64,
    /// CPU seconds of the deciding thread, outside the model's calls ([`DecideTime::cpu_s`]).
    /// Not deterministic.
    pub decide_cpu_s: f64,
    /// Model evaluations the proposal used.
    pub model_evaluations: usize,
    /// CPU seconds the model's evaluations of this decision took, summed over the model pool's
    /// threads. Not deterministic.
    pub model_cpu_s: f64,
    /// CPU seconds pktsim took to produce this interval on the same window the model scored
    /// (NaN on the testbed). Not deterministic.
    pub sim_cpu_s: f64,
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
    warmup_design(
        &setup.knobs,
        setup.params.aitchison_alpha,
        &setup.start,
        setup.params.trust_radius_init,
        setup.warmup,
        seed,
    )
    .map_err(|e| EvalError::Usage(e.to_string()))
}

/// The time one decision took, measured around [`ControlStep::step`] by its driver (the core
/// has no clock).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DecideTime {
    /// Wall seconds of the step minus those spent inside the performance model's calls: the
    /// controller's own deciding, without the model and without waiting for threads shared
    /// with other runs.
    pub wall_s: f64,
    /// CPU seconds of the deciding thread in the step, outside the model's calls (work the
    /// controller's libraries hand to other threads is not counted).
    pub cpu_s: f64,
    /// Wall seconds inside the model's calls.
    pub model_s: f64,
}

/// The model as the step sees it, with the wall and thread-CPU time of its calls added up.
struct TimedModel<'a> {
    inner: &'a dyn PerformanceModel,
    /// (wall, cpu) seconds inside `predict`.
    spent: std::sync::Mutex<(f64, f64)>,
}

impl PerformanceModel for TimedModel<'_> {
    fn predict(&self, configs: &[NetworkConfig], crn_seed: u64) -> Result<Vec<SliVector>, ModelError> {
        let (w0, c0) = (Instant::now(), thread_cpu_s());
        let out = self.inner.predict(configs, crn_seed);
        let (w, c) = (w0.elapsed().as_secs_f64(), thread_cpu_s() - c0);
        if let Ok(mut s) = self.spent.lock() {
            s.0 += w;
            s.1 += c;
        }
        out
    }
}

/// The harness's driver of one interval: hands what the ground measured under `config` (the
/// interval's SLIs and workload window, workload id `index`) to the step with `model`, and
/// times the decision. Nothing else: the step decides.
pub fn decide<T: Tuner>(
    step: &mut ControlStep<T>,
    config: &NetworkConfig,
    interval: &Interval,
    index: u64,
    model: &dyn PerformanceModel,
) -> Result<(Decision, DecideTime), CoreError> {
    let timed = TimedModel {
        inner: model,
        spent: std::sync::Mutex::new((0.0, 0.0)),
    };
    let (w0, c0) = (Instant::now(), thread_cpu_s());
    let d = step.step(
        &StepInput {
            config,
            slis: &interval.sli,
            window: Some(&interval.workload),
            workload: Some(index),
        },
        &timed,
    )?;
    let (wall, cpu) = (w0.elapsed().as_secs_f64(), thread_cpu_s() - c0);
    let (mw, mc) = timed.spent.lock().map_or((0.0, 0.0), |s| *s);
    Ok((
        d,
        DecideTime {
            wall_s: (wall - mw).max(0.0),
            cpu_s: (cpu - mc).max(0.0),
            model_s: mw,
        },
    ))
}

/// The control step of one run of `tuner` with `seed` (the controller's seed too) in `setup`,
/// and the configuration it starts from.
pub fn make_step(
    tuner: &str,
    seed: u64,
    setup: &LoopSetup,
) -> Result<(ControlStep<Box<dyn Tuner + Send>>, NetworkConfig), EvalError> {
    let params = ControllerParams {
        seed,
        ..setup.params.clone()
    };
    let t = make_study_tuner(
        tuner,
        &setup.scenario.name,
        &setup.scenario.classes,
        &setup.knobs,
        &setup.start,
        setup.reference.as_ref(),
        &params,
    )?;
    let start = tuner_start(tuner, setup)?;
    let policy = StepPolicy { guard: setup.guard };
    let step = ControlStep::new(t, policy, start.clone(), warmup_configs(tuner, seed, setup)?);
    Ok((step, start))
}

/// Runs `tuner` for `setup.warmup` warm-up windows and then `setup.iterations` control
/// intervals on `ground`, through one [`ControlStep`]; `tick` is called after each.
pub fn run_tuner(
    tuner: &str,
    seed: u64,
    setup: &LoopSetup,
    ground: &mut dyn Ground,
    pool: &Arc<rayon::ThreadPool>,
    tick: &(dyn Fn() + Sync),
) -> Result<RunTrace, EvalError> {
    let fail = |iteration: usize, message: String| EvalError::Tuner {
        tuner: tuner.to_string(),
        seed,
        iteration,
        message,
    };
    let classes = &setup.scenario.classes;
    let (mut step, start) = make_step(tuner, seed, setup)?;
    let mut config = step.first_config(&start);
    let mut warmup = Vec::with_capacity(setup.warmup);
    let mut records = Vec::with_capacity(setup.iterations);
    for index in 0..(setup.warmup + setup.iterations) as u64 {
        let m = ground.measure(index, &config)?;
        let model = WindowModel::new(
            setup.model.clone(),
            setup.context.clone(),
            m.workload.clone(),
            pool.clone(),
        )
        .with_cpu_clock(Arc::new(|| (thread_cpu_s() * 1e9) as u64));
        let row = match step.phase() {
            Phase::WarmUp { window, .. } => window,
            Phase::Control => records.len(),
        };
        let (d, time) = decide(&mut step, &config, &m, index, &model).map_err(|e| fail(row, e.to_string()))?;
        if let Some(e) = &d.record.error {
            return Err(fail(row, format!("propose: {e}")));
        }
        let p99: Vec<f64> = classes
            .iter()
            .map(|c| m.sli.get(c.dscp).and_then(|s| c.slo.sli(s)).unwrap_or(f64::NAN))
            .collect();
        let objective = step.tuner().objective();
        let rec = IterationRecord {
            iteration: row,
            config: config.clone(),
            p99,
            ratios: d
                .record
                .ratios
                .clone()
                .unwrap_or_else(|| objective.partial_ratios(&m.sli)),
            model_ratios: d
                .record
                .proposal
                .as_ref()
                .and_then(|p| p.observed_model_ratios.clone())
                .unwrap_or_default(),
            objective: d.record.objective.unwrap_or(f64::NAN),
            decide_wall_s: time.wall_s,
            decide_cpu_s: time.cpu_s,
            model_evaluations: d.record.proposal.as_ref().map_or(0, |p| p.model_evaluations),
            model_cpu_s: model.cpu_seconds(),
            sim_cpu_s: m.sim_cpu_s,
            reason: d.reason.text.clone(),
        };
        match d.record.phase {
            Phase::WarmUp { .. } => warmup.push(rec),
            Phase::Control => records.push(rec),
        }
        config = d.next;
        tick();
    }
    Ok(RunTrace {
        tuner: tuner.to_string(),
        seed,
        records,
        warmup,
    })
}
