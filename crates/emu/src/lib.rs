//! emu: the per-class TCP workload generator for the namespace testbed (`docs/testbed.md`),
//! after the paper's §7.
//!
//! It replays a [`polyphony_spec::Workload`] (flows with sender index, class, size and start
//! time) open loop on the testbed: one thread per sender namespace (entered with `setns(2)`),
//! a sink in the receiver's namespace, every socket marked with its class's DSCP (`IP_TOS`) and
//! fwmark (`SO_MARK`). It measures every flow's FCT from `connect()` to the receiver's one-byte
//! application ack, divides by [`polyphony_spec::IdealFct`], and reports per-class histograms
//! (prometheus-client), per-interval p50/p99/p99.9 JSON lines and a ground-truth log of every
//! flow. It touches only the namespaces of the instance it is given. The histograms can be
//! served live on `/metrics` ([`MetricsServer`], `--metrics-listen`) for Prometheus to scrape.
#![warn(missing_docs)]

mod cli;
mod error;
mod metrics;
mod metrics_server;
mod record;
mod run;
pub mod sock;

pub use cli::{run_cli, EmuArgs};
pub use error::EmuError;
pub use metrics::{
    slowdown_bucket_bounds, ClassLabels, EmuMetrics, SLOWDOWN_BUCKET_COUNT, SLOWDOWN_BUCKET_FACTOR,
    SLOWDOWN_BUCKET_START,
};
pub use metrics_server::{MetricsServer, METRICS_CONTENT_TYPE};
pub use record::{FlowRecord, IntervalSummary, RunSummary};
pub use run::{run, EmuOutputs, EmuPlan, RunResult, DEFAULT_PORT};
