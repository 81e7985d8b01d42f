// SPDX-License-Identifier: GPL-2.0
//
// Workfeed flow capture: one fixed-layout 48-byte record per finished IPv4 TCP connection,
// emitted through a BPF ring buffer.
//
// Hook: the tracepoint sock:inet_sock_set_state (kprobes and fentry are unavailable on the
// target kernel). A connection starts being tracked when it enters SYN_SENT (active open) or
// SYN_RECV (passive open, the child socket) and passes the filters; it is emitted when it enters
// TCP_CLOSE, with the counters the kernel keeps in struct tcp_sock.
//
// The record layout is defined in workfeed_record.h and mirrored by the Rust crate
// (workfeed-ebpf/src/record.rs); docs/workfeed.md documents it byte by byte.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

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
#define WF_TCP_CLOSING 11

char LICENSE[] SEC("license") = "GPL";

// Per-socket state between the open and the close.
struct wf_open {
	__u64 start_ns;
	__u8 flags;
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
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

static __always_inline void wf_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&wf_stats, &idx);
	if (v)
		*v += 1;
}

static __always_inline int wf_wanted(const struct sock *sk, __u16 server_port)
{
	__u32 zero = 0;
	__u32 *cfg = bpf_map_lookup_elem(&wf_config, &zero);
	__u32 bits = cfg ? *cfg : 0;

	if (bits & WF_CFG_PORTS) {
		if (!bpf_map_lookup_elem(&wf_ports, &server_port))
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

SEC("tracepoint/sock/inet_sock_set_state")
int wf_set_state(struct trace_event_raw_inet_sock_set_state *ctx)
{
	if (ctx->protocol != IPPROTO_TCP)
		return 0;
	wf_count(WF_STAT_EVENTS);
	if (ctx->family != AF_INET) {
		wf_count(WF_STAT_NOT_IPV4);
		return 0;
	}

	// Read every context field once, in full: the verifier rejects loads through a context
	// pointer the compiler has offset (e.g. a conditional choice between two fields).
	__u64 key = (__u64)ctx->skaddr;
	const struct sock *sk = (const struct sock *)ctx->skaddr;
	int newstate = ctx->newstate;
	int oldstate = ctx->oldstate;
	__u16 sport = ctx->sport;
	__u16 dport = ctx->dport;
	__u32 saddr = *(volatile __u32 *)ctx->saddr;
	__u32 daddr = *(volatile __u32 *)ctx->daddr;
	asm volatile("" : "+r"(sport), "+r"(dport));

	if (newstate == WF_TCP_SYN_SENT || newstate == WF_TCP_SYN_RECV) {
		// Active open: the server is the remote end; passive open: we are the server.
		__u8 active = newstate == WF_TCP_SYN_SENT;
		__u16 server_port = active ? dport : sport;
		if (!wf_wanted(sk, server_port)) {
			wf_count(WF_STAT_FILTERED);
			return 0;
		}
		struct wf_open open = {};
		open.start_ns = bpf_ktime_get_ns();
		open.flags = active ? WF_FLAG_ACTIVE : 0;
		if (bpf_map_update_elem(&wf_open_flows, &key, &open, BPF_ANY) == 0)
			wf_count(WF_STAT_OPENED);
		return 0;
	}

	if (newstate != WF_TCP_CLOSE) {
		// Remember the handshake and the FINs: bytes_acked counts the active side's SYN and
		// an acknowledged FIN, bytes_received counts the peer's FIN; the close subtracts them.
		struct wf_open *open = bpf_map_lookup_elem(&wf_open_flows, &key);
		if (!open)
			return 0;
		if (newstate == WF_TCP_ESTABLISHED)
			open->flags |= WF_FLAG_ESTABLISHED;
		else if (newstate == WF_TCP_FIN_WAIT1 || newstate == WF_TCP_LAST_ACK)
			open->flags |= WF_FLAG_FIN_SENT;
		else if (newstate == WF_TCP_CLOSE_WAIT || newstate == WF_TCP_CLOSING)
			open->flags |= WF_FLAG_PEER_FIN;
		return 0;
	}

	struct wf_open *open = bpf_map_lookup_elem(&wf_open_flows, &key);
	if (!open) {
		wf_count(WF_STAT_UNTRACKED_CLOSE);
		return 0;
	}
	__u64 start_ns = open->start_ns;
	__u8 flags = open->flags;
	// The socket leaves FIN_WAIT2 for TIME_WAIT when the peer's FIN arrives.
	if (oldstate == WF_TCP_FIN_WAIT2)
		flags |= WF_FLAG_PEER_FIN;
	bpf_map_delete_elem(&wf_open_flows, &key);

	if (!(flags & WF_FLAG_ESTABLISHED)) {
		// A connection attempt that never carried data (refused, timed out, reset in the
		// handshake) is not a flow.
		wf_count(WF_STAT_NEVER_ESTABLISHED);
		return 0;
	}

	struct wf_record *rec = bpf_ringbuf_reserve(&wf_records, sizeof(*rec), 0);
	if (!rec) {
		wf_count(WF_STAT_RINGBUF_FULL);
		return 0;
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

	rec->saddr = saddr;
	rec->daddr = daddr;
	rec->sport = sport;
	rec->dport = dport;
	rec->srtt_us = srtt8 >> 3; // the kernel keeps srtt << 3
	if (retrans > 0xffff)
		retrans = 0xffff;
	rec->acked_retrans = wf_sat48(acked) | ((__u64)retrans << 48);
	rec->received_class =
		wf_sat48(received) | ((__u64)(tos >> 2) << 48) | ((__u64)flags << 56);
	rec->start_ns = start_ns;
	rec->end_ns = bpf_ktime_get_ns();
	// Wake the reader only once a batch has accumulated; it also drains on a timer, so a
	// quiet host's records wait at most one agent flush interval.
	__u64 pending = bpf_ringbuf_query(&wf_records, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(rec, pending >= WF_WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	wf_count(WF_STAT_EMITTED);
	return 0;
}
