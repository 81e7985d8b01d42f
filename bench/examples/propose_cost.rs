//! Splits the cost of one `propose` (W_s = 50, nine knobs, zero-cost model) between the GP
//! and the acquisition by timing the full controller against the no-correction variant.
//! `cargo run --release -p polyphony-bench --example propose_cost`

use polyphony_bench::synthetic::{Problem, SyntheticModel};
use polyphony_core::{default_initial, Controller, ControllerParams, Observation, Variant};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::{Duration, Instant};

fn main() -> anyhow::Result<()> {
    let problem = Problem::new(0.05);
    let quick = SyntheticModel::new(problem.clone(), Duration::ZERO);
    for (name, variant, reselect) in [
        ("full, gp refit", Variant::FULL, 1000),
        ("full, gp select", Variant::FULL, 1),
        ("no correction (no gp)", Variant::NO_CORRECTION, 1000),
    ] {
        let params = ControllerParams {
            gp_reselect_every: reselect,
            ..ControllerParams::default()
        };
        let mut c = Controller::new(
            &problem.classes,
            &problem.knobs,
            default_initial(&problem.classes),
            params,
            Variant::FULL,
        )?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut noise = Xoshiro256PlusPlus::seed_from_u64(2);
        while c.samples() < 50 {
            let z: Vec<f64> = (0..9)
                .map(|i| {
                    if i < 6 {
                        rng.gen::<f64>()
                    } else {
                        rng.gen::<f64>() * 2.0 - 1.0
                    }
                })
                .collect();
            let cfg = problem.space.config_of(&problem.space.point_of(&z), c.initial())?;
            let (_, slis) = problem.measure(&cfg, &mut noise);
            c.observe(&Observation {
                config: cfg,
                slis,
                workload: None,
            })?;
            c.propose(&quick)?;
        }
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
