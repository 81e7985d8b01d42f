//! How far pktsim's own per-class p99 moves when a configuration changes by an amount no
//! model could act on: every class's weight scaled by a random factor in [1 − ε, 1 + ε]
//! (renormalised), ECN thresholds by another, on the same flows. The median relative change
//! bounds from below the median error any model can have against a single pktsim run.
//!
//! ```text
//! cargo run --release -p polyphony-model --example noise_floor -- --set dev --cases 36 --epsilon 0.01
//! ```

mod common;

use anyhow::Result;
use clap::Parser;
use polyphony_model::validation::{case, median, Regime};
use polyphony_model::{NetworkModel, PktSim};
use polyphony_spec::Bytes;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    cases: common::CaseArgs,
    /// Relative perturbation of each knob.
    #[arg(long, default_value_t = 0.01)]
    epsilon: f64,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let (set, range) = a.cases.range()?;
    let mut by: BTreeMap<Regime, Vec<f64>> = BTreeMap::new();
    let mut all = Vec::new();
    for i in range {
        let c = case(set, i, 1)?;
        let input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
        let base = c.configs[0].clone();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(c.seed ^ 0x7e57);
        let mut moved = base.clone();
        for k in &mut moved.classes {
            k.weight *= 1.0 + rng.gen_range(-a.epsilon..a.epsilon);
            k.ecn_threshold = Bytes((k.ecn_threshold.0 as f64 * (1.0 + rng.gen_range(-a.epsilon..a.epsilon))) as u64);
        }
        let sum: f64 = moved.classes.iter().map(|k| k.weight).sum();
        for k in &mut moved.classes {
            k.weight /= sum;
        }
        let out = PktSim::default().evaluate(&input, &[base, moved]);
        let (Ok(x), Ok(y)) = (&out[0], &out[1]) else {
            anyhow::bail!("pktsim failed on case {}", c.seed);
        };
        for cl in &c.scenario.classes {
            if let (Some(p), Some(q)) = (x.sli.get(cl.dscp), y.sli.get(cl.dscp)) {
                if p.p99 > 0.0 {
                    let e = (q.p99 - p.p99).abs() / p.p99;
                    by.entry(c.regime).or_default().push(e);
                    all.push(e);
                }
            }
        }
    }
    println!("| regime | class p99s | median change | within 20 % |\n|---|---|---|---|");
    let row = |name: String, v: &[f64]| {
        let w = v.iter().filter(|&&e| e <= 0.2).count() as f64 / v.len().max(1) as f64;
        println!(
            "| {name} | {} | {:.1} % | {:.0} % |",
            v.len(),
            median(v) * 100.0,
            w * 100.0
        );
    };
    for (g, v) in &by {
        row(g.to_string(), v);
    }
    row("**all**".into(), &all);
    Ok(())
}
