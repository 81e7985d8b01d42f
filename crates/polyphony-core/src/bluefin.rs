//! Bluefin, the tuner of SelfTune (NSDI'23) / OPPerTune (NSDI'24), as configured in the
//! paper's §8.1: perturbation radius δ = 0.1, learning rate η = 0.01, reward
//! `tanh(−0.3·g)`, simplex knobs tuned as logits through the same floored softmax as
//! Polyphony.
//!
//! Our rendering (two-point, antithetic): each round draws a direction p uniformly on the unit
//! sphere of the optimisation vector θ (hypercube coordinates + logits), deploys θ + δp, then
//! θ − δp, and updates `θ ← θ + η · D/(2δ) · (r₊ − r₋) · p`, the unbiased gradient estimate
//! of the δ-smoothed reward (D = dimension); hypercube coordinates are projected onto [0,1].
//! No model is used. Deterministic under its seed; no I/O.

use crate::acquire::standard_normal;
use crate::controller::{Observation, ObserveReport, Proposal};
use crate::model::PerformanceModel;
use crate::objective::Objective;
use crate::space::Space;
use crate::tuner::{baseline_proposal, plain_report, Tuner};
use crate::CoreError;
use polyphony_spec::{KnobSpace, NetworkConfig, TrafficClass};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Bluefin's settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BluefinParams {
    /// Perturbation radius δ (paper: 0.1).
    pub delta: f64,
    /// Learning rate η (paper: 0.01).
    pub eta: f64,
    /// Reward scale: reward = tanh(−scale·g) (paper: 0.3).
    pub reward_scale: f64,
    /// Seed of the directions.
    pub seed: u64,
}

impl Default for BluefinParams {
    fn default() -> Self {
        BluefinParams {
            delta: 0.1,
            eta: 0.01,
            reward_scale: 0.3,
            seed: 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Phase {
    /// Next proposal deploys θ + δp.
    Plus,
    /// θ + δp deployed; waiting for its reward.
    AwaitPlus,
    /// Next proposal deploys θ − δp; r₊ known.
    Minus(f64),
    /// θ − δp deployed; waiting for its reward.
    AwaitMinus(f64),
}

/// The Bluefin tuner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bluefin {
    space: Space,
    objective: Objective,
    base: NetworkConfig,
    params: BluefinParams,
    theta: Vec<f64>,
    direction: Vec<f64>,
    phase: Phase,
    rng: Xoshiro256PlusPlus,
    iteration: u64,
}

impl Bluefin {
    /// Bluefin over `space`, starting at `initial`.
    pub fn new(
        classes: &[TrafficClass],
        space: &KnobSpace,
        initial: NetworkConfig,
        c: f64,
        lambda: f64,
        params: BluefinParams,
    ) -> Result<Bluefin, CoreError> {
        let space = Space::new(space, None)?;
        let theta = space.opt_of(&space.point_of_config(&initial)?);
        Ok(Bluefin {
            objective: Objective::new(classes, c, lambda)?,
            direction: vec![0.0; theta.len()],
            theta,
            space,
            base: initial,
            params,
            phase: Phase::Plus,
            rng: Xoshiro256PlusPlus::seed_from_u64(params.seed),
            iteration: 0,
        })
    }

    fn deploy(&self, sign: f64) -> Result<(NetworkConfig, Vec<f64>), CoreError> {
        let z: Vec<f64> = self
            .theta
            .iter()
            .zip(&self.direction)
            .map(|(t, p)| t + sign * self.params.delta * p)
            .collect();
        let x = self.space.point_of(&z);
        Ok((self.space.config_of(&x, &self.base)?, x))
    }
}

impl Tuner for Bluefin {
    fn name(&self) -> String {
        "bluefin".into()
    }

    fn objective(&self) -> &Objective {
        &self.objective
    }

    fn observe(&mut self, obs: &Observation) -> Result<ObserveReport, CoreError> {
        let r = plain_report(&self.objective, obs, self.iteration)?;
        self.iteration += 1;
        let reward = (-self.params.reward_scale * r.g_raw).tanh();
        self.phase = match std::mem::replace(&mut self.phase, Phase::Plus) {
            Phase::AwaitPlus => Phase::Minus(reward),
            Phase::AwaitMinus(rp) => {
                let d = self.theta.len() as f64;
                let step = self.params.eta * d / (2.0 * self.params.delta) * (rp - reward);
                let nh = self.space.n_hypercube();
                for (i, (t, p)) in self.theta.iter_mut().zip(&self.direction).enumerate() {
                    *t += step * p;
                    if let Some(k) = self.space.choices_at(i) {
                        // A categorical coordinate, relaxed: kept within its choices' range.
                        *t = t.clamp(0.0, (k - 1) as f64);
                    } else if i < nh {
                        *t = t.clamp(0.0, 1.0);
                    }
                }
                Phase::Plus
            }
            other => other,
        };
        Ok(r)
    }

    fn propose(&mut self, _model: &dyn PerformanceModel) -> Result<Proposal, CoreError> {
        let (sign, next) = match self.phase {
            Phase::Plus | Phase::AwaitPlus => {
                let mut p: Vec<f64> = (0..self.theta.len()).map(|_| standard_normal(&mut self.rng)).collect();
                let n = p.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
                p.iter_mut().for_each(|v| *v /= n);
                self.direction = p;
                (1.0, Phase::AwaitPlus)
            }
            Phase::Minus(rp) | Phase::AwaitMinus(rp) => (-1.0, Phase::AwaitMinus(rp)),
        };
        let (config, x) = self.deploy(sign)?;
        self.phase = next;
        Ok(baseline_proposal(
            self.iteration,
            config,
            x,
            format!("bluefin: θ {} δ·p", if sign > 0.0 { "+" } else { "−" }),
        ))
    }
}
