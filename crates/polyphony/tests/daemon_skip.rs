//! A skipped interval of the simulated network is followed by a fresh draw of the scenario: the
//! iteration count does not advance on a skip, and the interval's traffic must not be drawn from
//! it, or the same window (and the same missing SLI) would come back every interval.

mod common;

use common::*;
use std::time::Duration;

#[test]
fn a_skipped_interval_is_followed_by_a_fresh_draw() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    // The reference scenario with 2 s intervals and a class so sparse (AF31 at 0.1 % load) that
    // some intervals hold none of its flows: with the test's seeds the second one does.
    let reference = std::fs::read_to_string(scenario()).unwrap();
    let sparse = reference.replace("interval_s = 12.0", "interval_s = 2.0").replace(
        "size_cdf = \"meta-hadoop\"\nload = 0.2",
        "size_cdf = \"meta-hadoop\"\nload = 0.001",
    );
    assert_ne!(sparse, reference.replace("interval_s = 12.0", "interval_s = 2.0"));
    let sparse_path = dir.path().join("sparse.toml");
    std::fs::write(&sparse_path, sparse).unwrap();
    let cfg = dir.path().join("daemon.toml");
    let text = simulated_config(&state_dir, "apply", 0.05, "")
        .replace(&scenario().display().to_string(), &sparse_path.display().to_string());
    std::fs::write(&cfg, text).unwrap();

    let (mut d, _addr) = start_daemon(&cfg, &["--max-iterations", "6"]);
    assert_eq!(
        d.wait(Duration::from_secs(600)),
        Some(0),
        "the daemon did not finish its 6 intervals"
    );
    let s = read_state(&state_dir).expect("state file");
    let (iteration, skipped, intervals) = (
        s["iteration"].as_u64().unwrap(),
        s["skipped_intervals"].as_u64().unwrap(),
        s["intervals"].as_u64().unwrap(),
    );
    assert!(skipped >= 1, "no interval was skipped, so this tests nothing: {s}");
    assert_eq!(intervals, iteration + skipped, "every interval is counted once: {s}");
    let history = s["history"].as_array().unwrap();
    assert_eq!(s["last_skip"]["reason"].as_str(), Some("missing_sli"), "{s}");
    // Iterations continue after the skip(s): with the same draw repeated, the count would stay
    // where the first skip left it.
    assert!(
        iteration >= 2 && history.len() as u64 == iteration,
        "iteration {iteration} after {skipped} skipped of 6 intervals: {s}"
    );
}
