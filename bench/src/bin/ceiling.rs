//! `ceiling`: what the best configuration reaches on a study's own scenarios and SLOs in pktsim,
//! independent of any tuner (`polyphony_bench::ceiling`): how many scale scenarios can converge
//! at all, and what fairness a compliant configuration reaches at each dumbbell tightness.
//!
//! ```text
//! cargo run --release -p polyphony-bench --bin ceiling -- scale --out docs/results/scale-ceiling
//! cargo run --release -p polyphony-bench --bin ceiling -- tightness --scenario-prefix reference-10g --out docs/results/convergence-10g/ceiling
//! ```

use anyhow::{Context, Result};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use polyphony_bench::ceiling::{self, CeilingOptions, RefineGoal};
use polyphony_bench::scale::{self, ScaleArgs};
use polyphony_bench::studies::{self, Study, StudyOptions, Tightness};
use polyphony_bench::EvalError;
use std::path::PathBuf;
use std::time::Duration;

/// Whose scenarios are searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Target {
    /// The scale study's 24 leaf-spine scenarios (groups: each cell's high and low).
    Scale,
    /// The dumbbell's tightness levels `<scenario-dir>/<scenario-prefix>-{low,medium,high}.toml`
    /// (one group).
    Tightness,
}

#[derive(Parser, Debug)]
#[command(about = "Search pktsim for the configurations that meet a study's SLOs most often and most fairly")]
struct Args {
    /// Whose scenarios.
    #[arg(value_enum)]
    target: Target,
    #[command(flatten)]
    scale: ScaleArgs,
    /// Tightness: directory of the scenario files.
    #[arg(long, default_value = "configs/scenarios")]
    scenario_dir: PathBuf,
    /// Tightness: file-name prefix of the levels (e.g. reference-10g).
    #[arg(long, default_value = "reference-10g")]
    scenario_prefix: String,
    /// Random configurations replayed as drawn, per group.
    #[arg(long, default_value_t = 12)]
    random: usize,
    /// Random configurations flowsim ranks, per group.
    #[arg(long, default_value_t = 512)]
    pool: usize,
    /// Candidates taken from the top of flowsim's ranking, per group.
    #[arg(long, default_value_t = 12)]
    ranked: usize,
    /// Candidates taken from flowsim's fairest of the pool configurations it predicts
    /// compliant in at least half the screening windows, per group.
    #[arg(long, default_value_t = 0)]
    fair_ranked: usize,
    /// Windows every candidate is replayed on.
    #[arg(long, default_value_t = 10)]
    screen_windows: usize,
    /// Fresh windows the chosen candidates are replayed on.
    #[arg(long, default_value_t = 20)]
    confirm_windows: usize,
    /// Control intervals of a run (the study's --iterations: scale 10, Table 2 at 10 Gbit/s 10).
    #[arg(long, default_value_t = 10)]
    intervals: usize,
    /// Runs per scenario in the study (its --seeds): a scenario counts when more than half converge.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seed of the candidates and the windows.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Rounds of a pktsim-driven local search on the screening windows, one per goal of
    /// --refine-goals and group, from the screened candidate that scores best for it (0: none).
    #[arg(long, default_value_t = 0)]
    refine_rounds: usize,
    /// Perturbations of the incumbent replayed per round of the local search.
    #[arg(long, default_value_t = 8)]
    refine_batch: usize,
    /// What the local search looks for, one search per goal and group.
    #[arg(long, value_delimiter = ',', default_value = "compliance,fairness")]
    refine_goals: Vec<RefineGoal>,
    /// Replays in parallel.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Output directory (summary.md, candidates.csv).
    #[arg(long)]
    out: PathBuf,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("ceiling: {e:#}");
        std::process::exit(polyphony_bench::exit_code(&e));
    }
}

fn run() -> Result<()> {
    let a = Args::parse();
    if a.screen_windows == 0
        || a.confirm_windows == 0
        || a.intervals == 0
        || a.runs == 0
        || a.jobs == 0
        || (a.refine_rounds > 0 && a.refine_batch == 0)
    {
        return Err(EvalError::Usage(format!(
            "--screen-windows {}, --confirm-windows {}, --intervals {}, --runs {}, --jobs {}, --refine-batch {} (with --refine-rounds): each must be at least 1",
            a.screen_windows, a.confirm_windows, a.intervals, a.runs, a.jobs, a.refine_batch
        ))
        .into());
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(a.jobs)
        .build_global()
        .context("starting the replay threads")?;
    let opts = CeilingOptions {
        random: a.random,
        pool: a.pool,
        ranked: a.ranked,
        fair_ranked: a.fair_ranked,
        screen_windows: a.screen_windows,
        confirm_windows: a.confirm_windows,
        intervals: a.intervals,
        seed: a.seed,
        refine_rounds: a.refine_rounds,
        refine_batch: a.refine_batch,
        refine_goals: a.refine_goals,
    };
    let bar = if a.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(0)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {pos}/{len} replays [{elapsed_precise} < {eta}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    let (planned, group, scenarios) = match a.target {
        Target::Scale => {
            let planned = scale::plan(&a.scale.options(), a.scale.scenario_seed, &|name| {
                bar.set_message(format!("baseline SLOs of {name}"))
            })?;
            let s = a.scale;
            let what = format!(
                "the scale study's scenarios ({}×{} leaf-spine, {} ms intervals; {})",
                s.racks,
                s.hosts_per_rack,
                s.interval_ms,
                s.provenance().trim_end_matches('.')
            );
            (planned, 2, what)
        }
        Target::Tightness => {
            let planned = studies::plan(
                Study::Convergence,
                &StudyOptions {
                    scenario_dir: a.scenario_dir.clone(),
                    scenario_prefix: a.scenario_prefix.clone(),
                    delay_us: None,
                    tightness: vec![Tightness::Low, Tightness::Medium, Tightness::High],
                    phase_iterations: 1,
                    interval_s: None,
                    categorical: String::new(),
                },
            )?;
            let what = format!(
                "`{}/{}-{{low,medium,high}}.toml`",
                a.scenario_dir.display(),
                a.scenario_prefix
            );
            (planned, 3, what)
        }
    };
    let groups: Vec<_> = planned.chunks(group).collect();
    bar.set_length(groups.iter().map(|g| ceiling::replays_per_cell(&opts, g.len())).sum());
    // Where the results go is checked before the search, not after it.
    std::fs::create_dir_all(&a.out).map_err(|e| {
        EvalError::Usage(format!(
            "--out {}: cannot create the directory: {e}; name a directory to write the results to",
            a.out.display()
        ))
    })?;
    let mut results = Vec::new();
    for g in groups {
        bar.set_message(g[0].scenario.name.clone());
        results.push(ceiling::search_cell(g, &opts, &|| bar.inc(1))?);
    }
    bar.finish_and_clear();
    let command = format!(
        "cargo run --release -p polyphony-bench --bin ceiling -- {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let provenance = format!("Scenarios: {scenarios}. Search seed {} (`--seed`).", a.seed);
    let page = ceiling::summary(&results, &opts, a.runs, &command, &provenance);
    let write = |name: &str, text: &str| {
        let path = a.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write("summary.md", &page)?;
    write("candidates.csv", &ceiling::candidates_csv(&results))?;
    print!("{page}");
    eprintln!("wrote {}", a.out.display());
    Ok(())
}
