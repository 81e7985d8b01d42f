//! `flowsim`: the fast flow-level model — the controller's f.
//!
//! The network is decomposed per link (as Parsimon does): every link simulates, on its own,
//! the flows whose route crosses it, and a flow's FCT is its ideal FCT plus the delay each link
//! adds beyond an idle link, plus the store-and-forward of its first packet on the links other
//! than its bottleneck. A link is skipped when every flow crossing it goes on to one and the
//! same next link that is no faster (a dumbbell's access links): the downstream link sees the
//! same flows and is where they queue. On one link classes share by weight (GPS), flows within
//! a class by processor sharing, and DCTCP's standing queue (K) and slow-start rounds
//! (initcwnd) add waits; each class is one fluid backlog and one curve of its active flows'
//! remaining bytes, so a flow costs constant work per link and a batch's configurations run
//! sixteen at a time in one vectorised pass (`flowsim/aggregate.rs` has the equations,
//! `flowsim/curve.rs` the curve).
//!
//! * **Loss-based classes (NewReno, CUBIC).** Their packets are not ECN-capable: the class's
//!   window grows until its buffer overflows, so its standing queue is set by the buffer, not
//!   by K. flowsim takes it as the mean of the sawtooth between β·B and B, (1+β)/2 · B (β = 0.5
//!   for NewReno, 0.7 for CUBIC), with B the class's own buffer limit — or the port buffer when
//!   the class is alone — and uses it where a DCTCP class uses φ·K (standing queue and the
//!   slow-start cap). A loss-based class without a buffer of its own beside other classes is
//!   refused: it fills the shared buffer and the other classes' packets are dropped (pktsim
//!   shows their p99 growing a hundredfold through retransmission timeouts), which a model
//!   without drops cannot predict. Within its own buffer the class's small flows also lose
//!   packets and wait for timeouts; flowsim does not model that either, so it predicts the
//!   class's median but underestimates its tail (`tests/congestion_control.rs`: pktsim p99
//!   ≈ 1100 where flowsim predicts ≈ 47); the residual GP has to learn the rest.
//!
//! A batch of configurations shares the configuration-independent work (routes, ideal FCTs,
//! per-link flow lists), and so do later calls on the same input: a `FlowSim` value keeps the
//! plan of the last input it evaluated (`flowsim/cache.rs`). Deterministic: no random draws;
//! `seed` only salts ECMP, the same way as `pktsim`.

mod aggregate;
mod burst;
mod cache;
mod curve;
pub(crate) mod link;

use crate::error::ModelError;
use crate::model::{
    class_params, finish, flow_classes, Cca, ClassParams, ModelInput, ModelOutput, NetworkModel, RunStats,
};
use crate::topology::{HEADER_BYTES, MSS};
use aggregate::{AggPlan, Lane, ScratchPool};
use cache::PlanCache;
use link::LinkFlow;
use polyphony_spec::{Bytes, Nanos, NetworkConfig};

/// Switches for the effects `flowsim` models (all on by default; off is for ablations).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSimOptions {
    /// Model the class's standing queue (the K effect).
    pub standing_queue: bool,
    /// Model slow-start rounds (the initcwnd effect).
    pub slow_start: bool,
    /// The standing queue of a backlogged class in units of its K. DCTCP's slow-start
    /// overshoot (marks reach the senders a queueing delay late, while windows double) keeps
    /// the queue above K in bursts; 2 is chosen against `pktsim` on the development seeds of
    /// `validation` (54 random cases × 6 configurations; 1.5, 2 and 3 tried: median per-class
    /// p99 error 27.1, 26.6 and 29.6 %).
    pub queue_factor: f64,
    /// The packet-level constants the incast loss model shares with `pktsim` (its minimum
    /// RTO and default port buffer; `flowsim/burst.rs`).
    pub packet: crate::pktsim::PktSimOptions,
}

impl Default for FlowSimOptions {
    fn default() -> FlowSimOptions {
        FlowSimOptions {
            standing_queue: true,
            slow_start: true,
            queue_factor: 2.0,
            packet: crate::pktsim::PktSimOptions::default(),
        }
    }
}

/// The flow-level model.
///
/// A value keeps the configuration-independent plan of the last input it evaluated (routes,
/// ideal FCTs, per-link flow lists, the aggregate mode's per-flow terms) and reuses it while
/// later calls bring the same input — the same workload and topology `Arc`s, classes, seed
/// and measurement window — as the controller's calls within one iteration do. Results are the
/// same as without reuse, bit for bit. The plan holds on to that input's workload until the
/// next input replaces it or the value is dropped; a clone shares the plan.
#[derive(Debug, Clone, Default)]
pub struct FlowSim {
    /// Which effects are modelled.
    pub options: FlowSimOptions,
    /// The last input's plan.
    plans: PlanCache,
    /// Buffers of finished calls, for the next.
    scratch: ScratchPool,
}

impl FlowSim {
    /// A model with these options (no plan yet).
    pub fn new(options: FlowSimOptions) -> FlowSim {
        FlowSim {
            options,
            plans: PlanCache::default(),
            scratch: ScratchPool::default(),
        }
    }
}

/// Two models are equal when their options are (a held plan changes no result).
impl PartialEq for FlowSim {
    fn eq(&self, other: &FlowSim) -> bool {
        self.options == other.options
    }
}

/// The configuration-independent part of an evaluation.
struct Plan {
    flow_class: Vec<u8>,
    links: Vec<(polyphony_spec::BitsPerSec, Vec<LinkFlow>)>,
    base_extra: Vec<f64>,
    ideals: Vec<Nanos>,
    /// The workload's partition-aggregate queries (empty without queries).
    queries: Vec<burst::Query>,
    /// Whether any flow belongs to a query (`Workload::has_queries`, a scan of every flow).
    has_queries: bool,
}

fn plan(input: &ModelInput) -> Result<Plan, ModelError> {
    let flow_class = flow_classes(input)?;
    let topo = input.topology.as_ref().clone().with_ecmp_salt(input.seed);
    let flows = &input.workload.flows;
    let links = topo.links();
    // Each link's flow count first (routing is cheap), so that its list is allocated once.
    let mut count = vec![0usize; links.len()];
    for f in flows {
        for &l in topo.route(f.src, f.dst, f.id.0).links() {
            count[l as usize] += 1;
        }
    }
    let mut per_link: Vec<Vec<LinkFlow>> = count.into_iter().map(Vec::with_capacity).collect();
    // Per link: the single next link all its flows take (u32::MAX: none yet, u32::MAX - 1: several).
    let mut next_of = vec![u32::MAX; links.len()];
    let mut base_extra = vec![0.0f64; flows.len()];
    let mut ideals = Vec::with_capacity(flows.len());
    let mut rtts = Vec::with_capacity(flows.len());
    // Ideal FCT parameters per (src, dst), and each link's serialisation time of a full
    // first packet (most flows have one): computed once, not per flow.
    // (FxHash: the default SipHash was about 5 % of a 30-configuration batch's time.)
    let mut ideal_of: rustc_hash::FxHashMap<(u32, u32), polyphony_spec::IdealFct> = Default::default();
    let full_first: Vec<f64> = links
        .iter()
        .map(|lk| lk.rate.serialization_time(Bytes(MSS + HEADER_BYTES)).0 as f64)
        .collect();
    for (i, f) in flows.iter().enumerate() {
        let path = topo.route(f.src, f.dst, f.id.0);
        let ideal = *ideal_of
            .entry((f.src.0, f.dst.0))
            .or_insert_with(|| topo.ideal(f.src, f.dst));
        let wire = ideal.wire_bytes(f.size).0 as f64;
        let first = f.size.0.min(MSS) + HEADER_BYTES;
        let mut sf_skipped = false;
        let ls = path.links();
        for (h, &l) in ls.iter().enumerate() {
            let lk = &links[l as usize];
            if lk.rate == ideal.bottleneck && !sf_skipped {
                sf_skipped = true;
            } else {
                base_extra[i] += if first == MSS + HEADER_BYTES {
                    full_first[l as usize]
                } else {
                    lk.rate.serialization_time(Bytes(first)).0 as f64
                };
            }
            let nx = ls.get(h + 1).copied().unwrap_or(u32::MAX - 1);
            let e = &mut next_of[l as usize];
            if *e == u32::MAX {
                *e = nx;
            } else if *e != nx {
                *e = u32::MAX - 1;
            }
            per_link[l as usize].push(LinkFlow {
                flow: i as u32,
                start: f.start.0 as f64,
                work: wire,
                size: f.size.0,
                class: flow_class[i],
                idle: wire * 8e9 / lk.rate.min(ideal.bottleneck).0 as f64,
                rtt: 0.0,
            });
        }
        ideals.push(ideal.of(f.size));
        rtts.push(ideal.base_rtt.0);
    }
    let mut plan_links: Vec<(polyphony_spec::BitsPerSec, Vec<LinkFlow>)> = per_link
        .into_iter()
        .enumerate()
        .filter(|(l, lf)| {
            if lf.is_empty() {
                return false;
            }
            let nx = next_of[*l];
            // Dominated: all flows continue on one next link that is no faster.
            !(nx < u32::MAX - 1 && links[nx as usize].rate <= links[*l].rate)
        })
        .map(|(l, lf)| (links[l].rate, lf))
        .collect();
    // The slow-start rounds' RTTs count once per flow, on its first simulated link.
    let mut counted = vec![false; flows.len()];
    for (_, lf) in &mut plan_links {
        for f in lf {
            if !std::mem::replace(&mut counted[f.flow as usize], true) {
                f.rtt = rtts[f.flow as usize] as f64;
            }
        }
    }
    let queries = queries(input, &topo, &flow_class, &rtts);
    Ok(Plan {
        flow_class,
        links: plan_links,
        base_extra,
        ideals,
        queries,
        has_queries: input.workload.has_queries(),
    })
}

/// The responses of each query, grouped by query id (in order of first response).
fn queries(input: &ModelInput, topo: &crate::topology::Topology, flow_class: &[u8], rtts: &[u64]) -> Vec<burst::Query> {
    let links = topo.links();
    let mut index: rustc_hash::FxHashMap<u64, usize> = Default::default();
    let mut out: Vec<burst::Query> = Vec::new();
    for (i, f) in input.workload.flows.iter().enumerate() {
        let Some(qid) = f.query else { continue };
        let path = topo.route(f.src, f.dst, f.id.0);
        let ls = path.links();
        let (Some(&first), Some(&last)) = (ls.first(), ls.last()) else {
            continue;
        };
        let k = *index.entry(qid.0).or_insert_with(|| {
            out.push(burst::Query {
                class: flow_class[i],
                port_bps: links[last as usize].rate.0 as f64,
                responses: Vec::new(),
            });
            out.len() - 1
        });
        out[k].responses.push(burst::Response {
            flow: i as u32,
            segs: f.size.0.div_ceil(MSS).max(1) as u32,
            host: f.src.0,
            nic_bps: links[first as usize].rate.0 as f64,
            rtt: rtts[i] as f64,
        });
    }
    out
}

impl Plan {
    /// Each simulated link's rate, the wire bytes each of `classes` classes offers on it and
    /// the most each class (and all together) offers within one of [`PEAK_BINS`] equal slices
    /// of the window `[0, span_ns)`.
    fn link_loads(&self, classes: usize, span_ns: f64) -> Vec<crate::correction::LinkLoad> {
        let bin = (span_ns / PEAK_BINS as f64).max(1.0);
        self.links
            .iter()
            .map(|(rate, lf)| {
                let mut class_bytes = vec![0.0; classes];
                let mut bins = vec![0.0f64; (classes + 1) * PEAK_BINS];
                for f in lf {
                    let b = ((f.start / bin) as usize).min(PEAK_BINS - 1);
                    if let Some(x) = class_bytes.get_mut(f.class as usize) {
                        *x += f.work;
                        bins[f.class as usize * PEAK_BINS + b] += f.work;
                    }
                    bins[classes * PEAK_BINS + b] += f.work;
                }
                let peak = |c: usize| {
                    bins[c * PEAK_BINS..(c + 1) * PEAK_BINS]
                        .iter()
                        .cloned()
                        .fold(0.0, f64::max)
                };
                crate::correction::LinkLoad {
                    rate_bps: rate.0 as f64,
                    class_bytes,
                    class_peak_bytes: (0..classes).map(peak).collect(),
                    peak_bytes: peak(classes),
                }
            })
            .collect()
    }
}

/// Slices of the window the correction's peak-load features bin flow arrivals into.
pub(crate) const PEAK_BINS: usize = 50;

impl FlowSim {
    /// The learned correction's features of `input`'s window (kept with the window's plan).
    pub(crate) fn window_features(
        &self,
        input: &ModelInput,
    ) -> Result<std::sync::Arc<crate::correction::WindowFeatures>, ModelError> {
        Ok(self.plans.get(input, plan)?.window(input))
    }

    /// Evaluates one configuration.
    pub fn run(&self, input: &ModelInput, cfg: &NetworkConfig) -> Result<ModelOutput, ModelError> {
        self.evaluate(input, std::slice::from_ref(cfg)).remove(0)
    }

    /// A batch: the configuration-independent work once, then one
    /// O(classes)-per-flow pass per configuration.
    fn run_aggregate(
        &self,
        input: &ModelInput,
        p: &Plan,
        ap: &AggPlan,
        configs: &[NetworkConfig],
    ) -> Vec<Result<ModelOutput, ModelError>> {
        let mut scratch = self.scratch.take();
        let mut out: Vec<Result<ModelOutput, ModelError>> = Vec::with_capacity(configs.len());
        // Valid configurations in groups of LANES, evaluated together; invalid ones answered
        // in place.
        let params: Vec<Result<Vec<_>, ModelError>> = configs
            .iter()
            .map(|c| flowsim_params(&input.classes, c, &self.options))
            .collect();
        let valid: Vec<usize> = (0..configs.len()).filter(|&i| params[i].is_ok()).collect();
        // Query completion times need every flow's end (aggregated in `finish`).
        let whole = input.keep_flows || p.has_queries;
        let mut results: Vec<Option<ModelOutput>> = vec![None; configs.len()];
        for chunk in valid.chunks(aggregate::LANES) {
            let group: Vec<&[_]> = chunk
                .iter()
                .filter_map(|&i| params[i].as_ref().ok().map(|v| v.as_slice()))
                .collect();
            aggregate::run_group(ap, &p.base_extra, &group, &self.options, &mut scratch, |k, lane| {
                let i = chunk[k];
                let loss = params[i].as_ref().ok().map(|v| (v.as_slice(), &configs[i]));
                results[i] = Some(self.aggregate_output(input, p, ap, lane, loss, whole));
            });
        }
        self.scratch.put(scratch);
        for (r, pr) in results.into_iter().zip(params) {
            out.push(match (r, pr) {
                (Some(o), _) => Ok(o),
                (None, Err(e)) => Err(e),
                // Unreachable: every valid configuration is in a group.
                (None, Ok(_)) => Err(ModelError::invalid("configuration", "not evaluated", "report a bug")),
            });
        }
        out
    }

    /// The output of one configuration of a group (its lane of extra delays); `loss` is the
    /// configuration and its parameters, for the queries' burst losses; `whole`: every flow's
    /// completion is wanted (kept flows, or queries), not only the per-class statistics.
    fn aggregate_output(
        &self,
        input: &ModelInput,
        p: &Plan,
        ap: &AggPlan,
        mut lane: Lane<'_>,
        loss: Option<(&[ClassParams], &NetworkConfig)>,
        whole: bool,
    ) -> ModelOutput {
        let mut stats = RunStats {
            events: ap.arrivals(),
            ..RunStats::default()
        };
        if whole {
            let mut extras = lane.extras();
            if let Some((params, cfg)) = loss {
                let port = cfg.port_buffer.unwrap_or(self.options.packet.default_port_buffer).0;
                for q in &p.queries {
                    for (r, d) in q
                        .responses
                        .iter()
                        .zip(burst::loss_delays(q, params, port, &self.options))
                    {
                        extras[r.flow as usize] += d;
                    }
                }
            }
            let fct: Vec<Option<Nanos>> = p
                .ideals
                .iter()
                .zip(extras)
                .map(|(i, e)| Some(Nanos(i.0 + e.round() as u64)))
                .collect();
            let end = input
                .workload
                .flows
                .iter()
                .zip(&fct)
                .map(|(f, t)| f.start.0 + t.map_or(0, |t| t.0))
                .max()
                .unwrap_or(0);
            return finish(input, &fct, Some(&p.ideals), Nanos(end), stats);
        }
        let sli = lane.slis(&input.classes);
        stats.flows = input.workload.flows.len() as u64;
        stats.measured = ap.measured_flows();
        stats.sim_time = Nanos(lane.end().round() as u64);
        ModelOutput {
            sli,
            flows: None,
            stats,
        }
    }
}

impl NetworkModel for FlowSim {
    fn name(&self) -> &'static str {
        "flowsim-aggregate"
    }
    fn batch_quantum(&self) -> usize {
        aggregate::LANES
    }
    fn evaluate(&self, input: &ModelInput, configs: &[NetworkConfig]) -> Vec<Result<ModelOutput, ModelError>> {
        match self.plans.get(input, plan) {
            Ok(p) => self.run_aggregate(input, &p.plan, p.agg(input), configs),
            Err(e) => configs.iter().map(|_| Err(e.clone())).collect(),
        }
    }
}

/// The configuration's knobs as flowsim uses them: [`class_params`], with a loss-based class's
/// K replaced by the value whose φ·K is its standing queue (1+β)/2 · B (module docs).
pub(crate) fn flowsim_params(
    classes: &[polyphony_spec::Dscp],
    cfg: &NetworkConfig,
    opts: &FlowSimOptions,
) -> Result<Vec<ClassParams>, ModelError> {
    let mut params = class_params(classes, cfg)?;
    let alone = params.len() == 1;
    for (p, &d) in params.iter_mut().zip(classes) {
        let beta = match p.cca {
            Cca::Dctcp => continue,
            Cca::NewReno => 0.5,
            Cca::Cubic => crate::pktsim::CUBIC_BETA,
        };
        let buffer = p.buffer.or(if alone { cfg.port_buffer.map(|b| b.0) } else { None });
        let Some(b) = buffer else {
            let algorithm = cfg
                .class(d)
                .and_then(|c| c.congestion_control.as_ref())
                .map(|c| c.name().to_string())
                .unwrap_or_default();
            return Err(ModelError::UnmodelledCongestionControl {
                dscp: d,
                algorithm,
                model: "flowsim",
                modelled: "dctcp in any class, reno and cubic only in a class with its own buffer limit \
                           (buffer; a loss-based class sharing the port buffer crowds out the others' packets)",
            });
        };
        let q = (1.0 + beta) / 2.0 * b as f64;
        p.ecn_k = (q / opts.queue_factor.max(1e-9)).round().max(1.0) as u64;
    }
    Ok(params)
}
