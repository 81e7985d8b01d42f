//! What one knob does to every class's tail, in pktsim and in the models, on the same flows.
//!
//! Per case, one class (chosen from the case seed) has one knob moved from the case's first
//! random configuration — its weight (×/÷ `--weight-factor`, the weights renormalised), its ECN
//! threshold K (×/÷ `--k-factor`) or its initial window (×/÷ `--cwnd-factor`), each clamped to
//! the default knob space; a move that changes the knob by less than 1.22× after clamping or
//! renormalising is left out — and pktsim, flowsim and flowsim-corrected run the base and the six
//! moved configurations. A class's **response** is ln(p99 moved / p99 base). The table gives,
//! per knob, direction and whether the class is the one moved (`own`) or another (`other`):
//! how far pktsim's p99 moves (median |response|), and per model the correlation of its
//! responses with pktsim's, the slope (the share of pktsim's move it reproduces, least squares
//! of the model's response on pktsim's) and the median |model − pktsim| response. A second
//! table splits the own-class rows by rate band and topology (down moves negated: the response
//! to raising the knob), a third by the class's flows in the window and whether pktsim dropped
//! packets in either run, a fourth the K moves by the base K per BDP (the bottleneck rate of
//! the window's first flow's path × its base RTT).
//!
//! This is the part of the error that ranking configurations sees: a model whose level is off
//! but whose responses match would still order configurations right.
//!
//! ```text
//! cargo run --release -p polyphony-model --example knob_response -- --first 0 --cases 360 --threads 2 --pktsim-cache DIR
//! ```
//!
//! With `--pktsim-cache` the base run is the one `train_correction` / `validate` cache for
//! `--configs` configurations (the first one is the base), and the moved runs are cached
//! under the set name `SET-knobs-wW-kK-cC` (the three factors).

mod common;

use anyhow::{bail, Context, Result};
use clap::Parser;
use polyphony_model::validation::{case, median, Case, Regime};
use polyphony_model::{Corrected, Correction, FlowSim, FlowSimOptions, ModelOutput, NetworkModel, HEADER_BYTES, MSS};
use polyphony_spec::{Bytes, KnobKind, KnobSpace, NetworkConfig, Packets};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    cases: common::CaseArgs,
    /// Random configurations per case in the base run's cache (the first is the base).
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    configs: usize,
    /// Factor the moved class's weight is multiplied and divided by (before renormalising).
    #[arg(long, default_value_t = 2.0)]
    weight_factor: f64,
    /// Factor the moved class's ECN threshold is multiplied and divided by.
    #[arg(long, default_value_t = 4.0)]
    k_factor: f64,
    /// Factor the moved class's initial window is multiplied and divided by.
    #[arg(long, default_value_t = 4.0)]
    cwnd_factor: f64,
    /// flowsim's standing queue in units of K (default: the shipped value).
    #[arg(long)]
    queue_factor: Option<f64>,
    /// Worker threads (cases in parallel).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// pktsim's runs are read from / written to this directory.
    #[arg(long)]
    pktsim_cache: Option<std::path::PathBuf>,
    /// One row per (case, move, class): the three responses, the moved class's base K and
    /// initial window per BDP and weight, pktsim's timeouts and drops, the case's class count,
    /// and the row class's load, size distribution and base p99 in pktsim and flowsim.
    #[arg(long)]
    csv: Option<String>,
}

/// The knobs moved, in the order of the six moved configurations (up, then down, per knob).
const KNOBS: [&str; 3] = ["weight", "K", "initcwnd"];

/// The six moved configurations of `base` for class `i`, each knob clamped to the range the
/// cases' configurations are drawn from (`KnobSpace::per_class_default`).
fn moves(base: &NetworkConfig, i: usize, a: &Args) -> Vec<NetworkConfig> {
    let dscp = base.classes[i].dscp;
    let space = KnobSpace::per_class_default(&[dscp]);
    let range = |kind: KnobKind| {
        space
            .knobs
            .iter()
            .find(|k| k.kind == kind)
            .map_or((f64::MIN_POSITIVE, f64::MAX), |k| (k.min, k.max))
    };
    let (k_lo, k_hi) = range(KnobKind::EcnThreshold);
    let (w_lo, w_hi) = range(KnobKind::InitCwnd);
    let mut out = Vec::new();
    for knob in 0..KNOBS.len() {
        for up in [true, false] {
            let mut m = base.clone();
            let c = &mut m.classes[i];
            match knob {
                0 => {
                    c.weight *= if up { a.weight_factor } else { 1.0 / a.weight_factor };
                    let sum: f64 = m.classes.iter().map(|k| k.weight).sum();
                    for k in &mut m.classes {
                        k.weight /= sum;
                    }
                }
                1 => {
                    let f = if up { a.k_factor } else { 1.0 / a.k_factor };
                    c.ecn_threshold = Bytes((c.ecn_threshold.0 as f64 * f).clamp(k_lo, k_hi).round() as u64);
                }
                _ => {
                    let f = if up { a.cwnd_factor } else { 1.0 / a.cwnd_factor };
                    c.init_cwnd = Packets((f64::from(c.init_cwnd.0) * f).clamp(w_lo, w_hi).round() as u32);
                }
            }
            out.push(m);
        }
    }
    out
}

/// Moves that change the knob by less than this (ln of the factor; 1.22×) are left out.
const MIN_MOVE: f64 = 0.2;

/// How far the move went: ln of the moved knob's factor (0 when clamped to where it was).
fn moved_by(base: &NetworkConfig, m: &NetworkConfig, i: usize, knob: usize) -> f64 {
    let (b, x) = (&base.classes[i], &m.classes[i]);
    match knob {
        0 => (x.weight / b.weight).ln(),
        1 => (x.ecn_threshold.0 as f64 / b.ecn_threshold.0 as f64).ln(),
        _ => (f64::from(x.init_cwnd.0) / f64::from(b.init_cwnd.0)).ln(),
    }
}

/// One class's responses to one move.
#[derive(Clone)]
struct Row {
    seed: u64,
    regime: Regime,
    knob: usize,
    up: bool,
    own: bool,
    flows: u64,
    /// pktsim, flowsim, corrected.
    resp: [f64; 3],
    /// The moved class's K and initial window in the base configuration, per BDP (the
    /// bottleneck rate of the first flow's path × its base RTT).
    k_per_bdp: f64,
    cwnd_per_bdp: f64,
    /// pktsim's retransmission timeouts and drops, base and moved run.
    timeouts: [u64; 2],
    drops: [u64; 2],
    /// The moved class's weight in the base configuration, and how many classes the case has.
    weight: f64,
    classes: usize,
    /// The row's class: its offered load (fraction of the busiest tier) and size distribution.
    load: f64,
    size_cdf: String,
    /// The row's class p99 in the base configuration: pktsim, flowsim.
    base_p99: [f64; 2],
}

fn p99s(o: &ModelOutput, c: &Case) -> Vec<Option<(f64, u64)>> {
    c.scenario
        .classes
        .iter()
        .map(|cl| {
            o.sli
                .get(cl.dscp)
                .filter(|s| s.flows > 0 && s.p99 > 0.0)
                .map(|s| (s.p99, s.flows))
        })
        .collect()
}

fn run(c: &Case, a: &Args, correction: &Arc<Correction>) -> Result<Vec<Row>> {
    let (input, base_pkt, _) = common::pktcache::window(c, 0, &a.cases.set, a.pktsim_cache.as_deref())?;
    let base = c.configs[0].clone();
    let i = (c.seed % c.scenario.classes.len() as u64) as usize;
    let moved = moves(&base, i, a);
    let moved_case = Case {
        configs: moved.clone(),
        ..c.clone()
    };
    let set = format!(
        "{}-knobs-w{}-k{}-c{}",
        a.cases.set, a.weight_factor, a.k_factor, a.cwnd_factor
    );
    let (moved_pkt, _) = common::pktcache::outputs(&moved_case, &input, &set, a.pktsim_cache.as_deref())?;
    let mut all = vec![base.clone()];
    all.extend(moved.iter().cloned());
    let mut opts = FlowSimOptions::default();
    if let Some(q) = a.queue_factor {
        opts.queue_factor = q;
    }
    let fs = FlowSim::new(opts)
        .evaluate(&input, &all)
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let co = Corrected::new(correction.clone())
        .evaluate(&input, &all)
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let bdp = input.workload.flows.first().map_or(1.0, |f| {
        let t = &input.topology;
        t.bottleneck(f.src, f.dst).0 as f64 / 8.0 * t.base_rtt(f.src, f.dst).0 as f64 * 1e-9
    });
    let pk_base = p99s(&base_pkt[0], c);
    let fs_base = p99s(&fs[0], c);
    let co_base = p99s(&co[0], c);
    // Each class's mix entry (by DSCP), for the rows.
    let mix: Vec<&polyphony_spec::ClassMix> = c
        .scenario
        .classes
        .iter()
        .filter_map(|cl| c.scenario.mix.iter().find(|m| m.dscp == cl.dscp))
        .collect();
    let mut rows = Vec::new();
    for (j, m) in moved.iter().enumerate() {
        let knob = j / 2;
        if moved_by(&base, m, i, knob).abs() < MIN_MOVE {
            continue; // clamped at the edge of the knob space, or a dominant weight: hardly moved
        }
        let pk = p99s(&moved_pkt[j], c);
        let f = p99s(&fs[j + 1], c);
        let q = p99s(&co[j + 1], c);
        for k in 0..c.scenario.classes.len() {
            if let (Some(pb), Some(pm), Some(fb), Some(fm), Some(cb), Some(cm)) =
                (pk_base[k], pk[k], fs_base[k], f[k], co_base[k], q[k])
            {
                rows.push(Row {
                    seed: c.seed,
                    regime: c.regime,
                    knob,
                    up: j % 2 == 0,
                    own: k == i,
                    flows: pb.1.min(pm.1),
                    resp: [(pm.0 / pb.0).ln(), (fm.0 / fb.0).ln(), (cm.0 / cb.0).ln()],
                    k_per_bdp: base.classes[i].ecn_threshold.0 as f64 / bdp,
                    cwnd_per_bdp: f64::from(base.classes[i].init_cwnd.0) * (MSS + HEADER_BYTES) as f64 / bdp,
                    timeouts: [base_pkt[0].stats.timeouts, moved_pkt[j].stats.timeouts],
                    drops: [base_pkt[0].stats.dropped, moved_pkt[j].stats.dropped],
                    weight: base.classes[i].weight,
                    classes: c.scenario.classes.len(),
                    load: mix.get(k).map_or(f64::NAN, |m| m.load),
                    size_cdf: mix.get(k).map_or_else(String::new, |m| m.size_cdf.clone()),
                    base_p99: [pb.0, fb.0],
                });
            }
        }
    }
    Ok(rows)
}

/// Correlation, slope of `y` on `x` and median |y − x| (the correlation is NaN when either side
/// never moves, the slope when `x` never does).
fn agreement(x: &[f64], y: &[f64]) -> (f64, f64, f64) {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    let d: Vec<f64> = x.iter().zip(y).map(|(a, b)| (b - a).abs()).collect();
    (sxy / (sxx * syy).sqrt(), sxy / sxx, median(&d))
}

fn line(label: &str, rows: &[&Row]) -> String {
    let p: Vec<f64> = rows.iter().map(|r| r.resp[0]).collect();
    let abs: Vec<f64> = p.iter().map(|x| x.abs()).collect();
    let mut s = format!(
        "| {label} | {} | {:.3} | {:+.3} |",
        rows.len(),
        median(&abs),
        median(&p)
    );
    for m in 1..3 {
        let y: Vec<f64> = rows.iter().map(|r| r.resp[m]).collect();
        let (corr, slope, d) = agreement(&p, &y);
        // A model that never moves the class has no correlation to give.
        let f = |x: f64| {
            if x.is_finite() {
                format!("{x:.2}")
            } else {
                "–".to_string()
            }
        };
        s += &format!(" {} | {} | {d:.3} |", f(corr), f(slope));
    }
    s
}

fn main() -> Result<()> {
    let a = Args::parse();
    for (name, f) in [
        ("--weight-factor", a.weight_factor),
        ("--k-factor", a.k_factor),
        ("--cwnd-factor", a.cwnd_factor),
    ] {
        if !(f.is_finite() && f > 1.0) {
            bail!("{name} {f}: give a factor above 1 (the knob is multiplied and divided by it)");
        }
    }
    if a.configs == 0 {
        bail!("--configs 0: the base is the first of the case's configurations; give 1 or more");
    }
    let (set, range) = a.cases.range()?;
    let correction = Arc::new(Correction::shipped().context("loading the compiled-in correction")?);
    let cases: Vec<Case> = range.map(|i| case(set, i, a.configs)).collect::<Result<_, _>>()?;
    let done = std::sync::atomic::AtomicUsize::new(0);
    let per_case = common::par_map(&cases, a.threads, |c| {
        let r = run(c, &a, &correction)?;
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if n.is_multiple_of(20) {
            eprintln!("{n} of {} cases", cases.len());
        }
        Ok(r)
    })?;
    let rows: Vec<Row> = per_case.into_iter().flatten().collect();
    if let Some(path) = &a.csv {
        let mut text = String::from("seed,regime,knob,up,own,flows,pktsim,flowsim,corrected,k_per_bdp,cwnd_per_bdp,timeouts_base,timeouts_moved,drops_base,drops_moved,weight,classes,load,size_cdf,pktsim_p99,flowsim_p99\n");
        for r in &rows {
            text += &format!(
                "{},{},{},{},{},{},{:.5},{:.5},{:.5},{:.4},{:.4},{},{},{},{},{:.4},{},{:.4},{},{:.3},{:.3}\n",
                r.seed,
                r.regime,
                KNOBS[r.knob],
                r.up,
                r.own,
                r.flows,
                r.resp[0],
                r.resp[1],
                r.resp[2],
                r.k_per_bdp,
                r.cwnd_per_bdp,
                r.timeouts[0],
                r.timeouts[1],
                r.drops[0],
                r.drops[1],
                r.weight,
                r.classes,
                r.load,
                &r.size_cdf,
                r.base_p99[0],
                r.base_p99[1]
            );
        }
        std::fs::write(path, text).with_context(|| format!("writing {path}"))?;
    }
    let head = "| pktsim: median abs | median | flowsim: corr | slope | median abs diff | corrected: corr | slope | median abs diff |\n|---|---|---|---|---|---|---|---|---|---|---|";
    println!("| move | class rows {head}");
    for (knob, name) in KNOBS.iter().enumerate() {
        for up in [true, false] {
            for own in [true, false] {
                let sel: Vec<&Row> = rows
                    .iter()
                    .filter(|r| r.knob == knob && r.up == up && r.own == own)
                    .collect();
                if sel.len() >= 3 {
                    let label = format!(
                        "{name} {} ({})",
                        if up { "up" } else { "down" },
                        if own { "own" } else { "other" }
                    );
                    println!("{}", line(&label, &sel));
                }
            }
        }
    }
    println!();
    println!("Own class, by rate band and topology; both directions, the down moves' responses negated (the response to raising the knob):");
    println!();
    println!("| move | class rows {head}");
    let raised: Vec<Row> = rows
        .iter()
        .filter(|r| r.own)
        .map(|r| Row {
            resp: if r.up { r.resp } else { r.resp.map(|x| -x) },
            ..r.clone()
        })
        .collect();
    let mut groups: BTreeMap<(usize, String), Vec<&Row>> = BTreeMap::new();
    for r in &raised {
        // The regime without its load band.
        let label = r.regime.to_string();
        let label = label.rsplit_once(' ').map_or(label.as_str(), |(t, _)| t).to_string();
        groups.entry((r.knob, label)).or_default().push(r);
    }
    for ((knob, label), sel) in &groups {
        if sel.len() >= 3 {
            println!("{}", line(&format!("{} · {label}", KNOBS[*knob]), sel));
        }
    }
    println!();
    println!("Own class, by the class's flows in the window and whether pktsim dropped packets in either run (down moves negated):");
    println!();
    println!("| move | class rows {head}");
    let mut by_kind: BTreeMap<(usize, bool, bool), Vec<&Row>> = BTreeMap::new();
    for r in &raised {
        let dropped = r.drops[0] > 0 || r.drops[1] > 0;
        by_kind.entry((r.knob, r.flows < 100, dropped)).or_default().push(r);
    }
    for ((knob, small, dropped), sel) in &by_kind {
        if sel.len() >= 3 {
            let label = format!(
                "{} · {} flows · {}",
                KNOBS[*knob],
                if *small { "< 100" } else { "≥ 100" },
                if *dropped { "drops" } else { "no drops" }
            );
            println!("{}", line(&label, sel));
        }
    }
    println!();
    println!("K of the own class moved, by K / BDP in the base configuration (median responses):");
    println!();
    println!("| K / BDP | move | class rows | pktsim | flowsim | corrected |\n|---|---|---|---|---|---|");
    const BANDS: [(f64, f64, &str); 5] = [
        (0.0, 0.1, "< 0.1"),
        (0.1, 0.3, "0.1–0.3"),
        (0.3, 1.0, "0.3–1"),
        (1.0, 3.0, "1–3"),
        (3.0, f64::INFINITY, "≥ 3"),
    ];
    for (lo, hi, label) in BANDS {
        for up in [true, false] {
            let sel: Vec<&Row> = rows
                .iter()
                .filter(|r| r.own && r.knob == 1 && r.up == up && r.k_per_bdp >= lo && r.k_per_bdp < hi)
                .collect();
            if sel.len() >= 3 {
                let m = |i: usize| median(&sel.iter().map(|r| r.resp[i]).collect::<Vec<_>>());
                println!(
                    "| {label} | × {} | {} | {:+.3} | {:+.3} | {:+.3} |",
                    if up {
                        format!("{}", a.k_factor)
                    } else {
                        format!("1/{}", a.k_factor)
                    },
                    sel.len(),
                    m(0),
                    m(1),
                    m(2)
                );
            }
        }
    }
    Ok(())
}
