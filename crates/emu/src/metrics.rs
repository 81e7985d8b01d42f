//! Prometheus metrics of the generator (prometheus-client): per-class histograms of FCT
//! slowdown and FCT, and counters of finished and failed flows. The caller owns the registry
//! and decides how to expose it ([`EmuMetrics::encode`] renders the text format).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// Labels of every emu metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabels {
    /// Class name.
    pub class: String,
    /// DSCP as a decimal string.
    pub dscp: String,
}

type Hist = Family<ClassLabels, Histogram, fn() -> Histogram>;

fn slowdown_hist() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 1.5, 24))
}
fn fct_hist() -> Histogram {
    Histogram::new(exponential_buckets(1e-5, 2.0, 22))
}

/// The generator's metrics.
#[derive(Clone)]
pub struct EmuMetrics {
    registry: std::sync::Arc<Registry>,
    slowdown: Hist,
    fct: Hist,
    finished: Family<ClassLabels, Counter>,
    failed: Family<ClassLabels, Counter>,
}

impl Default for EmuMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl EmuMetrics {
    /// Fresh metrics in their own registry (prefix `emu`).
    pub fn new() -> EmuMetrics {
        let mut reg = Registry::with_prefix("emu");
        let slowdown: Hist = Family::new_with_constructor(slowdown_hist as fn() -> Histogram);
        let fct: Hist = Family::new_with_constructor(fct_hist as fn() -> Histogram);
        let finished = Family::<ClassLabels, Counter>::default();
        let failed = Family::<ClassLabels, Counter>::default();
        reg.register(
            "flow_slowdown",
            "FCT over ideal FCT of finished flows",
            slowdown.clone(),
        );
        reg.register(
            "flow_fct_seconds",
            "Flow completion time, connect() to application ack",
            fct.clone(),
        );
        reg.register("flows_finished", "Flows that completed", finished.clone());
        reg.register("flows_failed", "Flows that failed or timed out", failed.clone());
        EmuMetrics {
            registry: std::sync::Arc::new(reg),
            slowdown,
            fct,
            finished,
            failed,
        }
    }

    pub(crate) fn observe(&self, rec: &crate::FlowRecord) {
        let l = ClassLabels {
            class: rec.class.clone(),
            dscp: rec.dscp.to_string(),
        };
        match (rec.slowdown, rec.fct_ns) {
            (Some(s), Some(f)) => {
                self.slowdown.get_or_create(&l).observe(s);
                self.fct.get_or_create(&l).observe(f as f64 / 1e9);
                self.finished.get_or_create(&l).inc();
            }
            _ => {
                self.failed.get_or_create(&l).inc();
            }
        }
    }

    /// The OpenMetrics text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut s, &self.registry);
        s
    }
}
