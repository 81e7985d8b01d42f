// SPDX-License-Identifier: GPL-2.0
//
// Workfeed flow capture: one fixed-layout 48-byte record per finished IPv4 TCP connection,
// emitted through a BPF ring buffer.
//
// Hooks: the raw tracepoints inet_sock_set_state and tcp_destroy_sock (kprobes and fentry are
// unavailable on the target kernel). Raw tracepoints, not perf tracepoints: the kernel skips a perf
// tracepoint program whenever any tracing program or bpf() map syscall is active on the same CPU
// (the global bpf_prog_active guard), and a state change that arrives in a softirq at that moment
// was lost without a trace; a raw tracepoint program is skipped only when this same program is
// already running on the CPU, and the kernel counts every skip (the program's recursion_misses,
// which the agent exports).
//
// Each hook has a standby twin. The kernel skips a program that is already running on the CPU, and
// a softirq (a packet changing another socket's state) can interrupt the main program while it
// runs in process context; the main program marks itself running in a per-CPU flag, and the
// standby, attached to the same tracepoint, handles an event only while that flag is set — exactly
// the events the kernel skipped for the main program. Otherwise the standby returns at once. The
// agent reports the main programs' skips the standby did not take (missed_events): only a skip in
// the few instructions before the flag is set or after it is cleared.
//
// A connection starts being tracked when it enters SYN_SENT (active open) or SYN_RECV (passive
// open, the child socket) and passes the filters (or, when that event was missed, at the first
// state after it); it is emitted when it enters TCP_CLOSE, with
// the counters the kernel keeps in struct tcp_sock. Whether the handshake completed and which FINs
// were exchanged follow from the state the socket closes from, so a missed intermediate event
// changes nothing. A tracked socket destroyed without a close event (the close was missed) is
// emitted at destruction from the last state seen, and counted.
//
// The record layout is defined in workfeed_record.h and mirrored by the Rust crate
// (workfeed-ebpf/src/record.rs); docs/workfeed.md documents it byte by byte.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "workfeed_record.h"

#define AF_INET 2
#define IPPROTO_TCP 6

// TCP states (include/net/tcp_states.h).
#define WF_TCP_ESTABLISHED 1
#define WF_TCP_SYN_SENT 2
#define WF_TCP_SYN_RECV 3
#define WF_TCP_FIN_WAIT1 4
#define WF_TCP_FIN_WAIT2 5
#define WF_TCP_CLOSE 7
#define WF_TCP_CLOSE_WAIT 8
#define WF_TCP_LAST_ACK 9
#define WF_TCP_LISTEN 10
#define WF_TCP_CLOSING 11

char LICENSE[] SEC("license") = "GPL";

// Per-socket state between the open and the close.
struct wf_open {
	__u64 start_ns;
	__u8 flags;     // WF_FLAG_ACTIVE
	__u8 last_state; // the newest state seen (for a close recorded at destruction)
	__u8 pad[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, WF_MAX_OPEN_FLOWS);
	__type(key, __u64); // the socket's kernel address
	__type(value, struct wf_open);
} wf_open_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, WF_RINGBUF_BYTES);
} wf_records SEC(".maps");

// Filter switches: index 0 holds WF_CFG_* bits.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} wf_config SEC(".maps");

// Server ports to capture when WF_CFG_PORTS is set (value unused).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WF_MAX_FILTER_ENTRIES);
	__type(key, __u16);
	__type(value, __u8);
} wf_ports SEC(".maps");

// Network-namespace inode numbers to capture when WF_CFG_NETNS is set (value unused).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WF_MAX_FILTER_ENTRIES);
	__type(key, __u32);
	__type(value, __u8);
} wf_netns SEC(".maps");

// Counters, one slot per WF_STAT_* index, per CPU.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WF_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} wf_stats SEC(".maps");

// Per CPU, one slot per hook (WF_HOOK_*): 1 while the main program runs.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WF_HOOK_COUNT);
	__type(key, __u32);
	__type(value, __u32);
} wf_running SEC(".maps");

static __always_inline void wf_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&wf_stats, &idx);
	if (v)
		*v += 1;
}

// Whether the filters capture this socket. `port_a` is its server port; at a close, where the
// roles are unknown, `port_b` is the other port (either may match); pass port_a otherwise.
static __always_inline int wf_wanted(const struct sock *sk, __u16 port_a, __u16 port_b)
{
	__u32 zero = 0;
	__u32 *cfg = bpf_map_lookup_elem(&wf_config, &zero);
	__u32 bits = cfg ? *cfg : 0;

	if (bits & WF_CFG_PORTS) {
		if (!bpf_map_lookup_elem(&wf_ports, &port_a) && !bpf_map_lookup_elem(&wf_ports, &port_b))
			return 0;
	}
	if (bits & WF_CFG_NETNS) {
		__u32 inum = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
		if (!bpf_map_lookup_elem(&wf_netns, &inum))
			return 0;
	}
	return 1;
}

static __always_inline __u64 wf_sat48(__u64 v)
{
	return v > WF_MASK48 ? WF_MASK48 : v;
}

// Record flags implied by the state a socket closes from (FIN_WAIT2 -> TIME_WAIT is how the
// peer's FIN usually ends a FIN_WAIT2 socket).
static __always_inline __u8 wf_flags_from(int oldstate)
{
	__u8 f = 0;
	if (oldstate != WF_TCP_SYN_SENT && oldstate != WF_TCP_SYN_RECV)
		f |= WF_FLAG_ESTABLISHED;
	if (oldstate == WF_TCP_FIN_WAIT1 || oldstate == WF_TCP_FIN_WAIT2 ||
	    oldstate == WF_TCP_CLOSING || oldstate == WF_TCP_LAST_ACK)
		f |= WF_FLAG_FIN_SENT;
	if (oldstate == WF_TCP_CLOSE_WAIT || oldstate == WF_TCP_LAST_ACK ||
	    oldstate == WF_TCP_CLOSING || oldstate == WF_TCP_FIN_WAIT2)
		f |= WF_FLAG_PEER_FIN;
	return f;
}

// Emits the record of a tracked socket that closed from `oldstate`. `open` is a copy: the caller
// has already removed the map entry.
static __always_inline void wf_emit(const struct sock *sk, const struct wf_open *open, int oldstate)
{
	__u8 flags = (open->flags & WF_FLAG_ACTIVE) | wf_flags_from(oldstate);
	if (!(flags & WF_FLAG_ESTABLISHED)) {
		// A connection attempt that never carried data (refused, timed out, reset in the
		// handshake) is not a flow.
		wf_count(WF_STAT_NEVER_ESTABLISHED);
		return;
	}

	struct wf_record *rec = bpf_ringbuf_reserve(&wf_records, sizeof(*rec), 0);
	if (!rec) {
		wf_count(WF_STAT_RINGBUF_FULL);
		return;
	}

	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	const struct inet_sock *inet = (const struct inet_sock *)sk;
	__u64 acked = BPF_CORE_READ(tp, bytes_acked);
	__u64 received = BPF_CORE_READ(tp, bytes_received);
	__u32 srtt8 = BPF_CORE_READ(tp, srtt_us);
	__u32 retrans = BPF_CORE_READ(tp, total_retrans);
	__u8 tos = BPF_CORE_READ(inet, tos);
	__u32 snd_una = BPF_CORE_READ(tp, snd_una);
	__u32 write_seq = BPF_CORE_READ(tp, write_seq);

	// Payload only: take out the sequence numbers the SYN and FINs consumed.
	__u64 control = (flags & WF_FLAG_ACTIVE) ? 1 : 0;
	if ((flags & WF_FLAG_FIN_SENT) && snd_una == write_seq)
		control += 1;
	acked = acked > control ? acked - control : 0;
	if ((flags & WF_FLAG_PEER_FIN) && received > 0)
		received -= 1;

	// The inet_sock fields, as the perf tracepoint reports them: by the time the close event
	// fires the kernel has released the local port (skc_num = 0) but keeps inet_sport.
	rec->saddr = BPF_CORE_READ(inet, inet_saddr);
	rec->daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	rec->sport = bpf_ntohs(BPF_CORE_READ(inet, inet_sport));
	rec->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	rec->srtt_us = srtt8 >> 3; // the kernel keeps srtt << 3
	if (retrans > 0xffff)
		retrans = 0xffff;
	rec->acked_retrans = wf_sat48(acked) | ((__u64)retrans << 48);
	rec->received_class =
		wf_sat48(received) | ((__u64)(tos >> 2) << 48) | ((__u64)flags << 56);
	rec->start_ns = open->start_ns;
	rec->end_ns = bpf_ktime_get_ns();
	// Wake the reader only once a batch has accumulated; it also drains on a timer, so a
	// quiet host's records wait at most one agent flush interval.
	__u64 pending = bpf_ringbuf_query(&wf_records, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(rec, pending >= WF_WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	wf_count(WF_STAT_EMITTED);
}

// Takes the entry of `key` out of the map; returns whether there was one.
static __always_inline int wf_take(__u64 key, struct wf_open *out)
{
	struct wf_open *open = bpf_map_lookup_elem(&wf_open_flows, &key);
	if (!open)
		return 0;
	*out = *open;
	// Only the deleting caller emits: a close and a destruction racing on one entry (they do
	// not, the socket lock orders them, but stay safe) cannot both report it.
	return bpf_map_delete_elem(&wf_open_flows, &key) == 0;
}

#define WF_TRACKED 0
#define WF_NOT_WANTED 1
#define WF_MAP_FULL 2

// Starts tracking `sk` if the filters want it; returns WF_TRACKED, WF_NOT_WANTED or WF_MAP_FULL.
static __always_inline int wf_track(const struct sock *sk, __u64 key, __u8 active, int state)
{
	// Active open: the server is the remote end; passive open: we are the server. (At SYN_SENT
	// the local port may not be chosen yet; the remote one is.)
	const struct inet_sock *inet = (const struct inet_sock *)sk;
	__u16 server_port = active ? bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport))
				   : bpf_ntohs(BPF_CORE_READ(inet, inet_sport));
	if (!wf_wanted(sk, server_port, server_port))
		return WF_NOT_WANTED;
	struct wf_open open = {};
	open.start_ns = bpf_ktime_get_ns();
	open.flags = active ? WF_FLAG_ACTIVE : 0;
	open.last_state = state;
	if (bpf_map_update_elem(&wf_open_flows, &key, &open, BPF_ANY) != 0) {
		wf_count(WF_STAT_OPEN_FAILED);
		return WF_MAP_FULL;
	}
	wf_count(WF_STAT_OPENED);
	return WF_TRACKED;
}

// inet_sock_set_state(const struct sock *sk, const int oldstate, const int newstate)
static __always_inline void wf_on_set_state(void *ctx)
{
	// The context is the tracepoint's arguments as u64s. (Read as a plain array: vmlinux.h's
	// struct bpf_raw_tracepoint_args has a flexible array, which CO-RE relocation rejects.)
	const __u64 *args = ctx;
	const struct sock *sk = (const struct sock *)args[0];
	int oldstate = (int)args[1];
	int newstate = (int)args[2];

	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return;
	wf_count(WF_STAT_EVENTS);
	if (BPF_CORE_READ(sk, __sk_common.skc_family) != AF_INET) {
		wf_count(WF_STAT_NOT_IPV4);
		return;
	}
	__u64 key = (__u64)sk;

	if (newstate == WF_TCP_SYN_SENT || newstate == WF_TCP_SYN_RECV) {
		if (wf_track(sk, key, newstate == WF_TCP_SYN_SENT, newstate) == WF_NOT_WANTED)
			wf_count(WF_STAT_FILTERED);
		return;
	}

	if (newstate != WF_TCP_CLOSE) {
		struct wf_open *open = bpf_map_lookup_elem(&wf_open_flows, &key);
		if (open) {
			open->last_state = newstate;
		} else if (oldstate == WF_TCP_SYN_SENT || oldstate == WF_TCP_SYN_RECV) {
			// The open event was missed (the kernel skipped it, or the probe was loaded during
			// the handshake): track from the first state after it; the start is late by the
			// rest of the handshake (one RTT for a client, ~0 for a server's child socket).
			if (wf_track(sk, key, oldstate == WF_TCP_SYN_SENT, newstate) == WF_TRACKED)
				wf_count(WF_STAT_OPENED_LATE);
		}
		return;
	}

	struct wf_open open;
	if (!wf_take(key, &open)) {
		// A listener closing is not a connection; a connection the filters skip is counted
		// as filtered when it opened.
		const struct inet_sock *inet = (const struct inet_sock *)sk;
		if (oldstate != WF_TCP_LISTEN &&
		    wf_wanted(sk, bpf_ntohs(BPF_CORE_READ(inet, inet_sport)),
			      bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport))))
			wf_count(WF_STAT_UNTRACKED_CLOSE);
		return;
	}
	wf_emit(sk, &open, oldstate);
	return;
}

// tcp_destroy_sock(struct sock *sk): every TCP socket passes here once, after its close. A tracked
// entry still present means the close event was missed.
static __always_inline void wf_on_destroy(void *ctx)
{
	const __u64 *args = ctx;
	const struct sock *sk = (const struct sock *)args[0];
	struct wf_open open;
	if (!wf_take((__u64)sk, &open))
		return;
	wf_count(WF_STAT_CLOSED_AT_DESTROY);
	wf_emit(sk, &open, open.last_state);
}

// The main program of a hook: flags itself running on this CPU around the handler.
#define WF_MAIN(name, hook, handler)                                        \
	int name(void *ctx)                                                 \
	{                                                                   \
		__u32 slot = (hook);                                        \
		__u32 *running = bpf_map_lookup_elem(&wf_running, &slot);   \
		if (running)                                                \
			*running = 1;                                       \
		handler(ctx);                                               \
		if (running)                                                \
			*running = 0;                                       \
		return 0;                                                   \
	}

// The standby of a hook: handles an event only while the main program is running on this CPU,
// i.e. an event that interrupted it, which the kernel skipped for it.
#define WF_STANDBY(name, hook, handler)                                     \
	int name(void *ctx)                                                 \
	{                                                                   \
		__u32 slot = (hook);                                        \
		__u32 *running = bpf_map_lookup_elem(&wf_running, &slot);   \
		if (!running || !*running)                                  \
			return 0;                                           \
		wf_count(WF_STAT_STANDBY_EVENTS);                           \
		handler(ctx);                                               \
		return 0;                                                   \
	}

SEC("raw_tracepoint/inet_sock_set_state")
WF_MAIN(wf_set_state, WF_HOOK_SET_STATE, wf_on_set_state)
SEC("raw_tracepoint/inet_sock_set_state")
WF_STANDBY(wf_set_state_standby, WF_HOOK_SET_STATE, wf_on_set_state)
SEC("raw_tracepoint/tcp_destroy_sock")
WF_MAIN(wf_destroy, WF_HOOK_DESTROY, wf_on_destroy)
SEC("raw_tracepoint/tcp_destroy_sock")
WF_STANDBY(wf_destroy_standby, WF_HOOK_DESTROY, wf_on_destroy)
