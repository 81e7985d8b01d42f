//! Every tuner the harness compares, built by name from classes, knob space and starting
//! configuration: Polyphony and its ablations (`Controller` variants), model-free whole-space
//! BO, Bluefin (SelfTune) and the fixed default — and, for studies that measured one (the scale
//! study), `near-optimal`: a fixed tuner holding the reference configuration the SLOs were
//! measured from, a reference ceiling (not a proven optimum) for the tuners judged by those
//! SLOs. Pure construction; no I/O.

use crate::EvalError;
use polyphony_core::{
    Bluefin, BluefinParams, Controller, ControllerParams, CoreError, FixedConfig, Space, Tuner, Variant,
};
use polyphony_spec::{KnobSpace, NetworkConfig, TrafficClass};
use rand::Rng;

/// Every tuner that needs nothing but a start, in table order: the default set of the dumbbell
/// studies and of the synthetic benchmark.
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

/// The tuner that holds the study's reference (near-optimal) configuration.
pub const NEAR_OPTIMAL: &str = "near-optimal";

/// The full controller on the knob space without its categorical blocks: every class keeps the
/// algorithm it starts with (the categorical study's numeric-only baseline). On a space without
/// categorical blocks it is `polyphony`.
pub const NUMERIC_ONLY: &str = "numeric-only";

/// Whether `name` is a tuner a study may name: one of [`ALL`], [`NUMERIC_ONLY`], or
/// [`NEAR_OPTIMAL`] (which needs a study with a reference configuration).
pub fn is_known(name: &str) -> bool {
    ALL.contains(&name) || name == NUMERIC_ONLY || name == NEAR_OPTIMAL
}

/// Every tuner a study may name, comma-separated (for messages).
pub fn known_names() -> String {
    format!("{}, {NUMERIC_ONLY}, {NEAR_OPTIMAL}", ALL.join(", "))
}

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
    matches!(
        name,
        "polyphony" | "no-trust-region" | "no-correction" | "no-denoiser" | NUMERIC_ONLY
    )
}

/// Whether tuner `name` keeps one configuration throughout (its warm-up windows measure that
/// configuration, not design points).
pub fn holds_its_configuration(name: &str) -> bool {
    matches!(name, "fixed" | NEAR_OPTIMAL)
}

/// The configuration tuner `name` starts from (and, if it holds one, keeps): the study's
/// `reference` for [`NEAR_OPTIMAL`], `start` for every other tuner. Asking for
/// `near-optimal` where the study measured no reference is a usage error that says so.
pub fn initial_config(
    name: &str,
    scenario: &str,
    start: &NetworkConfig,
    reference: Option<&NetworkConfig>,
) -> Result<NetworkConfig, EvalError> {
    if name != NEAR_OPTIMAL {
        return Ok(start.clone());
    }
    reference.cloned().ok_or_else(|| {
        EvalError::Usage(format!(
            "--tuners {NEAR_OPTIMAL}: scenario {scenario:?} has no reference configuration to hold (only the scale study measures one, the near-optimal configuration its SLOs come from); drop {NEAR_OPTIMAL} from --tuners or run the scale study"
        ))
    })
}

/// Builds tuner `name` of a study scenario: [`NEAR_OPTIMAL`] holds `reference` (an error when
/// there is none, see [`initial_config`]), every other tuner starts at `start`
/// ([`make_tuner`]).
pub fn make_study_tuner(
    name: &str,
    scenario: &str,
    classes: &[TrafficClass],
    knobs: &KnobSpace,
    start: &NetworkConfig,
    reference: Option<&NetworkConfig>,
    params: &ControllerParams,
) -> Result<Box<dyn Tuner + Send>, EvalError> {
    let init = initial_config(name, scenario, start, reference)?;
    let usage = |e: CoreError| EvalError::Usage(e.to_string());
    if name == NEAR_OPTIMAL {
        return Ok(Box::new(
            FixedConfig::new(classes, init, params.lse_sharpness, params.fairness_weight).map_err(usage)?,
        ));
    }
    make_tuner(name, classes, knobs, init, params).map_err(usage)
}

/// Builds tuner `name` (one of [`ALL`], or [`NUMERIC_ONLY`]) starting at `init`; an unknown
/// name is an error that lists the known ones.
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
        NUMERIC_ONLY => {
            let numeric = KnobSpace {
                categorical: Vec::new(),
                ..knobs.clone()
            };
            return Ok(Box::new(Controller::new(
                classes,
                &numeric,
                init,
                params.clone(),
                Variant::FULL,
            )?));
        }
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
                "unknown tuner {other:?}; known: {}, {NUMERIC_ONLY}",
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
            if let Some(k) = space.choices_at(i) {
                rng.gen_range(0..k) as f64
            } else if i < space.n_hypercube() {
                rng.gen::<f64>()
            } else {
                (rng.gen::<f64>() * 2.0 - 1.0) * logit_span
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::{Bytes, Dscp, Packets};

    #[test]
    fn near_optimal_starts_at_the_reference_and_without_one_says_what_to_do() {
        let start = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], Bytes(300_000), Packets(2));
        let reference = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], Bytes(30_000), Packets(10));
        assert_eq!(
            initial_config(NEAR_OPTIMAL, "s", &start, Some(&reference)).expect("has one"),
            reference
        );
        assert_eq!(
            initial_config("fixed", "s", &start, Some(&reference)).expect("fixed"),
            start
        );
        assert_eq!(
            initial_config("polyphony", "s", &start, None).expect("polyphony"),
            start
        );
        let e = initial_config(NEAR_OPTIMAL, "high", &start, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("near-optimal") && e.contains("\"high\"") && e.contains("scale study"),
            "{e}"
        );
        assert!(is_known(NEAR_OPTIMAL) && !ALL.contains(&NEAR_OPTIMAL) && !is_known("magic"));
        assert!(known_names().ends_with("fixed, numeric-only, near-optimal"));
        assert!(is_known(NUMERIC_ONLY) && !ALL.contains(&NUMERIC_ONLY) && uses_model(NUMERIC_ONLY));
        assert!(holds_its_configuration(NEAR_OPTIMAL) && holds_its_configuration("fixed"));
        assert!(!holds_its_configuration("polyphony"));
    }
}
