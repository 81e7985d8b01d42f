//! The one interface every tuner implements, so one harness runs them side by side:
//! Polyphony and its ablations ([`crate::Controller`]), Bluefin ([`crate::Bluefin`]) and a
//! fixed configuration ([`FixedConfig`]). No I/O.

use crate::controller::{Observation, ObserveReport, Proposal, Reason, ReasonKind};
use crate::gp::SurrogateStatus;
use crate::model::PerformanceModel;
use crate::objective::Objective;
use crate::samples::Admission;
use crate::{Controller, CoreError};
use polyphony_spec::{NetworkConfig, TrafficClass};

/// A tuner: observe a measured interval, propose the next configuration.
pub trait Tuner {
    /// Short name for tables.
    fn name(&self) -> String;
    /// Records the SLIs measured at a configuration.
    fn observe(&mut self, obs: &Observation) -> Result<ObserveReport, CoreError>;
    /// The next configuration to apply.
    fn propose(&mut self, model: &dyn PerformanceModel) -> Result<Proposal, CoreError>;
    /// A measurement taken before the control loop, at a configuration the caller chose (see
    /// [`crate::warmup`]). The default ignores it: a tuner that learns only from its own moves
    /// (Bluefin's perturbation pairs) or does not learn (fixed) has no use for it.
    /// Returns the admission decisions, if the tuner keeps samples.
    fn warm_up(&mut self, obs: &Observation, model: &dyn PerformanceModel) -> Result<Vec<Admission>, CoreError> {
        let _ = (obs, model);
        Ok(Vec::new())
    }
    /// The objective the tuner minimises: what the control step computes ratios and J with.
    fn objective(&self) -> &Objective;
}

impl<T: Tuner + ?Sized> Tuner for Box<T> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn observe(&mut self, obs: &Observation) -> Result<ObserveReport, CoreError> {
        (**self).observe(obs)
    }
    fn propose(&mut self, model: &dyn PerformanceModel) -> Result<Proposal, CoreError> {
        (**self).propose(model)
    }
    fn warm_up(&mut self, obs: &Observation, model: &dyn PerformanceModel) -> Result<Vec<Admission>, CoreError> {
        (**self).warm_up(obs, model)
    }
    fn objective(&self) -> &Objective {
        (**self).objective()
    }
}

impl Tuner for Controller {
    fn name(&self) -> String {
        self.variant().name().to_string()
    }
    fn observe(&mut self, obs: &Observation) -> Result<ObserveReport, CoreError> {
        Controller::observe(self, obs)
    }
    fn propose(&mut self, model: &dyn PerformanceModel) -> Result<Proposal, CoreError> {
        Controller::propose(self, model)
    }
    fn warm_up(&mut self, obs: &Observation, model: &dyn PerformanceModel) -> Result<Vec<Admission>, CoreError> {
        Controller::warm_up(self, obs, model)
    }
    fn objective(&self) -> &Objective {
        Controller::objective(self)
    }
}

/// A report for tuners without denoiser, rolling best or trust region.
pub(crate) fn plain_report(
    objective: &Objective,
    obs: &Observation,
    iteration: u64,
) -> Result<ObserveReport, CoreError> {
    let ratios = objective.ratios(&obs.slis)?;
    let g = objective.of_ratios(&ratios);
    Ok(ObserveReport {
        iteration,
        ratios,
        g_raw: g,
        g,
        denoiser_width: 0.0,
        g_best: g,
        regime_shift: false,
        trust_radius: 0.0,
    })
}

/// A baseline proposal: a configuration and a reason, nothing predicted.
pub(crate) fn baseline_proposal(iteration: u64, config: NetworkConfig, point: Vec<f64>, text: String) -> Proposal {
    Proposal {
        iteration,
        config,
        point,
        model_slis: None,
        g_hat: None,
        sigma: None,
        expected_improvement: None,
        g_best: None,
        trust_radius: None,
        reason: Reason {
            kind: ReasonKind::Baseline,
            text,
        },
        surrogate: SurrogateStatus::Disabled,
        admissions: Vec::new(),
        samples: 0,
        model_evaluations: 0,
        model_calls: 0,
        model_scale: None,
        observed_model_ratios: None,
    }
}

/// Always proposes the same configuration (the "do nothing" baseline).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FixedConfig {
    config: NetworkConfig,
    objective: Objective,
    iteration: u64,
}

impl FixedConfig {
    /// A tuner that keeps `config`; `classes` define the objective it reports.
    pub fn new(classes: &[TrafficClass], config: NetworkConfig, c: f64, lambda: f64) -> Result<FixedConfig, CoreError> {
        config.validate().map_err(|e| CoreError::InvalidConfig(e.to_string()))?;
        Ok(FixedConfig {
            config,
            objective: Objective::new(classes, c, lambda)?,
            iteration: 0,
        })
    }
}

impl Tuner for FixedConfig {
    fn name(&self) -> String {
        "fixed".into()
    }
    fn observe(&mut self, obs: &Observation) -> Result<ObserveReport, CoreError> {
        let r = plain_report(&self.objective, obs, self.iteration)?;
        self.iteration += 1;
        Ok(r)
    }
    fn objective(&self) -> &Objective {
        &self.objective
    }
    fn propose(&mut self, _model: &dyn PerformanceModel) -> Result<Proposal, CoreError> {
        Ok(baseline_proposal(
            self.iteration,
            self.config.clone(),
            Vec::new(),
            "fixed configuration".into(),
        ))
    }
}
