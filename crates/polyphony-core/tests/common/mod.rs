//! The closed-form model and scenario the controller's integration tests share.
#![allow(dead_code)]

use polyphony_core::{Controller, ModelError, Observation, PerformanceModel};
use polyphony_spec::{ClassSli, Dscp, NetworkConfig, Scenario, SliVector};

/// A closed-form model: class i's p99 falls with its weight and rises with the distance of its
/// ECN threshold from 30 kB. A class's congestion control scales it: AF21 is served better by
/// CUBIC (×0.5) and NewReno (×0.7) than by DCTCP, AF31 worse by NewReno (×1.5); unset is DCTCP.
/// Stands in for the flow simulator in these tests.
pub struct FormulaModel {
    pub scenario: Scenario,
    pub scale: f64,
}

impl FormulaModel {
    pub fn slis(&self, cfg: &NetworkConfig) -> SliVector {
        SliVector {
            classes: self
                .scenario
                .classes
                .iter()
                .map(|c| {
                    let k = cfg.class(c.dscp).expect("class");
                    let ecn = ((k.ecn_threshold.0 as f64) / 30_000.0).ln().powi(2);
                    let alg = match (c.dscp, k.congestion_control.as_ref().map(|a| a.name())) {
                        (Dscp::AF21, Some("cubic")) => 0.5,
                        (Dscp::AF21, Some("reno")) => 0.7,
                        (Dscp::AF31, Some("reno")) => 1.5,
                        _ => 1.0,
                    };
                    let y = self.scale * alg * c.slo.threshold() * (0.3 / k.weight).powf(0.7) * (1.0 + 0.1 * ecn);
                    ClassSli {
                        dscp: c.dscp,
                        flows: 100,
                        p50: y / 2.0,
                        p99: y,
                        p999: y * 1.2,
                        mean: y / 2.0,
                        qct: None,
                    }
                })
                .collect(),
        }
    }
}

impl PerformanceModel for FormulaModel {
    fn predict(&self, configs: &[NetworkConfig], _crn_seed: u64) -> Result<Vec<SliVector>, ModelError> {
        Ok(configs.iter().map(|c| self.slis(c)).collect())
    }
}

/// The shipped reference scenario at high tightness.
pub fn scenario() -> Scenario {
    Scenario::from_toml(
        include_str!("../../../../configs/scenarios/reference-high.toml"),
        "reference-high.toml",
    )
    .expect("shipped scenario parses")
}

/// The "live" formula and the model's, scaled by `truth` and `model`.
pub fn formulas(sc: &Scenario, truth: f64, model: f64) -> (FormulaModel, FormulaModel) {
    let formula = |scale| FormulaModel {
        scenario: sc.clone(),
        scale,
    };
    (formula(truth), formula(model))
}

/// One control iteration: `c` observes `truth` at `cfg` and proposes with `model`.
pub fn step(c: &mut Controller, truth: &FormulaModel, model: &FormulaModel, cfg: &NetworkConfig) -> NetworkConfig {
    c.observe(&Observation {
        config: cfg.clone(),
        slis: truth.slis(cfg),
        workload: Some(1),
    })
    .expect("observe");
    c.propose(model).expect("propose").config
}
