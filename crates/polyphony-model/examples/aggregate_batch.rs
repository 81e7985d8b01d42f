//! One call of flowsim's aggregate mode on a batch of random configurations, for instruction
//! counts and for checking that a speed change left the results alone: it prints a digest of
//! every output bit (SLIs and counters) and, with `--dump FILE`, writes every configuration's
//! SLIs as JSON lines to compare in detail.
//!
//! ```text
//! cargo build --release -p polyphony-model --example aggregate_batch
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/agg.out \
//!     target/release/examples/aggregate_batch --configs 240 --seed 1
//! ```

mod common;

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_model::{default_cdf_dir, scenario_input, FlowSim, FlowSimMode, FlowSimOptions, NetworkModel};
use polyphony_spec::{KnobSpace, Nanos, NetworkConfig, Scenario};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hash::{Hash, Hasher};
use std::io::Write;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "configs/scenarios/reference-medium.toml")]
    scenario: String,
    /// Distinct random configurations in the batch.
    #[arg(long, default_value_t = 240)]
    configs: usize,
    /// Seconds of network time (default: the scenario's interval).
    #[arg(long)]
    duration: Option<f64>,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seed of the random configurations.
    #[arg(long, default_value_t = 7)]
    config_seed: u64,
    /// Evaluations of the batch (the digest is of the last).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Keep per-flow outcomes (`ModelInput::keep_flows`).
    #[arg(long)]
    keep_flows: bool,
    /// Use the built-in 32 × 8 leaf-spine scale scenario instead of `--scenario`.
    #[arg(long)]
    scale: bool,
    /// Write every configuration's output as one JSON line to this file.
    #[arg(long)]
    dump: Option<String>,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let s = if a.scale {
        polyphony_model::scale_scenario()
    } else {
        let text = std::fs::read_to_string(&a.scenario).with_context(|| format!("reading {}", a.scenario))?;
        Scenario::from_toml(&text, &a.scenario)?
    };
    let dscps = s.dscps();
    let space = KnobSpace::per_class_default(&dscps, s.topology.reference_rate());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(a.config_seed);
    let configs: Vec<NetworkConfig> = (0..a.configs)
        .map(|_| common::random_config(&dscps, &space, &mut rng))
        .collect();
    let duration = a.duration.map_or(s.interval(), Nanos::from_secs_f64);
    let mut input = scenario_input(&s, &default_cdf_dir(), duration, a.seed)?;
    input.keep_flows = a.keep_flows;
    let sim = FlowSim {
        options: FlowSimOptions {
            mode: FlowSimMode::Aggregate,
            ..FlowSimOptions::default()
        },
    };
    let mut outs = Vec::new();
    for _ in 0..a.repeat.max(1) {
        outs = sim.evaluate(&input, &configs);
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut dump = a.dump.as_deref().map(std::fs::File::create).transpose()?;
    for o in &outs {
        let o = o.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        let line = serde_json::to_string(o)?;
        line.hash(&mut h);
        if let Some(f) = &mut dump {
            writeln!(f, "{line}")?;
        }
    }
    println!(
        "{} flows, {} configurations, digest {:016x}",
        input.workload.flows.len(),
        outs.len(),
        h.finish()
    );
    Ok(())
}
