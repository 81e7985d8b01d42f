//! The one interface both models implement ([`NetworkModel`]), its input and output, and the
//! bookkeeping they share: mapping a configuration onto per-class parameters and turning
//! completion times into [`FlowOutcome`]s and an [`SliVector`].
//!
//! # Measurement window
//! Every flow of the workload is simulated; only flows that *start* in
//! `[measure_from, measure_until)` count towards the SLIs (earlier flows warm the network up).
//! A flow still unfinished when the model stops (see each model's drain limit) is counted with
//! the time it had been running — a lower bound on its FCT — and reported in
//! [`RunStats::unfinished`].

use crate::error::ModelError;
use crate::topology::Topology;
use polyphony_spec::{Dscp, FlowOutcome, Nanos, NetworkConfig, SliVector, Workload};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The most classes a port serves (queues per port).
pub const MAX_CLASSES: usize = 8;
/// The largest flow the models accept (1 TB: segment numbers stay within 32 bits).
pub const MAX_FLOW_BYTES: u64 = 1 << 40;
/// The latest flow start the models accept (about 36 years: time arithmetic cannot overflow).
pub const MAX_START_NS: u64 = 1 << 60;

/// What a model evaluates: one workload on one topology.
#[derive(Debug, Clone)]
pub struct ModelInput {
    /// The flows (shared: the controller evaluates many configurations on one sample).
    pub workload: Arc<Workload>,
    /// The network.
    pub topology: Arc<Topology>,
    /// The classes in objective order; every flow's DSCP must be one of them.
    pub classes: Vec<Dscp>,
    /// Flows starting before this are warm-up, left out of the SLIs.
    pub measure_from: Nanos,
    /// Flows starting at or after this are left out (`None`: the workload's duration).
    pub measure_until: Option<Nanos>,
    /// Seed of the model's own random choices (ECMP salt); evaluation is deterministic in
    /// (workload, configuration, seed).
    pub seed: u64,
    /// Return every measured flow's outcome, not just the SLIs.
    pub keep_flows: bool,
}

impl ModelInput {
    /// An input that measures every flow and keeps no per-flow outcomes.
    pub fn new(workload: Arc<Workload>, topology: Arc<Topology>, classes: Vec<Dscp>) -> ModelInput {
        ModelInput {
            workload,
            topology,
            classes,
            measure_from: Nanos(0),
            measure_until: None,
            seed: 0,
            keep_flows: false,
        }
    }

    pub(crate) fn measured(&self, start: Nanos) -> bool {
        start >= self.measure_from && start < self.measure_until.unwrap_or(Nanos(u64::MAX))
    }
}

/// Counters of one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RunStats {
    /// Flows simulated (all, including warm-up).
    pub flows: u64,
    /// Flows measured (in the window).
    pub measured: u64,
    /// Measured flows that had not finished when the model stopped.
    pub unfinished: u64,
    /// Packets transmitted by hosts (pktsim; 0 for flowsim).
    pub packets: u64,
    /// Packets dropped at full buffers (pktsim).
    pub dropped: u64,
    /// Packets CE-marked (pktsim).
    pub marked: u64,
    /// Events processed.
    pub events: u64,
    /// Retransmission timeouts that fired (pktsim).
    pub timeouts: u64,
    /// Fast retransmits on three duplicate ACKs (pktsim).
    #[serde(default)]
    pub fast_retransmits: u64,
    /// When the last flow completed: pktsim's last event; the flow-level models' latest
    /// predicted completion (their estimate of the window's last flows, which may lie well
    /// past pktsim's).
    pub sim_time: Nanos,
}

/// What a model predicts for one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelOutput {
    /// Per-class slowdown statistics, in [`ModelInput::classes`] order (a class without measured
    /// flows is absent).
    pub sli: SliVector,
    /// Every measured flow's outcome, when [`ModelInput::keep_flows`] was set.
    pub flows: Option<Vec<FlowOutcome>>,
    /// Counters.
    pub stats: RunStats,
}

/// A network model: predicts per-class SLIs of a workload under each of a batch of
/// configurations. Results are in `configs` order; one bad configuration does not spoil the rest.
pub trait NetworkModel: Send + Sync {
    /// Short name (`"flowsim-corrected"`, `"flowsim-aggregate"`, `"pktsim"`).
    fn name(&self) -> &'static str;
    /// Evaluates every configuration on the same input.
    fn evaluate(&self, input: &ModelInput, configs: &[NetworkConfig]) -> Vec<Result<ModelOutput, ModelError>>;
    /// The group of configurations the model evaluates together (flowsim: its 16 vector
    /// lanes): a caller that splits a batch, across threads say, keeps each part a multiple of
    /// it, since a part's last partial group costs as much as a full one. Results never depend
    /// on the split. 1 (the default): any split.
    fn batch_quantum(&self) -> usize {
        1
    }
}

/// The congestion-control algorithms the models simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cca {
    /// DCTCP (RFC 8257): ECN-capable, reacts to the fraction of marked bytes. The default of a
    /// class without `congestion_control`, and every DCTCP variant (`dctcp`, `pp_dctcp`).
    Dctcp,
    /// NewReno (`reno`; RFC 5681, RFC 6582), without ECN: reacts to loss only.
    NewReno,
    /// CUBIC (`cubic`; RFC 9438), without ECN: reacts to loss only.
    Cubic,
}

impl Cca {
    /// The algorithm a class runs, or `None` for one the models do not simulate.
    pub fn of(cc: Option<&polyphony_spec::CongestionControl>) -> Option<Cca> {
        match cc {
            None => Some(Cca::Dctcp),
            Some(c) if c.ecn() => Some(Cca::Dctcp),
            Some(c) if c.name() == "reno" => Some(Cca::NewReno),
            Some(c) if c.name() == "cubic" => Some(Cca::Cubic),
            Some(_) => None,
        }
    }

    /// Whether the algorithm's packets are ECN-capable (a switch marks them instead of
    /// dropping only when the buffer is full).
    pub fn ecn(self) -> bool {
        self == Cca::Dctcp
    }
}

/// The knobs of one class as the simulators use them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ClassParams {
    pub weight: f64,
    pub ecn_k: u64,
    pub init_cwnd: u32,
    pub buffer: Option<u64>,
    pub cca: Cca,
}

/// Validated per-class parameters (in input class order) and each flow's class index.
pub(crate) struct Prepared {
    pub classes: Vec<ClassParams>,
    pub flow_class: Vec<u8>,
}

pub(crate) fn prepare(input: &ModelInput, cfg: &NetworkConfig) -> Result<Prepared, ModelError> {
    Ok(Prepared {
        classes: class_params(&input.classes, cfg)?,
        flow_class: flow_classes(input)?,
    })
}

/// The configuration's knobs in `classes` order (the input's), validated.
pub(crate) fn class_params(classes: &[Dscp], cfg: &NetworkConfig) -> Result<Vec<ClassParams>, ModelError> {
    cfg.validate()?;
    if classes.len() > MAX_CLASSES {
        return Err(ModelError::TooManyClasses {
            classes: classes.len(),
            max: MAX_CLASSES,
        });
    }
    classes
        .iter()
        .map(|&d| {
            let c = cfg.class(d).ok_or(ModelError::UnknownClass {
                flow: u64::MAX,
                dscp: d,
            })?;
            let cca =
                Cca::of(c.congestion_control.as_ref()).ok_or_else(|| ModelError::UnmodelledCongestionControl {
                    dscp: d,
                    algorithm: c
                        .congestion_control
                        .as_ref()
                        .map(|c| c.name().to_string())
                        .unwrap_or_default(),
                    model: "pktsim and flowsim",
                    modelled: "dctcp (and DCTCP variants such as pp_dctcp), reno and cubic",
                })?;
            Ok(ClassParams {
                weight: c.weight,
                ecn_k: c.ecn_threshold.0,
                init_cwnd: c.init_cwnd.0,
                buffer: c.buffer.map(|b| b.0),
                cca,
            })
        })
        .collect()
}

/// Each flow's class index in input class order; checks hosts against the topology.
pub(crate) fn flow_classes(input: &ModelInput) -> Result<Vec<u8>, ModelError> {
    classes_of(&input.topology, &input.classes, &input.workload.flows)
}

/// Checks `workload` against what every model takes on `topology` with `classes` (objective
/// order): each flow's class is one of them, its hosts exist, its size and start are within
/// the models' limits ([`MAX_FLOW_BYTES`], [`MAX_START_NS`]). Every model call runs these
/// checks; a front end that holds a fixed workload (a trace) runs them once, at load, rather
/// than failing every proposal on it.
pub fn check_workload(topology: &Topology, classes: &[Dscp], workload: &Workload) -> Result<(), ModelError> {
    classes_of(topology, classes, &workload.flows).map(|_| ())
}

fn classes_of(topo: &Topology, classes: &[Dscp], flows: &[polyphony_spec::Flow]) -> Result<Vec<u8>, ModelError> {
    let mut lut = [u8::MAX; 64];
    for (i, &d) in classes.iter().enumerate() {
        lut[d.value() as usize] = i as u8;
    }
    flows
        .iter()
        .map(|f| {
            let ci = lut[f.dscp.value() as usize];
            if ci == u8::MAX {
                return Err(ModelError::UnknownClass {
                    flow: f.id.0,
                    dscp: f.dscp,
                });
            }
            topo.check_host(f.id.0, f.src)?;
            topo.check_host(f.id.0, f.dst)?;
            if f.size.0 > MAX_FLOW_BYTES {
                return Err(ModelError::invalid(
                    format!("flow {}.size", f.id.0),
                    f.size,
                    format!("the models handle flows up to {MAX_FLOW_BYTES} bytes"),
                ));
            }
            if f.start.0 > MAX_START_NS {
                return Err(ModelError::invalid(
                    format!("flow {}.start", f.id.0),
                    f.start,
                    "start times are relative to the workload's start; rebase the trace",
                ));
            }
            Ok(ci)
        })
        .collect()
}

/// Turns per-flow FCTs (`None` = unfinished when the model stopped at `end`) into the output.
/// `ideals` holds each flow's ideal FCT when the caller already has them.
pub(crate) fn finish(
    input: &ModelInput,
    fct: &[Option<Nanos>],
    ideals: Option<&[Nanos]>,
    end: Nanos,
    mut stats: RunStats,
) -> ModelOutput {
    let topo = &input.topology;
    let mut outcomes = Vec::with_capacity(fct.len());
    for (k, (f, t)) in input.workload.flows.iter().zip(fct).enumerate() {
        if !input.measured(f.start) {
            continue;
        }
        stats.measured += 1;
        let fct = match t {
            Some(t) => *t,
            None => {
                stats.unfinished += 1;
                end.saturating_sub(f.start)
            }
        };
        outcomes.push(FlowOutcome {
            id: f.id,
            dscp: f.dscp,
            size: f.size,
            start: f.start,
            fct,
            ideal: ideals.map_or_else(|| topo.ideal(f.src, f.dst).of(f.size), |v| v[k]),
            query: f.query,
        });
    }
    stats.flows = input.workload.flows.len() as u64;
    stats.sim_time = end;
    let sli = SliVector::from_outcomes(&outcomes, &input.classes);
    ModelOutput {
        sli,
        flows: input.keep_flows.then_some(outcomes),
        stats,
    }
}

/// The output for per-flow FCTs measured elsewhere (an external simulator replaying the same
/// workload, e.g. ns-3), computed exactly as the models compute theirs: the same ideal FCT,
/// measurement window and treatment of unfinished flows (`None`: counted with the time from
/// its start to `end`). `fct` is in workload order.
pub fn output_from_fcts(input: &ModelInput, fct: &[Option<Nanos>], end: Nanos) -> ModelOutput {
    finish(input, fct, None, end, RunStats::default())
}
