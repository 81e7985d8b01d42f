//! Issue 6, must-show 1: Workfeed against emu's ground truth in the namespace testbed.
//!
//! A testbed instance `ppw1` runs; a Workfeed agent (the real eBPF probe, filtered to the
//! instance's four host namespaces so other tests' traffic on this machine is ignored) sends to a
//! rack aggregator on loopback, which forwards to an upstream aggregator sampling at 1/4. emu
//! replays 600 flows (3 senders, 3 classes, 2–100 kB) and logs each one's ground truth.
//!
//! Checked, with the tolerances stated here:
//! - the probe lost no record for want of room (`open_failed`, `ringbuf_full` are 0), every record
//!   it lost (`untracked_close`: a socket whose open no program saw) is one the kernel counted as
//!   skipped by both the main program and its standby (`missed_events`), and the agent read every
//!   record it wrote; all counters are printed;
//! - every finished emu flow is captured exactly once (one sender→receiver flow per connection,
//!   no flow Workfeed saw that emu did not send), with the exact payload size and the class's DSCP,
//!   and with both its sockets reported — save, flow for flow, those whose record the probe
//!   counted as lost (kept one-sided, or unclassified when the client's record is the one lost);
//! - hosts map to the model's ids (senders 0..2, receiver 3);
//! - duration: Workfeed's SYN→first close vs emu's connect→application ack: per flow at most
//!   1 ms longer save at most 3 flows by at most 10 ms (emu's client descheduled between its end
//!   stamp and its `close()`; see the constants — more, or longer, means a capture or timestamp
//!   bug), and at most
//!   20 ms + 10 % shorter (emu stamps the end when its task wakes, late by up to 8 ms on this
//!   loaded 2-core VM; see the constants) save at most 3 flows whose emu task was descheduled;
//!   and shorter by under 1 ms at the median;
//! - at 1/4 sampling, weighted per-class bytes are within 4 standard errors of the truth, the
//!   standard error being the Horvitz–Thompson one, sqrt((1−p)/p · Σ size²) over the class's flows.

mod testbed_common;
use testbed_common::*;

use polyphony_spec::{Dscp, HostId, Nanos, Workload};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::Duration;
use workfeed::agent::{Agent, AgentConfig};
use workfeed::aggregator::{Aggregator, AggregatorConfig, UpstreamConfig};
use workfeed::loader::ProbeFilter;
use workfeed::metrics::{AgentMetrics, AggregatorMetrics};
use workfeed::{HostMap, KeepProbability};

const PREFIX: &str = "ppw1";
const FLOWS: u64 = 600;
/// Workfeed's duration may be shorter than emu's FCT by this much plus [`EARLY_FRACTION`] of it:
/// the client socket closes in the kernel when the receiver's ack byte and FIN arrive, while
/// emu stamps the end when its task wakes up to read that byte (measured 0.1–0.9 ms on an idle
/// machine, up to 8 ms while other tests load the two shared cores).
const EARLY_NS: f64 = 20e6;
const EARLY_FRACTION: f64 = 0.1;
/// … and longer by at most this much (Workfeed opens at SYN_SENT, right after emu's
/// `connect()` stamp; measured 20–35 µs later) …
const LATE_NS: f64 = 1e6;
/// … save at most [`MAX_LATE_OUTLIERS`] flows, which may be longer by up to this much: Workfeed
/// ends a flow at the first close of either socket, and emu's client calls `close()` after it
/// stamps the end, so a client task descheduled between the two (with the server's close also
/// pending) makes Workfeed's duration longer. CI at `0c8ae8c`, with nothing but CI on the
/// machine: one flow of 600, 2.85 ms longer. A capture bug (a wrong socket paired, a stale
/// timestamp) would show as many flows or as tens of ms; both still fail.
const LATE_OUTLIER_NS: f64 = 10e6;
/// Flows allowed between [`LATE_NS`] and [`LATE_OUTLIER_NS`] longer than emu's FCT.
const MAX_LATE_OUTLIERS: usize = 3;
/// The median of (emu FCT − Workfeed duration) over all flows stays below this.
const MEDIAN_NS: f64 = 1e6;
/// At most this many flows may be shorter in Workfeed than the early bound allows: emu's task can
/// be descheduled for tens of ms on this shared 2-vCPU VM, so emu stamps the FCT late (CI at
/// 04ac7c0: one flow of 600 whose FCT emu stamped 41 ms after the kernel closed it). That cause
/// only makes Workfeed's duration *shorter* than emu's FCT, so the late bound has no such
/// allowance: a flow Workfeed saw last longer than emu did points at a capture or timestamp bug.
/// The median bound above still holds every run to 1 ms.
const MAX_EARLY_OUTLIERS: usize = 3;

fn workload() -> Workload {
    let classes = [Dscp::AF11, Dscp::AF21, Dscp::AF31];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let flows = (0..FLOWS)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let size = 2_000 + x % 98_000;
            flow(
                i,
                (i % 3) as u32,
                classes[((i / 3) % 3) as usize],
                size,
                i as f64 * 0.015,
            )
        })
        .collect();
    Workload::new(flows, Nanos::from_secs_f64(FLOWS as f64 * 0.015)).expect("workload")
}

#[test]
fn workfeed_captures_every_emu_flow_once_and_sampling_reconstructs_bytes() {
    if !can_run() {
        return;
    }
    let _s = serial();
    let sc = scenario("reference-medium");
    let guard = Guard(PREFIX.into());
    let tb = testbed::up(&sc, &testbed::TestbedOptions::new(PREFIX)).expect("testbed up");
    let mut ns: Vec<String> = (0..3).map(|i| tb.names.sender(i)).collect();
    ns.push(tb.names.receiver());
    let filter = ProbeFilter {
        server_ports: vec![],
        netns_inodes: ns
            .iter()
            .map(|n| ProbeFilter::netns_inode(Path::new(&format!("/run/netns/{n}"))).expect("netns inode"))
            .collect(),
    };
    let hosts = HostMap::new(
        (0..3u32)
            .map(|i| (Ipv4Addr::new(198, 18, i as u8 + 1, 2), HostId(i)))
            .chain([(Ipv4Addr::new(198, 18, 100, 2), HostId(3))]),
    );

    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let (rack, upstream, agent_metrics) = rt.block_on(async {
        let mut up_cfg = AggregatorConfig::new("127.0.0.1:0".parse().expect("addr"));
        up_cfg.sample = KeepProbability::new(0.25).expect("p");
        up_cfg.hosts = hosts.clone();
        let upstream = Aggregator::bind(up_cfg, AggregatorMetrics::default())
            .await
            .expect("upstream");
        let mut rack_cfg = AggregatorConfig::new("127.0.0.1:0".parse().expect("addr"));
        rack_cfg.hosts = hosts.clone();
        rack_cfg.upstream = Some(UpstreamConfig {
            addr: upstream.local_addr().expect("addr"),
            id: 100,
            key: None,
        });
        let rack = Aggregator::bind(rack_cfg, AggregatorMetrics::default())
            .await
            .expect("rack");
        let metrics = AgentMetrics::default();
        let mut cfg = AgentConfig::new(1, rack.local_addr().expect("addr"));
        cfg.flush_interval = Duration::from_millis(100);
        let agent = Agent::start(cfg, &filter, metrics.clone())
            .await
            .expect("agent start (probe load)");
        for a in [rack.clone(), upstream.clone()] {
            let s = stopped();
            tokio::spawn(async move { a.serve(s).await });
        }
        let s = stopped();
        tokio::spawn(async move { agent.run(s).await });
        (rack, upstream, metrics)
    });

    let wl = workload();
    let r = run(&tb, &wl, FLOWS as f64 * 0.015 + 0.5);
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(600)).await });
    stop_tx.send(true).expect("stop");
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });

    let truth: Vec<&emu::FlowRecord> = r.records.iter().filter(|x| x.end_ns.is_some()).collect();
    println!(
        "emu: {} scheduled, {} finished; agent sent {} records, rack accepted {}, upstream kept {}",
        r.summary.scheduled,
        truth.len(),
        agent_metrics.records_sent.get(),
        rack.metrics().records_accepted.get(),
        upstream.metrics().records_accepted.get()
    );
    let probe: Vec<String> = agent_metrics
        .probe_counters()
        .iter()
        .map(|(name, v)| format!("{name} {v}"))
        .collect();
    println!(
        "probe counters: {}; rack dropped: duplicate {}, conflict {}",
        probe.join(", "),
        rack.metrics().dropped("duplicate"),
        rack.metrics().dropped("conflict")
    );
    assert!(truth.len() as f64 >= 0.98 * FLOWS as f64, "{:?}", r.summary);
    // Nothing lost where the probe can count it, and everything it wrote reached the agent.
    let counter = |name: &str| {
        agent_metrics
            .probe_counters()
            .into_iter()
            .find(|&(n, _)| n == name)
            .map_or(0, |(_, v)| v)
    };
    for lost in ["open_failed", "ringbuf_full"] {
        assert_eq!(counter(lost), 0, "probe counter {lost}: {probe:?}");
    }
    // A socket whose open no program handled (the kernel skipped both the main program and its
    // standby) closes untracked; each such loss must be one the kernel counted.
    let lost_records = counter("untracked_close");
    assert!(
        lost_records <= counter("missed_events"),
        "{lost_records} closes untracked, more than the kernel's skipped events: {probe:?}"
    );
    assert_eq!(
        counter("emitted") as u64,
        agent_metrics.records_captured.get(),
        "records the probe wrote vs records the agent read: {probe:?}"
    );

    // --- every flow exactly once, exact size, right class and hosts, duration in tolerance ---
    let w = rack.window_between(Nanos(0), Nanos(u64::MAX)).expect("window");
    // A lost record costs its flow one side (kept one-sided) or, the client's, its class (left
    // out as unclassified): never more flows than records lost.
    assert!(
        (w.unclassified + w.one_sided) as i64 <= lost_records,
        "flows with a socket unreported (unclassified {}, one-sided {}) but {lost_records} records lost; probe: {probe:?}",
        w.unclassified,
        w.one_sided
    );
    let port = emu::DEFAULT_PORT;
    let mut seen: HashMap<SocketAddrV4, usize> = HashMap::new();
    for (i, f) in w.captured.iter().enumerate() {
        if f.dst.port() == port {
            *seen.entry(f.src).or_default() += 1;
            let m = &w.workload.flows[i];
            assert_eq!(m.dst, HostId(3));
            assert!(m.src.0 < 3, "{m:?}");
        }
    }
    let mut diffs = Vec::new();
    let mut missing = Vec::new();
    // Workfeed shorter than the early bound (emu stamped late) / longer than the late bound.
    let (mut early_outliers, mut late_outliers) = (Vec::new(), Vec::new());
    for t in &truth {
        let src = SocketAddrV4::new(t.src_addr.parse().expect("src addr"), t.src_port);
        match seen.remove(&src) {
            Some(1) => {}
            // Only its client's record lost: unclassified (counted above).
            None if w.unclassified > 0 => {
                missing.push(t.id.0);
                continue;
            }
            n => panic!(
                "flow {} from {src} captured {n:?} times, not once; probe: {probe:?}",
                t.id.0
            ),
        }
        let f = w.captured.iter().find(|f| f.src == src).expect("captured");
        assert_eq!(f.size.0, t.size, "flow {} size", t.id.0);
        assert_eq!(f.dscp, t.dscp, "flow {} DSCP", t.id.0);
        assert!(
            f.both_sides || w.one_sided > 0,
            "flow {}: one socket unreported, yet no flow is one-sided",
            t.id.0
        );
        let fct = t.fct_ns.expect("finished") as f64;
        let dur = f.end.saturating_sub(f.start).0 as f64;
        let (early, late) = (EARLY_NS + EARLY_FRACTION * fct, LATE_NS);
        diffs.push(fct - dur);
        let line = || {
            format!(
                "flow {}: Workfeed duration {dur} ns vs emu FCT {fct} ns (allowed −{early} / +{late} ns)",
                t.id.0
            )
        };
        if dur < fct - early {
            early_outliers.push(line());
        } else if dur > fct + late {
            late_outliers.push((dur - fct, line()));
        }
    }
    let far_late: Vec<&(f64, String)> = late_outliers.iter().filter(|(d, _)| *d > LATE_OUTLIER_NS).collect();
    assert!(
        far_late.is_empty() && late_outliers.len() <= MAX_LATE_OUTLIERS,
        "{} flows lasted longer in Workfeed than emu's FCT + {LATE_NS} ns ({} of them by more than \
         {LATE_OUTLIER_NS} ns; at most {MAX_LATE_OUTLIERS} within that allowed): a capture or timestamp \
         bug: {late_outliers:#?}",
        late_outliers.len(),
        far_late.len()
    );
    if !late_outliers.is_empty() {
        println!("late duration outliers (at most {MAX_LATE_OUTLIERS} allowed): {late_outliers:#?}");
    }
    assert!(
        early_outliers.len() <= MAX_EARLY_OUTLIERS,
        "{} flows shorter in Workfeed than the early bound (emu stamped their FCT late): {early_outliers:#?}",
        early_outliers.len()
    );
    if !early_outliers.is_empty() {
        println!("early duration outliers (at most {MAX_EARLY_OUTLIERS} allowed): {early_outliers:#?}");
    }
    diffs.sort_by(f64::total_cmp);
    let q = |x: f64| diffs[((diffs.len() - 1) as f64 * x) as usize] / 1e3;
    println!(
        "emu FCT − Workfeed duration, µs: min {:.0}, p50 {:.0}, p99 {:.0}, max {:.0}",
        q(0.0),
        q(0.5),
        q(0.99),
        q(1.0)
    );
    assert!(q(0.5) * 1e3 <= MEDIAN_NS, "median FCT − duration {} µs", q(0.5));
    assert!(
        missing.len() <= w.unclassified,
        "flows missing from the window {missing:?}, more than the {} left out as unclassified",
        w.unclassified
    );
    assert!(
        seen.is_empty(),
        "flows Workfeed saw that emu did not log as finished: {seen:?}"
    );
    assert_eq!(rack.agents(), vec![(1, rack.agents()[0].1, 0)], "no datagram lost");

    // --- 1/4 sampling upstream: weighted per-class bytes reconstruct the truth ---
    let ws = upstream
        .window_between(Nanos(0), Nanos(u64::MAX))
        .expect("sampled window");
    let p = 0.25;
    for d in [Dscp::AF11, Dscp::AF21, Dscp::AF31] {
        let sizes: Vec<f64> = truth.iter().filter(|t| t.dscp == d).map(|t| t.size as f64).collect();
        let true_bytes: f64 = sizes.iter().sum();
        let se = ((1.0 - p) / p * sizes.iter().map(|s| s * s).sum::<f64>()).sqrt();
        let est: f64 = ws
            .captured
            .iter()
            .filter(|f| f.dscp == d && f.dst.port() == port)
            .map(|f| f.size.0 as f64 * f.weight)
            .sum();
        let kept = ws
            .captured
            .iter()
            .filter(|f| f.dscp == d && f.dst.port() == port)
            .count();
        println!(
            "class {d}: true {true_bytes:.0} B, estimate {est:.0} B from {kept}/{} flows, error {:+.1} % ({:.2} σ)",
            sizes.len(),
            100.0 * (est - true_bytes) / true_bytes,
            (est - true_bytes) / se
        );
        assert!(
            (est - true_bytes).abs() <= 4.0 * se,
            "class {d}: estimate {est} vs {true_bytes} (σ {se})"
        );
        let summary = ws.class(d).expect("class summary");
        assert!((summary.bytes - est).abs() < 1.0);
    }
    assert!(ws.workload.flows.iter().all(|f| f.weight == 4.0));

    drop(rt);
    drop(guard);
}
