//! pktsim against ns-3 on identical flows: the case matrix, one case run through ns-3 (the
//! replay program of `bench/ns3/`, a separate process), pktsim and flowsim (uncorrected) on the
//! same exported trace, and the comparison statistics (per-class p99 relative error, Spearman
//! ρ, speed ratio) that `ns3-compare` writes to `docs/results/pktsim-vs-ns3/`.

use polyphony_model::{
    output_from_fcts, three_class_scenario, trace_input, Corrected, FlowSim, ModelInput, ModelOutput, NetworkModel,
    PktSim,
};
use polyphony_spec::{
    percentile, Bytes, ClassConfig, Dscp, FlowId, FlowTrace, LeafSpineSpec, Nanos, NetworkConfig, Packets, TopologySpec,
};
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
    /// The distribution-free 95 % confidence interval of the p99 from this simulator's own flows
    /// ([`p99_interval_ranks`]; the upper end infinite when no order statistic bounds it; NaN
    /// when per-flow outcomes are not known).
    pub p99_interval: (f64, f64),
}

/// Columns of [`CaseResult::classes`].
pub mod col {
    /// ns-3.
    pub const NS3: usize = 0;
    /// pktsim.
    pub const PKTSIM: usize = 1;
    /// flowsim without the correction.
    pub const FLOWSIM: usize = 2;
    /// flowsim-corrected (the controller's default model).
    pub const CORRECTED: usize = 3;
    /// How many.
    pub const N: usize = 4;
}

/// Linux's and both simulators' minimum retransmission timeout.
pub const MIN_RTO: Nanos = Nanos(200_000_000);

/// Arrival jitter draws pktsim is rerun with to measure its own sensitivity ([`jittered`]).
pub const JITTER_DRAWS: u64 = 4;

/// Of those draws, how many ns-3 is rerun with too, in a case where some row's p99 is more
/// than [`FAR`] from pktsim's (ns-3 costs about a hundred times pktsim's time).
pub const NS3_JITTER_DRAWS: u64 = 2;

/// The relative p99 error beyond which a row needs an explanation.
pub const FAR: f64 = 0.3;

/// Everything one case produced.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case name.
    pub case: String,
    /// Flows in the trace.
    pub flows: usize,
    /// Per class (in [`CLASSES`] order), by [`col`]: ns-3, pktsim, flowsim, flowsim-corrected.
    pub classes: Vec<[ClassNumbers; col::N]>,
    /// Per class: the smallest and largest p99 of pktsim over the trace and its
    /// [`JITTER_DRAWS`] arrival-jittered copies.
    pub pktsim_jitter_p99: Vec<(f64, f64)>,
    /// Per class: the smallest and largest p99 of ns-3 over the trace and the first
    /// [`NS3_JITTER_DRAWS`] jittered copies, when some row of the case was beyond [`FAR`];
    /// otherwise its one p99.
    pub ns3_jitter_p99: Vec<(f64, f64)>,
    /// Whether ns-3 was rerun on jittered copies.
    pub ns3_jittered: bool,
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
                p99_interval: out
                    .flows
                    .as_ref()
                    .map_or((f64::NAN, f64::NAN), |fl| p99_interval(fl, d)),
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

/// The ranks (1-based, ascending) of the order statistics that bound a distribution-free
/// confidence interval of at least 95 % for the 0.99-quantile of `n` values: `l` is the largest
/// rank with P(B ≥ l) ≥ 0.975 and `u` the smallest with P(B ≤ u − 1) ≥ 0.975, for
/// B ~ Binomial(n, 0.99) the count of values below the quantile (Le Boudec, *Performance
/// Evaluation of Computer and Communication Systems*, Thm. 2.1). `u` is `None` (no upper bound)
/// while even the largest value is not one: below 368 values. `None` for `n` = 0.
pub fn p99_interval_ranks(n: u64) -> Option<(u64, Option<u64>)> {
    if n == 0 {
        return None;
    }
    // pmf of Binomial(n, 0.99) by logs (n is at most a few thousand).
    let ln_fact: Vec<f64> = std::iter::once(0.0)
        .chain((1..=n).scan(0.0, |acc, k| {
            *acc += (k as f64).ln();
            Some(*acc)
        }))
        .collect();
    let (lp, lq) = (0.99f64.ln(), 0.01f64.ln());
    let pmf = |k: u64| {
        (ln_fact[n as usize] - ln_fact[k as usize] - ln_fact[(n - k) as usize] + k as f64 * lp + (n - k) as f64 * lq)
            .exp()
    };
    // P(B ≥ l) grows as l falls: the largest l with P(B ≥ l) ≥ 0.975 (rank 1 at worst).
    let mut upper_tail = 0.0;
    let mut l = 1;
    for k in (1..=n).rev() {
        upper_tail += pmf(k);
        if upper_tail >= 0.975 {
            l = k;
            break;
        }
    }
    // P(B ≤ u − 1) ≥ 0.975 with u ≤ n.
    let mut cdf = 0.0;
    let mut u = None;
    for k in 0..n {
        cdf += pmf(k);
        if cdf >= 0.975 {
            u = Some(k + 1);
            break;
        }
    }
    Some((l, u))
}

/// The slowdowns at the ranks of [`p99_interval_ranks`] among class `d`'s flows (the upper end
/// infinite when unbounded; NaN without flows).
fn p99_interval(flows: &[polyphony_spec::FlowOutcome], d: Dscp) -> (f64, f64) {
    let mut v: Vec<f64> = flows.iter().filter(|f| f.dscp == d).map(|f| f.slowdown()).collect();
    v.sort_by(f64::total_cmp);
    match p99_interval_ranks(v.len() as u64) {
        None => (f64::NAN, f64::NAN),
        Some((l, u)) => (v[l as usize - 1], u.map_or(f64::INFINITY, |u| v[u as usize - 1])),
    }
}

/// `trace` with every start moved later by a uniform draw below one packet time (1514 bytes) at
/// the host rate, re-sorted: the same workload to any statistic, arriving a fraction of a packet
/// apart. pktsim's spread over such copies is how far its tail moves by chance alone.
pub fn jittered(trace: &FlowTrace, draw: u64) -> anyhow::Result<FlowTrace> {
    let mut out = trace.clone();
    out.workload = polyphony_model::validation::jittered(
        &trace.workload,
        trace.topology.reference_rate(),
        draw ^ 0x6a09_e667_f3bc_c909,
    )?;
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
    let (ns3_out, ns3_wall_s, log) = run_ns3(trace, ns3, &work.join(&case.name), timeout_s)?;
    let mut input = trace_input(trace)?;
    input.keep_flows = true;

    let t1 = Instant::now();
    let pkt = pktsim.run(&input, &trace.config)?;
    let pktsim_wall_s = t1.elapsed().as_secs_f64();
    let one = |m: &dyn NetworkModel| -> anyhow::Result<ModelOutput> {
        Ok(m.evaluate(&input, std::slice::from_ref(&trace.config))
            .pop()
            .ok_or_else(|| anyhow::anyhow!("{} returned nothing", m.name()))??)
    };
    let fs = one(&FlowSim::default())?;
    let fc = one(&Corrected::shipped()?)?;
    let (n, p, f) = (numbers(&ns3_out), numbers(&pkt.output), numbers(&fs));
    let c = numbers(&fc);
    let widen = |ranges: &mut Vec<(f64, f64)>, out: &ModelOutput| {
        for (range, x) in ranges.iter_mut().zip(numbers(out)) {
            *range = (range.0.min(x.p99), range.1.max(x.p99));
        }
    };
    let mut jitter: Vec<(f64, f64)> = p.iter().map(|x| (x.p99, x.p99)).collect();
    for draw in 0..JITTER_DRAWS {
        let jt = jittered(trace, draw)?;
        let out = pktsim.run(&trace_input(&jt)?, &jt.config)?.output;
        widen(&mut jitter, &out);
    }
    // ns-3's own sensitivity, where a row needs explaining.
    let mut ns3_jitter: Vec<(f64, f64)> = n.iter().map(|x| (x.p99, x.p99)).collect();
    let ns3_jittered = n
        .iter()
        .zip(&p)
        .any(|(a, b)| a.flows > 0 && rel_err(b.p99, a.p99) > FAR);
    if ns3_jittered {
        for draw in 0..NS3_JITTER_DRAWS {
            let jt = jittered(trace, draw)?;
            let stem = work.join(format!("{}.jitter-{draw}", case.name));
            let (out, _, _) = run_ns3(&jt, ns3, &stem, timeout_s)?;
            widen(&mut ns3_jitter, &out);
        }
    }
    std::fs::write(
        work.join(format!("{}.flows.csv", case.name)),
        per_flow_csv(&ns3_out, &pkt.output),
    )?;
    Ok(CaseResult {
        case: case.name.clone(),
        flows: input.workload.flows.len(),
        classes: (0..CLASSES.len()).map(|i| [n[i], p[i], f[i], c[i]]).collect(),
        pktsim_jitter_p99: jitter,
        ns3_jitter_p99: ns3_jitter,
        ns3_jittered,
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

/// Replays `trace` with the ns-3 program (bounded by `timeout_s`), writing `<stem>.trace` and
/// `<stem>.ns3-fct.csv`: ns-3's output (per-flow outcomes kept), its wall seconds and its
/// summary line.
fn run_ns3(trace: &FlowTrace, ns3: &Path, stem: &Path, timeout_s: u64) -> anyhow::Result<(ModelOutput, f64, String)> {
    let tpath = PathBuf::from(format!("{}.trace", stem.display()));
    let fpath = PathBuf::from(format!("{}.ns3-fct.csv", stem.display()));
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
    let wall_s = t0.elapsed().as_secs_f64();
    let log = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !out.status.success() {
        anyhow::bail!("{}: ns-3 failed ({}): {log}", tpath.display(), out.status);
    }
    let text = std::fs::read_to_string(&fpath)?;
    let fcts = read_fcts(&text, &input, &fpath.display().to_string())?;
    // ns-3 runs until 30 s after the last start, as pktsim's drain limit.
    let last = input.workload.flows.last().map_or(0, |f| f.start.0);
    Ok((
        output_from_fcts(&input, &fcts, Nanos(last + 30 * Nanos::SECOND.0)),
        wall_s,
        log,
    ))
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
    /// The two simulators' p99 ranges over the trace and arrival-jittered copies of it
    /// ([`jittered`]) overlap: the tail is set by which flows happen to collide, and a shift of
    /// less than a packet time moves one simulator as far as the other is from it.
    Chance,
    /// In ns-3 or in pktsim, the flow at the p99 rank took at least [`MIN_RTO`] beyond its ideal
    /// FCT and that simulator had at least as many retransmission timeouts in the case as the
    /// class has flows at or above its p99 rank: the p99 counts rare events.
    RtoTail,
    /// The p99 of the row's flows is not resolved: each simulator's p99 lies inside the other's
    /// 95 % confidence interval of the p99 from its own flows ([`p99_interval_ranks`]). With
    /// fewer than a few hundred flows a class's p99 is the fate of its slowest one or two flows,
    /// and the interval spans several flows' slowdowns.
    Unresolved,
}

impl Explanation {
    /// A short name for tables.
    pub fn label(self) -> &'static str {
        match self {
            Explanation::Chance => "chance (the jitter ranges overlap)",
            Explanation::RtoTail => "RTO in the tail",
            Explanation::Unresolved => "p99 not resolved by the flows (95 % interval)",
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

/// Which [`Explanation`]s hold for one row: `c` its numbers by [`col`], `jitter` the p99 ranges
/// of ns-3 and of pktsim over the trace and jittered copies, `timeouts` the retransmission
/// timeouts of the case in ns-3 and in pktsim. Empty: unexplained.
pub fn explain(c: &[ClassNumbers; col::N], jitter: [(f64, f64); 2], timeouts: (u64, u64)) -> Vec<Explanation> {
    let ns3 = c[col::NS3].p99;
    let mut e = Vec::new();
    let [a, b] = jitter;
    if a.0.max(b.0) <= a.1.min(b.1) {
        e.push(Explanation::Chance);
    }
    // Enough timeouts must exist to reach the p99 rank.
    let rto = |k: usize, t: u64| c[k].rto_at_p99 && c[k].flows > 0 && t >= at_or_above_p99(c[k].flows);
    if rto(col::NS3, timeouts.0) || rto(col::PKTSIM, timeouts.1) {
        e.push(Explanation::RtoTail);
    }
    let inside = |x: f64, (lo, hi): (f64, f64)| lo <= x && x <= hi;
    if inside(c[col::PKTSIM].p99, c[col::NS3].p99_interval) && inside(ns3, c[col::PKTSIM].p99_interval) {
        e.push(Explanation::Unresolved);
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
        let row = |ns3: f64, pkt: f64, rto: (bool, bool)| {
            let mut c = [ClassNumbers::default(); col::N];
            c[col::NS3] = ClassNumbers {
                flows: 500,
                p50: 1.0,
                p99: ns3,
                rto_at_p99: rto.0,
                p99_interval: (0.9 * ns3, 1.1 * ns3),
            };
            c[col::PKTSIM] = ClassNumbers {
                p99: pkt,
                rto_at_p99: rto.1,
                p99_interval: (0.9 * pkt, 1.1 * pkt),
                ..c[col::NS3]
            };
            c
        };
        // Far apart, pktsim steady under jitter, no RTO: unexplained.
        let r = row(10.0, 20.0, (false, false));
        assert!(explain(&r, [(10.0, 10.0), (19.0, 21.0)], (0, 0)).is_empty());
        assert!(explain(&r, [(9.0, 18.9), (19.0, 21.0)], (0, 0)).is_empty());
        // ns-3 inside pktsim's jitter range, or the two ranges overlapping.
        assert_eq!(
            explain(&r, [(10.0, 10.0), (9.0, 21.0)], (0, 0)),
            vec![Explanation::Chance]
        );
        assert_eq!(
            explain(&r, [(10.0, 19.5), (19.0, 21.0)], (0, 0)),
            vec![Explanation::Chance]
        );
        // An RTO at the p99 rank counts only if that simulator had enough timeouts to reach the
        // rank: of 500 flows, ranks 495..=500 are at or above it.
        let far = row(10.0, 40.0, (false, true));
        let apart = [(10.0, 10.0), (40.0, 40.0)];
        assert!(explain(&far, apart, (0, 0)).is_empty());
        assert!(explain(&far, apart, (9, 5)).is_empty());
        assert_eq!(explain(&far, apart, (0, 6)), vec![Explanation::RtoTail]);
        // Each p99 inside the other's interval; one side alone is not enough.
        let mut wide = row(10.0, 20.0, (false, false));
        wide[col::NS3].p99_interval = (8.0, f64::INFINITY);
        assert!(explain(&wide, [(10.0, 10.0), (20.0, 20.0)], (0, 0)).is_empty());
        wide[col::PKTSIM].p99_interval = (9.5, f64::INFINITY);
        assert_eq!(
            explain(&wide, [(10.0, 10.0), (20.0, 20.0)], (0, 0)),
            vec![Explanation::Unresolved]
        );
        wide[col::PKTSIM].p99_interval = (10.5, f64::INFINITY);
        assert!(explain(&wide, [(10.0, 10.0), (20.0, 20.0)], (0, 0)).is_empty());
    }

    #[test]
    fn the_p99_interval_ranks_are_the_binomial_ones() {
        assert_eq!(p99_interval_ranks(0), None);
        // One flow: P(B ≥ 1) = 0.99 ≥ 0.975, no upper bound.
        assert_eq!(p99_interval_ranks(1), Some((1, None)));
        // 117 flows: P(B ≥ 114) = 0.969, P(B ≥ 113) = 0.993 (hand-computed); unbounded above.
        assert_eq!(p99_interval_ranks(117), Some((113, None)));
        // 52 flows: P(B ≥ 50) = 0.984, P(B ≥ 51) = 0.906.
        assert_eq!(p99_interval_ranks(52), Some((50, None)));
        // Bounded above from 368 values (0.99^367 = 0.0250 > 0.025 > 0.99^368).
        assert_eq!(p99_interval_ranks(367).unwrap().1, None);
        assert_eq!(p99_interval_ranks(368).unwrap().1, Some(368));
        // Many values: the interval closes around rank 0.99 n.
        // 10 000 values: 9900 ± 1.96 sd (sd ≈ 9.95), from the exact binomial sums.
        assert_eq!(p99_interval_ranks(10_000), Some((9880, Some(9920))));
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
            query: None,
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
