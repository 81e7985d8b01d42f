//! One closed-loop run of one tuner on one ground: measure the configuration in force for an
//! interval, observe, propose (with flowsim replaying the interval's flows as the model), apply;
//! repeat. Records what each iteration measured and decided. No I/O besides the ground's.

use crate::ground::Ground;
use crate::tuners::make_tuner;
use crate::EvalError;
use polyphony::model_adapter::WindowModel;
use polyphony::network::ModelContext;
use polyphony_core::{ControllerParams, Objective, Observation};
use polyphony_model::NetworkModel;
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
    /// Controller hyperparameters; the seed is replaced by each run's seed.
    pub params: ControllerParams,
    /// Measured intervals per run.
    pub iterations: usize,
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
    /// Per interval.
    pub records: Vec<IterationRecord>,
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

/// Runs `tuner` for `setup.iterations` intervals on `ground`; `tick` is called after each.
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
    let mut t = make_tuner(tuner, classes, &setup.knobs, setup.start.clone(), &params)
        .map_err(|e| EvalError::Usage(e.to_string()))?;
    let objective = Objective::new(classes, params.lse_sharpness, params.fairness_weight)
        .map_err(|e| EvalError::Usage(e.to_string()))?;
    let mut config = setup.start.clone();
    let mut records = Vec::with_capacity(setup.iterations);
    for it in 0..setup.iterations {
        let m = ground.measure(it as u64, &config)?;
        let p99: Vec<f64> = classes
            .iter()
            .map(|c| m.sli.get(c.dscp).map_or(f64::NAN, |s| s.p99))
            .collect();
        let ratios: Vec<f64> = classes.iter().zip(&p99).map(|(c, p)| p / c.slo.max_slowdown).collect();
        let mut rec = IterationRecord {
            iteration: it,
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
            let t0 = Instant::now();
            t.observe(&Observation {
                config: config.clone(),
                slis: m.sli.clone(),
                workload: Some(it as u64),
            })
            .map_err(|e| fail(it, format!("observe: {e}")))?;
            let model = WindowModel::new(
                setup.model.clone(),
                setup.context.clone(),
                m.workload.clone(),
                pool.clone(),
            );
            let p = t.propose(&model).map_err(|e| fail(it, format!("propose: {e}")))?;
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
    })
}
