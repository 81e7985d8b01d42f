//! flowsim against pktsim on a scenario across random configurations from
//! `KnobSpace::per_class_default`: per-class p99 mean absolute relative error, Spearman rank
//! correlation of J (LSE with c = 10, λ = 0.5, r_i = p99_i / SLO_i), and the speed ratio,
//! measured side by side in one run on one core. Prints a Markdown table.
//!
//! ```text
//! cargo run --release -p polyphony-model --example accuracy -- \
//!     --scenario configs/scenarios/reference-medium.toml --configs 30 --duration 60
//! ```

mod common;

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_model::{default_cdf_dir, scenario_input, FlowSim, ModelOutput, NetworkModel, PktSim};
use polyphony_spec::{KnobSpace, Nanos, NetworkConfig, Scenario, TopologySpec};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Instant;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "configs/scenarios/reference-medium.toml")]
    scenario: String,
    /// Random configurations.
    #[arg(long, default_value_t = 30)]
    configs: usize,
    /// Seconds of network time per evaluation (default: the scenario's interval).
    #[arg(long)]
    duration: Option<f64>,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seed of the random configurations.
    #[arg(long, default_value_t = 7)]
    config_seed: u64,
    /// Override the dumbbell's one-way link delay (µs).
    #[arg(long)]
    delay_us: Option<f64>,
    /// Print one line per configuration.
    #[arg(long)]
    verbose: bool,
    /// Use the built-in 32 × 8 leaf-spine scale scenario instead of `--scenario`.
    #[arg(long)]
    scale: bool,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let mut s = if a.scale {
        polyphony_model::scale_scenario()
    } else {
        let text = std::fs::read_to_string(&a.scenario).with_context(|| format!("reading {}", a.scenario))?;
        Scenario::from_toml(&text, &a.scenario)?
    };
    if let (Some(d), TopologySpec::Dumbbell { link_delay_us, .. }) = (a.delay_us, &mut s.topology) {
        *link_delay_us = d;
    }
    let dscps = s.dscps();
    let space = KnobSpace::per_class_default(&dscps, s.topology.reference_rate());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(a.config_seed);
    let configs: Vec<NetworkConfig> = (0..a.configs)
        .map(|_| common::random_config(&dscps, &space, &mut rng))
        .collect();
    let duration = a.duration.map_or(s.interval(), Nanos::from_secs_f64);
    let input = scenario_input(&s, &default_cdf_dir(), duration, a.seed)?;
    let flows = input.workload.flows.len();

    let timed = |m: &dyn NetworkModel| -> Result<(Vec<ModelOutput>, f64)> {
        let t0 = Instant::now();
        let outs = m
            .evaluate(&input, &configs)
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        Ok((outs, t0.elapsed().as_secs_f64()))
    };
    let (fo, ft) = timed(&FlowSim::default())?;
    let (po, pt) = timed(&PktSim::default())?;

    let n = s.classes.len();
    let mut are = vec![0.0; n];
    let (mut jf, mut jp) = (Vec::new(), Vec::new());
    for (k, (f, p)) in fo.iter().zip(&po).enumerate() {
        for (i, c) in s.classes.iter().enumerate() {
            let (a_, b_) = (
                f.sli.get(c.dscp).map_or(f64::NAN, |x| x.p99),
                p.sli.get(c.dscp).map_or(f64::NAN, |x| x.p99),
            );
            are[i] += (a_ - b_).abs() / b_ / configs.len() as f64;
        }
        jf.push(common::objective(&f.sli, &s.classes));
        jp.push(common::objective(&p.sli, &s.classes));
        if a.verbose {
            let p99 = |o: &ModelOutput| -> Vec<f64> {
                s.classes
                    .iter()
                    .map(|c| o.sli.get(c.dscp).map_or(f64::NAN, |x| (x.p99 * 10.0).round() / 10.0))
                    .collect()
            };
            let knobs: Vec<String> = configs[k]
                .classes
                .iter()
                .map(|c| format!("{:.2}/{}/{}", c.weight, c.ecn_threshold.0, c.init_cwnd.0))
                .collect();
            println!(
                "config {k:2} [{}]: J flowsim {:.2} pktsim {:.2} · p99 flowsim {:?} pktsim {:?}",
                knobs.join(" "),
                jf[k],
                jp[k],
                p99(f),
                p99(p)
            );
        }
    }
    let rho = common::spearman(&jf, &jp);
    let packets: u64 = po.iter().map(|o| o.stats.packets).sum();
    println!("scenario `{}` ({:?}), {} s of network time, {} flows, {} random configurations, workload seed {}, config seed {}", s.name, s.topology, duration.as_secs_f64(), flows, configs.len(), a.seed, a.config_seed);
    println!();
    println!("| quantity | value |");
    println!("|---|---|");
    for (i, c) in s.classes.iter().enumerate() {
        println!(
            "| p99 slowdown MARE, {} (flowsim vs pktsim) | {:.1} % |",
            c.name,
            are[i] * 100.0
        );
    }
    println!(
        "| p99 slowdown MARE, all classes | {:.1} % |",
        are.iter().sum::<f64>() / n as f64 * 100.0
    );
    println!("| Spearman ρ of J across configurations | {rho:.3} |");
    println!(
        "| flowsim wall time per configuration | {:.3} ms ({:.2} M flows/s) |",
        ft * 1e3 / configs.len() as f64,
        flows as f64 * configs.len() as f64 / ft / 1e6
    );
    println!(
        "| pktsim wall time per configuration | {:.1} ms ({:.2} M host packets/s) |",
        pt * 1e3 / configs.len() as f64,
        packets as f64 / pt / 1e6
    );
    println!("| speed ratio pktsim / flowsim | {:.0}× |", pt / ft);
    Ok(())
}
