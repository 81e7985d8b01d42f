//! Helpers shared by the examples: the paper's objective J, random configurations from the
//! default knob space, rank statistics, and the workload sample from the command line
//! (`sample.rs`).
#![allow(dead_code)]

pub mod sample;

use polyphony_spec::{
    Bytes, ClassConfig, Dscp, KnobKind, KnobSpace, NetworkConfig, Packets, Scale, SliVector, TrafficClass,
};
use rand::Rng;

/// LogSumExp sharpness c used in the tables.
pub const LSE_C: f64 = 10.0;
/// Fairness weight λ used in the tables.
pub const LAMBDA: f64 = 0.5;

/// J(r) = LSE_c(r) + λ · mean |r_i − mean(r)| with r_i = p99_i / v_i (the paper's §4.1).
pub fn objective(sli: &SliVector, classes: &[TrafficClass]) -> f64 {
    let r: Vec<f64> = classes
        .iter()
        .map(|c| sli.get(c.dscp).map_or(f64::INFINITY, |s| s.p99) / c.slo.max_slowdown)
        .collect();
    let m = r.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + (r.iter().map(|x| (LSE_C * (x - m)).exp()).sum::<f64>()).ln() / LSE_C;
    let mean = r.iter().sum::<f64>() / r.len() as f64;
    lse + LAMBDA * r.iter().map(|x| (x - mean).abs()).sum::<f64>() / r.len() as f64
}

/// A uniformly random point of `KnobSpace::per_class_default` (log-uniform K and initcwnd,
/// weights uniform on the floored simplex), in physical units.
pub fn random_config<R: Rng>(dscps: &[Dscp], space: &KnobSpace, rng: &mut R) -> NetworkConfig {
    let draw = |rng: &mut R, kind: KnobKind, d: Dscp| -> f64 {
        let k = space
            .knobs
            .iter()
            .find(|k| k.kind == kind && k.dscp == d)
            .expect("knob in default space");
        let u: f64 = rng.gen();
        match k.scale {
            Scale::Log => k.min * (k.max / k.min).powf(u),
            Scale::Linear => k.min + (k.max - k.min) * u,
        }
    };
    let floor = space.simplexes.first().map_or(0.0, |s| s.floor);
    let e: Vec<f64> = dscps.iter().map(|_| -(1.0 - rng.gen::<f64>()).ln()).collect();
    let sum: f64 = e.iter().sum();
    let free = 1.0 - floor * dscps.len() as f64;
    NetworkConfig {
        classes: dscps
            .iter()
            .zip(&e)
            .map(|(&d, &x)| ClassConfig {
                dscp: d,
                weight: floor + free * x / sum,
                ecn_threshold: Bytes(draw(rng, KnobKind::EcnThreshold, d).round() as u64),
                init_cwnd: Packets(draw(rng, KnobKind::InitCwnd, d).round() as u32),
                buffer: None,
            })
            .collect(),
        port_buffer: None,
    }
}

fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        for &k in &idx[i..=j] {
            r[k] = (i + j) as f64 / 2.0;
        }
        i = j + 1;
    }
    r
}

/// Spearman rank correlation (Pearson on average ranks).
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}
