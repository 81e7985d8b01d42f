//! Splits the cost of one `propose` (W_s = 50, nine knobs, zero-cost model) between the GP
//! and the acquisition by timing the full controller against the no-correction variant.
//! `cargo run --release -p polyphony-bench --example propose_cost`

use polyphony_bench::harness::primed_controller;
use polyphony_bench::synthetic::{Problem, SyntheticModel};
use polyphony_core::{Controller, ControllerParams, Variant};
use std::time::{Duration, Instant};

fn main() -> anyhow::Result<()> {
    let quick = SyntheticModel::new(Problem::new(0.05), Duration::ZERO);
    for (name, variant, reselect) in [
        ("full, gp refit", Variant::FULL, 1000),
        ("full, gp select", Variant::FULL, 1),
        ("no correction (no gp)", Variant::NO_CORRECTION, 1000),
    ] {
        let params = ControllerParams {
            gp_reselect_every: reselect,
            ..ControllerParams::default()
        };
        let c = primed_controller(params, 50)?;
        // Same state, the variant under test.
        let mut v: serde_json::Value = serde_json::from_str(&c.to_json()?)?;
        v["variant"] = serde_json::to_value(variant)?;
        let base = Controller::from_json(&v.to_string())?;
        let mut times = Vec::new();
        for _ in 0..15 {
            let mut c = base.clone();
            let t = Instant::now();
            c.propose(&quick)?;
            times.push(t.elapsed());
        }
        times.sort();
        println!("{name}: median {:?} min {:?}", times[times.len() / 2], times[0]);
    }
    Ok(())
}
