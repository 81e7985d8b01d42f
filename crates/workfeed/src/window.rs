//! Time-windowed workload: captured flows → the model's [`Workload`] plus per-class summaries.
//!
//! A window `[from, to)` (Unix ns) holds the flows whose connection opened in it. Flow starts are
//! made relative to `from`; hosts come from a [`HostMap`]; each flow keeps its sampling weight.
//! Flows whose class nothing reported tells ([`CapturedFlow::class`] is `None`) are left out and
//! counted, like flows between two addresses of one host.
//! Per class (DSCP): weighted flow count, arrival rate, bytes, offered load over the window, and
//! the weighted size distribution (quantiles). Pure.

use crate::collector::CapturedFlow;
use crate::hosts::HostMap;
use polyphony_spec::{BitsPerSec, Bytes, Dscp, Flow, FlowId, Nanos, SpecError, Workload};

/// Summary of one traffic class over a window (all quantities weighted).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSummary {
    /// The class.
    pub dscp: Dscp,
    /// Records behind the summary (unweighted).
    pub records: usize,
    /// Estimated number of flows (Σ weights).
    pub flows: f64,
    /// Estimated arrivals per second.
    pub arrival_rate_per_s: f64,
    /// Estimated payload bytes (Σ weight·size).
    pub bytes: f64,
    /// Estimated offered load over the window.
    pub load: BitsPerSec,
    /// Weighted mean flow size, bytes.
    pub mean_size: f64,
    /// Weighted size quantiles at [`QUANTILES`].
    pub size_quantiles: Vec<Bytes>,
}

/// The quantiles reported in [`ClassSummary::size_quantiles`].
pub const QUANTILES: [f64; 6] = [0.1, 0.25, 0.5, 0.9, 0.99, 1.0];

/// A window of captured workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadWindow {
    /// Window start, Unix ns.
    pub from: Nanos,
    /// Window end, Unix ns.
    pub to: Nanos,
    /// The flows as the model consumes them (starts relative to `from`, ids in start order).
    pub workload: Workload,
    /// The captured flows behind `workload.flows`, index for index.
    pub captured: Vec<CapturedFlow>,
    /// Per-class summaries, by DSCP.
    pub classes: Vec<ClassSummary>,
    /// Flows left out because both endpoints map to one host.
    pub same_host: usize,
    /// Flows left out because nothing reported tells their class (only the receiver's socket
    /// was reported, and it is unmarked).
    pub unclassified: usize,
    /// Flows in `captured` only one of whose sockets was reported.
    pub one_sided: usize,
}

impl WorkloadWindow {
    /// Builds the window from flows sorted by start (as [`crate::Collector::flows_between`]
    /// returns them).
    pub fn build(
        from: Nanos,
        to: Nanos,
        flows: Vec<CapturedFlow>,
        hosts: &HostMap,
    ) -> Result<WorkloadWindow, SpecError> {
        let mut captured = Vec::with_capacity(flows.len());
        let mut model = Vec::with_capacity(flows.len());
        let (mut same_host, mut unclassified) = (0, 0);
        for f in flows {
            let (src, dst) = (hosts.host(*f.src.ip()), hosts.host(*f.dst.ip()));
            if src == dst {
                same_host += 1;
                continue;
            }
            let Some(dscp) = f.class() else {
                unclassified += 1;
                continue;
            };
            model.push(Flow {
                id: FlowId(model.len() as u64),
                src,
                dst,
                dscp,
                size: f.size,
                start: f.start.saturating_sub(from),
                weight: f.weight,
                query: None,
            });
            captured.push(f);
        }
        let span = to.saturating_sub(from);
        let workload = Workload::new(model, span)?;
        let classes = summarise(&captured, span);
        let one_sided = captured.iter().filter(|f| !f.both_sides).count();
        Ok(WorkloadWindow {
            from,
            to,
            workload,
            captured,
            classes,
            same_host,
            unclassified,
            one_sided,
        })
    }

    /// The summary of one class, if it had flows.
    pub fn class(&self, dscp: Dscp) -> Option<&ClassSummary> {
        self.classes.iter().find(|c| c.dscp == dscp)
    }
}

fn summarise(flows: &[CapturedFlow], span: Nanos) -> Vec<ClassSummary> {
    let mut dscps: Vec<Dscp> = flows.iter().map(|f| f.dscp).collect();
    dscps.sort_unstable();
    dscps.dedup();
    let secs = span.as_secs_f64();
    dscps
        .into_iter()
        .map(|dscp| {
            let mut sized: Vec<(u64, f64)> = flows
                .iter()
                .filter(|f| f.dscp == dscp)
                .map(|f| (f.size.0, f.weight))
                .collect();
            sized.sort_unstable_by_key(|&(s, _)| s);
            let n: f64 = sized.iter().map(|&(_, w)| w).sum();
            let bytes: f64 = sized.iter().map(|&(s, w)| s as f64 * w).sum();
            let per_s = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
            ClassSummary {
                dscp,
                records: sized.len(),
                flows: n,
                arrival_rate_per_s: per_s(n),
                bytes,
                load: BitsPerSec(per_s(bytes * 8.0).round() as u64),
                mean_size: if n > 0.0 { bytes / n } else { 0.0 },
                size_quantiles: QUANTILES.iter().map(|&q| weighted_quantile(&sized, n, q)).collect(),
            }
        })
        .collect()
}

/// The smallest size whose cumulative weight reaches `q` of the total.
fn weighted_quantile(sorted: &[(u64, f64)], total: f64, q: f64) -> Bytes {
    let target = q * total;
    let mut acc = 0.0;
    for &(s, w) in sorted {
        acc += w;
        if acc >= target - 1e-9 * total {
            return Bytes(s);
        }
    }
    Bytes(sorted.last().map_or(0, |&(s, _)| s))
}
