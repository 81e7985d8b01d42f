//! `scale-ceiling`: how many of the scale study's scenarios can converge at all — a
//! configuration search in pktsim on the study's own scenarios and SLOs (`polyphony_bench::ceiling`).
//!
//! `cargo run --release -p polyphony-bench --bin scale-ceiling -- --out docs/results/scale-ceiling`

use anyhow::{Context, Result};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use polyphony_bench::ceiling::{self, CeilingOptions};
use polyphony_bench::scale::{self, ScaleArgs};
use polyphony_bench::EvalError;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(about = "Search pktsim for the configuration that meets the scale scenarios' SLOs in the most windows")]
struct Args {
    #[command(flatten)]
    scale: ScaleArgs,
    /// Random configurations replayed as drawn, per cell.
    #[arg(long, default_value_t = 12)]
    random: usize,
    /// Random configurations flowsim ranks, per cell.
    #[arg(long, default_value_t = 512)]
    pool: usize,
    /// Candidates taken from the top of flowsim's ranking, per cell.
    #[arg(long, default_value_t = 12)]
    ranked: usize,
    /// Windows every candidate is replayed on.
    #[arg(long, default_value_t = 10)]
    screen_windows: usize,
    /// Fresh windows the best and the reference are replayed on.
    #[arg(long, default_value_t = 20)]
    confirm_windows: usize,
    /// Control intervals of a run (the scale study's --iterations).
    #[arg(long, default_value_t = 10)]
    intervals: usize,
    /// Runs per scenario in the study (its --seeds): a scenario counts when more than half converge.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seed of the candidates and the windows.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Replays in parallel.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Output directory.
    #[arg(long, default_value = "docs/results/scale-ceiling")]
    out: PathBuf,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("scale-ceiling: {e:#}");
        std::process::exit(polyphony_bench::exit_code(&e));
    }
}

fn run() -> Result<()> {
    let a = Args::parse();
    if a.screen_windows == 0 || a.confirm_windows == 0 || a.intervals == 0 || a.runs == 0 || a.jobs == 0 {
        return Err(EvalError::Usage(format!(
            "--screen-windows {}, --confirm-windows {}, --intervals {}, --runs {}, --jobs {}: each must be at least 1",
            a.screen_windows, a.confirm_windows, a.intervals, a.runs, a.jobs
        ))
        .into());
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(a.jobs)
        .build_global()
        .context("starting the replay threads")?;
    let so = a.scale.options();
    let opts = CeilingOptions {
        random: a.random,
        pool: a.pool,
        ranked: a.ranked,
        screen_windows: a.screen_windows,
        confirm_windows: a.confirm_windows,
        intervals: a.intervals,
        seed: a.seed,
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
    let planned = scale::plan(&so, a.scale.scenario_seed, &|name| {
        bar.set_message(format!("baseline SLOs of {name}"))
    })?;
    let cells: Vec<_> = planned.chunks(2).collect();
    bar.set_length(cells.len() as u64 * ceiling::replays_per_cell(&opts));
    let mut results = Vec::new();
    for cell in cells {
        bar.set_message(cell[0].label.trim_end_matches("-high").to_string());
        results.push(ceiling::search_cell(cell, &opts, &|| bar.inc(1))?);
    }
    bar.finish_and_clear();
    let command = format!(
        "cargo run --release -p polyphony-bench --bin scale-ceiling -- {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let provenance = format!(
        "Scenarios as the scale study plans them: {}×{} leaf-spine, {} ms intervals; {} Search seed {} (`--seed`).",
        a.scale.racks,
        a.scale.hosts_per_rack,
        a.scale.interval_ms,
        a.scale.provenance(),
        a.seed
    );
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
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
