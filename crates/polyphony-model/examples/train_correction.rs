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
//! corrected error and ρ of J by regime: the measurement choices (features via `--without`,
//! the `--excess` target, depth, trees) are made on, so that the validation set is run only
//! for a model that is shipped.
//!
//! ```text
//! cargo run --release -p polyphony-model --example train_correction -- --first 0 --cases 1000 --configs 4 \
//!     --threads 2 --pktsim-cache DIR --cv 5 --out models/correction/flowsim-aggregate.forest
//! ```

mod common;

use anyhow::{bail, Context, Result};
use clap::Parser;
use gbdt::config::Config;
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
    #[arg(long, default_value_t = 8)]
    configs: usize,
    /// Worker threads for pktsim runs missing from the cache.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// pktsim outputs are read from / written to this directory.
    #[arg(long)]
    pktsim_cache: Option<PathBuf>,
    /// Boosting rounds (trees).
    #[arg(long, default_value_t = 400)]
    trees: usize,
    /// Depth of each tree.
    #[arg(long, default_value_t = 5)]
    depth: u32,
    /// Learning rate.
    #[arg(long, default_value_t = 0.05)]
    shrinkage: f32,
    /// Fewest samples in a leaf.
    #[arg(long, default_value_t = 20)]
    min_leaf: usize,
    /// Loss: `SquaredError` or `LAD` (least absolute deviation).
    #[arg(long, default_value = "LAD")]
    loss: String,
    /// Zero these features (comma-separated names) in training: an ablation.
    #[arg(long, value_delimiter = ',')]
    without: Vec<String>,
    /// Target ln((p99_pktsim − 1) / (p99_flowsim − 1)) instead of ln(p99_pktsim / p99_flowsim)
    /// (cross-validation only: the crate applies the ratio target).
    #[arg(long)]
    excess: bool,
    /// Cross-validate K-fold by case first (printed by regime).
    #[arg(long)]
    cv: Option<u64>,
    /// Fit on every case and write the artifact here.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// One configuration of a case: pktsim's output, flowsim's, and the feature rows.
type Row = (ModelOutput, ModelOutput, Vec<(usize, [f32; N_FEATURES])>);

/// One case's data: per configuration pktsim's and flowsim's outputs and the feature rows
/// (class index, features) of the classes flowsim has statistics for.
struct CaseData {
    case: Case,
    /// Target ln of the excess slowdown (p99 − 1) instead of the p99.
    excess: bool,
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
        match self.excess {
            false => (p / q).ln() as f32,
            true => ((p - 1.0).max(EXCESS_FLOOR) / (q - 1.0).max(EXCESS_FLOOR)).ln() as f32,
        }
    }
    /// The corrected p99 for flowsim's `q` and a prediction `ln`.
    fn apply(&self, q: f64, ln: f32) -> f64 {
        let f = f64::from(ln.clamp(-3.0, 3.0)).exp();
        match self.excess {
            false => q * f,
            true => 1.0 + (q - 1.0).max(EXCESS_FLOOR) * f,
        }
    }
    fn dscps(&self) -> Vec<polyphony_spec::Dscp> {
        self.case.scenario.dscps()
    }
    /// (features, target) of every row with a target; features named in `without` are zeroed.
    fn samples(&self, without: &[usize]) -> Vec<([f32; N_FEATURES], f32)> {
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

fn masked(f: &[f32; N_FEATURES], without: &[usize]) -> [f32; N_FEATURES] {
    let mut g = *f;
    for &i in without {
        g[i] = 0.0;
    }
    g
}

fn case_data(c: &Case, cache: Option<&std::path::Path>, excess: bool) -> Result<CaseData> {
    let input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
    let (pkt, _) = common::pktcache::outputs(c, &input, "dev", cache)?;
    let flowsim = FlowSim::default();
    let mut rows = Vec::new();
    for (r, po) in features(&flowsim, &input, &c.configs).into_iter().zip(pkt) {
        let (fo, fs) = r?;
        rows.push((po, fo, fs));
    }
    Ok(CaseData {
        case: c.clone(),
        excess,
        rows,
    })
}

fn fit(a: &Args, samples: &[([f32; N_FEATURES], f32)]) -> GBDT {
    let mut cfg = Config::new();
    cfg.set_feature_size(N_FEATURES);
    cfg.set_max_depth(a.depth);
    cfg.set_iterations(a.trees);
    cfg.set_shrinkage(a.shrinkage);
    cfg.set_min_leaf_size(a.min_leaf);
    cfg.set_loss(&a.loss);
    let mut data: DataVec = samples
        .iter()
        .map(|(f, y)| Data::new_training_data(f.to_vec(), 1.0, *y, None))
        .collect();
    let mut model = GBDT::new(&cfg);
    model.fit(&mut data);
    model
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
    for fold in 0..k {
        let held = |i: u64| (i / 18) % k == fold;
        let train: Vec<([f32; N_FEATURES], f32)> = data
            .iter()
            .enumerate()
            .filter(|(i, _)| !held(a.first + *i as u64))
            .flat_map(|(_, d)| d.samples(without))
            .collect();
        let model = fit(a, &train);
        let forest = convert(&model)?;
        for (i, d) in data.iter().enumerate() {
            if !held(a.first + i as u64) {
                continue;
            }
            let dscps = d.dscps();
            let cl = &d.case.scenario.classes;
            let (mut jp, mut jf, mut jc) = (Vec::new(), Vec::new(), Vec::new());
            let acc = by.entry(d.case.regime.to_string()).or_default();
            for (po, fo, fs) in &d.rows {
                let mut co = fo.clone();
                for (ci, f) in fs {
                    let ln = forest.predict(&masked(f, without));
                    let d = dscps[*ci];
                    if let Some(s) = co.sli.classes.iter_mut().find(|s| s.dscp == d) {
                        s.p99 = data[i].apply(s.p99, ln);
                    }
                    if let (Some(p), Some(q), Some(c)) = (po.sli.get(d), fo.sli.get(d), co.sli.get(d)) {
                        if p.flows > 0 && p.p99 > 0.0 && q.p99 > 0.0 {
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
    if !["SquaredError", "LAD"].contains(&a.loss.as_str()) {
        bail!("--loss {}: use SquaredError or LAD", a.loss);
    }
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
    let data = common::par_map(&cases, a.threads, |c| case_data(c, a.pktsim_cache.as_deref(), a.excess))?;
    if let Some(k) = a.cv {
        cross_validate(&a, &data, k, &without)?;
    }
    let Some(out) = &a.out else {
        return Ok(());
    };
    if a.excess || !without.is_empty() {
        bail!("--excess and --without are for cross-validation; the shipped artifact uses the ratio target and every feature");
    }
    let samples: Vec<([f32; N_FEATURES], f32)> = data.iter().flat_map(|d| d.samples(&[])).collect();
    eprintln!("{} samples from {} cases", samples.len(), a.cases);
    let model = fit(&a, &samples);
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
        "cargo run --release -p polyphony-model --example train_correction -- --first {} --cases {} --configs {} --trees {} --depth {} --shrinkage {} --min-leaf {} --loss {} --out {}",
        a.first,
        a.cases,
        a.configs,
        a.trees,
        a.depth,
        a.shrinkage,
        a.min_leaf,
        a.loss,
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
            ("target".into(), "ln(p99_pktsim / p99_flowsim-aggregate) per class".into()),
            (
                "model".into(),
                format!(
                    "gbdt 0.1.3 {} loss, {} trees of depth {}, shrinkage {}, min leaf {}",
                    a.loss,
                    a.trees, a.depth, a.shrinkage, a.min_leaf
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
