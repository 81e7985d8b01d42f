//! Prometheus metrics of the generator (prometheus-client): per-class histograms of FCT
//! slowdown and FCT, and counters of finished and failed flows. The caller owns the registry
//! and decides how to expose it: [`EmuMetrics::encode`] renders the text format (written by
//! `--metrics-out`), [`crate::MetricsServer`] serves it live (`--metrics-listen`).
//!
//! The slowdown histogram's buckets grow by [`SLOWDOWN_BUCKET_FACTOR`] (1.5×) from 1: a
//! quantile estimated from it (PromQL `histogram_quantile`) is only known to lie within the
//! bucket that holds it, i.e. to within a factor of 1.5.

use polyphony_spec::Dscp;
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

impl ClassLabels {
    fn of(dscp: Dscp, class: &str) -> ClassLabels {
        ClassLabels {
            class: class.to_string(),
            dscp: dscp.to_string(),
        }
    }
}

type Hist = Family<ClassLabels, Histogram, fn() -> Histogram>;

/// Upper bound of the slowdown histogram's first bucket.
pub const SLOWDOWN_BUCKET_START: f64 = 1.0;
/// Ratio of consecutive upper bounds of the slowdown histogram's buckets.
pub const SLOWDOWN_BUCKET_FACTOR: f64 = 1.5;
/// Finite buckets of the slowdown histogram (then `+Inf`).
pub const SLOWDOWN_BUCKET_COUNT: u16 = 24;

/// The finite upper bounds (`le`) of the `emu_flow_slowdown` buckets, ascending:
/// 1, 1.5, 2.25, … (24 of them, the last ≈ 11 223).
pub fn slowdown_bucket_bounds() -> Vec<f64> {
    exponential_buckets(SLOWDOWN_BUCKET_START, SLOWDOWN_BUCKET_FACTOR, SLOWDOWN_BUCKET_COUNT).collect()
}

fn slowdown_hist() -> Histogram {
    Histogram::new(slowdown_bucket_bounds())
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

    /// Creates every class's series at zero, so that a scraper sees each counter and bucket
    /// start from 0 (PromQL `rate()` counts an increase only between two scraped samples; a
    /// series that first appears with its first flows already counted loses them).
    /// [`crate::run`] does this for the plan's classes.
    pub fn declare_classes(&self, classes: &[(Dscp, String)]) {
        for (dscp, name) in classes {
            let l = ClassLabels::of(*dscp, name);
            let _ = self.slowdown.get_or_create(&l);
            let _ = self.fct.get_or_create(&l);
            let _ = self.finished.get_or_create(&l);
            let _ = self.failed.get_or_create(&l);
        }
    }

    /// Counts one flow: a finished flow (slowdown and FCT known) goes into both histograms and
    /// the finished counter, any other into the failed counter. [`crate::run`] calls it as each
    /// flow ends.
    pub fn observe(&self, rec: &crate::FlowRecord) {
        let l = ClassLabels::of(rec.dscp, &rec.class);
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
