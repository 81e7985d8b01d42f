//! The daemon's Prometheus metrics (prometheus-client), served on `/metrics`.
//!
//! Names (all prefixed `polyphony_`; the Grafana dashboard in `dashboards/` uses exactly these):
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `class_sli` | class, dscp | measured SLI of the last interval (p99 slowdown; p99 QCT in µs for a `qct_p99` SLO) |
//! | `class_slo` | class, dscp | the SLO threshold |
//! | `class_ratio` | class, dscp | SLI / SLO (≤ 1 is compliant) |
//! | `class_slo_met` | class, dscp | 1 when the class met its SLO in the last interval |
//! | `class_sli_model` | class, dscp | the model's SLI at the configuration measured, on the same window's flows (uncalibrated; NaN without one) |
//! | `class_model_calibration` | class, dscp | the controller's calibration of the model at the configuration it proposed: measured ratio ≈ this × the model's (NaN while it has none) |
//! | `all_slos_met` | | 1 when every class did |
//! | `objective_measured` | | g: the objective J of the measured ratios |
//! | `objective_predicted` | | ĝ at the configuration chosen next |
//! | `objective_predicted_sigma` | | σ of that prediction (of ln J with the default log residual) |
//! | `knob` | knob, class, kind | every knob's value in force, physical units |
//! | `iterations_total` | | control iterations completed |
//! | `iteration_seconds` | | histogram of whole-iteration wall time |
//! | `model_seconds` | | histogram of time spent in the network model per iteration |
//! | `gp_samples` | | samples the residual GP holds |
//! | `regime_shifts_total` | | regime shifts detected |
//! | `actuator_errors_total` | | actuator failures |
//! | `rollbacks_total` | | returns to the last known good configuration |
//! | `held_total` | | intervals in which the controller could not propose and the configuration in force was held |
//! | `iteration_failures_total` | | iterations that failed outright (an SLI source unreachable, state not saved, ...) |
//! | `workload_flows` | class, dscp | flows in the workload window |
//! | `workload_offered_mbps` | class, dscp | offered load of the window |
//! | `mode_apply` | | 1 in apply mode, 0 in advise mode |
//! | `stood_aside` | device, knob | 1 for each setting found changed by hand on a device the daemon stands aside from |
//! | `skipped_intervals_total` | reason | intervals with nothing to measure or model (`empty_window`, `class_without_flows`, `missing_sli`) |
//! | `workfeed_window_left_out` | reason | captured flows left out of the last Workfeed window (`unmapped_host`, `unknown_class`, `same_host`, `unclassified`) |
//! | `workfeed_aggregator_*` | | the embedded Workfeed aggregator's counters (docs/workfeed.md), when `[workload] source = "workfeed"` |
//! | `workfeed_aggregator_restarts_total` | | restarts of that aggregator's receive loop after a socket error (backoff 1 s doubling to 60 s) |
//!
//! This module holds no I/O besides rendering text.

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// Labels of a per-class series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabels {
    /// Class name.
    pub class: String,
    /// DSCP as a decimal string.
    pub dscp: String,
}

/// Labels of a knob series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KnobLabels {
    /// `AF11.weight`, `AF11.ecn_threshold`, ...
    pub knob: String,
    /// Class name.
    pub class: String,
    /// `weight`, `ecn_threshold_bytes`, `init_cwnd_packets`, `buffer_bytes`.
    pub kind: String,
}

/// Labels of a setting the daemon stands aside from.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StoodAsideLabels {
    /// The actuator.
    pub device: String,
    /// The setting, as the actuator names it.
    pub knob: String,
}

/// Labels of a reason-counted series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    /// Why.
    pub reason: String,
}

type FGauge = Gauge<f64, AtomicU64>;

/// Every metric the daemon exports.
pub struct Metrics {
    registry: Registry,
    /// Per-class SLI.
    pub class_sli: Family<ClassLabels, FGauge>,
    /// Per-class SLO.
    pub class_slo: Family<ClassLabels, FGauge>,
    /// Per-class ratio.
    pub class_ratio: Family<ClassLabels, FGauge>,
    /// Per-class compliance (0/1).
    pub class_slo_met: Family<ClassLabels, FGauge>,
    /// Per-class model SLI at the configuration measured.
    pub class_sli_model: Family<ClassLabels, FGauge>,
    /// Per-class calibration factor of the model.
    pub class_model_calibration: Family<ClassLabels, FGauge>,
    /// All SLOs met (0/1).
    pub all_slos_met: FGauge,
    /// Measured g.
    pub objective_measured: FGauge,
    /// Predicted ĝ.
    pub objective_predicted: FGauge,
    /// σ of ĝ.
    pub objective_predicted_sigma: FGauge,
    /// Knob values.
    pub knob: Family<KnobLabels, FGauge>,
    /// Iterations.
    pub iterations: Counter,
    /// Iteration latency.
    pub iteration_seconds: Histogram,
    /// Model latency.
    pub model_seconds: Histogram,
    /// GP sample count.
    pub gp_samples: FGauge,
    /// Regime shifts.
    pub regime_shifts: Counter,
    /// Actuator errors.
    pub actuator_errors: Counter,
    /// Rollbacks.
    pub rollbacks: Counter,
    /// Intervals held for want of a proposal.
    pub held: Counter,
    /// Iterations that failed.
    pub iteration_failures: Counter,
    /// Workload flows per class.
    pub workload_flows: Family<ClassLabels, FGauge>,
    /// Workload offered load per class.
    pub workload_offered_mbps: Family<ClassLabels, FGauge>,
    /// Mode (1 = apply).
    pub mode_apply: FGauge,
    /// Skipped intervals by reason.
    pub skipped_intervals: Family<ReasonLabels, Counter>,
    /// Flows left out of the last Workfeed window, by reason.
    pub workfeed_left_out: Family<ReasonLabels, FGauge>,
    /// Settings changed by hand that the daemon stands aside from (1 each).
    pub stood_aside: Family<StoodAsideLabels, FGauge>,
}

/// Registers each `field: "help"` of `owner` in `r` under the field's name.
macro_rules! register_fields {
    ($r:expr, $owner:expr; $($field:ident: $help:literal,)*) => {
        $($r.register(stringify!($field), $help, $owner.$field.clone());)*
    };
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Metrics {
        let mut m = Metrics {
            registry: Registry::with_prefix("polyphony"),
            class_sli: Family::default(),
            class_slo: Family::default(),
            class_ratio: Family::default(),
            class_slo_met: Family::default(),
            class_sli_model: Family::default(),
            class_model_calibration: Family::default(),
            all_slos_met: FGauge::default(),
            objective_measured: FGauge::default(),
            objective_predicted: FGauge::default(),
            objective_predicted_sigma: FGauge::default(),
            knob: Family::default(),
            iterations: Counter::default(),
            iteration_seconds: Histogram::new(exponential_buckets(0.01, 2.0, 14)),
            model_seconds: Histogram::new(exponential_buckets(0.01, 2.0, 14)),
            gp_samples: FGauge::default(),
            regime_shifts: Counter::default(),
            actuator_errors: Counter::default(),
            rollbacks: Counter::default(),
            held: Counter::default(),
            iteration_failures: Counter::default(),
            workload_flows: Family::default(),
            workload_offered_mbps: Family::default(),
            mode_apply: FGauge::default(),
            skipped_intervals: Family::default(),
            workfeed_left_out: Family::default(),
            stood_aside: Family::default(),
        };
        let r = &mut m.registry;
        register_fields! { r, m;
            class_sli: "Measured SLI per class (SLO percentile of FCT slowdown, or p99 QCT in µs for a qct_p99 SLO)",
            class_slo: "SLO threshold on the slowdown per class",
            class_ratio: "SLI over SLO per class; at most 1 is compliant",
            class_slo_met: "1 when the class met its SLO last interval",
            class_sli_model: "The model's SLI per class at the configuration measured, on the same window's flows, before calibration (NaN without one)",
            class_model_calibration: "The controller's per-class calibration of the model at the configuration it proposed: the measured ratio is about this many times the model's (NaN while it has none)",
            all_slos_met: "1 when every class met its SLO last interval",
            objective_measured: "Measured objective g = J(ratios)",
            objective_predicted: "Predicted objective g-hat at the configuration chosen next",
            objective_predicted_sigma: "Standard deviation of the residual's prediction: objective units, or of ln J with the log residual (the default)",
            knob: "Knob values in force, physical units",
            iterations: "Control iterations completed",
            iteration_seconds: "Wall time of one control iteration",
            model_seconds: "Wall time spent in the network model in one iteration",
            gp_samples: "Samples held by the residual GP",
            regime_shifts: "Regime shifts detected",
            actuator_errors: "Actuator failures",
            rollbacks: "Returns to the last known good configuration",
            held: "Intervals in which the controller could not propose; the configuration in force was held",
            iteration_failures: "Iterations that failed outright (logged as errors)",
            workload_flows: "Flows in the workload window per class",
            workload_offered_mbps: "Offered load of the workload window per class, Mbit/s",
            mode_apply: "1 in apply mode, 0 in advise mode",
            skipped_intervals: "Intervals with nothing to measure or model, by reason",
            stood_aside: "1 for each setting found changed by hand on a device the daemon no longer actuates",
        }
        m
    }

    /// Adds the embedded Workfeed aggregator's counters (`polyphony_workfeed_aggregator_*`) and
    /// the window's left-out flows.
    pub fn register_workfeed(&mut self, aggregator: &workfeed::metrics::AggregatorMetrics, restarts: Counter) {
        aggregator.register(&mut self.registry);
        self.registry.register(
            "workfeed_aggregator_restarts",
            "Restarts of the embedded Workfeed aggregator's receive loop after a socket error or a panic",
            restarts,
        );
        self.registry.register(
            "workfeed_window_left_out",
            "Captured flows left out of the last Workfeed window, by reason",
            self.workfeed_left_out.clone(),
        );
    }

    /// Counts a skipped interval.
    pub fn skipped(&self, reason: &str) {
        self.skipped_intervals
            .get_or_create(&ReasonLabels { reason: reason.into() })
            .inc();
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// Labels of a class.
pub fn class_labels(name: &str, dscp: u8) -> ClassLabels {
    ClassLabels {
        class: name.to_string(),
        dscp: dscp.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_carries_the_documented_names() {
        let m = Metrics::new();
        m.class_ratio.get_or_create(&class_labels("AF11", 10)).set(0.8);
        m.iterations.inc();
        m.iteration_seconds.observe(0.3);
        let text = m.render();
        assert!(
            text.contains("polyphony_class_ratio{class=\"AF11\",dscp=\"10\"} 0.8"),
            "{text}"
        );
        assert!(text.contains("polyphony_iterations_total 1"), "{text}");
        assert!(text.contains("polyphony_iteration_seconds_bucket"), "{text}");
    }

    /// The exposition of a daemon with the Workfeed aggregator's counters registered and a
    /// series in every family (a family appears once it has one).
    fn exported_text() -> String {
        let mut m = Metrics::new();
        let agg = workfeed::metrics::AggregatorMetrics::default();
        m.register_workfeed(&agg, Counter::default());
        let l = class_labels("AF11", 10);
        for f in [
            &m.class_sli,
            &m.class_slo,
            &m.class_ratio,
            &m.class_slo_met,
            &m.class_sli_model,
            &m.class_model_calibration,
            &m.workload_flows,
            &m.workload_offered_mbps,
        ] {
            f.get_or_create(&l).set(1.0);
        }
        m.knob
            .get_or_create(&KnobLabels {
                knob: "AF11.weight".into(),
                class: "AF11".into(),
                kind: "weight".into(),
            })
            .set(0.3);
        m.skipped("empty_window");
        m.stood_aside
            .get_or_create(&StoodAsideLabels {
                device: "tc".into(),
                knob: "AF11 htb class 1:10".into(),
            })
            .set(1.0);
        m.workfeed_left_out
            .get_or_create(&ReasonLabels {
                reason: "unmapped_host".into(),
            })
            .set(1.0);
        agg.rejected("bad_tag");
        agg.dropped("duplicate");
        agg.agent_lost_datagrams
            .get_or_create(&workfeed::metrics::AgentLabel { agent: "7".into() })
            .set(0);
        m.render()
    }

    /// Every `polyphony_*` name in `text`.
    fn names_in(text: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut rest = text;
        while let Some(i) = rest.find("polyphony_") {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            names.push(tail[..end].to_string());
            rest = &tail[end..];
        }
        names
    }

    /// Panics naming `what` and the series when a name is not one the daemon exports.
    fn assert_exported(names: &[String], what: &str) {
        let text = exported_text();
        for n in names {
            let base = ["_bucket", "_sum", "_count", "_total"]
                .iter()
                .find_map(|s| n.strip_suffix(s))
                .unwrap_or(n);
            assert!(
                text.contains(&format!("# TYPE {base} ")),
                "{what} uses {n}, which the daemon does not export"
            );
        }
    }

    /// Every `polyphony_*` series the shipped Grafana dashboard queries is one this daemon
    /// exports.
    #[test]
    fn the_dashboard_uses_only_exported_names() {
        let dash: serde_json::Value =
            serde_json::from_str(include_str!("../../../dashboards/polyphony.json")).expect("dashboard JSON");
        let mut names = Vec::new();
        for p in dash["panels"].as_array().expect("panels") {
            for t in p["targets"].as_array().into_iter().flatten() {
                names.extend(names_in(t["expr"].as_str().unwrap_or("")));
            }
        }
        assert!(names.len() > 15, "{names:?}");
        assert_exported(&names, "the dashboard");
    }

    /// So do the shipped alerting rules (expressions and the series their annotations name):
    /// a rule on a misspelt series would load and never fire.
    #[test]
    fn the_alert_rules_use_only_exported_names() {
        let rules: String = include_str!("../../../dashboards/polyphony-alerts.yml")
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        let names = names_in(&rules);
        for n in [
            "polyphony_held_total",
            "polyphony_iteration_failures_total",
            "polyphony_class_slo_met",
        ] {
            assert!(names.iter().any(|x| x == n), "{n} not in the rules: {names:?}");
        }
        assert_exported(&names, "dashboards/polyphony-alerts.yml");
    }
}
