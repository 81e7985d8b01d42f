//! `polyphony demo` on a scenario file measures one interval of that scenario per iteration (its
//! `interval_s`), unless `--measure-s` says otherwise.

mod common;

use common::{scenario, BIN};
use std::process::Command;

/// Runs the demo for one iteration on the reference scenario with `interval_s` replaced;
/// returns its standard output.
fn demo(interval_s: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(scenario()).unwrap();
    assert!(
        text.contains("interval_s = 12.0"),
        "the reference scenario changed its interval"
    );
    let sc = dir.path().join("short.toml");
    std::fs::write(
        &sc,
        text.replace("interval_s = 12.0", &format!("interval_s = {interval_s}")),
    )
    .unwrap();
    let plot = dir.path().join("demo.svg");
    let out = Command::new(BIN)
        .args([
            "demo",
            "-n",
            "1",
            "--scenario",
            sc.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ])
        .args(extra)
        .output()
        .expect("run polyphony");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(plot.exists(), "no plot written");
    stdout
}

#[test]
fn the_demo_measures_the_scenarios_own_interval() {
    let out = demo("0.75", &[]);
    assert!(out.contains("pktsim (0.75 s of traffic per iteration)"), "{out}");
    let out = demo("0.75", &["--measure-s", "0.5"]);
    assert!(out.contains("pktsim (0.5 s of traffic per iteration)"), "{out}");
}
