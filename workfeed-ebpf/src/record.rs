//! The 48-byte record of `src/bpf/workfeed_record.h`, and the probe's counter indices and bits.

/// Size of one record in bytes.
pub const RECORD_SIZE: usize = 48;
/// Record flag: this socket opened the connection (it is the client).
pub const FLAG_ACTIVE: u8 = 1;
/// Record flag: the handshake completed.
pub const FLAG_ESTABLISHED: u8 = 2;
/// Record flag: this socket sent a FIN (its application closed or shut down writing).
pub const FLAG_FIN_SENT: u8 = 4;
/// Record flag: the peer's FIN arrived.
pub const FLAG_PEER_FIN: u8 = 8;
/// Every flag bit the probe sets.
pub const FLAGS_KNOWN: u8 = FLAG_ACTIVE | FLAG_ESTABLISHED | FLAG_FIN_SENT | FLAG_PEER_FIN;
/// Config bit: capture only connections whose server port is in the ports map.
pub const CFG_PORTS: u32 = 1;
/// Config bit: capture only sockets in a network namespace listed in the netns map.
pub const CFG_NETNS: u32 = 2;
/// Slot of the per-CPU running flags ([`crate::names::RUNNING_MAP`]) of the state-change hook.
pub const HOOK_SET_STATE: u32 = 0;
/// Slot of the running flags of the socket-destruction hook.
pub const HOOK_DESTROY: u32 = 1;
/// Capacity of each filter map.
pub const MAX_FILTER_ENTRIES: usize = 64;

const MASK48: u64 = (1 << 48) - 1;

/// One finished connection as the probe reports it (layout: `workfeed_record.h`).
///
/// Addresses are IPv4 in network byte order (`[u8; 4]` as on the wire); timestamps are
/// `CLOCK_MONOTONIC` nanoseconds of the capturing host. The default is all zeros.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RawRecord {
    /// Local address.
    pub saddr: [u8; 4],
    /// Remote address.
    pub daddr: [u8; 4],
    /// Local port.
    pub sport: u16,
    /// Remote port.
    pub dport: u16,
    /// Smoothed RTT at close, µs.
    pub srtt_us: u32,
    /// Payload bytes this socket sent that the peer acknowledged, without the sequence numbers
    /// of SYN and FIN (saturates at 2^48 − 1).
    pub bytes_acked: u64,
    /// Payload bytes this socket received, without the peer's FIN (saturates at 2^48 − 1).
    pub bytes_received: u64,
    /// Retransmitted segments (saturates at 65535).
    pub retrans: u16,
    /// DSCP of the socket's TOS at close (0..=63).
    pub dscp: u8,
    /// [`FLAG_ACTIVE`], [`FLAG_ESTABLISHED`], [`FLAG_FIN_SENT`], [`FLAG_PEER_FIN`].
    pub flags: u8,
    /// Open time (SYN sent or received), monotonic ns.
    pub start_ns: u64,
    /// Close time, monotonic ns.
    pub end_ns: u64,
}

impl RawRecord {
    /// Decodes the kernel's native-endian layout. `None` if `b` is shorter than [`RECORD_SIZE`].
    pub fn from_ne_bytes(b: &[u8]) -> Option<RawRecord> {
        Self::decode(b, u16::from_ne_bytes, u32::from_ne_bytes, u64::from_ne_bytes)
    }

    /// Decodes the little-endian layout used on Workfeed's wire.
    pub fn from_le_bytes(b: &[u8]) -> Option<RawRecord> {
        Self::decode(b, u16::from_le_bytes, u32::from_le_bytes, u64::from_le_bytes)
    }

    fn decode(
        b: &[u8],
        u16f: fn([u8; 2]) -> u16,
        u32f: fn([u8; 4]) -> u32,
        u64f: fn([u8; 8]) -> u64,
    ) -> Option<RawRecord> {
        let b: &[u8; RECORD_SIZE] = b.get(..RECORD_SIZE)?.try_into().ok()?;
        let a2 = |o: usize| [b[o], b[o + 1]];
        let a4 = |o: usize| [b[o], b[o + 1], b[o + 2], b[o + 3]];
        let a8 = |o: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[o..o + 8]);
            x
        };
        let acked_retrans = u64f(a8(16));
        let received_class = u64f(a8(24));
        Some(RawRecord {
            saddr: a4(0),
            daddr: a4(4),
            sport: u16f(a2(8)),
            dport: u16f(a2(10)),
            srtt_us: u32f(a4(12)),
            bytes_acked: acked_retrans & MASK48,
            retrans: (acked_retrans >> 48) as u16,
            bytes_received: received_class & MASK48,
            dscp: ((received_class >> 48) & 0x3f) as u8,
            flags: (received_class >> 56) as u8,
            start_ns: u64f(a8(32)),
            end_ns: u64f(a8(40)),
        })
    }

    /// Encodes in the little-endian wire layout (values beyond a field's width saturate).
    pub fn to_le_bytes(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[0..4].copy_from_slice(&self.saddr);
        b[4..8].copy_from_slice(&self.daddr);
        b[8..10].copy_from_slice(&self.sport.to_le_bytes());
        b[10..12].copy_from_slice(&self.dport.to_le_bytes());
        b[12..16].copy_from_slice(&self.srtt_us.to_le_bytes());
        let acked = self.bytes_acked.min(MASK48) | (u64::from(self.retrans) << 48);
        let recv =
            self.bytes_received.min(MASK48) | (u64::from(self.dscp & 0x3f) << 48) | (u64::from(self.flags) << 56);
        b[16..24].copy_from_slice(&acked.to_le_bytes());
        b[24..32].copy_from_slice(&recv.to_le_bytes());
        b[32..40].copy_from_slice(&self.start_ns.to_le_bytes());
        b[40..48].copy_from_slice(&self.end_ns.to_le_bytes());
        b
    }
}

/// The probe's counters (indices into the per-CPU `wf_stats` map).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Stat {
    /// TCP state changes seen.
    Events = 0,
    /// Skipped: not IPv4.
    NotIpv4 = 1,
    /// Skipped by the port or netns filter.
    Filtered = 2,
    /// Connections tracked (including [`Stat::OpenedLate`]).
    Opened = 3,
    /// Closes of wanted connections that were not tracked (their records are lost): opened before
    /// the probe loaded, or no program (main or standby) handled any of its events between open
    /// and close (the agent's `missed_events`).
    UntrackedClose = 4,
    /// Tracked attempts that closed before the handshake completed.
    NeverEstablished = 5,
    /// Records lost because the ring buffer was full.
    RingbufFull = 6,
    /// Records written to the ring buffer.
    Emitted = 7,
    /// Wanted connections not tracked because the open-flow map was full (their records are lost).
    OpenFailed = 8,
    /// Tracked connections whose close event was missed, recorded when the socket was destroyed.
    ClosedAtDestroy = 9,
    /// Connections whose open event was missed, tracked from the first state after it (their
    /// start is late by the rest of the handshake).
    OpenedLate = 10,
    /// Events the kernel skipped for a main program (it was already running on that CPU, e.g.
    /// interrupted by a softirq) and that program's standby handled instead.
    StandbyEvents = 11,
}

impl Stat {
    /// Every counter, in index order.
    pub const ALL: [Stat; 12] = [
        Stat::Events,
        Stat::NotIpv4,
        Stat::Filtered,
        Stat::Opened,
        Stat::UntrackedClose,
        Stat::NeverEstablished,
        Stat::RingbufFull,
        Stat::Emitted,
        Stat::OpenFailed,
        Stat::ClosedAtDestroy,
        Stat::OpenedLate,
        Stat::StandbyEvents,
    ];
    /// A snake_case name for metrics.
    pub fn name(self) -> &'static str {
        match self {
            Stat::Events => "events",
            Stat::NotIpv4 => "not_ipv4",
            Stat::Filtered => "filtered",
            Stat::Opened => "opened",
            Stat::UntrackedClose => "untracked_close",
            Stat::NeverEstablished => "never_established",
            Stat::RingbufFull => "ringbuf_full",
            Stat::Emitted => "emitted",
            Stat::OpenFailed => "open_failed",
            Stat::ClosedAtDestroy => "closed_at_destroy",
            Stat::OpenedLate => "opened_late",
            Stat::StandbyEvents => "standby_events",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RawRecord {
        RawRecord {
            saddr: [198, 18, 1, 2],
            daddr: [198, 18, 100, 2],
            sport: 40000,
            dport: 5001,
            srtt_us: 21,
            bytes_acked: 123_456_789,
            bytes_received: 7,
            retrans: 3,
            dscp: 26,
            flags: FLAG_ACTIVE | FLAG_ESTABLISHED,
            start_ns: 1,
            end_ns: 2,
        }
    }

    #[test]
    fn round_trips_through_the_wire_layout() {
        let r = sample();
        assert_eq!(RawRecord::from_le_bytes(&r.to_le_bytes()), Some(r));
    }

    #[test]
    fn packed_fields_sit_where_the_c_header_says() {
        let b = sample().to_le_bytes();
        assert_eq!(&b[0..4], &[198, 18, 1, 2]);
        assert_eq!(
            u16::from_le_bytes([b[22], b[23]]),
            3,
            "retrans in bits 48..63 of offset 16"
        );
        assert_eq!(b[30], 26, "dscp in bits 48..53 of offset 24");
        assert_eq!(b[31], 3, "flags in bits 56..63 of offset 24");
    }

    #[test]
    fn short_input_is_none_and_oversized_counters_saturate() {
        assert_eq!(RawRecord::from_le_bytes(&[0u8; 47]), None);
        let mut r = sample();
        r.bytes_acked = u64::MAX;
        let back = RawRecord::from_le_bytes(&r.to_le_bytes()).unwrap();
        assert_eq!(back.bytes_acked, MASK48);
        assert_eq!(back.retrans, 3);
    }
}
