//! The evaluation's scores of §8.1 (convergence iteration, hindsight regret, min-max fairness),
//! defined exactly (also in docs/controller.md) and named apart from the daemon's Prometheus metrics. Iterations are
//! numbered from 0: iteration t is the t-th measured interval of a run. Pure functions.

use serde::{Deserialize, Serialize};

/// The convergence iteration: the smallest t such that every SLO holds (max_i r_i ≤ 1) in
/// each of the iterations t, t+1, …, t+k−1. `None` if no such run of k exists.
/// (With k = 3 this is "the first iteration after which all SLOs hold for 3 consecutive
/// iterations"; the run must contain all k iterations.)
pub fn convergence_iteration(ratios: &[Vec<f64>], k: usize) -> Option<usize> {
    let k = k.max(1);
    let met: Vec<bool> = ratios
        .iter()
        .map(|r| !r.is_empty() && r.iter().all(|v| *v <= 1.0))
        .collect();
    (0..met.len()).find(|&t| t + k <= met.len() && met[t..t + k].iter().all(|m| *m))
}

/// Hindsight regret: Σ_t (J_t − J_ref), with J_ref = `reference` or, when `None`,
/// min_t J_t over the run itself. J_t is the measured objective at iteration t.
pub fn hindsight_regret(objectives: &[f64], reference: Option<f64>) -> f64 {
    let r = reference.unwrap_or_else(|| objectives.iter().copied().fold(f64::INFINITY, f64::min));
    objectives.iter().map(|j| j - r).sum()
}

/// Min-max fairness: min_i r_i / max_i r_i (1 = perfectly even; 0 for an empty input).
pub fn min_max_fairness(ratios: &[f64]) -> f64 {
    let max = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    if ratios.is_empty() || max <= 0.0 {
        0.0
    } else {
        min / max
    }
}

/// The metrics of one run. An iteration that measured nothing (a skipped interval: some ratio
/// or its J not finite) counts as not compliant and is left out of the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvaluation {
    /// [`convergence_iteration`] with k = 3.
    pub convergence: Option<usize>,
    /// [`hindsight_regret`] over the iterations with a finite J.
    pub regret: f64,
    /// [`min_max_fairness`] of the last iteration whose every ratio is finite (NaN if none).
    pub fairness: f64,
    /// Which iteration that is.
    #[serde(default)]
    pub fairness_iteration: Option<usize>,
    /// J of the last iteration with a finite J (NaN if none).
    pub final_objective: f64,
}

/// The metrics of a run given per-iteration ratios and objectives.
pub fn evaluate_run(ratios: &[Vec<f64>], objectives: &[f64], reference: Option<f64>) -> RunEvaluation {
    let measured: Vec<f64> = objectives.iter().copied().filter(|j| j.is_finite()).collect();
    let last = ratios
        .iter()
        .rposition(|r| !r.is_empty() && r.iter().all(|x| x.is_finite()));
    RunEvaluation {
        convergence: convergence_iteration(ratios, 3),
        regret: hindsight_regret(&measured, reference),
        fairness: last.map_or(f64::NAN, |i| min_max_fairness(&ratios[i])),
        fairness_iteration: last,
        final_objective: measured.last().copied().unwrap_or(f64::NAN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convergence_needs_k_consecutive_met_iterations() {
        let ok = vec![0.9, 0.8];
        let bad = vec![1.1, 0.8];
        let run = vec![
            bad.clone(),
            ok.clone(),
            ok.clone(),
            bad.clone(),
            ok.clone(),
            ok.clone(),
            ok.clone(),
        ];
        assert_eq!(convergence_iteration(&run, 3), Some(4));
        assert_eq!(convergence_iteration(&run[..6], 3), None);
        assert_eq!(convergence_iteration(&[ok.clone(), ok.clone(), ok], 3), Some(0));
        // Exactly 1 meets the SLO.
        assert_eq!(convergence_iteration(&[vec![1.0], vec![1.0], vec![1.0]], 3), Some(0));
    }

    #[test]
    fn a_skipped_last_iteration_leaves_the_scores_to_the_last_measured_one() {
        let run = vec![vec![0.5, 1.0], vec![f64::INFINITY]];
        let e = evaluate_run(&run, &[2.0, f64::NAN], None);
        assert_eq!((e.fairness, e.fairness_iteration), (0.5, Some(0)));
        assert_eq!((e.final_objective, e.regret), (2.0, 0.0));
        let none = evaluate_run(&[vec![f64::INFINITY]], &[f64::NAN], None);
        assert!(none.fairness.is_nan() && none.fairness_iteration.is_none() && none.final_objective.is_nan());
    }

    #[test]
    fn regret_and_fairness() {
        assert_eq!(hindsight_regret(&[3.0, 2.0, 1.0, 1.0], None), 3.0);
        assert_eq!(hindsight_regret(&[3.0, 2.0], Some(1.0)), 3.0);
        assert_eq!(min_max_fairness(&[0.5, 1.0, 0.8]), 0.5);
    }
}
