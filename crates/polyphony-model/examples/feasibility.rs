//! Are a scenario's SLOs reachable? Random search over `KnobSpace::per_class_default` with
//! `pktsim`, each configuration on several independent 12 s workload samples; prints the best
//! configurations by the mean of max_i p99_i / v_i. `--rate-mbps` / `--delay-us` override the
//! dumbbell's link rate and one-way delay to ask what would make the SLOs feasible.
//!
//! ```text
//! cargo run --release -p polyphony-model --example feasibility -- \
//!     --scenario configs/scenarios/reference-medium.toml --configs 200 --seeds 3
//! ```

mod common;

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_model::{scenario_input, NetworkModel, PktSim};
use polyphony_spec::{KnobSpace, NetworkConfig, Scenario, TopologySpec};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    scenario: String,
    /// Random configurations to try.
    #[arg(long, default_value_t = 200)]
    configs: usize,
    /// Independent workload samples per configuration.
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Override the dumbbell's link rate (Mbit/s).
    #[arg(long)]
    rate_mbps: Option<f64>,
    /// Override the dumbbell's one-way link delay (µs).
    #[arg(long)]
    delay_us: Option<f64>,
    /// How many of the best configurations to print.
    #[arg(long, default_value_t = 5)]
    top: usize,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let text = std::fs::read_to_string(&a.scenario).with_context(|| format!("reading {}", a.scenario))?;
    let mut s = Scenario::from_toml(&text, &a.scenario)?;
    if let TopologySpec::Dumbbell {
        rate_mbps,
        link_delay_us,
        ..
    } = &mut s.topology
    {
        if let Some(r) = a.rate_mbps {
            *rate_mbps = r;
        }
        if let Some(d) = a.delay_us {
            *link_delay_us = d;
        }
    }
    let dscps = s.dscps();
    let space = KnobSpace::per_class_default(&dscps);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let mut configs: Vec<NetworkConfig> = (0..a.configs)
        .map(|_| common::random_config(&dscps, &space, &mut rng))
        .collect();
    configs.push(polyphony_model::default_config(&s));
    let inputs: Vec<_> = (0..a.seeds)
        .map(|k| scenario_input(&s, s.interval(), s.seed + k))
        .collect::<Result<_, _>>()?;
    let model = PktSim::default();
    let mut scored = Vec::new();
    for c in &configs {
        let mut worst = 0.0;
        let mut p99s = vec![0.0; dscps.len()];
        for input in &inputs {
            let out = model
                .evaluate(input, std::slice::from_ref(c))
                .pop()
                .context("no result")??;
            let mut m: f64 = 0.0;
            for (i, cl) in s.classes.iter().enumerate() {
                let p = out.sli.get(cl.dscp).map_or(f64::INFINITY, |x| x.p99);
                p99s[i] += p / inputs.len() as f64;
                m = m.max(p / cl.slo.max_slowdown);
            }
            worst += m / inputs.len() as f64;
        }
        scored.push((worst, p99s, c.clone()));
    }
    scored.sort_by(|x, y| x.0.total_cmp(&y.0));
    println!(
        "scenario {} · topology {:?} · {} configurations × {} samples of {} s",
        s.name,
        s.topology,
        configs.len(),
        a.seeds,
        s.interval_s
    );
    println!(
        "SLOs: {:?}",
        s.classes.iter().map(|c| c.slo.max_slowdown).collect::<Vec<_>>()
    );
    let feasible = scored.iter().filter(|x| x.0 <= 1.0).count();
    println!("configurations meeting every SLO on average: {feasible}");
    for (w, p, c) in scored.iter().take(a.top) {
        let knobs: Vec<String> = c
            .classes
            .iter()
            .map(|k| format!("w={:.2} K={} iw={}", k.weight, k.ecn_threshold.0, k.init_cwnd.0))
            .collect();
        println!(
            "max r = {w:.2} · p99 = {:?} · {}",
            p.iter().map(|x| (x * 10.0).round() / 10.0).collect::<Vec<_>>(),
            knobs.join(" | ")
        );
    }
    Ok(())
}
