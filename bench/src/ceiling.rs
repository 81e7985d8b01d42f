//! What the best configuration reaches on pktsim, independent of any tuner: a configuration
//! search on a study's own scenarios and SLOs (the scale study's, [`crate::scale::plan`], or the
//! tightness levels of a dumbbell, [`crate::studies::plan`]).
//!
//! A run converges when three consecutive intervals meet every SLO within its control
//! intervals ([`crate::report::CONVERGENCE_K`]); a scale scenario counts when more than half of
//! its runs do. Each interval is a fresh workload sample, so even a tuner that held the best
//! configuration from the first interval converges only with the probability that a run of
//! three compliant windows occurs among them — a ceiling no controller can pass. Likewise a
//! fairness (min r / max r over classes) no configuration reaches in a window is beyond every
//! tuner. Per group of scenarios that share their traffic (a scale cell's high and low; a
//! dumbbell's levels):
//!
//! 1. **Candidates**: the scenario's reference (the configuration the scale SLOs were measured
//!    from) or, without one, the default configuration; `random` random configurations of the
//!    knob space; the `ranked` best of `pool` random configurations by flowsim's mean over the
//!    screening windows of the worst class's p99 / SLO (against the first scenario); and the
//!    `fair_ranked` fairest of those flowsim predicts compliant in at least half the windows.
//! 2. **Screening**: pktsim replays every candidate on the same `screen_windows` interval-long
//!    windows. Per scenario the *best* is the candidate compliant in the most windows (ties:
//!    lower mean worst ratio); the *fairest* is the one with the highest mean per-window
//!    fairness among those compliant in at least half the windows.
//!    With `refine_rounds` > 0, a local search on pktsim follows per goal in `refine_goals`
//!    ([`RefineGoal`]): from the screened candidate that scores best, each round replays
//!    `refine_batch` Gaussian perturbations of its incumbent on the same screening windows (so
//!    they are compared on the same arrivals) and keeps the best if it scores higher; every
//!    perturbation joins the candidates the choices are made from.
//! 3. **Confirmation**: the first candidate and every best and fairest on `confirm_windows` fresh
//!    windows, so a chosen candidate's numbers are not the maximum of noisy screening numbers.
//!    A confirmed per-window compliance rate `p` gives P(converge) = P(some run of three
//!    compliant windows among the run's intervals, each Bernoulli(`p`)) ([`p_converge`]).
//!
//! Window seeds are disjoint from the scale baseline's and from every run's (their own salts).
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
    /// Candidates taken from flowsim's fairest of the pool (among those it predicts compliant
    /// in at least half the screening windows; none already ranked).
    pub fair_ranked: usize,
    /// Windows every candidate is replayed on.
    pub screen_windows: usize,
    /// Fresh windows the chosen candidates (first, best, fairest) are replayed on.
    pub confirm_windows: usize,
    /// Control intervals of a run (the scale study: 10).
    pub intervals: usize,
    /// Seed of the candidates and windows.
    pub seed: u64,
    /// Rounds of the pktsim-driven local search from the screened candidates (0: none).
    pub refine_rounds: usize,
    /// Perturbations of the incumbent replayed per round of the local search.
    pub refine_batch: usize,
    /// What the local search looks for (each goal one search per group).
    pub refine_goals: Vec<RefineGoal>,
}

impl Default for CeilingOptions {
    fn default() -> Self {
        CeilingOptions {
            random: 12,
            pool: 512,
            ranked: 12,
            fair_ranked: 0,
            screen_windows: 10,
            confirm_windows: 20,
            intervals: 10,
            seed: 0,
            refine_rounds: 0,
            refine_batch: 8,
            refine_goals: vec![RefineGoal::Compliance, RefineGoal::Fairness],
        }
    }
}

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The configuration the SLOs were measured from (what `near-optimal` holds).
    Reference,
    /// The scenario's default configuration (a scenario without a reference).
    Default,
    /// Drawn at random from the knob space.
    Random,
    /// Among flowsim's best of the random pool.
    Ranked,
    /// Among flowsim's fairest of the pool configurations it predicts compliant in at least
    /// half the screening windows.
    FairRanked,
    /// Found by the pktsim-driven local search for the most compliant configuration.
    RefinedBest,
    /// Found by the pktsim-driven local search for the fairest half-compliant configuration.
    RefinedFair,
}

impl Origin {
    /// `reference`, `default`, `random`, `flowsim-ranked`, `flowsim-fairest`,
    /// `pktsim-refined-best` or `pktsim-refined-fairest`.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Reference => "reference",
            Origin::Default => "default",
            Origin::Random => "random",
            Origin::Ranked => "flowsim-ranked",
            Origin::FairRanked => "flowsim-fairest",
            Origin::RefinedBest => "pktsim-refined-best",
            Origin::RefinedFair => "pktsim-refined-fairest",
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
    /// Per scenario of the cell: mean over the screening windows of min r / max r.
    pub screen_fair: Vec<f64>,
}

/// A candidate on the confirmation windows, judged against one scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confirmed {
    /// Index into the group's candidates.
    pub candidate: usize,
    /// Windows in which every SLO held.
    pub met: usize,
    /// Mean over the windows of min r / max r.
    pub fairness: f64,
    /// min / max over classes of each class's mean r over the windows
    /// ([`crate::report::tail_fairness`] over all of them; NaN when no class was measured).
    pub mean_r_fairness: f64,
}

/// The search's verdict on one scenario.
#[derive(Debug, Clone)]
pub struct ScenarioCeiling {
    /// The scenario's label.
    pub label: String,
    /// Its SLOs, in class order.
    pub slos: Vec<f64>,
    /// The first candidate (reference or default) on the confirmation windows.
    pub first: Confirmed,
    /// The candidate compliant in the most screening windows, confirmed.
    pub best: Confirmed,
    /// The fairest candidate compliant in at least half the screening windows, confirmed;
    /// `None` when no candidate was.
    pub fairest: Option<Confirmed>,
    /// Confirmation windows (the denominator of every `met`).
    pub windows: usize,
    /// Screening windows (the denominator of the candidates' `screen_met`).
    pub screen_windows: usize,
}

impl ScenarioCeiling {
    /// A confirmed candidate's per-window compliance rate.
    pub fn rate(&self, c: &Confirmed) -> f64 {
        c.met as f64 / self.windows.max(1) as f64
    }
}

/// One cell: its candidates and the verdict on each of its scenarios.
#[derive(Debug, Clone)]
pub struct CellCeiling {
    /// Every candidate, the reference (or the default) first.
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

/// min r / max r over the measured classes (0 when none was measured).
fn fairness(r: &[f64]) -> f64 {
    let v: Vec<f64> = r.iter().copied().filter(|x| !x.is_nan()).collect();
    polyphony_core::evaluation::min_max_fairness(&v)
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

/// The search on one group of scenarios that differ only in their SLOs (a scale cell's high
/// and low, a dumbbell's levels); `progress` is called once per pktsim replay.
pub fn search_cell(
    cell: &[Planned],
    opts: &CeilingOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<CellCeiling, EvalError> {
    let first = cell
        .first()
        .ok_or_else(|| EvalError::Usage("ceiling: a group without scenarios".into()))?;
    if let Some(other) = cell.iter().find(|p| !same_traffic(p, first)) {
        return Err(EvalError::Usage(format!(
            "ceiling: scenarios {} and {} differ in more than their SLOs (traffic, topology, knobs or matrix); search them in separate groups",
            first.label, other.label
        )));
    }
    let traffic = ScenarioTraffic::new(first.scenario.clone(), first.matrix)?;
    let ground = PktsimGround::new(traffic.clone(), opts.seed);
    let screen = windows(&traffic, opts.screen_windows, opts.seed, 0x5C4E_E75E)?;
    let confirm = windows(&traffic, opts.confirm_windows, opts.seed, 0xC0F1_A7ED)?;

    // Candidates: the reference (else the default), random draws, flowsim's picks from a pool.
    let space = Space::new(&first.knobs, None).map_err(|e| EvalError::Scenario(e.to_string()))?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix(opts.seed ^ 0xD1CE));
    let mut draw = || {
        let z = crate::tuners::random_z(&space, &mut rng, 2.0);
        space
            .config_of(&space.point_of(&z), &first.start)
            .map_err(|e| EvalError::Scenario(e.to_string()))
    };
    let mut candidates = vec![match &first.reference {
        Some(r) => (Origin::Reference, r.clone()),
        None => (Origin::Default, first.start.clone()),
    }];
    for _ in 0..opts.random {
        candidates.push((Origin::Random, draw()?));
    }
    let pool: Vec<NetworkConfig> = (0..opts.pool).map(|_| draw()).collect::<Result<_, _>>()?;
    // flowsim per pool configuration: summed worst ratio, windows it meets the first
    // scenario's SLOs in, summed fairness.
    let mut predicted = vec![(0.0, 0usize, 0.0); pool.len()];
    for w in &screen {
        let input = traffic.context.input(w.clone(), opts.seed);
        for (i, r) in FlowSim::default().evaluate(&input, &pool).into_iter().enumerate() {
            let r = r.map_or_else(|_| vec![f64::INFINITY], |o| ratios(&o.sli, first));
            predicted[i].0 += worst(&r);
            predicted[i].1 += usize::from(met(&r));
            predicted[i].2 += fairness(&r);
        }
    }
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.sort_by(|&a, &b| predicted[a].0.total_cmp(&predicted[b].0));
    let ranked: Vec<usize> = order.iter().copied().take(opts.ranked).collect();
    // The fairest by flowsim among those it predicts compliant in at least half the windows.
    let mut fair: Vec<usize> = (0..pool.len())
        .filter(|i| 2 * predicted[*i].1 >= screen.len() && !ranked.contains(i))
        .collect();
    fair.sort_by(|&a, &b| predicted[b].2.total_cmp(&predicted[a].2));
    candidates.extend(ranked.iter().map(|&i| (Origin::Ranked, pool[i].clone())));
    candidates.extend(
        fair.into_iter()
            .take(opts.fair_ranked)
            .map(|i| (Origin::FairRanked, pool[i].clone())),
    );

    // Screening: every candidate on the same windows.
    let configs: Vec<&NetworkConfig> = candidates.iter().map(|c| &c.1).collect();
    let all: Vec<usize> = (0..candidates.len()).collect();
    let slis = replay_all(&ground, &configs, &all, &screen, 0, progress)?;
    let mut scored: Vec<Candidate> = candidates
        .into_iter()
        .zip(&slis)
        .map(|((origin, config), s)| screened(cell, origin, config, s))
        .collect();

    // The local search on pktsim, on the same screening windows: for the most compliant and
    // for the fairest half-compliant configuration of the whole group.
    if opts.refine_rounds > 0 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix(opts.seed ^ 0x12EF_14E5));
        for &goal in &opts.refine_goals {
            let found = refine(goal, &scored, cell, &space, &ground, &screen, opts, &mut rng, progress)?;
            scored.extend(found);
        }
    }

    // Choices per scenario: the most often compliant, the fairest of the half-compliant.
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
    let fairest: Vec<Option<usize>> = (0..cell.len())
        .map(|s| {
            (0..scored.len())
                .filter(|&c| 2 * scored[c].screen_met[s] >= screen.len())
                .max_by(|&a, &b| scored[a].screen_fair[s].total_cmp(&scored[b].screen_fair[s]))
        })
        .collect();

    // Confirmation on fresh windows.
    let mut chosen: Vec<usize> = vec![0];
    for c in best.iter().copied().chain(fairest.iter().flatten().copied()) {
        if !chosen.contains(&c) {
            chosen.push(c);
        }
    }
    let configs: Vec<&NetworkConfig> = scored.iter().map(|c| &c.config).collect();
    let slis = replay_all(&ground, &configs, &chosen, &confirm, 0xC0F1_A7ED, progress)?;
    let confirmed = |candidate: usize, planned: &Planned| {
        let k = chosen.iter().position(|&c| c == candidate).unwrap_or(0);
        let r: Vec<Vec<f64>> = slis[k].iter().map(|sli| ratios(sli, planned)).collect();
        Confirmed {
            candidate,
            met: r.iter().filter(|x| met(x)).count(),
            fairness: r.iter().map(|x| fairness(x)).sum::<f64>() / r.len().max(1) as f64,
            mean_r_fairness: crate::report::tail_fairness(&r, r.len()),
        }
    };
    let scenarios = cell
        .iter()
        .enumerate()
        .map(|(s, planned)| ScenarioCeiling {
            label: planned.label.clone(),
            slos: planned.scenario.classes.iter().map(|c| c.slo.threshold()).collect(),
            first: confirmed(0, planned),
            best: confirmed(best[s], planned),
            fairest: fairest[s].map(|c| confirmed(c, planned)),
            windows: confirm.len(),
            screen_windows: screen.len(),
        })
        .collect();
    Ok(CellCeiling {
        candidates: scored,
        scenarios,
    })
}

/// Whether `a` and `b` differ at most in their names and SLOs (so one replay serves both).
fn same_traffic(a: &Planned, b: &Planned) -> bool {
    let strip = |p: &Planned| {
        let mut s = p.scenario.clone();
        s.name.clear();
        s.description.clear();
        for c in &mut s.classes {
            c.slo = polyphony_spec::Slo::p99(1.0);
        }
        s
    };
    strip(a) == strip(b)
        && a.matrix == b.matrix
        && a.start == b.start
        && a.knobs == b.knobs
        && a.reference == b.reference
}

/// pktsim's SLIs of `configs[c]` for every `c` in `which` on every window (outer: `which`'s
/// order), in parallel.
fn replay_all(
    ground: &PktsimGround,
    configs: &[&NetworkConfig],
    which: &[usize],
    windows: &[Arc<Workload>],
    salt: u64,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Vec<SliVector>>, EvalError> {
    let jobs: Vec<(usize, usize)> = which
        .iter()
        .flat_map(|&c| (0..windows.len()).map(move |w| (c, w)))
        .collect();
    let slis: Vec<SliVector> = jobs
        .par_iter()
        .map(|&(c, w)| {
            let r = ground.replay(windows[w].clone(), configs[c], salt ^ w as u64);
            progress();
            r
        })
        .collect::<Result<_, _>>()?;
    Ok(slis.chunks(windows.len().max(1)).map(<[SliVector]>::to_vec).collect())
}

/// A configuration's screening numbers against every scenario of the group.
fn screened(cell: &[Planned], origin: Origin, config: NetworkConfig, slis: &[SliVector]) -> Candidate {
    let n = slis.len().max(1) as f64;
    Candidate {
        origin,
        config,
        screen_met: cell
            .iter()
            .map(|p| slis.iter().filter(|sli| met(&ratios(sli, p))).count())
            .collect(),
        screen_worst: cell
            .iter()
            .map(|p| slis.iter().map(|sli| worst(&ratios(sli, p))).sum::<f64>() / n)
            .collect(),
        screen_fair: cell
            .iter()
            .map(|p| slis.iter().map(|sli| fairness(&ratios(sli, p))).sum::<f64>() / n)
            .collect(),
    }
}

/// What the local search maximises over the group's scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RefineGoal {
    /// Compliant screening windows summed over the scenarios, then the lower summed mean
    /// worst ratio.
    Compliance,
    /// Compliant in at least half the screening windows in every scenario, then the mean over
    /// the scenarios of the mean per-window fairness.
    Fairness,
}

impl RefineGoal {
    /// The candidate's score, compared lexicographically (higher is better).
    fn score(self, c: &Candidate, windows: usize) -> (f64, f64) {
        match self {
            RefineGoal::Compliance => (
                c.screen_met.iter().sum::<usize>() as f64,
                -c.screen_worst.iter().sum::<f64>(),
            ),
            RefineGoal::Fairness => (
                f64::from(u8::from(c.screen_met.iter().all(|&m| 2 * m >= windows))),
                c.screen_fair.iter().sum::<f64>() / c.screen_fair.len().max(1) as f64,
            ),
        }
    }

    fn origin(self) -> Origin {
        match self {
            RefineGoal::Compliance => Origin::RefinedBest,
            RefineGoal::Fairness => Origin::RefinedFair,
        }
    }
}

/// Orders two scores lexicographically.
fn by_score(a: (f64, f64), b: (f64, f64)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
}

/// A (1 + λ) local search (the incumbent stays unless beaten): from the screened candidate
/// that scores best for `goal`, each round replays `refine_batch` Gaussian perturbations of the
/// incumbent (in the optimisation coordinates: hypercube knobs by 0.15, weight logits by 0.5,
/// halved after every round that finds nothing better; categorical knobs kept) on the screening
/// windows, and the best of them replaces the incumbent if it scores higher. Returns every
/// configuration it replayed, so the per-scenario choices and the confirmation see them all.
/// The compliance search does not run where its start met every SLO in every screening window.
#[allow(clippy::too_many_arguments)]
fn refine(
    goal: RefineGoal,
    scored: &[Candidate],
    cell: &[Planned],
    space: &Space,
    ground: &PktsimGround,
    screen: &[Arc<Workload>],
    opts: &CeilingOptions,
    rng: &mut Xoshiro256PlusPlus,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Candidate>, EvalError> {
    use rand_distr::{Distribution, StandardNormal};
    let n = screen.len();
    let Some(start) = (0..scored.len()).max_by(|&a, &b| by_score(goal.score(&scored[a], n), goal.score(&scored[b], n)))
    else {
        return Ok(Vec::new());
    };
    // Nothing to gain on the count where the start already met every scenario's SLOs in every
    // screening window.
    if goal == RefineGoal::Compliance && scored[start].screen_met.iter().all(|&m| m == n) {
        return Ok(Vec::new());
    }
    let base = &cell[0].start;
    let scenario = |e: polyphony_core::CoreError| EvalError::Scenario(e.to_string());
    let mut incumbent = scored[start].config.clone();
    let mut best = goal.score(&scored[start], n);
    let mut z = space.opt_of(&space.point_of_config(&incumbent).map_err(scenario)?);
    let (mut step_h, mut step_l) = (0.15, 0.5);
    let mut found = Vec::new();
    for _ in 0..opts.refine_rounds {
        let mut batch: Vec<(Vec<f64>, NetworkConfig)> = Vec::with_capacity(opts.refine_batch);
        for _ in 0..opts.refine_batch {
            // A few redraws if rounding lands on the incumbent itself.
            for _ in 0..8 {
                let y: Vec<f64> = z
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        if space.choices_at(i).is_some() {
                            v
                        } else {
                            let g: f64 = StandardNormal.sample(rng);
                            v + g * if i < space.n_hypercube() { step_h } else { step_l }
                        }
                    })
                    .collect();
                let config = space.config_of(&space.point_of(&y), base).map_err(scenario)?;
                if config != incumbent {
                    batch.push((space.opt_of(&space.point_of(&y)), config));
                    break;
                }
            }
        }
        let configs: Vec<&NetworkConfig> = batch.iter().map(|b| &b.1).collect();
        let which: Vec<usize> = (0..configs.len()).collect();
        let slis = replay_all(ground, &configs, &which, screen, 0, progress)?;
        let round: Vec<(Vec<f64>, Candidate)> = batch
            .into_iter()
            .zip(&slis)
            .map(|((y, config), s)| (y, screened(cell, goal.origin(), config, s)))
            .collect();
        // The first of the round's best, if it beats the incumbent.
        let top = round
            .iter()
            .enumerate()
            .map(|(i, (_, c))| (i, goal.score(c, n)))
            .min_by(|a, b| by_score(b.1, a.1));
        match top {
            Some((i, s)) if by_score(s, best).is_gt() => {
                best = s;
                z = round[i].0.clone();
                incumbent = round[i].1.config.clone();
            }
            _ => {
                step_h /= 2.0;
                step_l /= 2.0;
            }
        }
        found.extend(round.into_iter().map(|(_, c)| c));
    }
    Ok(found)
}

/// Replays one group of `scenarios` needs at most (for a progress bar).
pub fn replays_per_cell(opts: &CeilingOptions, scenarios: usize) -> u64 {
    ((1 + opts.random
        + opts.ranked
        + opts.fair_ranked
        + opts.refine_goals.len() * opts.refine_rounds * opts.refine_batch)
        * opts.screen_windows
        + (1 + 2 * scenarios) * opts.confirm_windows) as u64
}

fn knobs_cell(c: &NetworkConfig) -> String {
    c.classes
        .iter()
        .map(|c| {
            format!(
                "{:.2}/{:.0}/{}",
                c.weight,
                c.ecn_threshold.0 as f64 / 1000.0,
                c.init_cwnd.0
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The summary page: per scenario the first candidate's, the best's and the fairest's confirmed
/// numbers and the probabilities they imply; `runs` = the study's runs per scenario (a
/// scenario counts as converged when more than half converge); `command` and `provenance`
/// head it.
pub fn summary(cells: &[CellCeiling], opts: &CeilingOptions, runs: usize, command: &str, provenance: &str) -> String {
    use std::fmt::Write;
    let all: Vec<(&CellCeiling, &ScenarioCeiling)> = cells
        .iter()
        .flat_map(|c| c.scenarios.iter().map(move |s| (c, s)))
        .collect();
    let conv = |sc: &ScenarioCeiling, c: &Confirmed| p_converge(sc.rate(c), opts.intervals, CONVERGENCE_K);
    let count = |f: &dyn Fn(&ScenarioCeiling) -> &Confirmed| {
        let reachable = all.iter().filter(|(_, s)| conv(s, f(s)) > 0.5).count();
        let expected: f64 = all.iter().map(|(_, s)| p_majority(conv(s, f(s)), runs)).sum();
        (reachable, expected)
    };
    let (best_n, best_e) = count(&|s| &s.best);
    let (first_n, first_e) = count(&|s| &s.first);
    let (better_n, better_e) = count(&|s| if s.best.met >= s.first.met { &s.best } else { &s.first });
    let first_name = all.first().map_or("first", |(c, _)| c.candidates[0].origin.name());
    let n = all.len();
    let mut s = String::from("# What the best configuration reaches (pktsim configuration search)\n\n");
    let _ = writeln!(
        s,
        "* best configuration found: scenarios where holding it from the first interval converges in more than half of runs: {best_n}/{n}; expected scenarios converged with {runs} run(s) each: {best_e:.1}"
    );
    let _ = writeln!(
        s,
        "* {first_name} configuration: {first_n}/{n}; expected with {runs} run(s) each: {first_e:.1}"
    );
    let _ = writeln!(
        s,
        "* the better of the two per scenario on the confirmation windows (a choice of two, so slightly optimistic): {better_n}/{n}; expected with {runs} run(s) each: {better_e:.1}"
    );
    let fair: Vec<f64> = all
        .iter()
        .filter_map(|(_, sc)| sc.fairest.map(|f| f.fairness))
        .collect();
    let spread = crate::report::Spread::of(&fair);
    let _ = writeln!(
        s,
        "* fairest configuration compliant in at least half the screening windows, confirmed mean per-window fairness {} (median, min–max) over {} scenario(s); none qualified in {}\n",
        spread.cell(2),
        fair.len(),
        n - fair.len()
    );
    let _ = writeln!(s, "Regenerate:\n\n```\n{command}\n```\n\n{provenance}\n");
    let _ = writeln!(
        s,
        "Per group at most {} candidates (the {first_name}, {} random, flowsim's best {} of {} random and its fairest {} of those it predicts compliant in half the windows{}) on {} screening windows; the {first_name}, and per scenario the best and the fairest, confirmed on {} fresh windows. P(converge) = P(a run of {} compliant windows among {}) at the confirmed rate; P(majority) = P(more than half of {} run(s) converge). Fairness = min r / max r over the classes (r = p99 / SLO): the mean over windows, and of the classes' mean r.\n",
        1 + opts.random + opts.ranked + opts.fair_ranked + opts.refine_goals.len() * opts.refine_rounds * opts.refine_batch,
        opts.random,
        opts.ranked,
        opts.pool,
        opts.fair_ranked,
        refined_text(opts),
        opts.screen_windows,
        opts.confirm_windows,
        CONVERGENCE_K,
        opts.intervals,
        runs
    );
    let _ = writeln!(s, "## Convergence\n\n| scenario | SLOs | {first_name}: compliant windows · P(converge) | best: origin · screening · confirmed · P(converge) · P(majority) | best's knobs (weight / K kB / initcwnd per class) |\n|---|---|---|---|---|");
    for (cell, sc) in &all {
        let b = &cell.candidates[sc.best.candidate];
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
            sc.first.met,
            sc.windows,
            conv(sc, &sc.first),
            b.origin.name(),
            b.screen_met[which],
            sc.screen_windows,
            sc.best.met,
            sc.windows,
            conv(sc, &sc.best),
            p_majority(conv(sc, &sc.best), runs),
            knobs_cell(&b.config)
        );
    }
    let _ = writeln!(s, "\n## Fairness\n\n| scenario | {first_name}: fairness · of mean r · compliant | fairest: origin · screening fairness · confirmed fairness · of mean r · compliant | fairest's knobs |\n|---|---|---|---|");
    for (cell, sc) in &all {
        let which = cell.scenarios.iter().position(|x| x.label == sc.label).unwrap_or(0);
        let fairest = sc
            .fairest
            .as_ref()
            .map_or("none compliant in half the windows | –".to_string(), |f| {
                let c = &cell.candidates[f.candidate];
                format!(
                    "{} · {:.2} · {:.2} · {:.2} · {}/{} | {}",
                    c.origin.name(),
                    c.screen_fair[which],
                    f.fairness,
                    f.mean_r_fairness,
                    f.met,
                    sc.windows,
                    knobs_cell(&c.config)
                )
            });
        let _ = writeln!(
            s,
            "| {} | {:.2} · {:.2} · {}/{} | {} |",
            sc.label, sc.first.fairness, sc.first.mean_r_fairness, sc.first.met, sc.windows, fairest
        );
    }
    s
}

/// The local search's part of the summary's candidate sentence.
fn refined_text(opts: &CeilingOptions) -> String {
    if opts.refine_rounds == 0 || opts.refine_goals.is_empty() {
        return String::new();
    }
    let goals: Vec<&str> = opts
        .refine_goals
        .iter()
        .map(|g| match g {
            RefineGoal::Compliance => "from its most compliant candidate for the most compliant windows (`pktsim-refined-best`; not run where that candidate met every SLO in every window)",
            RefineGoal::Fairness => "from its fairest half-compliant candidate for the fairest half-compliant configuration (`pktsim-refined-fairest`)",
        })
        .collect();
    format!(
        "; then per group a pktsim-driven local search on the screening windows, {} rounds of {} perturbations, {}",
        opts.refine_rounds,
        opts.refine_batch,
        goals.join(" and one ")
    )
}

/// Every candidate's screening, one row per (scenario, candidate).
pub fn candidates_csv(cells: &[CellCeiling]) -> String {
    use std::fmt::Write;
    let mut s = String::from(
        "scenario,candidate,origin,screen_met,screen_windows,screen_mean_worst_ratio,screen_mean_fairness,knobs\n",
    );
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
                    "{},{},{},{},{},{:.4},{:.4},{}",
                    sc.label,
                    i,
                    c.origin.name(),
                    c.screen_met[k],
                    sc.screen_windows,
                    c.screen_worst[k],
                    c.screen_fair[k],
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

    /// One scale cell (high and low) on a 4 × 2 leaf-spine.
    fn small_cell() -> Vec<Planned> {
        let so = ScaleOptions {
            racks: 4,
            hosts_per_rack: 2,
            candidates: 3,
            baseline_windows: 2,
            cells: 1,
            ..ScaleOptions::default()
        };
        scale::plan(&so, 0, &|_| {}).expect("plan")
    }

    /// The search on `planned` and the number of pktsim replays it made.
    fn counted_search(planned: &[Planned], opts: &CeilingOptions) -> (CellCeiling, u64) {
        let replays = std::sync::atomic::AtomicU64::new(0);
        let cell = search_cell(planned, opts, &|| {
            replays.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .expect("search");
        (cell, replays.into_inner())
    }

    #[test]
    fn a_small_cell_screens_every_candidate_and_confirms_the_reference() {
        let planned = small_cell();
        let opts = CeilingOptions {
            random: 2,
            pool: 8,
            ranked: 2,
            fair_ranked: 2,
            screen_windows: 3,
            confirm_windows: 4,
            ..CeilingOptions::default()
        };
        let (cell, n) = counted_search(&planned, &opts);
        let k = cell.candidates.len();
        assert!((5..=7).contains(&k), "{k} candidates");
        assert!(cell.candidates[5..].iter().all(|c| c.origin == Origin::FairRanked));
        assert_eq!(cell.candidates[0].origin, Origin::Reference);
        assert_eq!(Some(&cell.candidates[0].config), planned[0].reference.as_ref());
        assert_eq!(cell.scenarios.len(), 2);
        let chosen: std::collections::BTreeSet<usize> = cell
            .scenarios
            .iter()
            .flat_map(|s| {
                [
                    Some(s.first.candidate),
                    Some(s.best.candidate),
                    s.fairest.map(|f| f.candidate),
                ]
            })
            .flatten()
            .collect();
        assert!(chosen.contains(&0));
        assert_eq!(n, (k * 3 + chosen.len() * 4) as u64);
        assert!(n <= replays_per_cell(&opts, 2));
        for (s, sc) in cell.scenarios.iter().enumerate() {
            assert_eq!(sc.windows, 4);
            let b = &cell.candidates[sc.best.candidate];
            // The best screened at least as many compliant windows as any other candidate.
            assert!(cell.candidates.iter().all(|c| c.screen_met[s] <= b.screen_met[s]));
            assert!(sc.best.met <= 4 && sc.first.met <= 4);
            // The fairest, if any, met the SLOs in at least half the screening windows and is
            // the fairest of those.
            if let Some(f) = sc.fairest {
                let c = &cell.candidates[f.candidate];
                assert!(2 * c.screen_met[s] >= 3);
                assert!(cell
                    .candidates
                    .iter()
                    .filter(|o| 2 * o.screen_met[s] >= 3)
                    .all(|o| o.screen_fair[s] <= c.screen_fair[s]));
            }
            for x in [Some(sc.first), Some(sc.best), sc.fairest].into_iter().flatten() {
                assert!((0.0..=1.0).contains(&x.fairness) && (0.0..=1.0).contains(&x.mean_r_fairness));
            }
        }
        // Looser SLOs (low) can only meet more windows than the tight ones with the same candidate.
        for c in &cell.candidates {
            assert!(c.screen_met[1] >= c.screen_met[0]);
        }
        let page = summary(std::slice::from_ref(&cell), &opts, 3, "cmd", "prov");
        assert!(page.contains("/2; expected"), "{page}");
        assert_eq!(candidates_csv(&[cell]).lines().count(), 1 + 2 * k);
    }

    #[test]
    fn the_local_search_screens_its_perturbations_beside_the_candidates() {
        let planned = small_cell();
        let opts = CeilingOptions {
            random: 2,
            pool: 8,
            ranked: 1,
            screen_windows: 3,
            confirm_windows: 2,
            refine_rounds: 2,
            refine_batch: 2,
            ..CeilingOptions::default()
        };
        let (cell, n) = counted_search(&planned, &opts);
        let screened = 1 + opts.random + opts.ranked;
        let (base, refined) = cell.candidates.split_at(screened);
        assert!(base
            .iter()
            .all(|c| !matches!(c.origin, Origin::RefinedBest | Origin::RefinedFair)));
        let fair = refined.iter().filter(|c| c.origin == Origin::RefinedFair).count();
        let best = refined.iter().filter(|c| c.origin == Origin::RefinedBest).count();
        assert_eq!(fair + best, refined.len());
        assert!(fair <= 4 && best <= 4, "{fair} fair, {best} best");
        // The compliance search runs unless its start met every SLO in every window.
        let start_full = base.iter().any(|c| c.screen_met.iter().all(|&m| m == 3));
        assert_eq!(best == 0, start_full);
        assert!(fair > 0, "the fairness search always runs");
        // Every perturbation is a configuration of the space, screened against both scenarios.
        for c in refined {
            let w: f64 = c.config.classes.iter().map(|k| k.weight).sum();
            assert!((w - 1.0).abs() < 1e-6, "weights sum to {w}");
            assert_eq!(c.screen_met.len(), 2);
            assert!(c.screen_met.iter().all(|&m| m <= 3));
        }
        assert!(n <= replays_per_cell(&opts, 2), "{n} replays");
        assert!(n >= ((screened + refined.len()) * 3) as u64);
        // The choices see the refined candidates: the best per scenario screened at least as
        // many compliant windows as every candidate, refined ones included.
        for (s, sc) in cell.scenarios.iter().enumerate() {
            let b = &cell.candidates[sc.best.candidate];
            assert!(cell.candidates.iter().all(|c| c.screen_met[s] <= b.screen_met[s]));
        }
        let page = summary(std::slice::from_ref(&cell), &opts, 3, "cmd", "prov");
        assert!(page.contains("2 rounds of 2 perturbations"), "{page}");
        // One goal: only its search runs.
        let fair_only = CeilingOptions {
            refine_goals: vec![RefineGoal::Fairness],
            ..opts.clone()
        };
        let cell = search_cell(&planned, &fair_only, &|| {}).expect("search");
        assert!(cell.candidates.iter().all(|c| c.origin != Origin::RefinedBest));
    }
}
