//! Workload synthesis: flows drawn from a scenario's class mix — sizes from the flow-size CDFs,
//! log-normal inter-arrival times whose mean gives each class its target load, endpoints spread
//! over the topology by a traffic matrix — deterministic under a seed.
//!
//! * **Load.** A class with load ℓ offers ℓ · R bits of *payload* per second, R the topology's
//!   reference rate (the dumbbell's link, or the leaf-spine's host link *per host*). The mean
//!   inter-arrival is mean_size · 8 / (ℓ · R · senders-scale); headers, handshakes and ACKs come
//!   on top (about 4 % for full segments, more for tiny flows).
//! * **Inter-arrivals.** Log-normal with shape σ and μ = ln(mean) − σ²/2, so the mean is exact.
//! * **Phases.** With `Scenario::phases`, the load in force at an arrival is the load of the
//!   phase covering that instant (phases run back to back from time 0; after the last phase its
//!   loads hold). A class at load 0 produces nothing until its next phase.
//! * **Endpoints.** Dumbbell: source uniform over the senders, destination the receiver.
//!   Leaf-spine: source uniform over all hosts; destination by a [`TrafficMatrix`].
//! * **Queries (incast).** A mix entry with `[mix.incast]` draws *queries* instead of flows:
//!   log-normal gaps with mean `fan_in · mean_size · 8 / (ℓ · R · senders-scale)` (so ℓ counts
//!   the responses' payload), and at each query one requester — the dumbbell's receiver, or a
//!   host uniform over the leaf-spine — and `fan_in` responders, each sending one response
//!   (size from the CDF, or the fixed `response_bytes`) to the requester at the query's start.
//!   Responders are distinct hosts other than the requester, drawn uniformly without
//!   replacement; a fan-in larger than the candidate hosts cycles through fresh draws, so a
//!   host then answers with several responses (workers sharing a host). Every response carries
//!   the query's [`QueryId`]; ids number the queries in order of start.
//! * **Determinism.** Each class draws from its own xoshiro256++ stream seeded from
//!   (seed, class index); the same (scenario, topology, options) give the same workload.
//!
//! * **Size of a window.** A window expected to hold more than [`MAX_WINDOW_FLOWS`] flows (at
//!   its classes' highest loads) is refused before any is drawn: it would not fit in memory.
//!
//! This module reads nothing itself; the caller passes the CDFs (see [`mix_cdfs`]).

use crate::cdf::SizeCdf;
use crate::error::ModelError;
use crate::topology::{mix64, Shape, Topology};
use polyphony_spec::{Bytes, Flow, FlowId, HostId, Nanos, QueryId, Scenario, Workload};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashMap;

/// Where a flow's destination lies relative to its source, for leaf-spine fabrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Locality {
    /// Probability that the destination is in the source's rack.
    pub rack: f64,
    /// Probability that it is in another rack of the source's cluster.
    pub cluster: f64,
    // The rest is uniform over the other racks of the fabric.
}

impl Locality {
    /// Uniform over the other racks (nothing rack- or cluster-local).
    pub const UNIFORM: Locality = Locality {
        rack: 0.0,
        cluster: 0.0,
    };
    /// Hadoop cluster, after Roy et al. (SIGCOMM'15) Table 3: ≈13 % rack-local, ≈81 % in-cluster.
    pub const HADOOP: Locality = Locality {
        rack: 0.13,
        cluster: 0.81,
    };
    /// Web (frontend) cluster, after Roy et al. Table 3: ≈3 % rack-local, ≈81 % in-cluster.
    pub const WEB: Locality = Locality {
        rack: 0.03,
        cluster: 0.81,
    };
    /// Cache cluster, after Roy et al. Table 3: ≈0 % rack-local, ≈41 % in-cluster, the rest
    /// across the datacenter.
    pub const CACHE: Locality = Locality {
        rack: 0.0,
        cluster: 0.41,
    };

    /// The pattern that goes with a size CDF's name (Meta's services and their nearest kin;
    /// anything else is uniform).
    pub fn for_workload(cdf_name: &str) -> Locality {
        match cdf_name {
            "meta-hadoop" | "datamining" => Locality::HADOOP,
            "meta-web" | "websearch" => Locality::WEB,
            "meta-cache" => Locality::CACHE,
            _ => Locality::UNIFORM,
        }
    }
}

/// How leaf-spine destinations are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum TrafficMatrix {
    /// Uniform over hosts in other racks.
    Uniform,
    /// Each class follows the rack-to-rack pattern of its service ([`Locality::for_workload`]).
    #[default]
    ByWorkload,
    /// One pattern for every class.
    Fixed(Locality),
}

/// What to synthesise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SynthesisOptions {
    /// First instant of the window (phases are counted from 0).
    pub start: Nanos,
    /// Length of the window.
    pub duration: Nanos,
    /// Seed of every random draw.
    pub seed: u64,
    /// Destination choice on leaf-spine fabrics.
    pub matrix: TrafficMatrix,
    /// Racks per cluster for [`Locality::cluster`] (consecutive racks form a cluster).
    pub cluster_racks: u32,
}

impl SynthesisOptions {
    /// A window `[0, duration)` with the given seed and the default traffic matrix.
    pub fn new(duration: Nanos, seed: u64) -> SynthesisOptions {
        SynthesisOptions {
            start: Nanos(0),
            duration,
            seed,
            matrix: TrafficMatrix::ByWorkload,
            cluster_racks: 8,
        }
    }
}

/// The shipped CDF of every mix entry of `scenario` ([`SizeCdf::shipped`]), in mix order; an
/// incast entry with a fixed response size gets [`SizeCdf::fixed`].
pub fn mix_cdfs(scenario: &Scenario) -> Result<Vec<SizeCdf>, ModelError> {
    scenario
        .mix
        .iter()
        .enumerate()
        .map(|(i, m)| match m.incast.and_then(|i| i.response_bytes) {
            Some(b) => Ok(SizeCdf::fixed(b.0)),
            // Named by its mix entry, the key the scenario file has.
            None => SizeCdf::shipped(&m.size_cdf).map_err(|e| match e {
                ModelError::Invalid { what, value, why } => ModelError::Invalid {
                    what: format!("mix[{i}].{what}"),
                    value,
                    why,
                },
                other => other,
            }),
        })
        .collect()
}

/// The load of mix entry `i` at time `t` (see the module documentation on phases).
pub fn load_at(scenario: &Scenario, i: usize, t: Nanos) -> f64 {
    phase_at(scenario, t).map_or(scenario.mix[i].load, |(p, _)| scenario.phases[p].loads[i])
}

/// The phase covering `t` and the instant it ends (`None` without phases).
fn phase_at(scenario: &Scenario, t: Nanos) -> Option<(usize, Nanos)> {
    if scenario.phases.is_empty() {
        return None;
    }
    let mut end = 0u64;
    for (p, ph) in scenario.phases.iter().enumerate() {
        end += Nanos::from_secs_f64(ph.duration_s).0;
        if t.0 < end {
            return Some((p, Nanos(end)));
        }
    }
    Some((scenario.phases.len() - 1, Nanos(u64::MAX)))
}

/// Most flows one synthesised window may be expected to hold: about 1 GB of flows, 75 times the
/// 265 000 of the reference scenario's 12 s at 10 Gbit/s.
pub const MAX_WINDOW_FLOWS: f64 = 20e6;

/// Synthesises the workload of `scenario` on `topo` over `opts`' window. `cdfs` holds one CDF
/// per mix entry, in mix order (see [`mix_cdfs`]).
pub fn synthesize(
    scenario: &Scenario,
    topo: &Topology,
    cdfs: &[SizeCdf],
    opts: &SynthesisOptions,
) -> Result<Workload, ModelError> {
    if cdfs.len() != scenario.mix.len() {
        return Err(ModelError::invalid(
            "cdfs",
            cdfs.len(),
            format!("give one CDF per mix entry ({})", scenario.mix.len()),
        ));
    }
    let rate = scenario.topology.reference_rate().0 as f64;
    let (sources, dst_fixed): (u32, Option<u32>) = match topo.shape() {
        Shape::Dumbbell { senders } => (senders, Some(senders)),
        Shape::LeafSpine { .. } => (topo.hosts(), None),
    };
    // Leaf-spine: every host offers the load on its own link; the dumbbell's senders share one.
    let scale = if dst_fixed.is_some() { 1.0 } else { topo.hosts() as f64 };
    // Mean seconds between arrivals of mean size `bytes` at `load` (the inter-arrival law).
    let mean_gap_s = |load: f64, bytes: f64| bytes * 8.0 / (load * rate * scale);
    // Flows expected at every class's highest load (a query's responses count as flows).
    let expected: f64 = scenario
        .mix
        .iter()
        .zip(cdfs)
        .enumerate()
        .map(|(i, (mix, cdf))| {
            let peak = scenario
                .phases
                .iter()
                .filter_map(|p| p.loads.get(i).copied())
                .fold(mix.load, f64::max);
            opts.duration.0 as f64 * 1e-9 / mean_gap_s(peak, cdf.mean())
        })
        .sum();
    if expected > MAX_WINDOW_FLOWS {
        return Err(ModelError::invalid(
            "window",
            format!("{} s", opts.duration.0 as f64 * 1e-9),
            format!(
                "about {expected:.3e} flows expected, more than the {MAX_WINDOW_FLOWS:.0e} a window may hold: \
                 shorten it (the scenario's interval_s, or --duration / --measure-s)"
            ),
        ));
    }
    let end = opts.start.0.saturating_add(opts.duration.0);
    let mut flows = Vec::new();
    for (i, (mix, cdf)) in scenario.mix.iter().zip(cdfs).enumerate() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix64(opts.seed ^ mix64(i as u64 + 1)));
        let fan_in = mix.incast.map_or(1, |q| q.fan_in.max(1));
        let mean_size = cdf.mean() * fan_in as f64;
        let mut queries = 0u64;
        let sigma = mix.sigma;
        let unit = LogNormal::new(-sigma * sigma / 2.0, sigma)
            .map_err(|e| ModelError::invalid(format!("mix[{i}].sigma"), sigma, e.to_string()))?;
        let locality = match opts.matrix {
            TrafficMatrix::Uniform => Locality::UNIFORM,
            TrafficMatrix::ByWorkload => Locality::for_workload(&mix.size_cdf),
            TrafficMatrix::Fixed(l) => l,
        };
        let mut t = opts.start.0 as f64;
        while (t as u64) < end {
            let now = Nanos(t as u64);
            let load = load_at(scenario, i, now);
            if load <= 0.0 {
                match phase_at(scenario, now) {
                    Some((_, pend)) if pend.0 < end => {
                        t = pend.0 as f64;
                        continue;
                    }
                    _ => break,
                }
            }
            let mean_gap_ns = mean_gap_s(load, mean_size) * 1e9;
            t += mean_gap_ns * unit.sample(&mut rng);
            if t as u64 >= end {
                break;
            }
            if mix.incast.is_some() {
                let dst = match dst_fixed {
                    Some(d) => d,
                    None => rng.gen_range(0..topo.hosts()),
                };
                let candidates: Vec<u32> = match dst_fixed {
                    Some(_) => (0..sources).collect(),
                    None => (0..topo.hosts()).filter(|&h| h != dst).collect(),
                };
                // A query id unique across classes until the renumbering below.
                let qid = QueryId(((i as u64) << 48) | queries);
                queries += 1;
                for src in responders(&candidates, fan_in, &mut rng) {
                    flows.push(Flow {
                        id: FlowId(0),
                        src: HostId(src),
                        dst: HostId(dst),
                        dscp: mix.dscp,
                        size: Bytes(cdf.sample(&mut rng)),
                        start: Nanos(t as u64),
                        weight: 1.0,
                        query: Some(qid),
                    });
                }
                continue;
            }
            let size = cdf.sample(&mut rng);
            let src = rng.gen_range(0..sources);
            let dst = match dst_fixed {
                Some(d) => d,
                None => pick_destination(topo, src, locality, opts.cluster_racks, &mut rng),
            };
            flows.push(Flow {
                id: FlowId(0),
                src: HostId(src),
                dst: HostId(dst),
                dscp: mix.dscp,
                size: Bytes(size),
                start: Nanos(t as u64),
                weight: 1.0,
                query: None,
            });
        }
    }
    flows.sort_by_key(|f| (f.start, f.dscp, f.src));
    let mut renumber: HashMap<QueryId, QueryId> = HashMap::new();
    for (k, f) in flows.iter_mut().enumerate() {
        f.id = FlowId(k as u64);
        if let Some(q) = f.query {
            let next = QueryId(renumber.len() as u64);
            f.query = Some(*renumber.entry(q).or_insert(next));
        }
    }
    Workload::new(flows, opts.duration).map_err(ModelError::from)
}

/// `n` responders from `candidates` (non-empty): distinct while they last, then again from a
/// fresh draw (see the module documentation).
fn responders<R: Rng>(candidates: &[u32], n: u32, rng: &mut R) -> Vec<u32> {
    let mut out = Vec::with_capacity(n as usize);
    let mut pool = candidates.to_vec();
    while out.len() < n as usize && !pool.is_empty() {
        let take = (n as usize - out.len()).min(pool.len());
        // Partial Fisher–Yates: the first `take` entries become a uniform draw without replacement.
        for k in 0..take {
            let j = rng.gen_range(k..pool.len());
            pool.swap(k, j);
        }
        out.extend_from_slice(&pool[..take]);
    }
    out
}

fn pick_destination<R: Rng>(topo: &Topology, src: u32, loc: Locality, cluster_racks: u32, rng: &mut R) -> u32 {
    let Shape::LeafSpine {
        racks, hosts_per_rack, ..
    } = topo.shape()
    else {
        return 0;
    };
    let my_rack = src / hosts_per_rack;
    let host_in = |r: u32, rng: &mut R| -> u32 {
        loop {
            let h = r * hosts_per_rack + rng.gen_range(0..hosts_per_rack);
            if h != src {
                return h;
            }
        }
    };
    let u: f64 = rng.gen();
    if (u < loc.rack && hosts_per_rack > 1) || racks == 1 {
        if hosts_per_rack == 1 {
            return (src + 1) % topo.hosts();
        }
        return host_in(my_rack, rng);
    }
    let cl = cluster_racks.clamp(1, racks);
    let c0 = my_rack / cl * cl;
    let c_n = cl.min(racks - c0);
    let rack = if u < loc.rack + loc.cluster && c_n > 1 {
        let k = rng.gen_range(0..c_n - 1);
        let r = c0 + k;
        if r >= my_rack {
            r + 1
        } else {
            r
        }
    } else {
        let k = rng.gen_range(0..racks - 1);
        if k >= my_rack {
            k + 1
        } else {
            k
        }
    };
    host_in(rack, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::three_class_scenario;
    use polyphony_spec::{Dscp, LoadPhase, TopologySpec};

    fn scenario(topology: TopologySpec) -> Scenario {
        three_class_scenario(
            "t",
            topology,
            ["meta-cache", "meta-web", "meta-hadoop"],
            [11.0, 15.0, 20.0],
            12.0,
        )
    }

    fn dumbbell() -> TopologySpec {
        TopologySpec::Dumbbell {
            senders: 3,
            rate_mbps: 100.0,
            link_delay_us: 2.5,
        }
    }

    #[test]
    fn a_window_too_large_to_hold_is_refused_before_drawing() {
        let mut s = scenario(TopologySpec::Dumbbell {
            senders: 3,
            rate_mbps: 100_000.0,
            link_delay_us: 2.5,
        });
        let t = Topology::from_spec(&s.topology).unwrap();
        let cdfs = mix_cdfs(&s).unwrap();
        // Flows per second at loads `l`, and a window of `secs`.
        let per_s = |l: [f64; 3]| (0..3).map(|i| l[i] * 100e9 / (cdfs[i].mean() * 8.0)).sum::<f64>();
        let window = |secs: f64| SynthesisOptions::new(Nanos::from_secs_f64(secs), 1);
        let limit_s = MAX_WINDOW_FLOWS / per_s([0.2; 3]);
        assert!(synthesize(&s, &t, &cdfs, &window(limit_s * 1e-4)).is_ok());
        let e = synthesize(&s, &t, &cdfs, &window(limit_s * 2.0))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("window = ") && e.contains("flows expected"), "{e}");
        // A phase's higher load counts: a window that fits the mix's loads but not the phase's.
        s.phases = vec![LoadPhase {
            duration_s: 1e-6,
            loads: vec![0.0, 0.0, 0.9],
        }];
        let secs = MAX_WINDOW_FLOWS / per_s([0.2, 0.2, 0.9]) * 1.1;
        assert!(secs < limit_s);
        assert!(synthesize(&s, &t, &cdfs, &window(secs)).is_err());
    }

    #[test]
    fn loads_hit_their_targets_and_seed_is_deterministic() {
        let s = scenario(dumbbell());
        let t = Topology::from_spec(&s.topology).unwrap();
        let cdfs = mix_cdfs(&s).unwrap();
        let o = SynthesisOptions::new(Nanos(200 * Nanos::SECOND.0), 3);
        let w = synthesize(&s, &t, &cdfs, &o).unwrap();
        // Heavy tails converge slowly: cache and web within 15 %, Hadoop's 10 MB tail within 40 %.
        for (d, tol) in [(Dscp::AF11, 0.15), (Dscp::AF21, 0.15), (Dscp::AF31, 0.4)] {
            let got = w.offered_bps(d) / 100e6;
            assert!((got - 0.2).abs() < 0.2 * tol, "{d}: load {got}");
        }
        assert!(w.flows.iter().all(|f| f.dst == HostId(3) && f.src.0 < 3));
        let again = synthesize(&s, &t, &cdfs, &o).unwrap();
        assert_eq!(w, again);
        let other = synthesize(&s, &t, &cdfs, &SynthesisOptions { seed: 4, ..o }).unwrap();
        assert_ne!(w.flows.len(), 0);
        assert_ne!(w, other);
    }

    #[test]
    fn phases_switch_the_loads() {
        let mut s = scenario(dumbbell());
        s.phases = vec![
            LoadPhase {
                duration_s: 50.0,
                loads: vec![0.05, 0.2, 0.0],
            },
            LoadPhase {
                duration_s: 50.0,
                loads: vec![0.35, 0.2, 0.3],
            },
        ];
        let t = Topology::from_spec(&s.topology).unwrap();
        let cdfs = mix_cdfs(&s).unwrap();
        let w = synthesize(&s, &t, &cdfs, &SynthesisOptions::new(Nanos(100 * Nanos::SECOND.0), 5)).unwrap();
        let half = Nanos(50 * Nanos::SECOND.0);
        let bytes = |d: Dscp, first: bool| -> f64 {
            w.flows
                .iter()
                .filter(|f| f.dscp == d && (f.start < half) == first)
                .map(|f| f.size.0 as f64)
                .sum()
        };
        assert_eq!(bytes(Dscp::AF31, true), 0.0, "load 0 in phase I");
        assert!(bytes(Dscp::AF31, false) > 0.0);
        let ratio = bytes(Dscp::AF11, false) / bytes(Dscp::AF11, true);
        assert!(ratio > 3.5 && ratio < 14.0, "AF11 load ×7 between phases, saw ×{ratio}");
    }

    #[test]
    fn leaf_spine_matrix_respects_locality() {
        // The scale fabric (32 × 8) with the Meta mix: cache, web, Hadoop.
        let s = scenario(crate::simulate::scale_scenario().topology);
        let t = Topology::from_spec(&s.topology).unwrap();
        let cdfs = mix_cdfs(&s).unwrap();
        let o = SynthesisOptions::new(Nanos(20 * Nanos::MILLI.0), 9);
        let w = synthesize(&s, &t, &cdfs, &o).unwrap();
        let frac_rack = |d: Dscp| {
            let fs: Vec<_> = w.flows.iter().filter(|f| f.dscp == d).collect();
            fs.iter().filter(|f| t.rack_of(f.src) == t.rack_of(f.dst)).count() as f64 / fs.len() as f64
        };
        assert!(
            (frac_rack(Dscp::AF31) - 0.13).abs() < 0.04,
            "hadoop rack-local {}",
            frac_rack(Dscp::AF31)
        );
        assert!(frac_rack(Dscp::AF11) < 0.02);
        assert!(w.flows.iter().all(|f| f.src != f.dst && f.dst.0 < 256));
        let u = synthesize(
            &s,
            &t,
            &cdfs,
            &SynthesisOptions {
                matrix: TrafficMatrix::Uniform,
                ..o
            },
        )
        .unwrap();
        assert!(u.flows.iter().all(|f| t.rack_of(f.src) != t.rack_of(f.dst)));
    }

    /// The three-class scenario with AF31 replaced by incast queries of `fan_in` responders.
    fn incast(topology: TopologySpec, fan_in: u32, response: Option<u64>) -> Scenario {
        let mut s = scenario(topology);
        s.mix[2].incast = Some(polyphony_spec::IncastSpec {
            fan_in,
            response_bytes: response.map(Bytes),
        });
        if response.is_some() {
            s.mix[2].size_cdf.clear();
        }
        s.validate().unwrap();
        s
    }

    /// Flows of each query of class `d`, by query id.
    fn queries(w: &Workload, d: Dscp) -> std::collections::BTreeMap<u64, Vec<Flow>> {
        let mut m = std::collections::BTreeMap::<u64, Vec<Flow>>::new();
        for f in w.flows.iter().filter(|f| f.dscp == d) {
            m.entry(f.query.expect("every AF31 flow answers a query").0)
                .or_default()
                .push(*f);
        }
        m
    }

    #[test]
    fn incast_queries_have_fan_in_responders_starting_together_at_the_load() {
        let mut s = incast(dumbbell(), 8, Some(20_000));
        // σ = 1: the mean of ~1500 gaps is then within a few % of its target.
        s.mix[2].sigma = 1.0;
        let t = Topology::from_spec(&s.topology).unwrap();
        let cdfs = mix_cdfs(&s).unwrap();
        assert_eq!(cdfs[2].mean(), 20_000.0);
        let o = SynthesisOptions::new(Nanos(100 * Nanos::SECOND.0), 3);
        let w = synthesize(&s, &t, &cdfs, &o).unwrap();
        let qs = queries(&w, Dscp::AF31);
        assert!(qs.len() > 1000, "{} queries", qs.len());
        // Query ids number the queries 0.. in order of start.
        assert_eq!(
            qs.keys().copied().collect::<Vec<_>>(),
            (0..qs.len() as u64).collect::<Vec<_>>()
        );
        for fs in qs.values() {
            assert_eq!(fs.len(), 8);
            assert!(fs
                .iter()
                .all(|f| f.start == fs[0].start && f.dst == HostId(3) && f.size == Bytes(20_000)));
            // 8 responders over 3 senders: every sender answers 2 or 3 times.
            for h in 0..3 {
                let n = fs.iter().filter(|f| f.src == HostId(h)).count();
                assert!((2..=3).contains(&n), "sender {h} answers {n} times");
            }
        }
        let got = w.offered_bps(Dscp::AF31) / 100e6;
        assert!((got - 0.2).abs() < 0.02, "incast load {got}");
        // The query rate follows from the load: 0.2 · 100 Mbit/s / (8 · 20 kB · 8 bit) = 15.6 /s.
        let rate = qs.len() as f64 / 100.0;
        assert!((rate - 15.625).abs() < 1.6, "{rate} queries/s");
        // The other classes carry no query ids; the seed decides everything.
        assert!(w
            .flows
            .iter()
            .filter(|f| f.dscp != Dscp::AF31)
            .all(|f| f.query.is_none()));
        assert_eq!(synthesize(&s, &t, &cdfs, &o).unwrap(), w);
    }

    #[test]
    fn leaf_spine_responders_are_distinct_hosts_other_than_the_requester() {
        let s = incast(crate::simulate::scale_scenario().topology, 16, None);
        let t = Topology::from_spec(&s.topology).unwrap();
        let cdfs = mix_cdfs(&s).unwrap();
        let w = synthesize(&s, &t, &cdfs, &SynthesisOptions::new(Nanos(5 * Nanos::MILLI.0), 9)).unwrap();
        let qs = queries(&w, Dscp::AF31);
        assert!(!qs.is_empty());
        let mut requesters = std::collections::BTreeSet::new();
        for fs in qs.values() {
            let mut srcs: Vec<u32> = fs.iter().map(|f| f.src.0).collect();
            srcs.sort();
            srcs.dedup();
            assert_eq!(srcs.len(), 16, "distinct responders");
            assert!(fs.iter().all(|f| f.dst == fs[0].dst && f.src != f.dst));
            requesters.insert(fs[0].dst);
        }
        assert!(requesters.len() > 1, "requesters vary");
    }

    #[test]
    fn wrong_number_of_cdfs_is_rejected() {
        let s = scenario(dumbbell());
        let t = Topology::from_spec(&s.topology).unwrap();
        let e = synthesize(&s, &t, &[], &SynthesisOptions::new(Nanos::SECOND, 1)).unwrap_err();
        assert!(e.to_string().contains("one CDF per mix entry"), "{e}");
    }
}
