//! A captured connection as the agent and aggregator handle it: typed, with wall-clock times.
//!
//! The probe reports one [`workfeed_ebpf::RawRecord`] per socket with monotonic timestamps; the
//! agent turns it into a [`FlowRecord`] with Unix-epoch times (so records from different hosts
//! share one time base) and that is what travels on the wire. Pure data, no I/O.

use polyphony_spec::{Bytes, Dscp, Nanos};
use std::net::{Ipv4Addr, SocketAddrV4};
use workfeed_ebpf::{RawRecord, FLAG_ACTIVE, FLAG_ESTABLISHED, FLAG_FIN_SENT, FLAG_PEER_FIN};

/// One side (one socket) of a finished TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowRecord {
    /// This socket's address.
    pub local: SocketAddrV4,
    /// The peer's address.
    pub remote: SocketAddrV4,
    /// DSCP of this socket's TOS byte.
    pub dscp: Dscp,
    /// Whether this socket opened the connection (is the client).
    pub active: bool,
    /// Whether this socket sent a FIN (closed its sending side).
    pub fin_sent: bool,
    /// Whether the peer's FIN arrived.
    pub peer_fin: bool,
    /// Payload bytes this socket sent and saw acknowledged.
    pub bytes_sent: Bytes,
    /// Payload bytes this socket received.
    pub bytes_received: Bytes,
    /// Smoothed RTT at close.
    pub srtt: Nanos,
    /// Retransmitted segments (saturating at 65535).
    pub retrans: u16,
    /// Open time (SYN sent or received), Unix-epoch ns.
    pub start: Nanos,
    /// Close time, Unix-epoch ns.
    pub end: Nanos,
}

/// A connection's identity, the same from both of its sockets: (client, server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnKey {
    /// The endpoint that opened the connection.
    pub client: SocketAddrV4,
    /// The endpoint that accepted it.
    pub server: SocketAddrV4,
}

impl FlowRecord {
    /// Converts a probe record; `mono_to_unix` is added to its monotonic timestamps.
    pub fn from_raw(raw: &RawRecord, mono_to_unix: i128) -> FlowRecord {
        let shift = |t: u64| Nanos((i128::from(t) + mono_to_unix).clamp(0, i128::from(u64::MAX)) as u64);
        FlowRecord {
            local: SocketAddrV4::new(Ipv4Addr::from(raw.saddr), raw.sport),
            remote: SocketAddrV4::new(Ipv4Addr::from(raw.daddr), raw.dport),
            dscp: Dscp::from_tos(raw.dscp << 2),
            active: raw.flags & FLAG_ACTIVE != 0,
            fin_sent: raw.flags & FLAG_FIN_SENT != 0,
            peer_fin: raw.flags & FLAG_PEER_FIN != 0,
            bytes_sent: Bytes(raw.bytes_acked),
            bytes_received: Bytes(raw.bytes_received),
            srtt: Nanos(u64::from(raw.srtt_us) * 1_000),
            retrans: raw.retrans,
            start: shift(raw.start_ns),
            end: shift(raw.end_ns),
        }
    }

    /// The wire form (the probe's layout with Unix-epoch timestamps).
    pub fn to_raw(&self) -> RawRecord {
        RawRecord {
            saddr: self.local.ip().octets(),
            daddr: self.remote.ip().octets(),
            sport: self.local.port(),
            dport: self.remote.port(),
            srtt_us: u32::try_from(self.srtt.0 / 1_000).unwrap_or(u32::MAX),
            bytes_acked: self.bytes_sent.0,
            bytes_received: self.bytes_received.0,
            retrans: self.retrans,
            dscp: self.dscp.value(),
            flags: FLAG_ESTABLISHED
                | if self.active { FLAG_ACTIVE } else { 0 }
                | if self.fin_sent { FLAG_FIN_SENT } else { 0 }
                | if self.peer_fin { FLAG_PEER_FIN } else { 0 },
            start_ns: self.start.0,
            end_ns: self.end.0,
        }
    }

    /// The connection this socket belongs to.
    pub fn key(&self) -> ConnKey {
        if self.active {
            ConnKey {
                client: self.local,
                server: self.remote,
            }
        } else {
            ConnKey {
                client: self.remote,
                server: self.local,
            }
        }
    }

    /// Duration from open to close.
    pub fn duration(&self) -> Nanos {
        self.end.saturating_sub(self.start)
    }
}

impl ConnKey {
    /// Canonical bytes for hashing: client address, client port, server address, server port.
    pub fn to_bytes(&self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[0..4].copy_from_slice(&self.client.ip().octets());
        b[4..6].copy_from_slice(&self.client.port().to_be_bytes());
        b[6..10].copy_from_slice(&self.server.ip().octets());
        b[10..12].copy_from_slice(&self.server.port().to_be_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: ([u8; 4], u16) = ([198, 18, 1, 2], 40000);
    const SERVER: ([u8; 4], u16) = ([198, 18, 100, 2], 5001);

    /// One socket of an AF11 connection between `local` and `remote`, open from 100 to 200 ns;
    /// counters left at zero.
    fn socket(local: ([u8; 4], u16), remote: ([u8; 4], u16), active: bool) -> RawRecord {
        RawRecord {
            saddr: local.0,
            sport: local.1,
            daddr: remote.0,
            dport: remote.1,
            dscp: 10,
            flags: FLAG_ESTABLISHED | if active { FLAG_ACTIVE } else { 0 },
            start_ns: 100,
            end_ns: 200,
            ..RawRecord::default()
        }
    }

    #[test]
    fn both_sockets_of_a_connection_share_a_key() {
        let c = FlowRecord::from_raw(&socket(CLIENT, SERVER, true), 0);
        let s = FlowRecord::from_raw(&socket(SERVER, CLIENT, false), 0);
        assert_eq!(c.key(), s.key());
        assert_eq!(c.key().server.port(), 5001);
    }

    #[test]
    fn clock_offset_shifts_times_and_round_trips() {
        let r = FlowRecord::from_raw(&socket(CLIENT, SERVER, true), 1_000_000);
        assert_eq!(r.start, Nanos(1_000_100));
        assert_eq!(r.duration(), Nanos(100));
        assert_eq!(FlowRecord::from_raw(&r.to_raw(), 0), r);
    }
}
