//! pktsim against ns-3 on identical flows: the case matrix, one case run through ns-3 (the
//! replay program of `bench/ns3/`, a separate process), pktsim and flowsim (uncorrected) on the
//! same exported trace, and the comparison statistics (per-class p99 relative error, Spearman
//! ρ, speed ratio) that `ns3-compare` writes to `docs/results/pktsim-vs-ns3/`.

use polyphony_model::{
    output_from_fcts, three_class_scenario, trace_input, Corrected, FlowSim, ModelInput, ModelOutput, NetworkModel,
    PktSim, PktSimOptions,
};
use polyphony_spec::{
    percentile, Bytes, ClassConfig, Dscp, FlowId, FlowTrace, LeafSpineSpec, Nanos, NetworkConfig, Packets, TopologySpec,
};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The three classes every case carries, in objective order.
pub const CLASSES: [Dscp; 3] = [Dscp::AF11, Dscp::AF21, Dscp::AF31];

/// One point of the matrix.
#[derive(Debug, Clone)]
pub struct Case {
    /// `topology-rate-mix-config`, e.g. `dumbbell-10g-meta-default`.
    pub name: String,
    /// The network.
    pub topology: TopologySpec,
    /// Size CDFs of the three classes.
    pub sizes: [&'static str; 3],
    /// The configuration.
    pub config: NetworkConfig,
}

/// The skewed configuration: weights 0.6 / 0.3 / 0.1, K 10 / 60 / 200 kB, initcwnd 4 / 10 / 20.
pub fn skewed_config() -> NetworkConfig {
    let knobs = [(0.6, 10_000, 4), (0.3, 60_000, 10), (0.1, 200_000, 20)];
    NetworkConfig {
        classes: CLASSES
            .iter()
            .zip(knobs)
            .map(|(&dscp, (weight, k, iw))| ClassConfig::new(dscp, weight, Bytes(k), Packets(iw)))
            .collect(),
        port_buffer: None,
    }
}

/// The 16 cases: {dumbbell (3 senders), leaf-spine (4 racks × 4 hosts, 2 spines, fabric twice
/// the host rate)} × {10 Gbit/s with 1 µs links, 100 Mbit/s with 1.5 ms links} × {Meta mix
/// (cache, web, Hadoop), WebSearch mix (WebSearch, Hadoop, cache)} × {default, skewed}.
pub fn matrix() -> Vec<Case> {
    let mut cases = Vec::new();
    for topo in ["dumbbell", "leafspine"] {
        for (rate, mbps, delay_us) in [("10g", 10_000.0, 1.0), ("100m", 100.0, 1_500.0)] {
            for (mix, sizes) in [
                ("meta", ["meta-cache", "meta-web", "meta-hadoop"]),
                ("websearch", ["websearch", "meta-hadoop", "meta-cache"]),
            ] {
                for (cfg_name, config) in [
                    ("default", NetworkConfig::uniform(&CLASSES, Bytes(30_000), Packets(10))),
                    ("skewed", skewed_config()),
                ] {
                    let topology = if topo == "dumbbell" {
                        TopologySpec::Dumbbell {
                            senders: 3,
                            rate_mbps: mbps,
                            link_delay_us: delay_us,
                        }
                    } else {
                        TopologySpec::LeafSpine(LeafSpineSpec {
                            racks: 4,
                            hosts_per_rack: 4,
                            spines: 2,
                            host_rate_mbps: mbps,
                            fabric_rate_mbps: 2.0 * mbps,
                            link_delay_us: delay_us,
                        })
                    };
                    cases.push(Case {
                        name: format!("{topo}-{rate}-{mix}-{cfg_name}"),
                        topology,
                        sizes,
                        config,
                    });
                }
            }
        }
    }
    cases
}

/// The trace of `case`: about `flows` flows (60 % load, σ = 2) drawn with `seed`; the span is
/// scaled from a probe draw so that every case has a similar flow count whatever its rate.
pub fn case_trace(case: &Case, flows: usize, seed: u64) -> anyhow::Result<FlowTrace> {
    let sc = three_class_scenario(&case.name, case.topology.clone(), case.sizes, [10.0; 3], 1.0);
    // A probe span that holds a few hundred flows at 100 Mbit/s and proportionally at 10 Gbit/s.
    let probe = Nanos::from_secs_f64(1.0 / (case.topology.reference_rate().as_mbps() / 100.0));
    let n0 = polyphony_model::scenario_input(&sc, probe, seed)?
        .workload
        .flows
        .len()
        .max(1);
    let span = Nanos::from_secs_f64(probe.as_secs_f64() * flows as f64 / n0 as f64);
    let input = polyphony_model::scenario_input(&sc, span, seed)?;
    Ok(FlowTrace {
        topology: case.topology.clone(),
        config: case.config.clone(),
        ecmp_salt: input.seed,
        workload: input.workload.as_ref().clone(),
    })
}

/// Per-class statistics of one case from one simulator.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClassNumbers {
    /// Measured flows.
    pub flows: u64,
    /// p50 slowdown.
    pub p50: f64,
    /// p99 slowdown.
    pub p99: f64,
    /// Whether the flow at the p99 rank took at least [`MIN_RTO`] longer than its ideal FCT (a
    /// retransmission timeout in the tail; only known for per-flow outputs).
    pub rto_at_p99: bool,
}

/// Columns of [`CaseResult::classes`].
pub mod col {
    /// ns-3.
    pub const NS3: usize = 0;
    /// pktsim.
    pub const PKTSIM: usize = 1;
    /// flowsim without the correction.
    pub const FLOWSIM: usize = 2;
    /// pktsim without TCP small queues.
    pub const NO_TSQ: usize = 3;
    /// flowsim-corrected (the controller's default model).
    pub const CORRECTED: usize = 4;
    /// How many.
    pub const N: usize = 5;
}

/// Linux's and both simulators' minimum retransmission timeout.
pub const MIN_RTO: Nanos = Nanos(200_000_000);

/// Arrival jitter draws pktsim is rerun with to measure its own sensitivity ([`jittered`]).
pub const JITTER_DRAWS: u64 = 4;

/// Everything one case produced.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case name.
    pub case: String,
    /// Flows in the trace.
    pub flows: usize,
    /// Per class (in [`CLASSES`] order), by [`col`]: ns-3, pktsim, flowsim, pktsim without TCP
    /// small queues (as ns-3, which has none), flowsim-corrected.
    pub classes: Vec<[ClassNumbers; col::N]>,
    /// Per class: the smallest and largest p99 of pktsim over the trace and its
    /// [`JITTER_DRAWS`] arrival-jittered copies.
    pub pktsim_jitter_p99: Vec<(f64, f64)>,
    /// Flows ns-3 retransmitted on a timeout, from its summary line (`None`: not reported).
    pub ns3_timeouts: Option<u64>,
    /// Wall seconds of the ns-3 process (parse, build, run, write).
    pub ns3_wall_s: f64,
    /// Wall seconds of the pktsim run.
    pub pktsim_wall_s: f64,
    /// Flows ns-3 left unfinished (counted with their running time, as the models do).
    pub ns3_unfinished: u64,
    /// Flows pktsim left unfinished.
    pub pktsim_unfinished: u64,
    /// Packets pktsim dropped at full switch buffers.
    pub pktsim_drops: u64,
    /// Retransmission timeouts in the pktsim run.
    pub pktsim_timeouts: u64,
    /// Fast retransmits in the pktsim run.
    pub pktsim_fast_retransmits: u64,
    /// ns-3's summary line (its stderr).
    pub ns3_log: String,
}

fn numbers(out: &ModelOutput) -> Vec<ClassNumbers> {
    CLASSES
        .iter()
        .map(|&d| {
            out.sli.get(d).map_or_else(ClassNumbers::default, |s| ClassNumbers {
                flows: s.flows,
                p50: s.p50,
                p99: s.p99,
                rto_at_p99: out.flows.as_ref().is_some_and(|fl| rto_at_p99(fl, d)),
            })
        })
        .collect()
}

/// Whether the nearest-rank p99 flow of class `d` (by slowdown) waited at least [`MIN_RTO`]
/// beyond its ideal FCT.
fn rto_at_p99(flows: &[polyphony_spec::FlowOutcome], d: Dscp) -> bool {
    let mut v: Vec<&polyphony_spec::FlowOutcome> = flows.iter().filter(|f| f.dscp == d).collect();
    if v.is_empty() {
        return false;
    }
    v.sort_by(|a, b| a.slowdown().total_cmp(&b.slowdown()));
    let k = ((0.99 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[k].fct.0.saturating_sub(v[k].ideal.0) >= MIN_RTO.0
}

/// `trace` with every start moved later by a uniform draw below one packet time (1514 bytes) at
/// the host rate, re-sorted: the same workload to any statistic, arriving a fraction of a packet
/// apart. pktsim's spread over such copies is how far its tail moves by chance alone.
pub fn jittered(trace: &FlowTrace, draw: u64) -> anyhow::Result<FlowTrace> {
    let packet_ns = 1514.0 * 8e9 / trace.topology.reference_rate().0 as f64;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(draw ^ 0x6a09_e667_f3bc_c909);
    let mut flows = trace.workload.flows.clone();
    for f in &mut flows {
        f.start = Nanos(f.start.0 + rng.gen_range(0.0..packet_ns) as u64);
    }
    let mut out = trace.clone();
    out.workload = polyphony_spec::Workload::new(flows, trace.workload.duration)?;
    Ok(out)
}

/// Reads the replay program's `id,fct_ns` file into per-flow FCTs in workload order.
pub fn read_fcts(text: &str, input: &ModelInput, source: &str) -> anyhow::Result<Vec<Option<Nanos>>> {
    let mut by_id: HashMap<FlowId, Nanos> = HashMap::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let (id, fct) = line
            .split_once(',')
            .ok_or_else(|| anyhow::anyhow!("{source}:{}: expected id,fct_ns, got {line:?}", i + 1))?;
        let id: u64 = id
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("{source}:{}: id {id:?}: {e}", i + 1))?;
        let fct: u64 = fct
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("{source}:{}: fct_ns {fct:?}: {e}", i + 1))?;
        by_id.insert(FlowId(id), Nanos(fct));
    }
    Ok(input.workload.flows.iter().map(|f| by_id.get(&f.id).copied()).collect())
}

/// Runs one case: writes the trace under `work`, replays it with the ns-3 program `ns3`
/// (bounded by `timeout_s`), then `pktsim` and flowsim (uncorrected) on the same trace.
pub fn run_case(
    case: &Case,
    trace: &FlowTrace,
    ns3: &Path,
    work: &Path,
    timeout_s: u64,
    pktsim: &PktSim,
) -> anyhow::Result<CaseResult> {
    let tpath: PathBuf = work.join(format!("{}.trace", case.name));
    let fpath: PathBuf = work.join(format!("{}.ns3-fct.csv", case.name));
    std::fs::write(&tpath, trace.to_text())?;
    let mut input = trace_input(trace)?;
    input.keep_flows = true;
    let t0 = Instant::now();
    let out = Command::new("timeout")
        .arg(timeout_s.to_string())
        .arg(ns3)
        .arg(&tpath)
        .arg(&fpath)
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", ns3.display()))?;
    let ns3_wall_s = t0.elapsed().as_secs_f64();
    let log = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !out.status.success() {
        anyhow::bail!("{}: ns-3 failed ({}): {log}", case.name, out.status);
    }
    let text = std::fs::read_to_string(&fpath)?;
    let fcts = read_fcts(&text, &input, &fpath.display().to_string())?;
    // ns-3 runs until 30 s after the last start, as pktsim's drain limit.
    let last = input.workload.flows.last().map_or(0, |f| f.start.0);
    let ns3_out = output_from_fcts(&input, &fcts, Nanos(last + 30 * Nanos::SECOND.0));

    let t1 = Instant::now();
    let pkt = pktsim.run(&input, &trace.config)?;
    let pktsim_wall_s = t1.elapsed().as_secs_f64();
    let no_tsq = PktSim::new(PktSimOptions {
        tsq_window: Nanos::SECOND,
        ..pktsim.options
    })
    .run(&input, &trace.config)?;
    let one = |m: &dyn NetworkModel| -> anyhow::Result<ModelOutput> {
        Ok(m.evaluate(&input, std::slice::from_ref(&trace.config))
            .pop()
            .ok_or_else(|| anyhow::anyhow!("{} returned nothing", m.name()))??)
    };
    let fs = one(&FlowSim::default())?;
    let fc = one(&Corrected::shipped()?)?;
    let (n, p, f) = (numbers(&ns3_out), numbers(&pkt.output), numbers(&fs));
    let (q, c) = (numbers(&no_tsq.output), numbers(&fc));
    let mut jitter: Vec<(f64, f64)> = p.iter().map(|x| (x.p99, x.p99)).collect();
    for draw in 0..JITTER_DRAWS {
        let jt = jittered(trace, draw)?;
        let out = pktsim.run(&trace_input(&jt)?, &jt.config)?.output;
        for (range, x) in jitter.iter_mut().zip(numbers(&out)) {
            *range = (range.0.min(x.p99), range.1.max(x.p99));
        }
    }
    std::fs::write(
        work.join(format!("{}.flows.csv", case.name)),
        per_flow_csv(&ns3_out, &pkt.output),
    )?;
    Ok(CaseResult {
        case: case.name.clone(),
        flows: input.workload.flows.len(),
        classes: (0..CLASSES.len()).map(|i| [n[i], p[i], f[i], q[i], c[i]]).collect(),
        pktsim_jitter_p99: jitter,
        ns3_timeouts: log_count(&log, "rtos"),
        ns3_wall_s,
        pktsim_wall_s,
        ns3_unfinished: ns3_out.stats.unfinished,
        pktsim_unfinished: pkt.output.stats.unfinished,
        pktsim_drops: pkt.output.stats.dropped,
        pktsim_timeouts: pkt.output.stats.timeouts,
        pktsim_fast_retransmits: pkt.output.stats.fast_retransmits,
        ns3_log: log,
    })
}

/// `id,dscp,size,ns3_slowdown,pktsim_slowdown` for every measured flow (for finding out where
/// the two disagree).
fn per_flow_csv(ns3: &ModelOutput, pkt: &ModelOutput) -> String {
    let mut s = String::from("id,dscp,size,ns3_slowdown,pktsim_slowdown\n");
    let (Some(a), Some(b)) = (&ns3.flows, &pkt.flows) else {
        return s;
    };
    for (x, y) in a.iter().zip(b) {
        s.push_str(&format!(
            "{},{},{},{:.4},{:.4}\n",
            x.id.0,
            x.dscp.value(),
            x.size.0,
            x.slowdown(),
            y.slowdown()
        ));
    }
    s
}

/// What the run itself shows about a row where pktsim and ns-3 disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Explanation {
    /// ns-3's p99 lies within pktsim's own p99 range over arrival-jittered copies of the trace
    /// ([`jittered`]): the tail is set by which flows happen to collide, and a shift of less
    /// than a packet time moves pktsim as far as ns-3 is from it.
    Chance,
    /// pktsim without TCP small queues (ns-3's host model) is within 30 % of ns-3.
    HostQueues,
    /// In ns-3 or in pktsim, the flow at the p99 rank took at least [`MIN_RTO`] beyond its ideal
    /// FCT and that simulator had at least as many retransmission timeouts in the case as the
    /// class has flows at or above its p99 rank: the p99 counts rare events.
    RtoTail,
}

impl Explanation {
    /// A short name for tables.
    pub fn label(self) -> &'static str {
        match self {
            Explanation::Chance => "chance (within pktsim's jitter range)",
            Explanation::HostQueues => "host NIC queues (TSQ)",
            Explanation::RtoTail => "RTO in the tail",
        }
    }
}

/// How many of `n` flows sit at or above the nearest-rank p99 (1 below 100 flows, 2 up to 199):
/// the tail a row's p99 is made of.
pub fn at_or_above_p99(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    n - ((0.99 * n as f64).ceil() as u64).clamp(1, n) + 1
}

/// Which [`Explanation`]s hold for one row: `c` its numbers by [`col`], `jitter` pktsim's p99
/// range over jittered copies, `timeouts` the retransmission timeouts of the case in ns-3 and in
/// pktsim. Empty: unexplained.
pub fn explain(c: &[ClassNumbers; col::N], jitter: (f64, f64), timeouts: (u64, u64)) -> Vec<Explanation> {
    let ns3 = c[col::NS3].p99;
    let mut e = Vec::new();
    if jitter.0 <= ns3 && ns3 <= jitter.1 {
        e.push(Explanation::Chance);
    }
    if rel_err(c[col::NO_TSQ].p99, ns3) <= 0.3 {
        e.push(Explanation::HostQueues);
    }
    // Enough timeouts must exist to reach the p99 rank.
    let rto = |k: usize, t: u64| c[k].rto_at_p99 && c[k].flows > 0 && t >= at_or_above_p99(c[k].flows);
    if rto(col::NS3, timeouts.0) || rto(col::PKTSIM, timeouts.1) {
        e.push(Explanation::RtoTail);
    }
    e
}

/// The number after `key ` in the replay program's summary line (e.g. `switch_drops 216`).
pub fn log_count(log: &str, key: &str) -> Option<u64> {
    let mut words = log.split_whitespace();
    while let Some(w) = words.next() {
        if w == key {
            return words.next()?.parse().ok();
        }
    }
    None
}

/// |a − b| / b.
pub fn rel_err(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)
}

/// Median (nearest rank) of the values; NaN when empty.
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    percentile(&s, 0.5).unwrap_or(f64::NAN)
}

/// Spearman rank correlation: the model crate's (Pearson on average ranks, ties shared); NaN for
/// fewer than two points or a constant input.
pub use polyphony_model::validation::spearman;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_of_monotone_and_reversed_and_ties() {
        assert!((spearman(&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 25.0, 100.0]) - 1.0).abs() < 1e-12);
        assert!((spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        assert!((spearman(&[5.0, 1.0, 5.0], &[2.0, 1.0, 2.0]) - 1.0).abs() < 1e-12);
        assert!(spearman(&[1.0], &[1.0]).is_nan());
    }

    #[test]
    fn the_matrix_has_sixteen_distinct_cases() {
        let m = matrix();
        assert_eq!(m.len(), 16);
        let names: std::collections::HashSet<_> = m.iter().map(|c| c.name.clone()).collect();
        assert_eq!(names.len(), 16);
        assert!(m.iter().all(|c| c.config.validate().is_ok()));
    }

    #[test]
    fn fct_file_maps_ids_to_workload_order_and_names_bad_lines() {
        let case = &matrix()[0];
        let trace = case_trace(case, 50, 3).unwrap();
        let input = trace_input(&trace).unwrap();
        let f = &input.workload.flows;
        let text = format!("id,fct_ns\n{},1000\n{},2000\n", f[1].id.0, f[0].id.0);
        let v = read_fcts(&text, &input, "x").unwrap();
        assert_eq!(v[0], Some(Nanos(2000)));
        assert_eq!(v[1], Some(Nanos(1000)));
        assert_eq!(v[2], None);
        let e = read_fcts("id,fct_ns\n1,-5\n", &input, "x").unwrap_err().to_string();
        assert!(e.starts_with("x:2: fct_ns"), "{e}");
    }

    #[test]
    fn rows_are_explained_only_by_what_the_run_shows() {
        let row = |ns3: f64, pkt: f64, no_tsq: f64, rto: (bool, bool)| {
            let mut c = [ClassNumbers::default(); col::N];
            c[col::NS3] = ClassNumbers {
                flows: 500,
                p50: 1.0,
                p99: ns3,
                rto_at_p99: rto.0,
            };
            c[col::PKTSIM] = ClassNumbers {
                p99: pkt,
                rto_at_p99: rto.1,
                ..c[col::NS3]
            };
            c[col::NO_TSQ].p99 = no_tsq;
            c
        };
        // Far apart, pktsim steady under jitter, TSQ no help, no RTO: unexplained.
        assert!(explain(&row(10.0, 20.0, 20.0, (false, false)), (19.0, 21.0), (0, 0)).is_empty());
        // ns-3 inside pktsim's jitter range.
        assert_eq!(
            explain(&row(10.0, 20.0, 20.0, (false, false)), (9.0, 21.0), (0, 0)),
            vec![Explanation::Chance]
        );
        // Without TSQ pktsim agrees.
        assert_eq!(
            explain(&row(10.0, 5.0, 11.0, (false, false)), (5.0, 5.0), (0, 0)),
            vec![Explanation::HostQueues]
        );
        // An RTO at the p99 rank counts only if that simulator had enough timeouts to reach the
        // rank: of 500 flows, ranks 495..=500 are at or above it.
        let far = row(10.0, 40.0, 40.0, (false, true));
        assert!(explain(&far, (40.0, 40.0), (0, 0)).is_empty());
        assert!(explain(&far, (40.0, 40.0), (9, 5)).is_empty());
        assert_eq!(explain(&far, (40.0, 40.0), (0, 6)), vec![Explanation::RtoTail]);
    }

    #[test]
    fn the_tail_at_or_above_the_p99_rank() {
        assert_eq!(at_or_above_p99(0), 0);
        assert_eq!(at_or_above_p99(1), 1);
        assert_eq!(at_or_above_p99(99), 1);
        assert_eq!(at_or_above_p99(100), 2);
        assert_eq!(at_or_above_p99(117), 2);
        assert_eq!(at_or_above_p99(199), 2);
        assert_eq!(at_or_above_p99(200), 3);
        assert_eq!(at_or_above_p99(500), 6);
    }

    #[test]
    fn the_rto_rank_is_the_nearest_rank_p99_flow() {
        let f = |i: u64, extra_ms: u64| polyphony_spec::FlowOutcome {
            id: FlowId(i),
            dscp: Dscp::AF11,
            size: Bytes(1000),
            start: Nanos(0),
            fct: Nanos(1_000_000 + extra_ms * 1_000_000),
            ideal: Nanos(1_000_000),
        };
        // 200 flows: the p99 rank is the 198th; two RTO flows are the 199th and 200th.
        let mut v: Vec<_> = (0..198).map(|i| f(i, 0)).collect();
        v.push(f(198, 200));
        v.push(f(199, 200));
        assert!(!rto_at_p99(&v, Dscp::AF11));
        v[0] = f(0, 250);
        assert!(rto_at_p99(&v, Dscp::AF11));
        assert!(!rto_at_p99(&v, Dscp::AF21));
    }

    #[test]
    fn jitter_moves_starts_by_less_than_a_packet_and_keeps_the_flows() {
        let case = &matrix()[0];
        let trace = case_trace(case, 200, 3).unwrap();
        let j = jittered(&trace, 1).unwrap();
        assert_eq!(j.workload.flows.len(), trace.workload.flows.len());
        let packet_ns = 1514 * 8_000_000_000 / trace.topology.reference_rate().0;
        let by_id: HashMap<FlowId, Nanos> = trace.workload.flows.iter().map(|f| (f.id, f.start)).collect();
        assert!(j.workload.flows.windows(2).all(|w| w[0].start <= w[1].start));
        assert!(j.workload.flows.iter().all(|f| {
            let d = f.start.0 - by_id[&f.id].0;
            d <= packet_ns
        }));
        assert!(j.workload.flows.iter().any(|f| f.start != by_id[&f.id]));
    }

    #[test]
    fn counts_are_read_from_the_summary_line() {
        let log = "switch_marks 94430 switch_drops 216 device_drops 0 rtos 36 fast_recoveries 19 sim_end_s 30.2";
        assert_eq!(log_count(log, "switch_drops"), Some(216));
        assert_eq!(log_count(log, "rtos"), Some(36));
        assert_eq!(log_count(log, "fast_recoveries"), Some(19));
        assert_eq!(log_count(log, "sim_end_s"), None);
        assert_eq!(log_count(log, "absent"), None);
    }
}
