//! A fresh daemon with `warmup_intervals = 2` measures two warm-up design points (the initial
//! configuration first) before its first proposal, persists that progress, and a state file
//! written before the daemon had a warm-up (no `warmup` key) resumes without one.

mod common;

use common::*;
use serde_json::Value;
use std::time::Duration;

fn reasons(state: &Value) -> Vec<String> {
    state["history"]
        .as_array()
        .map(|h| {
            h.iter()
                .map(|r| r["reason"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_fresh_daemon_warms_up_then_controls_and_an_older_state_resumes_without_warm_up() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    let cfg = dir.path().join("daemon.toml");
    // A top-level key: before the first table.
    let text = format!(
        "warmup_intervals = 2\n{}",
        simulated_config(&state_dir, "apply", 0.05, "")
    );
    std::fs::write(&cfg, text).unwrap();
    let (mut d, _addr) = start_daemon(&cfg, &["--max-iterations", "3"]);
    assert_eq!(
        d.wait(Duration::from_secs(600)),
        Some(0),
        "the daemon did not finish cleanly"
    );
    let s = read_state(&state_dir).expect("a state file");
    let r = reasons(&s);
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!(r[0], "warm-up 1/2");
    assert!(r[1].starts_with("warm-up 2/2; then: "), "{}", r[1]);
    assert!(!r[2].contains("warm-up"), "{}", r[2]);
    let h = &s["history"];
    // The first window measures the initial configuration; its decision is the next design
    // point, which the second window measures.
    assert_eq!(h[0]["action"], "applied");
    assert_ne!(h[0]["next_config"], h[0]["measured_config"]);
    assert_eq!(h[1]["measured_config"], h[0]["next_config"]);
    assert_eq!(s["warmup"]["done"].as_u64(), Some(2));
    // A record whose decision came from the controller (the last warm-up window's, whose
    // decision is the first proposal, and the control iteration's) holds, per class, the
    // model's SLI at the configuration measured (same window) and the controller's calibration
    // of it; the first warm-up window's, a design point, neither.
    for (i, r) in h.as_array().unwrap().iter().enumerate() {
        for c in r["classes"].as_array().unwrap() {
            let (p, k) = (c["predicted"].as_f64(), c["model_calibration"].as_f64());
            if i == 0 {
                assert!(p.is_none() && k.is_none(), "warm-up record {i}: {c}");
            } else {
                assert!(p.is_some_and(|p| p > 0.0), "record {i}: {c}");
                assert!(k.is_some_and(|k| (0.05..=20.0).contains(&k)), "record {i}: {c}");
            }
        }
    }

    // The same state as an older daemon wrote it: no warm-up progress. It resumes in control.
    let mut old = s.clone();
    old.as_object_mut().unwrap().remove("warmup");
    std::fs::write(state_dir.join("state.json"), old.to_string()).unwrap();
    let (mut d2, _addr) = start_daemon(&cfg, &["--max-iterations", "1"]);
    assert_eq!(
        d2.wait(Duration::from_secs(600)),
        Some(0),
        "the restart did not finish cleanly"
    );
    let after = read_state(&state_dir).unwrap();
    let r = reasons(&after);
    assert_eq!(r.len(), 4, "{r:?}");
    assert!(!r[3].contains("warm-up"), "{}", r[3]);
    assert_eq!(after["warmup"]["plan"].as_array().map(Vec::len), Some(0));
}
