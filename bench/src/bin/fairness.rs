//! `fairness`: from committed `iterations.csv` files, per scenario and tuner, the min-max
//! fairness of the per-class mean ratio over the last N control intervals of every run (what
//! `eval` writes as "fairness (mean r, last 10)") and the controller's own decision time per
//! control interval (`decide_wall_s`, `decide_cpu_s`): median and max over every interval of
//! every run — the figures docs/evaluation.md quotes — and the model's speed against pktsim in
//! those decisions (pktsim's CPU time for the interval over the model's CPU time per
//! configuration it scored on that window): median and min over every decision; and the
//! model's error at the configurations in force, on each interval's own flows (|r̂ − r| / r per
//! class and interval, before calibration): median and 90th percentile. "Noise-only fairness"
//! is what measurement noise alone leaves of it (`report::noise_fairness`: each class's ratio
//! divided by its own mean over those intervals, min / max per interval, median; meaningful for
//! a tuner that holds one configuration). "–": the file has no such column, or the tuner has no
//! model (no-model, bluefin, fixed).
//!
//! `cargo run --release -p polyphony-bench --bin fairness -- docs/results/convergence/iterations.csv`

use anyhow::Result;
use clap::Parser;
use polyphony_bench::iterations;
use polyphony_bench::report::{noise_fairness, tail_fairness, Spread, FAIRNESS_TAIL};
use polyphony_spec::percentile;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    about = "Fairness of the per-class mean p99/SLO over each run's last intervals, decision time per interval, the model's speed against pktsim in each decision and its error at the configurations in force, from iterations.csv files"
)]
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
    // Each file's table goes out whole; a reader that went away (`| head`) ends the output
    // quietly.
    let mut stdout = std::io::stdout().lock();
    for file in &args.files {
        let runs = iterations::read(file)?;
        let mut out = String::new();
        let _ = writeln!(out, "## {}\n", file.display());
        let _ = writeln!(
            out,
            "| scenario | tuner | runs | fairness (mean r, last {}) | noise-only fairness | decide s wall: median · max | decide s CPU: median · max | model speed × pktsim: median · min | model error in the loop: median · p90 |\n|---|---|---|---|---|---|---|---|---|",
            args.last
        );
        let mut keys: Vec<(&str, &str)> = Vec::new();
        for r in &runs {
            if !keys.contains(&(r.scenario.as_str(), r.tuner.as_str())) {
                keys.push((&r.scenario, &r.tuner));
            }
        }
        for (sc, tu) in keys {
            let mine: Vec<_> = runs.iter().filter(|r| r.scenario == sc && r.tuner == tu).collect();
            let v: Vec<f64> = mine.iter().map(|r| tail_fairness(&r.ratios, args.last)).collect();
            let noise: Vec<f64> = mine.iter().map(|r| noise_fairness(&r.ratios, args.last)).collect();
            let time = |pick: fn(&(f64, f64)) -> f64| {
                let all: Vec<f64> = mine.iter().flat_map(|r| r.decide_s.iter().map(pick)).collect();
                let s = Spread::of(&all);
                if s.median.is_nan() {
                    "–".to_string()
                } else {
                    format!("{:.3} · {:.3}", s.median, s.max)
                }
            };
            let speed: Vec<f64> = mine.iter().flat_map(|r| r.speed.iter().copied()).collect();
            let speed = Spread::of(&speed);
            let speed = if speed.median.is_nan() {
                "–".to_string()
            } else {
                format!("{:.0} · {:.0}", speed.median, speed.min)
            };
            let mut err: Vec<f64> = mine.iter().flat_map(|r| r.model_errors()).collect();
            err.sort_by(f64::total_cmp);
            let err = match (percentile(&err, 0.5), percentile(&err, 0.9)) {
                (Some(m), Some(p)) => format!("{:.1} % · {:.1} %", 100.0 * m, 100.0 * p),
                _ => "–".to_string(),
            };
            let _ = writeln!(
                out,
                "| {sc} | {tu} | {} | {} | {} | {} | {} | {speed} | {err} |",
                v.len(),
                Spread::of(&v).cell(2),
                Spread::of(&noise).cell(2),
                time(|d| d.0),
                time(|d| d.1)
            );
        }
        out.push_str(
            "\nNoise-only fairness: each class's ratio over its own mean, min / max per interval, median (what noise alone leaves; for a tuner holding one configuration). –: no such column, or a tuner without a model.\n\n",
        );
        match stdout.write_all(out.as_bytes()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            r => r?,
        }
    }
    Ok(())
}
