//! How far pktsim's own per-class p99 moves for reasons no model could act on, by regime and
//! by how many flows the class has in the window:
//!
//! * `--mode knobs`: every class's weight scaled by a random factor in [1 − ε, 1 + ε]
//!   (renormalised), ECN thresholds by another, on the **same flows** — the floor for a model
//!   judged, as `validate` judges it, on the same arrivals pktsim ran;
//! * `--mode jitter`: the same flows, each start moved later by a uniform draw below one
//!   packet time (1514 bytes at the reference rate), re-sorted: to any statistic a model reads the
//!   same workload. The other side is the median p99 over `--realizations` such copies — how
//!   far one window's p99 lies from what its arrivals decide, the floor for a model that sees
//!   flows but not the sub-packet timing of their packets;
//! * `--mode arrivals`: the same scenario and configuration with the flows drawn from other
//!   workload seeds (same distributions, other arrivals and sizes; same ECMP salt). One side is
//!   the median p99 over windows 0..W (`--windows`, default 1: the case's own window), the
//!   other the median over the next `--realizations` windows. W = 1, one realization: how far
//!   the next window moves from this one. W = 1, N realizations: what pktsim itself, run on
//!   this window, would score as a prediction of the next ones (`validate --windows N+1
//!   --next` puts the models to the same test). W = N: how far apart two N-window scenario
//!   p99s still are (`validate --windows N` compares such medians on shared windows).
//!
//! Per case it also gives Spearman's ρ of J (as `validate` computes it) between the two sides
//! over the compared configurations: how well a model that erred only by this much could rank
//! them.
//!
//! With `--pktsim-cache` the case's own window is the run `validate` / `train_correction`
//! cache (`--configs` must then match theirs), and `--mode arrivals` caches the other windows
//! as `validate --windows` does (every configuration of the case); `--mode knobs` runs the
//! first `--compare` configurations again, moved.
//!
//! ```text
//! cargo run --release -p polyphony-model --example noise_floor -- --set dev --cases 36 --mode arrivals --configs 8 --compare 8 --realizations 4
//! ```

mod common;

use anyhow::{bail, Result};
use clap::Parser;
use polyphony_model::validation::{case, jittered, median, objective, spearman, Case, Regime};
use polyphony_model::{ModelOutput, NetworkModel, PktSim};
use polyphony_spec::{Bytes, NetworkConfig};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    cases: common::CaseArgs,
    /// `knobs` (same flows, knobs moved by ε), `jitter` (same flows moved by under a packet
    /// time, same knobs) or `arrivals` (other flows, same knobs).
    #[arg(long, default_value = "knobs")]
    mode: String,
    /// Relative perturbation of each knob (`--mode knobs`).
    #[arg(long, default_value_t = 0.01)]
    epsilon: f64,
    /// Random configurations per case (match `validate` / `train_correction` to share a cache).
    #[arg(long, default_value_t = 1, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    configs: usize,
    /// Other workload draws per configuration (`--mode arrivals`); each class's p99 is their
    /// median.
    #[arg(long, default_value_t = 1)]
    realizations: usize,
    /// Windows on the first side (`--mode arrivals`): each class's p99 is the median over
    /// windows 0..W, the other side's over the next `--realizations` — how far apart two
    /// scenario-level p99s of the kind `validate --windows W` compares still are.
    #[arg(long, default_value_t = 1)]
    windows: u64,
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

/// What one case gives: (regime, class flows, relative change of the class's p99) per compared
/// (configuration, class), and ρ of J between the two runs (NaN under two configurations).
type CaseChanges = (Vec<(Regime, u64, f64)>, f64);

fn run(c: &Case, a: &Args) -> Result<CaseChanges> {
    let input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
    // `--windows` is 1 outside `--mode arrivals` (checked in main): the case's own window.
    let first = common::pktcache::median_over(c, 0..a.windows.max(1), &a.cases.set, a.pktsim_cache.as_deref())?;
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
        "jitter" => {
            let rate = c.scenario.topology.reference_rate();
            let runs: Vec<Vec<ModelOutput>> = (0..a.realizations.max(1) as u64)
                .map(|draw| {
                    let seed = c.seed ^ draw.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x6a09;
                    let mut moved = input.clone();
                    moved.workload = std::sync::Arc::new(jittered(&input.workload, rate, seed)?);
                    PktSim::default()
                        .evaluate(&moved, &c.configs[..n])
                        .into_iter()
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(anyhow::Error::from)
                })
                .collect::<Result<_>>()?;
            common::median_p99(&runs, &c.scenario.classes)
        }
        "arrivals" => {
            let w0 = a.windows.max(1);
            let later = w0..w0 + a.realizations.max(1) as u64;
            common::pktcache::median_over(c, later, &a.cases.set, a.pktsim_cache.as_deref())?[..n].to_vec()
        }
        m => bail!("--mode {m}: use knobs, jitter or arrivals"),
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
    let rho = if n >= 2 {
        let j = |o: &[ModelOutput]| -> Vec<f64> { o.iter().map(|x| objective(&x.sli, &c.scenario.classes)).collect() };
        spearman(&j(&first[..n]), &j(&second))
    } else {
        f64::NAN
    };
    Ok((out, rho))
}

fn main() -> Result<()> {
    let a = Args::parse();
    if a.mode != "arrivals" && a.windows > 1 {
        bail!("--windows draws other windows: it goes with --mode arrivals");
    }
    if a.mode == "knobs" && a.realizations > 1 {
        bail!("--realizations counts other windows or jittered copies: it goes with --mode arrivals or jitter");
    }
    let (set, range) = a.cases.range()?;
    let cases: Vec<Case> = range.map(|i| case(set, i, a.configs)).collect::<Result<_, _>>()?;
    let per_case = common::par_map(&cases, a.threads, |c| run(c, &a))?;
    let mut rho_by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (c, (_, rho)) in cases.iter().zip(&per_case) {
        rho_by.entry(c.regime.to_string()).or_default().push(*rho);
    }
    let rows: Vec<(Regime, u64, f64)> = per_case.into_iter().flat_map(|(r, _)| r).collect();
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
    println!("| regime | class p99s | median change | within 10 % | within 20 % | median ρ of J |\n|---|---|---|---|---|---|");
    let row = |name: &str, v: &[f64], rho: Option<&[f64]>| {
        let w = |t: f64| v.iter().filter(|&&e| e <= t).count() as f64 / v.len().max(1) as f64 * 100.0;
        let rho = rho
            .map(median)
            .filter(|r| r.is_finite())
            .map_or("–".to_string(), |r| format!("{r:.2}"));
        println!(
            "| {name} | {} | {:.1} % | {:.0} % | {:.0} % | {rho} |",
            v.len(),
            median(v) * 100.0,
            w(0.1),
            w(0.2)
        );
    };
    for (g, v) in &by {
        row(g, v, rho_by.get(g).map(Vec::as_slice));
    }
    for (band, v) in &by_flows {
        row(
            ["class < 300 flows", "class 300–999 flows", "class ≥ 1000 flows"][*band as usize],
            v,
            None,
        );
    }
    let all: Vec<f64> = rows.iter().map(|r| r.2).collect();
    let all_rho: Vec<f64> = rho_by.values().flatten().copied().collect();
    row("**all**", &all, Some(&all_rho));
    Ok(())
}
