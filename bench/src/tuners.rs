//! Every tuner the harness compares, built by name from classes, knob space and starting
//! configuration: Polyphony and its ablations (`Controller` variants), model-free whole-space
//! BO, Bluefin (SelfTune) and the fixed default. Pure construction; no I/O.

use polyphony_core::{
    Bluefin, BluefinParams, Controller, ControllerParams, CoreError, FixedConfig, Space, Tuner, Variant,
};
use polyphony_spec::{KnobSpace, NetworkConfig, TrafficClass};
use rand::Rng;

/// Every tuner the harness knows, in table order.
pub const ALL: [&str; 8] = [
    "polyphony",
    "no-trust-region",
    "no-correction",
    "no-model",
    "no-denoiser",
    "whole-space-bo",
    "bluefin",
    "fixed",
];

/// The ablation set of §8.4: the full controller and one variant per removed component.
pub const ABLATION: [&str; 5] = [
    "polyphony",
    "no-trust-region",
    "no-correction",
    "no-model",
    "no-denoiser",
];

/// Whether tuner `name` calls the performance model in `propose`.
pub fn uses_model(name: &str) -> bool {
    matches!(name, "polyphony" | "no-trust-region" | "no-correction" | "no-denoiser")
}

/// Builds tuner `name` starting at `init`; an unknown name is an error that lists the known ones.
pub fn make_tuner(
    name: &str,
    classes: &[TrafficClass],
    knobs: &KnobSpace,
    init: NetworkConfig,
    params: &ControllerParams,
) -> Result<Box<dyn Tuner + Send>, CoreError> {
    let variant = match name {
        "polyphony" => Variant::FULL,
        "no-trust-region" => Variant::NO_TRUST_REGION,
        "no-correction" => Variant::NO_CORRECTION,
        "no-model" => Variant::NO_MODEL,
        "no-denoiser" => Variant::NO_DENOISER,
        "whole-space-bo" => Variant::WHOLE_SPACE_BO,
        "bluefin" => {
            let bp = BluefinParams {
                seed: params.seed,
                ..BluefinParams::default()
            };
            return Ok(Box::new(Bluefin::new(
                classes,
                knobs,
                init,
                params.lse_sharpness,
                params.fairness_weight,
                bp,
            )?));
        }
        "fixed" => {
            return Ok(Box::new(FixedConfig::new(
                classes,
                init,
                params.lse_sharpness,
                params.fairness_weight,
            )?));
        }
        other => {
            return Err(CoreError::InvalidConfig(format!(
                "unknown tuner {other:?}; known: {}",
                ALL.join(", ")
            )))
        }
    };
    Ok(Box::new(Controller::new(
        classes,
        knobs,
        init,
        params.clone(),
        variant,
    )?))
}

/// A random unconstrained point of `space`: hypercube coordinates uniform on [0, 1], simplex
/// logits uniform on [−`logit_span`, `logit_span`] (map with `Space::point_of`).
pub fn random_z(space: &Space, rng: &mut impl Rng, logit_span: f64) -> Vec<f64> {
    (0..space.dim())
        .map(|i| {
            if i < space.n_hypercube() {
                rng.gen::<f64>()
            } else {
                (rng.gen::<f64>() * 2.0 - 1.0) * logit_span
            }
        })
        .collect()
}
