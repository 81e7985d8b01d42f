//! Runs tuners against the synthetic problem, one closed loop per (tuner, seed) through the
//! core's control step: measure the current configuration, step, apply the decision. Summarises the metrics of
//! `polyphony_core::evaluation` over seeds into a Markdown table.

use crate::synthetic::{Problem, SyntheticModel, TRUTH};
use crate::tuners;
pub use crate::tuners::ALL;
use polyphony_core::{
    default_initial, evaluation, ControlStep, Controller, ControllerParams, CoreError, Objective, Observation,
    StepInput, StepPolicy, Tuner, Variant,
};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Builds tuner `name` for the synthetic problem.
pub fn make_tuner(
    name: &str,
    problem: &Problem,
    params: &ControllerParams,
) -> Result<Box<dyn Tuner + Send>, CoreError> {
    tuners::make_tuner(
        name,
        &problem.classes,
        &problem.knobs,
        default_initial(&problem.classes),
        params,
    )
}

/// What one run produced, per iteration.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Measured ratios.
    pub ratios: Vec<Vec<f64>>,
    /// Objective of the noise-free true system at the applied configuration.
    pub true_j: Vec<f64>,
    /// Model evaluations per proposal.
    pub evaluations: Vec<usize>,
}

/// One closed-loop run of `iterations` measured intervals.
pub fn run(
    name: &str,
    problem: &Problem,
    seed: u64,
    iterations: usize,
    params: &ControllerParams,
    verbose: bool,
) -> Result<Trace, CoreError> {
    let params = ControllerParams { seed, ..params.clone() };
    let tuner = make_tuner(name, problem, &params)?;
    let model = SyntheticModel::new(problem.clone(), std::time::Duration::ZERO);
    let objective = Objective::new(&problem.classes, params.lse_sharpness, params.fairness_weight)?;
    // Measurement noise depends on the seed only, so every tuner sees the same noise sequence.
    let mut noise = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xA5A5_5A5A);
    let mut cfg = default_initial(&problem.classes);
    // The one control step every driver runs; no guard, no warm-up, no workload window.
    let mut step = ControlStep::new(tuner, StepPolicy { guard: None }, cfg.clone(), Vec::new());
    let mut t = Trace::default();
    for _ in 0..iterations {
        let (r, slis) = problem.measure(&cfg, &mut noise);
        t.true_j.push(objective.of_ratios(&problem.ratios(&TRUTH, &cfg)));
        t.ratios.push(r);
        let input = StepInput {
            config: &cfg,
            slis: &slis,
            window: None,
            workload: None,
        };
        let d = step.step(&input, &model)?;
        if let Some(e) = d.record.error {
            return Err(e);
        }
        let evaluations = d.record.proposal.as_ref().map_or(0, |p| p.model_evaluations);
        if verbose {
            let p = d.record.proposal.as_ref();
            eprintln!(
                "{name} it {:>2} trueJ {:.3} r {:?} -> ĝ {:?} σ {:?} EI {:?} evals {} | {} | {:?}",
                t.ratios.len() - 1,
                t.true_j.last().copied().unwrap_or(f64::NAN),
                t.ratios
                    .last()
                    .map(|r| r.iter().map(|v| (v * 100.0).round() / 100.0).collect::<Vec<_>>()),
                p.and_then(|p| p.g_hat),
                p.and_then(|p| p.sigma),
                p.and_then(|p| p.expected_improvement),
                evaluations,
                d.reason.text,
                p.map(|p| &p.surrogate)
            );
        }
        t.evaluations.push(evaluations);
        cfg = d.next;
    }
    Ok(t)
}

/// A full controller on the synthetic problem holding `samples` admitted samples measured at
/// random points of the space (the state the `propose` benchmark starts from).
pub fn primed_controller(params: ControllerParams, samples: usize) -> Result<Controller, CoreError> {
    let problem = Problem::new(0.05);
    let init = default_initial(&problem.classes);
    let mut c = Controller::new(&problem.classes, &problem.knobs, init, params, Variant::FULL)?;
    let quick = SyntheticModel::new(problem.clone(), std::time::Duration::ZERO);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut noise = Xoshiro256PlusPlus::seed_from_u64(2);
    let space = &problem.space;
    while c.samples() < samples {
        let z = tuners::random_z(space, &mut rng, 1.0);
        let cfg = space.config_of(&space.point_of(&z), c.initial())?;
        let (_, slis) = problem.measure(&cfg, &mut noise);
        c.observe(&Observation {
            config: cfg,
            slis,
            workload: None,
        })?;
        c.propose(&quick)?;
    }
    Ok(c)
}

use polyphony_core::median;

/// Per-tuner summary over seeds.
#[derive(Debug, Clone)]
pub struct Row {
    /// Tuner name.
    pub name: String,
    /// Runs that converged / runs.
    pub converged: (usize, usize),
    /// Median convergence iteration, counting a run that never converged as never (None when
    /// half or more never converged).
    pub median_convergence: Option<f64>,
    /// Median hindsight regret (noise-free J, reference = best J any tuner reached on that seed).
    pub median_regret: f64,
    /// Median final true objective.
    pub median_final: f64,
    /// Median min-max fairness at the end (measured ratios).
    pub median_fairness: f64,
    /// Median over runs of mean model evaluations per proposal.
    pub median_evaluations: f64,
    /// Median number of iterations in which some measured SLO was violated.
    pub median_violations: f64,
}

/// Summarises traces: `traces[tuner][seed]`.
pub fn summarise(names: &[String], traces: &[Vec<Trace>]) -> Vec<Row> {
    let seeds = traces.first().map_or(0, |t| t.len());
    // Per seed, the best noise-free objective any tuner reached: the regret reference.
    let reference: Vec<f64> = (0..seeds)
        .map(|s| {
            traces
                .iter()
                .flat_map(|t| t[s].true_j.iter().copied())
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    names
        .iter()
        .zip(traces)
        .map(|(name, runs)| {
            let mut conv: Vec<f64> = runs
                .iter()
                .map(|t| evaluation::convergence_iteration(&t.ratios, 3).map_or(f64::INFINITY, |c| c as f64))
                .collect();
            let converged = conv.iter().filter(|c| c.is_finite()).count();
            let mc = median(&mut conv).filter(|m| m.is_finite());
            let mut regret: Vec<f64> = runs
                .iter()
                .zip(&reference)
                .map(|(t, r)| evaluation::hindsight_regret(&t.true_j, Some(*r)))
                .collect();
            let mut fin: Vec<f64> = runs.iter().filter_map(|t| t.true_j.last().copied()).collect();
            let mut fair: Vec<f64> = runs
                .iter()
                .filter_map(|t| t.ratios.last().map(|r| evaluation::min_max_fairness(r)))
                .collect();
            let mut ev: Vec<f64> = runs
                .iter()
                .map(|t| t.evaluations.iter().sum::<usize>() as f64 / t.evaluations.len().max(1) as f64)
                .collect();
            let mut viol: Vec<f64> = runs
                .iter()
                .map(|t| t.ratios.iter().filter(|r| r.iter().any(|v| *v > 1.0)).count() as f64)
                .collect();
            Row {
                median_violations: median(&mut viol).unwrap_or(f64::NAN),
                name: name.clone(),
                converged: (converged, runs.len()),
                median_convergence: mc,
                median_regret: median(&mut regret).unwrap_or(f64::NAN),
                median_final: median(&mut fin).unwrap_or(f64::NAN),
                median_fairness: median(&mut fair).unwrap_or(f64::NAN),
                median_evaluations: median(&mut ev).unwrap_or(f64::NAN),
            }
        })
        .collect()
}

/// The rows as a Markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| tuner | converged runs | median convergence iteration | median violating iterations | median regret | median final J | median fairness | model evals / proposal |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {}/{} | {} | {:.1} | {:.2} | {:.3} | {:.2} | {:.0} |\n",
            r.name,
            r.converged.0,
            r.converged.1,
            r.median_convergence
                .map_or("never (median)".into(), |c| format!("{c:.1}")),
            r.median_violations,
            r.median_regret,
            r.median_final,
            r.median_fairness,
            r.median_evaluations
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_polyphony_converges_where_the_open_loop_model_stalls() {
        let problem = Problem::default();
        let params = ControllerParams {
            acq_random_candidates: 32,
            ..ControllerParams::default()
        };
        let full = run("polyphony", &problem, 0, 20, &params, false).expect("run");
        let open = run("no-correction", &problem, 0, 20, &params, false).expect("run");
        assert!(
            evaluation::convergence_iteration(&full.ratios, 3).is_some(),
            "{:?}",
            full.ratios
        );
        assert_eq!(
            evaluation::convergence_iteration(&open.ratios, 3),
            None,
            "{:?}",
            open.ratios
        );
    }

    #[test]
    fn unknown_tuner_is_named_in_the_error() {
        let e = make_tuner("magic", &Problem::default(), &ControllerParams::default())
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("magic") && e.contains("polyphony")));
    }
}
