/* The kernel types the program reads, and only the fields it reads.
 *
 * Not a dump of one kernel's vmlinux.h: every struct is marked preserve_access_index, so
 * clang records each field access as a CO-RE relocation by name, and libbpf rewrites the
 * offsets against the running kernel's BTF at load. Field order and struct sizes here mean
 * nothing; names do. A field that moved between kernels still reads right; one that was
 * renamed fails the load with its name, which the monitor reports in one line.
 */
#ifndef WEBSCOPE_KERNEL_H
#define WEBSCOPE_KERNEL_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
enum { false = 0, true = 1 };

/* libbpf's bpf_helpers.h names these. */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
};
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct in6_addr {
	union {
		__u32 u6_addr32[4];
	} in6_u;
};

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	struct in6_addr skc_v6_daddr;
	struct in6_addr skc_v6_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
	unsigned int skc_hash;
	unsigned short skc_family;
	volatile unsigned char skc_state;
};

struct sock {
	struct sock_common __sk_common;
	int sk_err;
	__u16 sk_protocol;
};

/* inet_sport, not sock_common's skc_num: releasing the port at CLOSE zeroes skc_num before
 * the state change is traced. */
struct inet_sock {
	__be16 inet_sport;
};

struct request_sock_queue {
	__u8 rskq_defer_accept;
};

struct inet_connection_sock {
	struct request_sock_queue icsk_accept_queue;
};

struct tcp_sock {
	__u32 total_retrans;
	__u32 srtt_us;
	__u64 bytes_received;
	__u32 rcv_nxt;
	__u32 copied_seq;
};

struct sk_buff {
	unsigned char *head;
	__u16 transport_header;
	char cb[48];
};

struct tcphdr {
	__be16 source;
	__be16 dest;
};

struct tcp_skb_cb {
	__u16 tcp_gso_segs;
};

struct file {
	void *private_data;
};

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
};

struct files_struct {
	struct fdtable *fdt;
};

struct socket {
	struct sock *sk;
};

struct sched_info {
	unsigned long long last_queued;
};

/* A CPU's run queue: its clock, which sched_info's stamps use. Reached from a task's
 * scheduling entity (the per-CPU `runqueues` itself is not in this kernel's kallsyms, which
 * the verifier needs for a __ksym variable). */
struct rq {
	unsigned long long clock;
};

struct cfs_rq {
	struct rq *rq;
};

struct sched_entity {
	struct cfs_rq *cfs_rq;
};

struct task_struct {
	int pid;
	int tgid;
	struct files_struct *files;
	struct sched_entity se;
	struct sched_info sched_info;
};

struct pt_regs {
	unsigned long orig_ax;
};

struct request_sock;

struct timer_list {
	unsigned long expires;
	void (*function)(struct timer_list *);
};

/* A socket in TIME_WAIT is this, not a struct sock: the kernel swaps it in at the close and
 * traces no state change for it. tw_entry_stamp (6.14 on) is when it entered TIME_WAIT, in
 * milliseconds of the monotonic clock (tcp_clock_ms). */
struct inet_timewait_sock {
	struct sock_common __tw_common;
	unsigned char tw_substate;
	__be16 tw_sport;
	__u32 tw_entry_stamp;
	struct timer_list tw_timer;
};

#pragma clang attribute pop

/* Their values are relocated too (bpf_core_enum_value): they move between kernels, and
 * TCP_LISTEN_OVERFLOW is absent before 6.15. */
enum skb_drop_reason {
	SKB_DROP_REASON_NOT_SPECIFIED = 0,
	SKB_DROP_REASON_TCP_LISTEN_OVERFLOW = 1,
};

#endif
