//! flowsim (both modes, side by side) against pktsim on a scenario across random configurations
//! from `KnobSpace::per_class_default`: per-class p99 mean absolute relative error, Spearman rank
//! correlation of J (LSE with c = 10, λ = 0.5, r_i = p99_i / SLO_i), and the speed ratio, all
//! measured in one run on one core. Prints a Markdown table.
//!
//! Timing: pktsim evaluates the batch once; each flowsim mode evaluates the same batch
//! `--repeat` times (a batch takes about a millisecond, too short to time once on a shared
//! machine) and the median is reported, per configuration. `NetworkModel::evaluate` is called
//! with the whole batch, the way the controller calls it, so work that does not depend on the
//! configuration (routes, ideal FCTs, per-link flow lists) is shared by the batch. With
//! `--controller-batch N` each flowsim mode is also timed on a batch of N configurations (the
//! random ones repeated), the size of one control decision's batch.
//!
//! ```text
//! cargo run --release -p polyphony-model --example accuracy -- \
//!     --scenario configs/scenarios/reference-medium.toml --configs 30 --duration 60
//! ```

mod common;

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_model::{
    default_cdf_dir, scenario_input, FlowSim, FlowSimMode, FlowSimOptions, ModelInput, ModelOutput, NetworkModel,
    PktSim,
};
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
    /// Times each flowsim mode evaluates the batch; the median is reported.
    #[arg(long, default_value_t = 11)]
    repeat: usize,
    /// Also time each flowsim mode on a batch of this many configurations (0: skip).
    #[arg(long, default_value_t = 240)]
    controller_batch: usize,
}

/// The median wall time (s) of `repeat` evaluations of `configs`, and the last outputs.
fn timed(
    m: &dyn NetworkModel,
    input: &ModelInput,
    configs: &[NetworkConfig],
    repeat: usize,
) -> Result<(Vec<ModelOutput>, f64)> {
    let mut times = Vec::new();
    let mut outs = Vec::new();
    for _ in 0..repeat.max(1) {
        let t0 = Instant::now();
        outs = m.evaluate(input, configs).into_iter().collect::<Result<Vec<_>, _>>()?;
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok((outs, times[times.len() / 2]))
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

    let modes = [
        ("per-flow", FlowSimMode::PerFlow),
        ("aggregate", FlowSimMode::Aggregate),
    ];
    let sims: Vec<FlowSim> = modes
        .iter()
        .map(|&(_, mode)| FlowSim {
            options: FlowSimOptions {
                mode,
                ..FlowSimOptions::default()
            },
        })
        .collect();
    let mut fos = Vec::new();
    for m in &sims {
        fos.push(timed(m, &input, &configs, a.repeat)?);
    }
    let (po, pt) = timed(&PktSim::default(), &input, &configs, 1)?;
    let big: Vec<NetworkConfig> = configs.iter().cycle().take(a.controller_batch).cloned().collect();
    let mut big_times = Vec::new();
    if !big.is_empty() {
        for m in &sims {
            big_times.push(timed(m, &input, &big, a.repeat.div_ceil(4))?.1);
        }
    }

    let n = s.classes.len();
    let p99 = |o: &ModelOutput, d| o.sli.get(d).map_or(f64::NAN, |x| x.p99);
    let jp: Vec<f64> = po.iter().map(|p| common::objective(&p.sli, &s.classes)).collect();
    let mut are = vec![vec![0.0; n]; modes.len()];
    let mut js = vec![Vec::new(); modes.len()];
    for (m, (fo, _)) in fos.iter().enumerate() {
        for (f, p) in fo.iter().zip(&po) {
            for (i, c) in s.classes.iter().enumerate() {
                let (x, y) = (p99(f, c.dscp), p99(p, c.dscp));
                are[m][i] += (x - y).abs() / y / configs.len() as f64;
            }
            js[m].push(common::objective(&f.sli, &s.classes));
        }
    }
    if a.verbose {
        let round = |o: &ModelOutput| -> Vec<f64> {
            s.classes
                .iter()
                .map(|c| (p99(o, c.dscp) * 10.0).round() / 10.0)
                .collect()
        };
        for (k, cfg) in configs.iter().enumerate() {
            let knobs: Vec<String> = cfg
                .classes
                .iter()
                .map(|c| format!("{:.2}/{}/{}", c.weight, c.ecn_threshold.0, c.init_cwnd.0))
                .collect();
            println!(
                "config {k:2} [{}]: J per-flow {:.2} aggregate {:.2} pktsim {:.2} · p99 per-flow {:?} aggregate {:?} pktsim {:?}",
                knobs.join(" "),
                js[0][k],
                js[1][k],
                jp[k],
                round(&fos[0].0[k]),
                round(&fos[1].0[k]),
                round(&po[k])
            );
        }
    }
    let packets: u64 = po.iter().map(|o| o.stats.packets).sum();
    println!(
        "scenario `{}` ({:?}), {} s of network time, {} flows, {} random configurations, workload seed {}, config seed {}",
        s.name,
        s.topology,
        duration.as_secs_f64(),
        flows,
        configs.len(),
        a.seed,
        a.config_seed
    );
    println!();
    println!("| quantity | flowsim per-flow | flowsim aggregate |");
    println!("|---|---|---|");
    for (i, c) in s.classes.iter().enumerate() {
        println!(
            "| p99 slowdown MARE vs pktsim, {} | {:.1} % | {:.1} % |",
            c.name,
            are[0][i] * 100.0,
            are[1][i] * 100.0
        );
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64 * 100.0;
    println!(
        "| p99 slowdown MARE vs pktsim, all classes | {:.1} % | {:.1} % |",
        mean(&are[0]),
        mean(&are[1])
    );
    println!(
        "| Spearman ρ of J across configurations (vs pktsim) | {:.3} | {:.3} |",
        common::spearman(&js[0], &jp),
        common::spearman(&js[1], &jp)
    );
    let per_cfg = |t: f64, k: usize| t * 1e3 / k as f64;
    let nc = configs.len();
    println!(
        "| wall time per configuration, batch of {nc} (median of {}) | {:.4} ms ({:.2} M flows/s) | {:.4} ms ({:.2} M flows/s) |",
        a.repeat.max(1),
        per_cfg(fos[0].1, nc),
        (flows * nc) as f64 / fos[0].1 / 1e6,
        per_cfg(fos[1].1, nc),
        (flows * nc) as f64 / fos[1].1 / 1e6
    );
    println!(
        "| speed ratio pktsim / flowsim, batch of {nc} | {:.0}× | {:.0}× |",
        pt / fos[0].1,
        pt / fos[1].1
    );
    if let [t0, t1] = big_times[..] {
        let k = big.len();
        println!(
            "| wall time per configuration, batch of {k} | {:.4} ms | {:.4} ms |",
            per_cfg(t0, k),
            per_cfg(t1, k)
        );
        println!(
            "| speed ratio pktsim / flowsim, batch of {k} (per configuration) | {:.0}× | {:.0}× |",
            per_cfg(pt, nc) / per_cfg(t0, k),
            per_cfg(pt, nc) / per_cfg(t1, k)
        );
    }
    println!(
        "| pktsim wall time per configuration | {:.1} ms ({:.2} M host packets/s) | |",
        per_cfg(pt, nc),
        packets as f64 / pt / 1e6
    );
    Ok(())
}
