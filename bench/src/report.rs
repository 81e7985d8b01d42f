//! Summaries of a study's runs: per tuner over seeds, the paper's metrics (convergence in
//! iterations and in minutes of control time, hindsight regret, min-max fairness, final
//! objective) as median and spread (min–max), written as Markdown and CSV. Writes only inside
//! the output directory it is given.

use crate::closed_loop::{IterationRecord, RunTrace};
use crate::EvalError;
use polyphony_core::evaluation;
use polyphony_spec::Scenario;
use std::fmt::Write as _;
use std::path::Path;

/// Consecutive compliant iterations that count as converged (paper §8.1).
pub const CONVERGENCE_K: usize = 3;

/// Intervals at the end of a run over which [`tail_fairness`] averages each class's ratio.
pub const FAIRNESS_TAIL: usize = 10;

/// All runs of one scenario.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    /// Short label used in file names and tables (e.g. `high`).
    pub label: String,
    /// The scenario as run.
    pub scenario: Scenario,
    /// Every (tuner, seed) run.
    pub traces: Vec<RunTrace>,
}

/// Median, minimum and maximum of a set of values (infinite = "never").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `v` (NaN values dropped; all NaN for an empty set).
    pub fn of(v: &[f64]) -> Spread {
        let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
        if s.is_empty() {
            return Spread {
                median: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        // Sorted by the median; averaging with "never" (+∞) is never.
        let median = polyphony_core::median(&mut s).unwrap_or(f64::NAN);
        Spread {
            median,
            min: s[0],
            max: s[s.len() - 1],
        }
    }

    /// `median (min–max)` with `digits` decimals; infinite values print as `never`.
    pub fn cell(&self, digits: usize) -> String {
        let f = |x: f64| {
            if x.is_infinite() {
                "never".to_string()
            } else if x.is_nan() {
                "–".to_string()
            } else {
                format!("{x:.digits$}")
            }
        };
        if self.min == self.max || (self.min.is_nan() && self.max.is_nan()) {
            f(self.median)
        } else {
            format!("{} ({}–{})", f(self.median), f(self.min), f(self.max))
        }
    }
}

/// One tuner's metrics over seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Tuner name.
    pub tuner: String,
    /// Runs (seeds).
    pub runs: usize,
    /// Runs that converged.
    pub converged: usize,
    /// Convergence iteration (0-based: the first of k compliant intervals); ∞ = never.
    pub convergence: Spread,
    /// The same in minutes of control time: iteration × interval.
    pub minutes: Spread,
    /// Hindsight regret Σ_t (J_t − J_ref), J_ref = the lowest J any tuner measured on that seed.
    pub regret: Spread,
    /// min r / max r of the last interval.
    pub fairness: Spread,
    /// min / max over classes of each class's mean r over the last [`FAIRNESS_TAIL`] intervals.
    pub tail_fairness: Spread,
    /// J of the last interval.
    pub final_objective: Spread,
    /// Intervals in which some SLO was missed.
    pub violations: Spread,
    /// Mean wall seconds the controller spent deciding per control interval, outside the
    /// model's calls.
    pub decide_wall_s: Spread,
    /// Mean CPU seconds of the deciding thread per control interval, outside the model's calls.
    pub decide_cpu_s: Spread,
    /// The model's speed against pktsim per configuration in the controller's decisions
    /// ([`run_speed`]; NaN on the testbed and for model-free tuners).
    pub model_speed: Spread,
}

/// Whether an interval met its SLOs: some class was measured and every measured class met its
/// SLO (`ratios` from [`RunTrace::judged_ratios`]).
pub fn slos_met(ratios: &[f64]) -> bool {
    !ratios.is_empty() && ratios.iter().all(|v| *v <= 1.0)
}

/// The model's speed against pktsim in one decision: pktsim's CPU seconds for the interval
/// (`sim_cpu_s`) over the model's CPU seconds per configuration it scored on the same window
/// in the decision (`model_cpu_s / evaluations`), so the window's planning and the
/// controller's own call pattern (a first batch, then small ones) are in it. NaN when the
/// decision scored nothing or either time is unknown.
pub fn speed_ratio(sim_cpu_s: f64, model_cpu_s: f64, evaluations: usize) -> f64 {
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if evaluations == 0 || !positive(sim_cpu_s) || !positive(model_cpu_s) {
        return f64::NAN;
    }
    sim_cpu_s / (model_cpu_s / evaluations as f64)
}

/// The median [`speed_ratio`] over a run's decisions (NaN when none has one).
pub fn run_speed(records: &[IterationRecord]) -> f64 {
    let v: Vec<f64> = records
        .iter()
        .map(|r| speed_ratio(r.sim_cpu_s, r.model_cpu_s, r.model_evaluations))
        .collect();
    Spread::of(&v).median
}

/// Min-max fairness of the per-class mean ratio over the last `last` intervals (`ratios[t][c]`;
/// NaN = class c finished no flow in interval t). One interval's per-class p99s are noisy
/// independently of each other, so the min/max of a single interval mostly measures that noise;
/// averaging each class first measures the split the configuration makes. NaN when no class was
/// measured in those intervals.
pub fn tail_fairness(ratios: &[Vec<f64>], last: usize) -> f64 {
    let tail = &ratios[ratios.len().saturating_sub(last)..];
    let classes = tail.iter().map(Vec::len).max().unwrap_or(0);
    let means: Vec<f64> = (0..classes)
        .filter_map(|c| {
            let v: Vec<f64> = tail
                .iter()
                .filter_map(|r| r.get(c).copied())
                .filter(|x| x.is_finite())
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    if means.is_empty() {
        f64::NAN
    } else {
        evaluation::min_max_fairness(&means)
    }
}

/// The fairness measurement noise alone leaves in one interval: each class's ratio over the
/// last `last` intervals divided by that class's mean over them (so every class has mean 1, a
/// perfectly fair configuration in expectation), then min / max over the classes per interval,
/// median over the intervals. Meaningful for a tuner that holds one configuration (`fixed`):
/// for one that moves, configuration changes count as noise too. NaN with no finite ratio.
pub fn noise_fairness(ratios: &[Vec<f64>], last: usize) -> f64 {
    let tail = &ratios[ratios.len().saturating_sub(last)..];
    let classes = tail.iter().map(Vec::len).max().unwrap_or(0);
    let means: Vec<f64> = (0..classes)
        .map(|c| {
            let v: Vec<f64> = tail
                .iter()
                .filter_map(|r| r.get(c).copied())
                .filter(|x| x.is_finite())
                .collect();
            v.iter().sum::<f64>() / v.len() as f64
        })
        .collect();
    let mut per_interval: Vec<f64> = tail
        .iter()
        .filter_map(|r| {
            let n: Vec<f64> = r
                .iter()
                .zip(&means)
                .map(|(x, m)| x / m)
                .filter(|x| x.is_finite() && *x > 0.0)
                .collect();
            (n.len() == classes && classes > 0).then(|| evaluation::min_max_fairness(&n))
        })
        .collect();
    polyphony_core::median(&mut per_interval).unwrap_or(f64::NAN)
}

/// The regret reference of each seed: the lowest finite J any tuner measured on it.
fn references(traces: &[RunTrace]) -> Vec<(u64, f64)> {
    let mut seeds: Vec<u64> = traces.iter().map(|t| t.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    seeds
        .into_iter()
        .map(|s| {
            let r = traces
                .iter()
                .filter(|t| t.seed == s)
                .flat_map(|t| t.objectives())
                .filter(|j| j.is_finite())
                .fold(f64::INFINITY, f64::min);
            (s, r)
        })
        .collect()
}

/// Summaries per tuner, in the order tuners first appear in `traces`.
pub fn summarise(traces: &[RunTrace], interval_s: f64) -> Vec<Summary> {
    let refs = references(traces);
    let mut names: Vec<&str> = Vec::new();
    for t in traces {
        if !names.contains(&t.tuner.as_str()) {
            names.push(&t.tuner);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let runs: Vec<&RunTrace> = traces.iter().filter(|t| t.tuner == name).collect();
            let conv: Vec<f64> = runs
                .iter()
                .map(|t| {
                    evaluation::convergence_iteration(&t.judged_ratios(), CONVERGENCE_K)
                        .map_or(f64::INFINITY, |c| c as f64)
                })
                .collect();
            let regret: Vec<f64> = runs
                .iter()
                .map(|t| {
                    let r = refs.iter().find(|(s, _)| *s == t.seed).map_or(f64::NAN, |x| x.1);
                    let js: Vec<f64> = t.objectives().into_iter().filter(|j| j.is_finite()).collect();
                    evaluation::hindsight_regret(&js, Some(r))
                })
                .collect();
            let last = |t: &RunTrace| t.records.iter().rev().find(|r| r.objective.is_finite()).cloned();
            let fairness: Vec<f64> = runs
                .iter()
                .map(|t| last(t).map_or(f64::NAN, |r| evaluation::min_max_fairness(&r.ratios)))
                .collect();
            let tail: Vec<f64> = runs
                .iter()
                .map(|t| {
                    let ratios: Vec<Vec<f64>> = t.records.iter().map(|r| r.ratios.clone()).collect();
                    tail_fairness(&ratios, FAIRNESS_TAIL)
                })
                .collect();
            let fin: Vec<f64> = runs.iter().map(|t| last(t).map_or(f64::NAN, |r| r.objective)).collect();
            let viol: Vec<f64> = runs
                .iter()
                .map(|t| t.judged_ratios().iter().filter(|r| !slos_met(r)).count() as f64)
                .collect();
            let mean_of = |f: fn(&IterationRecord) -> f64| -> Vec<f64> {
                runs.iter()
                    .map(|t| t.records.iter().map(f).sum::<f64>() / t.records.len().max(1) as f64)
                    .collect()
            };
            let decide_wall = mean_of(|r| r.decide_wall_s);
            let decide_cpu = mean_of(|r| r.decide_cpu_s);
            let speed: Vec<f64> = runs.iter().map(|t| run_speed(&t.records)).collect();
            let minutes: Vec<f64> = conv.iter().map(|c| c * interval_s / 60.0).collect();
            Summary {
                tuner: name.to_string(),
                runs: runs.len(),
                converged: conv.iter().filter(|c| c.is_finite()).count(),
                convergence: Spread::of(&conv),
                minutes: Spread::of(&minutes),
                regret: Spread::of(&regret),
                fairness: Spread::of(&fairness),
                tail_fairness: Spread::of(&tail),
                final_objective: Spread::of(&fin),
                violations: Spread::of(&viol),
                decide_wall_s: Spread::of(&decide_wall),
                decide_cpu_s: Spread::of(&decide_cpu),
                model_speed: Spread::of(&speed),
            }
        })
        .collect()
}

/// The Markdown table of `summaries` (median over seeds, min–max in parentheses).
pub fn markdown(summaries: &[Summary]) -> String {
    let mut s = format!(
        "| tuner | converged runs | convergence iteration | convergence (min of control time) | regret | fairness | fairness (mean r, last {FAIRNESS_TAIL}) | final J | violating intervals | decide s / iteration (wall) | decide s / iteration (CPU) | model speed (× pktsim, CPU per configuration) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for m in summaries {
        let _ = writeln!(
            s,
            "| {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            m.tuner,
            m.converged,
            m.runs,
            m.convergence.cell(0),
            m.minutes.cell(1),
            m.regret.cell(1),
            m.fairness.cell(2),
            m.tail_fairness.cell(2),
            m.final_objective.cell(2),
            m.violations.cell(0),
            m.decide_wall_s.cell(2),
            m.decide_cpu_s.cell(2),
            m.model_speed.cell(0),
        );
    }
    s
}

/// Per tuner, the algorithms its runs' classes with a categorical knob ran in their last
/// interval, and the median first interval any of them left the start's algorithm (the
/// categorical study; empty when the scenario has no categorical block).
pub fn categorical_markdown(res: &ScenarioResult) -> String {
    let cats = res.scenario.knob_space().categorical;
    if cats.is_empty() {
        return String::new();
    }
    let cc_of = |cfg: &polyphony_spec::NetworkConfig, d: polyphony_spec::Dscp| -> String {
        cfg.class(d)
            .and_then(|k| k.congestion_control.as_ref())
            .map_or_else(|| "(hosts' default)".to_string(), |c| c.name().to_string())
    };
    let mut s = String::from(
        "| tuner | algorithms in the last interval (runs) | first interval off the start's algorithm (median, runs that moved) |\n|---|---|---|\n",
    );
    let mut tuners: Vec<&str> = Vec::new();
    for t in &res.traces {
        if !tuners.contains(&t.tuner.as_str()) {
            tuners.push(&t.tuner);
        }
    }
    for tuner in tuners {
        let runs: Vec<&RunTrace> = res.traces.iter().filter(|t| t.tuner == tuner).collect();
        let mut finals: Vec<(String, usize)> = Vec::new();
        let mut moved = Vec::new();
        for t in &runs {
            let (Some(first), Some(last)) = (t.records.first(), t.records.last()) else {
                continue;
            };
            let label = |cfg| {
                cats.iter()
                    .map(|c| format!("{} {}", c.dscp.name(), cc_of(cfg, c.dscp)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let l = label(&last.config);
            match finals.iter_mut().find(|f| f.0 == l) {
                Some(f) => f.1 += 1,
                None => finals.push((l, 1)),
            }
            let start = label(&first.config);
            if let Some(r) = t.records.iter().find(|r| label(&r.config) != start) {
                moved.push(r.iteration as f64);
            }
        }
        finals.sort();
        let finals: Vec<String> = finals.iter().map(|(l, n)| format!("{l}: {n}")).collect();
        let moved_cell = if moved.is_empty() {
            "never".to_string()
        } else {
            format!("{} ({}/{})", Spread::of(&moved).cell(0), moved.len(), runs.len())
        };
        let _ = writeln!(s, "| {tuner} | {} | {moved_cell} |", finals.join("; "));
    }
    s
}

/// CSV of every iteration of every run (one header line; per class p99, ratio, the model's ratio
/// at the configuration in force on the same flows, and knobs); warm-up windows come first with
/// negative iterations.
pub fn iterations_csv(res: &ScenarioResult) -> String {
    let sc = &res.scenario;
    let names: Vec<&str> = sc.classes.iter().map(|c| c.name.as_str()).collect();
    let mut s = String::from("scenario,tuner,seed,iteration,minutes");
    for prefix in ["p99", "ratio", "model_ratio", "weight", "ecn_bytes", "initcwnd"] {
        for n in &names {
            let _ = write!(s, ",{prefix}_{n}");
        }
    }
    // Classes with a categorical knob also get their algorithm, per interval.
    let cats: Vec<_> = sc.knob_space().categorical.iter().map(|c| c.dscp).collect();
    for d in &cats {
        let _ = write!(s, ",cc_{}", d.name());
    }
    s += ",objective,model_evaluations,reason,decide_wall_s,decide_cpu_s,model_cpu_s,pktsim_cpu_s\n";
    for t in &res.traces {
        // Warm-up windows first, numbered −W … −1; control iterations from 0.
        let w = t.warmup.len() as i64;
        let rows = t
            .warmup
            .iter()
            .map(|r| (r.iteration as i64 - w, r))
            .chain(t.records.iter().map(|r| (r.iteration as i64, r)));
        for (iteration, r) in rows {
            let _ = write!(
                s,
                "{},{},{},{},{:.3}",
                res.label,
                t.tuner,
                t.seed,
                iteration,
                iteration as f64 * sc.interval_s / 60.0
            );
            for v in r.p99.iter().chain(&r.ratios) {
                let _ = write!(s, ",{v:.4}");
            }
            // The model's ratios at the configuration in force (empty: it had no view).
            for i in 0..names.len() {
                match r.model_ratios.get(i) {
                    Some(v) => {
                        let _ = write!(s, ",{v:.4}");
                    }
                    None => s += ",",
                }
            }
            for c in &sc.classes {
                match r.config.class(c.dscp) {
                    Some(k) => {
                        let _ = write!(s, ",{:.4}", k.weight);
                    }
                    None => s += ",",
                }
            }
            for c in &sc.classes {
                let _ = write!(s, ",{}", r.config.class(c.dscp).map_or(0, |k| k.ecn_threshold.0));
            }
            for c in &sc.classes {
                let _ = write!(s, ",{}", r.config.class(c.dscp).map_or(0, |k| k.init_cwnd.0));
            }
            for d in &cats {
                let cc = r.config.class(*d).and_then(|k| k.congestion_control.as_ref());
                let _ = write!(s, ",{}", cc.map_or("", |c| c.name()));
            }
            let _ = writeln!(
                s,
                ",{:.4},{},\"{}\",{:.4},{:.4},{:.6},{:.6}",
                r.objective,
                r.model_evaluations,
                r.reason.replace('"', "'"),
                r.decide_wall_s,
                r.decide_cpu_s,
                r.model_cpu_s,
                r.sim_cpu_s
            );
        }
    }
    s
}

/// CSV of the summaries.
pub fn summary_csv(label: &str, summaries: &[Summary]) -> String {
    let mut s = String::from(
        "scenario,tuner,runs,converged,convergence_median,convergence_min,convergence_max,minutes_median,regret_median,regret_min,regret_max,fairness_median,final_objective_median,violations_median,decide_wall_s_median,decide_cpu_s_median,tail_fairness_median,model_speed_median\n",
    );
    for m in summaries {
        let _ = writeln!(
            s,
            "{label},{},{},{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{},{:.4},{:.4},{:.3},{:.0}",
            m.tuner,
            m.runs,
            m.converged,
            m.convergence.median,
            m.convergence.min,
            m.convergence.max,
            m.minutes.median,
            m.regret.median,
            m.regret.min,
            m.regret.max,
            m.fairness.median,
            m.final_objective.median,
            m.violations.median,
            m.decide_wall_s.median,
            m.decide_cpu_s.median,
            m.tail_fairness.median,
            m.model_speed.median
        );
    }
    s
}

/// One CSV of the per-scenario CSVs `parts` (each with its header line). When every part has
/// the same header they are concatenated under it; otherwise (scenarios with different classes,
/// as in the fresh study) the header is the union of theirs — a column new to it goes after the
/// last one with the same `<prefix>_` (so `ratio_c5` joins the `ratio_` group), else at the end —
/// and a row leaves the columns its scenario lacks empty. `name` is the file's, for errors.
pub fn merge_csv(name: &str, parts: &[String]) -> Result<String, EvalError> {
    let header = |p: &str| p.lines().next().unwrap_or("").to_string();
    let Some(first) = parts.first() else {
        return Ok(String::new());
    };
    if parts.iter().all(|p| header(p) == header(first)) {
        let mut out = first.clone();
        for p in &parts[1..] {
            out.extend(p.lines().skip(1).map(|l| format!("{l}\n")));
        }
        return Ok(out);
    }
    let err = |e: &dyn std::fmt::Display| EvalError::Write {
        path: name.into(),
        message: format!("merging the scenarios' rows: {e}"),
    };
    let mut union: Vec<String> = Vec::new();
    let mut parsed = Vec::new();
    for p in parts {
        let mut rdr = csv::ReaderBuilder::new().from_reader(p.as_bytes());
        let head: Vec<String> = rdr.headers().map_err(|e| err(&e))?.iter().map(str::to_string).collect();
        for h in &head {
            if union.contains(h) {
                continue;
            }
            let group = h.rfind('_').map(|k| &h[..=k]);
            match group.and_then(|g| {
                union
                    .iter()
                    .rposition(|u| u.starts_with(g) && u.rfind('_').map(|k| &u[..=k]) == Some(g))
            }) {
                Some(at) => union.insert(at + 1, h.clone()),
                None => union.push(h.clone()),
            }
        }
        let rows: Vec<csv::StringRecord> = rdr.records().collect::<Result<_, _>>().map_err(|e| err(&e))?;
        parsed.push((head, rows));
    }
    let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
    w.write_record(&union).map_err(|e| err(&e))?;
    for (head, rows) in &parsed {
        let at: Vec<Option<usize>> = union.iter().map(|u| head.iter().position(|h| h == u)).collect();
        for r in rows {
            w.write_record(at.iter().map(|i| i.and_then(|i| r.get(i)).unwrap_or("")))
                .map_err(|e| err(&e))?;
        }
    }
    let bytes = w.into_inner().map_err(|e| err(&e))?;
    String::from_utf8(bytes).map_err(|e| err(&e))
}

/// Writes `text` to `dir/name`, creating `dir`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> Result<(), EvalError> {
    let path = dir.join(name);
    let err = |e: std::io::Error| EvalError::Write {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    std::fs::write(&path, text).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::closed_loop::IterationRecord;
    use polyphony_spec::{Bytes, Dscp, NetworkConfig, Packets, TrafficClass};

    fn trace(tuner: &str, seed: u64, rows: &[(f64, f64, f64)]) -> RunTrace {
        let cfg = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], Bytes(30_000), Packets(10));
        RunTrace {
            tuner: tuner.into(),
            seed,
            records: rows
                .iter()
                .enumerate()
                .map(|(i, &(r1, r2, j))| IterationRecord {
                    iteration: i,
                    config: cfg.clone(),
                    p99: vec![r1 * 10.0, r2 * 20.0],
                    ratios: vec![r1, r2],
                    model_ratios: vec![r1 / 2.0, f64::NAN],
                    objective: j,
                    decide_wall_s: 0.0,
                    decide_cpu_s: 0.0,
                    model_evaluations: 0,
                    model_cpu_s: 0.0,
                    sim_cpu_s: f64::NAN,
                    reason: String::new(),
                })
                .collect(),
            warmup: Vec::new(),
        }
    }

    #[test]
    fn the_model_speed_is_the_median_decision_and_skips_decisions_without_both_times() {
        let mut t = trace(
            "a",
            0,
            &[(0.5, 0.5, 1.0), (0.5, 0.5, 1.0), (0.5, 0.5, 1.0), (0.5, 0.5, 1.0)],
        );
        // pktsim 1 s per interval; the model 1, 2 and 4 ms per configuration; the last decision
        // scored nothing.
        for (r, (model, evals)) in t.records.iter_mut().zip([(0.1, 100), (0.2, 100), (0.4, 100), (0.0, 0)]) {
            r.sim_cpu_s = 1.0;
            r.model_cpu_s = model;
            r.model_evaluations = evals;
        }
        assert!((run_speed(&t.records) - 500.0).abs() < 1e-9);
        assert!(
            speed_ratio(f64::NAN, 0.1, 100).is_nan(),
            "the testbed has no pktsim time"
        );
        assert!(speed_ratio(1.0, 0.0, 100).is_nan());
        for r in &mut t.records {
            r.sim_cpu_s = f64::NAN;
        }
        assert!(run_speed(&t.records).is_nan());
    }

    #[test]
    fn metrics_of_a_known_run_are_what_the_definitions_say() {
        // "a" converges at iteration 1 on seed 0 and at 0 on seed 1; "b" never converges.
        let traces = vec![
            trace(
                "a",
                0,
                &[(2.0, 0.5, 2.0), (0.9, 0.5, 0.9), (0.8, 0.4, 0.8), (0.9, 0.9, 0.95)],
            ),
            trace(
                "a",
                1,
                &[(0.5, 0.5, 0.6), (0.9, 0.5, 0.9), (0.8, 0.4, 0.8), (0.5, 0.25, 0.55)],
            ),
            trace(
                "b",
                0,
                &[(2.0, 0.5, 2.0), (1.5, 0.5, 1.5), (0.8, 0.4, 0.8), (1.2, 0.6, 1.2)],
            ),
            trace(
                "b",
                1,
                &[(2.0, 0.5, 2.0), (2.0, 0.5, 2.0), (2.0, 0.5, 2.0), (2.0, 1.0, 2.0)],
            ),
        ];
        let s = summarise(&traces, 30.0);
        assert_eq!(s.len(), 2);
        let (a, b) = (&s[0], &s[1]);
        assert_eq!((a.tuner.as_str(), a.runs, a.converged), ("a", 2, 2));
        assert_eq!(
            (a.convergence.median, a.convergence.min, a.convergence.max),
            (0.5, 0.0, 1.0)
        );
        // 30 s intervals: iteration 1 starts after 0.5 minutes.
        assert_eq!(a.minutes.max, 0.5);
        // Seed 0's reference is 0.8 (reached by both); a: (2.0+0.9+0.8+0.95) − 4·0.8 = 1.45.
        // Seed 1's reference is 0.55 (a); a: 2.85 − 4·0.55 = 0.65; b: 8 − 2.2 = 5.8.
        assert!((a.regret.min - 0.65).abs() < 1e-9 && (a.regret.max - 1.45).abs() < 1e-9);
        assert!((b.regret.max - 5.8).abs() < 1e-9 && (b.regret.min - (5.5 - 3.2)).abs() < 1e-9);
        assert_eq!((b.converged, b.convergence.median), (0, f64::INFINITY));
        // Fairness of the last interval: a → 0.9/0.9 = 1 and 0.25/0.5 = 0.5.
        assert_eq!((a.fairness.min, a.fairness.max), (0.5, 1.0));
        // Fairness of the per-class means over the (whole, 4-interval) tail: seed 0 → class means
        // 1.15 and 0.575 → 0.5; seed 1 → 0.675 and 0.4125 → 0.611.
        assert!((a.tail_fairness.min - 0.5).abs() < 1e-9, "{:?}", a.tail_fairness);
        assert!(
            (a.tail_fairness.max - 0.4125 / 0.675).abs() < 1e-9,
            "{:?}",
            a.tail_fairness
        );
        assert_eq!(a.final_objective.median, 0.5 * (0.95 + 0.55));
        // b misses an SLO in 3 (seed 0) and 4 (seed 1) intervals.
        assert_eq!((b.violations.min, b.violations.max), (3.0, 4.0));
        let md = markdown(&s);
        assert!(md.contains("| a | 2/2 | 0 (0–1) | 0.2 (0.0–0.5) |"), "{md}");
        assert!(md.contains("| b | 0/2 | never | never |"), "{md}");
    }

    #[test]
    fn tail_fairness_averages_each_class_over_the_last_intervals_and_skips_unmeasured_ones() {
        // Per interval the classes swap places (fairness 0.5 each time), but on average they
        // are even: the tail fairness is 1.
        let swap = vec![vec![0.4, 0.8], vec![0.8, 0.4], vec![0.4, 0.8], vec![0.8, 0.4]];
        assert!((tail_fairness(&swap, 4) - 1.0).abs() < 1e-12);
        // Only the last `last` intervals count: the early 5.0 is outside the tail.
        let late = vec![vec![5.0, 0.5], vec![0.5, 0.25], vec![0.5, 0.25]];
        assert!((tail_fairness(&late, 2) - 0.5).abs() < 1e-12);
        // A class unmeasured in an interval (NaN) is averaged over the intervals it was measured.
        let gap = vec![vec![f64::NAN, 0.5], vec![0.25, 0.5]];
        assert!((tail_fairness(&gap, 10) - 0.5).abs() < 1e-12);
        // Nothing measured: NaN ("–" in the table), not a number that looks like a result.
        assert!(tail_fairness(&[vec![f64::NAN, f64::NAN]], 10).is_nan());
        assert!(tail_fairness(&[], 10).is_nan());
    }

    #[test]
    fn noise_fairness_divides_out_each_class_mean_and_takes_the_median_interval() {
        // Class 1 is always twice class 0: unfair in expectation but noise-free, so 1.
        let steady = vec![vec![0.2, 0.4], vec![0.3, 0.6], vec![0.1, 0.2]];
        assert!((noise_fairness(&steady, 3) - 1.0).abs() < 1e-12);
        // Classes swapping 0.4 / 0.8 have mean 0.6 each: every interval 0.4/0.8 = 0.5.
        let swap = vec![vec![0.4, 0.8], vec![0.8, 0.4]];
        assert!((noise_fairness(&swap, 2) - 0.5).abs() < 1e-12);
        // An interval with an unmeasured class is left out; nothing measured is NaN.
        let gap = vec![vec![f64::NAN, 0.6], vec![0.4, 0.8], vec![0.8, 0.4]];
        assert!((noise_fairness(&gap, 3) - 0.5).abs() < 1e-12);
        assert!(noise_fairness(&[], 3).is_nan());
    }

    #[test]
    fn a_class_without_flows_is_not_judged_and_a_skipped_interval_not_in_the_regret() {
        // Interval 1: class 0 finished no flow, class 1 met its SLO → compliant, not in the regret.
        let mut t = trace("a", 0, &[(0.5, 0.5, 0.6), (0.5, 0.5, 0.6), (0.5, 0.5, 0.6)]);
        t.records[1].ratios = vec![f64::NAN, 0.5];
        t.records[1].objective = f64::NAN;
        let s = summarise(&[t.clone()], 12.0);
        assert_eq!(s[0].converged, 1);
        assert_eq!(s[0].violations.median, 0.0);
        assert_eq!(s[0].regret.median, 0.0);
        // The measured class missed its SLO → a violation.
        t.records[1].ratios = vec![f64::NAN, 1.5];
        let s = summarise(&[t.clone()], 12.0);
        assert_eq!((s[0].converged, s[0].violations.median), (0, 1.0));
        // No class measured at all: no evidence of compliance → a violation.
        t.records[1].ratios = vec![f64::NAN, f64::NAN];
        let s = summarise(&[t], 12.0);
        assert_eq!((s[0].converged, s[0].violations.median), (0, 1.0));
    }

    #[test]
    fn csv_has_one_line_per_iteration_and_the_class_columns() {
        let sc = Scenario {
            name: "t".into(),
            description: String::new(),
            seed: 1,
            interval_s: 12.0,
            topology: polyphony_spec::TopologySpec::Dumbbell {
                senders: 2,
                rate_mbps: 100.0,
                link_delay_us: 2.5,
            },
            classes: vec![
                TrafficClass::new("AF11", Dscp::AF11, 10.0),
                TrafficClass::new("AF21", Dscp::AF21, 20.0),
            ],
            mix: vec![],
            phases: vec![],
            initial: None,
            knobs: None,
        };
        let res = ScenarioResult {
            label: "x".into(),
            scenario: sc,
            traces: vec![trace("a", 0, &[(2.0, 0.5, 2.0), (0.9, 0.5, 0.9)])],
        };
        let csv = iterations_csv(&res);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0].contains("p99_AF11,p99_AF21,ratio_AF11,ratio_AF21,model_ratio_AF11,model_ratio_AF21,weight_AF11")
        );
        // The model's ratios follow the measured ones; a class it saw no flow of is NaN.
        assert!(
            lines[2].starts_with(
                "x,a,0,1,0.200,9.0000,10.0000,0.9000,0.5000,0.4500,NaN,0.5000,0.5000,30000,30000,10,10,0.9000"
            ),
            "{}",
            lines[2]
        );
        // Warm-up windows come first, numbered −W … −1, and change no metric.
        let mut with = res.clone();
        let warm = trace("a", 0, &[(3.0, 3.0, 5.0), (0.1, 0.1, 0.2)]);
        with.traces[0].warmup = warm.records;
        let csv = iterations_csv(&with);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(lines[1].starts_with("x,a,0,-2,-0.400,30.0000"), "{}", lines[1]);
        assert!(lines[2].starts_with("x,a,0,-1,-0.200,1.0000"), "{}", lines[2]);
        assert!(lines[3].starts_with("x,a,0,0,0.000,20.0000"), "{}", lines[3]);
        let a = summarise(&res.traces, 12.0);
        let b = summarise(&with.traces, 12.0);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn scenarios_with_other_classes_merge_under_one_header() {
        let a = "scenario,tuner,p99_c0,p99_c1,ratio_c0,ratio_c1,reason\nx,p,1,2,0.1,0.2,\"a, b\"\n".to_string();
        let b = "scenario,tuner,p99_c0,p99_c1,p99_c2,ratio_c0,ratio_c1,ratio_c2,reason\ny,p,3,4,5,0.3,0.4,0.5,c\n"
            .to_string();
        let m = merge_csv("t.csv", &[a.clone(), b]).unwrap();
        let mut lines = m.lines();
        assert_eq!(
            lines.next(),
            Some("scenario,tuner,p99_c0,p99_c1,p99_c2,ratio_c0,ratio_c1,ratio_c2,reason")
        );
        assert_eq!(lines.next(), Some("x,p,1,2,,0.1,0.2,,\"a, b\""));
        assert_eq!(lines.next(), Some("y,p,3,4,5,0.3,0.4,0.5,c"));
        // The same header everywhere: the parts concatenated as written.
        let a2 = "scenario,tuner,p99_c0,p99_c1,ratio_c0,ratio_c1,reason\nz,p,1,2,0.1,0.2,\"q\"\n".to_string();
        assert_eq!(
            merge_csv("t.csv", &[a.clone(), a2]).unwrap(),
            format!("{a}z,p,1,2,0.1,0.2,\"q\"\n")
        );
    }
}
