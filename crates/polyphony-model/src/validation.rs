//! Random scenarios × configurations over the space operators run, for measuring a model
//! against pktsim without tuning to what is measured.
//!
//! The space (issue 16): dumbbells (2–16 senders) and two-tier leaf-spines (2–32 racks, 2–8
//! hosts per rack, 1–4 spines, oversubscription 1:1–4:1, ECMP); link rates log-uniform in
//! 1–10 or 10–100 Gbit/s with 1–10 µs links, or the time-scaled 100 Mbit/s with 1.5 ms links;
//! total load 20–85 % of the busiest tier; 2–8 classes, each with one of the shipped size CDFs
//! (so a scenario mixes CDFs), its share of the load, σ uniform in 1–2 and an SLO log-uniform
//! in 3–30; configurations uniform over [`KnobSpace::per_class_default`].
//!
//! **Seeds.** A case is a pure function of (seed set, index): [`SeedSet::Development`] draws
//! from seeds `0..1_000_000` and is the only set to look at while changing a model;
//! [`SeedSet::Validation`] draws from `1_000_000_000..` and is run once per change, to report.
//! The regime (topology kind × rate band × load band) is the index modulo
//! [`Regime::COUNT`], so any run of `Regime::COUNT` consecutive indices covers every regime once.
//!
//! **Size.** Each case's window is as long as it takes for about [`TARGET_FLOWS`] flows to
//! start, but no longer than it takes the scenario to offer [`MAX_BYTES`] (heavy CDFs such as
//! `datamining` then have fewer flows), so one pktsim run costs about a second.

use crate::cdf::SizeCdf;
use crate::error::ModelError;
use crate::topology::mix64;
use polyphony_spec::{
    objective, BitsPerSec, Bytes, ClassConfig, ClassMix, Dscp, KnobKind, KnobSpace, LeafSpineSpec, Nanos,
    NetworkConfig, Packets, Scale, Scenario, SliVector, Slo, TopologySpec, TrafficClass, Workload,
};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fmt;

/// Flows a case's window is sized for.
pub const TARGET_FLOWS: f64 = 3000.0;
/// Payload bytes a case's window offers at most.
pub const MAX_BYTES: f64 = 600e6;
/// LogSumExp sharpness c of the objective J.
pub const LSE_C: f64 = 10.0;
/// Fairness weight λ of the objective J.
pub const LAMBDA: f64 = 0.5;

/// Which seeds cases are drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedSet {
    /// Seeds `0..1_000_000`: for developing and fitting models.
    Development,
    /// Seeds from `1_000_000_000`: for reporting only, never for development decisions.
    Validation,
}

impl SeedSet {
    /// The seed of case `index`.
    pub fn seed(self, index: u64) -> u64 {
        match self {
            SeedSet::Development => index % 1_000_000,
            SeedSet::Validation => 1_000_000_000u64.saturating_add(index),
        }
    }
    /// Parses `"dev"` or `"validation"`.
    pub fn parse(s: &str) -> Result<SeedSet, ModelError> {
        match s {
            "dev" => Ok(SeedSet::Development),
            "validation" => Ok(SeedSet::Validation),
            other => Err(ModelError::invalid("seed set", other, "use \"dev\" or \"validation\"")),
        }
    }
}

/// Topology kind of a regime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TopologyKind {
    /// Senders → switch → receiver.
    Dumbbell,
    /// Two-tier leaf-spine with ECMP.
    LeafSpine,
}

/// Link-rate band of a regime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RateBand {
    /// 100 Mbit/s with 1.5 ms links (the time-scaled variant of a 10 Gbit/s fabric).
    TimeScaled,
    /// 1–10 Gbit/s hosts, 1–10 µs links.
    Low,
    /// 10–100 Gbit/s hosts, 1–10 µs links.
    High,
}

/// Load band of a regime (total load of the busiest tier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LoadBand {
    /// 20–40 %.
    Light,
    /// 40–60 %.
    Medium,
    /// 60–85 %.
    Heavy,
}

impl LoadBand {
    fn range(self) -> (f64, f64) {
        match self {
            LoadBand::Light => (0.2, 0.4),
            LoadBand::Medium => (0.4, 0.6),
            LoadBand::Heavy => (0.6, 0.85),
        }
    }
}

/// Topology kind × rate band × load band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Regime {
    /// Topology kind.
    pub topology: TopologyKind,
    /// Link-rate band.
    pub rate: RateBand,
    /// Load band.
    pub load: LoadBand,
}

impl Regime {
    /// Number of regimes.
    pub const COUNT: u64 = 18;

    /// The regime of case `index` (every run of [`Regime::COUNT`] indices covers all).
    pub fn of_index(index: u64) -> Regime {
        let i = index % Regime::COUNT;
        Regime {
            topology: [TopologyKind::Dumbbell, TopologyKind::LeafSpine][(i % 2) as usize],
            rate: [RateBand::TimeScaled, RateBand::Low, RateBand::High][((i / 2) % 3) as usize],
            load: [LoadBand::Light, LoadBand::Medium, LoadBand::Heavy][(i / 6) as usize],
        }
    }
}

impl fmt::Display for Regime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = match self.topology {
            TopologyKind::Dumbbell => "dumbbell",
            TopologyKind::LeafSpine => "leaf-spine",
        };
        let r = match self.rate {
            RateBand::TimeScaled => "0.1G/1.5ms",
            RateBand::Low => "1-10G",
            RateBand::High => "10-100G",
        };
        let l = match self.load {
            LoadBand::Light => "20-40%",
            LoadBand::Medium => "40-60%",
            LoadBand::Heavy => "60-85%",
        };
        write!(f, "{t} {r} {l}")
    }
}

/// One random scenario with its configurations.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case's seed (also the workload seed).
    pub seed: u64,
    /// Its regime.
    pub regime: Regime,
    /// The scenario (its `interval_s` is the window to simulate).
    pub scenario: Scenario,
    /// Random configurations of the scenario's classes.
    pub configs: Vec<NetworkConfig>,
}

/// DSCPs the generator gives its classes, in order.
const DSCPS: [u8; 8] = [10, 18, 26, 34, 8, 16, 24, 46];

/// Case `index` of `set` with `configs` random configurations.
pub fn case(set: SeedSet, index: u64, configs: usize) -> Result<Case, ModelError> {
    let seed = set.seed(index);
    let regime = Regime::of_index(index);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix64(seed ^ 0x5eed_ca5e));
    let (rate_mbps, delay_us) = match regime.rate {
        RateBand::TimeScaled => (100.0, 1500.0),
        RateBand::Low => (log_uniform(&mut rng, 1e3, 1e4), rng.gen_range(1.0..10.0)),
        RateBand::High => (log_uniform(&mut rng, 1e4, 1e5), rng.gen_range(1.0..10.0)),
    };
    let (lo, hi) = regime.load.range();
    let load: f64 = rng.gen_range(lo..hi);
    let (topology, host_load) = match regime.topology {
        TopologyKind::Dumbbell => (
            TopologySpec::Dumbbell {
                senders: rng.gen_range(2..=16),
                rate_mbps,
                link_delay_us: delay_us,
            },
            load,
        ),
        TopologyKind::LeafSpine => {
            let racks = log_uniform(&mut rng, 2.0, 33.0).floor() as u32;
            let hosts_per_rack = rng.gen_range(2..=8);
            let spines = rng.gen_range(1..=4u32);
            let oversub: f64 = rng.gen_range(1.0..4.0);
            let fabric = hosts_per_rack as f64 * rate_mbps / (spines as f64 * oversub);
            // The busiest tier: the uplinks carry the inter-rack share of the hosts' load
            // times the oversubscription.
            (
                TopologySpec::LeafSpine(LeafSpineSpec {
                    racks,
                    hosts_per_rack,
                    spines,
                    host_rate_mbps: rate_mbps,
                    fabric_rate_mbps: fabric.round().max(1.0),
                    link_delay_us: delay_us,
                }),
                load / oversub.max(1.0),
            )
        }
    };
    let n = rng.gen_range(2..=8usize);
    let names: Vec<&str> = SizeCdf::shipped_names().collect();
    let shares: Vec<f64> = (0..n).map(|_| -(1.0 - rng.gen::<f64>()).ln() + 0.2).collect();
    let total: f64 = shares.iter().sum();
    let mut classes = Vec::with_capacity(n);
    let mut mix = Vec::with_capacity(n);
    for (i, share) in shares.iter().enumerate() {
        let dscp = Dscp::new(DSCPS[i]).map_err(|e| ModelError::invalid("dscp", DSCPS[i], e.to_string()))?;
        classes.push(TrafficClass {
            name: format!("c{i}"),
            dscp,
            slo: Slo::p99(log_uniform(&mut rng, 3.0, 30.0)),
            weight: 1.0,
        });
        mix.push(ClassMix {
            dscp,
            size_cdf: names[rng.gen_range(0..names.len())].to_string(),
            load: host_load * share / total,
            sigma: rng.gen_range(1.0..2.0),
            incast: None,
        });
    }
    // The window: about TARGET_FLOWS flows, at most MAX_BYTES offered.
    let hosts = match topology {
        TopologySpec::Dumbbell { .. } => 1.0,
        TopologySpec::LeafSpine(_) => topology.hosts() as f64,
    };
    let rate = topology.reference_rate().0 as f64 * hosts;
    let mut flows_per_s = 0.0;
    let mut bytes_per_s = 0.0;
    for m in &mix {
        let mean = SizeCdf::shipped(&m.size_cdf)?.mean();
        flows_per_s += m.load * rate / (8.0 * mean);
        bytes_per_s += m.load * rate / 8.0;
    }
    let duration = (TARGET_FLOWS / flows_per_s).min(MAX_BYTES / bytes_per_s);
    let scenario = Scenario {
        name: format!("random-{seed}"),
        description: format!("random case {seed} ({regime})"),
        seed,
        interval_s: duration,
        topology,
        classes,
        mix,
        phases: Vec::new(),
        initial: None,
        knobs: None,
    };
    scenario
        .validate()
        .map_err(|e| ModelError::invalid("random scenario", seed, e.to_string()))?;
    let dscps = scenario.dscps();
    let space = KnobSpace::per_class_default(&dscps);
    let mut crng = Xoshiro256PlusPlus::seed_from_u64(mix64(seed ^ 0xc0f1_9000));
    let configs = (0..configs).map(|_| random_config(&dscps, &space, &mut crng)).collect();
    Ok(Case {
        seed,
        regime,
        scenario,
        configs,
    })
}

impl Case {
    /// The case's window.
    pub fn duration(&self) -> Nanos {
        self.scenario.interval()
    }
}

fn log_uniform<R: Rng>(rng: &mut R, lo: f64, hi: f64) -> f64 {
    lo * (hi / lo).powf(rng.gen::<f64>())
}

/// `workload` with every start moved later by a uniform draw below one packet time (1514
/// bytes) at `rate`, re-sorted: the same workload to any statistic, arriving a fraction of a
/// packet apart. pktsim's spread over such copies (`seed` picks one) is how far its tail moves
/// by chance alone — what no model that sees flows but not packets could predict.
pub fn jittered(workload: &Workload, rate: BitsPerSec, seed: u64) -> Result<Workload, ModelError> {
    let packet_ns = 1514.0 * 8e9 / rate.0 as f64;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut flows = workload.flows.clone();
    for f in &mut flows {
        f.start = Nanos(f.start.0 + rng.gen_range(0.0..packet_ns) as u64);
    }
    Ok(Workload::new(flows, workload.duration)?)
}

/// A uniformly random point of `space` (log-uniform or uniform per knob, weights uniform on
/// the floored simplex), in physical units. Knobs `space` lacks take K = 30 kB, initcwnd 10 and
/// no class buffer of its own (a `buffer` knob of the space is drawn after the class's others).
pub fn random_config<R: Rng>(dscps: &[Dscp], space: &KnobSpace, rng: &mut R) -> NetworkConfig {
    let draw = |rng: &mut R, kind: KnobKind, d: Dscp, dflt: f64| -> f64 {
        let u: f64 = rng.gen();
        match space.knobs.iter().find(|k| k.kind == kind && k.dscp == d) {
            Some(k) => match k.scale {
                Scale::Log => k.min * (k.max / k.min).powf(u),
                Scale::Linear => k.min + (k.max - k.min) * u,
            },
            None => dflt,
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
            .map(|(&d, &x)| {
                let mut c = ClassConfig::new(
                    d,
                    floor + free * x / sum,
                    Bytes(draw(rng, KnobKind::EcnThreshold, d, 30e3).round() as u64),
                    Packets(draw(rng, KnobKind::InitCwnd, d, 10.0).round() as u32),
                );
                if space.knobs.iter().any(|k| k.kind == KnobKind::Buffer && k.dscp == d) {
                    c.buffer = Some(Bytes(draw(rng, KnobKind::Buffer, d, 0.0).round().max(1.0) as u64));
                }
                c
            })
            .collect(),
        port_buffer: None,
    }
}

/// J(r) = LSE_c(r) + λ · mean |r_i − mean(r)| with r_i = y_i / v_i, y_i the SLI the class's SLO
/// is about (the paper's §4.1; a class without completed flows or queries counts as
/// infinitely late).
pub fn objective(sli: &SliVector, classes: &[TrafficClass]) -> f64 {
    let r: Vec<f64> = classes
        .iter()
        .map(|c| sli.get(c.dscp).and_then(|s| c.slo.sli(s)).unwrap_or(f64::INFINITY) / c.slo.threshold())
        .collect();
    let ones = vec![1.0; r.len()];
    objective::lse(&r, LSE_C) + LAMBDA * objective::fairness(&r, &ones)
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

/// Spearman rank correlation (Pearson on average ranks); NaN when either side is constant.
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// The median of `v` (NaN for an empty slice; NaNs are left out): [`polyphony_spec::median`].
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    polyphony_spec::median(&mut s).unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_valid_deterministic_and_cover_every_regime() {
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..Regime::COUNT {
            let a = case(SeedSet::Development, i, 3).expect("valid case");
            let b = case(SeedSet::Development, i, 3).expect("valid case");
            assert_eq!(a.scenario, b.scenario);
            assert_eq!(a.configs, b.configs);
            for c in &a.configs {
                c.validate().expect("valid configuration");
            }
            assert!(a.duration().0 > 0);
            seen.insert(a.regime);
        }
        assert_eq!(seen.len() as u64, Regime::COUNT);
        let v = case(SeedSet::Validation, 0, 1).expect("valid case");
        assert_ne!(v.seed, case(SeedSet::Development, 0, 1).expect("valid").seed);
    }

    #[test]
    fn development_and_validation_seeds_never_meet() {
        assert!(SeedSet::Development.seed(u64::MAX) < SeedSet::Validation.seed(0));
    }

    #[test]
    fn spearman_and_median() {
        assert!((spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]) - 1.0).abs() < 1e-12);
        assert!((spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
