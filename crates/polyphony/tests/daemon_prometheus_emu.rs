//! The shipped Prometheus SLI query works on emu's real exposition: emu's `/metrics` endpoint
//! (`emu::MetricsServer`, what `emu --metrics-listen` serves) exposes an [`emu::EmuMetrics`]
//! registry that observes finished flows with known slowdowns, round after round, while a real
//! Prometheus (Debian's `/usr/bin/prometheus`, started here, 1 s scrapes) scrapes it. The daemon
//! (advise mode) runs the `[sli]` query of `configs/daemon/prometheus.toml`, read from that file,
//! and its iteration record must carry, per class, p50 < p99 ≤ p99.9, each inside the
//! histogram bucket that holds the true quantile of the observed slowdowns.
//!
//! No root: the flows are recorded outcomes fed to the metrics in-process, not live traffic.

mod common;

use common::*;
use emu::{slowdown_bucket_bounds, EmuMetrics, FlowRecord, MetricsServer};
use polyphony_spec::{percentile, Dscp, FlowId};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Slowdowns from `.0` to `.1`, `.2` flows evenly spaced.
type Segment = (f64, f64, usize);

/// Per class: segments of (lowest, highest, flows) slowdowns, evenly spaced, 1000 flows a
/// round. The counts keep the 50th, 99th and 99.9th ranks several flows away from any bucket
/// edge (le = 1, 1.5, 2.25, 3.375, 5.06, 7.59, 11.39, 17.09, 25.63, …), so a scrape that lands
/// in the middle of a round cannot move a quantile to another bucket.
const CLASSES: [(Dscp, &str, &[Segment]); 3] = [
    (
        Dscp::AF11,
        "AF11",
        &[(1.05, 1.45, 600), (1.6, 2.2, 385), (4.0, 5.0, 10), (8.0, 11.0, 5)],
    ),
    (
        Dscp::AF21,
        "AF21",
        &[(1.6, 2.2, 450), (2.4, 3.3, 535), (5.5, 7.5, 10), (12.0, 17.0, 5)],
    ),
    (
        Dscp::AF31,
        "AF31",
        &[
            (1.6, 2.2, 300),
            (2.4, 3.3, 400),
            (3.5, 5.0, 285),
            (8.0, 11.0, 10),
            (18.0, 25.0, 5),
        ],
    ),
];

/// One round of a class's slowdowns, ascending.
fn round(segments: &[Segment]) -> Vec<f64> {
    segments
        .iter()
        .flat_map(|&(lo, hi, n)| (0..n).map(move |k| lo + (hi - lo) * (k as f64 + 0.5) / n as f64))
        .collect()
}

/// A finished flow of 20 kB whose FCT is `slowdown` × a 100 µs ideal FCT.
fn flow(id: u64, dscp: Dscp, class: &str, slowdown: f64) -> FlowRecord {
    let ideal_ns = 100_000u64;
    let fct = (slowdown * ideal_ns as f64) as u64;
    FlowRecord {
        id: FlowId(id),
        dscp,
        class: class.to_string(),
        size: 20_000,
        src_host: 0,
        src_addr: "198.18.1.2".into(),
        src_port: 40_000,
        dst_addr: "198.18.100.2".into(),
        dst_port: emu::DEFAULT_PORT,
        sched_ns: 0,
        start_ns: 0,
        end_ns: Some(fct),
        fct_ns: Some(fct),
        ideal_ns,
        slowdown: Some(slowdown),
        init_cwnd: Some(10),
        error: None,
        query: None,
        request_ns: None,
        received_ns: None,
    }
}

/// Feeds a round of every class to the metrics every 100 ms until the guard is dropped.
fn feed_flows(metrics: EmuMetrics) -> Background {
    Background::spawn(move |stop| {
        let rounds: Vec<(Dscp, &str, Vec<f64>)> = CLASSES.iter().map(|&(d, n, s)| (d, n, round(s))).collect();
        let mut id = 0u64;
        // Bounded: at most 20 minutes of rounds.
        for _ in 0..12_000 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            for (dscp, name, values) in &rounds {
                for &s in values {
                    id += 1;
                    metrics.observe(&flow(id, *dscp, name, s));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
}

/// The `[sli] query` of the shipped production-shaped config.
fn shipped_query() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/daemon/prometheus.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    v["sli"]["query"]
        .as_str()
        .expect("configs/daemon/prometheus.toml has sli.query")
        .to_string()
}

/// The bucket (lower, upper] of the slowdown histogram that holds `x`.
fn bucket_of(x: f64) -> (f64, f64) {
    let mut lower = 0.0;
    for le in slowdown_bucket_bounds() {
        if x <= le {
            return (lower, le);
        }
        lower = le;
    }
    (lower, f64::INFINITY)
}

/// The Prometheus instant query's samples, if it answered.
fn prom_vector(prom: &str, promql: &str) -> Option<Vec<serde_json::Value>> {
    let q: String = promql
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (c, b) = try_http(prom, "GET", &format!("/api/v1/query?query={q}"), &[], "")?;
    let v: serde_json::Value = serde_json::from_str(&b).ok()?;
    (c == 200).then(|| v.pointer("/data/result")?.as_array().cloned())?
}

#[test]
fn the_shipped_histogram_quantile_query_gives_each_class_three_quantiles_in_their_true_buckets() {
    if !have_prometheus() {
        return;
    }
    let query = shipped_query();
    assert!(query.contains("emu_flow_slowdown_bucket"), "{query}");
    let dir = tempfile::tempdir().unwrap();

    // emu's endpoint, every class's series at zero before the first scrape.
    let metrics = EmuMetrics::new();
    let classes: Vec<(Dscp, String)> = CLASSES.iter().map(|&(d, n, _)| (d, n.to_string())).collect();
    metrics.declare_classes(&classes);
    let server = MetricsServer::start(metrics.clone(), "127.0.0.1:0".parse().unwrap()).unwrap();
    let target = server.local_addr().to_string();
    let (mut prom, prom_addr) = start_prometheus(dir.path(), "emu", &target);
    poll(Duration::from_secs(120), || {
        let r = prom_vector(&prom_addr, "emu_flow_slowdown_count")?;
        (r.len() == 3).then_some(())
    })
    .expect("Prometheus never scraped emu's three zero slowdown series");

    // Flows finish while Prometheus scrapes.
    let flows = feed_flows(metrics.clone());
    // The daemon starts once Prometheus holds at least five whole rounds, so no query can see
    // only a part of the first one.
    let per_round: usize = CLASSES.iter().flat_map(|c| c.2.iter().map(|s| s.2)).sum();
    poll(Duration::from_secs(120), || {
        let r = prom_vector(&prom_addr, "sum(emu_flow_slowdown_count)")?;
        let n: f64 = r.first()?["value"][1].as_str()?.parse().ok()?;
        (n >= 5.0 * per_round as f64).then_some(())
    })
    .expect("Prometheus never scraped five rounds of flows");

    let (mut daemon, addr) = start_prometheus_sli_daemon(dir.path(), &prom_addr, &query);
    let record = iteration_with_classes(&addr, 3);

    for (k, (dscp, name, segments)) in record["classes"].as_array().unwrap().iter().zip(CLASSES) {
        assert_eq!(k["dscp"], dscp.value(), "{k}");
        let m = &k["measured"];
        let got = [m["p50"].as_f64(), m["p99"].as_f64(), m["p999"].as_f64()].map(|v| v.unwrap_or(f64::NAN));
        let observed = round(segments);
        let truth = [0.5, 0.99, 0.999].map(|q| percentile(&observed, q).unwrap_or(f64::NAN));
        eprintln!("{name}: Prometheus p50/p99/p99.9 = {got:?}; true quantiles of the observed slowdowns = {truth:?}");
        assert!(
            got[0] < got[1] && got[1] <= got[2],
            "{name}: not p50 < p99 <= p99.9: {got:?}"
        );
        for ((g, t), label) in got.iter().zip(truth).zip(["p50", "p99", "p99.9"]) {
            let (lo, hi) = bucket_of(t);
            assert!(
                *g > lo && *g <= hi,
                "{name} {label}: Prometheus says {g}, the true {t} lies in the bucket ({lo}, {hi}]"
            );
        }
        assert!(
            (k["sli"].as_f64().unwrap_or(f64::NAN) - got[1]).abs() < 1e-12,
            "the SLO is on p99: {k}"
        );
    }

    daemon.signal(libc::SIGTERM);
    assert_eq!(daemon.wait(Duration::from_secs(300)), Some(0));
    drop(flows);
    prom.signal(libc::SIGTERM);
    assert!(prom.wait(Duration::from_secs(30)).is_some(), "prometheus did not stop");
    drop(server);
}
