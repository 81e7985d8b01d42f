//! Trains flowsim's learned correction (`polyphony_model::correction`) on pktsim runs of random
//! development cases and writes the artifact the crate compiles in.
//!
//! Per development case (`validation::case(SeedSet::Development, i, configs)`): pktsim runs
//! every configuration (cached under `--pktsim-cache`, shared with `validate` and
//! `noise_floor`), flowsim the batch; each (configuration, class) that pktsim completed flows of
//! gives one sample: the correction's features and the target ln(p99_pktsim / p99_flowsim).
//! The forest is gradient-boosted regression trees (the `gbdt` crate, LAD loss by default, no
//! subsampling, so training is deterministic), converted to the crate's own tree arrays; the
//! conversion is checked against gbdt's own predictions.
//!
//! `--cv K` first cross-validates K-fold by case on the same development cases and prints the
//! corrected error and ρ of J by regime, and how closely each model's ln p99 follows pktsim's
//! across a case's configurations (both less their mean over the case's configurations: what
//! the knobs do to a class's tail on the same flows): the measurement choices (features via `--without`,
//! the `--excess` or `--direct` target, a target over several windows of the scenario
//! (`--target-windows`), the experimental `--extra` features and the round-level replay's
//! class p99 (`--replay`, `common/replay.rs`), depth, trees) are made on, so
//! that the validation set is run only for a model that is shipped. `--dump FILE`
//! writes the samples for learners outside this example (`tools/mlp-cv`); `--tails N` compares
//! pktsim's and flowsim's tail flows instead of training.
//!
//! ```text
//! cargo run --release -p polyphony-model --example train_correction -- --first 0 --cases 1000 --configs 4 \
//!     --threads 2 --pktsim-cache DIR --cv 5 --out models/correction/flowsim-aggregate.forest
//! ```

mod common;

use anyhow::{bail, Context, Result};
use clap::Parser;
use gbdt::decision_tree::{Data, DataVec};
use gbdt::gradient_boost::GBDT;
use polyphony_model::correction::{features, Correction, Forest, Tree, FEATURES, N_FEATURES};
use polyphony_model::validation::{case, median, objective, spearman, Case, SeedSet};
use polyphony_model::FlowSim;
use polyphony_model::ModelOutput;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Parser)]
struct Args {
    /// First development case.
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Development cases to train on.
    #[arg(long, default_value_t = 648)]
    cases: u64,
    /// Random configurations per case.
    #[arg(long, default_value_t = 8, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    configs: usize,
    /// Worker threads for pktsim runs missing from the cache.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// pktsim outputs are read from / written to this directory.
    #[arg(long)]
    pktsim_cache: Option<PathBuf>,
    #[command(flatten)]
    forest: common::forest::ForestArgs,
    /// Zero these features (comma-separated names) in training: an ablation.
    #[arg(long, value_delimiter = ',')]
    without: Vec<String>,
    /// Target ln((p99_pktsim − 1) / (p99_flowsim − 1)) instead of ln(p99_pktsim / p99_flowsim)
    /// (cross-validation only: the crate applies the ratio target).
    #[arg(long)]
    excess: bool,
    /// Target ln(p99_pktsim) itself, flowsim's p99 only a feature (cross-validation only).
    #[arg(long)]
    direct: bool,
    /// Append experimental per-flow tail features of flowsim's output (cross-validation
    /// only): p90, p95, the tail flows' size and single-packet share, the steepness at p99,
    /// the tail's spread in time, p99 of flows within and beyond one BDP.
    #[arg(long)]
    extra: bool,
    /// Append experimental features from the round-level replay of the switch ports
    /// (`common/replay.rs`; cross-validation only): per class ln(replay p99 / flowsim p99) and
    /// ln(replay p99) (zeros for a class without measured flows).
    #[arg(long)]
    replay: bool,
    /// With `--replay`: compute the replay and its flowsim reference at the case's first
    /// configuration only and give every configuration of the case those features (what one
    /// replay per measurement window, shared by a batch of candidates, would provide).
    #[arg(long)]
    replay_first: bool,
    /// With `--replay`: rounds one base RTT apart whatever they found (no ACK clocking).
    #[arg(long)]
    replay_fixed_rounds: bool,
    /// Diagnose the first N cases instead of training: per class, pktsim's and flowsim's tail
    /// flows (slowdown ≥ their p99) compared flow by flow (pktsim rerun with per-flow output,
    /// first configuration of each case).
    #[arg(long)]
    tails: Option<u64>,
    /// Write every sample as a CSV row (case index, regime, pktsim's flows of the class,
    /// flowsim's p99, target, features) here, for models trained outside this example.
    #[arg(long)]
    dump: Option<PathBuf>,
    /// pktsim's p99 in the target is the median over this many windows of the case's scenario
    /// (`validate --windows`; the features stay the first window's): the scenario's tail
    /// rather than the first window's.
    #[arg(long, default_value_t = 1)]
    target_windows: u64,
    /// Cross-validate K-fold by case first (printed by regime).
    #[arg(long)]
    cv: Option<u64>,
    /// Fit on every case and write the artifact here.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// One configuration of a case: pktsim's output, flowsim's, and the feature rows.
type Row = (ModelOutput, ModelOutput, Vec<(usize, Vec<f32>)>);

/// What the forest predicts.
#[derive(Clone, Copy, PartialEq)]
enum Target {
    /// ln(p99_pktsim / p99_flowsim).
    Ratio,
    /// ln((p99_pktsim − 1) / (p99_flowsim − 1)).
    Excess,
    /// ln(p99_pktsim).
    Direct,
}

/// One case's data: per configuration pktsim's and flowsim's outputs and the feature rows
/// (class index, features) of the classes flowsim has statistics for.
struct CaseData {
    case: Case,
    target: Target,
    rows: Vec<Row>,
}

impl CaseData {
    /// The training target of row (configuration k, class ci): ln(p99_pktsim / p99_flowsim),
    /// when pktsim completed flows of the class.
    fn target(&self, input_classes: &[polyphony_spec::Dscp], k: usize, ci: usize) -> Option<f32> {
        let (po, fo, _) = &self.rows[k];
        let d = input_classes[ci];
        match (po.sli.get(d), fo.sli.get(d)) {
            (Some(p), Some(q)) if p.flows > 0 && p.p99 > 0.0 && q.p99 > 0.0 => Some(self.target_of(p.p99, q.p99)),
            _ => None,
        }
    }
    /// The target for pktsim's p99 `p` and flowsim's `q`.
    fn target_of(&self, p: f64, q: f64) -> f32 {
        match self.target {
            Target::Ratio => (p / q).ln() as f32,
            Target::Excess => ((p - 1.0).max(EXCESS_FLOOR) / (q - 1.0).max(EXCESS_FLOOR)).ln() as f32,
            Target::Direct => p.ln() as f32,
        }
    }
    /// The corrected p99 for flowsim's `q` and a prediction `ln`.
    fn apply(&self, q: f64, ln: f32) -> f64 {
        match self.target {
            Target::Ratio => q * f64::from(ln.clamp(-3.0, 3.0)).exp(),
            Target::Excess => 1.0 + (q - 1.0).max(EXCESS_FLOOR) * f64::from(ln.clamp(-3.0, 3.0)).exp(),
            Target::Direct => f64::from(ln).exp().max(1.0),
        }
    }
    fn dscps(&self) -> Vec<polyphony_spec::Dscp> {
        self.case.scenario.dscps()
    }
    /// (features, target) of every row with a target; features named in `without` are zeroed.
    fn samples(&self, without: &[usize]) -> Vec<(Vec<f32>, f32)> {
        let d = self.dscps();
        let mut out = Vec::new();
        for (k, (_, _, fs)) in self.rows.iter().enumerate() {
            for (ci, f) in fs {
                if let Some(y) = self.target(&d, k, *ci) {
                    out.push((masked(f, without), y));
                }
            }
        }
        out
    }
}

/// Smallest excess slowdown the `--excess` target takes the logarithm of.
const EXCESS_FLOOR: f64 = 0.01;

fn masked(f: &[f32], without: &[usize]) -> Vec<f32> {
    let mut g = f.to_vec();
    for &i in without {
        g[i] = 0.0;
    }
    g
}

fn case_data(
    c: &Case,
    cache: Option<&std::path::Path>,
    target: Target,
    extra: bool,
    replay: (bool, bool, bool),
    windows: u64,
) -> Result<CaseData> {
    let input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
    let pkt = common::pktcache::median_over(c, 0..windows.max(1), "dev", cache)?;
    let flowsim = FlowSim::default();
    let mut rows = Vec::new();
    for (k, (r, po)) in features(&flowsim, &input, &c.configs).into_iter().zip(pkt).enumerate() {
        let (fo, fs) = r?;
        let mut fs: Vec<(usize, Vec<f32>)> = fs.into_iter().map(|(ci, f)| (ci, f.to_vec())).collect();
        if extra {
            let mut kept = input.clone();
            kept.keep_flows = true;
            let out = flowsim.run(&kept, &c.configs[k])?;
            let flows = out.flows.context("flowsim kept no flows")?;
            for (ci, f) in &mut fs {
                f.extend(tail_features(&input, &flows, input.classes[*ci], f));
            }
        }
        if replay.0 {
            let at = &c.configs[if replay.1 { 0 } else { k }];
            let mut kept = input.clone();
            kept.keep_flows = true;
            let out = flowsim.run(&kept, at)?;
            let flows = out.flows.as_ref().context("flowsim kept no flows")?;
            let p99 = common::replay::class_p99(&input, at, flows, !replay.2)?;
            for (ci, f) in &mut fs {
                let x = match &p99 {
                    Some(v) if v[*ci].is_finite() => {
                        let d = input.classes[*ci];
                        let fsp = out.sli.classes.iter().find(|s| s.dscp == d).map_or(f64::NAN, |s| s.p99);
                        [(v[*ci] / fsp).ln(), v[*ci].ln()]
                    }
                    _ => [0.0, 0.0],
                };
                f.extend(x.map(|x| if x.is_finite() { x as f32 } else { 0.0 }));
            }
        }
        rows.push((po, fo, fs));
    }
    Ok(CaseData {
        case: c.clone(),
        target,
        rows,
    })
}

/// Experimental features of one class from flowsim's per-flow outcomes (`base`: the class's
/// crate features, for the bandwidth-delay product).
fn tail_features(
    input: &polyphony_model::ModelInput,
    flows: &[polyphony_spec::FlowOutcome],
    d: polyphony_spec::Dscp,
    base: &[f32],
) -> [f32; 9] {
    let bdp_i = FEATURES.iter().position(|&n| n == "log10_bdp_packets").unwrap_or(0);
    let bdp = 10f64.powf(f64::from(base[bdp_i])) * polyphony_model::MSS as f64;
    let mut v: Vec<(f64, f64, f64)> = flows
        .iter()
        .filter(|f| f.dscp == d)
        .map(|f| (f.slowdown(), f.size.0 as f64, f.start.0 as f64))
        .collect();
    if v.is_empty() {
        return [0.0; 9];
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = v.len();
    let rank = |q: f64| ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
    let r99 = rank(0.99);
    let tail = &v[r99..];
    let mut ts: Vec<f64> = tail.iter().map(|t| t.1 / bdp).collect();
    ts.sort_by(f64::total_cmp);
    let single = tail.iter().filter(|t| t.1 <= polyphony_model::MSS as f64).count() as f64 / tail.len() as f64;
    let lo = v[r99.saturating_sub(1)].0;
    let hi = v[(r99 + 1).min(n - 1)].0;
    let span = (input.workload.duration.0 as f64).max(1.0);
    let m = tail.iter().map(|t| t.2).sum::<f64>() / tail.len() as f64;
    let spread = (tail.iter().map(|t| (t.2 - m).powi(2)).sum::<f64>() / tail.len() as f64).sqrt() / span;
    let p99_of = |short: bool| {
        let mut s: Vec<f64> = v.iter().filter(|t| (t.1 <= bdp) == short).map(|t| t.0).collect();
        if s.is_empty() {
            return 0.0;
        }
        s.sort_by(f64::total_cmp);
        let k = ((0.99 * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
        s[k].ln()
    };
    [
        v[rank(0.9)].0.ln(),
        v[rank(0.95)].0.ln(),
        ts[ts.len() / 2].max(1e-6).log10(),
        single,
        (hi / lo.max(1e-9)).ln(),
        spread,
        p99_of(true),
        p99_of(false),
        (n - r99) as f64,
    ]
    .map(|x| if x.is_finite() { x as f32 } else { 0.0 })
}

/// Per class of the first configuration of `c`: (pktsim's p99 flows, flowsim's p99 flows,
/// share of pktsim's tail flows also in flowsim's tail, median size per BDP of pktsim's tail
/// flows, of flowsim's, share of single-packet flows in pktsim's tail, in flowsim's, flows).
/// Flows of one case by size band (0: one packet, 1: up to one BDP, 2: beyond), with their
/// slowdowns under pktsim and flowsim.
type BandFlows = Vec<(usize, f64, f64)>;

/// pktsim's slowdowns, flowsim's, and their per-flow ratios.
type SizedSlowdowns = (Vec<f64>, Vec<f64>, Vec<f64>);

fn tails(c: &Case) -> Result<(Vec<[f64; 7]>, BandFlows)> {
    use polyphony_model::{NetworkModel, PktSim};
    let mut input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
    input.keep_flows = true;
    let cfg = std::slice::from_ref(&c.configs[0]);
    let run = |m: &dyn NetworkModel| -> Result<Vec<polyphony_spec::FlowOutcome>> {
        let o = m.evaluate(&input, cfg).into_iter().next().context("no output")??;
        o.flows.context("no per-flow output")
    };
    let (pf, ff) = (run(&PktSim::default())?, run(&FlowSim::default())?);
    let feats = features(&FlowSim::default(), &input, cfg)
        .into_iter()
        .next()
        .context("no features")??
        .1;
    let bdp_i = FEATURES.iter().position(|&n| n == "log10_bdp_packets").unwrap_or(0);
    let mut out = Vec::new();
    let mut bands = Vec::new();
    if let Some((_, f)) = feats.first() {
        let bdp = 10f64.powf(f64::from(f[bdp_i])) * polyphony_model::MSS as f64;
        let fsd: std::collections::HashMap<u64, f64> = ff.iter().map(|x| (x.id.0, x.slowdown())).collect();
        for x in &pf {
            let Some(&q) = fsd.get(&x.id.0) else { continue };
            let size = x.size.0 as f64;
            let band = if x.size.0 <= polyphony_model::MSS {
                0
            } else if size <= bdp {
                1
            } else {
                2
            };
            bands.push((band, x.slowdown(), q));
        }
    }
    for (ci, f) in feats {
        let d = input.classes[ci];
        let bdp = 10f64.powf(f64::from(f[bdp_i])) * polyphony_model::MSS as f64;
        let tail = |v: &[polyphony_spec::FlowOutcome]| {
            let mut s: Vec<(f64, u64, u64)> = v
                .iter()
                .filter(|x| x.dscp == d)
                .map(|x| (x.slowdown(), x.id.0, x.size.0))
                .collect();
            s.sort_by(|a, b| a.0.total_cmp(&b.0));
            let n = s.len();
            let r = ((0.99 * n as f64).ceil() as usize).clamp(1, n.max(1)) - 1;
            s.split_off(r.min(n))
        };
        let (pt, ft) = (tail(&pf), tail(&ff));
        if pt.is_empty() || ft.is_empty() {
            continue;
        }
        let both = pt.iter().filter(|p| ft.iter().any(|q| q.1 == p.1)).count() as f64 / pt.len() as f64;
        let med = |t: &[(f64, u64, u64)]| {
            let mut z: Vec<f64> = t.iter().map(|x| x.2 as f64 / bdp).collect();
            z.sort_by(f64::total_cmp);
            z[z.len() / 2]
        };
        let single =
            |t: &[(f64, u64, u64)]| t.iter().filter(|x| x.2 <= polyphony_model::MSS).count() as f64 / t.len() as f64;
        out.push([
            pt.len() as f64,
            ft.len() as f64,
            both,
            med(&pt),
            med(&ft),
            single(&pt),
            single(&ft),
        ]);
    }
    Ok((out, bands))
}

/// Writes every sample of `data` (case `first + i`) as a CSV row; see `Args::dump`.
fn dump(path: &std::path::Path, first: u64, data: &[CaseData]) -> Result<()> {
    use std::io::Write;
    let mut w =
        std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?);
    writeln!(w, "case,regime,flows,p99_flowsim,target,{}", FEATURES.join(","))?;
    for (i, d) in data.iter().enumerate() {
        let dscps = d.dscps();
        for (k, (po, fo, fs)) in d.rows.iter().enumerate() {
            for (ci, f) in fs {
                let (Some(y), Some(p), Some(q)) =
                    (d.target(&dscps, k, *ci), po.sli.get(dscps[*ci]), fo.sli.get(dscps[*ci]))
                else {
                    continue;
                };
                let x: Vec<String> = f.iter().map(|v| v.to_string()).collect();
                writeln!(
                    w,
                    "{},{},{},{},{},{}",
                    first + i as u64,
                    d.case.regime,
                    p.flows,
                    q.p99,
                    y,
                    x.join(",")
                )?;
            }
        }
    }
    w.flush()?;
    Ok(())
}

/// K-fold cross-validation grouped by case (fold = (index / 18) mod K, so every fold holds
/// whole runs of the 18 regimes): per held-out (configuration, class) the corrected p99's
/// relative error against pktsim, per held-out case Spearman's ρ of J; printed by regime
/// next to uncorrected flowsim.
fn cross_validate(a: &Args, data: &[CaseData], k: u64, without: &[usize]) -> Result<()> {
    // Per regime: (uncorrected errors, corrected errors, uncorrected ρ, corrected ρ).
    type Acc = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);
    let mut by: BTreeMap<String, Acc> = BTreeMap::new();
    let mut all: Acc = Default::default();
    let mut by_flows: BTreeMap<&str, Acc> = BTreeMap::new();
    // Per held-out (case, class) and configuration: pktsim's, flowsim's and the corrected
    // ln p99, each less its mean over the case's configurations — how well each model follows
    // what the knobs do.
    let mut tracking: Vec<[f64; 3]> = Vec::new();
    for fold in 0..k {
        let held = |i: u64| (i / 18) % k == fold;
        let train: Vec<(Vec<f32>, f32)> = data
            .iter()
            .enumerate()
            .filter(|(i, _)| !held(a.first + *i as u64))
            .flat_map(|(_, d)| d.samples(without))
            .collect();
        let model = a.forest.fit(&train);
        for (i, d) in data.iter().enumerate() {
            if !held(a.first + i as u64) {
                continue;
            }
            let dscps = d.dscps();
            let cl = &d.case.scenario.classes;
            let (mut jp, mut jf, mut jc) = (Vec::new(), Vec::new(), Vec::new());
            let mut per_class: BTreeMap<usize, Vec<[f64; 3]>> = BTreeMap::new();
            let acc = by.entry(d.case.regime.to_string()).or_default();
            for (po, fo, fs) in &d.rows {
                let mut co = fo.clone();
                let rows: DataVec = fs
                    .iter()
                    .map(|(_, f)| Data::new_test_data(masked(f, without), None))
                    .collect();
                let lns = model.predict(&rows);
                for ((ci, _), &ln) in fs.iter().zip(&lns) {
                    let d = dscps[*ci];
                    if let Some(s) = co.sli.classes.iter_mut().find(|s| s.dscp == d) {
                        s.p99 = data[i].apply(s.p99, ln);
                    }
                    if let (Some(p), Some(q), Some(c)) = (po.sli.get(d), fo.sli.get(d), co.sli.get(d)) {
                        if p.flows > 0 && p.p99 > 0.0 && q.p99 > 0.0 {
                            per_class
                                .entry(*ci)
                                .or_default()
                                .push([p.p99.ln(), q.p99.ln(), c.p99.ln()]);
                            let eu = (q.p99 - p.p99).abs() / p.p99;
                            let ec = (c.p99 - p.p99).abs() / p.p99;
                            let band = match p.flows {
                                0..=299 => "class < 300 flows",
                                300..=999 => "class 300–999 flows",
                                _ => "class ≥ 1000 flows",
                            };
                            let b = by_flows.entry(band).or_default();
                            b.0.push(eu);
                            b.1.push(ec);
                            for t in [&mut *acc, &mut all] {
                                t.0.push(eu);
                                t.1.push(ec);
                            }
                        }
                    }
                }
                jp.push(objective(&po.sli, cl));
                jf.push(objective(&fo.sli, cl));
                jc.push(objective(&co.sli, cl));
            }
            for v in per_class.values().filter(|v| v.len() >= 2) {
                let n = v.len() as f64;
                let m: [f64; 3] = std::array::from_fn(|k| v.iter().map(|x| x[k]).sum::<f64>() / n);
                tracking.extend(v.iter().map(|x| std::array::from_fn(|k| x[k] - m[k])));
            }
            let (ru, rc) = (spearman(&jf, &jp), spearman(&jc, &jp));
            for t in [&mut *acc, &mut all] {
                t.2.push(ru);
                t.3.push(rc);
            }
        }
        eprintln!("fold {fold} of {k} done");
    }
    println!(
        "{k}-fold cross-validation by case, dev cases {}..{}
",
        a.first,
        a.first + a.cases
    );
    println!(
        "| regime | class p99s | uncorrected: median error | ρ of J | corrected: median error | within 20 % | ρ of J |
|---|---|---|---|---|---|---|"
    );
    let row = |name: &str, t: &Acc| {
        let w = t.1.iter().filter(|&&e| e <= 0.2).count() as f64 / t.1.len().max(1) as f64;
        println!(
            "| {name} | {} | {:.1} % | {:.2} | {:.1} % | {:.0} % | {:.2} |",
            t.0.len(),
            median(&t.0) * 100.0,
            median(&t.2),
            median(&t.1) * 100.0,
            w * 100.0,
            median(&t.3)
        );
    };
    for (g, t) in &by {
        row(g, t);
    }
    row("**all**", &all);
    for (g, t) in &by_flows {
        row(g, t);
    }
    // Correlation and slope of column k's deviations on pktsim's.
    let track = |k: usize| {
        let (sxy, sxx, syy) = tracking.iter().fold((0.0, 0.0, 0.0), |(a, b, c), x| {
            (a + x[0] * x[k], b + x[0] * x[0], c + x[k] * x[k])
        });
        (sxy / (sxx * syy).sqrt(), sxy / sxx)
    };
    let ((ru, su), (rc, sc)) = (track(1), track(2));
    println!(
        "\nacross a case's configurations, ln p99 against pktsim's ({} class rows): uncorrected correlation {ru:.3}, slope {su:.3}; corrected {rc:.3}, {sc:.3}",
        tracking.len()
    );
    let worst = by.values().map(|t| median(&t.1)).fold(0.0, f64::max);
    println!(
        "
worst regime {:.1} %",
        worst * 100.0
    );
    Ok(())
}

fn num<T: serde::de::DeserializeOwned>(v: &Value, key: &str) -> Result<T> {
    serde_json::from_value(v.get(key).with_context(|| format!("gbdt model lacks {key}"))?.clone())
        .with_context(|| format!("gbdt model's {key}"))
}

/// The crate's forest from gbdt's serialised model (gbdt 0.1.3's serde layout).
fn convert(model: &GBDT) -> Result<Forest> {
    let v = serde_json::to_value(model)?;
    let conf = v.get("conf").context("gbdt model lacks conf")?;
    let mut trees = Vec::new();
    for t in v
        .get("trees")
        .and_then(Value::as_array)
        .context("gbdt model lacks trees")?
    {
        let nodes = t
            .get("tree")
            .and_then(|x| x.get("tree"))
            .and_then(Value::as_array)
            .context("gbdt tree lacks nodes")?;
        let mut tree = Tree {
            feature: Vec::new(),
            threshold: Vec::new(),
            left: Vec::new(),
            right: Vec::new(),
            leaf: Vec::new(),
            value: Vec::new(),
        };
        for (i, n) in nodes.iter().enumerate() {
            let idx: usize = num(n, "index")?;
            if idx != i {
                bail!("gbdt node {i} has index {idx}");
            }
            let val = n.get("value").context("gbdt node lacks value")?;
            let missing: i8 = num(val, "missing")?;
            let is_leaf: bool = num(val, "is_leaf")?;
            // `missing` only routes gbdt's "unknown" value (f32::MIN), which no feature takes.
            let _ = missing;
            tree.feature.push(num(val, "feature_index")?);
            tree.threshold.push(num(val, "feature_value")?);
            tree.left.push(num(n, "left")?);
            tree.right.push(num(n, "right")?);
            tree.leaf.push(is_leaf);
            tree.value.push(num(val, "pred")?);
        }
        trees.push(tree);
    }
    Ok(Forest {
        base: num(&v, "bias")?,
        shrinkage: num(conf, "shrinkage")?,
        trees,
    })
}

fn main() -> Result<()> {
    let a = Args::parse();
    a.forest.check()?;
    let cases: Vec<Case> = (a.first..a.first + a.cases)
        .map(|i| case(SeedSet::Development, i, a.configs))
        .collect::<Result<_, _>>()?;
    let without = a
        .without
        .iter()
        .map(|n| {
            FEATURES
                .iter()
                .position(|f| f == n)
                .with_context(|| format!("--without {n}: no such feature (see correction::FEATURES)"))
        })
        .collect::<Result<Vec<usize>>>()?;
    let target = match (a.excess, a.direct) {
        (false, false) => Target::Ratio,
        (true, false) => Target::Excess,
        (false, true) => Target::Direct,
        (true, true) => bail!("--excess and --direct exclude each other"),
    };
    if let Some(n) = a.tails {
        let res = common::par_map(&cases[..(n as usize).min(cases.len())], a.threads, tails)?;
        let mut by: BTreeMap<String, Vec<[f64; 7]>> = BTreeMap::new();
        // Per (rate band of the regime, size band): pktsim's and flowsim's slowdowns.
        let mut sized: BTreeMap<(String, usize), SizedSlowdowns> = BTreeMap::new();
        for (c, (_, b)) in cases.iter().zip(&res) {
            let name = c.regime.to_string();
            let rate = name.split(' ').nth(1).unwrap_or("?").to_string();
            for &(band, p, q) in b {
                let e = sized.entry((rate.clone(), band)).or_default();
                e.0.push(p);
                e.1.push(q);
                e.2.push(p / q);
            }
        }
        let rows: Vec<Vec<[f64; 7]>> = res.into_iter().map(|(r, _)| r).collect();
        for (c, r) in cases.iter().zip(&rows) {
            by.entry(c.regime.to_string()).or_default().extend(r.iter().copied());
            by.entry("**all**".into()).or_default().extend(r.iter().copied());
        }
        println!("| regime | classes | pktsim tail flows also in flowsim's tail | tail size / BDP: pktsim | flowsim | single-packet share of tail: pktsim | flowsim |\n|---|---|---|---|---|---|---|");
        for (g, v) in &by {
            let m = |k: usize| median(&v.iter().map(|r| r[k]).collect::<Vec<_>>());
            let mean = |k: usize| v.iter().map(|r| r[k]).sum::<f64>() / v.len().max(1) as f64;
            println!(
                "| {g} | {} | {:.0} % | {:.2} | {:.2} | {:.0} % | {:.0} % |",
                v.len(),
                mean(2) * 100.0,
                m(3),
                m(4),
                mean(5) * 100.0,
                mean(6) * 100.0
            );
        }
        println!("\n| host rate | flow size | flows | median pktsim / flowsim slowdown | p99 slowdown: pktsim | flowsim |\n|---|---|---|---|---|---|");
        for ((rate, band), (p, q, r)) in &mut sized {
            let pick = |v: &mut Vec<f64>, x: f64| {
                v.sort_by(f64::total_cmp);
                v[((x * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
            };
            let size = ["one packet", "≤ 1 BDP", "> 1 BDP"][*band];
            let n = r.len();
            let (m, pp, qq) = (pick(r, 0.5), pick(p, 0.99), pick(q, 0.99));
            println!("| {rate} | {size} | {n} | {m:.2} | {pp:.1} | {qq:.1} |");
        }
        return Ok(());
    }
    let data = common::par_map(&cases, a.threads, |c| {
        case_data(
            c,
            a.pktsim_cache.as_deref(),
            target,
            a.extra,
            (a.replay, a.replay_first, a.replay_fixed_rounds),
            a.target_windows,
        )
    })?;
    if let Some(path) = &a.dump {
        dump(path, a.first, &data)?;
    }
    if let Some(k) = a.cv {
        cross_validate(&a, &data, k, &without)?;
    }
    let Some(out) = &a.out else {
        return Ok(());
    };
    if target != Target::Ratio || a.extra || a.replay || !without.is_empty() {
        bail!("--excess, --direct, --extra, --replay and --without are for cross-validation; the shipped artifact uses the ratio target and the crate's features");
    }
    let samples: Vec<([f32; N_FEATURES], f32)> = data
        .iter()
        .flat_map(|d| d.samples(&[]))
        .map(|(f, y)| -> Result<([f32; N_FEATURES], f32)> {
            Ok((f.as_slice().try_into().context("feature vector length")?, y))
        })
        .collect::<Result<_>>()?;
    eprintln!("{} samples from {} cases", samples.len(), a.cases);
    let model = a.forest.fit(&samples);
    let forest = convert(&model)?;
    let rows: DataVec = samples
        .iter()
        .map(|(f, y)| Data::new_training_data(f.to_vec(), 1.0, *y, None))
        .collect();
    let theirs = model.predict(&rows);
    for (k, ((f, _), t)) in samples.iter().zip(&theirs).enumerate() {
        let ours = forest.predict(f);
        if (ours - t).abs() > 1e-4 * (1.0 + t.abs()) {
            bail!("converted forest predicts {ours} for sample {k}, gbdt {t}");
        }
    }
    let before: Vec<f64> = samples.iter().map(|(_, y)| (f64::from(*y).exp() - 1.0).abs()).collect();
    let after: Vec<f64> = samples
        .iter()
        .zip(&theirs)
        .map(|((_, y), p)| (f64::from(y - p.clamp(-3.0, 3.0)).exp() - 1.0).abs())
        .collect();
    eprintln!(
        "training set: median |p99 error| {:.1} % uncorrected, {:.1} % corrected (in-sample)",
        median(&before) * 100.0,
        median(&after) * 100.0
    );
    let command = format!(
        "cargo run --release -p polyphony-model --example train_correction -- --first {} --cases {} --configs {} --trees {} --depth {} --shrinkage {} --min-leaf {} --loss {}{} --out {}",
        a.first,
        a.cases,
        a.configs,
        a.forest.trees,
        a.forest.depth,
        a.forest.shrinkage,
        a.forest.min_leaf,
        a.forest.loss,
        if a.target_windows > 1 {
            format!(" --target-windows {}", a.target_windows)
        } else {
            String::new()
        },
        out.display()
    );
    let c = Correction::new(
        vec![
            ("command".into(), command),
            (
                "data".into(),
                format!(
                    "validation::case(SeedSet::Development, {}..{}, {}): dev seeds {}..{}, {} samples; pktsim the reference",
                    a.first,
                    a.first + a.cases,
                    a.configs,
                    SeedSet::Development.seed(a.first),
                    SeedSet::Development.seed(a.first + a.cases - 1) + 1,
                    samples.len()
                ),
            ),
            (
                "version".into(),
                format!(
                    "format {}, trained by polyphony-model {} against its pktsim",
                    polyphony_model::correction::FORMAT_VERSION,
                    env!("CARGO_PKG_VERSION")
                ),
            ),
            ("target".into(), "ln(p99_pktsim / p99_flowsim-aggregate) per class".into()),
            (
                "model".into(),
                format!(
                    "gbdt 0.1.3 {} loss, {} trees of depth {}, shrinkage {}, min leaf {}",
                    a.forest.loss,
                    a.forest.trees, a.forest.depth, a.forest.shrinkage, a.forest.min_leaf
                ),
            ),
        ],
        forest,
    )?;
    let text = c.to_text()?;
    Correction::parse(text.as_bytes()).context("the written artifact does not parse back")?;
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "wrote {} ({} bytes, {} features)",
        out.display(),
        text.len(),
        FEATURES.len()
    );
    Ok(())
}
