//! `flowsim`: the fast flow-level model — the controller's f.
//!
//! The network is decomposed per link (as Parsimon does): every link simulates, on its own,
//! the flows whose route crosses it, and a flow's FCT is its ideal FCT plus the delay each link
//! adds beyond an idle link, plus the store-and-forward of its first packet on the links other
//! than its bottleneck. On one link ([`link::LinkSim`]), event by event:
//!
//! * **Sharing.** Classes share the link by weight, work-conserving (an idle class's share goes
//!   to the backlogged classes in proportion to their weights: generalised processor sharing);
//!   within a class the flows share equally (processor sharing). Completions are found with a
//!   per-class virtual-time heap, so a flow costs O(log n) per link.
//! * **K — standing queue.** A flow arriving to class c waits behind the class's standing queue
//!   Q = min(bytes the class's other flows still have to send, max(K_c, n_c · initcwnd_c · MTU)):
//!   DCTCP holds a backlogged class's queue near K, and n_c newly started flows put up to a
//!   full initial window each into it. The wait is Q / (the class's share of the link).
//! * **initcwnd — slow-start rounds.** A flow of n segments needs k = ⌈log₂(n / w + 1)⌉ rounds
//!   with initial window w, capped by the rounds after which its window exceeds K (from then on
//!   DCTCP, not slow start, limits it). Each round after the first costs one more wait behind
//!   the standing queue plus one base RTT.
//!
//! Deterministic: no random draws; `seed` only salts ECMP, the same way as `pktsim`.

pub(crate) mod link;

use crate::error::ModelError;
use crate::model::{finish, prepare, ModelInput, ModelOutput, NetworkModel, RunStats};
use crate::topology::{HEADER_BYTES, MSS};
use link::{LinkFlow, LinkSim};
use polyphony_spec::{Bytes, Nanos, NetworkConfig};

/// Switches for the effects `flowsim` models (all on by default; off is for ablations).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSimOptions {
    /// Model the class's standing queue (the K effect).
    pub standing_queue: bool,
    /// Model slow-start rounds (the initcwnd effect).
    pub slow_start: bool,
}

impl Default for FlowSimOptions {
    fn default() -> FlowSimOptions {
        FlowSimOptions {
            standing_queue: true,
            slow_start: true,
        }
    }
}

/// The flow-level model.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FlowSim {
    /// Which effects are modelled.
    pub options: FlowSimOptions,
}

impl FlowSim {
    /// Evaluates one configuration.
    pub fn run(&self, input: &ModelInput, cfg: &NetworkConfig) -> Result<ModelOutput, ModelError> {
        let prep = prepare(input, cfg)?;
        let topo = input.topology.as_ref().clone().with_ecmp_salt(input.seed);
        let flows = &input.workload.flows;
        let links = topo.links();
        let mut per_link: Vec<Vec<LinkFlow>> = vec![Vec::new(); links.len()];
        let mut extra = vec![0.0f64; flows.len()];
        let mut rtts = vec![0u64; flows.len()];
        for (i, f) in flows.iter().enumerate() {
            let path = topo.route(f.src, f.dst, f.id.0);
            let ideal = topo.ideal(f.src, f.dst);
            let wire = ideal.wire_bytes(f.size).0 as f64;
            let first = f.size.0.min(MSS) + HEADER_BYTES;
            let bottleneck = ideal.bottleneck;
            let mut sf_skipped = false;
            for &l in path.links() {
                let lk = &links[l as usize];
                if lk.rate == bottleneck && !sf_skipped {
                    sf_skipped = true;
                } else {
                    extra[i] += lk.rate.serialization_time(Bytes(first)).0 as f64;
                }
                per_link[l as usize].push(LinkFlow {
                    flow: i as u32,
                    start: f.start.0 as f64,
                    work: wire,
                    size: f.size.0,
                    class: prep.flow_class[i],
                });
            }
            rtts[i] = ideal.base_rtt.0;
        }
        let mut sim = LinkSim::new(&prep.classes, self.options);
        let mut events = 0u64;
        for (l, lf) in per_link.iter().enumerate() {
            if lf.is_empty() {
                continue;
            }
            events += sim.run(links[l].rate, lf, &rtts, &mut extra);
        }
        let mut end = 0u64;
        let fct: Vec<Option<Nanos>> = flows
            .iter()
            .zip(&extra)
            .map(|(f, &e)| {
                let ideal = topo.ideal(f.src, f.dst).of(f.size).0;
                let t = ideal + e.max(0.0).round() as u64;
                end = end.max(f.start.0 + t);
                Some(Nanos(t))
            })
            .collect();
        let stats = RunStats {
            events,
            ..RunStats::default()
        };
        Ok(finish(input, &fct, Nanos(end), stats))
    }
}

impl NetworkModel for FlowSim {
    fn name(&self) -> &'static str {
        "flowsim"
    }
    fn evaluate(&self, input: &ModelInput, configs: &[NetworkConfig]) -> Vec<Result<ModelOutput, ModelError>> {
        configs.iter().map(|c| self.run(input, c)).collect()
    }
}
