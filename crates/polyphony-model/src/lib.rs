//! Network models behind one trait: `flowsim` (fast flow-level, the controller's f) and
//! `pktsim` (packet-level: the embedded "live" network and the accuracy reference), workload
//! synthesis from published flow-size CDFs, topologies with ECMP routing, and a one-call
//! `simulate` for the CLI.
//!
//! * [`NetworkModel`] — `evaluate(&ModelInput, &[NetworkConfig]) -> Vec<Result<ModelOutput, _>>`.
//! * [`PktSim`] / [`FlowSim`] — the two models; [`Corrected`] is flowsim times a learned
//!   per-class correction (the controller's default).
//! * [`Topology`] — [`Topology::dumbbell`], [`Topology::leaf_spine`], [`Topology::from_spec`].
//! * [`SizeCdf`], [`synthesize`] — workloads from `models/cdf/*.cdf`.
//! * [`simulate`] — a scenario's per-class SLIs under a configuration with either model;
//!   [`ModelKind`] names the models.
//! * [`Traffic`], [`SimulatedNetwork`], [`WindowModel`] — a scenario interval by interval, the
//!   in-process "live" network, and a model as the controller's `PerformanceModel`.
//!
//! The crate reads no file and no clock: CDFs are compiled in or passed by the caller.
#![warn(missing_docs)]

mod cdf;
pub mod correction;
mod error;
pub mod flowsim;
mod model;
pub mod pktsim;
mod simulate;
mod synth;
mod topology;
pub mod validation;
mod window;

pub use cdf::SizeCdf;
pub use correction::{Corrected, Correction};
pub use error::ModelError;
pub use flowsim::{FlowSim, FlowSimOptions};
pub use model::{
    check_workload, output_from_fcts, ModelInput, ModelOutput, NetworkModel, RunStats, MAX_CLASSES, MAX_FLOW_BYTES,
    MAX_START_NS,
};
pub use pktsim::{FirstSegment, Marking, PktSim, PktSimOptions};
pub use simulate::{
    default_config, poor_config, scale_scenario, scenario_input, scenario_trace, simulate, three_class_scenario,
    trace_input, ModelKind, SimulateReport, SimulateRequest, SpaceError,
};
pub use synth::{load_at, mix_cdfs, synthesize, Locality, SynthesisOptions, TrafficMatrix};
pub use topology::{Link, Path, Shape, Topology, HEADER_BYTES, MAX_HOPS, MSS};
pub use window::{pool, Clock, Measurement, ModelContext, SimulatedNetwork, Traffic, WindowModel};
