//! The flow-level models (flowsim and the corrected model, side by side) against pktsim on a
//! scenario across random configurations from `KnobSpace::per_class_default` (or, with
//! `--scenario-knobs`, the scenario's own space: buffers and categorical choices): per-class
//! mean absolute relative error of the SLI each class's SLO is about (p99 slowdown, or p99 QCT),
//! also per combination of categorical choices, Spearman rank correlation of J (LSE with c = 10,
//! λ = 0.5, r_i = SLI_i / SLO_i), and the speed ratio, all measured in one run on one core.
//! Prints a Markdown table.
//!
//! Timing, side by side: pktsim evaluates the configurations one at a time, and after each of
//! them every flow-level model evaluates the whole batch (a few times: one batch takes about a
//! millisecond) and the controller-sized batch once, so both models are timed under the same
//! load from the other processes sharing the machine. Reported per configuration: pktsim's
//! total over the configurations, flowsim's median over the turns (wall) and mean (CPU). Two
//! clocks: wall time, and the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which other
//! processes time-sharing the cores do not inflate (contention for caches still does).
//! `NetworkModel::evaluate` is called with the whole batch on one model value and one input,
//! the way the controller calls it within an iteration, so work that does not depend on the
//! configuration (routes, ideal FCTs, per-link flow lists) is planned on the first call and
//! reused by the later ones (the value keeps the plan of its last input): the ratios are the
//! steady state the controller pays per batch. What the first call of a window costs (planning
//! included) is timed separately, on a fresh model value each turn. With
//! `--controller-batch N` each flow-level model is also timed on a batch of N configurations (the
//! random ones repeated), the size of one control decision's batch.
//!
//! ```text
//! cargo run --release -p polyphony-model --example accuracy -- \
//!     --scenario configs/scenarios/reference-medium.toml --configs 30 --duration 60
//! ```

mod common;

use anyhow::Result;
use clap::Parser;
use polyphony_model::{Corrected, FlowSim, ModelInput, ModelOutput, NetworkModel, PktSim};
use polyphony_spec::NetworkConfig;
use std::time::Instant;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    sample: common::sample::SampleArgs,
    /// Print one line per configuration.
    #[arg(long)]
    verbose: bool,
    /// Evaluations of the batch per flow-level model, spread over the pktsim runs.
    #[arg(long, default_value_t = 60)]
    repeat: usize,
    /// Also time each flow-level model on a batch of this many configurations (0: skip).
    #[arg(long, default_value_t = 240)]
    controller_batch: usize,
}

/// Wall and CPU seconds of one evaluation of a batch.
#[derive(Clone, Copy)]
struct Took {
    wall: f64,
    cpu: f64,
}

/// The median wall time and the mean CPU time of `repeat` evaluations of `configs`, and the
/// last outputs.
fn timed(
    m: &dyn NetworkModel,
    input: &ModelInput,
    configs: &[NetworkConfig],
    repeat: usize,
) -> Result<(Vec<ModelOutput>, Took)> {
    let mut wall = Vec::new();
    let mut outs = Vec::new();
    let c0 = common::thread_cpu();
    for _ in 0..repeat.max(1) {
        let t0 = Instant::now();
        outs = m.evaluate(input, configs).into_iter().collect::<Result<Vec<_>, _>>()?;
        wall.push(t0.elapsed().as_secs_f64());
    }
    let cpu = (common::thread_cpu() - c0) / wall.len() as f64;
    wall.sort_by(f64::total_cmp);
    Ok((
        outs,
        Took {
            wall: wall[wall.len() / 2],
            cpu,
        },
    ))
}

fn main() -> Result<()> {
    let a = Args::parse();
    let common::sample::Sample {
        scenario: s,
        configs,
        space,
        duration,
        input,
    } = a.sample.load()?;
    let flows = input.workload.flows.len();

    // The flow-level models, each with a constructor for a fresh value (no plan yet).
    type Fresh = fn() -> Result<Box<dyn NetworkModel>>;
    let modes: [(&str, Fresh); 2] = [
        ("flowsim aggregate", || Ok(Box::new(FlowSim::default()))),
        ("flowsim-corrected", || Ok(Box::new(Corrected::shipped()?))),
    ];
    let sims: Vec<Box<dyn NetworkModel>> = modes.iter().map(|(_, f)| f()).collect::<Result<_>>()?;
    // Side by side: pktsim evaluates the configurations one at a time, and after each of them
    // every flow-level model evaluates the whole batch (and the controller-sized batch), so both
    // models are timed under the same load from the other processes on the machine.
    let big: Vec<NetworkConfig> = configs.iter().cycle().take(a.controller_batch).cloned().collect();
    let mut po = Vec::new();
    let mut pt = Took { wall: 0.0, cpu: 0.0 };
    let mut samples = vec![Vec::new(); sims.len()];
    let mut big_samples = vec![Vec::new(); sims.len()];
    let mut first_samples = vec![Vec::new(); sims.len()];
    let mut fos: Vec<Vec<ModelOutput>> = vec![Vec::new(); sims.len()];
    let per_turn = a.repeat.div_ceil(configs.len()).max(1);
    // Steady state: each model value plans this window before the timed calls.
    for sim in &sims {
        sim.evaluate(&input, &configs);
    }
    let fresh: Vec<Fresh> = modes.iter().map(|&(_, f)| f).collect();
    for k in 0..configs.len() {
        let (mut o, t) = timed(&PktSim::default(), &input, &configs[k..=k], 1)?;
        po.append(&mut o);
        pt.wall += t.wall;
        pt.cpu += t.cpu;
        for (m, sim) in sims.iter().enumerate() {
            let (o, t) = timed(sim.as_ref(), &input, &configs, per_turn)?;
            fos[m] = o;
            samples[m].push(t);
            // The first call on a window: a fresh value, which plans before it evaluates.
            first_samples[m].push(timed(fresh[m]()?.as_ref(), &input, &configs, 1)?.1);
            if !big.is_empty() {
                big_samples[m].push(timed(sim.as_ref(), &input, &big, 1)?.1);
            }
        }
    }
    // Per mode: the median wall time and the mean CPU time over the turns.
    let summary = |v: &[Took]| -> Took {
        let mut w: Vec<f64> = v.iter().map(|t| t.wall).collect();
        w.sort_by(f64::total_cmp);
        Took {
            wall: w[w.len() / 2],
            cpu: v.iter().map(|t| t.cpu).sum::<f64>() / v.len() as f64,
        }
    };
    let first_times: Vec<Took> = first_samples.iter().map(|v| summary(v)).collect();
    let fos: Vec<(Vec<ModelOutput>, Took)> = fos.into_iter().zip(&samples).map(|(o, v)| (o, summary(v))).collect();
    let big_times: Vec<Took> = if big.is_empty() {
        Vec::new()
    } else {
        big_samples.iter().map(|v| summary(v)).collect()
    };

    let n = s.classes.len();
    let p99 = |o: &ModelOutput, d| {
        let slo = s.classes.iter().find(|c| c.dscp == d).map(|c| c.slo);
        o.sli.get(d).and_then(|x| slo?.sli(x)).unwrap_or(f64::NAN)
    };
    let labels: Vec<String> = configs.iter().map(|c| common::sample::choices(&space, c)).collect();
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
                .map(|c| {
                    let b = c.buffer.map_or(String::new(), |b| format!("/B{}", b.0));
                    let a = c
                        .congestion_control
                        .as_ref()
                        .map_or(String::new(), |a| format!("/{}", a.name()));
                    format!("{:.2}/{}/{}{b}{a}", c.weight, c.ecn_threshold.0, c.init_cwnd.0)
                })
                .collect();
            let per: Vec<String> = modes
                .iter()
                .enumerate()
                .map(|(m, (name, _))| format!("{name}: J {:.2} p99 {:?}", js[m][k], round(&fos[m].0[k])))
                .collect();
            println!(
                "config {k:2} [{}]: {} · pktsim: J {:.2} p99 {:?}",
                knobs.join(" "),
                per.join(" · "),
                jp[k],
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
        a.sample.seed,
        a.sample.config_seed
    );
    println!();
    let names: Vec<&str> = modes.iter().map(|(n, _)| *n).collect();
    println!("| quantity | {} |", names.join(" | "));
    println!("|---|{}", "---|".repeat(names.len()));
    let row = |label: String, cells: Vec<String>| println!("| {label} | {} |", cells.join(" | "));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64 * 100.0;
    let sli = |c: &polyphony_spec::TrafficClass| match c.slo.kind() {
        polyphony_spec::SloKind::FctSlowdownP99 => "p99 slowdown",
        polyphony_spec::SloKind::QctP99 => "p99 QCT",
    };
    for (i, c) in s.classes.iter().enumerate() {
        row(
            format!("{} MARE vs pktsim, {}", sli(c), c.name),
            are.iter().map(|e| format!("{:.1} %", e[i] * 100.0)).collect(),
        );
    }
    row(
        "SLI MARE vs pktsim, all classes".into(),
        are.iter().map(|e| format!("{:.1} %", mean(e))).collect(),
    );
    // Per combination of categorical choices: the same errors over its configurations only.
    let mut combos: Vec<&String> = labels.iter().filter(|l| !l.is_empty()).collect();
    combos.sort();
    combos.dedup();
    for l in combos {
        let ks: Vec<usize> = (0..configs.len()).filter(|&k| &labels[k] == l).collect();
        for c in &s.classes {
            row(
                format!(
                    "{} MARE vs pktsim, {} [{l}, {} configurations]",
                    sli(c),
                    c.name,
                    ks.len()
                ),
                fos.iter()
                    .map(|(fo, _)| {
                        let e: f64 = ks
                            .iter()
                            .map(|&k| {
                                let (x, y) = (p99(&fo[k], c.dscp), p99(&po[k], c.dscp));
                                (x - y).abs() / y
                            })
                            .sum::<f64>()
                            / ks.len() as f64;
                        format!("{:.1} %", e * 100.0)
                    })
                    .collect(),
            );
        }
    }
    row(
        "Spearman ρ of J across configurations (vs pktsim)".into(),
        js.iter().map(|j| format!("{:.3}", common::spearman(j, &jp))).collect(),
    );
    let ms = |t: f64, k: usize| t * 1e3 / k as f64;
    let nc = configs.len();
    row(
        format!("wall time per configuration, batch of {nc} (median of {nc} turns)"),
        fos.iter()
            .map(|(_, t)| {
                format!(
                    "{:.4} ms ({:.2} M flows/s)",
                    ms(t.wall, nc),
                    (flows * nc) as f64 / t.wall / 1e6
                )
            })
            .collect(),
    );
    row(
        format!("CPU time per configuration, batch of {nc} (mean)"),
        fos.iter().map(|(_, t)| format!("{:.4} ms", ms(t.cpu, nc))).collect(),
    );
    row(
        format!("speed ratio pktsim / model, batch of {nc}, wall time"),
        fos.iter().map(|(_, t)| format!("{:.0}×", pt.wall / t.wall)).collect(),
    );
    row(
        format!("speed ratio pktsim / model, batch of {nc}, CPU time"),
        fos.iter().map(|(_, t)| format!("{:.0}×", pt.cpu / t.cpu)).collect(),
    );
    row(
        format!("first call of a window (planning included), batch of {nc}: CPU time per configuration, ratio"),
        first_times
            .iter()
            .map(|t| format!("{:.4} ms, {:.0}×", ms(t.cpu, nc), pt.cpu / t.cpu))
            .collect(),
    );
    if !big.is_empty() {
        let k = big.len();
        row(
            format!("wall (CPU) time per configuration, batch of {k}"),
            big_times
                .iter()
                .map(|t| format!("{:.4} ({:.4}) ms", ms(t.wall, k), ms(t.cpu, k)))
                .collect(),
        );
        row(
            format!("speed ratio pktsim / model, batch of {k}, wall (CPU) time per configuration"),
            big_times
                .iter()
                .map(|t| {
                    format!(
                        "{:.0}× ({:.0}×)",
                        ms(pt.wall, nc) / ms(t.wall, k),
                        ms(pt.cpu, nc) / ms(t.cpu, k)
                    )
                })
                .collect(),
        );
    }
    println!(
        "| pktsim per configuration: wall (CPU) time | {:.1} ({:.1}) ms, {:.2} M host packets/s (wall) | |",
        ms(pt.wall, nc),
        ms(pt.cpu, nc),
        packets as f64 / pt.wall / 1e6
    );
    Ok(())
}
