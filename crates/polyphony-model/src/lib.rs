//! Network models behind one trait: `flowsim` (fast flow-level, the controller's f) and
//! `pktsim` (packet-level: the embedded "live" network and the accuracy reference), workload
//! synthesis from published flow-size CDFs, topologies with ECMP routing, and a one-call
//! `simulate` for the CLI.
//!
//! * [`NetworkModel`] — `evaluate(&ModelInput, &[NetworkConfig]) -> Vec<Result<ModelOutput, _>>`.
//! * [`PktSim`] / [`FlowSim`] — the two models; [`FlowSimOptions::mode`] picks flowsim's
//!   [`FlowSimMode`] (`PerFlow`, the default, or the faster `Aggregate`).
//! * [`Topology`] — [`Topology::dumbbell`], [`Topology::leaf_spine`], [`Topology::from_spec`].
//! * [`SizeCdf`], [`synthesize`] — workloads from `models/cdf/*.cdf`.
//! * [`simulate`] — a scenario's per-class SLIs under a configuration with either model.
#![warn(missing_docs)]

mod cdf;
mod error;
pub mod flowsim;
mod model;
pub mod pktsim;
mod simulate;
mod synth;
mod topology;

pub use cdf::{default_cdf_dir, SizeCdf};
pub use error::ModelError;
pub use flowsim::{FlowSim, FlowSimMode, FlowSimOptions};
pub use model::{ModelInput, ModelOutput, NetworkModel, RunStats, MAX_CLASSES};
pub use pktsim::{Marking, PktSim, PktSimOptions};
pub use simulate::{
    default_config, scale_scenario, scenario_input, simulate, ModelKind, SimulateReport, SimulateRequest,
};
pub use synth::{load_at, load_mix_cdfs, synthesize, Locality, SynthesisOptions, TrafficMatrix};
pub use topology::{Link, Path, Shape, Topology, HEADER_BYTES, MAX_HOPS, MSS};
