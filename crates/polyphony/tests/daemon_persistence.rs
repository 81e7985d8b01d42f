//! `kill -9` of a running daemon at arbitrary moments, then a restart: the restarted daemon
//! resumes with every sample the controller had admitted, the configuration in force, and the
//! iteration count — read from the state file it wrote atomically.

mod common;

use common::*;
use serde_json::Value;
use std::time::Duration;

fn samples(state: &Value) -> Vec<(u64, String)> {
    state
        .pointer("/controller/state/samples/samples")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| (s["iteration"].as_u64().unwrap_or(u64::MAX), s["g"].to_string()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn kill_9_then_restart_loses_no_admitted_sample() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, simulated_config(&state_dir, "apply", 0.05, "")).unwrap();

    let mut last_iteration = 0;
    // Kill at three different moments: after 2, 3 and 4 more completed iterations, each time
    // plus a different delay so the kill lands in different phases of an iteration.
    for (round, (more, delay_ms)) in [(2u64, 0u64), (1, 137), (1, 401)].into_iter().enumerate() {
        let (mut d, _addr) = start_daemon(&cfg, &[]);
        let target = last_iteration + more;
        poll(Duration::from_secs(600), || {
            read_state(&state_dir).filter(|s| s["iteration"].as_u64().unwrap_or(0) >= target)
        })
        .unwrap_or_else(|| panic!("round {round}: the daemon never reached iteration {target}"));
        std::thread::sleep(Duration::from_millis(delay_ms));
        d.signal(libc::SIGKILL);
        assert_eq!(
            d.wait(Duration::from_secs(10)),
            None,
            "killed by a signal, no exit code"
        );
        // What survived on disk is what the restart must resume from.
        let before = read_state(&state_dir).expect("a state file survives kill -9");
        let it = before["iteration"].as_u64().unwrap();
        assert!(!samples(&before).is_empty(), "round {round}: no sample admitted yet");
        let in_force = before["config_in_force"].clone();

        // Restart (with a long first wait, so the restored state can be inspected before the
        // first new iteration) for exactly one iteration.
        std::fs::write(&cfg, simulated_config(&state_dir, "apply", 3.0, "")).unwrap();
        let (mut d2, addr) = start_daemon(&cfg, &["--max-iterations", "1"]);
        let (code, restored) = http(&addr, "GET", "/v1/samples", &[], "");
        assert_eq!(code, 200);
        let restored: Value = serde_json::from_str(&restored).unwrap();
        assert_eq!(
            restored,
            before.pointer("/controller/state/samples/samples").cloned().unwrap(),
            "round {round}: the restarted controller does not hold exactly the admitted samples"
        );
        let (_, status) = http(&addr, "GET", "/v1/status", &[], "");
        let status: Value = serde_json::from_str(&status).unwrap();
        assert_eq!(
            status["config_in_force"], in_force,
            "round {round}: configuration in force not restored"
        );
        assert_eq!(status["iteration"].as_u64(), Some(it));
        assert_eq!(
            d2.wait(Duration::from_secs(600)),
            Some(0),
            "round {round}: restart did not finish cleanly"
        );
        let after = read_state(&state_dir).unwrap();
        assert_eq!(
            after["iteration"].as_u64(),
            Some(it + 1),
            "round {round}: iteration count not resumed"
        );
        // The restored samples are the controller's; from there its own rules (window, regime
        // shifts) decide what stays. Here only the new iteration's bookkeeping is checked.
        assert!(
            !samples(&after).is_empty(),
            "round {round}: no samples after the restart"
        );
        std::fs::write(&cfg, simulated_config(&state_dir, "apply", 0.05, "")).unwrap();
        let history = after["history"].as_array().unwrap();
        let first_new = history
            .iter()
            .find(|r| r["iteration"].as_u64() == Some(it + 1))
            .unwrap();
        assert_eq!(
            first_new["measured_config"], in_force,
            "round {round}: the restart did not continue with the configuration in force"
        );
        last_iteration = it + 1;
    }
}

/// A truncated state file (a disk error, a hand edit) is an error naming it and its previous
/// good copy, with exit code 2 — the code the systemd unit does not restart on, so no crash
/// loop — and neither file is written over.
#[test]
fn a_truncated_state_file_stops_the_start_naming_it_and_keeping_the_previous_copy() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, simulated_config(&state_dir, "advise", 0.05, "")).unwrap();
    let (mut d, _) = start_daemon(&cfg, &["--max-iterations", "2"]);
    assert_eq!(d.wait(Duration::from_secs(600)), Some(0));
    let file = state_dir.join("state.json");
    let prev = state_dir.join("state.json.prev");
    let good = std::fs::read(&file).unwrap();
    let prev_bytes = std::fs::read(&prev).expect("a previous copy is kept");
    let prev_state: Value = serde_json::from_slice(&prev_bytes).unwrap();
    std::fs::write(&file, &good[..good.len() / 2]).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["daemon", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&file.display().to_string()) && err.contains(&prev.display().to_string()),
        "{err}"
    );
    assert!(err.contains(&format!("iteration {}", prev_state["iteration"])), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), &good[..good.len() / 2]);
    assert_eq!(std::fs::read(&prev).unwrap(), prev_bytes);
    // Following the message resumes.
    std::fs::rename(&prev, &file).unwrap();
    let (mut d, _) = start_daemon(&cfg, &["--max-iterations", "1"]);
    assert_eq!(d.wait(Duration::from_secs(600)), Some(0));
}

#[test]
fn a_changed_slo_threshold_carries_the_controller_over_and_another_sli_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    let cfg = dir.path().join("daemon.toml");
    let text = simulated_config(&state_dir, "advise", 0.05, "");
    std::fs::write(&cfg, &text).unwrap();
    let (mut d, _) = start_daemon(&cfg, &["--max-iterations", "3"]);
    assert_eq!(d.wait(Duration::from_secs(600)), Some(0));
    let state = read_state(&state_dir).expect("state");
    let ratios = |s: &Value| -> Vec<Vec<f64>> {
        s.pointer("/controller/state/samples/samples")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| {
                        x["ratios"]
                            .as_array()
                            .map(|r| r.iter().filter_map(Value::as_f64).collect())
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = ratios(&state);
    assert!(!before.is_empty(), "{state}");

    // AF21's SLO relaxed from 15 to 16: the controller continues, its AF21 ratios × 15/16.
    let changed = dir.path().join("changed.toml");
    std::fs::write(&changed, text.replace("max_slowdown = 15.0", "max_slowdown = 16.0")).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["recommend", "--config"])
        .arg(&changed)
        .arg("--state")
        .arg(&state_dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("AF21 p99 slowdown ≤ 15") && err.contains("→ p99 slowdown ≤ 16"),
        "{err}"
    );
    // The measurement the advice starts from is judged against the new SLO: AF21's r is its
    // SLI over 16, not the ratio recorded under 15.
    let last = state["history"]
        .as_array()
        .and_then(|h| h.last())
        .expect("history")
        .clone();
    let af21 = last["classes"][1]["sli"].as_f64().unwrap();
    let advice = String::from_utf8_lossy(&out.stdout);
    assert!(
        advice.contains(&format!(
            "AF21 {af21:.2} {} r {:.2}",
            if af21 <= 16.0 { "✓" } else { "✗" },
            af21 / 16.0
        )),
        "{advice}"
    );
    let mut d = ChildGuard::spawn(
        std::process::Command::new(BIN)
            .args(["--log", "info", "daemon", "--max-iterations", "4", "--config"])
            .arg(&changed),
    );
    d.wait_line("continues under the new SLOs: AF21", Duration::from_secs(60))
        .expect("the daemon says it retargeted the saved controller");
    assert_eq!(d.wait(Duration::from_secs(600)), Some(0));
    let after = read_state(&state_dir).expect("state");
    let target = after
        .pointer("/controller/objective/targets/1/max_slowdown")
        .and_then(Value::as_f64);
    assert_eq!(target, Some(16.0), "{after}");
    let (old, new) = (&before[0], &ratios(&after)[0]);
    assert_eq!(old.len(), 3);
    assert!((new[1] - old[1] * 15.0 / 16.0).abs() < 1e-9, "{old:?} {new:?}");
    assert_eq!((new[0], new[2]), (old[0], old[2]));

    // AF21 judged at another percentile: its ratios cannot be carried over; refused.
    let other = dir.path().join("other.toml");
    std::fs::write(
        &other,
        text.replace("max_slowdown = 15.0", "percentile = 0.5, max_slowdown = 16.0"),
    )
    .unwrap();
    let saved = std::fs::read(state_dir.join("state.json")).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["daemon", "--max-iterations", "1", "--config"])
        .arg(&other)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for needle in [
        "AF21 (DSCP 18) p50 slowdown ≤ 16",
        "AF21 (DSCP 18) p99 slowdown ≤ 16",
        "only thresholds and weights can change",
        "state.json.prev away",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    assert_eq!(
        std::fs::read(state_dir.join("state.json")).unwrap(),
        saved,
        "nothing written"
    );
}

#[test]
fn a_reload_with_new_slo_thresholds_retargets_the_running_controller() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    let cfg = dir.path().join("daemon.toml");
    let text = simulated_config(&state_dir, "advise", 0.2, "");
    std::fs::write(&cfg, &text).unwrap();
    let (mut d, _) = start_daemon(&cfg, &[]);
    poll(Duration::from_secs(120), || {
        read_state(&state_dir).filter(|s| s["iteration"].as_u64().unwrap_or(0) >= 2)
    })
    .expect("two iterations");
    // AF31's SLO tightened from 20 to 16, and its weight doubled.
    let changed = text
        .replace("max_slowdown = 20.0", "max_slowdown = 16.0")
        .replace("name = \"AF31\"", "name = \"AF31\"\nweight = 2.0");
    assert_ne!(changed, text);
    std::fs::write(&cfg, &changed).unwrap();
    d.signal(libc::SIGHUP);
    let line = d
        .wait_line("continues under the new SLOs", Duration::from_secs(120))
        .expect("the reload retargets the controller");
    assert!(line.contains("AF31 p99 slowdown ≤ 20 → p99 slowdown ≤ 16"), "{line}");
    assert!(line.contains("AF31 weight"), "{line}");
    let target = poll(Duration::from_secs(120), || {
        read_state(&state_dir)
            .and_then(|s| {
                s.pointer("/controller/objective/targets/2/max_slowdown")
                    .and_then(Value::as_f64)
            })
            .filter(|&v| v == 16.0)
    });
    assert_eq!(target, Some(16.0), "the saved controller carries the new SLO");
    // Another percentile for a class is not a threshold: refused, the controller kept.
    std::fs::write(
        &cfg,
        changed.replace("max_slowdown = 16.0", "percentile = 0.5, max_slowdown = 16.0"),
    )
    .unwrap();
    d.signal(libc::SIGHUP);
    let refused = d
        .wait_line("reload refused", Duration::from_secs(120))
        .expect("refused");
    assert!(refused.contains("only thresholds and weights can change"), "{refused}");
    d.signal(libc::SIGTERM);
    assert_eq!(d.wait(Duration::from_secs(300)), Some(0));
}
