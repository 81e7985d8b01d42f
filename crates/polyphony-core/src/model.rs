//! The performance-model trait the controller calls (the "f" of the paper), and its error.
//!
//! The daemon implements it with the flow-level simulator and may parallelise a batch; the
//! synthetic benchmark implements it with a closed-form model. The core only calls it.

use polyphony_spec::{NetworkConfig, SliVector};
use thiserror::Error;

/// Why a model evaluation failed.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{0}")]
pub struct ModelError(pub String);

/// A fast approximate network model: physical configurations → per-class SLIs.
///
/// Every configuration of one call must be scored on the same workload sample with the same
/// random seed `crn_seed` (common random numbers), so that differences between the returned
/// SLIs come from the configurations and not from sampling noise. The returned vector has one
/// entry per configuration, in order. Implementations may evaluate the batch in parallel.
pub trait PerformanceModel: Sync {
    /// Predicts the SLIs of every configuration in `configs`.
    fn predict(&self, configs: &[NetworkConfig], crn_seed: u64) -> Result<Vec<SliVector>, ModelError>;
}

/// A model that is absent: for the model-free tuners (GP on g alone, Bluefin, fixed). Any call
/// fails, so a tuner that needs a model cannot silently run without one.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoModel;

impl PerformanceModel for NoModel {
    fn predict(&self, configs: &[NetworkConfig], _crn_seed: u64) -> Result<Vec<SliVector>, ModelError> {
        Err(ModelError(format!(
            "no performance model configured, but {} configuration(s) were sent to it",
            configs.len()
        )))
    }
}
