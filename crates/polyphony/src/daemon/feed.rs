//! The daemon's embedded Workfeed aggregator (`[workload] source = "workfeed"`), and the two
//! things the loop takes from it each interval: the model's workload window and, with
//! `[sli] source = "workfeed"`, per-class slowdowns of the captured flows.
//!
//! Receiving, authenticating, de-duplicating and merging records is the `workfeed` crate's
//! [`Aggregator`]; this module only binds it, serves it on a task, and turns its
//! [`WorkloadWindow`] into what the controller needs:
//!
//! * flows whose endpoints are not both in `workload.hosts`, whose DSCP has no `[[classes]]`
//!   entry, or whose two endpoints map to one host are left out (counted per reason);
//! * the kept flows, renumbered in start order, are the model's [`Workload`];
//! * a kept flow's slowdown is its captured duration (open to close) over the ideal FCT of its
//!   path in the model's topology ([`polyphony_model::Topology::ideal`], docs/models.md),
//!   optionally with a configured base RTT.
//!
//! The receive loop runs under [`super::supervise`]: if the socket fails it is restarted with
//! backoff (1 s doubling to 60 s), logged and counted.
//!
//! Touches: one UDP socket (receive only) on `workload.listen`.

use super::supervise::{supervise, Backoff};
use crate::config::WorkloadSource;
use anyhow::{anyhow, Context, Result};
use polyphony_model::Topology;
use polyphony_spec::{Dscp, Flow, FlowId, FlowOutcome, HostId, Nanos, SliVector, Workload};
use prometheus_client::metrics::counter::Counter;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;
use tracing::info;
use workfeed::aggregator::{Aggregator, AggregatorConfig};
use workfeed::metrics::AggregatorMetrics;
use workfeed::wire::AuthKey;
use workfeed::{CapturedFlow, WorkloadWindow};

/// Closed connections are kept at least this long (the workfeed crate's default).
const MIN_RETENTION: Duration = Duration::from_secs(600);

/// A bound, serving aggregator.
pub struct Feed {
    agg: Aggregator,
    listen: SocketAddr,
    key_file: Option<PathBuf>,
    retention: Duration,
    task: tokio::task::JoinHandle<()>,
    restarts: Counter,
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Feed {
    /// Binds the aggregator of a `[workload] source = "workfeed"` section and starts serving it.
    /// Needs a tokio runtime.
    pub async fn bind(listen: SocketAddr, window_s: f64, key_file: Option<&PathBuf>) -> Result<Feed> {
        let mut cfg = AggregatorConfig::new(listen);
        cfg.key = key_file
            .map(|p| AuthKey::from_file(p))
            .transpose()
            .map_err(|e| anyhow!("workload.key_file: {e}"))?;
        cfg.retention = MIN_RETENTION.max(Duration::from_secs_f64(2.0 * window_s));
        let retention = cfg.retention;
        let agg = Aggregator::bind(cfg, AggregatorMetrics::default())
            .await
            .with_context(|| format!("workload.listen {listen}: cannot listen"))?;
        let addr = agg.local_addr().map_err(|e| anyhow!("{e}"))?;
        if key_file.is_none() {
            info!("Workfeed aggregator accepts untagged datagrams (no workload.key_file; loopback only)");
        }
        info!("Workfeed aggregator listening on udp://{addr}");
        let served = agg.clone();
        let restarts = Counter::default();
        // The receive loop ends only on a socket error; it is restarted with backoff, counted
        // in `polyphony_workfeed_aggregator_restarts_total`, and each restart logged.
        let task = supervise(
            "the Workfeed aggregator's receive loop",
            move || {
                let a = served.clone();
                async move { a.serve(std::future::pending::<()>()).await }
            },
            Backoff::DEFAULT,
            restarts.clone(),
        );
        Ok(Feed {
            agg,
            listen,
            key_file: key_file.cloned(),
            retention,
            task,
            restarts,
        })
    }

    /// Whether this feed serves `source` as it is (same address and key file, and a window
    /// within what it retains), so a reload can keep it.
    pub fn serves(&self, source: &WorkloadSource) -> bool {
        match source {
            WorkloadSource::Workfeed {
                listen,
                window_s,
                key_file,
                ..
            } => {
                *listen == self.listen
                    && key_file.as_ref() == self.key_file.as_ref()
                    && Duration::from_secs_f64(2.0 * window_s) <= self.retention
            }
            _ => false,
        }
    }

    /// The aggregator's counters (datagrams accepted and rejected by reason, records, loss).
    pub fn metrics(&self) -> &AggregatorMetrics {
        self.agg.metrics()
    }

    /// Restarts of the receive loop after a socket error (or a panic).
    pub fn restarts(&self) -> Counter {
        self.restarts.clone()
    }

    /// The flows whose connection opened in the last `window_s` seconds and has closed.
    pub fn window(&self, window_s: f64, hosts: &BTreeMap<Ipv4Addr, u32>, classes: &[Dscp]) -> Result<CapturedWindow> {
        let w = self
            .agg
            .window(Duration::from_secs_f64(window_s))
            .map_err(|e| anyhow!("Workfeed window: {e}"))?;
        CapturedWindow::build(w, hosts, classes)
    }
}

/// Why a captured flow was left out of the model's window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// An endpoint is not in `workload.hosts`.
    pub unmapped_host: usize,
    /// Its DSCP has no `[[classes]]` entry.
    pub unknown_class: usize,
    /// Both endpoints are one host.
    pub same_host: usize,
}

/// One interval's captured flows, as the model and the SLI computation take them.
#[derive(Debug, Clone)]
pub struct CapturedWindow {
    /// The model's window (starts relative to the window's beginning).
    pub workload: Workload,
    /// The captured flows behind `workload.flows`, index for index.
    pub captured: Vec<CapturedFlow>,
    /// Flows left out.
    pub left_out: LeftOut,
}

impl CapturedWindow {
    /// Keeps the flows of `w` both of whose endpoints are mapped (to distinct hosts) and whose
    /// DSCP is a class, renumbered in start order.
    pub fn build(w: WorkloadWindow, hosts: &BTreeMap<Ipv4Addr, u32>, classes: &[Dscp]) -> Result<CapturedWindow> {
        let mut left_out = LeftOut {
            same_host: w.same_host,
            ..LeftOut::default()
        };
        let mut flows = Vec::with_capacity(w.captured.len());
        let mut kept = Vec::with_capacity(w.captured.len());
        for (f, c) in w.workload.flows.iter().zip(w.captured) {
            let (Some(&src), Some(&dst)) = (hosts.get(c.src.ip()), hosts.get(c.dst.ip())) else {
                left_out.unmapped_host += 1;
                continue;
            };
            if !classes.contains(&c.dscp) {
                left_out.unknown_class += 1;
                continue;
            }
            if src == dst {
                left_out.same_host += 1;
                continue;
            }
            flows.push(Flow {
                id: FlowId(flows.len() as u64),
                src: HostId(src),
                dst: HostId(dst),
                ..*f
            });
            kept.push(c);
        }
        let workload = Workload::new(flows, w.workload.duration).map_err(|e| anyhow!("Workfeed window: {e}"))?;
        Ok(CapturedWindow {
            workload,
            captured: kept,
            left_out,
        })
    }

    /// Per-class slowdown statistics of the captured flows: duration (open to close) over the
    /// ideal FCT of the flow's path in `topology` (base RTT replaced by `base_rtt` if given).
    /// Classes with fewer than `min_flows` flows are left out of the result.
    pub fn slis(&self, topology: &Topology, base_rtt: Option<Nanos>, classes: &[Dscp], min_flows: u64) -> SliVector {
        let outcomes: Vec<FlowOutcome> = self
            .workload
            .flows
            .iter()
            .zip(&self.captured)
            .map(|(f, c)| {
                let mut ideal = topology.ideal(f.src, f.dst);
                if let Some(rtt) = base_rtt {
                    ideal.base_rtt = rtt;
                }
                FlowOutcome {
                    id: f.id,
                    dscp: f.dscp,
                    size: f.size,
                    start: f.start,
                    fct: c.end.saturating_sub(c.start),
                    ideal: ideal.of(f.size),
                }
            })
            .collect();
        let mut v = SliVector::from_outcomes(&outcomes, classes);
        v.classes.retain(|c| c.flows >= min_flows);
        v
    }
}
