//! A synthetic three-class problem on the paper's nine-knob space (per class an ECN threshold
//! and an initial window, log-scaled, plus one 3-weight simplex with floor 0.05), with a known
//! true system g, a model f whose error is a smooth systematic bias, and noisy measurements.
//!
//! True per-class ratio at point x (hypercube coordinates h, weights w):
//! `r_i = a · (1 + 2·‖(K_i, c_i) − (K*_i, c*_i)‖²) · (1 + 0.15·mean_{j≠i}(K_j − K*_j)) · (s_i / w_i)^0.7`
//! with a = 0.85, needed shares s = (0.15, 0.25, 0.45), optima K* = (0.3, 0.6, 0.7),
//! c* = (0.7, 0.4, 0.5). The SLI is `y_i = r_i · v_i`. Every SLO holds only in a region around
//! the optimum (best ratios ≈ 0.76), and the starting configuration (equal weights,
//! K = 30 kB, initial window 10) violates class 3's SLO (r₃ ≈ 1.15).
//!
//! The model uses the same formula with wrong constants — a = 0.75 (optimistic) and class 3's
//! knob optimum at K*₃ = 0.25, c*₃ = 0.8 — so the per-class error is smooth (the difference
//! of two quadratics with equal curvature is linear in K₃, c₃) but the model's optimum leaves
//! class 3 violating its SLO in the true system (r₃ ≈ 1.2). Measurements multiply each y_i by
//! `exp(0.05·N(0,1))` (5 % log-normal noise). The model is deterministic (it ignores the
//! common-random-number seed: it has no sampling noise).

use polyphony_core::acquire::standard_normal;
use polyphony_core::ModelError;
use polyphony_core::{PerformanceModel, Space};
use polyphony_spec::{ClassSli, Dscp, KnobSpace, NetworkConfig, SliVector, TrafficClass};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The classes.
pub const DSCPS: [Dscp; 3] = [Dscp::AF11, Dscp::AF21, Dscp::AF31];

/// Constants of one ratio function.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Needed shares s_i.
    pub shares: [f64; 3],
    /// Optimal ECN coordinate per class.
    pub k_opt: [f64; 3],
    /// Optimal initial-window coordinate per class.
    pub c_opt: [f64; 3],
    /// Overall scale.
    pub scale: f64,
}

/// The true system.
pub const TRUTH: Shape = Shape {
    shares: [0.15, 0.25, 0.45],
    k_opt: [0.3, 0.6, 0.7],
    c_opt: [0.7, 0.4, 0.5],
    scale: 0.85,
};
/// The biased model.
pub const MODEL: Shape = Shape {
    shares: [0.15, 0.25, 0.45],
    k_opt: [0.3, 0.6, 0.25],
    c_opt: [0.7, 0.4, 0.8],
    scale: 0.75,
};

/// The problem: classes with SLOs (the reference scenario's high tightness), the space.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Classes and SLOs.
    pub classes: Vec<TrafficClass>,
    /// The knob space description.
    pub knobs: KnobSpace,
    /// The validated space (for mapping configurations to points).
    pub space: Space,
    /// Measurement noise σ (log-normal, per class).
    pub noise: f64,
}

impl Default for Problem {
    fn default() -> Self {
        Problem::new(0.05)
    }
}

impl Problem {
    /// The problem with measurement noise `noise`.
    pub fn new(noise: f64) -> Problem {
        let knobs = KnobSpace::per_class_default(&DSCPS);
        let space = Space::new(&knobs, None).expect("the per-class default space is valid");
        Problem {
            classes: vec![
                TrafficClass::new("AF11", Dscp::AF11, 10.0),
                TrafficClass::new("AF21", Dscp::AF21, 13.0),
                TrafficClass::new("AF31", Dscp::AF31, 17.0),
            ],
            knobs,
            space,
            noise,
        }
    }

    /// Ratios of `shape` at a configuration.
    pub fn ratios(&self, shape: &Shape, cfg: &NetworkConfig) -> Vec<f64> {
        let x = self.space.point_of_config(cfg).unwrap_or_else(|_| self.space.centre());
        ratios_at(shape, &x)
    }

    /// SLIs from ratios (p99 = r·v).
    pub fn slis(&self, ratios: &[f64]) -> SliVector {
        SliVector {
            classes: self
                .classes
                .iter()
                .zip(ratios)
                .map(|(c, r)| {
                    let y = r * c.slo.threshold();
                    ClassSli {
                        dscp: c.dscp,
                        flows: 1000,
                        p50: y / 3.0,
                        p99: y,
                        p999: y * 1.5,
                        mean: y / 2.0,
                        qct: None,
                    }
                })
                .collect(),
        }
    }

    /// A noisy measurement of the true system.
    pub fn measure(&self, cfg: &NetworkConfig, rng: &mut Xoshiro256PlusPlus) -> (Vec<f64>, SliVector) {
        let r: Vec<f64> = self
            .ratios(&TRUTH, cfg)
            .into_iter()
            .map(|v| {
                let z = standard_normal(rng);
                v * (self.noise * z).exp()
            })
            .collect();
        let s = self.slis(&r);
        (r, s)
    }
}

/// The ratio function at a point (h = 6 hypercube coordinates in (K, c) pairs, then 3 weights).
pub fn ratios_at(s: &Shape, x: &[f64]) -> Vec<f64> {
    (0..3)
        .map(|i| {
            let (k, c, w) = (x[2 * i], x[2 * i + 1], x[6 + i]);
            let local = 1.0 + 2.0 * ((k - s.k_opt[i]).powi(2) + (c - s.c_opt[i]).powi(2));
            let cross: f64 = (0..3).filter(|&j| j != i).map(|j| x[2 * j] - s.k_opt[j]).sum::<f64>() / 2.0;
            s.scale * local * (1.0 + 0.15 * cross) * (s.shares[i] / w.max(1e-6)).powf(0.7)
        })
        .collect()
}

/// The biased model as a [`PerformanceModel`], optionally burning `cost` of CPU per
/// configuration (to stand in for a simulator's run time in the criterion benchmark). The
/// wall time spent inside `predict` is added to `spent` (nanoseconds), so a benchmark can
/// subtract the model's real time — including any preemption — from a proposal's.
#[derive(Debug, Clone, Default)]
pub struct SyntheticModel {
    /// The problem.
    pub problem: Problem,
    /// Busy-wait per evaluated configuration.
    pub cost: std::time::Duration,
    /// Nanoseconds spent inside `predict` so far.
    pub spent: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl SyntheticModel {
    /// The model with a busy-wait of `cost` per configuration.
    pub fn new(problem: Problem, cost: std::time::Duration) -> SyntheticModel {
        SyntheticModel {
            problem,
            cost,
            spent: Default::default(),
        }
    }
}

impl PerformanceModel for SyntheticModel {
    fn predict(&self, configs: &[NetworkConfig], _crn_seed: u64) -> Result<Vec<SliVector>, ModelError> {
        let start = std::time::Instant::now();
        let out = configs
            .iter()
            .map(|c| {
                if !self.cost.is_zero() {
                    let t = std::time::Instant::now();
                    while t.elapsed() < self.cost {
                        std::hint::spin_loop();
                    }
                }
                self.problem.slis(&self.problem.ratios(&MODEL, c))
            })
            .collect();
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.spent.fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_core::default_initial;

    #[test]
    fn the_start_violates_and_the_optimum_meets_every_slo() {
        let p = Problem::default();
        let r0 = p.ratios(&TRUTH, &default_initial(&p.classes));
        assert!(r0[2] > 1.0, "{r0:?}");
        let mut x = vec![0.3, 0.7, 0.6, 0.4, 0.7, 0.5, 0.0, 0.0, 0.0];
        let s: f64 = TRUTH.shares.iter().sum();
        for i in 0..3 {
            x[6 + i] = TRUTH.shares[i] / s;
        }
        let r = ratios_at(&TRUTH, &x);
        assert!(r.iter().all(|v| *v < 0.8), "{r:?}");
        // The model's optimum starves class 3 in the true system.
        let mut xm = vec![0.3, 0.7, 0.6, 0.4, 0.25, 0.8, 0.0, 0.0, 0.0];
        let sm: f64 = MODEL.shares.iter().sum();
        for i in 0..3 {
            xm[6 + i] = MODEL.shares[i] / sm;
        }
        let rm = ratios_at(&TRUTH, &xm);
        assert!(rm.iter().any(|v| *v > 1.0), "{rm:?}");
    }
}
