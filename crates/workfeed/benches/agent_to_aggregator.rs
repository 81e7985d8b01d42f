//! Records per second that agent → aggregator sustains over UDP on loopback with zero loss.
//!
//! For each target rate (records/s, paced), a fresh aggregator on 127.0.0.1 and an agent
//! `Sender` exchange ~1.5 s worth of synthetic records (distinct connections); the step passes if
//! the aggregator accepted every record and its sequence tracking shows no datagram lost. The
//! last step is unpaced. Bounded: at most 9 steps of ≤ 1.5 s plus ≤ 2 s drain each.
//!
//! Run: `cargo bench -p workfeed --bench agent_to_aggregator` (optional argument: records per
//! datagram, default 24).

mod common;

use common::record;
use std::time::{Duration, Instant};
use workfeed::agent::{AgentConfig, Sender};
use workfeed::aggregator::{unix_now, Aggregator, AggregatorConfig};
use workfeed::metrics::{AgentMetrics, AggregatorMetrics};

struct Step {
    target: Option<u64>,
    sent: u64,
    accepted: u64,
    lost_datagrams: u64,
    rate: f64,
}

async fn step(target: Option<u64>, batch: usize) -> Step {
    let agg = Aggregator::bind(
        AggregatorConfig::new("127.0.0.1:0".parse().expect("addr")),
        AggregatorMetrics::default(),
    )
    .await
    .expect("bind aggregator");
    let addr = agg.local_addr().expect("addr");
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let server = {
        let agg = agg.clone();
        tokio::spawn(async move {
            agg.serve(async move {
                let _ = stop_rx.wait_for(|s| *s).await;
            })
            .await
        })
    };
    let mut cfg = AgentConfig::new(1, addr);
    cfg.batch_records = batch;
    let metrics = AgentMetrics::default();
    let mut sender = Sender::new(cfg, metrics.clone()).await.expect("sender");
    let n = target.map_or(1_500_000, |r| r * 3 / 2);
    let now = unix_now().0;
    let t0 = Instant::now();
    for i in 0..n {
        if let Some(r) = target {
            if i % 256 == 0 {
                let due = Duration::from_secs_f64(i as f64 / r as f64);
                let el = t0.elapsed();
                if due > el {
                    tokio::time::sleep(due - el).await;
                }
            }
        }
        sender.push(record(i, now)).await;
    }
    sender.flush().await;
    let send_time = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(2);
    while agg.metrics().records_accepted.get() < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let accepted = agg.metrics().records_accepted.get();
    let lost = agg.agents().first().map_or(0, |a| a.2);
    let _ = stop_tx.send(true);
    let _ = server.await;
    Step {
        target,
        sent: n,
        accepted,
        lost_datagrams: lost,
        rate: n as f64 / send_time.as_secs_f64(),
    }
}

fn main() {
    let batch: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(24);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!("agent → aggregator over loopback UDP, {batch} records/datagram (48 B each)");
    println!(
        "{:>12} {:>10} {:>10} {:>6} {:>14}",
        "target/s", "sent", "accepted", "lost", "achieved/s"
    );
    let mut best = 0.0f64;
    for target in [
        Some(100_000),
        Some(200_000),
        Some(400_000),
        Some(600_000),
        Some(800_000),
        Some(1_000_000),
        Some(1_200_000),
        Some(1_500_000),
        None,
    ] {
        let s = rt.block_on(step(target, batch));
        let ok = s.accepted == s.sent && s.lost_datagrams == 0;
        println!(
            "{:>12} {:>10} {:>10} {:>6} {:>14.0} {}",
            s.target.map_or("unpaced".to_string(), |t| t.to_string()),
            s.sent,
            s.accepted,
            s.lost_datagrams,
            s.rate,
            if ok { "zero loss" } else { "LOSS" }
        );
        if ok {
            best = best.max(s.rate);
        }
    }
    println!("highest rate with zero loss: {best:.0} records/s");
}
