//! Root end-to-end: the daemon in apply mode against the namespace testbed — SLIs measured by
//! `emu` with real TCP flows, the configuration applied by the tc and iproute actuators —
//! starting from a deliberately poor configuration at medium tightness. Checks that every
//! iteration measures all classes and leaves the chosen configuration in force on the testbed
//! (the actuators' live plan towards it is empty), and that `kill -9` mid-run followed by a
//! restart resumes with exactly the admitted samples and the configuration in force. The
//! per-iteration objective and ratios are printed (the numbers of the run).
//!
//! Needs root (namespaces, tc, BPF); prints "skipped: needs root" otherwise. Uses the testbed
//! prefix `ppd` and tears it down even when an assertion fails.

mod common;

use common::*;
use polyphony::actuation;
use polyphony::config::DaemonConfig;
use polyphony_actuator::Actuator;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const PREFIX: &str = "ppd";

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

fn config(state: &Path) -> String {
    format!(
        r#"mode = "apply"
interval_s = 0.5
state_dir = "{state}"

[controller]
seed = 11
acq_random_candidates = 24
acq_refine_starts = 1
acq_max_iters = 8
gp_max_eval = 25

{CLASSES_AND_TOPOLOGY}
# Deliberately poor: the tightest class gets the smallest share, tiny initial windows, deep ECN thresholds.
[initial]
classes = [
  {{ dscp = 10, weight = 0.1, ecn_threshold = 300000, init_cwnd = 2 }},
  {{ dscp = 18, weight = 0.45, ecn_threshold = 300000, init_cwnd = 2 }},
  {{ dscp = 26, weight = 0.45, ecn_threshold = 300000, init_cwnd = 2 }},
]

[sli]
source = "emu"
prefix = "{PREFIX}"

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
        scenario = scenario().display(),
        CLASSES_AND_TOPOLOGY = CLASSES_AND_TOPOLOGY,
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

#[test]
fn daemon_on_the_testbed_applies_measures_and_survives_kill_9() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    // Leftovers of an earlier crashed run go first; the guard removes ours at the end.
    drop(TestbedGuard);
    let guard = TestbedGuard;
    let up = Command::new(BIN)
        .args(["testbed", "up", "--prefix", PREFIX, "--scenario"])
        .arg(scenario())
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
    std::fs::write(&cfg, config(&state_dir)).unwrap();

    let (mut d, _addr) = start_daemon(&cfg, &[]);
    let s = poll(Duration::from_secs(600), || {
        read_state(&state_dir).filter(|s| s["iteration"].as_u64().unwrap_or(0) >= 3)
    })
    .expect("three iterations on the testbed did not complete");
    d.signal(libc::SIGKILL);
    assert_eq!(d.wait(Duration::from_secs(10)), None);
    let before = read_state(&state_dir).unwrap();
    let it = before["iteration"].as_u64().unwrap();
    assert!(it >= s["iteration"].as_u64().unwrap());
    for r in before["history"].as_array().unwrap() {
        let ratios: Vec<f64> = r["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["ratio"].as_f64().unwrap())
            .collect();
        eprintln!(
            "testbed iteration {}: J = {:.3}, ratios {:?}, action {}, next {}",
            r["iteration"],
            r["g"].as_f64().unwrap(),
            ratios,
            r["action"],
            r["next_config"]
        );
        assert_eq!(ratios.len(), 3, "a class was not measured: {r}");
        assert!(ratios.iter().all(|x| x.is_finite() && *x > 0.0), "{r}");
    }
    // Right after the kill the testbed may hold a half-applied plan (the kill can land between
    // two tc commands); the restart must bring it back to the configuration in force.
    // Restart: exactly the admitted samples and the configuration in force come back.
    let slow = config(&state_dir).replace("interval_s = 0.5", "interval_s = 5.0");
    std::fs::write(&cfg, slow).unwrap();
    let (mut d2, addr) = start_daemon(&cfg, &["--max-iterations", "1"]);
    let (_, samples) = http(&addr, "GET", "/v1/samples", &[], "");
    let samples: serde_json::Value = serde_json::from_str(&samples).unwrap();
    assert_eq!(
        samples,
        before.pointer("/controller/state/samples/samples").cloned().unwrap()
    );
    assert_eq!(d2.wait(Duration::from_secs(600)), Some(0));
    let after = read_state(&state_dir).unwrap();
    assert_eq!(after["iteration"].as_u64(), Some(it + 1));
    let first_new = after["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["iteration"].as_u64() == Some(it + 1))
        .unwrap();
    assert_eq!(first_new["measured_config"], before["config_in_force"]);
    eprintln!("after restart: iteration {} J = {}", it + 1, first_new["g"]);
    if let Err(plan) = holds(&cfg, &after["config_in_force"]) {
        panic!("after the restart the testbed does not hold the configuration in force:\n{plan}");
    }
    drop(guard);
}
