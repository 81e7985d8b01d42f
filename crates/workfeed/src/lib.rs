//! Workfeed: eBPF flow capture loader, host agent, rack aggregator and workload windows.
//!
//! The pieces, host to controller:
//! - [`loader`]: loads the probe embedded by `workfeed-ebpf` with aya, attaches it to the
//!   raw tracepoints `inet_sock_set_state` and `tcp_destroy_sock`, sets its filters and reads its
//!   ring buffer on tokio.
//! - [`agent`]: turns probe records into [`FlowRecord`]s (wall-clock times), samples
//!   ([`sampling`]), batches and sends them over UDP ([`wire`]).
//! - [`aggregator`]: receives from many agents, de-duplicates and counts loss ([`Collector`]),
//!   forwards upstream, and serves time windows of workload ([`WorkloadWindow`]).
//!
//! Counters for everything dropped are in [`metrics`]; the command line is in [`cli`].
#![warn(missing_docs)]

pub mod agent;
pub mod aggregator;
pub mod cli;
pub mod collector;
pub mod hosts;
pub mod ipfix;
pub mod ipfix_udp;
pub mod jetstream;
pub mod journal;
pub mod loader;
pub mod metrics;
pub mod record;
pub mod sampling;
pub mod seq;
pub mod window;
pub mod wire;

pub use collector::{CapturedFlow, Collector, CollectorConfig, Connection, FlowDirections};
pub use hosts::HostMap;
pub use record::{ConnKey, FlowRecord};
pub use sampling::KeepProbability;
pub use window::{ClassSummary, WorkloadWindow};
