//! Are a scenario's SLOs reachable? Random search over `KnobSpace::per_class_default` with
//! `pktsim`, each configuration on several independent workload samples of the scenario's
//! interval; prints the best configurations by the mean of max_i p99_i / v_i. `--rate-mbps` /
//! `--delay-us` override the dumbbell's link rate and one-way delay to ask what would make the
//! SLOs feasible. Further `--scenario` files with the same topology, interval and mix (e.g. the
//! other tightness levels) are judged on the same simulations: one line of counts and quantiles
//! of the mean max r per file; `--csv` writes every configuration's mean p99s.
//!
//! `--scenario-knobs`: draw the numeric configurations from the first scenario's own knob
//! space (e.g. with a per-class `buffer` knob) instead of the paper's nine knobs; the CSV then
//! has a `_buffer` column per class. Each class's SLI is the one its SLO is about (p99
//! slowdown, or p99 query completion time in µs).
//!
//! `--categorical`: the first scenario's `[[knobs.categorical]]` blocks are swept too. Every
//! random numeric configuration (with the per-class buffers of the scenario's `initial`) is run
//! once per combination of the categorical choices, so each combination is judged on the same
//! numeric points: does meeting the SLOs need a choice other than the hosts' default (the first
//! of each set)?
//!
//! ```text
//! cargo run --release -p polyphony-model --example feasibility -- \
//!     --scenario configs/scenarios/reference-medium.toml --configs 200 --seeds 3
//! ```

mod common;

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_model::{scenario_input, NetworkModel, PktSim};
use polyphony_spec::{CongestionControl, Dscp, KnobKind, KnobSpace, NetworkConfig, Scenario, TopologySpec};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Parser)]
struct Args {
    /// Scenario file; repeat for more SLO sets on the same traffic (the first sets the traffic).
    #[arg(long, required = true)]
    scenario: Vec<String>,
    /// Random configurations to try.
    #[arg(long, default_value_t = 200, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
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
    /// Write every configuration's knobs and mean p99 per class here (CSV).
    #[arg(long)]
    csv: Option<String>,
    /// Sweep the first scenario's categorical knobs as well (one run per combination).
    #[arg(long)]
    categorical: bool,
    /// Draw configurations from the first scenario's knob space, not the paper's nine knobs.
    #[arg(long)]
    scenario_knobs: bool,
}

/// Every combination of the categorical choices of `space`, as (label, per-class choices); one
/// empty combination when there are none. The first combination is every set's first choice.
fn combinations(space: &KnobSpace) -> Vec<(String, Vec<(Dscp, CongestionControl)>)> {
    let mut out = vec![(String::new(), Vec::new())];
    for c in &space.categorical {
        out = out
            .into_iter()
            .flat_map(|(label, picks)| {
                c.congestion_control.iter().map(move |cc| {
                    let mut p = picks.clone();
                    p.push((c.dscp, cc.clone()));
                    let sep = if label.is_empty() { "" } else { "," };
                    (format!("{label}{sep}{}={}", c.dscp.name(), cc.name()), p)
                })
            })
            .collect();
    }
    out
}

/// Reads `path` with the overrides of the command line applied.
fn load(path: &str, a: &Args) -> Result<Scenario> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let mut s = Scenario::from_toml(&text, path)?;
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
    Ok(s)
}

/// The `q`-quantile (nearest rank) of sorted `v`.
fn quantile(v: &[f64], q: f64) -> f64 {
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn main() -> Result<()> {
    let a = Args::parse();
    let all: Vec<Scenario> = a.scenario.iter().map(|p| load(p, &a)).collect::<Result<_>>()?;
    let s = all[0].clone();
    for (o, path) in all.iter().zip(&a.scenario).skip(1) {
        anyhow::ensure!(
            o.topology == s.topology && o.seed == s.seed && o.interval_s == s.interval_s && o.mix == s.mix && o.dscps() == s.dscps(),
            "--scenario {path}: its topology, seed, interval, classes or mix differ from {}'s; the extra files may change only the SLOs",
            a.scenario[0]
        );
    }
    let dscps = s.dscps();
    let space = if a.scenario_knobs {
        s.knob_space()
    } else {
        KnobSpace::per_class_default(&dscps)
    };
    let swept_buffer = |d: Dscp| space.knobs.iter().any(|k| k.kind == KnobKind::Buffer && k.dscp == d);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let mut numeric: Vec<NetworkConfig> = (0..a.configs)
        .map(|_| common::random_config(&dscps, &space, &mut rng))
        .collect();
    numeric.push(polyphony_model::default_config(&s));
    let combos = if a.categorical {
        anyhow::ensure!(
            !s.knob_space().categorical.is_empty(),
            "--categorical: {} has no [[knobs.categorical]] block to sweep",
            a.scenario[0]
        );
        combinations(&s.knob_space())
    } else {
        vec![(String::new(), Vec::new())]
    };
    // Per numeric configuration, one per combination (in `combos` order); the scenario's
    // per-class buffers where it sets them.
    let mut configs = Vec::with_capacity(numeric.len() * combos.len());
    let mut combo_of = Vec::with_capacity(configs.capacity());
    for (n, c) in numeric.iter().enumerate() {
        // The default (last) keeps the scenario's buffers even where they are swept.
        let is_default = n + 1 == numeric.len();
        for (k, (_, picks)) in combos.iter().enumerate() {
            let mut c = c.clone();
            for cl in &mut c.classes {
                if let Some(init) = s.initial.as_ref().and_then(|i| i.class(cl.dscp)) {
                    if is_default || !swept_buffer(cl.dscp) {
                        cl.buffer = init.buffer;
                    }
                    cl.congestion_control = init.congestion_control.clone();
                }
                if let Some((_, cc)) = picks.iter().find(|(d, _)| *d == cl.dscp) {
                    cl.congestion_control = Some(cc.clone());
                }
            }
            configs.push(c);
            combo_of.push(k);
        }
    }
    let inputs: Vec<_> = (0..a.seeds)
        .map(|k| scenario_input(&s, s.interval(), s.seed + k))
        .collect::<Result<_, _>>()?;
    let model = PktSim::default();
    // Per configuration (the default last), per sample, per class: the SLO's SLI.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_sample: Vec<Vec<Vec<f64>>> = common::par_map(&configs, threads, |c| {
        let mut samples = Vec::with_capacity(inputs.len());
        for input in &inputs {
            let out = model
                .evaluate(input, std::slice::from_ref(c))
                .pop()
                .context("no result")??;
            samples.push(
                s.classes
                    .iter()
                    .map(|cl| {
                        out.sli
                            .get(cl.dscp)
                            .and_then(|x| cl.slo.sli(x))
                            .unwrap_or(f64::INFINITY)
                    })
                    .collect::<Vec<f64>>(),
            );
        }
        Ok(samples)
    })?;
    if let Some(path) = &a.csv {
        let mut out = String::from("config,choices,sample");
        for cl in &s.classes {
            out += &format!(",{0}_weight,{0}_k_bytes,{0}_initcwnd", cl.name);
            if a.scenario_knobs {
                out += &format!(",{}_buffer", cl.name);
            }
        }
        for cl in &s.classes {
            out += &format!(",{}_p99", cl.name);
        }
        out.push('\n');
        for (i, (c, samples)) in configs.iter().zip(&per_sample).enumerate() {
            let n = i / combos.len();
            let name = if n == numeric.len() - 1 {
                "default".to_string()
            } else {
                n.to_string()
            };
            let choices = &combos[combo_of[i]].0;
            for (k, p) in samples.iter().enumerate() {
                out += &format!("{name},\"{choices}\",{k}");
                for cl in &c.classes {
                    out += &format!(",{:.4},{},{}", cl.weight, cl.ecn_threshold.0, cl.init_cwnd.0);
                    if a.scenario_knobs {
                        out += &format!(",{}", cl.buffer.map_or(String::new(), |b| b.0.to_string()));
                    }
                }
                for x in p {
                    out += &format!(",{x:.3}");
                }
                out.push('\n');
            }
        }
        std::fs::write(path, out).with_context(|| format!("writing {path}"))?;
    }
    let mut scored = Vec::new();
    for (c, samples) in configs.iter().zip(&per_sample) {
        let n = samples.len() as f64;
        let mut worst = 0.0;
        let mut p99s = vec![0.0; dscps.len()];
        for p in samples {
            let mut m: f64 = 0.0;
            for (i, cl) in s.classes.iter().enumerate() {
                p99s[i] += p[i] / n;
                m = m.max(p[i] / cl.slo.threshold());
            }
            worst += m / n;
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
        s.classes.iter().map(|c| c.slo.threshold()).collect::<Vec<_>>()
    );
    let feasible = scored.iter().filter(|x| x.0 <= 1.0).count();
    println!("configurations meeting every SLO on average: {feasible}");
    for (o, path) in all.iter().zip(&a.scenario) {
        // The mean over samples of max_i p99_i / v_i is not a function of the mean p99s, so
        // the SLO sets are judged per sample again, on the stored per-sample p99s.
        let r: Vec<f64> = per_sample
            .iter()
            .map(|samples| {
                samples
                    .iter()
                    .map(|p| {
                        p.iter()
                            .zip(&o.classes)
                            .map(|(x, cl)| x / cl.slo.threshold())
                            .fold(0.0, f64::max)
                    })
                    .sum::<f64>()
                    / samples.len() as f64
            })
            .collect();
        for (k, (label, _)) in combos.iter().enumerate() {
            let mut r: Vec<f64> = r
                .iter()
                .zip(&combo_of)
                .filter(|(_, &c)| c == k)
                .map(|(x, _)| *x)
                .collect();
            r.sort_by(f64::total_cmp);
            let met = r.iter().filter(|x| **x <= 1.0).count();
            let label = if label.is_empty() {
                String::new()
            } else {
                format!(" [{label}]")
            };
            println!(
                "{path}{label}: SLOs {:?} met on average by {met}/{} ({:.1} %); mean max r quantiles min {:.2} · 10 % {:.2} · 25 % {:.2} · 50 % {:.2}",
                o.classes.iter().map(|c| c.slo.threshold()).collect::<Vec<_>>(),
                r.len(),
                100.0 * met as f64 / r.len() as f64,
                r[0],
                quantile(&r, 0.1),
                quantile(&r, 0.25),
                quantile(&r, 0.5)
            );
        }
    }
    for (w, p, c) in scored.iter().take(a.top) {
        let knobs: Vec<String> = c
            .classes
            .iter()
            .map(|k| {
                let cc = k
                    .congestion_control
                    .as_ref()
                    .map_or(String::new(), |c| format!(" {}", c.name()));
                let buf = k.buffer.map_or(String::new(), |b| format!(" B={}", b.0));
                format!(
                    "w={:.2} K={} iw={}{buf}{cc}",
                    k.weight, k.ecn_threshold.0, k.init_cwnd.0
                )
            })
            .collect();
        println!(
            "max r = {w:.2} · p99 = {:?} · {}",
            p.iter().map(|x| (x * 10.0).round() / 10.0).collect::<Vec<_>>(),
            knobs.join(" | ")
        );
    }
    Ok(())
}
