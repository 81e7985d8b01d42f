//! Issue 4, must-show 1: up → 20 s of the reference workload at 60 % load → every class has a
//! finite p99 slowdown on record (intervals and ground truth written) → down leaves no
//! namespace, pin, cgroup or state behind.

mod testbed_common;
use testbed_common::*;

use emu::{EmuMetrics, EmuOutputs, FlowRecord, IntervalSummary};
use polyphony_spec::Nanos;

const PREFIX: &str = "ppt1";

#[test]
fn reference_workload_end_to_end() {
    if !can_run() {
        return;
    }
    let _s = serial();
    let sc = scenario("reference-medium");
    let guard = Guard(PREFIX.into());
    let tb = testbed::up(&sc, &testbed::TestbedOptions::new(PREFIX)).expect("testbed up");
    // A second `up` is idempotent.
    let tb2 = testbed::up(&sc, &testbed::TestbedOptions::new(PREFIX)).expect("testbed up again");
    assert_eq!(tb2.state.config, tb.state.config);
    assert!(tb.state.base_rtt > Nanos(0) && tb.state.base_rtt < Nanos::MILLI);

    let dir = tempfile::tempdir().expect("tempdir");
    let flows_path = dir.path().join("flows.jsonl");
    let int_path = dir.path().join("intervals.jsonl");
    let metrics = EmuMetrics::new();
    let out = EmuOutputs {
        flows: Some(flows_path.clone()),
        intervals: Some(int_path.clone()),
        metrics: Some(metrics.clone()),
        live: None,
    };
    let wl = workload(&sc, 20.0, 1);
    let r = emu::run(&plan(&tb, 5.0), &wl, Nanos::from_secs_f64(20.0), &out).expect("emu run");
    let s = &r.summary;
    println!("{}", serde_json::to_string(s).unwrap_or_default());
    for c in &sc.classes {
        let sli = s.classes.iter().find(|x| x.dscp == c.dscp).expect("class on record");
        assert!(
            sli.p99.is_finite() && sli.p99 >= 1.0 && sli.flows >= 50,
            "{}: {sli:?}",
            c.name
        );
    }
    assert!(s.finished as f64 >= 0.95 * s.scheduled as f64, "{s:?}");

    // The ground-truth log holds one parsable record per flow, with monotonic timestamps.
    let text = std::fs::read_to_string(&flows_path).expect("flows log");
    let recs: Vec<FlowRecord> = text.lines().map(|l| serde_json::from_str(l).expect("record")).collect();
    assert_eq!(recs.len() as u64, s.finished + s.failed);
    assert!(recs
        .iter()
        .filter_map(|x| Some((x.start_ns, x.end_ns?)))
        .all(|(a, b)| b > a));
    // Every interval line parses; the intervals cover the run.
    let ints: Vec<IntervalSummary> = std::fs::read_to_string(&int_path)
        .expect("intervals")
        .lines()
        .map(|l| serde_json::from_str(l).expect("interval"))
        .collect();
    assert!(ints.len() >= 4, "{} intervals", ints.len());
    assert!(metrics.encode().contains("emu_flow_slowdown_bucket"));
    // The marker saw every class's packets stamped.
    let st = tb.status().expect("status");
    for c in &sc.classes {
        let m = st
            .marker
            .iter()
            .find(|m| m.dscp == c.dscp.value())
            .expect("marker counters");
        assert!(m.packets > 0 && m.unstamped == 0, "{m:?}");
    }

    drop(guard);
    let names = testbed::Names::new(PREFIX).expect("names");
    let left: Vec<String> = testbed::net::list_netns()
        .into_iter()
        .filter(|n| names.owns_ns(n))
        .collect();
    assert!(left.is_empty(), "namespaces left: {left:?}");
    assert!(!std::path::Path::new(&names.pin_dir()).exists(), "BPF pins left");
    {
        // Under the lock up/down change pins under, the root exists only with an instance inside.
        let _lock = testbed::dctcp::lock().expect("testbed lock");
        let root = std::path::Path::new(testbed::names::BPF_ROOT);
        let inside = std::fs::read_dir(root).map_or(0, |d| d.count());
        assert!(!root.exists() || inside > 0, "empty BPF root {root:?} left");
    }
    assert!(!std::path::Path::new(&names.state_file()).exists(), "state file left");
    if let Some(root) = testbed::preflight::cgroup2_mount() {
        assert!(
            !std::path::Path::new(&format!("{root}/polyphony/{PREFIX}")).exists(),
            "cgroup left"
        );
    }
    assert!(testbed::status(PREFIX).is_err());
}
