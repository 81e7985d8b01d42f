//! Root end-to-end: the product chain an operator runs. A namespace testbed instance `h2wf`; the
//! daemon (advise mode, `[workload]` and `[sli]` from Workfeed, HMAC key file); a real
//! `polyphony workfeed agent` (the eBPF probe, filtered to the instance's host namespaces) sending
//! to the daemon's embedded aggregator; emu replaying real TCP flows of three classes. Checked:
//! the daemon's model window holds every flow emu finished, exactly once, with its exact size,
//! class and host ids; the iteration that follows measured every class from those flows; and the
//! Workfeed slowdowns are printed next to emu's application-level ones (docs/operating.md says
//! how they differ). Skips without root; tears the instance down even when an assertion fails.

mod common;

use common::*;
use polyphony_spec::{Bytes, Dscp, Flow, FlowId, HostId, Nanos, Scenario, Workload};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const PREFIX: &str = "h2wf";
const FLOWS: u64 = 90;
const SPACING_S: f64 = 0.03;
const KEY: &str = "h2-workfeed-capture-key-0123456789abcdef";

/// Tears the instance down when dropped (also on panic).
struct Teardown;

impl Drop for Teardown {
    fn drop(&mut self) {
        if let Err(e) = testbed::down(PREFIX) {
            eprintln!("teardown of {PREFIX} failed: {e}");
        }
    }
}

fn workload() -> Workload {
    let classes = [Dscp::AF11, Dscp::AF21, Dscp::AF31];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let flows = (0..FLOWS)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Flow {
                id: FlowId(i),
                src: HostId((i % 3) as u32),
                dst: HostId(3),
                dscp: classes[((i / 3) % 3) as usize],
                size: Bytes(2_000 + x % 60_000),
                start: Nanos::from_secs_f64(i as f64 * SPACING_S),
                weight: 1.0,
                query: None,
            }
        })
        .collect();
    Workload::new(flows, Nanos::from_secs_f64(FLOWS as f64 * SPACING_S)).expect("workload")
}

#[test]
fn the_daemon_models_the_flows_its_embedded_aggregator_captured() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: needs root");
        return;
    }
    let text = std::fs::read_to_string(scenario()).unwrap();
    let sc = Scenario::from_toml(&text, "reference-medium.toml").unwrap();
    let _ = testbed::down(PREFIX);
    let teardown = Teardown;
    let tb = testbed::up(&sc, &testbed::TestbedOptions::new(PREFIX)).expect("testbed up");

    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("workfeed.key");
    std::fs::write(&key, format!("{KEY}\n")).unwrap();
    let state_dir = dir.path().join("state");
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, workfeed_config(&state_dir, &key, 300.0)).unwrap();
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["--log", "info", "daemon", "--config"]).arg(&cfg);
    let mut daemon = ChildGuard::spawn(&mut cmd);
    let udp = address_after(
        &daemon
            .wait_line("Workfeed aggregator listening on udp://", Duration::from_secs(60))
            .expect("no Workfeed address"),
        "udp://",
    );
    let addr = address_after(
        &daemon
            .wait_line("/metrics on http://", Duration::from_secs(60))
            .expect("no HTTP address"),
        "http://",
    );

    // The agent, as an operator runs it.
    let mut acmd = std::process::Command::new(BIN);
    acmd.args([
        "--log",
        "info",
        "workfeed",
        "agent",
        "--aggregator",
        &udp,
        "--agent-id",
        "21",
    ])
    .args(["--flush-ms", "100", "--key-file"])
    .arg(&key);
    for n in (0..3).map(|i| tb.names.sender(i)).chain([tb.names.receiver()]) {
        acmd.arg("--netns").arg(format!("/run/netns/{n}"));
    }
    let agent = ChildGuard::spawn(&mut acmd);
    agent
        .wait_line("probe attached", Duration::from_secs(60))
        .expect("the Workfeed agent did not attach its probe");

    // Real TCP flows through the testbed.
    let wl = workload();
    let secs = FLOWS as f64 * SPACING_S + 0.5;
    let mut plan = emu::EmuPlan::new(
        tb.state.hosts(),
        tb.state.classes.clone(),
        tb.state.ideal(),
        Nanos::from_secs_f64(secs),
    );
    plan.drain = Nanos::from_secs_f64(3.0);
    let r = emu::run(&plan, &wl, Nanos::from_secs_f64(secs), &emu::EmuOutputs::default()).expect("emu run");
    let truth: Vec<&emu::FlowRecord> = r.records.iter().filter(|x| x.end_ns.is_some()).collect();
    assert!(truth.len() as f64 >= 0.95 * FLOWS as f64, "{:?}", r.summary);
    let sender_of = |a: &str| -> u64 {
        match a {
            "198.18.1.2" => 0,
            "198.18.2.2" => 1,
            "198.18.3.2" => 2,
            other => panic!("unexpected sender address {other}"),
        }
    };
    let mut want: Vec<(u64, u64, u64)> = truth
        .iter()
        .map(|t| (t.size, u64::from(t.dscp.value()), sender_of(&t.src_addr)))
        .collect();
    want.sort_unstable();

    // The daemon's model window: every finished flow, once, exactly.
    let window = poll(Duration::from_secs(120), || {
        let (c, b) = http(&addr, "GET", "/v1/workload", &[], "");
        let w: Value = serde_json::from_str(&b).ok()?;
        (c == 200 && w["flows"].as_u64() == Some(want.len() as u64)).then_some(w)
    })
    .unwrap_or_else(|| {
        let (_, b) = http(&addr, "GET", "/v1/workload", &[], "");
        panic!(
            "the daemon's window never held the {} flows emu finished; last: {}",
            want.len(),
            &b[..b.len().min(600)]
        )
    });
    let mut got: Vec<(u64, u64, u64)> = window["workload"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["dst"], 3, "{f}");
            (
                f["size"].as_u64().unwrap(),
                f["dscp"].as_u64().unwrap(),
                f["src"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort_unstable();
    assert_eq!(got, want, "the window is not exactly the flows emu finished");

    // The next iteration measured every class from those flows.
    let mut per_class: BTreeMap<u64, u64> = BTreeMap::new();
    for (_, d, _) in &want {
        *per_class.entry(*d).or_default() += 1;
    }
    let it = poll(Duration::from_secs(300), || {
        let (_, b) = http(&addr, "GET", "/v1/status", &[], "");
        let s: Value = serde_json::from_str(&b).ok()?;
        let it = s["last_iteration"].clone();
        it["classes"]
            .as_array()
            .is_some_and(|c| {
                c.iter().all(|k| {
                    k["measured"]["flows"].as_u64() == per_class.get(&k["dscp"].as_u64().unwrap_or(0)).copied()
                })
            })
            .then_some(it)
    })
    .expect("no iteration measured the captured flows");
    for k in it["classes"].as_array().unwrap() {
        let d = Dscp::new(k["dscp"].as_u64().unwrap() as u8).unwrap();
        let emu_sli = r.summary.classes.iter().find(|c| c.dscp == d).expect("emu class");
        let m = &k["measured"];
        let (p50, p99) = (m["p50"].as_f64().unwrap(), m["p99"].as_f64().unwrap());
        println!(
            "class {d}: Workfeed slowdown p50 {p50:.2} p99 {p99:.2}; emu (application FCT) p50 {:.2} p99 {:.2}; {} flows",
            emu_sli.p50, emu_sli.p99, emu_sli.flows
        );
        assert!(p50.is_finite() && p50 > 0.5 && p99 >= p50, "{k}");
        // Same flows, two clocks: the medians agree within a factor of two.
        assert!(
            p50 / emu_sli.p50 > 0.5 && p50 / emu_sli.p50 < 2.0,
            "class {d}: Workfeed p50 {p50} vs emu p50 {}",
            emu_sli.p50
        );
    }
    let (_, m) = http(&addr, "GET", "/metrics", &[], "");
    assert!(
        !m.contains("polyphony_workfeed_aggregator_datagrams_rejected_total{"),
        "the agent's tagged datagrams were rejected: {m}"
    );

    drop(agent);
    daemon.signal(libc::SIGTERM);
    assert_eq!(daemon.wait(Duration::from_secs(300)), Some(0));
    drop(teardown);
}
