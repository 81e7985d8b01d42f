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
use std::ops::{Range, RangeInclusive};

/// Flows a case's window is sized for.
pub const TARGET_FLOWS: f64 = 3000.0;
/// Payload bytes a case's window offers at most.
pub const MAX_BYTES: f64 = 600e6;
/// Senders of a dumbbell in the space.
pub const SENDERS: RangeInclusive<u32> = 2..=16;
/// Racks of a leaf-spine in the space.
pub const RACKS: RangeInclusive<u32> = 2..=32;
/// Hosts per rack of a leaf-spine in the space.
pub const HOSTS_PER_RACK: RangeInclusive<u32> = 2..=8;
/// Spines of a leaf-spine in the space.
pub const SPINES: RangeInclusive<u32> = 1..=4;
/// Oversubscription of a leaf-spine (a rack's host capacity over its uplink capacity).
pub const OVERSUBSCRIPTION: Range<f64> = 1.0..4.0;
/// Host link rates (Mbit/s) of the real-rate bands, with [`LINK_DELAY_US`].
pub const HOST_RATE_MBPS: Range<f64> = 1e3..1e5;
/// One-way link delays (µs) of the real-rate bands.
pub const LINK_DELAY_US: Range<f64> = 1.0..10.0;
/// The time-scaled variant: host rate (Mbit/s) and one-way link delay (µs).
pub const TIME_SCALED: (f64, f64) = (100.0, 1500.0);
/// Classes of a scenario in the space.
pub const CLASSES: RangeInclusive<usize> = 2..=8;
/// σ of a class's inter-arrivals in the space.
pub const SIGMA: Range<f64> = 1.0..2.0;
/// Total offered load of the busiest tier in the space.
pub const LOAD: Range<f64> = 0.2..0.85;

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
    /// `development` or `validation`, for reports.
    pub fn name(self) -> &'static str {
        match self {
            SeedSet::Development => "development",
            SeedSet::Validation => "validation",
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
            LoadBand::Light => (LOAD.start, 0.4),
            LoadBand::Medium => (0.4, 0.6),
            LoadBand::Heavy => (0.6, LOAD.end),
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
        RateBand::TimeScaled => TIME_SCALED,
        RateBand::Low => (
            log_uniform(&mut rng, HOST_RATE_MBPS.start, 1e4),
            rng.gen_range(LINK_DELAY_US),
        ),
        RateBand::High => (
            log_uniform(&mut rng, 1e4, HOST_RATE_MBPS.end),
            rng.gen_range(LINK_DELAY_US),
        ),
    };
    let (lo, hi) = regime.load.range();
    let load: f64 = rng.gen_range(lo..hi);
    let (topology, host_load) = match regime.topology {
        TopologyKind::Dumbbell => (
            TopologySpec::Dumbbell {
                senders: rng.gen_range(SENDERS),
                rate_mbps,
                link_delay_us: delay_us,
            },
            load,
        ),
        TopologyKind::LeafSpine => {
            let racks = log_uniform(&mut rng, f64::from(*RACKS.start()), f64::from(*RACKS.end() + 1)).floor() as u32;
            let hosts_per_rack = rng.gen_range(HOSTS_PER_RACK);
            let spines = rng.gen_range(SPINES);
            let oversub: f64 = rng.gen_range(OVERSUBSCRIPTION);
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
    let n = rng.gen_range(CLASSES);
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
            sigma: rng.gen_range(SIGMA),
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

/// One way a scenario lies outside the space the models were validated on (the space
/// [`case`] draws from): where it does, `docs/models.md`'s validation numbers do not describe
/// the model's error, and its known limits list the cases measured so far.
#[derive(Debug, Clone, PartialEq)]
pub struct OutsideSpace {
    /// The scenario key, e.g. `topology.senders`.
    pub key: String,
    /// Its value.
    pub value: String,
    /// What the space holds there.
    pub space: String,
}

impl fmt::Display for OutsideSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {} (validated: {})", self.key, self.value, self.space)
    }
}

fn outside(key: &str, value: impl fmt::Display, space: impl fmt::Display) -> OutsideSpace {
    OutsideSpace {
        key: key.to_string(),
        value: value.to_string(),
        space: space.to_string(),
    }
}

fn oversubscription(ls: &LeafSpineSpec) -> f64 {
    f64::from(ls.hosts_per_rack) * ls.host_rate_mbps / (f64::from(ls.spines) * ls.fabric_rate_mbps)
}

/// Where a network of `topology` with `classes` traffic classes lies outside the validation
/// space: a dumbbell's senders, a leaf-spine's racks, hosts per rack, spines and
/// oversubscription, the host rate with the link delay, and the number of classes — what a
/// deployment knows before it measures any traffic.
pub fn network_outside_space(topology: &TopologySpec, classes: usize) -> Vec<OutsideSpace> {
    let mut out = Vec::new();
    if !CLASSES.contains(&classes) {
        out.push(outside(
            "classes",
            classes,
            format!("{}–{}", CLASSES.start(), CLASSES.end()),
        ));
    }
    let range = |r: &RangeInclusive<u32>| format!("{}–{}", r.start(), r.end());
    let (rate, delay) = match topology {
        TopologySpec::Dumbbell {
            senders,
            rate_mbps,
            link_delay_us,
        } => {
            if !SENDERS.contains(senders) {
                out.push(outside("topology.senders", senders, range(&SENDERS)));
            }
            (*rate_mbps, *link_delay_us)
        }
        TopologySpec::LeafSpine(ls) => {
            for (key, v, r) in [
                ("topology.racks", ls.racks, &RACKS),
                ("topology.hosts_per_rack", ls.hosts_per_rack, &HOSTS_PER_RACK),
                ("topology.spines", ls.spines, &SPINES),
            ] {
                if !r.contains(&v) {
                    out.push(outside(key, v, range(r)));
                }
            }
            // The generator rounds the fabric rate to whole Mbit/s: half a percent of slack.
            let o = oversubscription(ls);
            if !(OVERSUBSCRIPTION.start * 0.995..=OVERSUBSCRIPTION.end * 1.005).contains(&o) {
                out.push(outside(
                    "oversubscription (hosts_per_rack · host_rate_mbps / (spines · fabric_rate_mbps))",
                    format!("{o:.2}"),
                    format!("{}–{}", OVERSUBSCRIPTION.start, OVERSUBSCRIPTION.end),
                ));
            }
            (ls.host_rate_mbps, ls.link_delay_us)
        }
    };
    let near = |a: f64, b: f64| (a - b).abs() <= 0.01 * b;
    let time_scaled = near(rate, TIME_SCALED.0) && near(delay, TIME_SCALED.1);
    let real = (HOST_RATE_MBPS.start..=HOST_RATE_MBPS.end).contains(&rate)
        && (LINK_DELAY_US.start..=LINK_DELAY_US.end).contains(&delay);
    if !(time_scaled || real) {
        out.push(outside(
            "host rate and link delay",
            format!("{rate} Mbit/s, {delay} µs"),
            format!(
                "{}–{} Gbit/s with {}–{} µs links, or {} Mbit/s with {} µs links",
                HOST_RATE_MBPS.start / 1e3,
                HOST_RATE_MBPS.end / 1e3,
                LINK_DELAY_US.start,
                LINK_DELAY_US.end,
                TIME_SCALED.0,
                TIME_SCALED.1
            ),
        ));
    }
    out
}

/// Where `scenario` lies outside the validation space: its network
/// ([`network_outside_space`]), each class's size CDF (a shipped one), σ and incast, the
/// busiest tier's total load in the base mix and in every phase, and knobs beyond weights, ECN
/// thresholds and initial windows.
pub fn scenario_outside_space(scenario: &Scenario) -> Vec<OutsideSpace> {
    let mut out = network_outside_space(&scenario.topology, scenario.classes.len());
    for (i, m) in scenario.mix.iter().enumerate() {
        if m.incast.is_some() {
            out.push(outside(&format!("mix[{i}].incast"), "set", "no incast classes"));
        } else if SizeCdf::shipped(&m.size_cdf).is_err() {
            out.push(outside(
                &format!("mix[{i}].size_cdf"),
                &m.size_cdf,
                "the CDFs under models/cdf",
            ));
        }
        if !(SIGMA.start..=SIGMA.end).contains(&m.sigma) {
            out.push(outside(
                &format!("mix[{i}].sigma"),
                m.sigma,
                format!("{}–{}", SIGMA.start, SIGMA.end),
            ));
        }
    }
    // The busiest tier: a leaf-spine's uplinks carry up to the hosts' load times its
    // oversubscription.
    let tier = match &scenario.topology {
        TopologySpec::Dumbbell { .. } => 1.0,
        TopologySpec::LeafSpine(ls) => oversubscription(ls).max(1.0),
    };
    let space = format!(
        "{:.0}–{:.0} % of the busiest tier",
        LOAD.start * 100.0,
        LOAD.end * 100.0
    );
    let base: f64 = scenario.mix.iter().map(|m| m.load).sum::<f64>() * tier;
    if !(LOAD.start..=LOAD.end).contains(&base) {
        out.push(outside("mix load", format!("{:.0} %", base * 100.0), &space));
    }
    for (i, p) in scenario.phases.iter().enumerate() {
        let l: f64 = p.loads.iter().sum::<f64>() * tier;
        if !(LOAD.start..=LOAD.end).contains(&l) {
            out.push(outside(
                &format!("phases[{i}] load"),
                format!("{:.0} %", l * 100.0),
                &space,
            ));
        }
    }
    if let Some(k) = &scenario.knobs {
        if k.knobs.iter().any(|s| s.kind == KnobKind::Buffer) {
            out.push(outside(
                "knobs",
                "a per-class buffer",
                "weights, ECN thresholds, initial windows",
            ));
        }
        if !k.categorical.is_empty() {
            out.push(outside(
                "knobs.categorical",
                "set",
                "weights, ECN thresholds, initial windows",
            ));
        }
    }
    out
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
    /// Every drawn case lies inside the space the check describes, and each way out of it is
    /// named by its key: the generator and the check cannot drift apart unnoticed.
    #[test]
    fn drawn_cases_lie_inside_and_each_way_out_is_named() {
        for i in 0..3 * Regime::COUNT {
            for set in [SeedSet::Development, SeedSet::Validation] {
                let c = case(set, i, 1).expect("valid case");
                let o = scenario_outside_space(&c.scenario);
                assert!(o.is_empty(), "case {i} ({}): {o:?}", c.regime);
            }
        }
        let keys = |s: &Scenario| scenario_outside_space(s).into_iter().map(|o| o.key).collect::<Vec<_>>();
        let base = case(SeedSet::Development, 1, 1).expect("valid case").scenario; // a leaf-spine
        let TopologySpec::LeafSpine(ls) = &base.topology else {
            panic!("case 1 is a leaf-spine")
        };
        // The paper's scale fabric: 1 Gbit/s hosts under 10 Gbit/s uplinks.
        let mut s = base.clone();
        s.topology = TopologySpec::LeafSpine(LeafSpineSpec {
            racks: 32,
            hosts_per_rack: 8,
            spines: 4,
            host_rate_mbps: 1000.0,
            fabric_rate_mbps: 10_000.0,
            link_delay_us: 1.0,
        });
        for m in &mut s.mix {
            m.load = 0.5 / s.classes.len() as f64;
        }
        assert_eq!(
            keys(&s),
            ["oversubscription (hosts_per_rack · host_rate_mbps / (spines · fabric_rate_mbps))"]
        );
        let mut s = base.clone();
        s.topology = TopologySpec::LeafSpine(LeafSpineSpec {
            hosts_per_rack: 1,
            link_delay_us: 40.0,
            ..ls.clone()
        });
        let k = keys(&s);
        assert!(
            k.contains(&"topology.hosts_per_rack".to_string()) && k.contains(&"host rate and link delay".to_string()),
            "{k:?}"
        );
        let mut s = base.clone();
        s.topology = TopologySpec::Dumbbell {
            senders: 1,
            rate_mbps: 100.0,
            link_delay_us: 1500.0,
        };
        assert!(keys(&s).contains(&"topology.senders".to_string()));
        let mut s = base.clone();
        s.mix[0].sigma = 3.0;
        s.mix[0].size_cdf = "a-file-of-my-own".into();
        assert_eq!(keys(&s), ["mix[0].size_cdf", "mix[0].sigma"]);
        let mut s = base.clone();
        s.classes.truncate(1);
        s.mix.truncate(1);
        assert!(keys(&s).contains(&"classes".to_string()));
        let mut s = base;
        let n = s.mix.len();
        s.phases = vec![polyphony_spec::LoadPhase {
            duration_s: 1.0,
            loads: vec![0.95 / n as f64; n],
        }];
        assert!(keys(&s).contains(&"phases[0] load".to_string()));
    }
}
