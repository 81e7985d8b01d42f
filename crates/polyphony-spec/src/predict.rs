//! The contract between the controller and a network model: the performance-model trait the
//! controller calls (the "f" of the paper) and its error. The controller core calls it; the
//! model crate implements it (flowsim, pktsim over a workload window), as do the benchmark's
//! closed-form models. Living here, neither side depends on the other.

use crate::{NetworkConfig, SliVector};
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
