// SPDX-License-Identifier: GPL-2.0
// pp_dctcp: DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257) as a BPF struct_ops congestion
// control, written for the Polyphony testbed because this kernel ships no dctcp module.
//
// Sender (RFC 8257 §3.3): per observation window of one RTT (ended when snd_una passes the
// sequence number recorded at the window's start), F = marked bytes / acked bytes and
// alpha <- (1 - g) alpha + g F with g = 1/16 (alpha kept scaled by 1024). On an ECN echo the
// kernel enters CWR once per window and asks ssthresh: cwnd (1 - alpha / 2). The window is
// set by pp_cong_control (not the kernel's PRR), robust to op results that get lost on this
// kernel (see pp_sanitize).
// Receiver (RFC 8257 §3.2): ECE echoes the CE state of the data exactly; when that state
// flips, data not yet acknowledged is acknowledged at once with the previous state, and the
// packet that flipped it is acknowledged without delay.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

#define PP_NEEDS_ECN 0x2        /* TCP_CONG_NEEDS_ECN */
#define PP_ECN_DEMAND_CWR 0x4   /* TCP_ECN_DEMAND_CWR */
#define PP_ALPHA_ONE 1024U
#define PP_G_SHIFT 4            /* g = 1/16 */
#define PP_INFINITE_SSTHRESH 0x7fffffffU /* TCP_INFINITE_SSTHRESH */
#define PP_CWND_SANE (1U << 20) /* no real window here comes near 2^20 packets */
#define PP_CWND_FALLBACK 10U

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

struct pp_state {
	__u32 window_end;    /* snd_nxt when the current observation window started */
	__u32 prior_una;     /* snd_una at the previous ACK */
	__u32 acked_bytes;   /* acked in this window */
	__u32 marked_bytes;  /* acked with ECE in this window */
	__u32 alpha;         /* scaled by PP_ALPHA_ONE */
	__u32 prior_rcv_nxt; /* receiver: rcv_nxt before the data that raised the last event */
	__u32 ce_state;      /* receiver: CE state of the last data packet */
};

static __always_inline struct pp_state *pp(struct sock *sk)
{
	return (struct pp_state *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline struct tcp_sock *tcp(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline void pp_new_window(struct sock *sk)
{
	struct pp_state *s = pp(sk);

	s->window_end = tcp(sk)->snd_nxt;
	s->acked_bytes = 0;
	s->marked_bytes = 0;
}

SEC("struct_ops")
void BPF_PROG(pp_init, struct sock *sk)
{
	struct pp_state *s = pp(sk);
	struct tcp_sock *tp = tcp(sk);

	s->prior_una = tp->snd_una;
	s->prior_rcv_nxt = tp->rcv_nxt;
	s->alpha = PP_ALPHA_ONE;
	s->ce_state = 0;
	pp_new_window(sk);
}

/* cwnd (1 - alpha / 2), at least 2. */
static __always_inline __u32 pp_reduced(struct sock *sk, __u32 cwnd)
{
	__u32 cut = (cwnd * pp(sk)->alpha) >> 11; /* cwnd * alpha / 2 */

	return cwnd - cut > 2 ? cwnd - cut : 2;
}

/* On this kernel (6.18, x86 with the SRSO return thunk) an op call occasionally has no effect
 * and a returning op hands back garbage: tracing tcp_probe showed ssthresh set to 2165326096
 * (0x81104110, the low half of the kernel text address 0xffffffff81104110 next to
 * srso_alias_return_thunk) at about one CWR entry in 400, for flows whose cwnd was 10 or 101,
 * a value pp_ssthresh cannot compute (its result is at most cwnd), and the ssthresh that
 * set_state(CWR) writes was missing as well. Why the kernel skips the program was not
 * determined. An ssthresh above TCP_INFINITE_SSTHRESH made PRR grow cwnd to hundreds of
 * millions, the flow dumped its send buffer into the class queue and the bfifo dropped
 * thousands of packets. So the window never depends on one call: pp_cong_control replaces
 * PRR, and every ACK repairs a window or threshold no real flow can have. */
static __always_inline void pp_sanitize(struct sock *sk)
{
	struct tcp_sock *tp = tcp(sk);
	__u32 cwnd = tp->snd_cwnd;

	if (cwnd > PP_CWND_SANE) {
		cwnd = tp->prior_cwnd >= 2 && tp->prior_cwnd <= PP_CWND_SANE ? tp->prior_cwnd
									 : PP_CWND_FALLBACK;
		tp->snd_cwnd = cwnd;
	}
	if (tp->snd_ssthresh > PP_INFINITE_SSTHRESH)
		tp->snd_ssthresh = pp_reduced(sk, cwnd);
}

SEC("struct_ops")
__u32 BPF_PROG(pp_ssthresh, struct sock *sk)
{
	return pp_reduced(sk, tcp(sk)->snd_cwnd);
}

SEC("struct_ops")
void BPF_PROG(pp_in_ack_event, struct sock *sk, __u32 flags)
{
	struct pp_state *s = pp(sk);
	struct tcp_sock *tp = tcp(sk);
	__u32 acked = tp->snd_una - s->prior_una;
	__u32 a;

	pp_sanitize(sk);
	if (acked == 0 && (flags & CA_ACK_ECE))
		acked = tp->mss_cache; /* a duplicate ACK still reports one marked segment */
	s->prior_una = tp->snd_una;
	s->acked_bytes += acked;
	if (flags & CA_ACK_ECE)
		s->marked_bytes += acked;

	if ((__s32)(tp->snd_una - s->window_end) <= 0)
		return;
	/* End of an observation window: alpha <- (1 - g) alpha + g F. */
	a = s->alpha - (s->alpha >> PP_G_SHIFT);
	if (s->marked_bytes && s->acked_bytes) {
		__u64 f = ((__u64)s->marked_bytes << 10) / s->acked_bytes; /* F scaled by 1024 */
		a += (__u32)(f >> PP_G_SHIFT);
	}
	s->alpha = a > PP_ALPHA_ONE ? PP_ALPHA_ONE : a;
	pp_new_window(sk);
}

static __always_inline void pp_ce_flip(struct sock *sk, __u32 new_state)
{
	struct pp_state *s = pp(sk);
	struct tcp_sock *tp = tcp(sk);
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;

	if (s->ce_state != new_state) {
		/* Data received under the old state and not yet acknowledged (a delayed ACK is
		 * pending) is acknowledged now, echoing the old state. Without pending data no such
		 * ACK is sent: it would be a duplicate ACK and could trigger fast retransmit. */
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			if (s->ce_state)
				tp->ecn_flags |= PP_ECN_DEMAND_CWR;
			else
				tp->ecn_flags &= ~PP_ECN_DEMAND_CWR;
			bpf_tcp_send_ack(tp, s->prior_rcv_nxt);
		}
		/* The packet that flipped the state is acknowledged without delay. */
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
		s->ce_state = new_state;
	}
	if (new_state)
		tp->ecn_flags |= PP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~PP_ECN_DEMAND_CWR;
	s->prior_rcv_nxt = tp->rcv_nxt;
}

SEC("struct_ops")
void BPF_PROG(pp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_ECN_IS_CE)
		pp_ce_flip(sk, 1);
	else if (ev == CA_EVENT_ECN_NO_CE)
		pp_ce_flip(sk, 0);
}

SEC("struct_ops")
void BPF_PROG(pp_set_state, struct sock *sk, __u8 new_state)
{
	struct pp_state *s = pp(sk);
	struct tcp_sock *tp = tcp(sk);
	__u8 old_state = ((struct inet_connection_sock *)sk)->icsk_ca_state;

	if (new_state == old_state)
		return;
	/* An ECN echo (CWR): ssthresh = cwnd (1 - alpha / 2), written here as well as returned
	 * by pp_ssthresh, because the returned value can be lost (see pp_sanitize). The kernel
	 * calls this right after ssthresh and before PRR uses it. */
	if (new_state == TCP_CA_CWR)
		tp->snd_ssthresh = pp_reduced(sk, tp->snd_cwnd);
	/* A loss (fast recovery or timeout) is answered like standard TCP (RFC 8257 §3.4): the
	 * window is halved whatever alpha says. */
	if (new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss) {
		__u32 half = tp->snd_cwnd >> 1;

		tp->snd_ssthresh = half > 2 ? half : 2;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(pp_undo_cwnd, struct sock *sk)
{
	/* Undo after a reduction judged spurious keeps the current window. Restoring the window
	 * from before the loss (what Reno does) let flows jump back to windows far above what
	 * the marks allow on this testbed, overflow the class buffer and lose whole windows. */
	return tcp(sk)->snd_cwnd;
}

SEC("struct_ops")
void BPF_PROG(pp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	pp_sanitize(sk);
	tcp_reno_cong_avoid(sk, ack, acked);
}

#define PP_FLAG_DATA_ACKED 0x04 /* FLAG_DATA_ACKED of tcp_input.c */

/* The window itself, instead of the kernel's PRR and the cong_avoid call: a value lost on its
 * way back from an op (see pp_sanitize) then cannot be multiplied into a window of hundreds of
 * millions of packets, and a call that does not run leaves the window as it was. In CWR and
 * fast recovery the window drops to ssthresh at once (as Linux did before PRR); otherwise it
 * grows like Reno when data was acknowledged. */
SEC("struct_ops")
void BPF_PROG(pp_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp(sk);
	__u8 state = ((struct inet_connection_sock *)sk)->icsk_ca_state;

	pp_sanitize(sk);
	if (state == TCP_CA_CWR || state == TCP_CA_Recovery) {
		if (tp->snd_cwnd > tp->snd_ssthresh)
			tp->snd_cwnd = tp->snd_ssthresh;
		return;
	}
	if (flag & PP_FLAG_DATA_ACKED)
		tcp_reno_cong_avoid(sk, ack, rs->acked_sacked);
}

SEC(".struct_ops")
struct tcp_congestion_ops pp_dctcp = {
	.init = (void *)pp_init,
	.ssthresh = (void *)pp_ssthresh,
	.in_ack_event = (void *)pp_in_ack_event,
	.cwnd_event = (void *)pp_cwnd_event,
	.set_state = (void *)pp_set_state,
	.undo_cwnd = (void *)pp_undo_cwnd,
	.cong_avoid = (void *)pp_cong_avoid,
	.cong_control = (void *)pp_cong_control,
	.flags = PP_NEEDS_ECN,
	.name = "pp_dctcp",
};
