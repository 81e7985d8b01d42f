/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The record Workfeed's probe emits, and the indices and bits shared with userspace.
 * Mirrored by workfeed-ebpf/src/record.rs; a layout change must change both (the Rust side
 * asserts the size and offsets at compile time).
 */
#ifndef WORKFEED_RECORD_H
#define WORKFEED_RECORD_H

/*
 * Connections tracked between open and close, per host. A plain hash, allocated as entries are
 * added (a full table costs ~20 MiB): when it is full a new connection is not tracked and counted
 * (WF_STAT_OPEN_FAILED); an LRU hash would instead evict a live connection silently. Entries live
 * from SYN to close (TIME_WAIT sockets are not held), so this bounds the concurrently open
 * connections of the captured namespaces.
 */
#define WF_MAX_OPEN_FLOWS 262144
#define WF_RINGBUF_BYTES (1 << 22) /* 4 MiB: 87 381 records */
#define WF_MAX_FILTER_ENTRIES 64
#define WF_WAKEUP_BYTES (32 * 56) /* wake the reader at 32 pending records (48 B + 8 B header) */
#define WF_MASK48 0xffffffffffffULL

/* wf_config[0] bits */
#define WF_CFG_PORTS 1
#define WF_CFG_NETNS 2

/* record flag bits (bits 56..63 of received_class) */
#define WF_FLAG_ACTIVE 1      /* this socket opened the connection (it is the client) */
#define WF_FLAG_ESTABLISHED 2 /* the handshake completed */
#define WF_FLAG_FIN_SENT 4    /* this socket sent a FIN (closed its side) */
#define WF_FLAG_PEER_FIN 8    /* the peer's FIN arrived */

/* wf_stats indices */
#define WF_STAT_EVENTS 0            /* TCP state changes seen */
#define WF_STAT_NOT_IPV4 1          /* skipped: not IPv4 */
#define WF_STAT_FILTERED 2          /* skipped: port / netns filter */
#define WF_STAT_OPENED 3            /* connections tracked (including WF_STAT_OPENED_LATE) */
#define WF_STAT_UNTRACKED_CLOSE 4   /* closes of wanted connections not tracked (opened before load, or no event seen between open and close) */
#define WF_STAT_NEVER_ESTABLISHED 5 /* tracked attempts that closed before the handshake completed */
#define WF_STAT_RINGBUF_FULL 6      /* records lost: ring buffer full */
#define WF_STAT_EMITTED 7           /* records written to the ring buffer */
#define WF_STAT_OPEN_FAILED 8       /* wanted connections not tracked: the open-flow map was full */
#define WF_STAT_CLOSED_AT_DESTROY 9 /* tracked connections whose close event was missed, recorded at socket destruction */
#define WF_STAT_OPENED_LATE 10      /* tracked from the first state after a missed open event (start late by the rest of the handshake) */
#define WF_STAT_STANDBY_EVENTS 11   /* events a main program was skipped for (it was running on the CPU) and its standby handled */
#define WF_STAT_COUNT 12

/* wf_running slots: one per hook */
#define WF_HOOK_SET_STATE 0
#define WF_HOOK_DESTROY 1
#define WF_HOOK_COUNT 2

/*
 * 48 bytes, no padding. Addresses in network byte order, everything else in host byte order.
 * Timestamps are CLOCK_MONOTONIC (bpf_ktime_get_ns) nanoseconds.
 */
struct wf_record {
	__u32 saddr;           /*  0: local IPv4 address (network byte order) */
	__u32 daddr;           /*  4: remote IPv4 address (network byte order) */
	__u16 sport;           /*  8: local port */
	__u16 dport;           /* 10: remote port */
	__u32 srtt_us;         /* 12: smoothed RTT at close, microseconds */
	__u64 acked_retrans;   /* 16: bits 0..47 payload bytes sent and acked, 48..63 retransmitted segments */
	__u64 received_class;  /* 24: bits 0..47 payload bytes received, 48..53 DSCP, 56..63 flags */
	__u64 start_ns;        /* 32: SYN_SENT / SYN_RECV time */
	__u64 end_ns;          /* 40: TCP_CLOSE time */
};

#endif
