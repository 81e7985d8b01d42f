//! `polyphony recommend`: advice from a daemon's state (never writing it) and from given samples
//! with a dry run of the shipped testbed actuators.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[test]
fn recommend_from_state_and_from_samples() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, simulated_config(&state_dir, "apply", 0.05, "")).unwrap();
    let (mut d, _) = start_daemon(&cfg, &["--max-iterations", "2"]);
    assert_eq!(d.wait(Duration::from_secs(600)), Some(0));
    let before = std::fs::read(state_dir.join("state.json")).unwrap();

    let out = Command::new(BIN)
        .args(["recommend", "--json", "--config"])
        .arg(&cfg)
        .arg("--state")
        .arg(&state_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let next: polyphony_spec::NetworkConfig = serde_json::from_value(j["config"].clone()).unwrap();
    next.validate().unwrap();
    assert!(j["reason"]["text"].as_str().is_some_and(|t| !t.is_empty()), "{j}");
    assert!(
        j["g_hat"].as_f64().is_some() && j["expected_improvement"].as_f64().is_some(),
        "{j}"
    );
    assert_eq!(j["predicted_slis"]["classes"].as_array().map(Vec::len), Some(3), "{j}");
    // The advice shows what it starts from: the daemon's last measured interval.
    let last = &read_state(&state_dir).unwrap()["history"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        j["measured"]["source"],
        format!("iteration {}", last["iteration"]),
        "{j}"
    );
    assert_eq!(j["measured"]["objective"], last["g"], "{j}");
    assert_eq!(j["measured"]["classes"].as_array().map(Vec::len), Some(3), "{j}");
    // ... under the configuration it was measured under, not the one the daemon applied after it.
    assert_eq!(j["measured"]["config"], last["measured_config"], "{j}");
    // The text shows each class's model SLI and the same times its calibration factor.
    let out = Command::new(BIN)
        .args(["recommend", "--config"])
        .arg(&cfg)
        .arg("--state")
        .arg(&state_dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "measured:    J = {:.3} at iteration {}",
            last["g"].as_f64().unwrap(),
            last["iteration"]
        )),
        "{text}"
    );
    // The configuration in force since then has no measurement yet, and the text says so.
    if last["measured_config"] != last["next_config"] {
        assert!(
            text.contains(&format!(
                "(chosen after iteration {}; not measured yet)",
                last["iteration"]
            )) && text.contains(&format!("at iteration {} under w=", last["iteration"])),
            "{text}"
        );
    } else {
        assert!(text.contains("current:     w="), "{text}");
    }
    let factors = j["model_scale"].as_array().expect("calibration factors").clone();
    for (name, f) in ["AF11", "AF21", "AF31"].iter().zip(&factors) {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"));
        let nums: Vec<f64> = line
            .split(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
            .filter_map(|w| w.parse().ok())
            .collect();
        let (model, factor, expected) = (nums[1], nums[2], nums[3]);
        assert!((factor - f.as_f64().unwrap()).abs() < 0.006, "{line} against {f}");
        assert!((model * factor - expected).abs() <= 0.02 * expected.max(1.0), "{line}");
    }
    assert_eq!(
        std::fs::read(state_dir.join("state.json")).unwrap(),
        before,
        "recommend wrote the state"
    );

    // From samples, with the testbed config's actuators rendered as a dry run.
    let state = read_state(&state_dir).unwrap();
    let mut lines = String::new();
    let mut last = None;
    for r in state["history"].as_array().unwrap() {
        let slis = serde_json::json!({"classes": r["classes"].as_array().unwrap().iter().map(|c| serde_json::json!({
            "dscp": c["dscp"], "flows": 100, "p50": c["sli"], "p99": c["sli"], "p999": c["sli"], "mean": c["sli"]
        })).collect::<Vec<_>>()});
        lines.push_str(&serde_json::json!({"config": r["measured_config"], "slis": slis}).to_string());
        lines.push('\n');
        last = Some(slis);
    }
    std::fs::write(dir.path().join("samples.jsonl"), lines).unwrap();
    // The SLIs just measured: AF11 (SLO 11 in the testbed config) at 1000, far over its objective, which the
    // advice must show rather than only the samples before it.
    let mut now = last.unwrap();
    for k in ["p50", "p99", "p999", "mean"] {
        now["classes"][0][k] = serde_json::json!(1000.0);
    }
    std::fs::write(dir.path().join("slis.json"), now.to_string()).unwrap();
    let testbed_cfg = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/polyphony.toml");
    let out = Command::new(BIN)
        .args(["recommend", "--config"])
        .arg(&testbed_cfg)
        .arg("--samples")
        .arg(dir.path().join("samples.jsonl"))
        .arg("--slis")
        .arg(dir.path().join("slis.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("recommended: w="), "{text}");
    assert!(text.contains("at --slis — AF11 1000.00 ✗ r 90.91"), "{text}");
    assert!(text.contains("dry run (not applied)"), "{text}");
    assert!(text.contains("tc -n pp-sw class change dev rx"), "{text}");

    // A malformed sample line is named, exit 2.
    std::fs::write(dir.path().join("bad.jsonl"), "{\"config\": 3}\n").unwrap();
    let out = Command::new(BIN)
        .args(["recommend", "--config"])
        .arg(&cfg)
        .arg("--samples")
        .arg(dir.path().join("bad.jsonl"))
        .arg("--slis")
        .arg(dir.path().join("slis.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--samples") && err.contains("bad.jsonl:1"), "{err}");
}
