//! The Polyphony controller core (paper §4–§5): the knob space and its distance, the
//! objective, the residual GP, trust-region Expected Improvement, the denoiser, sample
//! admission and regime shifts; the baselines (Bluefin, fixed) behind the same [`Tuner`]
//! trait; and the evaluation metrics.
//!
//! Pure: no I/O, no clock, no async runtime, no threads of its own (egobox may use rayon
//! internally); deterministic under [`ControllerParams::seed`]. The only outside call is the
//! [`PerformanceModel`] the caller passes to [`Controller::propose`].
//!
//! ```no_run
//! # use polyphony_core::*;
//! # fn demo(scenario: &polyphony_spec::Scenario, model: &dyn PerformanceModel,
//! #         slis: polyphony_spec::SliVector) -> Result<(), CoreError> {
//! let mut c = Controller::from_scenario(scenario, ControllerParams::default(), Variant::FULL)?;
//! c.observe(&Observation { config: c.initial().clone(), slis, workload: None })?;
//! let p = c.propose(model)?; // apply p.config, measure, observe again …
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
pub mod gp;
pub mod metrics;
pub mod model;
pub mod objective;
pub mod params;
pub mod residual;
pub mod samples;
pub mod space;
pub mod tuner;
pub mod warmup;

pub use bluefin::{Bluefin, BluefinParams};
pub use controller::{default_initial, Controller, Observation, ObserveReport, Proposal, Reason, ReasonKind, Variant};
pub use error::CoreError;
pub use gp::{Hyper, Kernel, MeanKind, SurrogateStatus};
pub use metrics::{convergence_iteration, hindsight_regret, min_max_fairness, run_metrics, RunMetrics};
pub use model::{ModelError, NoModel, PerformanceModel};
pub use objective::Objective;
pub use params::{ControllerParams, LocalSolver};
pub use residual::ResidualSpace;
pub use samples::Admission;
pub use space::Space;
pub use tuner::{FixedConfig, Tuner};
