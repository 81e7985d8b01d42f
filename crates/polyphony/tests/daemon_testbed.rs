//! Root end-to-end (issue 7, must-show 2): the daemon in apply mode against the namespace
//! testbed — SLIs measured by `emu` with real TCP flows, the configuration applied by the tc and
//! iproute actuators — at the calibrated medium tightness (`configs/scenarios/testbed-medium.toml`:
//! SLOs at a fixed multiple of the testbed's near-optimal p99, see its header), starting from the
//! deliberately poor configuration of `polyphony demo`. Checks that
//! * every iteration measures all classes;
//! * `kill -9` mid-run followed by a restart resumes with exactly the admitted samples and the
//!   configuration in force, which the testbed holds again afterwards (the actuators' live plan
//!   towards it is empty);
//! * the objective falls: the mean J of the last three iterations is below half the first J
//!   (the poor start), and the lowest J below a third of it;
//! * the SLOs are met within a bounded number of iterations: every SLO holds in at least one
//!   of the (at most `MAX_ITERATIONS` = 28) iterations. The run stops early once every SLO
//!   held in three consecutive iterations (DESIGN.md's convergence, k = 3); that iteration,
//!   the compliant iterations and the lowest max ratio are printed, not asserted: one 12 s
//!   interval's p99 at a fixed configuration scatters with a CV of 0.14–0.43 per class here,
//!   and even the calibration's best configuration meets all three medium SLOs in only ~6
//!   intervals of 8, so k = 3 is partly luck (reached in 5 of 10 runs). With the core's log
//!   residual and per-class model calibration (session 4) every SLO held in some iteration in
//!   9 of 10 runs (first at iteration 3–14); the one failure sat at the trust region's minimum
//!   radius around a point that missed every SLO, which the core's trust-region restart
//!   (`61294e4`) now re-opens — with it, 3 of 3 runs met every SLO (first at 6, 3, 6). On the
//!   earlier additive residual 2 of 8 runs never did. Every recorded run is in
//!   `docs/testbed-measurements.md` ("The daemon end to end on the testbed").
//!
//! Needs root (namespaces, tc, BPF); prints "skipped: needs root" otherwise. Uses the testbed
//! prefix `ppd` and tears it down even when an assertion fails. About 14 s per iteration, at
//! most ≈ 7.5 min.
//!
//! For re-measuring variants by hand: `PP_TESTBED_INTERVAL_S`, `PP_TESTBED_MAX_ITERATIONS`,
//! `PP_TESTBED_CONTROLLER` (extra `[controller]` lines) and `PP_TESTBED_KEEP` (a path to copy
//! the final state file to).

mod common;

use common::*;
use polyphony::actuation;
use polyphony::config::DaemonConfig;
use polyphony_actuator::Actuator;
use polyphony_spec::Scenario;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const PREFIX: &str = "ppd";
/// Iterations before the `kill -9`.
const KILL_AFTER: u64 = 4;
/// Iterations of the whole run (both daemons) at most, and the bound within which every SLO
/// must hold once; the run stops earlier once three consecutive iterations met every SLO. 28
/// gives the controller room (every SLO first held at iteration 3–18 in session 4's runs) and
/// keeps the test under ≈ 7.5 min.
const MAX_ITERATIONS: u64 = 28;
/// The control interval (s): the scenario's `interval_s` for the daemon.
const INTERVAL_S: f64 = 12.0;
/// The base RTT slowdowns divide by (`testbed::REFERENCE_BASE_RTT`, as in the calibration).
const BASE_RTT_US: f64 = 25.0;

fn testbed_scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/scenarios/testbed-medium.toml")
}

/// The scenario's classes and SLOs, and the dumbbell, as daemon-config TOML.
fn classes_and_topology(sc: &Scenario) -> String {
    let mut t = String::new();
    for c in &sc.classes {
        t.push_str(&format!(
            "[[classes]]\nname = \"{}\"\ndscp = {}\nslo = {{ max_slowdown = {} }}\n\n",
            c.name,
            c.dscp.value(),
            c.slo.threshold()
        ));
    }
    let topo = CLASSES_AND_TOPOLOGY
        .find("[topology]")
        .map_or("", |i| &CLASSES_AND_TOPOLOGY[i..]);
    t.push_str(topo);
    t
}

struct TestbedGuard;

impl Drop for TestbedGuard {
    fn drop(&mut self) {
        let out = Command::new(BIN).args(["testbed", "down", "--prefix", PREFIX]).output();
        if let Ok(o) = out {
            if !o.status.success() {
                eprintln!("testbed down: {}", String::from_utf8_lossy(&o.stderr));
            }
        }
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `PP_TESTBED_<name>` from the environment, for re-measuring variants by hand (the committed
/// values are what CI runs).
fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(format!("PP_TESTBED_{name}"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config(state: &Path, sc: &Scenario, scenario: &Path) -> String {
    let extra = std::env::var("PP_TESTBED_CONTROLLER").unwrap_or_default();
    format!(
        r#"mode = "apply"
interval_s = 0.5
state_dir = "{state}"

[controller]
seed = 11
# A small acquisition budget, as this test always had (debug build). Five runs with the default
# budget came no nearer than J = 1.45-2.61 in their first 10 iterations, but all ran on the
# core's earlier clamped surrogate mean (replaced by a censored one in f19e4aa), so which of
# the two made them worse is not separated (docs/testbed-measurements.md).
acq_random_candidates = 24
acq_refine_starts = 1
acq_max_iters = 8
gp_max_eval = 25
# One 12 s interval's J at a fixed configuration scatters by ~2x on this testbed (per-class p99
# CV 0.14-0.43, docs/testbed-measurements.md); the default 1.5 declares regime shifts on noise
# and re-centres the trust region on whatever was measured last.
regime_factor = 3.0
# Fit the residual GP from the second sample on: on the core's earlier additive residual the
# prior (the mean residual of the poor start, one σ everywhere) scored every candidate alike,
# the last proposal was proposed again and its repeat never admitted (6 identical intervals in
# one run). Kept for the runs recorded since.
gp_min_samples = 2
{extra}

{classes}
# Deliberately poor (polyphony_model::poor_config): the tightest class gets the smallest share,
# tiny initial windows, deep ECN thresholds.
[initial]
classes = [
{initial}]

[sli]
source = "emu"
prefix = "{PREFIX}"
base_rtt_us = {BASE_RTT_US}

[workload]
source = "scenario"
scenario = "{scenario}"

[actuators.tc]
namespace = "{PREFIX}-sw"
device = "rx"
link_rate = 100000000
ecn = "bpf_map"
ecn_map_pin = "/sys/fs/bpf/polyphony/{PREFIX}/ecn_thresh_ns"

[actuators.iproute]
destination = "198.18.100.0/24"
senders = [
  {{ namespace = "{PREFIX}-h0", gateway = "198.18.1.1", device = "eth0" }},
  {{ namespace = "{PREFIX}-h1", gateway = "198.18.2.1", device = "eth0" }},
  {{ namespace = "{PREFIX}-h2", gateway = "198.18.3.1", device = "eth0" }},
]

[http]
listen = "127.0.0.1:0"

[guard]
max_objective = 1000000.0
"#,
        state = state.display(),
        scenario = scenario.display(),
        classes = classes_and_topology(sc),
        initial = polyphony_model::poor_config(sc)
            .classes
            .iter()
            .map(|c| format!(
                "  {{ dscp = {}, weight = {}, ecn_threshold = {}, init_cwnd = {} }},\n",
                c.dscp.value(),
                c.weight,
                c.ecn_threshold.0,
                c.init_cwnd.0
            ))
            .collect::<String>(),
    )
}

/// Whether the testbed holds `config` (the actuators' live plan towards it is empty).
fn holds(cfg: &Path, config: &serde_json::Value) -> Result<(), String> {
    let loaded = DaemonConfig::load(cfg).unwrap();
    let acts = actuation::build(&loaded.config.actuators).unwrap().unwrap();
    let target: polyphony_spec::NetworkConfig = serde_json::from_value(config.clone()).unwrap();
    let plan = acts.plan_live(&target).unwrap();
    if plan.is_empty() {
        Ok(())
    } else {
        Err(plan.to_string())
    }
}

/// The recorded iterations (J, ratios, all met) of a state file, oldest first.
fn iterations(state: &serde_json::Value) -> Vec<(u64, f64, Vec<f64>, bool)> {
    state["history"]
        .as_array()
        .map(|h| {
            h.iter()
                .map(|r| {
                    let ratios = r["classes"]
                        .as_array()
                        .map(|c| c.iter().map(|c| c["ratio"].as_f64().unwrap_or(f64::NAN)).collect())
                        .unwrap_or_default();
                    (
                        r["iteration"].as_u64().unwrap_or(0),
                        r["g"].as_f64().unwrap_or(f64::NAN),
                        ratios,
                        r["all_slos_met"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The first iteration (1-based) that starts three consecutive iterations meeting every SLO.
fn converged_at(its: &[(u64, f64, Vec<f64>, bool)]) -> Option<u64> {
    its.windows(3).find(|w| w.iter().all(|x| x.3)).map(|w| w[0].0)
}

#[test]
fn daemon_on_the_testbed_lowers_the_objective_from_a_poor_start_and_survives_kill_9() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let sc_path = testbed_scenario();
    let sc = Scenario::from_toml(
        &std::fs::read_to_string(&sc_path).unwrap(),
        &sc_path.display().to_string(),
    )
    .expect("configs/scenarios/testbed-medium.toml");
    // Leftovers of an earlier crashed run go first; the guard removes ours at the end.
    drop(TestbedGuard);
    let guard = TestbedGuard;
    let up = Command::new(BIN)
        .args(["testbed", "up", "--prefix", PREFIX, "--scenario"])
        .arg(&sc_path)
        .output()
        .unwrap();
    assert!(
        up.status.success(),
        "testbed up: {}",
        String::from_utf8_lossy(&up.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    let cfg = dir.path().join("daemon.toml");
    // The daemon's scenario: testbed-medium.toml with the test's control interval.
    let interval_s: f64 = env_or("INTERVAL_S", INTERVAL_S);
    let max_iterations: u64 = env_or("MAX_ITERATIONS", MAX_ITERATIONS);
    let text = std::fs::read_to_string(&sc_path).unwrap();
    assert!(
        text.contains("\ninterval_s = 12.0\n"),
        "testbed-medium.toml changed its interval"
    );
    let daemon_sc = dir.path().join("testbed-medium.toml");
    std::fs::write(
        &daemon_sc,
        text.replace("\ninterval_s = 12.0\n", &format!("\ninterval_s = {interval_s:?}\n")),
    )
    .unwrap();
    std::fs::write(&cfg, config(&state_dir, &sc, &daemon_sc)).unwrap();

    // Phase 1: a few iterations from the poor start, then kill -9 (mid-iteration, most likely).
    let (mut d, _addr) = start_daemon(&cfg, &[]);
    let per_iteration = Duration::from_secs_f64(interval_s + 8.0);
    let s = poll(per_iteration * (KILL_AFTER as u32 + 2), || {
        read_state(&state_dir).filter(|s| s["iteration"].as_u64().unwrap_or(0) >= KILL_AFTER)
    })
    .expect("the first iterations on the testbed did not complete");
    d.signal(libc::SIGKILL);
    assert_eq!(d.wait(Duration::from_secs(10)), None);
    let before = read_state(&state_dir).unwrap();
    let it = before["iteration"].as_u64().unwrap();
    assert!(it >= s["iteration"].as_u64().unwrap());

    // Phase 2: the restart resumes with exactly the admitted samples, measures the configuration
    // in force next, and runs until three consecutive compliant iterations or the cap.
    let (mut d2, addr) = start_daemon(&cfg, &[]);
    let (_, samples) = http(&addr, "GET", "/v1/samples", &[], "");
    let samples: serde_json::Value = serde_json::from_str(&samples).unwrap();
    assert_eq!(
        samples,
        before.pointer("/controller/state/samples/samples").cloned().unwrap()
    );
    let last = poll(per_iteration * max_iterations as u32, || {
        read_state(&state_dir).filter(|s| {
            let n = s["iteration"].as_u64().unwrap_or(0);
            n >= max_iterations || (n > it && converged_at(&iterations(s)).is_some())
        })
    })
    .expect("the restarted daemon stopped iterating");
    d2.signal(libc::SIGTERM);
    assert_eq!(d2.wait(Duration::from_secs(60)), Some(0), "SIGTERM: graceful stop");
    let after = read_state(&state_dir).unwrap();
    assert!(after["iteration"].as_u64().unwrap() >= last["iteration"].as_u64().unwrap());
    let first_new = after["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["iteration"].as_u64() == Some(it + 1))
        .expect("the restarted daemon recorded no iteration");
    assert_eq!(first_new["measured_config"], before["config_in_force"]);
    if let Err(plan) = holds(&cfg, &after["config_in_force"]) {
        panic!("after the restart the testbed does not hold the configuration in force:\n{plan}");
    }

    if let Ok(keep) = std::env::var("PP_TESTBED_KEEP") {
        let _ = std::fs::copy(state_dir.join("state.json"), keep);
    }

    // The numbers of the run.
    let its = iterations(&after);
    for r in after["history"].as_array().into_iter().flatten() {
        let knobs: Vec<String> = r["measured_config"]["classes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{:.2}/{:.1}kB/{}",
                    c["weight"].as_f64().unwrap_or(f64::NAN),
                    c["ecn_threshold"].as_f64().unwrap_or(f64::NAN) / 1e3,
                    c["init_cwnd"]
                )
            })
            .collect();
        eprintln!(
            "testbed iteration {} measured weight/K/initcwnd {}; flows {:?}",
            r["iteration"],
            knobs.join(" "),
            r["classes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["measured"]["flows"].as_u64().unwrap_or(0))
                .collect::<Vec<_>>()
        );
    }
    let slos: Vec<f64> = sc.classes.iter().map(|c| c.slo.threshold()).collect();
    eprintln!("testbed-medium SLOs {slos:?}; kill -9 after iteration {it}");
    for (n, j, r, met) in &its {
        eprintln!("testbed iteration {n}: J = {j:.3}, ratios {r:.3?}, all SLOs met: {met}");
        assert_eq!(r.len(), 3, "iteration {n}: a class was not measured");
        assert!(
            r.iter().all(|x| x.is_finite() && *x > 0.0),
            "iteration {n}: ratios {r:?}"
        );
    }
    let js: Vec<f64> = its.iter().map(|x| x.1).collect();
    let first = js[0];
    let min = js.iter().copied().fold(f64::INFINITY, f64::min);
    let tail = &js[js.len().saturating_sub(3)..];
    let tail_mean = tail.iter().sum::<f64>() / tail.len() as f64;
    let conv = converged_at(&its);
    let met: Vec<u64> = its.iter().filter(|x| x.3).map(|x| x.0).collect();
    let best_max_ratio = its
        .iter()
        .map(|x| x.2.iter().copied().fold(0.0, f64::max))
        .fold(f64::INFINITY, f64::min);
    eprintln!(
        "first J = {first:.3}, min J = {min:.3}, mean of the last 3 J = {tail_mean:.3}, \
         iterations = {}, lowest max ratio = {best_max_ratio:.3}, iterations with all SLOs met = \
         {met:?}, first met at {:?}, converged (k = 3) at {conv:?}",
        its.len(),
        met.first()
    );
    assert!(tail_mean < 0.5 * first, "the objective did not fall: {js:?}");
    assert!(min < first / 3.0, "the objective did not fall: {js:?}");
    assert!(
        !met.is_empty(),
        "no iteration of {} met every SLO {slos:?} (lowest max ratio {best_max_ratio:.3}); J per iteration: {js:?}",
        its.len()
    );
    drop(guard);
}
