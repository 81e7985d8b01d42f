//! 5-fold cross-validation by case of an MLP predicting ln(p99_pktsim / p99_flowsim) from the
//! correction's features, on the CSV `train_correction --dump FILE` writes (folds as
//! `train_correction --cv 5`: fold = (case / 18) mod 5). Prints the median per-class p99 error
//! of the corrected prediction by regime, by class size and overall.
//!
//! ```text
//! cargo run --release --manifest-path tools/mlp-cv/Cargo.toml -- FILE [HIDDEN] [EPOCHS] [LR]
//! ```

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor, D};
use candle_nn::{linear, AdamW, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use std::collections::BTreeMap;

/// One (configuration, class) sample.
struct Sample {
    case: u64,
    regime: String,
    flows: u64,
    target: f32,
    x: Vec<f32>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> Result<T> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| anyhow::anyhow!("argument {i}: {s:?} is not a number")),
    }
}

fn read(path: &str) -> Result<Vec<Sample>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let mut out = Vec::new();
    for (n, l) in text.lines().enumerate().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        if c.len() < 6 {
            bail!(
                "{path} line {}: {} fields, want case,regime,flows,p99,target,features…",
                n + 1,
                c.len()
            );
        }
        let num = |s: &str| {
            s.parse::<f32>()
                .with_context(|| format!("{path} line {}: {s:?}", n + 1))
        };
        out.push(Sample {
            case: c[0].parse().with_context(|| format!("{path} line {}: case", n + 1))?,
            regime: c[1].to_string(),
            flows: c[2].parse().with_context(|| format!("{path} line {}: flows", n + 1))?,
            target: num(c[4])?,
            x: c[5..].iter().map(|s| num(s)).collect::<Result<_>>()?,
        });
    }
    if out.is_empty() {
        bail!("{path} holds no samples");
    }
    Ok(out)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).context("usage: mlp-cv FILE [HIDDEN] [EPOCHS] [LR]")?;
    let hidden: usize = arg(&args, 2, 32)?;
    let epochs: usize = arg(&args, 3, 100)?;
    let lr: f64 = arg(&args, 4, 1e-3)?;
    let samples = read(path)?;
    let nf = samples[0].x.len();
    let dev = Device::Cpu;
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let t0 = std::time::Instant::now();
    for fold in 0..5u64 {
        let held = |c: u64| (c / 18) % 5 == fold;
        let train: Vec<&Sample> = samples.iter().filter(|s| !held(s.case)).collect();
        let test: Vec<&Sample> = samples.iter().filter(|s| held(s.case)).collect();
        // Standardise by the training fold's mean and deviation.
        let mut mean = vec![0f64; nf];
        let mut sd = vec![0f64; nf];
        for s in &train {
            for (m, &x) in mean.iter_mut().zip(&s.x) {
                *m += f64::from(x) / train.len() as f64;
            }
        }
        for s in &train {
            for ((d, &x), m) in sd.iter_mut().zip(&s.x).zip(&mean) {
                *d += (f64::from(x) - m).powi(2) / train.len() as f64;
            }
        }
        let sd: Vec<f64> = sd.into_iter().map(|v| v.sqrt().max(1e-6)).collect();
        let tensors = |v: &[&Sample]| -> Result<(Tensor, Tensor)> {
            let xs: Vec<f32> = v
                .iter()
                .flat_map(|s| (0..nf).map(|j| ((f64::from(s.x[j]) - mean[j]) / sd[j]) as f32))
                .collect();
            let ys: Vec<f32> = v.iter().map(|s| s.target).collect();
            Ok((
                Tensor::from_vec(xs, (v.len(), nf), &dev)?,
                Tensor::from_vec(ys, (v.len(), 1), &dev)?,
            ))
        };
        let (xtr, ytr) = tensors(&train)?;
        let (xte, _) = tensors(&test)?;
        let vm = VarMap::new();
        let vb = VarBuilder::from_varmap(&vm, DType::F32, &dev);
        let l1 = linear(nf, hidden, vb.pp("l1"))?;
        let l2 = linear(hidden, hidden, vb.pp("l2"))?;
        let l3 = linear(hidden, 1, vb.pp("l3"))?;
        let forward = |x: &Tensor| -> Result<Tensor> { Ok(l3.forward(&l2.forward(&l1.forward(x)?.relu()?)?.relu()?)?) };
        let params = ParamsAdamW {
            lr,
            weight_decay: 1e-4,
            ..Default::default()
        };
        let mut opt = AdamW::new(vm.all_vars(), params)?;
        let mut order: Vec<u32> = (0..train.len() as u32).collect();
        let mut rng = 12345u64 + fold;
        for ep in 0..epochs {
            // Fisher–Yates with xorshift: a fixed shuffle per fold.
            for i in (1..order.len()).rev() {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                order.swap(i, (rng % (i as u64 + 1)) as usize);
            }
            opt.set_learning_rate(lr * 0.5 * (1.0 + (std::f64::consts::PI * ep as f64 / epochs as f64).cos()));
            for b in order.chunks(256) {
                let idx = Tensor::from_vec(b.to_vec(), b.len(), &dev)?;
                let (x, y) = (xtr.index_select(&idx, 0)?, ytr.index_select(&idx, 0)?);
                // L1 loss: the LAD loss of the forest.
                let loss = (forward(&x)? - y)?.abs()?.mean_all()?;
                opt.backward_step(&loss)?;
            }
        }
        let pred: Vec<f32> = forward(&xte)?.squeeze(D::Minus1)?.to_vec1()?;
        for (s, p) in test.iter().zip(pred) {
            // |p99_flowsim · e^p − p99_pktsim| / p99_pktsim, as `train_correction --cv`.
            let e = (f64::from(p.clamp(-3.0, 3.0) - s.target).exp() - 1.0).abs();
            let band = match s.flows {
                0..=299 => "class < 300 flows",
                300..=999 => "class 300–999 flows",
                _ => "class ≥ 1000 flows",
            };
            for k in [s.regime.as_str(), "**all**", band] {
                by.entry(k.to_string()).or_default().push(e);
            }
        }
        eprintln!("fold {fold} done at {:.0} s", t0.elapsed().as_secs_f64());
    }
    println!("MLP {nf}-{hidden}-{hidden}-1 ReLU, L1 loss, AdamW, {epochs} epochs, lr {lr} cosine, batch 256; 5-fold by case\n");
    println!("| regime / class size | class p99s | median error |\n|---|---|---|");
    let mut worst = 0f64;
    for (k, mut v) in by {
        let m = median(&mut v);
        if !k.starts_with("class") && k != "**all**" {
            worst = worst.max(m);
        }
        println!("| {k} | {} | {:.1} % |", v.len(), m * 100.0);
    }
    println!(
        "\nworst regime {:.1} %; training {:.0} s",
        worst * 100.0,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
