//! `fairness`: min-max fairness of the per-class mean ratio over the last N control intervals
//! of every run in committed `iterations.csv` files (the column `eval` now writes as
//! "fairness (mean r, last 10)"), for results measured before that column existed.
//!
//! `cargo run --release -p polyphony-bench --bin fairness -- docs/results/convergence/iterations.csv`

use anyhow::Result;
use clap::Parser;
use polyphony_bench::iterations;
use polyphony_bench::report::{tail_fairness, Spread, FAIRNESS_TAIL};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(about = "Fairness of the per-class mean p99/SLO over each run's last intervals, from iterations.csv files")]
struct Args {
    /// `iterations.csv` files written by `eval`.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Control intervals at the end of each run to average over.
    #[arg(long, default_value_t = FAIRNESS_TAIL)]
    last: usize,
}

fn main() {
    let code = match run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("fairness: {e:#}");
            1
        }
    };
    std::process::exit(code);
}

fn run() -> Result<()> {
    let args = Args::parse();
    if args.last == 0 {
        eprintln!("fairness: --last 0: give at least 1 interval to average over");
        std::process::exit(2);
    }
    for file in &args.files {
        let runs = iterations::read(file)?;
        println!("## {}\n", file.display());
        println!(
            "| scenario | tuner | runs | fairness (mean r, last {}) |\n|---|---|---|---|",
            args.last
        );
        let mut keys: Vec<(&str, &str)> = Vec::new();
        for r in &runs {
            if !keys.contains(&(r.scenario.as_str(), r.tuner.as_str())) {
                keys.push((&r.scenario, &r.tuner));
            }
        }
        for (sc, tu) in keys {
            let v: Vec<f64> = runs
                .iter()
                .filter(|r| r.scenario == sc && r.tuner == tu)
                .map(|r| tail_fairness(&r.ratios, args.last))
                .collect();
            println!("| {sc} | {tu} | {} | {} |", v.len(), Spread::of(&v).cell(2));
        }
        println!();
    }
    Ok(())
}
