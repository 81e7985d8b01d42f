//! How many scale scenarios can converge at all? A configuration search in pktsim on the scale
//! study's own scenarios ([`crate::scale::plan`], the same SLOs and reference), independent of
//! any tuner.
//!
//! A run converges when three consecutive 50 ms intervals meet every SLO within its ten
//! control intervals ([`crate::report::CONVERGENCE_K`]); a scenario counts when more than
//! half of its runs do. Each interval is a fresh workload sample, so even a tuner that held
//! the best configuration from the first interval converges only with the probability that a
//! run of three compliant windows occurs among ten — a ceiling no controller can pass. This
//! module estimates it per scenario:
//!
//! 1. **Candidates** per cell (a high and a low scenario share everything but the SLOs): the
//!    reference the SLOs were measured from, `random` random configurations of the knob space,
//!    and the `ranked` best of `pool` random configurations by flowsim's mean over the
//!    screening windows of the worst class's p99 / SLO.
//! 2. **Screening**: pktsim replays every candidate on the same `screen_windows` interval-long
//!    windows; per tightness, the candidate compliant in the most windows (ties: lower mean
//!    worst ratio) is that scenario's best.
//! 3. **Confirmation**: the best of each tightness and the reference on `confirm_windows` fresh
//!    windows (so the best's rate is not the maximum of noisy screening rates); the confirmed
//!    per-window compliance rate `p` gives P(converge) = P(some run of three compliant windows
//!    among ten Bernoulli(`p`) windows) ([`p_converge`]).
//!
//! Window seeds are disjoint from the baseline's and from every run's (their own salts).
//! Pure computation (pktsim, flowsim); no I/O.

use crate::ground::{mix, PktsimGround, ScenarioTraffic};
use crate::report::{slos_met, CONVERGENCE_K};
use crate::studies::Planned;
use crate::EvalError;
use polyphony_core::Space;
use polyphony_model::{FlowSim, NetworkModel};
use polyphony_spec::{Nanos, NetworkConfig, SliVector, Workload};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use std::sync::Arc;

/// How the search runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CeilingOptions {
    /// Random configurations replayed as drawn.
    pub random: usize,
    /// Random configurations flowsim ranks for the `ranked` candidates.
    pub pool: usize,
    /// Candidates taken from the top of flowsim's ranking.
    pub ranked: usize,
    /// Windows every candidate is replayed on.
    pub screen_windows: usize,
    /// Fresh windows the best and the reference are replayed on.
    pub confirm_windows: usize,
    /// Control intervals of a run (the scale study: 10).
    pub intervals: usize,
    /// Seed of the candidates and windows.
    pub seed: u64,
}

impl Default for CeilingOptions {
    fn default() -> Self {
        CeilingOptions {
            random: 12,
            pool: 512,
            ranked: 12,
            screen_windows: 10,
            confirm_windows: 20,
            intervals: 10,
            seed: 0,
        }
    }
}

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The configuration the SLOs were measured from (what `near-optimal` holds).
    Reference,
    /// Drawn at random from the knob space.
    Random,
    /// Among flowsim's best of the random pool.
    Ranked,
}

impl Origin {
    /// `reference`, `random` or `flowsim-ranked`.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Reference => "reference",
            Origin::Random => "random",
            Origin::Ranked => "flowsim-ranked",
        }
    }
}

/// One candidate's screening.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Where it came from.
    pub origin: Origin,
    /// The configuration.
    pub config: NetworkConfig,
    /// Per scenario of the cell (high, low): screening windows in which every SLO held.
    pub screen_met: Vec<usize>,
    /// Per scenario of the cell: mean over the screening windows of the worst class's ratio.
    pub screen_worst: Vec<f64>,
}

/// The search's verdict on one scenario.
#[derive(Debug, Clone)]
pub struct ScenarioCeiling {
    /// The scenario's label.
    pub label: String,
    /// Its SLOs, in class order.
    pub slos: Vec<f64>,
    /// Index into the cell's candidates of the best by screening.
    pub best: usize,
    /// Confirmation windows the best met every SLO in.
    pub best_met: usize,
    /// Confirmation windows the reference met every SLO in.
    pub reference_met: usize,
    /// Confirmation windows (the denominator of both).
    pub windows: usize,
    /// Screening windows (the denominator of the candidates' `screen_met`).
    pub screen_windows: usize,
}

impl ScenarioCeiling {
    /// The best's confirmed per-window compliance rate.
    pub fn best_rate(&self) -> f64 {
        self.best_met as f64 / self.windows.max(1) as f64
    }
    /// The reference's confirmed per-window compliance rate.
    pub fn reference_rate(&self) -> f64 {
        self.reference_met as f64 / self.windows.max(1) as f64
    }
}

/// One cell: its candidates and the verdict on each of its scenarios.
#[derive(Debug, Clone)]
pub struct CellCeiling {
    /// Every candidate, the reference first.
    pub candidates: Vec<Candidate>,
    /// One verdict per scenario of the cell (high, low).
    pub scenarios: Vec<ScenarioCeiling>,
}

/// P(some run of `k` consecutive successes among `n` independent trials that each succeed with
/// probability `p`): the chance a tuner holding a configuration with per-window compliance rate
/// `p` from the first interval converges within `n` intervals.
pub fn p_converge(p: f64, n: usize, k: usize) -> f64 {
    let p = p.clamp(0.0, 1.0);
    let k = k.max(1);
    // streak[j]: probability of no run of k yet, with the current streak at j.
    let mut streak = vec![0.0; k];
    streak[0] = 1.0;
    let mut done = 0.0;
    for _ in 0..n {
        let mut next = vec![0.0; k];
        for (j, &q) in streak.iter().enumerate() {
            next[0] += q * (1.0 - p);
            if j + 1 == k {
                done += q * p;
            } else {
                next[j + 1] += q * p;
            }
        }
        streak = next;
    }
    done
}

/// P(more than half of `runs` independent runs converge), each with probability `q`.
pub fn p_majority(q: f64, runs: usize) -> f64 {
    let mut total = 0.0;
    for m in (runs / 2 + 1)..=runs {
        total += binomial(runs, m) * q.powi(m as i32) * (1.0 - q).powi((runs - m) as i32);
    }
    total
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Per class p99 / SLO of one window (NaN where the class finished no flow).
fn ratios(sli: &SliVector, planned: &Planned) -> Vec<f64> {
    planned
        .scenario
        .classes
        .iter()
        .map(|c| sli.get(c.dscp).map_or(f64::NAN, |s| s.p99 / c.slo.threshold()))
        .collect()
}

fn met(r: &[f64]) -> bool {
    slos_met(&r.iter().copied().filter(|x| !x.is_nan()).collect::<Vec<_>>())
}

fn worst(r: &[f64]) -> f64 {
    r.iter().copied().filter(|x| !x.is_nan()).fold(0.0, f64::max)
}

/// `n` interval-long windows of `traffic` drawn with `salt`'s seeds.
fn windows(traffic: &ScenarioTraffic, n: usize, seed: u64, salt: u64) -> Result<Vec<Arc<Workload>>, EvalError> {
    let len = traffic.scenario.interval();
    (0..n as u64)
        .map(|k| {
            Ok(Arc::new(traffic.window(
                Nanos(0),
                len,
                mix(seed ^ salt ^ mix(k + 1)),
            )?))
        })
        .collect()
}

/// The search on one cell: `cell` holds its scenarios (the scale study's high and low, which
/// differ only in their SLOs); `progress` is called once per pktsim replay.
pub fn search_cell(
    cell: &[Planned],
    opts: &CeilingOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<CellCeiling, EvalError> {
    let first = cell
        .first()
        .ok_or_else(|| EvalError::Usage("scale ceiling: a cell without scenarios".into()))?;
    let reference = first.reference.clone().ok_or_else(|| {
        EvalError::Usage(format!(
            "scale ceiling: scenario {} has no reference configuration (plan it with scale::plan)",
            first.label
        ))
    })?;
    let traffic = ScenarioTraffic::new(first.scenario.clone(), first.matrix)?;
    let ground = PktsimGround::new(traffic.clone(), opts.seed);
    let screen = windows(&traffic, opts.screen_windows, opts.seed, 0x5C4E_E75E)?;
    let confirm = windows(&traffic, opts.confirm_windows, opts.seed, 0xC0F1_A7ED)?;

    // Candidates: the reference, random draws, flowsim's best of a random pool.
    let space = Space::new(&first.knobs, None).map_err(|e| EvalError::Scenario(e.to_string()))?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix(opts.seed ^ 0xD1CE));
    let mut draw = || {
        let z = crate::tuners::random_z(&space, &mut rng, 2.0);
        space
            .config_of(&space.point_of(&z), &first.start)
            .map_err(|e| EvalError::Scenario(e.to_string()))
    };
    let mut candidates = vec![(Origin::Reference, reference)];
    for _ in 0..opts.random {
        candidates.push((Origin::Random, draw()?));
    }
    let pool: Vec<NetworkConfig> = (0..opts.pool).map(|_| draw()).collect::<Result<_, _>>()?;
    let mut predicted = vec![0.0; pool.len()];
    for w in &screen {
        let input = traffic.context.input(w.clone(), opts.seed);
        for (i, r) in FlowSim::default().evaluate(&input, &pool).into_iter().enumerate() {
            predicted[i] += r.map_or(f64::INFINITY, |o| worst(&ratios(&o.sli, first)));
        }
    }
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.sort_by(|&a, &b| predicted[a].total_cmp(&predicted[b]));
    candidates.extend(
        order
            .into_iter()
            .take(opts.ranked)
            .map(|i| (Origin::Ranked, pool[i].clone())),
    );

    // Screening: every candidate on the same windows.
    let jobs: Vec<(usize, usize)> = (0..candidates.len())
        .flat_map(|c| (0..screen.len()).map(move |w| (c, w)))
        .collect();
    let slis: Vec<SliVector> = jobs
        .par_iter()
        .map(|&(c, w)| {
            let r = ground.replay(screen[w].clone(), &candidates[c].1, w as u64);
            progress();
            r
        })
        .collect::<Result<_, _>>()?;
    let mut scored: Vec<Candidate> = candidates
        .into_iter()
        .map(|(origin, config)| Candidate {
            origin,
            config,
            screen_met: vec![0; cell.len()],
            screen_worst: vec![0.0; cell.len()],
        })
        .collect();
    for (&(c, _), sli) in jobs.iter().zip(&slis) {
        for (s, planned) in cell.iter().enumerate() {
            let r = ratios(sli, planned);
            scored[c].screen_met[s] += usize::from(met(&r));
            scored[c].screen_worst[s] += worst(&r) / screen.len().max(1) as f64;
        }
    }

    // Confirmation: the best of each scenario and the reference on fresh windows.
    let best: Vec<usize> = (0..cell.len())
        .map(|s| {
            (0..scored.len())
                .max_by(|&a, &b| {
                    scored[a].screen_met[s]
                        .cmp(&scored[b].screen_met[s])
                        .then(scored[b].screen_worst[s].total_cmp(&scored[a].screen_worst[s]))
                })
                .unwrap_or(0)
        })
        .collect();
    let mut confirmed: Vec<usize> = vec![0];
    for &b in &best {
        if !confirmed.contains(&b) {
            confirmed.push(b);
        }
    }
    let jobs: Vec<(usize, usize)> = confirmed
        .iter()
        .flat_map(|&c| (0..confirm.len()).map(move |w| (c, w)))
        .collect();
    let slis: Vec<SliVector> = jobs
        .par_iter()
        .map(|&(c, w)| {
            let r = ground.replay(confirm[w].clone(), &scored[c].config, 0xC0F1_A7ED ^ w as u64);
            progress();
            r
        })
        .collect::<Result<_, _>>()?;
    let met_in = |candidate: usize, planned: &Planned| {
        jobs.iter()
            .zip(&slis)
            .filter(|((c, _), sli)| *c == candidate && met(&ratios(sli, planned)))
            .count()
    };
    let scenarios = cell
        .iter()
        .zip(&best)
        .map(|(planned, &b)| ScenarioCeiling {
            label: planned.label.clone(),
            slos: planned.scenario.classes.iter().map(|c| c.slo.threshold()).collect(),
            best: b,
            best_met: met_in(b, planned),
            reference_met: met_in(0, planned),
            windows: confirm.len(),
            screen_windows: screen.len(),
        })
        .collect();
    Ok(CellCeiling {
        candidates: scored,
        scenarios,
    })
}

/// Replays one cell needs (for a progress bar): screening plus at most three confirmations.
pub fn replays_per_cell(opts: &CeilingOptions) -> u64 {
    ((1 + opts.random + opts.ranked) * opts.screen_windows + 3 * opts.confirm_windows) as u64
}

/// The summary page: per scenario the reference's and the best's confirmed rates and the
/// probabilities they imply; `command` and `provenance` head it.
pub fn summary(cells: &[CellCeiling], opts: &CeilingOptions, runs: usize, command: &str, provenance: &str) -> String {
    use std::fmt::Write;
    let all: Vec<(&CellCeiling, &ScenarioCeiling)> = cells
        .iter()
        .flat_map(|c| c.scenarios.iter().map(move |s| (c, s)))
        .collect();
    let conv = |rate: f64| p_converge(rate, opts.intervals, CONVERGENCE_K);
    let count = |f: &dyn Fn(&ScenarioCeiling) -> f64| {
        let reachable = all.iter().filter(|(_, s)| conv(f(s)) > 0.5).count();
        let expected: f64 = all.iter().map(|(_, s)| p_majority(conv(f(s)), runs)).sum();
        (reachable, expected)
    };
    let (best_n, best_e) = count(&|s| s.best_rate());
    let (ref_n, ref_e) = count(&|s| s.reference_rate());
    let n = all.len();
    let mut s = String::from("# Scale study: how many scenarios can converge at all\n\n");
    let _ = writeln!(
        s,
        "* best configuration found: scenarios where holding it from the first interval converges in more than half of runs: {best_n}/{n}; expected scenarios converged with {runs} runs each: {best_e:.1}"
    );
    let _ = writeln!(
        s,
        "* reference (near-optimal) configuration: {ref_n}/{n}; expected with {runs} runs each: {ref_e:.1}\n"
    );
    let _ = writeln!(s, "Regenerate:\n\n```\n{command}\n```\n\n{provenance}\n");
    let _ = writeln!(
        s,
        "Per cell {} candidates (the reference, {} random, flowsim's best {} of {} random) on {} screening windows; the best per scenario and the reference confirmed on {} fresh windows. P(converge) = P(a run of {} compliant windows among {}) at the confirmed rate; P(majority) = P(more than half of {} runs converge).\n",
        1 + opts.random + opts.ranked,
        opts.random,
        opts.ranked,
        opts.pool,
        opts.screen_windows,
        opts.confirm_windows,
        CONVERGENCE_K,
        opts.intervals,
        runs
    );
    s += "| scenario | SLOs | reference: compliant windows · P(converge) | best: origin · screening · confirmed · P(converge) · P(majority) | best's knobs (weight / K kB / initcwnd per class) |\n|---|---|---|---|---|\n";
    for (cell, sc) in &all {
        let b = &cell.candidates[sc.best];
        let knobs: Vec<String> = b
            .config
            .classes
            .iter()
            .map(|c| {
                format!(
                    "{:.2}/{:.0}/{}",
                    c.weight,
                    c.ecn_threshold.0 as f64 / 1000.0,
                    c.init_cwnd.0
                )
            })
            .collect();
        let which = cell.scenarios.iter().position(|x| x.label == sc.label).unwrap_or(0);
        let _ = writeln!(
            s,
            "| {} | {} | {}/{} · {:.2} | {} · {}/{} · {}/{} · {:.2} · {:.2} | {} |",
            sc.label,
            sc.slos
                .iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(" / "),
            sc.reference_met,
            sc.windows,
            conv(sc.reference_rate()),
            b.origin.name(),
            b.screen_met[which],
            sc.screen_windows,
            sc.best_met,
            sc.windows,
            conv(sc.best_rate()),
            p_majority(conv(sc.best_rate()), runs),
            knobs.join(", ")
        );
    }
    s
}

/// Every candidate's screening, one row per (scenario, candidate).
pub fn candidates_csv(cells: &[CellCeiling]) -> String {
    use std::fmt::Write;
    let mut s = String::from("scenario,candidate,origin,screen_met,screen_windows,screen_mean_worst_ratio,knobs\n");
    for cell in cells {
        for (k, sc) in cell.scenarios.iter().enumerate() {
            for (i, c) in cell.candidates.iter().enumerate() {
                let knobs: Vec<String> = c
                    .config
                    .classes
                    .iter()
                    .map(|c| format!("{:.4}/{}/{}", c.weight, c.ecn_threshold.0, c.init_cwnd.0))
                    .collect();
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{:.4},{}",
                    sc.label,
                    i,
                    c.origin.name(),
                    c.screen_met[k],
                    sc.screen_windows,
                    c.screen_worst[k],
                    knobs.join(" ")
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale::{self, ScaleOptions};

    #[test]
    fn p_converge_counts_runs_of_three() {
        assert_eq!(p_converge(1.0, 10, 3), 1.0);
        assert_eq!(p_converge(0.0, 10, 3), 0.0);
        assert_eq!(p_converge(1.0, 2, 3), 0.0, "two windows cannot hold a run of three");
        // Three fair coins: only HHH. Four: HHHx and THHH.
        assert!((p_converge(0.5, 3, 3) - 0.125).abs() < 1e-12);
        assert!((p_converge(0.5, 4, 3) - 3.0 / 16.0).abs() < 1e-12);
        // Ten fair coins: 1024 − 504 sequences without a run of three (tribonacci count).
        assert!((p_converge(0.5, 10, 3) - 520.0 / 1024.0).abs() < 1e-12);
    }

    #[test]
    fn p_majority_of_three_is_two_or_three() {
        let q: f64 = 0.3;
        let want = q.powi(3) + 3.0 * q * q * (1.0 - q);
        assert!((p_majority(q, 3) - want).abs() < 1e-12);
        assert!((p_majority(0.5, 3) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn a_small_cell_screens_every_candidate_and_confirms_the_reference() {
        let so = ScaleOptions {
            racks: 4,
            hosts_per_rack: 2,
            candidates: 3,
            baseline_windows: 2,
            cells: 1,
            ..ScaleOptions::default()
        };
        let planned = scale::plan(&so, 0, &|_| {}).expect("plan");
        let opts = CeilingOptions {
            random: 2,
            pool: 8,
            ranked: 2,
            screen_windows: 3,
            confirm_windows: 4,
            ..CeilingOptions::default()
        };
        let replays = std::sync::atomic::AtomicU64::new(0);
        let cell = search_cell(&planned, &opts, &|| {
            replays.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .expect("search");
        assert_eq!(cell.candidates.len(), 5);
        assert_eq!(cell.candidates[0].origin, Origin::Reference);
        assert_eq!(Some(&cell.candidates[0].config), planned[0].reference.as_ref());
        assert_eq!(cell.scenarios.len(), 2);
        let confirmed = 1 + cell
            .scenarios
            .iter()
            .map(|s| s.best)
            .filter(|b| *b != 0)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let n = replays.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(n, (5 * 3 + confirmed * 4) as u64);
        assert!(n <= replays_per_cell(&opts));
        for (s, sc) in cell.scenarios.iter().enumerate() {
            assert_eq!(sc.windows, 4);
            let b = &cell.candidates[sc.best];
            // The best screened at least as many compliant windows as any other candidate.
            assert!(cell.candidates.iter().all(|c| c.screen_met[s] <= b.screen_met[s]));
            assert!(sc.best_met <= 4 && sc.reference_met <= 4);
        }
        // Looser SLOs (low) can only meet more windows than the tight ones with the same candidate.
        for c in &cell.candidates {
            assert!(c.screen_met[1] >= c.screen_met[0]);
        }
        let page = summary(std::slice::from_ref(&cell), &opts, 3, "cmd", "prov");
        assert!(page.contains("/2; expected"), "{page}");
        assert_eq!(candidates_csv(&[cell]).lines().count(), 1 + 2 * 5);
    }
}
