//! The IPFIX path gives the controller the same workload window as Workfeed's own UDP path.
//!
//! One agent sender captures a known trace (both sockets of every connection, several classes,
//! sampled at 1/2) and sends it two ways at once, over real UDP on loopback: Workfeed datagrams
//! to aggregator A, IPFIX to aggregator B's IPFIX listener. Both windows must be equal. A third
//! aggregator, C, re-exports everything B accepted as IPFIX to D, and D's window is the same
//! too (an aggregator as an IPFIX exporter).

use polyphony_spec::{Bytes, Dscp, HostId, Nanos};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;
use workfeed::agent::{AgentConfig, Sender};
use workfeed::aggregator::{Aggregator, AggregatorConfig};
use workfeed::ipfix::IpfixExporterConfig;
use workfeed::ipfix_udp::IpfixExportConfig;
use workfeed::metrics::{AgentMetrics, AggregatorMetrics};
use workfeed::{FlowRecord, HostMap, KeepProbability};

fn hosts() -> HostMap {
    HostMap::new(
        (0..4u8)
            .map(|h| (Ipv4Addr::new(198, 18, 1 + h, 2), HostId(u32::from(h))))
            .chain([(Ipv4Addr::new(198, 18, 100, 2), HostId(9))]),
    )
}

/// Client and server records of `n` connections opened from `t0` on, four classes.
fn trace(t0: u64, n: u16) -> Vec<FlowRecord> {
    let mut out = Vec::new();
    for i in 0..n {
        let dscp = [Dscp::AF11, Dscp::AF21, Dscp::AF31, Dscp::new(0).unwrap()][usize::from(i % 4)];
        let c = FlowRecord {
            local: SocketAddrV4::new(Ipv4Addr::new(198, 18, 1 + (i % 4) as u8, 2), 20_000 + i),
            remote: SocketAddrV4::new(Ipv4Addr::new(198, 18, 100, 2), 7100),
            dscp,
            active: true,
            fin_sent: true,
            peer_fin: true,
            bytes_sent: Bytes(200 + u64::from(i) * u64::from(i) * 31),
            bytes_received: Bytes(1),
            srtt: Nanos(20_000 + u64::from(i)),
            retrans: i % 3,
            start: Nanos(t0 + u64::from(i) * 100_000),
            end: Nanos(t0 + u64::from(i) * 100_000 + 2_000_000),
        };
        let s = FlowRecord {
            local: c.remote,
            remote: c.local,
            dscp: Dscp::new(0).unwrap(),
            active: false,
            bytes_sent: c.bytes_received,
            bytes_received: c.bytes_sent,
            start: Nanos(c.start.0 + 7_000),
            end: Nanos(c.end.0 + 9_000),
            ..c
        };
        out.push(c);
        out.push(s);
    }
    out
}

async fn until(what: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !what() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn ipfix_stream_gives_the_same_window_as_the_udp_path() {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let bind = |ipfix: bool, export: Option<SocketAddr>| {
        let mut c = AggregatorConfig::new(any);
        c.hosts = hosts();
        if ipfix {
            c.ipfix_listen = Some(any);
        }
        c.ipfix_export = export.map(|d| IpfixExportConfig {
            destinations: vec![d],
            exporter: IpfixExporterConfig::new(77),
        });
        Aggregator::bind(c, AggregatorMetrics::default())
    };
    let a = bind(false, None).await.unwrap();
    let d = bind(true, None).await.unwrap();
    let d_ipfix = d.ipfix_addr().unwrap().unwrap();
    let b = bind(true, Some(d_ipfix)).await.unwrap();
    let b_ipfix = b.ipfix_addr().unwrap().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for agg in [&a, &b, &d] {
        let agg = agg.clone();
        let mut rx = stop_rx.clone();
        tasks.push(tokio::spawn(async move {
            agg.serve(async move {
                let _ = rx.wait_for(|s| *s).await;
            })
            .await
        }));
    }

    let mut cfg = AgentConfig::new(5, a.local_addr().unwrap());
    cfg.sample = KeepProbability::new(0.5).unwrap();
    cfg.batch_records = 16;
    cfg.ipfix = Some(IpfixExportConfig {
        destinations: vec![b_ipfix],
        exporter: IpfixExporterConfig::new(5),
    });
    let metrics = AgentMetrics::default();
    let mut sender = Sender::new(cfg, metrics.clone()).await.unwrap();
    let t0 = workfeed::aggregator::unix_now().0 - 2_000_000_000;
    let records = trace(t0, 300);
    for r in &records {
        sender.push(*r).await;
    }
    sender.flush().await;
    let kept = metrics.records_sent.get();
    assert!(kept > 150 && kept < 450, "sampling at 1/2 kept {kept} of 600 records");

    until(|| a.metrics().records_accepted.get() >= kept).await;
    until(|| b.metrics().records_accepted.get() >= kept).await;
    until(|| d.metrics().records_accepted.get() >= kept).await;
    stop_tx.send(true).unwrap();
    for t in tasks {
        t.await.unwrap().unwrap();
    }

    assert_eq!(a.metrics().records_accepted.get(), kept);
    assert_eq!(b.metrics().records_accepted.get(), kept);
    assert_eq!(d.metrics().records_accepted.get(), kept);
    assert_eq!(
        b.metrics().ipfix_rejected.get_or_create(&reason("no_template")).get(),
        0
    );
    let (from, to) = (Nanos(t0 - 1), Nanos(t0 + 1_000_000_000));
    let wa = a.window_between(from, to).unwrap();
    let wb = b.window_between(from, to).unwrap();
    let wd = d.window_between(from, to).unwrap();
    assert!(wa.workload.flows.len() > 50, "{} flows", wa.workload.flows.len());
    assert_eq!(wa.one_sided, 0);
    assert_eq!(wa, wb, "the IPFIX window differs from the UDP window");
    assert_eq!(wa, wd, "the window re-exported by an aggregator differs");
}

fn reason(r: &str) -> workfeed::metrics::ReasonLabel {
    workfeed::metrics::ReasonLabel { reason: r.into() }
}
