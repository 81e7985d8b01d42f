// SPDX-License-Identifier: GPL-2.0
// Sojourn-time ECN marker of the Polyphony testbed.
//
// There is no tc hook at dequeue on this kernel, so the time a packet spends in the
// bottleneck's HTB queue is measured across two programs that share one set of maps:
//
//   pp_stamp  tc egress (clsact) of the switch's port `rx`. Runs in __dev_queue_xmit *before*
//             the packet is enqueued into HTB; writes now (CLOCK_MONOTONIC) into skb->tstamp
//             with the "monotonic delivery time" type.
//   pp_judge  tc ingress (clsact) of the receiver's `eth0`, the other end of the veth. A
//             monotonic delivery time survives the cross-namespace veth scrub
//             (skb_clear_tstamp keeps typed timestamps), so now - tstamp is the time spent in
//             the HTB queue plus the veth hand-off (a few µs). Where it exceeds the threshold
//             of the packet's DSCP (map ecn_thresh_ns), CE is set on the IPv4 header.
//
// Thresholds change at run time through the pinned map; no reload needed.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define TC_ACT_OK 0
#define ETH_P_IP 0x0800
#define ETH_HLEN 14

char LICENSE[] SEC("license") = "GPL";

// key: DSCP (0..63); value: sojourn threshold in ns. A DSCP without an entry is never marked.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} ecn_thresh_ns SEC(".maps");

// Per-DSCP counters of the judge (for status, tests and Workfeed cross-checks).
struct pp_ecn_stats {
	__u64 packets;      // IPv4 packets judged (carried a stamp)
	__u64 marked;       // packets this program set CE on
	__u64 sojourn_sum;  // sum of sojourn times, ns
	__u64 sojourn_max;  // largest sojourn seen, ns
	__u64 unstamped;    // IPv4 packets that arrived without a monotonic stamp
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct pp_ecn_stats);
} ecn_stats SEC(".maps");

static __always_inline int ipv4_tos(struct __sk_buff *skb, __u8 *tos)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + ETH_HLEN;

	if ((void *)(ip + 1) > end)
		return -1;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return -1;
	*tos = ip->tos;
	return 0;
}

SEC("tc")
int pp_stamp(struct __sk_buff *skb)
{
	__u8 tos;

	if (ipv4_tos(skb, &tos) == 0)
		bpf_skb_set_tstamp(skb, bpf_ktime_get_ns(), BPF_SKB_CLOCK_MONOTONIC);
	return TC_ACT_OK;
}

SEC("tc")
int pp_judge(struct __sk_buff *skb)
{
	__u8 tos;
	__u32 dscp;
	__u64 now, stamp, sojourn, *thresh;
	struct pp_ecn_stats *st;

	if (ipv4_tos(skb, &tos) != 0)
		return TC_ACT_OK;
	dscp = tos >> 2;
	st = bpf_map_lookup_elem(&ecn_stats, &dscp);
	// Reading tstamp_type makes the kernel hand over the raw delivery time at ingress.
	if (skb->tstamp_type != BPF_SKB_CLOCK_MONOTONIC || skb->tstamp == 0) {
		if (st)
			__sync_fetch_and_add(&st->unstamped, 1);
		return TC_ACT_OK;
	}
	stamp = skb->tstamp;
	now = bpf_ktime_get_ns();
	sojourn = now > stamp ? now - stamp : 0;
	// Hand the receiving stack an ordinary, unset receive timestamp.
	bpf_skb_set_tstamp(skb, 0, BPF_SKB_CLOCK_REALTIME);
	if (st) {
		__sync_fetch_and_add(&st->packets, 1);
		__sync_fetch_and_add(&st->sojourn_sum, sojourn);
		if (sojourn > st->sojourn_max)
			st->sojourn_max = sojourn;
	}
	thresh = bpf_map_lookup_elem(&ecn_thresh_ns, &dscp);
	if (thresh && sojourn > *thresh) {
		if (bpf_skb_ecn_set_ce(skb) && st)
			__sync_fetch_and_add(&st->marked, 1);
	}
	return TC_ACT_OK;
}
