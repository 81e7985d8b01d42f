//! The shared vocabulary of Polyphony.
//!
//! Every crate of the workspace speaks in these types at its boundary: physical units as
//! newtypes ([`Bytes`], [`Nanos`], [`BitsPerSec`], [`Packets`]), traffic classes and their
//! objectives ([`TrafficClass`], [`Slo`]), the knob space and a physical network configuration
//! ([`KnobSpace`], [`NetworkConfig`]), flows and workloads ([`Flow`], [`Workload`]), the
//! measured or predicted service-level indicators ([`ClassSli`], [`SliVector`]), the one shared
//! definition of an ideal (unloaded) flow-completion time ([`IdealFct`]), scenarios
//! ([`Scenario`]) and the contract between the controller and a network model
//! ([`PerformanceModel`]).
//!
//! This crate holds data and the rules that make data valid; it performs no I/O. Parsing
//! helpers take strings, so the caller decides where the bytes come from.
#![warn(missing_docs)]

mod class;
mod config;
mod error;
mod flow;
mod knobs;
pub mod objective;
mod predict;
mod scenario;
mod sli;
mod trace;
mod units;

pub use class::{validate_classes, Dscp, Slo, SloKind, TrafficClass};
pub use config::{ClassConfig, CongestionControl, NetworkConfig};
pub use error::{compact_value, SpecError};
pub use flow::{Flow, FlowId, HostId, QueryId, Workload};
pub use knobs::{CategoricalSpec, KnobKind, KnobSpace, KnobSpec, Scale, SimplexSpec};
pub use predict::{ModelError, PerformanceModel};
pub use scenario::{short_number, ClassMix, IncastSpec, LeafSpineSpec, LoadPhase, Scenario, TopologySpec};
pub use sli::{median, percentile, ClassSli, FlowOutcome, IdealFct, QctSli, SliVector};
pub use trace::{FlowTrace, TRACE_MAGIC};
pub use units::{BitsPerSec, Bytes, Nanos, Packets};
