//! `[workload] source = "workfeed"` with `ipfix_listen`: the daemon binary reads IPFIX
//! (RFC 7011) from an exporter into the model's window. The flows are sent both ways — as
//! Workfeed datagrams to the UDP listener and as IPFIX to the IPFIX listener, the same records —
//! and the window (`/v1/workload`) must hold each flow exactly once, with its size, class and
//! hosts; then further flows sent only as IPFIX (a template refresh and data, from a second
//! exporter using IANA elements only as a switch would) arrive too.

mod common;

use common::*;
use polyphony_spec::Nanos;
use serde_json::Value;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;
use workfeed::agent::{AgentConfig, Sender};
use workfeed::ipfix::{IpfixEncoder, IpfixExporterConfig};
use workfeed::ipfix_udp::IpfixExportConfig;
use workfeed::metrics::AgentMetrics;
use workfeed::wire::AuthKey;
use workfeed::{FlowRecord, KeepProbability};

const KEY: &str = "ipfix-daemon-test-key-0123456789";

fn flows(start: u64, n: usize, port0: u16) -> Vec<FlowRecord> {
    client_records(n, port0, start, 40_000_000, |k| 3_000 + 1_013 * k as u64)
}

fn window_flows(addr: &str) -> Option<Vec<(u64, u64, u64)>> {
    let (code, body) = http(addr, "GET", "/v1/workload", &[], "");
    let w: Value = serde_json::from_str(&body).ok()?;
    if code != 200 {
        return None;
    }
    let mut f: Vec<_> = w["workload"]["flows"]
        .as_array()?
        .iter()
        .map(|f| {
            (
                f["size"].as_u64().unwrap(),
                f["dscp"].as_u64().unwrap(),
                f["src"].as_u64().unwrap(),
            )
        })
        .collect();
    f.sort_unstable();
    Some(f)
}

fn expected(records: &[FlowRecord]) -> Vec<(u64, u64, u64)> {
    records
        .iter()
        .map(|r| {
            (
                r.bytes_sent.0,
                u64::from(r.dscp.value()),
                u64::from(r.local.ip().octets()[2]) - 1,
            )
        })
        .collect()
}

#[test]
fn ipfix_from_exporters_reaches_the_daemons_window_once() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("workfeed.key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let cfg = dir.path().join("daemon.toml");
    let text = workfeed_config(&dir.path().join("state"), &key_file, 120.0).replace(
        "listen = \"127.0.0.1:0\"\nwindow_s",
        "listen = \"127.0.0.1:0\"\nipfix_listen = \"127.0.0.1:0\"\nwindow_s",
    );
    assert!(
        text.contains("ipfix_listen"),
        "the test config did not take the IPFIX key"
    );
    std::fs::write(&cfg, text).unwrap();

    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["--log", "info", "daemon", "--config"]).arg(&cfg);
    let daemon = ChildGuard::spawn(&mut cmd);
    let line = daemon
        .wait_line("Workfeed aggregator listening on udp://", Duration::from_secs(60))
        .expect("the daemon did not report its Workfeed address");
    let udp: SocketAddr = address_after(&line, "udp://").parse().unwrap();
    let line = daemon
        .wait_line("reading IPFIX on udp://", Duration::from_secs(60))
        .expect("the daemon did not report its IPFIX address");
    let ipfix: SocketAddr = address_after(&line, "udp://").parse().unwrap();
    let line = daemon
        .wait_line("/metrics on http://", Duration::from_secs(60))
        .expect("the daemon did not report its HTTP address");
    let addr = address_after(&line, "http://");

    // 1. The same records both ways: Workfeed datagrams (tagged) and IPFIX, from one sender.
    let first = flows(unix_now_ns() - 30_000_000_000, 45, 41_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = AgentConfig::new(3, udp);
        c.key = Some(AuthKey::new(KEY.as_bytes().to_vec()).unwrap());
        c.ipfix = Some(IpfixExportConfig {
            destinations: vec![ipfix],
            exporter: IpfixExporterConfig::new(3),
        });
        let mut s = Sender::new(c, AgentMetrics::default()).await.unwrap();
        for r in &first {
            s.push(*r).await;
        }
        s.flush().await;
    });
    let want = expected(&first);
    let got = poll(Duration::from_secs(60), || window_flows(&addr).filter(|f| *f == want))
        .unwrap_or_else(|| panic!("the window never held each flow once: {:?}", window_flows(&addr)));
    assert_eq!(got.len(), 45);

    // 2. Another exporter, IANA elements only (another enterprise number): flows arrive as
    // unidirectional sender records and join the window.
    let second = flows(unix_now_ns() - 20_000_000_000, 9, 45_000);
    let mut enc = IpfixEncoder::new(IpfixExporterConfig {
        enterprise: 4_242,
        ..IpfixExporterConfig::new(99)
    })
    .unwrap();
    let tagged: Vec<_> = second.iter().map(|r| (*r, KeepProbability::ALL)).collect();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    for m in enc.encode(&tagged, Nanos(unix_now_ns())) {
        sock.send_to(&m, ipfix).unwrap();
    }
    sock.send_to(b"not ipfix at all", ipfix).unwrap();
    let mut all = want.clone();
    all.extend(expected(&second));
    all.sort_unstable();
    poll(Duration::from_secs(60), || window_flows(&addr).filter(|f| *f == all))
        .unwrap_or_else(|| panic!("the second exporter's flows never arrived: {:?}", window_flows(&addr)));
    let (_, m) = http(&addr, "GET", "/metrics", &[], "");
    assert!(
        m.lines()
            .any(|l| l.starts_with("polyphony_workfeed_aggregator_ipfix_rejected_total{reason=\"malformed\"}")),
        "the garbage datagram was not counted: {m}"
    );
}
