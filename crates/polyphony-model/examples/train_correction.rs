//! Trains flowsim's learned correction (`polyphony_model::correction`) on pktsim runs of random
//! development cases and writes the artifact the crate compiles in.
//!
//! Per development case (`validation::case(SeedSet::Development, i, configs)`): pktsim runs
//! every configuration (cached under `--pktsim-cache`, shared with `validate`), flowsim's
//! aggregate mode the batch; each (configuration, class) that pktsim completed flows of gives
//! one sample: the correction's features and the target ln(p99_pktsim / p99_flowsim).
//! The forest is gradient-boosted regression trees (the `gbdt` crate, squared error, no
//! subsampling, so training is deterministic), converted to the crate's own tree arrays; the
//! conversion is checked against gbdt's own predictions.
//!
//! ```text
//! cargo run --release -p polyphony-model --example train_correction -- --cases 648 --threads 2 \
//!     --pktsim-cache target/correction-pktsim --out models/correction/flowsim-aggregate.forest
//! ```

mod common;

use anyhow::{bail, Context, Result};
use clap::Parser;
use gbdt::config::Config;
use gbdt::decision_tree::{Data, DataVec};
use gbdt::gradient_boost::GBDT;
use polyphony_model::correction::{features, Correction, Forest, Tree, FEATURES, N_FEATURES};
use polyphony_model::validation::{case, median, Case, SeedSet};
use polyphony_model::{FlowSim, FlowSimMode};
use serde_json::Value;
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
    /// Write the artifact here.
    #[arg(long)]
    out: PathBuf,
}

/// One case's samples: (features, target).
fn samples(c: &Case, cache: Option<&std::path::Path>) -> Result<Vec<([f32; N_FEATURES], f32)>> {
    let input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
    let (pkt, _) = common::pktcache::outputs(c, &input, "dev", cache)?;
    let flowsim = FlowSim::with_mode(FlowSimMode::Aggregate);
    let mut out = Vec::new();
    for (r, po) in features(&flowsim, &input, &c.configs).into_iter().zip(&pkt) {
        let (fo, fs) = r?;
        for (ci, f) in fs {
            let d = input.classes[ci];
            if let (Some(p), Some(q)) = (po.sli.get(d), fo.sli.get(d)) {
                if p.flows > 0 && p.p99 > 0.0 && q.p99 > 0.0 {
                    out.push((f, (p.p99 / q.p99).ln() as f32));
                }
            }
        }
    }
    Ok(out)
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
    let cases: Vec<Case> = (a.first..a.first + a.cases)
        .map(|i| case(SeedSet::Development, i, a.configs))
        .collect::<Result<_, _>>()?;
    let all = common::par_map(&cases, a.threads, |c| samples(c, a.pktsim_cache.as_deref()))?;
    let samples: Vec<([f32; N_FEATURES], f32)> = all.into_iter().flatten().collect();
    eprintln!("{} samples from {} cases", samples.len(), a.cases);

    let mut cfg = Config::new();
    cfg.set_feature_size(N_FEATURES);
    cfg.set_max_depth(a.depth);
    cfg.set_iterations(a.trees);
    cfg.set_shrinkage(a.shrinkage);
    cfg.set_min_leaf_size(a.min_leaf);
    if !["SquaredError", "LAD"].contains(&a.loss.as_str()) {
        bail!("--loss {}: use SquaredError or LAD", a.loss);
    }
    cfg.set_loss(&a.loss);
    let mut data: DataVec = samples
        .iter()
        .map(|(f, y)| Data::new_training_data(f.to_vec(), 1.0, *y, None))
        .collect();
    let mut model = GBDT::new(&cfg);
    model.fit(&mut data);
    let forest = convert(&model)?;
    let theirs = model.predict(&data);
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
        a.out.display()
    );
    let c = Correction {
        header: vec![
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
    };
    let text = c.to_text()?;
    Correction::parse(text.as_bytes()).context("the written artifact does not parse back")?;
    if let Some(dir) = a.out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&a.out, &text).with_context(|| format!("writing {}", a.out.display()))?;
    eprintln!(
        "wrote {} ({} bytes, {} features)",
        a.out.display(),
        text.len(),
        FEATURES.len()
    );
    Ok(())
}
