//! Orchestration of a study: every (scenario, tuner, seed) run on the chosen ground — pktsim
//! runs in parallel, the testbed one run at a time on one instance — then the tables, CSV and
//! plots under the output directory. The `eval` binary is a thin CLI over [`run_study`] and
//! [`write_outputs`].

use crate::closed_loop::{run_tuner, LoopSetup, RunTrace};
use crate::ground::{PktsimGround, ScenarioTraffic, TestbedGround};
use crate::report::{self, ScenarioResult};
use crate::studies::{Planned, Study};
use crate::{plots, tuners, EvalError};
use polyphony_core::ControllerParams;
use polyphony_model::{pool, ModelKind};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The live network of a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroundKind {
    /// The packet-level simulator, in-process.
    Pktsim,
    /// The namespace testbed with emu (root, dumbbell scenarios only).
    Testbed,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// The study.
    pub study: Study,
    /// The ground.
    pub ground: GroundKind,
    /// Seeds per run: `first_seed..first_seed + seeds`.
    pub seeds: u64,
    /// The first seed (0 for reported studies; development runs use seeds no study reports).
    pub first_seed: u64,
    /// Measured control intervals per run.
    pub iterations: usize,
    /// Warm-up windows before the control intervals (see [`LoopSetup::warmup`]).
    pub warmup: usize,
    /// Tuners, in table order.
    pub tuners: Vec<String>,
    /// Controller hyperparameters (seed replaced per run).
    pub params: ControllerParams,
    /// Runs in parallel (pktsim only).
    pub jobs: usize,
    /// Testbed instance prefix.
    pub prefix: String,
}

impl EvalOptions {
    /// Refuses unknown tuners, zero seeds or iterations, and the scale study on the testbed.
    pub fn validate(&self) -> Result<(), EvalError> {
        if self.seeds == 0 {
            return Err(EvalError::Usage("--seeds 0: give at least 1".into()));
        }
        if self.iterations == 0 {
            return Err(EvalError::Usage("--iterations 0: give at least 1".into()));
        }
        if self.tuners.is_empty() {
            return Err(EvalError::Usage(format!("no tuners; known: {}", tuners::known_names())));
        }
        if let Some(t) = self.tuners.iter().find(|t| !tuners::is_known(t)) {
            return Err(EvalError::Usage(format!(
                "--tuners: unknown tuner {t:?}; known: {}",
                tuners::known_names()
            )));
        }
        if self.ground == GroundKind::Testbed && matches!(self.study, Study::Scale | Study::Fresh) {
            return Err(EvalError::Usage(format!(
                "--ground testbed: the namespace testbed is one dumbbell; the {} study runs on pktsim",
                self.study.name()
            )));
        }
        if self.jobs == 0 {
            return Err(EvalError::Usage("--jobs 0: give at least 1".into()));
        }
        self.params
            .validate()
            .map_err(|e| EvalError::Usage(format!("controller parameters: {e}")))
    }
}

fn setup(p: &Planned, o: &EvalOptions) -> Result<(LoopSetup, ScenarioTraffic), EvalError> {
    let traffic = ScenarioTraffic::new(p.scenario.clone(), p.matrix)?;
    let s = LoopSetup {
        scenario: p.scenario.clone(),
        knobs: p.knobs.clone(),
        start: p.start.clone(),
        reference: p.reference.clone(),
        params: o.params.clone(),
        iterations: o.iterations,
        warmup: o.warmup,
        guard: None,
        model: ModelKind::default().model().map_err(EvalError::Model)?,
        context: traffic.context.clone(),
    };
    Ok((s, traffic))
}

/// Runs every tuner on every planned scenario and seed; `tick` is called after each interval.
pub fn run_study(
    planned: &[Planned],
    o: &EvalOptions,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<ScenarioResult>, EvalError> {
    o.validate()?;
    // Every tuner must have its configuration on every scenario before any run starts
    // (`near-optimal` needs the study's reference).
    for p in planned {
        for t in &o.tuners {
            tuners::initial_config(t, &p.label, &p.start, p.reference.as_ref())?;
        }
        // A space the model cannot evaluate would fail every proposal (the loop then holds
        // and the study reads as "never converged"): refuse it here.
        let dscps: Vec<_> = p.scenario.classes.iter().map(|c| c.dscp).collect();
        ModelKind::default()
            .check_space(&dscps, &p.knobs, &p.start)
            .map_err(|e| {
                EvalError::Usage(format!(
                    "scenario {}: {} (the controller's model) cannot evaluate {e}",
                    p.scenario.name,
                    ModelKind::default().as_str()
                ))
            })?;
    }
    let mut results = Vec::new();
    for p in planned {
        let (setup, traffic) = setup(p, o)?;
        let jobs: Vec<(String, u64)> = o
            .tuners
            .iter()
            .flat_map(|t| (o.first_seed..o.first_seed + o.seeds).map(move |s| (t.clone(), s)))
            .collect();
        let traces: Vec<RunTrace> = match o.ground {
            GroundKind::Pktsim => {
                let model_threads = (rayon::current_num_threads() / o.jobs).max(1);
                // Runs on plain threads, not on a rayon pool: a rayon worker that waits for a
                // parallel call (the model, the GP fit) steals other runs' work meanwhile, so
                // one run's decision would absorb another run's minutes.
                let next = std::sync::atomic::AtomicUsize::new(0);
                let slots: Vec<std::sync::Mutex<Option<Result<RunTrace, EvalError>>>> =
                    jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
                std::thread::scope(|scope| {
                    for _ in 0..o.jobs.min(jobs.len()) {
                        scope.spawn(|| loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some((t, s)) = jobs.get(i) else { break };
                            let mut ground = PktsimGround::new(traffic.clone(), *s);
                            // A model value per run: flowsim keeps the plan of its last window,
                            // and runs in parallel bring different windows (one shared value
                            // would re-plan on nearly every call, under its lock).
                            let r = ModelKind::default()
                                .model()
                                .map_err(EvalError::Model)
                                .and_then(|model| {
                                    let own = LoopSetup { model, ..setup.clone() };
                                    run_tuner(t, *s, &own, &mut ground, &pool(model_threads), tick)
                                });
                            if let Ok(mut slot) = slots[i].lock() {
                                *slot = Some(r);
                            }
                        });
                    }
                });
                slots
                    .into_iter()
                    .map(|m| {
                        m.into_inner()
                            .ok()
                            .flatten()
                            .unwrap_or_else(|| Err(EvalError::Ground("a run's thread panicked".into())))
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
            GroundKind::Testbed => {
                let mut ground = TestbedGround::up(&p.scenario, &o.prefix, 0)?;
                let threads = pool(0);
                let mut v = Vec::new();
                for (t, s) in &jobs {
                    ground.set_seed(*s);
                    v.push(run_tuner(t, *s, &setup, &mut ground, &threads, tick)?);
                }
                v
            }
        };
        results.push(ScenarioResult {
            label: p.label.clone(),
            scenario: p.scenario.clone(),
            traces,
        });
    }
    Ok(results)
}

fn describe(sc: &polyphony_spec::Scenario) -> String {
    let slos: Vec<String> = sc
        .classes
        .iter()
        .map(|c| format!("{} {}", c.name, c.slo.describe()))
        .collect();
    let topo = sc.topology.to_string();
    let phases = if sc.phases.is_empty() {
        String::new()
    } else {
        let p: Vec<String> = sc
            .phases
            .iter()
            .map(|p| format!("{:.0} s at {:?}", p.duration_s, p.loads))
            .collect();
        format!("; load phases: {}", p.join(", "))
    };
    format!(
        "`{}`: {topo}; interval {} s; p99 slowdown SLOs {}{phases}",
        sc.name,
        polyphony_spec::short_number(sc.interval_s),
        slos.join(", ")
    )
}

/// Writes `summary.md`, `summary.csv`, `iterations.csv` and (unless `plots` is false) three SVG
/// plots per scenario into `dir`. `command` is quoted in the Markdown as the way to regenerate it,
/// `provenance` (commit, start) follows it.
pub fn write_outputs(
    dir: &Path,
    o: &EvalOptions,
    results: &[ScenarioResult],
    command: &str,
    provenance: &str,
    plots_for: &dyn Fn(usize) -> bool,
) -> Result<(), EvalError> {
    let mut md = format!(
        "# {} study on {}\n\nRegenerate:\n\n```\n{command}\n```\n\n{provenance}\n\n{} seed(s) ({}) × {} control interval(s) per run{}; tuners: {}. Cells: median over seeds (min–max). \
Convergence iteration = first of {} consecutive intervals in which every measured SLO held (0-based); minutes = that iteration × the interval. \
Regret = Σ_t (J_t − J_ref) over measured intervals, J_ref = the lowest J any tuner measured on that seed. \
Fairness = min r / max r and final J of the last measured interval; fairness (mean r, last 10) = min / max over classes of each class's mean r over the last 10 intervals.\n\n",
        o.study.name(),
        match o.ground {
            GroundKind::Pktsim => "pktsim",
            GroundKind::Testbed => "the namespace testbed",
        },
        o.seeds,
        if o.seeds == 1 {
            format!("seed {}", o.first_seed)
        } else {
            format!("seeds {}–{}", o.first_seed, o.first_seed + o.seeds - 1)
        },
        o.iterations,
        if o.warmup > 0 {
            format!(
                ", after {} warm-up window(s) that only gather datapoints (design points around the start; fixed and near-optimal keep their configuration) and count in no metric; `iterations.csv` lists them with negative iterations",
                o.warmup
            )
        } else {
            String::new()
        },
        o.tuners.join(", "),
        report::CONVERGENCE_K
    );
    std::fs::create_dir_all(dir).map_err(|e| EvalError::Write {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    // Per scenario; merged under one header at the end (scenarios may differ in classes).
    let mut all_iter = Vec::new();
    let mut all_sum = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let sums = report::summarise(&r.traces, r.scenario.interval_s);
        let _ = writeln!(
            md,
            "## {}\n\n{}\n\n{}",
            r.label,
            describe(&r.scenario),
            report::markdown(&sums)
        );
        if plots_for(i) {
            let knob_tuner = if o.tuners.iter().any(|t| t == "polyphony") {
                "polyphony"
            } else {
                o.tuners[0].as_str()
            };
            let knob_caption = format!("knobs of {knob_tuner}");
            let files = [
                (
                    format!("{}-slowdowns.svg", r.label),
                    "per-class p99 slowdown (SLOs dashed)",
                ),
                (format!("{}-objective.svg", r.label), "objective J"),
                (format!("{}-knobs.svg", r.label), knob_caption.as_str()),
            ];
            plots::slowdowns(r, &dir.join(&files[0].0))?;
            plots::objective(r, &dir.join(&files[1].0))?;
            plots::knobs(r, knob_tuner, &dir.join(&files[2].0))?;
            for (f, what) in files {
                let _ = writeln!(md, "![{what}]({f})\n");
            }
        }
        all_iter.push(report::iterations_csv(r));
        all_sum.push(report::summary_csv(&r.label, &sums));
    }
    if o.study == Study::Scale {
        md = scale_overview(results) + &md;
    }
    if o.study == Study::Fresh {
        md = fresh_overview(results) + &md;
    }
    if o.study == Study::Categorical {
        for r in results {
            let _ = writeln!(
                md,
                "## Categorical choices ({})\n\nThe configuration each run measured in an interval, its classes with a categorical knob; the numeric-only tuner keeps the start's algorithm by construction.\n\n{}",
                r.label,
                report::categorical_markdown(r)
            );
        }
    }
    if o.study == Study::Adaptation {
        for r in results {
            md += &phase_table(r);
        }
    }
    report::write_file(dir, "summary.md", &md)?;
    report::write_file(dir, "summary.csv", &report::merge_csv("summary.csv", &all_sum)?)?;
    report::write_file(dir, "iterations.csv", &report::merge_csv("iterations.csv", &all_iter)?)
}

/// One line per scenario for each tuner: converged runs and the median convergence iteration,
/// and how many scenarios converged (the paper: 19/24 within 6 iterations).
pub fn scale_overview(results: &[ScenarioResult]) -> String {
    overview("Scale study overview", "SLOs (AF11 / AF21 / AF31)", results)
}

/// The fresh study's overview: as the scale study's, then per regime (topology kind × rate band
/// × load band) and tuner the scenarios converged and the measured intervals in which every SLO
/// held, over all runs.
pub fn fresh_overview(results: &[ScenarioResult]) -> String {
    let mut s = overview("Fresh scenarios overview", "SLOs (per class)", results);
    // Per regime, per tuner (in first-seen order): scenarios converged, scenarios, compliant
    // intervals, intervals.
    let mut tuners: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, Vec<[usize; 4]>> = BTreeMap::new();
    for r in results {
        let regime = crate::fresh::regime_of_label(&r.label).map_or_else(|| "(unknown)".to_string(), |g| g.to_string());
        for m in report::summarise(&r.traces, r.scenario.interval_s) {
            let c = regime_cell(&mut tuners, &mut by, &regime, &m.tuner);
            c[0] += usize::from(m.converged * 2 > m.runs);
            c[1] += 1;
        }
        for trace in &r.traces {
            let judged = trace.judged_ratios();
            let c = regime_cell(&mut tuners, &mut by, &regime, &trace.tuner);
            c[2] += judged.iter().filter(|x| report::slos_met(x)).count();
            c[3] += judged.len();
        }
    }
    s += "## By regime\n\nPer tuner: scenarios converged (in more than half of their runs) / scenarios · measured intervals in which every SLO held / measured intervals, over all runs.\n\n| regime |";
    for t in &tuners {
        let _ = write!(s, " {t} |");
    }
    s += "\n|---|";
    s += &"---|".repeat(tuners.len());
    s += "\n";
    let mut total = vec![[0usize; 4]; tuners.len()];
    for (regime, row) in &by {
        let _ = write!(s, "| {regime} |");
        for (t, sum) in total.iter_mut().enumerate() {
            let c = row.get(t).copied().unwrap_or([0; 4]);
            for k in 0..4 {
                sum[k] += c[k];
            }
            let _ = write!(s, " {}/{} · {}/{} |", c[0], c[1], c[2], c[3]);
        }
        s += "\n";
    }
    s += "| **all** |";
    for c in &total {
        let _ = write!(s, " {}/{} · {}/{} |", c[0], c[1], c[2], c[3]);
    }
    s + "\n\n"
}

/// The counts of `tuner` in `regime`'s row (the tuner's column added on first sight).
fn regime_cell<'a>(
    tuners: &mut Vec<String>,
    by: &'a mut BTreeMap<String, Vec<[usize; 4]>>,
    regime: &str,
    tuner: &str,
) -> &'a mut [usize; 4] {
    let t = tuners.iter().position(|t| t == tuner).unwrap_or_else(|| {
        tuners.push(tuner.to_string());
        tuners.len() - 1
    });
    let row = by.entry(regime.to_string()).or_default();
    if row.len() <= t {
        row.resize(t + 1, [0; 4]);
    }
    &mut row[t]
}

/// The overview of a study of many scenarios: per tuner the scenarios converged and the
/// median convergence iteration, then one row per scenario and tuner.
fn overview(title: &str, slo_head: &str, results: &[ScenarioResult]) -> String {
    let mut rows = String::new();
    // Per tuner: scenarios converged, scenarios, and the converged scenarios' median
    // convergence iterations.
    let mut count: Vec<(String, usize, usize, Vec<f64>)> = Vec::new();
    for r in results {
        for m in report::summarise(&r.traces, r.scenario.interval_s) {
            let slos: Vec<String> = r
                .scenario
                .classes
                .iter()
                .map(|c| format!("{:.1}{}", c.slo.threshold(), c.slo.kind().unit()))
                .collect();
            let _ = writeln!(
                rows,
                "| {} | {} | {} | {}/{} | {} |",
                r.label,
                slos.join(" / "),
                m.tuner,
                m.converged,
                m.runs,
                m.convergence.cell(0)
            );
            let converged = m.converged * 2 > m.runs;
            let c = match count.iter_mut().position(|c| c.0 == m.tuner) {
                Some(i) => &mut count[i],
                None => {
                    count.push((m.tuner.clone(), 0, 0, Vec::new()));
                    count.last_mut().expect("just pushed")
                }
            };
            c.1 += usize::from(converged);
            c.2 += 1;
            if converged {
                c.3.push(m.convergence.median);
            }
        }
    }
    let mut s = format!("# {title}\n\n");
    for (t, c, n, its) in &count {
        let median = if its.is_empty() {
            "none converged".to_string()
        } else {
            format!("median convergence iteration {}", report::Spread::of(its).cell(1))
        };
        let _ = writeln!(
            s,
            "* {t}: scenarios converged: {c}/{n} (in more than half of their runs); {median}"
        );
    }
    let _ = write!(
        s,
        "\n| scenario | {slo_head} | tuner | converged runs | convergence iteration |\n|---|---|---|---|---|\n"
    );
    s + &rows + "\n"
}

/// Adaptation: per load phase, the intervals from the phase's start until every SLO held for
/// k consecutive intervals inside the phase (median over seeds, min–max; "never" if not within
/// the phase), and the intervals of the phase with a missed SLO.
pub fn phase_table(r: &ScenarioResult) -> String {
    let mut bounds = Vec::new();
    let mut t0 = 0usize;
    for p in &r.scenario.phases {
        let n = (p.duration_s / r.scenario.interval_s).round().max(1.0) as usize;
        bounds.push((t0, t0 + n));
        t0 += n;
    }
    let mut s = format!(
        "## {}: re-convergence after each load shift\n\nIntervals from the start of each phase until every SLO held for {} consecutive intervals within the phase (median over seeds, min–max); then the median number of intervals of the phase with a missed SLO.\n\n| tuner |",
        r.label,
        report::CONVERGENCE_K
    );
    let roman = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII"];
    for (i, _) in bounds.iter().enumerate() {
        let _ = write!(s, " phase {} |", roman.get(i).copied().unwrap_or("?"));
    }
    s += "\n|---|";
    s += &"---|".repeat(bounds.len());
    s += "\n";
    let mut names: Vec<&str> = Vec::new();
    for t in &r.traces {
        if !names.contains(&t.tuner.as_str()) {
            names.push(&t.tuner);
        }
    }
    for name in names {
        let _ = write!(s, "| {name} |");
        for &(a, b) in &bounds {
            let mut conv = Vec::new();
            let mut viol = Vec::new();
            for t in r.traces.iter().filter(|t| t.tuner == name) {
                // Phases are cut in traffic windows; control interval i measures window W + i
                // after W warm-up windows, so the phase's control intervals start W earlier
                // (a phase the warm-up overlaps is judged from the first control interval).
                let w = t.warmup.len();
                let (a, b) = (a.saturating_sub(w), b.saturating_sub(w));
                let ratios: Vec<Vec<f64>> = t.judged_ratios().into_iter().skip(a).take(b - a).collect();
                conv.push(
                    polyphony_core::convergence_iteration(&ratios, report::CONVERGENCE_K)
                        .map_or(f64::INFINITY, |c| c as f64),
                );
                viol.push(ratios.iter().filter(|r| !report::slos_met(r)).count() as f64);
            }
            let _ = write!(
                s,
                " {} · {} missed |",
                report::Spread::of(&conv).cell(0),
                report::Spread::of(&viol).cell(0)
            );
        }
        s += "\n";
    }
    s + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::closed_loop::{IterationRecord, RunTrace};
    use polyphony_spec::{Bytes, Dscp, LoadPhase, NetworkConfig, Packets, Scenario, TrafficClass};

    /// A scenario of one class (AF11, SLO 10) on a 100 Mbit/s dumbbell, without phases.
    fn one_class(name: &str, interval_s: f64) -> Scenario {
        Scenario {
            name: name.into(),
            description: String::new(),
            seed: 1,
            interval_s,
            topology: polyphony_spec::TopologySpec::Dumbbell {
                senders: 1,
                rate_mbps: 100.0,
                link_delay_us: 2.5,
            },
            classes: vec![TrafficClass::new("AF11", Dscp::AF11, 10.0)],
            mix: vec![],
            phases: vec![],
            initial: None,
            knobs: None,
        }
    }

    fn record(i: usize, r: f64) -> IterationRecord {
        IterationRecord {
            iteration: i,
            config: NetworkConfig::uniform(&[Dscp::AF11], Bytes(30_000), Packets(10)),
            p99: vec![r * 10.0],
            ratios: vec![r],
            model_ratios: Vec::new(),
            objective: r,
            decide_wall_s: 0.0,
            decide_cpu_s: 0.0,
            model_evaluations: 0,
            model_cpu_s: 0.0,
            sim_cpu_s: f64::NAN,
            reason: String::new(),
        }
    }

    #[test]
    fn phases_are_judged_on_the_control_intervals_that_measured_them_after_a_warm_up() {
        // Two phases of 4 windows (48 s at 12 s). Per traffic window: phase I compliant,
        // phase II misses its first window and holds from its second on.
        let by_window = [0.5, 0.5, 0.5, 0.5, 2.0, 0.5, 0.5, 0.5];
        let mut scenario = one_class("t", 12.0);
        scenario.phases = vec![
            LoadPhase {
                duration_s: 48.0,
                loads: vec![0.2],
            },
            LoadPhase {
                duration_s: 48.0,
                loads: vec![0.6],
            },
        ];
        // Two warm-up windows: control interval i measured window 2 + i.
        let warm = 2;
        let trace = RunTrace {
            tuner: "a".into(),
            seed: 0,
            warmup: (0..warm).map(|w| record(w, by_window[w])).collect(),
            records: (warm..by_window.len())
                .map(|w| record(w - warm, by_window[w]))
                .collect(),
        };
        let table = phase_table(&ScenarioResult {
            label: "x".into(),
            scenario,
            traces: vec![trace],
        });
        let row = table.lines().find(|l| l.starts_with("| a |")).expect("a row");
        // Phase I: its control intervals (windows 2–3) hold at once but are only two, fewer than
        // k = 3: never. Phase II: the miss in its first window, then three compliant ones.
        assert_eq!(row, "| a | never · 0 missed | 1 · 1 missed |", "{table}");
    }

    #[test]
    fn the_fresh_overview_counts_scenarios_and_compliant_intervals_per_regime() {
        let run = |tuner: &str, ratios: &[f64]| RunTrace {
            tuner: tuner.into(),
            seed: 0,
            warmup: Vec::new(),
            records: ratios.iter().enumerate().map(|(i, &r)| record(i, r)).collect(),
        };
        let result = |label: &str, a: &[f64], b: &[f64]| ScenarioResult {
            label: label.into(),
            scenario: one_class(label, 0.01),
            traces: vec![run("a", a), run("b", b)],
        };
        // Cases 0 and 18 share regime 0, case 1 is regime 1. Tuner a converges in case 0 and
        // case 1, b in case 18 only.
        let results = [
            result("case-0-high", &[0.5, 0.5, 0.5, 2.0], &[2.0, 0.5, 2.0, 0.5]),
            result("case-18-low", &[2.0, 2.0, 0.5, 0.5], &[0.5, 0.5, 0.5, 0.5]),
            result("case-1-high", &[0.5, 0.5, 0.5, 0.5], &[2.0, 2.0, 2.0, 2.0]),
        ];
        let md = fresh_overview(&results);
        let row = |regime: polyphony_model::validation::Regime| {
            md.lines()
                .find(|l| l.starts_with(&format!("| {regime} |")))
                .unwrap_or_else(|| panic!("no row for {regime}: {md}"))
                .to_string()
        };
        let r0 = polyphony_model::validation::Regime::of_index(0);
        let r1 = polyphony_model::validation::Regime::of_index(1);
        assert_eq!(row(r0), format!("| {r0} | 1/2 · 5/8 | 1/2 · 6/8 |"), "{md}");
        assert_eq!(row(r1), format!("| {r1} | 1/1 · 4/4 | 0/1 · 0/4 |"), "{md}");
        assert!(md.contains("| **all** | 2/3 · 9/12 | 1/3 · 6/12 |"), "{md}");
        assert!(md.contains("* a: scenarios converged: 2/3"), "{md}");
    }
}
