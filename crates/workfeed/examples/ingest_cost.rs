//! The aggregator's cost per record without sockets: decode, sequence check and merge into the
//! connection table ([`Collector::ingest`]) of N distinct connections in datagrams of R records.
//! Prints thread CPU time per record; for a count that does not depend on the machine's load,
//! run it under `valgrind --tool=callgrind` (docs/workfeed.md).
//!
//! Run: `cargo run --release -p workfeed --example ingest_cost -- [R=24] [N=1200000]`.
#[path = "../benches/common/mod.rs"]
mod common;

use common::record;
use workfeed::metrics::AggregatorMetrics;
use workfeed::wire::{self, Batch};
use workfeed::{Collector, CollectorConfig, FlowRecord};

fn cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let per: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(24);
    let n: u64 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_200_000);
    let now = 1_764_000_000_000_000_000u64;
    let recs: Vec<FlowRecord> = (0..n).map(|i| record(i, now)).collect();
    let dgs: Vec<Vec<u8>> = recs
        .chunks(per)
        .enumerate()
        .map(|(s, c)| {
            wire::encode(
                &Batch {
                    agent_id: 1,
                    epoch: 1,
                    seq: s as u64,
                    keep_probability: 1.0,
                    records: c.to_vec(),
                },
                None,
            )
        })
        .collect();
    let mut col = Collector::new(CollectorConfig::default(), AggregatorMetrics::default());
    let t = cpu();
    for d in &dgs {
        col.ingest(d).unwrap();
    }
    let dt = cpu() - t;
    println!(
        "{per} records/datagram: {:.0} ns CPU per record ({:.2} M records/s per core)",
        dt * 1e9 / n as f64,
        n as f64 / dt / 1e6
    );
}
