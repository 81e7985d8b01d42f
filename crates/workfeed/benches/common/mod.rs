//! Synthetic flow records shared by the throughput bench and the ingest-cost example.

use polyphony_spec::{Bytes, Dscp, Nanos};
use std::net::{Ipv4Addr, SocketAddrV4};
use workfeed::FlowRecord;

/// The client record of connection `i` (distinct for every `i` < 2³²), opened `i` ns after
/// `now`.
pub fn record(i: u64, now: u64) -> FlowRecord {
    FlowRecord {
        local: SocketAddrV4::new(Ipv4Addr::from(0xc612_0000 | (i >> 16) as u32), (i & 0xffff) as u16),
        remote: SocketAddrV4::new(Ipv4Addr::new(198, 18, 100, 2), 7100),
        dscp: Dscp::AF21,
        active: true,
        fin_sent: true,
        peer_fin: true,
        bytes_sent: Bytes(1000 + i % 5000),
        bytes_received: Bytes(1),
        srtt: Nanos(20_000),
        retrans: 0,
        start: Nanos(now + i),
        end: Nanos(now + i + 50_000),
    }
}
