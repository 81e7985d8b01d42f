//! `[workload] source = "workfeed"` and `[sli] source = "workfeed"`: the daemon binary, in advise
//! mode, embeds a Workfeed aggregator; this test sends it real datagrams through the workfeed
//! crate's agent sender (the wire format with HMAC tags, sequence numbers, batching) and checks:
//!
//! * before any flow arrives the interval is skipped (`empty_window`), counted, and the daemon
//!   keeps running with iteration 0;
//! * garbage, untagged and wrongly keyed datagrams are counted by reason and change nothing;
//! * the model's window (`/v1/workload`) holds exactly the flows sent with the right key, with
//!   the configured host ids; unmapped hosts and unknown DSCPs are left out and counted;
//! * the per-class SLIs of the iteration are the p50/p99/p99.9 of the sent durations over the
//!   ideal FCT of the topology, as computed here independently;
//! * the window served as a JSON-lines trace feeds `polyphony recommend`;
//! * a SIGHUP reload keeps the aggregator: datagrams sent afterwards still arrive; a reload that
//!   asks for another listener is refused.

mod common;

use common::*;
use polyphony_model::Topology;
use polyphony_spec::{Bytes, ClassSli, Dscp, HostId, Nanos, TopologySpec};
use serde_json::Value;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;
use workfeed::agent::{AgentConfig, Sender};
use workfeed::metrics::AgentMetrics;
use workfeed::wire::AuthKey;
use workfeed::FlowRecord;

const KEY: &str = "h2-workfeed-daemon-test-key-0123456789";
const RECEIVER: Ipv4Addr = Ipv4Addr::new(198, 18, 100, 2);
const FLOWS_PER_CLASS: usize = 30;

fn sender_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(198, 18, i as u8 + 1, 2)
}

fn topology() -> Topology {
    #[derive(serde::Deserialize)]
    struct T {
        topology: TopologySpec,
    }
    let start = CLASSES_AND_TOPOLOGY.find("[topology]").unwrap();
    let t: T = toml::from_str(&CLASSES_AND_TOPOLOGY[start..]).unwrap();
    Topology::from_spec(&t.topology).unwrap()
}

fn unix_now() -> Nanos {
    Nanos(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    )
}

/// A client-side record of a finished connection.
fn record(src: Ipv4Addr, port: u16, dscp: u8, size: u64, start: Nanos, duration: Nanos) -> FlowRecord {
    FlowRecord {
        local: SocketAddrV4::new(src, port),
        remote: SocketAddrV4::new(RECEIVER, 5001),
        dscp: Dscp::new(dscp).unwrap(),
        active: true,
        fin_sent: true,
        peer_fin: true,
        bytes_sent: Bytes(size),
        bytes_received: Bytes(1),
        srtt: Nanos(30_000),
        retrans: 0,
        start,
        end: start + duration,
    }
}

/// Sends `records` through the workfeed agent's sender (batches of 24, tagged with `key`).
fn send(to: std::net::SocketAddr, agent_id: u32, key: Option<&str>, records: &[FlowRecord]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut cfg = AgentConfig::new(agent_id, to);
        cfg.key = key.map(|k| AuthKey::new(k.as_bytes().to_vec()).unwrap());
        let mut s = Sender::new(cfg, AgentMetrics::default()).await.unwrap();
        for r in records {
            s.push(*r).await;
        }
        s.flush().await;
    });
}

fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l[series.len()..].trim().parse().ok())
}

fn get_json(addr: &str, path: &str) -> Value {
    let (code, body) = http(addr, "GET", path, &[], "");
    assert_eq!(code, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

#[test]
fn workfeed_datagrams_become_the_models_window_and_the_slis() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    let key_file = dir.path().join("workfeed.key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, workfeed_config(&state_dir, &key_file, 120.0)).unwrap();

    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["--log", "info", "daemon", "--config"]).arg(&cfg);
    let mut daemon = ChildGuard::spawn(&mut cmd);
    let udp_line = daemon
        .wait_line("Workfeed aggregator listening on udp://", Duration::from_secs(60))
        .expect("the daemon did not report its Workfeed address");
    let udp: std::net::SocketAddr = address_after(&udp_line, "udp://").parse().expect("Workfeed address");
    let http_line = daemon
        .wait_line("/metrics on http://", Duration::from_secs(60))
        .expect("the daemon did not report its HTTP address");
    let addr = address_after(&http_line, "http://");

    // 1. Nothing captured yet: the interval is skipped, counted, and the daemon keeps running.
    let status = poll(Duration::from_secs(60), || {
        let s = get_json(&addr, "/v1/status");
        (s["skipped_intervals"].as_u64().unwrap_or(0) >= 1).then_some(s)
    })
    .expect("no skipped interval reported for the empty window");
    assert_eq!(status["last_skip"]["reason"], "empty_window", "{status}");
    assert_eq!(status["iteration"], 0, "{status}");
    let (_, m) = http(&addr, "GET", "/metrics", &[], "");
    assert!(
        metric(&m, "polyphony_skipped_intervals_total{reason=\"empty_window\"}").is_some_and(|v| v >= 1.0),
        "{m}"
    );

    // 2. Bad input: counted by reason, not fatal, not in the window.
    let now = unix_now();
    let start0 = now.saturating_sub(Nanos::from_secs_f64(30.0));
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.send_to(b"hello, aggregator", udp).unwrap();
    let mut junk = b"WKFD".to_vec();
    junk.extend((0..200u32).map(|i| (i * 37 % 251) as u8));
    sock.send_to(&junk, udp).unwrap();
    let intruder = [record(sender_addr(0), 40_999, 10, 777_777, start0, Nanos(5_000_000))];
    send(udp, 66, Some("a-different-key-of-enough-length"), &intruder);
    send(udp, 67, None, &intruder);
    let rejected = poll(Duration::from_secs(30), || {
        let (_, m) = http(&addr, "GET", "/metrics", &[], "");
        let r = |reason: &str| {
            metric(
                &m,
                &format!("polyphony_workfeed_aggregator_datagrams_rejected_total{{reason=\"{reason}\"}}"),
            )
            .unwrap_or(0.0)
        };
        let counts = [r("truncated"), r("wrong_version"), r("bad_tag"), r("missing_tag")];
        counts.iter().all(|c| *c >= 1.0).then_some(counts)
    })
    .expect("the bad datagrams were not all counted by reason");
    assert_eq!(rejected, [1.0, 1.0, 1.0, 1.0]);
    assert_eq!(http(&addr, "GET", "/healthz", &[], "").0, 200);

    // 3. Real flows with the right key: three classes, three senders, known durations.
    let topo = topology();
    let dscps = [10u8, 18, 26];
    let mut records = Vec::new();
    let mut expected: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let mut sent: Vec<(u64, u8, u32)> = Vec::new();
    for k in 0..3 * FLOWS_PER_CLASS {
        let class = k % 3;
        let sender = (k / 3) % 3;
        let size = 2_000 + 997 * k as u64;
        let ideal = topo.ideal(HostId(sender as u32), HostId(3)).of(Bytes(size));
        let target = 1.0 + (class as f64 + 1.0) * 0.37 * ((k / 3) as f64);
        let duration = Nanos((ideal.0 as f64 * target).round() as u64);
        expected[class].push(duration.0 as f64 / ideal.0 as f64);
        let start = start0 + Nanos(k as u64 * 50_000_000);
        records.push(record(
            sender_addr(sender),
            41_000 + k as u16,
            dscps[class],
            size,
            start,
            duration,
        ));
        sent.push((size, dscps[class], sender as u32));
    }
    // Left out: an unmapped host and a DSCP without a class.
    records.push(record(
        Ipv4Addr::new(10, 9, 8, 7),
        42_000,
        10,
        5_555,
        start0,
        Nanos(9_000_000),
    ));
    records.push(record(sender_addr(1), 42_001, 46, 6_666, start0, Nanos(9_000_000)));
    send(udp, 7, Some(KEY), &records);

    let window = poll(Duration::from_secs(120), || {
        let (code, body) = http(&addr, "GET", "/v1/workload", &[], "");
        let w: Value = serde_json::from_str(&body).ok()?;
        (code == 200 && w["flows"].as_u64() == Some(sent.len() as u64)).then_some(w)
    })
    .expect("the window never held the flows sent");
    let mut got: Vec<(u64, u8, u32)> = window["workload"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["dst"], 3, "{f}");
            // Unsampled: weight 1 (the spec's serde form leaves the default out).
            assert!(f["weight"].is_null() || f["weight"] == 1.0, "{f}");
            (
                f["size"].as_u64().unwrap(),
                f["dscp"].as_u64().unwrap() as u8,
                f["src"].as_u64().unwrap() as u32,
            )
        })
        .collect();
    got.sort_unstable();
    sent.sort_unstable();
    assert_eq!(
        got, sent,
        "the model's window is not exactly the flows sent with the right key"
    );
    assert_eq!(window["left_out"]["unmapped_host"], 1, "{window}");
    assert_eq!(window["left_out"]["unknown_class"], 1, "{window}");

    // The next completed iteration measured the SLIs of exactly those flows.
    let iteration = poll(Duration::from_secs(300), || {
        let s = get_json(&addr, "/v1/status");
        let it = s["last_iteration"].clone();
        it["classes"]
            .as_array()
            .is_some_and(|c| {
                c.iter()
                    .all(|k| k["measured"]["flows"].as_u64() == Some(FLOWS_PER_CLASS as u64))
            })
            .then_some(it)
    })
    .expect("no iteration measured the captured flows");
    for (class, k) in iteration["classes"].as_array().unwrap().iter().enumerate() {
        let want = ClassSli::from_slowdowns(Dscp::new(dscps[class]).unwrap(), &mut expected[class]).unwrap();
        let m = &k["measured"];
        for (name, v) in [("p50", want.p50), ("p99", want.p99), ("p999", want.p999)] {
            let g = m[name].as_f64().unwrap();
            assert!((g - v).abs() < 1e-9, "class {class} {name}: daemon {g}, expected {v}");
        }
        assert!(want.p50 < want.p99, "test data must spread: {want:?}");
        assert!((k["sli"].as_f64().unwrap() - want.p99).abs() < 1e-9, "{k}");
    }
    let (_, m) = http(&addr, "GET", "/metrics", &[], "");
    assert_eq!(
        metric(&m, "polyphony_workload_flows{class=\"AF21\",dscp=\"18\"}"),
        Some(FLOWS_PER_CLASS as f64),
        "{m}"
    );
    assert_eq!(
        metric(&m, "polyphony_workfeed_window_left_out{reason=\"unmapped_host\"}"),
        Some(1.0)
    );
    assert!(
        metric(&m, "polyphony_workfeed_aggregator_datagrams_accepted_total").is_some_and(|v| v >= 4.0),
        "{m}"
    );
    // The receive loop never failed, so it was never restarted (the counter is exported).
    assert_eq!(
        metric(&m, "polyphony_workfeed_aggregator_restarts_total"),
        Some(0.0),
        "{m}"
    );
    // The state file holds the same record (persistence of the new fields).
    let st = read_state(&state_dir).unwrap();
    assert!(st["history"].as_array().is_some_and(|h| !h.is_empty()));
    assert!(st["skipped_intervals"].as_u64().unwrap_or(0) >= 1);

    // 4. The window as a trace, and one-shot advice from the daemon's state on it.
    let (code, jsonl) = http(&addr, "GET", "/v1/workload?format=jsonl", &[], "");
    assert_eq!(code, 200);
    let trace = polyphony_spec::Workload::from_jsonl(&jsonl, "window").expect("the jsonl window parses as a trace");
    assert_eq!(trace.flows.len(), sent.len());
    let trace_file = dir.path().join("window.jsonl");
    std::fs::write(&trace_file, &jsonl).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["recommend", "--json", "--state"])
        .arg(&state_dir)
        .arg("--config")
        .arg(&cfg)
        .arg("--workload")
        .arg(&trace_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "recommend on the captured window failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let advice: Value = serde_json::from_slice(&out.stdout).expect("recommend --json prints JSON");
    assert!(advice.is_object(), "{advice}");

    // 5. SIGHUP with the same configuration keeps the running aggregator: new datagrams to the
    // same address still arrive.
    daemon.signal(libc::SIGHUP);
    daemon
        .wait_line("configuration reloaded", Duration::from_secs(120))
        .expect("the reload was not accepted");
    let later: Vec<FlowRecord> = (0..3)
        .map(|c| {
            record(
                sender_addr(c),
                43_000 + c as u16,
                dscps[c],
                900_000 + c as u64,
                start0 + Nanos::from_secs_f64(10.0),
                Nanos(20_000_000),
            )
        })
        .collect();
    send(udp, 8, Some(KEY), &later);
    poll(Duration::from_secs(120), || {
        let w = get_json(&addr, "/v1/workload");
        (w["flows"].as_u64() == Some(sent.len() as u64 + 3)).then_some(())
    })
    .expect("flows sent after the reload never reached the window");

    // 6. A new listener cannot be taken over by a reload: refused, the running one stays.
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace(
            "listen = \"127.0.0.1:0\"\nwindow_s",
            "listen = \"127.0.0.1:1\"\nwindow_s",
        ),
    )
    .unwrap();
    daemon.signal(libc::SIGHUP);
    let refused = daemon
        .wait_line("reload refused", Duration::from_secs(120))
        .expect("a new Workfeed listener was not refused");
    assert!(refused.contains("needs a restart"), "{refused}");
    assert_eq!(get_json(&addr, "/v1/workload")["flows"], sent.len() as u64 + 3);

    daemon.signal(libc::SIGTERM);
    assert_eq!(daemon.wait(Duration::from_secs(300)), Some(0));
}
