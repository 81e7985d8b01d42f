//! The aggregator's behaviour a user relies on: both sockets of a connection become one flow,
//! repeats are dropped and counted, loss per agent is exact, a flow only its unmarked receiver
//! reported is unclassified (counted, never put in DSCP 0's class), one-sided connections are
//! counted, windows carry weights and summaries, and forwarding to an upstream aggregator
//! preserves all of it (over real UDP on loopback).

use polyphony_spec::{Bytes, Dscp, HostId, Nanos};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use workfeed::agent::{AgentConfig, Sender};
use workfeed::aggregator::{Aggregator, AggregatorConfig, UpstreamConfig};
use workfeed::collector::DscpEvidence;
use workfeed::metrics::{AgentMetrics, AggregatorMetrics};
use workfeed::wire::{self, AuthKey, Batch};
use workfeed::{Collector, CollectorConfig, FlowDirections, FlowRecord, HostMap, KeepProbability, WorkloadWindow};

const T0: u64 = 1_700_000_000_000_000_000;

fn client(port: u16, size: u64, start: u64) -> FlowRecord {
    FlowRecord {
        local: SocketAddrV4::new(Ipv4Addr::new(198, 18, 1, 2), port),
        remote: SocketAddrV4::new(Ipv4Addr::new(198, 18, 100, 2), 7100),
        dscp: Dscp::AF21,
        active: true,
        fin_sent: true,
        peer_fin: true,
        bytes_sent: Bytes(size),
        bytes_received: Bytes(1),
        srtt: Nanos(20_000),
        retrans: 0,
        start: Nanos(T0 + start),
        end: Nanos(T0 + start + 1_000_000),
    }
}

fn server_of(c: &FlowRecord, skew: u64) -> FlowRecord {
    FlowRecord {
        local: c.remote,
        remote: c.local,
        dscp: Dscp::new(0).unwrap(),
        active: false,
        bytes_sent: c.bytes_received,
        bytes_received: c.bytes_sent,
        start: Nanos(c.start.0 + skew),
        end: Nanos(c.end.0 + skew),
        ..*c
    }
}

fn datagram(agent: u32, seq: u64, records: Vec<FlowRecord>) -> Vec<u8> {
    wire::encode(
        &Batch {
            agent_id: agent,
            epoch: 1,
            seq,
            keep_probability: 1.0,
            records,
        },
        None,
    )
}

#[test]
fn both_sides_from_two_agents_make_one_flow_with_the_senders_class() {
    let mut c = Collector::new(CollectorConfig::default(), AggregatorMetrics::default());
    let a = client(40000, 5000, 0);
    c.ingest(&datagram(1, 0, vec![a])).unwrap();
    c.ingest(&datagram(2, 0, vec![server_of(&a, 30_000)])).unwrap();
    let flows = c.flows_between(Nanos(T0), Nanos(T0 + 1_000_000_000), FlowDirections::Dominant);
    assert_eq!(flows.len(), 1, "{flows:?}");
    let f = flows[0];
    assert_eq!(
        (f.size, f.dscp, f.start, f.both_sides),
        (Bytes(5000), Dscp::AF21, a.start, true)
    );
    // With both directions, the 1-byte application ack is a second flow, in the server's class.
    let both = c.flows_between(Nanos(T0), Nanos(T0 + 1_000_000_000), FlowDirections::Both);
    assert_eq!(both.len(), 2);
    assert_eq!((both[1].size, both[1].dscp.value()), (Bytes(1), 0));
}

fn hosts() -> HostMap {
    HostMap::new([
        (Ipv4Addr::new(198, 18, 1, 2), HostId(0)),
        (Ipv4Addr::new(198, 18, 100, 2), HostId(3)),
    ])
}

#[test]
fn a_flow_only_its_unmarked_receiver_reported_is_unclassified_not_dscp_0() {
    // CI at fa77426: a client record lost in the kernel left the server's (DSCP 0, a passive
    // socket) alone, and the flow was counted in class 0 instead of AF21.
    let mut c = Collector::new(CollectorConfig::default(), AggregatorMetrics::default());
    let marked = client(40000, 5000, 0);
    let lost = client(40001, 7000, 1_000);
    c.ingest(&datagram(1, 0, vec![marked, server_of(&marked, 10)])).unwrap();
    c.ingest(&datagram(2, 0, vec![server_of(&lost, 10)])).unwrap();
    let (from, to) = (Nanos(T0), Nanos(T0 + 1_000_000_000));
    let flows = c.flows_between(from, to, FlowDirections::Dominant);
    let one = flows.iter().find(|f| f.src.port() == 40001).unwrap();
    assert_eq!(
        (one.size, one.both_sides),
        (Bytes(7000), false),
        "size from the receiver"
    );
    assert_eq!((one.class(), one.dscp_evidence), (None, DscpEvidence::Unknown));

    let w = WorkloadWindow::build(from, to, flows, &hosts()).unwrap();
    assert_eq!((w.workload.flows.len(), w.unclassified, w.one_sided), (1, 1, 0));
    assert_eq!(w.workload.flows[0].dscp, Dscp::AF21);
    assert!(w.class(Dscp::new(0).unwrap()).is_none(), "{:?}", w.classes);
    assert_eq!(w.class(Dscp::AF21).unwrap().bytes, 5000.0);
}

#[test]
fn the_senders_marking_wins_and_a_marked_receiver_stands_in_for_a_missing_sender() {
    let mut c = Collector::new(CollectorConfig::default(), AggregatorMetrics::default());
    // Only the client reported: its own marking.
    let alone = client(40000, 5000, 0);
    // Only the client reported, and the server sent the payload: the marked receiver's class.
    let mut download = client(40001, 0, 1_000);
    download.bytes_received = Bytes(9000);
    // Both reported, the unmarked server sent the payload: its packets carried DSCP 0.
    let mut response = client(40002, 0, 2_000);
    response.bytes_received = Bytes(3000);
    c.ingest(&datagram(1, 0, vec![alone, download, response])).unwrap();
    c.ingest(&datagram(2, 0, vec![server_of(&response, 10)])).unwrap();
    let flows = c.flows_between(Nanos(T0), Nanos(T0 + 1_000_000_000), FlowDirections::Dominant);
    let by_port = |p: u16| flows.iter().find(|f| f.key.client.port() == p).unwrap();
    let got: Vec<_> = [40000, 40001, 40002]
        .map(|p| (by_port(p).size, by_port(p).class(), by_port(p).dscp_evidence))
        .to_vec();
    assert_eq!(
        got,
        vec![
            (Bytes(5000), Some(Dscp::AF21), DscpEvidence::Sender),
            (Bytes(9000), Some(Dscp::AF21), DscpEvidence::Receiver),
            (Bytes(3000), Some(Dscp::new(0).unwrap()), DscpEvidence::Sender),
        ]
    );
}

#[test]
fn connections_one_side_never_reported_are_counted_by_the_missing_side() {
    let mut c = Collector::new(CollectorConfig::default(), AggregatorMetrics::default());
    let both = client(40000, 100, 0);
    let client_only = client(40001, 100, 0);
    let server_only = client(40002, 100, 0);
    c.ingest(&datagram(1, 0, vec![both, client_only])).unwrap();
    assert_eq!(c.metrics().one_sided_connections.get(), 2);
    c.ingest(&datagram(2, 0, vec![server_of(&both, 10), server_of(&server_only, 10)]))
        .unwrap();
    assert_eq!(c.metrics().one_sided_connections.get(), 2, "one merged, one new");
    c.evict_before(Nanos(T0 + 1_000_000_000));
    let evicted = |side: &str| {
        c.metrics()
            .one_sided_evicted
            .get_or_create(&workfeed::metrics::SideLabel { missing: side.into() })
            .get()
    };
    assert_eq!((evicted("client"), evicted("server")), (1, 1));
    assert_eq!(c.metrics().one_sided_connections.get(), 0);
    assert_eq!(c.connections().count(), 0);
}

#[test]
fn repeated_records_are_dropped_and_reused_ports_are_new_connections() {
    let mut c = Collector::new(CollectorConfig::default(), AggregatorMetrics::default());
    let a = client(40000, 5000, 0);
    c.ingest(&datagram(1, 0, vec![a, a])).unwrap();
    // The same 4-tuple 90 s later is another connection.
    let later = client(40000, 7000, 90_000_000_000);
    c.ingest(&datagram(1, 1, vec![later])).unwrap();
    assert_eq!(c.metrics().dropped("duplicate"), 1);
    assert_eq!(c.metrics().records_accepted.get(), 2);
    assert_eq!(c.connections().count(), 2);
}

#[test]
fn loss_per_agent_is_exact() {
    let mut c = Collector::new(CollectorConfig::default(), AggregatorMetrics::default());
    for seq in [0, 1, 4, 5, 9] {
        c.ingest(&datagram(3, seq, vec![client(1000 + seq as u16, 10, seq)]))
            .unwrap();
    }
    c.ingest(&datagram(4, 0, vec![client(2000, 10, 0)])).unwrap();
    assert_eq!(c.agents(), vec![(3, 5, 5), (4, 1, 0)]);
}

#[test]
fn windows_carry_weights_hosts_and_class_summaries() {
    let mut c = Collector::new(
        CollectorConfig {
            sample: KeepProbability::new(0.5).unwrap(),
            ..CollectorConfig::default()
        },
        AggregatorMetrics::default(),
    );
    let records: Vec<FlowRecord> = (0..400)
        .map(|i| client(20000 + i, 1000, u64::from(i) * 1_000_000))
        .collect();
    for (seq, chunk) in records.chunks(20).enumerate() {
        c.ingest(&datagram(1, seq as u64, chunk.to_vec())).unwrap();
    }
    let kept = c.metrics().records_accepted.get();
    assert_eq!(kept + c.metrics().dropped("sampled_out"), 400);
    let hosts = HostMap::new([
        (Ipv4Addr::new(198, 18, 1, 2), HostId(0)),
        (Ipv4Addr::new(198, 18, 100, 2), HostId(3)),
    ]);
    let (from, to) = (Nanos(T0), Nanos(T0 + 1_000_000_000));
    let w = WorkloadWindow::build(from, to, c.flows_between(from, to, FlowDirections::Dominant), &hosts).unwrap();
    assert_eq!(w.workload.flows.len() as u64, kept);
    assert!(w
        .workload
        .flows
        .iter()
        .all(|f| f.weight == 2.0 && f.src == HostId(0) && f.dst == HostId(3)));
    let s = w.class(Dscp::AF21).unwrap();
    // 400 flows of 1000 B in one second, estimated from about half of them.
    assert!((s.flows - 400.0).abs() < 60.0, "{s:?}");
    assert!((s.bytes - s.flows * 1000.0).abs() < 1e-6);
    assert_eq!(s.size_quantiles[2], Bytes(1000));
    assert!((s.load.0 as f64 - s.bytes * 8.0).abs() < 1.0);
}

#[tokio::test]
async fn agent_to_rack_to_upstream_over_udp_with_hmac() {
    let key = AuthKey::new(b"rack-secret-0123456789".to_vec()).unwrap();
    let mut up_cfg = AggregatorConfig::new("127.0.0.1:0".parse().unwrap());
    up_cfg.key = Some(key.clone());
    let upstream = Aggregator::bind(up_cfg, AggregatorMetrics::default()).await.unwrap();
    let mut rack_cfg = AggregatorConfig::new("127.0.0.1:0".parse().unwrap());
    rack_cfg.key = Some(key.clone());
    rack_cfg.upstream = Some(UpstreamConfig {
        addr: upstream.local_addr().unwrap(),
        id: 900,
        key: Some(key.clone()),
    });
    let rack = Aggregator::bind(rack_cfg, AggregatorMetrics::default()).await.unwrap();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let (u, r) = (upstream.clone(), rack.clone());
    let tu = tokio::spawn({
        let s = stopped(stop_rx.clone());
        async move { u.serve(s).await }
    });
    let tr = tokio::spawn({
        let s = stopped(stop_rx.clone());
        async move { r.serve(s).await }
    });

    let mut cfg = AgentConfig::new(1, rack.local_addr().unwrap());
    cfg.key = Some(key.clone());
    cfg.batch_records = 10;
    let metrics = AgentMetrics::default();
    let mut sender = Sender::new(cfg, metrics.clone()).await.unwrap();
    let now = workfeed::aggregator::unix_now().0;
    for i in 0..95u16 {
        let mut r = client(30000 + i, 100 + u64::from(i), 0);
        r.start = Nanos(now + u64::from(i) * 1000);
        r.end = Nanos(r.start.0 + 5000);
        sender.push(r).await;
    }
    sender.flush().await;
    // An unauthenticated datagram to the rack is dropped and counted.
    let plain = datagram(66, 0, vec![client(1, 1, 0)]);
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&plain, rack.local_addr().unwrap()).await.unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while upstream.metrics().records_accepted.get() < 95 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop_tx.send(true).unwrap();
    tu.await.unwrap().unwrap();
    tr.await.unwrap().unwrap();

    assert_eq!(metrics.datagrams_sent.get(), 10);
    assert_eq!(rack.metrics().records_accepted.get(), 95);
    assert_eq!(rack.metrics().rejected("missing_tag"), 1);
    assert_eq!(rack.agents(), vec![(1, 10, 0)]);
    assert_eq!(upstream.metrics().records_accepted.get(), 95);
    // The rack re-batches up to 24 records a datagram (a timer flushes partial batches): at
    // least 4 datagrams, none lost.
    let up = upstream.agents();
    assert!(
        up.len() == 1 && up[0].0 == 900 && up[0].1 >= 4 && up[0].2 == 0,
        "{up:?}"
    );
    let w = upstream.window(Duration::from_secs(60)).unwrap();
    let total: u64 = w.workload.flows.iter().map(|f| f.size.0).sum();
    assert_eq!(total, (0..95u64).map(|i| 100 + i).sum::<u64>());
}

#[test]
fn eviction_forgets_exactly_the_connections_closed_before_the_cut_however_often_it_runs() {
    let mut c = Collector::new(CollectorConfig::default(), AggregatorMetrics::default());
    let held = |c: &Collector| c.connections().count();
    // Ends at T0 + 1 ms + start: 1, 11, 21 ms.
    for (i, start) in [0u64, 10_000_000, 20_000_000].into_iter().enumerate() {
        c.insert(client(100 + i as u16, 10, start), KeepProbability::ALL);
    }
    c.evict_before(Nanos(T0 + 500_000));
    assert_eq!(held(&c), 3);
    c.evict_before(Nanos(T0 + 15_000_000));
    assert_eq!(held(&c), 1);
    // A connection that closed earlier than everything left arrives late: the next cut finds it.
    c.insert(client(200, 10, 1_000_000), KeepProbability::ALL);
    c.evict_before(Nanos(T0 + 15_000_000));
    assert_eq!(held(&c), 1);
    c.evict_before(Nanos(T0 + 30_000_000));
    assert_eq!(held(&c), 0);
    assert_eq!(c.metrics().connections.get(), 0);
}
