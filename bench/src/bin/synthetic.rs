//! Runs every tuner on the synthetic problem over several seeds and prints (or writes) the
//! Markdown table of docs/controller.md.
//!
//! `cargo run --release -p polyphony-bench --bin synthetic -- --seeds 20`

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_bench::harness::{self, markdown, summarise, ALL};
use polyphony_bench::synthetic::Problem;
use polyphony_core::{ControllerParams, LocalSolver};

#[derive(Parser, Debug)]
#[command(about = "Synthetic benchmark of every tuner (docs/controller.md)")]
struct Args {
    /// Number of seeds (runs per tuner), at least 1.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Measured intervals per run.
    #[arg(long, default_value_t = 40)]
    iterations: usize,
    /// Comma-separated tuners (default: all).
    #[arg(long, value_delimiter = ',')]
    tuners: Vec<String>,
    /// Local solver of the acquisition: nelder-mead, lbfgs or batched.
    #[arg(long, default_value = "nelder-mead")]
    solver: String,
    /// Measurement noise σ (log-normal).
    #[arg(long, default_value_t = 0.05)]
    noise: f64,
    /// Optional JSON file of ControllerParams overrides.
    #[arg(long)]
    params: Option<std::path::PathBuf>,
    /// Print every iteration of every run to stderr.
    #[arg(long)]
    verbose: bool,
    /// Write the table here as well as to stdout.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let mut params: ControllerParams = match &a.params {
        Some(p) => {
            serde_json::from_str(&std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?)
                .with_context(|| format!("parsing {}", p.display()))?
        }
        None => ControllerParams::default(),
    };
    params.acq_solver = match a.solver.as_str() {
        "nelder-mead" => LocalSolver::NelderMead,
        "lbfgs" => LocalSolver::LbfgsFiniteDiff,
        "batched" => LocalSolver::Batched,
        s => anyhow::bail!("--solver {s:?}: use nelder-mead, lbfgs or batched"),
    };
    params.validate()?;
    if !(a.noise.is_finite() && a.noise >= 0.0) {
        anyhow::bail!("--noise {}: must be a finite number ≥ 0", a.noise);
    }
    let names: Vec<String> = if a.tuners.is_empty() {
        ALL.iter().map(|s| s.to_string()).collect()
    } else {
        a.tuners.clone()
    };
    let problem = Problem::new(a.noise);
    let mut traces = Vec::new();
    for n in &names {
        let mut runs = Vec::new();
        for seed in 0..a.seeds {
            runs.push(
                harness::run(n, &problem, seed, a.iterations, &params, a.verbose)
                    .with_context(|| format!("{n}, seed {seed}"))?,
            );
        }
        eprintln!("{n}: done");
        traces.push(runs);
    }
    let table = markdown(&summarise(&names, &traces));
    println!("{table}");
    if let Some(o) = a.out {
        std::fs::write(&o, &table).with_context(|| format!("writing {}", o.display()))?;
    }
    Ok(())
}
