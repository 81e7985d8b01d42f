//! An m3-style size-bucketed correction of flowsim, cross-validated against the class-level
//! correction (`polyphony_model::correction`) on the same development cases, side by side.
//!
//! The class-level correction predicts one number per class, ln(p99_pktsim / p99_flowsim).
//! Here each class's flows are split into size buckets relative to their own path's
//! bandwidth-delay product (rate of the slowest link × base RTT): one packet (≤ MSS), ≤ 1 BDP,
//! ≤ 8 BDP, larger. Per (case, configuration, class, bucket) a forest per knot predicts
//! ln(Q_pktsim(q) / Q_flowsim(q)) of the bucket's slowdown quantile at q ∈ [`KNOTS`] from the
//! class-level features plus the bucket's own (index, flow count and share of the class, median
//! size per BDP, flowsim's ln Q at every knot). The class p99 is rebuilt as the 0.99 quantile of
//! the count-weighted mixture of the buckets' predicted quantile functions: per bucket, ln
//! slowdown is linear in q between knots (knots made non-decreasing by a running maximum;
//! below the first knot linear from q = 0 at ln slowdown min(0, ln Q(0.5)); the last knot is
//! the bucket's largest slowdown), and the mixture's CDF is solved for 0.99 by bisection in
//! ln slowdown. The `oracle` column rebuilds each class p99 from pktsim's own bucket knots:
//! the error of the reconstruction alone.
//!
//! pktsim's per-flow outcomes are cached under `--flow-cache` (one file per case seed and
//! configuration: flow id, FCT, ideal FCT); pktsim itself is not changed. Folds are by case,
//! as in `train_correction --cv` ((index / 18) mod K). Both corrections use the same gbdt
//! settings.
//!
//! ```text
//! cargo run --release -p polyphony-model --example size_buckets -- --first 0 --cases 648 --runs 2 --threads 2 \
//!     --flow-cache DIR --pktsim-cache DIR2 --cv 5
//! ```

mod common;

use anyhow::{bail, Context, Result};
use clap::Parser;
use gbdt::decision_tree::{Data, DataVec};
use gbdt::gradient_boost::GBDT;
use polyphony_model::correction::features;
use polyphony_model::validation::{case, median, objective, spearman, Case, SeedSet};
use polyphony_model::{FlowSim, NetworkModel, PktSim, MSS};
use polyphony_spec::{FlowOutcome, Nanos, SliVector};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

#[derive(Parser)]
struct Args {
    /// First development case.
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Development cases.
    #[arg(long, default_value_t = 648)]
    cases: u64,
    /// Random configurations drawn per case (4 draws `train_correction --configs 4`'s).
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    configs: usize,
    /// How many of the drawn configurations are run (the first ones).
    #[arg(long, default_value_t = 2)]
    runs: usize,
    /// Worker threads (pktsim runs, then forest fits).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// pktsim's per-flow outcomes are read from / written to this directory.
    #[arg(long)]
    flow_cache: PathBuf,
    /// `train_correction`'s class-level pktsim cache: where it holds a case, its class p99s
    /// must equal those rebuilt from the per-flow outcomes (a check, nothing is written).
    #[arg(long)]
    pktsim_cache: Option<PathBuf>,
    /// Folds of the cross-validation by case.
    #[arg(long, default_value_t = 5)]
    cv: u64,
    /// The forests' settings, both corrections.
    #[command(flatten)]
    forest: common::forest::ForestArgs,
}

/// The bucket quantiles predicted, ascending; the last is the bucket's largest slowdown.
const KNOTS: [f64; 6] = [0.5, 0.9, 0.95, 0.98, 0.99, 1.0];
const NK: usize = KNOTS.len();
/// Size buckets: ≤ one packet, ≤ 1 BDP, ≤ [`LARGE_BDP`] BDP, larger.
const BUCKETS: usize = 4;
const LARGE_BDP: f64 = 8.0;
/// Largest |ln factor| applied, as the crate's correction.
const MAX_LN: f64 = 3.0;

/// One size bucket of one class under one configuration.
struct Bucket {
    /// Class features, then the bucket's.
    x: Vec<f32>,
    /// Share of the class's measured flows.
    weight: f64,
    ln_fs: [f64; NK],
    ln_pkt: [f64; NK],
}

/// One class under one configuration.
struct ClassRow {
    dscp: polyphony_spec::Dscp,
    x: Vec<f32>,
    p99_pkt: f64,
    p99_fs: f64,
    buckets: Vec<Bucket>,
}

/// One configuration of a case: both models' SLIs and the class rows.
struct Run {
    pkt: SliVector,
    fs: SliVector,
    classes: Vec<ClassRow>,
}

struct CaseData {
    index: u64,
    case: Case,
    runs: Vec<Run>,
}

/// pktsim's measured flows of `c`'s configuration `k`, from the cache or a fresh run.
fn pkt_flows(dir: &Path, c: &Case, k: usize, input: &polyphony_model::ModelInput) -> Result<Vec<FlowOutcome>> {
    let path = dir.join(format!("dev-{}-{}-{k}.json", c.seed, c.configs.len()));
    let compact: Vec<(u64, u64, u64)> = match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).with_context(|| format!("parsing {}; delete it", path.display()))?,
        Err(_) => {
            let o = PktSim::default()
                .evaluate(input, std::slice::from_ref(&c.configs[k]))
                .into_iter()
                .next()
                .context("pktsim returned nothing")??;
            let v: Vec<(u64, u64, u64)> = o
                .flows
                .context("pktsim kept no flows")?
                .iter()
                .map(|f| (f.id.0, f.fct.0, f.ideal.0))
                .collect();
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, serde_json::to_vec(&v)?).with_context(|| format!("writing {}", tmp.display()))?;
            std::fs::rename(&tmp, &path).with_context(|| format!("renaming {}", tmp.display()))?;
            v
        }
    };
    compact
        .into_iter()
        .map(|(id, fct, ideal)| {
            let f = input
                .workload
                .flows
                .get(id as usize)
                .filter(|f| f.id.0 == id)
                .with_context(|| format!("{}: flow {id} is not its workload index", path.display()))?;
            Ok(FlowOutcome {
                id: f.id,
                dscp: f.dscp,
                size: f.size,
                start: f.start,
                fct: Nanos(fct),
                ideal: Nanos(ideal),
                query: f.query,
            })
        })
        .collect()
}

/// Nearest-rank quantiles of an ascending slice at the knots, as logarithms.
fn ln_knots(sorted: &[f64]) -> [f64; NK] {
    KNOTS.map(|q| polyphony_spec::percentile(sorted, q).unwrap_or(1.0).max(1e-9).ln())
}

fn case_data(a: &Args, index: u64) -> Result<CaseData> {
    let c = case(SeedSet::Development, index, a.configs)?;
    let mut input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
    input.keep_flows = true;
    let topo = input.topology.clone();
    let runs_n = a.runs.min(c.configs.len());
    let flowsim = FlowSim::default();
    let cached: Option<Vec<polyphony_model::ModelOutput>> = a.pktsim_cache.as_ref().and_then(|dir| {
        let t = std::fs::read_to_string(dir.join(format!("dev-{}-{}.json", c.seed, c.configs.len()))).ok()?;
        serde_json::from_str(&t).ok()
    });
    let mut runs = Vec::new();
    for (k, r) in features(&flowsim, &input, &c.configs[..runs_n]).into_iter().enumerate() {
        let (fo, fx) = r?;
        let ff = fo.flows.context("flowsim kept no flows")?;
        let pf = pkt_flows(&a.flow_cache, &c, k, &input)?;
        let pkt = SliVector::from_outcomes(&pf, &input.classes);
        if let Some(o) = cached.as_ref().and_then(|v| v.get(k)) {
            for s in &o.sli.classes {
                let mine = pkt.get(s.dscp).map_or(f64::NAN, |x| x.p99);
                if (mine - s.p99).abs() > 1e-9 * s.p99 {
                    bail!("case {index} configuration {k} class {:?}: p99 {mine} from per-flow outcomes, {} in the class-level cache", s.dscp, s.p99);
                }
            }
        }
        let fs_of: HashMap<u64, f64> = ff.iter().map(|f| (f.id.0, f.slowdown())).collect();
        let mut classes = Vec::new();
        for (ci, x) in fx {
            let d = input.classes[ci];
            let (Some(p), Some(q)) = (pkt.get(d), fo.sli.get(d)) else {
                continue;
            };
            if p.flows == 0 || p.p99 <= 0.0 || q.p99 <= 0.0 {
                continue;
            }
            // Per bucket: (pktsim slowdown, flowsim slowdown, size per BDP) of each flow.
            let mut by: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); BUCKETS];
            for f in pf.iter().filter(|f| f.dscp == d) {
                let Some(&s) = fs_of.get(&f.id.0) else { continue };
                let w = &input.workload.flows[f.id.0 as usize];
                let ideal = topo.ideal(w.src, w.dst);
                let bdp = (ideal.bottleneck.0 as f64 / 8.0 * ideal.base_rtt.0 as f64 * 1e-9).max(1.0);
                let size = f.size.0 as f64;
                let b = if f.size.0 <= MSS {
                    0
                } else if size <= bdp {
                    1
                } else if size <= LARGE_BDP * bdp {
                    2
                } else {
                    3
                };
                by[b].push((f.slowdown(), s, size / bdp));
            }
            let n: usize = by.iter().map(Vec::len).sum();
            let mut buckets = Vec::new();
            for (b, v) in by.iter().enumerate() {
                if v.is_empty() {
                    continue;
                }
                let sorted = |g: fn(&(f64, f64, f64)) -> f64| {
                    let mut s: Vec<f64> = v.iter().map(g).collect();
                    s.sort_by(f64::total_cmp);
                    s
                };
                let (ps, fss, sz) = (sorted(|t| t.0), sorted(|t| t.1), sorted(|t| t.2));
                let ln_fs = ln_knots(&fss);
                let weight = v.len() as f64 / n as f64;
                let mut bx = x.to_vec();
                bx.extend(
                    [
                        b as f64,
                        (v.len() as f64).ln(),
                        weight,
                        sz[sz.len() / 2].max(1e-9).log10(),
                    ]
                    .map(|z| z as f32),
                );
                bx.extend(ln_fs.map(|z| z as f32));
                bx.extend(ln_fs.map(|z| (z - q.p99.ln()) as f32));
                buckets.push(Bucket {
                    x: bx,
                    weight,
                    ln_fs,
                    ln_pkt: ln_knots(&ps),
                });
            }
            classes.push(ClassRow {
                dscp: d,
                x: x.to_vec(),
                p99_pkt: p.p99,
                p99_fs: q.p99,
                buckets,
            });
        }
        runs.push(Run {
            pkt,
            fs: fo.sli,
            classes,
        });
    }
    Ok(CaseData { index, case: c, runs })
}

/// The CDF at ln slowdown `y` of a bucket whose ln quantiles at [`KNOTS`] are `k`
/// (non-decreasing).
fn cdf(k: &[f64; NK], y: f64) -> f64 {
    let y0 = k[0].min(0.0);
    if y < y0 {
        return 0.0;
    }
    if y < k[0] {
        return KNOTS[0] * (y - y0) / (k[0] - y0);
    }
    for j in 1..NK {
        if y < k[j] {
            return KNOTS[j - 1] + (KNOTS[j] - KNOTS[j - 1]) * (y - k[j - 1]) / (k[j] - k[j - 1]);
        }
    }
    1.0
}

/// The 0.99 quantile of the mixture of buckets `(weight, ln knots)`.
fn mixture_p99(buckets: &[(f64, [f64; NK])]) -> f64 {
    let g = |y: f64| buckets.iter().map(|(w, k)| w * cdf(k, y)).sum::<f64>();
    let mut lo = buckets.iter().map(|(_, k)| k[0].min(0.0)).fold(f64::INFINITY, f64::min) - 1.0;
    let mut hi = buckets.iter().map(|(_, k)| k[NK - 1]).fold(f64::NEG_INFINITY, f64::max);
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if g(mid) >= 0.99 - 1e-12 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi.exp()
}

/// Non-decreasing copy of `k` (running maximum).
fn monotone(mut k: [f64; NK]) -> [f64; NK] {
    for j in 1..NK {
        k[j] = k[j].max(k[j - 1]);
    }
    k
}

fn predict(m: &GBDT, xs: &[&[f32]]) -> Vec<f64> {
    let rows: DataVec = xs.iter().map(|x| Data::new_test_data(x.to_vec(), None)).collect();
    m.predict(&rows)
        .into_iter()
        .map(|v| f64::from(v).clamp(-MAX_LN, MAX_LN))
        .collect()
}

/// Per regime: errors of flowsim, the class-level correction, the bucketed one, the oracle
/// reconstruction; ρ of J of the same three models.
#[derive(Default)]
struct Acc {
    err: [Vec<f64>; 4],
    rho: [Vec<f64>; 3],
}

fn main() -> Result<()> {
    let a = Args::parse();
    a.forest.check()?;
    if a.cv < 2 {
        bail!("--cv {}: need at least 2 folds", a.cv);
    }
    let idx: Vec<u64> = (a.first..a.first + a.cases).collect();
    let t0 = std::time::Instant::now();
    let data = common::par_map(&idx, a.threads, |&i| case_data(&a, i))?;
    let classes: usize = data.iter().flat_map(|d| &d.runs).map(|r| r.classes.len()).sum();
    let buckets: usize = data
        .iter()
        .flat_map(|d| &d.runs)
        .flat_map(|r| &r.classes)
        .map(|c| c.buckets.len())
        .sum();
    eprintln!(
        "{} cases × {} configurations: {classes} class rows, {buckets} bucket rows ({:.0} s)",
        data.len(),
        a.runs,
        t0.elapsed().as_secs_f64()
    );
    // Fits: per fold, the class-level forest (job 0) and one per knot (jobs 1..=NK).
    let jobs: Vec<(u64, usize)> = (0..a.cv).flat_map(|f| (0..=NK).map(move |j| (f, j))).collect();
    let held = |i: u64, fold: u64| (i / 18) % a.cv == fold;
    let models = common::par_map(&jobs, a.threads, |&(fold, j)| {
        let train = data.iter().filter(|d| !held(d.index, fold)).flat_map(|d| &d.runs);
        let samples: Vec<(&[f32], f32)> = if j == 0 {
            train
                .flat_map(|r| &r.classes)
                .map(|c| (c.x.as_slice(), (c.p99_pkt / c.p99_fs).ln() as f32))
                .collect()
        } else {
            train
                .flat_map(|r| &r.classes)
                .flat_map(|c| &c.buckets)
                .map(|b| (b.x.as_slice(), (b.ln_pkt[j - 1] - b.ln_fs[j - 1]) as f32))
                .collect()
        };
        let m = a.forest.fit(&samples);
        eprintln!("fold {fold} forest {j} fitted on {} samples", samples.len());
        Ok(m)
    })?;
    let mut by: BTreeMap<String, Acc> = BTreeMap::new();
    let mut all = Acc::default();
    for d in &data {
        let fold = (d.index / 18) % a.cv;
        let m = |j: usize| &models[(fold as usize) * (NK + 1) + j];
        let cl = &d.case.scenario.classes;
        let mut js: [Vec<f64>; 4] = Default::default();
        let acc = by.entry(d.case.regime.to_string()).or_default();
        for r in &d.runs {
            let xs: Vec<&[f32]> = r.classes.iter().map(|c| c.x.as_slice()).collect();
            let class_ln = predict(m(0), &xs);
            let bx: Vec<&[f32]> = r
                .classes
                .iter()
                .flat_map(|c| &c.buckets)
                .map(|b| b.x.as_slice())
                .collect();
            let knot_ln: Vec<Vec<f64>> = (0..NK).map(|j| predict(m(j + 1), &bx)).collect();
            let (mut cls, mut bkt) = (r.fs.clone(), r.fs.clone());
            let mut row = 0;
            for (c, ln) in r.classes.iter().zip(&class_ln) {
                let pred: Vec<(f64, [f64; NK])> = c
                    .buckets
                    .iter()
                    .enumerate()
                    .map(|(k, b)| {
                        let q = std::array::from_fn(|j| b.ln_fs[j] + knot_ln[j][row + k]);
                        (b.weight, monotone(q))
                    })
                    .collect();
                row += c.buckets.len();
                let oracle: Vec<(f64, [f64; NK])> = c.buckets.iter().map(|b| (b.weight, b.ln_pkt)).collect();
                let p_cls = c.p99_fs * ln.exp();
                let p_bkt = mixture_p99(&pred);
                let p_orc = mixture_p99(&oracle);
                for (s, v) in [(&mut cls, p_cls), (&mut bkt, p_bkt)] {
                    if let Some(x) = s.classes.iter_mut().find(|x| x.dscp == c.dscp) {
                        x.p99 = v;
                    }
                }
                for (e, p) in [c.p99_fs, p_cls, p_bkt, p_orc].into_iter().enumerate() {
                    let err = (p - c.p99_pkt).abs() / c.p99_pkt;
                    acc.err[e].push(err);
                    all.err[e].push(err);
                }
            }
            for (j, s) in [&r.pkt, &r.fs, &cls, &bkt].into_iter().enumerate() {
                js[j].push(objective(s, cl));
            }
        }
        for j in 0..3 {
            let rho = spearman(&js[j + 1], &js[0]);
            acc.rho[j].push(rho);
            all.rho[j].push(rho);
        }
    }
    println!(
        "{}-fold cross-validation by case, dev cases {}..{} × configurations 0..{} of {}; buckets ≤ 1 packet / ≤ 1 / ≤ {LARGE_BDP} / > {LARGE_BDP} BDP, knots {KNOTS:?}; {} trees of depth {}, shrinkage {}, min leaf {}, loss {}\n",
        a.cv,
        a.first,
        a.first + a.cases,
        a.runs,
        a.configs,
        a.forest.trees,
        a.forest.depth,
        a.forest.shrinkage,
        a.forest.min_leaf,
        a.forest.loss
    );
    println!("Median per-class p99 error (mean ρ of J over a case's configurations):\n");
    println!("| regime | class p99s | flowsim | class-level correction | bucketed correction | oracle bucket mixture |\n|---|---|---|---|---|---|");
    let row = |name: &str, t: &Acc| {
        let e = |k: usize| median(&t.err[k]) * 100.0;
        let r = |k: usize| {
            let v: Vec<f64> = t.rho[k].iter().copied().filter(|x| !x.is_nan()).collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        println!(
            "| {name} | {} | {:.1} % ({:.2}) | {:.1} % ({:.2}) | {:.1} % ({:.2}) | {:.1} % |",
            t.err[0].len(),
            e(0),
            r(0),
            e(1),
            r(1),
            e(2),
            r(2),
            e(3)
        );
    };
    for (g, t) in &by {
        row(g, t);
    }
    row("**all**", &all);
    let worst = |k: usize| by.values().map(|t| median(&t.err[k])).fold(0.0, f64::max) * 100.0;
    println!(
        "\nworst regime: flowsim {:.1} %, class-level {:.1} %, bucketed {:.1} %, oracle {:.1} % ({:.0} s in all)",
        worst(0),
        worst(1),
        worst(2),
        worst(3),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bucket_mixture_is_its_own_quantile() {
        let k = monotone([0.1, 0.5, 0.7, 0.9, 1.2, 2.0]);
        assert!((mixture_p99(&[(1.0, k)]).ln() - 1.2).abs() < 1e-9);
        // Two equal halves with the same knots: the same quantile.
        assert!((mixture_p99(&[(0.5, k), (0.5, k)]).ln() - 1.2).abs() < 1e-9);
        // A bucket far below takes no tail: the other's 0.98 quantile.
        let low = [-0.5; NK];
        assert!((mixture_p99(&[(0.5, low), (0.5, k)]).ln() - 0.9).abs() < 1e-9);
        assert!(cdf(&k, 3.0) == 1.0 && cdf(&k, -1.0) == 0.0);
    }
}
