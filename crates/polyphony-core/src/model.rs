//! The model-free stand-in for the performance model: the trait itself ([`PerformanceModel`],
//! the paper's "f") and its error live in `polyphony-spec`, the contract between this crate and
//! the model crate that implements it.

pub use polyphony_spec::{ModelError, PerformanceModel};
use polyphony_spec::{NetworkConfig, SliVector};

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
