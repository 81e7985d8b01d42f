//! One call of flowsim on a batch of random configurations, for instruction
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

use anyhow::Result;
use clap::Parser;
use polyphony_model::{FlowSim, NetworkModel};
use std::hash::{Hash, Hasher};
use std::io::Write;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    sample: common::sample::SampleArgs,
    /// Evaluations of the batch (the digest is of the last).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Keep per-flow outcomes (`ModelInput::keep_flows`).
    #[arg(long)]
    keep_flows: bool,
    /// Write every configuration's output as one JSON line to this file.
    #[arg(long)]
    dump: Option<String>,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let common::sample::Sample { configs, mut input, .. } = a.sample.load()?;
    input.keep_flows = a.keep_flows;
    let sim = FlowSim::default();
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
