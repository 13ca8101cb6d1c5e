// SPDX-License-Identifier: MIT OR GPL-2.0
/* webscope's kernel module: a view of each connection of the server's ports, summed in the
 * kernel as WebMonitor's did (Yates, Almeida & Almeida), with tracepoints instead of new
 * system calls.
 *
 * Every hook is a tp_btf program (a BTF-typed raw tracepoint): it needs no kprobes (this
 * machine's kernel has none), no tracefs and no fentry trampoline (refused here with EPERM).
 * Nothing is sent to user space per event: each event lands in a counter or a histogram
 * bucket in the global data below, which the monitor reads through a memory mapping at each
 * sample and differences against the previous reading.
 *
 *   inet_sock_set_state   SYN_RECV -> ESTABLISHED on a watched port: the connection enters
 *                         the accept queue (its birth; its handshake, from the SYN-ACK the
 *                         SYN made, is the kernel's first RTT sample); -> CLOSE: its lifetime
 *                         from either; every transition counted by the state entered.
 *   sys_exit              accept()/accept4() returning an fd: the fd's socket through the
 *                         task's fd table; it left the accept queue now.
 *   sock_recv_length      the first receive on a connection not seen leaving by accept():
 *                         io_uring's accepts (the embedded server's), which no syscall shows.
 *   kfree_skb             at a watched listener: the last ACK of a handshake dropped for a
 *                         full accept queue, or a bare ACK dropped under TCP_DEFER_ACCEPT;
 *                         at a TIME_WAIT socket: the RST that ended it.
 *   tcp_retransmit_skb    retransmitted segments; tcp_cong_state_set into Loss: a timeout.
 *   tcp_retransmit_synack SYN-ACKs sent again (the client's ACK lost, or dropped on overflow).
 *   timer_expire_entry    a TIME_WAIT socket's timer (tw_timer_handler's) firing: it ran its
 *                         course, from the kernel's own entry stamp to now. One cut short
 *                         by a new connection on its address pair is seen at that
 *                         connection's ESTABLISHED (tw_table); one an RST ended, at kfree_skb.
 *   sched_switch          run-queue latency of the watched processes' threads: from the
 *                         wake-up (or a preemption) to running, by the scheduler's stamp.
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Keep in step with kernel/layout.rs. */
#define MAX_PORTS 8
#define MAX_TGIDS 64
#define SUB_BITS 4
#define SUB (1 << SUB_BITS)
#define BUCKETS 1024
#define STATES 13

enum counter {
	C_ESTABLISHED,       /* SYN_RECV -> ESTABLISHED: entered the accept queue */
	C_ACCEPTED_SYSCALL,  /* left it, seen at accept()/accept4()'s return */
	C_ACCEPTED_READ,     /* left it, seen at the connection's first receive */
	C_CLOSED,            /* -> CLOSE of a connection born while watched (a lifetime) */
	C_CLOSED_UNSEEN,     /* -> CLOSE of one born before the monitor started */
	C_CLOSED_WAITING,    /* closed while still in the accept queue (never accepted) */
	C_TIME_WAIT,         /* closed from FIN_WAIT1/2 or CLOSING without an error: TIME_WAIT */
	C_RETRANS_SEGS,      /* segments retransmitted (as TcpRetransSegs counts them) */
	C_RETRANS_EVENTS,    /* retransmissions (one per skb sent again, or tried) */
	C_RTO,               /* entries into the Loss state: retransmission timeouts */
	C_SYNACK_RETRANS,    /* SYN-ACKs retransmitted */
	C_OVERFLOW_ACK,      /* handshakes completed into a full accept queue, dropped */
	C_CONNS_RETRANS,     /* closed connections that retransmitted at least once */
	C_DEFERRED_ACK,      /* bare ACKs dropped by a listener with TCP_DEFER_ACCEPT */
	C_TW_EXPIRED,        /* TIME_WAIT ran its course: its timer fired */
	C_TW_CUT,            /* TIME_WAIT ended early: a new connection on its pair */
	C_TW_FIN_WAIT2,      /* a timewait socket ended still waiting for the peer's FIN */
	C_TW_UNTIMED,        /* TIME_WAIT ended on a kernel without tw_entry_stamp (before 6.14) */
	C_RETRANS_UNLISTED,  /* retransmitting connections the ring had no room for */
	C_CONN_DISPLACED,    /* connections displaced from the table by another: untimed */
	C_TW_RESET,          /* TIME_WAIT ended by an RST (net.ipv4.tcp_rfc1337 = 0) */
	COUNTERS = 32,
};

enum runq_counter {
	R_WAITS,             /* run-queue waits recorded */
	R_MISSED,            /* switched in with no queueing stamp (the scheduler's sched_info off) */
	RUNQ_COUNTERS = 4,
};

struct port_stats {
	__u64 counters[COUNTERS];
	__u64 states[16];              /* transitions, by the state entered (TCP_*) */
	__u64 accept_wait[BUCKETS];    /* ns from ESTABLISHED to leaving the queue */
	__u64 lifetime[BUCKETS];       /* ns from ESTABLISHED to CLOSE */
	__u64 lifetime_syn[BUCKETS];   /* ns from the SYN(-ACK) to CLOSE */
	__u64 retrans_per_conn[BUCKETS]; /* retransmits of each closed connection that had any */
	__u64 time_wait[BUCKETS];      /* ns from entering TIME_WAIT to its end */
};

/* Written by user space through the mapping: which ports and processes to watch. */
__u8 port_slot[65536];        /* a port's slot + 1; 0: not watched */
__u32 tgids[MAX_TGIDS];
__u32 ntgids;
/* tw_timer_handler's address (/proc/kallsyms): the timers of TIME_WAIT sockets. */
__u64 tw_timer_fn;

/* Read by user space. */
struct port_stats ports[MAX_PORTS];
__u64 runq[BUCKETS];          /* ns from wake-up to running */
__u64 runq_counters[RUNQ_COUNTERS];

struct conn {
	__u64 sk;       /* the socket's address; 0: a free entry */
	__u64 born;     /* ns, bpf_ktime_get_ns */
	__u32 slot;
	__u32 waiting;  /* still in the accept queue (not seen leaving it) */
	__u32 retrans_seen; /* its total_retrans at the last retransmit seen */
	__u32 handshake_us; /* from its first SYN-ACK to ESTABLISHED; NO_HANDSHAKE: unknown */
};

#define NO_HANDSHAKE 0xffffffff

/* A connection that retransmitted, as it closes: the monitor keeps the run's worst few. Only
 * those that retransmitted come here, so the ring is quiet. kernel/probe.rs reads it. */
struct retransmitter {
	__u32 saddr[4];      /* the server's side; IPv4 in saddr[0] (network order) */
	__u32 daddr[4];      /* the peer's */
	__u32 retrans;       /* its total_retrans: segments sent again (SYN-ACKs included) */
	__u16 sport;         /* host order */
	__u16 dport;         /* host order */
	__u16 family;        /* AF_INET, AF_INET6 */
	__u8 slot;
	__u8 pad[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} retransmitters SEC(".maps");




#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_SYN_RECV 3
#define TCP_FIN_WAIT1 4
#define TCP_FIN_WAIT2 5
#define TCP_TIME_WAIT 6
#define TCP_CLOSE 7
#define TCP_LISTEN 10
#define TCP_CLOSING 11
#define TCP_CA_LOSS 4
#define IPPROTO_TCP 6
#define AF_INET6 10

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* Log-linear buckets: exact below 16, then 16 per power of two (at most 1/16 wide, so a
 * bucket's midpoint is within 3.2 % of any value in it). kernel/layout.rs inverts this. */
static __always_inline __u32 bucket_of(__u64 v)
{
	if (v < SUB)
		return v;
	__u32 k = log2_u64(v);
	__u32 b = ((k - SUB_BITS + 1) << SUB_BITS) + ((v >> (k - SUB_BITS)) & (SUB - 1));
	return b < BUCKETS ? b : BUCKETS - 1;
}

static __always_inline void record(__u64 *hist, __u64 v)
{
	__sync_fetch_and_add(&hist[bucket_of(v) & (BUCKETS - 1)], 1);
}

static __always_inline void count(__u32 slot, int which)
{
	__sync_fetch_and_add(&ports[slot & (MAX_PORTS - 1)].counters[which & (COUNTERS - 1)], 1);
}

/* Connections of watched ports from ESTABLISHED to CLOSE, in a table indexed by a hash of
 * the socket's address, two entries per index (one cache line): finding, adding and
 * removing one is a few loads and stores. A hash map's update and delete (its bucket lock,
 * its free list, the call) cost far more on the close path; socket-local storage cost more
 * again (creating a socket's storage), and the verifier refuses it the socket reached from
 * accept()'s fd. A connection that finds both entries taken takes the first, and the one it
 * displaces goes untimed (counted): with 16 Ki entries, rare below thousands open at once.
 * Entries are written by the hooks of their own socket, which the socket's lock orders. */
#define CONN_BITS 14
#define CONN_SLOTS (1 << CONN_BITS)
struct conn conns[CONN_SLOTS] SEC(".data.conns");

static __always_inline __u32 conn_index(const struct sock *sk)
{
	/* The socket's hash in the established table (of its addresses and ports, salted):
	 * set before ESTABLISHED, kept through CLOSE. The verifier allows no arithmetic on the
	 * socket's address itself. Cast: accept()'s path reaches the socket by plain reads. */
	return bpf_core_cast(sk, struct sock)->__sk_common.skc_hash & (CONN_SLOTS - 2);
}

static __always_inline struct conn *conn_find(const struct sock *sk)
{
	__u32 i = conn_index(sk);
	struct conn *c = &conns[i & (CONN_SLOTS - 1)];

	if (c->sk == (__u64)sk)
		return c;
	c = &conns[(i + 1) & (CONN_SLOTS - 1)];
	return c->sk == (__u64)sk ? c : 0;
}

/* TIME_WAIT entries of watched ports by the hash of their address pair, which the kernel
 * keeps for the timewait socket and gives the next connection on the same pair: when that
 * connection reaches ESTABLISHED, the TIME_WAIT it reused (the kernel lets a SYN end it)
 * lasted from the close to its SYN. One entry per index, the later taking it; a TIME_WAIT
 * that expires or is reset frees its own. */
#define TW_SLOTS (1 << 14)
struct tw_entry {
	__u32 hash;
	__u32 slot;
	__u64 entered;  /* ns; 0: free */
};
struct tw_entry tw_table[TW_SLOTS] SEC(".data.tw");

static __always_inline void conn_add(const struct sock *sk, const struct conn *v, __u32 slot)
{
	__u32 i = conn_index(sk);
	struct conn *c = &conns[i & (CONN_SLOTS - 1)];

	if (c->sk) {
		struct conn *d = &conns[(i + 1) & (CONN_SLOTS - 1)];
		if (!d->sk)
			c = d;
		else
			count(slot, C_CONN_DISPLACED);
	}
	c->born = v->born;
	c->slot = v->slot;
	c->waiting = v->waiting;
	c->retrans_seen = v->retrans_seen;
	c->handshake_us = v->handshake_us;
	c->sk = (__u64)sk;
}

/* The watched slot of a socket's local port, in *slot; false if the port is not watched.
 * The mask keeps the verifier sure of the bound whatever clang makes of the checks. */
static __always_inline bool slot_of(const struct sock *sk, __u32 *slot)
{
	if (!sk)
		return false;
	/* Direct loads, not BPF_CORE_READ: a tp_btf program may read kernel memory through a
	 * BTF pointer with a plain load (the JIT guards it), where bpf_probe_read_kernel is a
	 * helper call; this runs for every socket event on the machine. */
	const struct inet_sock *inet = bpf_core_cast(sk, struct inet_sock);
	__u16 port = bpf_ntohs(inet->inet_sport);
	__u32 s = port_slot[port];
	if (s == 0 || s > MAX_PORTS)
		return false;
	*slot = (s - 1) & (MAX_PORTS - 1);
	return true;
}

static __always_inline bool watched_tgid(__u32 tgid)
{
	__u32 n = ntgids;

	for (__u32 i = 0; i < MAX_TGIDS; i++) {
		if (i >= n)
			return false;
		if (tgids[i] == tgid)
			return true;
	}
	return false;
}

/* The connection left the accept queue now: its wait, once. */
static __always_inline void dequeued(const struct sock *sk, int how)
{
	struct conn *c = conn_find(sk);

	if (!c || !c->waiting)
		return;
	c->waiting = 0;
	__u32 slot = c->slot & (MAX_PORTS - 1);
	__u64 now = bpf_ktime_get_ns();
	record(ports[slot].accept_wait, now > c->born ? now - c->born : 0);
	count(slot, how);
}

static __always_inline void report_retransmitter(const struct sock *sk, __u32 slot, __u32 retrans)
{
	struct retransmitter r = {};
	const struct sock_common *c = &sk->__sk_common;

	r.family = c->skc_family;
	if (r.family == AF_INET6) {
		for (int i = 0; i < 4; i++) {
			r.saddr[i] = c->skc_v6_rcv_saddr.in6_u.u6_addr32[i];
			r.daddr[i] = c->skc_v6_daddr.in6_u.u6_addr32[i];
		}
	} else {
		r.saddr[0] = c->skc_rcv_saddr;
		r.daddr[0] = c->skc_daddr;
	}
	r.sport = bpf_ntohs(bpf_core_cast(sk, struct inet_sock)->inet_sport);
	r.dport = bpf_ntohs(c->skc_dport);
	r.retrans = retrans;
	r.slot = slot;
	if (bpf_ringbuf_output(&retransmitters, &r, sizeof(r), 0))
		count(slot, C_RETRANS_UNLISTED);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(on_state, const struct sock *sk, const int oldstate, const int newstate)
{
	/* The port first: half the sockets that pass here on a loopback run are the
	 * client's, on unwatched ports. */
	__u32 slot;
	if (!slot_of(sk, &slot) || sk->sk_protocol != IPPROTO_TCP)
		return 0;
	__sync_fetch_and_add(&ports[slot].states[newstate & 15], 1);

	if (newstate == TCP_ESTABLISHED && oldstate == TCP_SYN_RECV) {
		struct conn c = { .born = bpf_ktime_get_ns(), .slot = slot, .waiting = 1 };
		const struct tcp_sock *tp = bpf_core_cast(sk, struct tcp_sock);
		c.retrans_seen = tp->total_retrans;
		/* A passive open's SYN makes no state change (the request socket has none), but
		 * the kernel has just timed the handshake: tcp_check_req's first RTT sample is
		 * from the first SYN-ACK, sent as the SYN arrived, to now (with TCP_DEFER_ACCEPT,
		 * to the first data). With the SYN-ACK sent again (total_retrans is its count
		 * here) the sample is from the last one or none: not the handshake. */
		__u32 srtt = tp->srtt_us >> 3;
		c.handshake_us = c.retrans_seen == 0 && srtt ? srtt : NO_HANDSHAKE;
		/* A TIME_WAIT on this pair, seen entering and not expiring: this connection's SYN
		 * ended it. */
		__u32 hash = sk->__sk_common.skc_hash;
		struct tw_entry *e = &tw_table[hash & (TW_SLOTS - 1)];
		if (e->hash == hash && e->entered) {
			__u64 syn = c.born - (c.handshake_us != NO_HANDSHAKE ? (__u64)c.handshake_us * 1000 : 0);
			record(ports[e->slot & (MAX_PORTS - 1)].time_wait, syn > e->entered ? syn - e->entered : 0);
			count(e->slot, C_TW_CUT);
			e->entered = 0;
		}
		conn_add(sk, &c, slot);
		count(slot, C_ESTABLISHED);
		return 0;
	}
	if (newstate != TCP_CLOSE || oldstate == TCP_LISTEN || oldstate == TCP_SYN_SENT)
		return 0;

	if ((oldstate == TCP_FIN_WAIT1 || oldstate == TCP_FIN_WAIT2 || oldstate == TCP_CLOSING) &&
	    sk->sk_err == 0) {
		count(slot, C_TIME_WAIT);
		__u32 hash = sk->__sk_common.skc_hash;
		struct tw_entry *e = &tw_table[hash & (TW_SLOTS - 1)];
		e->hash = hash;
		e->slot = slot;
		e->entered = bpf_ktime_get_ns();
	}
	__u32 retrans = bpf_core_cast(sk, struct tcp_sock)->total_retrans;
	if (retrans) {
		count(slot, C_CONNS_RETRANS);
		record(ports[slot].retrans_per_conn, retrans);
		report_retransmitter(sk, slot, retrans);
	}
	struct conn *c = conn_find(sk);
	if (!c) {
		count(slot, C_CLOSED_UNSEEN);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	__u64 life = now > c->born ? now - c->born : 0;
	record(ports[slot].lifetime, life);
	if (c->handshake_us != NO_HANDSHAKE)
		record(ports[slot].lifetime_syn, life + (__u64)c->handshake_us * 1000);
	count(slot, C_CLOSED);
	if (c->waiting)
		count(slot, C_CLOSED_WAITING);
	c->sk = 0;
	return 0;
}

/* accept() and accept4() by number: x86-64's and arm64's tables. */
#if defined(__TARGET_ARCH_x86)
#define NR_ACCEPT 43
#define NR_ACCEPT4 288
#else
#define NR_ACCEPT -1
#define NR_ACCEPT4 -1
#endif

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	if (ret < 0 || NR_ACCEPT < 0)
		return 0;
	long nr = regs->orig_ax;
	if (nr != NR_ACCEPT && nr != NR_ACCEPT4)
		return 0;
	/* Only accept()'s returns get here: the fd table walk need not be cheap. */
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || (__u64)ret >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = 0;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[ret]) || !f)
		return 0;
	struct socket *sock = BPF_CORE_READ(f, private_data);
	if (!sock)
		return 0;
	const struct sock *sk = BPF_CORE_READ(sock, sk);
	__u32 slot;
	if (!slot_of(sk, &slot))
		return 0;
	dequeued(sk, C_ACCEPTED_SYSCALL);
	return 0;
}

/* Runs at every receive on the machine, so at every request a server reads: it returns at
 * once unless this could be the connection's first receive, without the hash lookup that
 * dequeued() makes. What the application has read so far is what arrived in order
 * (bytes_received, a FIN counted as one) less what it has not read yet (rcv_nxt - copied_seq);
 * at the first receive that is at most what this one returned, plus one for a FIN. Read in
 * this order, data arriving meanwhile can only make it smaller, so a first receive is never
 * missed; a later receive let through is looked up and found already dequeued. */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(on_recv, struct sock *sk, int ret, int flags)
{
	__u32 slot;
	if (!slot_of(sk, &slot) || sk->sk_protocol != IPPROTO_TCP)
		return 0;
	const struct tcp_sock *tp = bpf_core_cast(sk, struct tcp_sock);
	__s64 received = tp->bytes_received;
	__u32 unread = tp->rcv_nxt - tp->copied_seq;
	/* Signed: data arriving between the two reads can make it negative. */
	__s64 read = received - unread;
	if (read > (__s64)(ret > 0 ? ret : 0) + 1)
		return 0;
	dequeued(sk, C_ACCEPTED_READ);
	return 0;
}

/* A timewait socket of a watched port ended (`how`: its timer fired, C_TW_EXPIRED, or an RST
 * ended it, C_TW_RESET). Its time in TIME_WAIT runs from the kernel's own stamp
 * (tw_entry_stamp, ms, set when it entered and refreshed when a FIN_WAIT2 timewait gets the
 * peer's FIN) to now. One still in FIN_WAIT2 had no TIME_WAIT: counted apart, untimed. Its
 * entry in tw_table, if it has one, goes. */
static __always_inline void time_wait_ended(const struct inet_timewait_sock *tw, int how)
{
	__u32 s = port_slot[bpf_ntohs(tw->tw_sport)];
	if (s == 0 || s > MAX_PORTS)
		return;
	__u32 slot = (s - 1) & (MAX_PORTS - 1);
	__u32 hash = tw->__tw_common.skc_hash;
	struct tw_entry *e = &tw_table[hash & (TW_SLOTS - 1)];
	if (e->hash == hash && e->entered)
		e->entered = 0;
	if (tw->tw_substate != TCP_TIME_WAIT) {
		count(slot, C_TW_FIN_WAIT2);
		return;
	}
	count(slot, how);
	if (!bpf_core_field_exists(tw->tw_entry_stamp)) {
		count(slot, C_TW_UNTIMED);
		return;
	}
	__u32 ms = (__u32)(bpf_ktime_get_ns() / 1000000) - tw->tw_entry_stamp;
	record(ports[slot].time_wait, (__u64)ms * 1000000);
}

/* A segment that reached a timewait socket, dropped after it (tcp_v4_rcv's and tcp_v6_rcv's
 * discard, the timewait socket as rx_sk): the RST that ended it (with net.ipv4.tcp_rfc1337 =
 * 0, the default, an RST in window ends a TIME_WAIT), or one it answered or ignored. Ended,
 * its timer was shut down (inet_twsk_deschedule_put's timer_shutdown leaves it no function);
 * answered, its timer still runs tw_timer_handler. The socket may be freed by now, but its
 * slab is SLAB_TYPESAFE_BY_RCU and this runs under the receive path's RCU read lock: the
 * memory is still a timewait socket's. Reused at once by a new one on another CPU, the end
 * goes uncounted. */
static __always_inline void time_wait_dropped(const struct sock *sk)
{
	const struct inet_timewait_sock *tw = bpf_core_cast(sk, struct inet_timewait_sock);

	if (tw->tw_timer.function)
		return;
	time_wait_ended(tw, C_TW_RESET);
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(on_drop, struct sk_buff *skb, void *location, enum skb_drop_reason reason,
	     struct sock *rx_sk)
{
	if (rx_sk && rx_sk->__sk_common.skc_state == TCP_TIME_WAIT) {
		time_wait_dropped(rx_sk);
		return 0;
	}
	bool overflow = bpf_core_enum_value_exists(enum skb_drop_reason,
						   SKB_DROP_REASON_TCP_LISTEN_OVERFLOW) &&
			reason == bpf_core_enum_value(enum skb_drop_reason,
						      SKB_DROP_REASON_TCP_LISTEN_OVERFLOW);
	__u32 slot;
	if (!slot_of(rx_sk, &slot))
		return 0;
	if (overflow) {
		count(slot, C_OVERFLOW_ACK);
		return 0;
	}
	/* A listener with TCP_DEFER_ACCEPT drops the handshake's bare ACK (tcp_check_req, the
	 * kernel's TCPDeferAcceptDrop) and waits for the first data: the listener's drop
	 * counter counts it, though nothing was lost. Counted here so that the port's listen
	 * drops can leave them out. The kernel gives that drop no reason of its own; a drop
	 * with a reason (a PAWS or window check) is something else. */
	if (!bpf_core_enum_value_exists(enum skb_drop_reason, SKB_DROP_REASON_NOT_SPECIFIED) ||
	    reason != bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_NOT_SPECIFIED) ||
	    rx_sk->__sk_common.skc_state != TCP_LISTEN)
		return 0;
	const struct inet_connection_sock *icsk = bpf_core_cast(rx_sk, struct inet_connection_sock);
	if (icsk->icsk_accept_queue.rskq_defer_accept)
		count(slot, C_DEFERRED_ACK);
	return 0;
}

/* Since 6.15 the tracepoint fires for every attempt, failed ones too, while TcpRetransSegs
 * counts the attempts that got as far as the transmit (a packet then dropped by a filter
 * included), as the connection's total_retrans does: so the segments counted are the
 * growth of total_retrans, for the connections born while watched. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(on_retransmit, const struct sock *sk, const struct sk_buff *skb, int err)
{
	__u32 s;
	if (!slot_of(sk, &s))
		return 0;
	struct conn *c = conn_find(sk);
	__u32 segs = 0;
	if (c) {
		__u32 total = bpf_core_cast(sk, struct tcp_sock)->total_retrans;
		segs = total - c->retrans_seen;
		c->retrans_seen = total;
	} else if (!err) {
		__u16 n = 1;
		const struct tcp_skb_cb *cb = (const void *)skb->cb;
		bpf_probe_read_kernel(&n, sizeof(n), &cb->tcp_gso_segs);
		segs = n ? n : 1;
	}
	if (!segs)
		return 0;
	__sync_fetch_and_add(&ports[s].counters[C_RETRANS_SEGS], segs);
	count(s, C_RETRANS_EVENTS);
	return 0;
}

SEC("tp_btf/tcp_cong_state_set")
int BPF_PROG(on_ca_state, struct sock *sk, const __u8 ca_state)
{
	if (ca_state != TCP_CA_LOSS)
		return 0;
	__u32 slot;
	if (slot_of(sk, &slot))
		count(slot, C_RTO);
	return 0;
}

SEC("tp_btf/tcp_retransmit_synack")
int BPF_PROG(on_synack, const struct sock *sk, const struct request_sock *req)
{
	__u32 slot;
	if (slot_of(sk, &slot))
		count(slot, C_SYNACK_RETRANS);
	return 0;
}

/* Runs for every timer that fires on the machine (a few hundred a second here): the
 * handler's compare comes first. A TIME_WAIT cut short cancels its timer instead, but
 * timer_cancel fires at every re-arming of any pending timer (9 per request at close, every
 * TCP timer pushed back): those are seen from the new connection instead (tw_table), and
 * one an RST ends at the RST's drop. */
SEC("tp_btf/timer_expire_entry")
int BPF_PROG(on_timer_fire, struct timer_list *timer, unsigned long baseclk)
{
	if ((__u64)timer->function == tw_timer_fn)
		time_wait_ended(bpf_core_cast((void *)timer - bpf_core_field_offset(
						      struct inet_timewait_sock, tw_timer),
					      struct inet_timewait_sock),
				C_TW_EXPIRED);
	return 0;
}

/* The run-queue hook (sched_switch). */
#include "runq.bpf.h"
