//! The Polyphony controller core (paper §4–§5): the knob space and its distance, the
//! objective, the residual GP, trust-region Expected Improvement, the denoiser, sample
//! admission and regime shifts; the baselines (Bluefin, fixed) behind the same [`Tuner`]
//! trait; the one control step every driver runs; and the evaluation scores.
//!
//! Pure: no I/O, no clock, no async runtime, no threads of its own (egobox may use rayon
//! internally); deterministic under [`ControllerParams::seed`]. The only outside call is the
//! [`PerformanceModel`] the caller passes in.
//!
//! Every driver (the daemon, the demo, the evaluation harness) runs the loop through one
//! [`ControlStep`]: it measures an interval, hands it to [`ControlStep::step`], and carries
//! out the [`Decision`] (apply, hold, or revert to the last known good configuration).
//!
//! ```no_run
//! # use polyphony_core::*;
//! # fn demo(scenario: &polyphony_spec::Scenario, model: &dyn PerformanceModel,
//! #         slis: polyphony_spec::SliVector) -> Result<(), CoreError> {
//! let c = Controller::from_scenario(scenario, ControllerParams::default(), Variant::FULL)?;
//! let start = c.initial().clone();
//! let mut step = ControlStep::new(c, StepPolicy { guard: Some(2.5) }, start.clone(), Vec::new());
//! let input = StepInput { config: &start, slis: &slis, window: None, workload: Some(0) };
//! let d = step.step(&input, model)?; // put d.next in force if d.action says so, measure again …
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod acquire;
pub mod adapt;
pub mod bluefin;
pub mod calibration;
pub mod controller;
pub mod denoise;
pub mod ei;
mod error;
pub mod evaluation;
pub mod gp;
pub mod model;
pub mod objective;
pub mod params;
pub mod residual;
pub mod rollout;
pub mod samples;
pub mod space;
pub mod step;
pub mod trust;
pub mod tuner;
pub mod warmup;

pub use bluefin::{Bluefin, BluefinParams};
pub use controller::{default_initial, Controller, Observation, ObserveReport, Proposal, Reason, ReasonKind, Variant};
pub use denoise::median;
pub use error::CoreError;
pub use evaluation::{convergence_iteration, evaluate_run, hindsight_regret, min_max_fairness, RunEvaluation};
pub use gp::{Hyper, Kernel, MeanKind, SurrogateStatus};
pub use model::{ModelError, NoModel, PerformanceModel};
pub use objective::Objective;
pub use params::{ControllerParams, LocalSolver, OperatorParams};
pub use residual::ResidualSpace;
pub use rollout::{Rollout, RolloutAction, Stage};
pub use samples::Admission;
pub use space::Space;
pub use step::{
    Action, ControlStep, Decision, Phase, Skip, SkipKind, StepInput, StepPolicy, StepRecord, StepState, WarmUp,
};
pub use trust::TrustRegion;
pub use tuner::{FixedConfig, Tuner};
