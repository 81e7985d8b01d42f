//! How far pktsim's own per-class p99 moves for reasons no model could act on, by regime and
//! by how many flows the class has in the window:
//!
//! * `--mode knobs`: every class's weight scaled by a random factor in [1 − ε, 1 + ε]
//!   (renormalised), ECN thresholds by another, on the **same flows** — the floor for a model
//!   judged, as `validate` judges it, on the same arrivals pktsim ran;
//! * `--mode arrivals`: the same scenario and configuration with the flows drawn from another
//!   workload seed (same distributions, other arrivals and sizes; same ECMP salt) — the floor for
//!   predicting the next window of a live network from this one.
//!
//! With `--pktsim-cache` the first run of each case is the one `validate` / `train_correction`
//! cache (`--configs` must then match theirs); the second runs for the first `--compare`
//! configurations.
//!
//! ```text
//! cargo run --release -p polyphony-model --example noise_floor -- --set dev --cases 36 --mode arrivals --configs 4 --compare 2
//! ```

mod common;

use anyhow::{bail, Result};
use clap::Parser;
use polyphony_model::validation::{case, median, Case, Regime};
use polyphony_model::{ModelOutput, NetworkModel, PktSim};
use polyphony_spec::{Bytes, NetworkConfig};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    cases: common::CaseArgs,
    /// `knobs` (same flows, knobs moved by ε) or `arrivals` (other flows, same knobs).
    #[arg(long, default_value = "knobs")]
    mode: String,
    /// Relative perturbation of each knob (`--mode knobs`).
    #[arg(long, default_value_t = 0.01)]
    epsilon: f64,
    /// Random configurations per case (match `validate` / `train_correction` to share a cache).
    #[arg(long, default_value_t = 1)]
    configs: usize,
    /// Configurations per case compared (the first ones).
    #[arg(long, default_value_t = 1)]
    compare: usize,
    /// Worker threads (cases in parallel).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// pktsim's first runs are read from / written to this directory.
    #[arg(long)]
    pktsim_cache: Option<std::path::PathBuf>,
}

fn perturbed(base: &NetworkConfig, eps: f64, seed: u64) -> NetworkConfig {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7e57);
    let mut moved = base.clone();
    for k in &mut moved.classes {
        k.weight *= 1.0 + rng.gen_range(-eps..eps);
        k.ecn_threshold = Bytes((k.ecn_threshold.0 as f64 * (1.0 + rng.gen_range(-eps..eps))) as u64);
    }
    let sum: f64 = moved.classes.iter().map(|k| k.weight).sum();
    for k in &mut moved.classes {
        k.weight /= sum;
    }
    moved
}

/// (regime, class flows, relative change of the class's p99) per compared (configuration, class).
fn run(c: &Case, a: &Args) -> Result<Vec<(Regime, u64, f64)>> {
    let input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
    let (first, _) = common::pktcache::outputs(c, &input, &a.cases.set, a.pktsim_cache.as_deref())?;
    let n = a.compare.min(c.configs.len());
    let second: Vec<ModelOutput> = match a.mode.as_str() {
        "knobs" => {
            let moved: Vec<NetworkConfig> = c.configs[..n]
                .iter()
                .enumerate()
                .map(|(k, cfg)| perturbed(cfg, a.epsilon, c.seed.wrapping_add(k as u64)))
                .collect();
            PktSim::default()
                .evaluate(&input, &moved)
                .into_iter()
                .collect::<Result<_, _>>()?
        }
        "arrivals" => {
            let other = c.seed ^ 0xa771_7a15_0000_0000;
            let mut input2 = polyphony_model::scenario_input(&c.scenario, c.duration(), other)?;
            input2.seed = input.seed;
            PktSim::default()
                .evaluate(&input2, &c.configs[..n])
                .into_iter()
                .collect::<Result<_, _>>()?
        }
        m => bail!("--mode {m}: use knobs or arrivals"),
    };
    let mut out = Vec::new();
    for (x, y) in first.iter().zip(&second) {
        for cl in &c.scenario.classes {
            if let (Some(p), Some(q)) = (x.sli.get(cl.dscp), y.sli.get(cl.dscp)) {
                if p.p99 > 0.0 && p.flows > 0 {
                    out.push((c.regime, p.flows.min(q.flows), (q.p99 - p.p99).abs() / p.p99));
                }
            }
        }
    }
    Ok(out)
}

fn main() -> Result<()> {
    let a = Args::parse();
    let (set, range) = a.cases.range()?;
    let cases: Vec<Case> = range.map(|i| case(set, i, a.configs)).collect::<Result<_, _>>()?;
    let rows: Vec<(Regime, u64, f64)> = common::par_map(&cases, a.threads, |c| run(c, &a))?
        .into_iter()
        .flatten()
        .collect();
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut by_flows: BTreeMap<u8, Vec<f64>> = BTreeMap::new();
    for (g, n, e) in &rows {
        by.entry(g.to_string()).or_default().push(*e);
        let band = match n {
            0..=299 => 0,
            300..=999 => 1,
            _ => 2,
        };
        by_flows.entry(band).or_default().push(*e);
    }
    println!("mode {}, {} cases\n", a.mode, cases.len());
    println!("| regime | class p99s | median change | within 10 % | within 20 % |\n|---|---|---|---|---|");
    let row = |name: &str, v: &[f64]| {
        let w = |t: f64| v.iter().filter(|&&e| e <= t).count() as f64 / v.len().max(1) as f64 * 100.0;
        println!(
            "| {name} | {} | {:.1} % | {:.0} % | {:.0} % |",
            v.len(),
            median(v) * 100.0,
            w(0.1),
            w(0.2)
        );
    };
    for (g, v) in &by {
        row(g, v);
    }
    for (band, v) in &by_flows {
        row(
            ["class < 300 flows", "class 300–999 flows", "class ≥ 1000 flows"][*band as usize],
            v,
        );
    }
    let all: Vec<f64> = rows.iter().map(|r| r.2).collect();
    row("**all**", &all);
    Ok(())
}
