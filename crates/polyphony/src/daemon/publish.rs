//! Publishing one iteration: Prometheus metrics and the status snapshot the HTTP API serves.
//! Touches only the shared metrics and snapshot.

use crate::config::{DaemonConfig, Mode};
use crate::http::Snapshot;
use crate::metrics::{class_labels, KnobLabels, Metrics, ReasonLabels};
use crate::state::{IterationRecord, PersistedState};
use polyphony_core::samples::Sample;
use polyphony_core::{Controller, SkipKind};
use polyphony_spec::{NetworkConfig, Workload};

/// Sets every knob gauge to `config`'s values.
pub fn knobs(m: &Metrics, config: &DaemonConfig, in_force: &NetworkConfig) {
    for c in &in_force.classes {
        let name = config
            .classes
            .iter()
            .find(|k| k.dscp == c.dscp)
            .map_or_else(|| c.dscp.name(), |k| k.name.clone());
        let set = |knob: &str, kind: &str, v: f64| {
            m.knob
                .get_or_create(&KnobLabels {
                    knob: format!("{name}.{knob}"),
                    class: name.clone(),
                    kind: kind.to_string(),
                })
                .set(v);
        };
        set("weight", "weight", c.weight);
        set("ecn_threshold", "ecn_threshold_bytes", c.ecn_threshold.0 as f64);
        set("init_cwnd", "init_cwnd_packets", f64::from(c.init_cwnd.0));
        if let Some(b) = c.buffer {
            set("buffer", "buffer_bytes", b.0 as f64);
        }
    }
}

/// Publishes an iteration's numbers.
pub fn iteration(m: &Metrics, config: &DaemonConfig, r: &IterationRecord, workload: &Workload) {
    measured(m, r);
    m.iterations.inc();
    m.iteration_seconds.observe(r.iteration_seconds);
    m.model_seconds.observe(r.model_seconds);
    for c in &config.classes {
        let l = class_labels(&c.name, c.dscp.value());
        let flows = workload
            .flows
            .iter()
            .filter(|f| f.dscp == c.dscp)
            .map(|f| f.weight)
            .sum::<f64>();
        m.workload_flows.get_or_create(&l).set(flows);
        m.workload_offered_mbps
            .get_or_create(&l)
            .set(workload.offered_bps(c.dscp).max(0.0) / 1e6);
    }
}

/// The gauges a process starts with: the last iteration's measurement when it resumes a state
/// (so a restart does not read as J = 0 with every SLO missed), else NaN (nothing measured yet);
/// each skip reason's counter at 0, so its series exists before the first skip.
pub fn start(m: &Metrics, last: Option<&IterationRecord>) {
    match last {
        Some(r) => measured(m, r),
        None => {
            m.all_slos_met.set(f64::NAN);
            m.objective_measured.set(f64::NAN);
            m.objective_predicted.set(f64::NAN);
            m.objective_predicted_sigma.set(f64::NAN);
        }
    }
    for kind in [SkipKind::EmptyWindow, SkipKind::MissingSli, SkipKind::ClassWithoutFlows] {
        let _created = m.skipped_intervals.get_or_create(&ReasonLabels {
            reason: kind.as_str().to_string(),
        });
    }
}

/// The gauges of one iteration's measurement and prediction.
fn measured(m: &Metrics, r: &IterationRecord) {
    for c in &r.classes {
        let l = class_labels(&c.name, c.dscp);
        m.class_sli.get_or_create(&l).set(c.sli);
        m.class_slo.get_or_create(&l).set(c.slo);
        m.class_ratio.get_or_create(&l).set(c.ratio);
        m.class_slo_met
            .get_or_create(&l)
            .set(if c.ratio <= 1.0 { 1.0 } else { 0.0 });
        m.class_sli_model.get_or_create(&l).set(c.predicted.unwrap_or(f64::NAN));
        m.class_model_calibration
            .get_or_create(&l)
            .set(c.model_calibration.unwrap_or(f64::NAN));
    }
    m.all_slos_met.set(if r.all_slos_met { 1.0 } else { 0.0 });
    m.objective_measured.set(r.g);
    m.objective_predicted.set(r.predicted_g);
    m.objective_predicted_sigma.set(r.predicted_sigma);
}

/// Sets the mode gauge.
pub fn mode(m: &Metrics, mode: Mode) {
    m.mode_apply.set(if mode == Mode::Apply { 1.0 } else { 0.0 });
}

/// The snapshot of a persisted state and the controller holding its samples.
pub fn snapshot(state: &PersistedState, mode: Mode, config_path: &str, controller: Option<&Controller>) -> Snapshot {
    let start = state.history.len().saturating_sub(200);
    Snapshot {
        mode: mode.as_str().into(),
        iteration: state.iteration,
        config_in_force: Some(state.config_in_force.clone()),
        last_good: Some(state.last_good.clone()),
        last_good_failed: state.last_good_failed,
        gp_samples: controller.map_or(0, Controller::samples),
        history: state.history[start..].to_vec(),
        samples: controller.map_or(serde_json::Value::Null, admitted_samples),
        config_path: config_path.into(),
        skipped_intervals: state.skipped_intervals,
        last_skip: state.last_skip.clone(),
        stood_aside: state.stood_aside.clone(),
        held: state.held.clone(),
        rollout: None,
        window: None,
    }
}

/// The samples the controller admitted, oldest first, as a JSON array of polyphony-core's
/// `Sample` (the same form the state file holds under `controller.state.samples.samples`).
pub fn admitted_samples(controller: &Controller) -> serde_json::Value {
    let samples: Vec<&Sample> = controller.sample_window().samples().collect();
    serde_json::to_value(samples).unwrap_or(serde_json::Value::Null)
}
