//! The scale study (paper §8.5) on a leaf-spine fabric in pktsim: {WebSearch, Hadoop} sizes ×
//! σ ∈ {1, 2} × three traffic matrices (database/cache, web server, Hadoop localities of Roy et
//! al.) × {high, low} tightness = 24 scenarios. Every class uses the scenario's size
//! distribution at 20 % load (60 % in all). SLOs are 1.25× (high) / 1.5× (low) of the per-class
//! p99 of a near-optimal configuration, measured on windows as long as one control interval
//! (so an SLO and an interval's p99 are the same statistic): flowsim ranks `candidates` random
//! configurations and the default by the geometric mean over classes of their median p99 over
//! the windows (drawn until every class had flows in `baseline_windows` of them); pktsim measures the best `finalists` and the default on the
//! same windows; the lowest geometric mean of per-class medians wins, and its per-class
//! medians are the baseline. That configuration is kept as each scenario's reference
//! ([`Planned::reference`]), which the `near-optimal` tuner holds: the ceiling of what any
//! tuner can reach under these SLOs. Pure computation (pktsim, flowsim); no I/O.

use crate::ground::{mix, PktsimGround, ScenarioTraffic};
use crate::studies::Planned;
use crate::EvalError;
use polyphony_core::Space;
use polyphony_model::{FlowSim, Locality, NetworkModel, TrafficMatrix};
use polyphony_spec::{ClassMix, Dscp, Nanos, NetworkConfig, Scenario, SliVector, TopologySpec, TrafficClass, Workload};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::sync::Arc;

/// How the scale scenarios are built.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleOptions {
    /// Racks of the leaf-spine (the paper: 32).
    pub racks: u32,
    /// Hosts per rack (the paper: 8).
    pub hosts_per_rack: u32,
    /// Control interval (the paper: 50 ms).
    pub interval_s: f64,
    /// Random configurations flowsim ranks for the near-optimal baseline.
    pub candidates: usize,
    /// Baseline windows with flows of a class needed per class, each window one interval long,
    /// drawn with seeds no run uses.
    pub baseline_windows: usize,
    /// Configurations pktsim measures on the baseline windows besides the default.
    pub finalists: usize,
    /// Only the first N of the 12 cells (each gives a high and a low scenario); 0 = all.
    pub cells: usize,
}

impl Default for ScaleOptions {
    fn default() -> Self {
        ScaleOptions {
            racks: 32,
            hosts_per_rack: 8,
            interval_s: 0.05,
            candidates: 32,
            baseline_windows: 5,
            finalists: 2,
            cells: 0,
        }
    }
}

/// One size distribution × burstiness × matrix, before the SLOs are set.
#[derive(Debug, Clone)]
struct Cell {
    sizes: &'static str,
    sigma: f64,
    matrix_name: &'static str,
    matrix: Locality,
}

fn cells() -> Vec<Cell> {
    let mut v = Vec::new();
    for sizes in ["websearch", "meta-hadoop"] {
        for sigma in [1.0, 2.0] {
            for (matrix_name, matrix) in [
                ("database", Locality::CACHE),
                ("web", Locality::WEB),
                ("hadoop", Locality::HADOOP),
            ] {
                v.push(Cell {
                    sizes,
                    sigma,
                    matrix_name,
                    matrix,
                });
            }
        }
    }
    v
}

/// The 24 scenarios (12 cells × two tightnesses), SLOs set from each cell's near-optimal
/// baseline; `progress` is called once per cell.
pub fn plan(opts: &ScaleOptions, seed: u64, progress: &dyn Fn(&str)) -> Result<Vec<Planned>, EvalError> {
    if opts.racks < 2 || opts.hosts_per_rack < 1 || !(opts.interval_s > 0.0 && opts.interval_s.is_finite()) {
        return Err(EvalError::Usage(format!(
            "scale fabric {}×{} with interval {} s: need ≥ 2 racks, ≥ 1 host per rack and a positive interval",
            opts.racks, opts.hosts_per_rack, opts.interval_s
        )));
    }
    if opts.baseline_windows == 0 {
        return Err(EvalError::Usage(
            "scale baseline with 0 windows: give at least 1 (5 is the default)".into(),
        ));
    }
    let topology = TopologySpec::LeafSpine {
        racks: opts.racks,
        hosts_per_rack: opts.hosts_per_rack,
        spines: 4,
        host_rate_mbps: 1000.0,
        fabric_rate_mbps: 10000.0,
        link_delay_us: 1.0,
    };
    let mut out = Vec::new();
    let mut all = cells();
    if opts.cells > 0 {
        all.truncate(opts.cells);
    }
    for cell in all {
        let name = format!(
            "{}-s{}-{}",
            if cell.sizes == "websearch" {
                "websearch"
            } else {
                "hadoop"
            },
            cell.sigma,
            cell.matrix_name
        );
        progress(&name);
        let dscps = [Dscp::AF11, Dscp::AF21, Dscp::AF31];
        let sc = Scenario {
            name: name.clone(),
            description: String::new(),
            seed: 1,
            interval_s: opts.interval_s,
            topology: topology.clone(),
            classes: dscps.iter().map(|&d| TrafficClass::new(d.name(), d, 1.0)).collect(),
            mix: dscps
                .iter()
                .map(|&dscp| ClassMix {
                    dscp,
                    size_cdf: cell.sizes.into(),
                    load: 0.2,
                    sigma: cell.sigma,
                })
                .collect(),
            phases: vec![],
            initial: None,
        };
        let (base, reference) = baseline(&sc, TrafficMatrix::Fixed(cell.matrix), opts, seed)?;
        for (tight, factor) in [("high", 1.25), ("low", 1.5)] {
            let mut s = sc.clone();
            s.name = format!("{name}-{tight}");
            s.description = format!(
                "{}×{} leaf-spine, {} sizes, σ = {}, {} matrix, SLO = {factor} × near-optimal p99",
                opts.racks, opts.hosts_per_rack, cell.sizes, cell.sigma, cell.matrix_name
            );
            for (c, b) in s.classes.iter_mut().zip(&base) {
                c.slo.max_slowdown = (factor * b).max(1.0);
            }
            let mut p = Planned::new(&s.name.clone(), s, TrafficMatrix::Fixed(cell.matrix));
            p.reference = Some(reference.clone());
            out.push(p);
        }
    }
    Ok(out)
}

/// Per-class median p99 over the windows; `None` where no window measured the class.
fn medians(per_window: &[SliVector], sc: &Scenario) -> Vec<Option<f64>> {
    sc.classes
        .iter()
        .map(|c| {
            let mut v: Vec<f64> = per_window
                .iter()
                .filter_map(|s| s.get(c.dscp).map(|x| x.p99))
                .filter(|p| p.is_finite())
                .collect();
            v.sort_by(f64::total_cmp);
            match v.len() {
                0 => None,
                n if n % 2 == 1 => Some(v[n / 2]),
                n => Some(0.5 * (v[n / 2 - 1] + v[n / 2])),
            }
        })
        .collect()
}

/// Geometric mean of per-class medians; infinite when a class has none.
fn geo_mean(m: &[Option<f64>]) -> f64 {
    let logs: Vec<f64> = m
        .iter()
        .map(|x| x.map_or(f64::INFINITY, |p| p.max(1e-9).ln()))
        .collect();
    (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp()
}

/// The near-optimal configuration and its per-class p99: the median over interval-long
/// baseline windows (their own seeds, none of the runs' intervals).
fn baseline(
    sc: &Scenario,
    matrix: TrafficMatrix,
    opts: &ScaleOptions,
    seed: u64,
) -> Result<(Vec<f64>, NetworkConfig), EvalError> {
    let planned = Planned::new(&sc.name, sc.clone(), matrix);
    let traffic = ScenarioTraffic::new(sc.clone(), matrix)?;
    // Windows until every class had flows in `baseline_windows` of them (bursty classes leave
    // some interval-long windows empty), at most 10 × that many.
    let mut windows: Vec<Arc<Workload>> = Vec::new();
    let mut seen = vec![0usize; sc.classes.len()];
    let mut k = 0u64;
    while seen.iter().any(|n| *n < opts.baseline_windows) && k < 10 * opts.baseline_windows as u64 {
        let w = traffic.window(Nanos(0), sc.interval(), mix(seed ^ 0xBA5E ^ mix(k + 1)))?;
        k += 1;
        for (n, c) in seen.iter_mut().zip(&sc.classes) {
            *n += usize::from(w.flows.iter().any(|f| f.dscp == c.dscp));
        }
        windows.push(Arc::new(w));
    }
    let space = Space::new(&planned.knobs, None).map_err(|e| EvalError::Scenario(e.to_string()))?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix(seed ^ 0xCAFE));
    let mut configs: Vec<NetworkConfig> = vec![planned.start.clone()];
    for _ in 0..opts.candidates {
        let z = crate::tuners::random_z(&space, &mut rng, 2.0);
        let cfg = space
            .config_of(&space.point_of(&z), &planned.start)
            .map_err(|e| EvalError::Scenario(e.to_string()))?;
        configs.push(cfg);
    }
    // flowsim: per configuration, the SLIs of every window.
    let mut predicted: Vec<Vec<SliVector>> = vec![Vec::new(); configs.len()];
    for w in &windows {
        let input = traffic.context.input(w.clone(), seed);
        for (i, r) in FlowSim::default().evaluate(&input, &configs).into_iter().enumerate() {
            if let Ok(o) = r {
                predicted[i].push(o.sli);
            }
        }
    }
    let mut ranked: Vec<(f64, usize)> = predicted
        .iter()
        .enumerate()
        .map(|(i, p)| (geo_mean(&medians(p, sc)), i))
        .filter(|x| x.0.is_finite())
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut finalists: Vec<usize> = ranked.iter().take(opts.finalists).map(|x| x.1).collect();
    if !finalists.contains(&0) {
        finalists.push(0);
    }
    let ground = PktsimGround::new(traffic, seed);
    let mut best: Option<(f64, Vec<Option<f64>>, usize)> = None;
    for i in finalists {
        let measured: Vec<SliVector> = windows
            .iter()
            .map(|w| ground.replay(w.clone(), &configs[i], 0xBA5E))
            .collect::<Result<_, _>>()?;
        let m = medians(&measured, sc);
        let g = geo_mean(&m);
        if best.as_ref().is_none_or(|b| g < b.0) {
            best = Some((g, m, i));
        }
    }
    let (_, m, chosen) = best.ok_or_else(|| EvalError::Ground("no baseline configuration could be measured".into()))?;
    sc.classes
        .iter()
        .zip(m)
        .map(|(c, p)| {
            p.ok_or_else(|| {
                EvalError::Ground(format!(
                    "{}: class {} finished no flow in any of the {} baseline windows; use a longer interval",
                    sc.name, c.name, opts.baseline_windows
                ))
            })
        })
        .collect::<Result<Vec<f64>, EvalError>>()
        .map(|b| (b, configs[chosen].clone()))
}
