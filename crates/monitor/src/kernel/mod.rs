//! The kernel module (`Config::kernel`, `webscope monitor --kernel`): what happens to each
//! connection of the server's ports inside the kernel, summed there by an eBPF program, as
//! WebMonitor's kernel module summed it through system calls of its own. Per port, per
//! interval and per run:
//!
//! - **accept-queue wait**: from the handshake's completion (the connection's SYN_RECV ->
//!   ESTABLISHED, when the kernel queues it on the listener) to its leaving the queue. That
//!   leaving is seen at `accept()`/`accept4()`'s return, the returned descriptor followed to
//!   its socket through the task's fd table. An io_uring accept (the embedded server's
//!   multishot ACCEPT) makes no system call: for those the leaving is the connection's
//!   **first receive** (`sock_recv_length`), which adds the server's time from the accept's
//!   completion to its first read, microseconds on a server that reads what it accepts at
//!   once. `accepted_syscall` and `accepted_read` count which way each was seen. The
//!   completion's own tracepoint (`io_uring_complete`) was not used: a multishot accept's
//!   completion there carries no request to tell an accept from a receive, and a direct
//!   descriptor is no fd to follow.
//! - **listen overflows**: handshakes completed into a full accept queue and dropped (the
//!   `kfree_skb` reason `TCP_LISTEN_OVERFLOW`, kernel 6.15 on). A SYN refused because the
//!   queue was already full is dropped without any tracepoint; the listen sockets' own drop
//!   counter (sock_diag, [`listen_drops`]) counts those, and the `listen` group shows it.
//!   That counter also counts the bare ACK a listener with TCP_DEFER_ACCEPT discards at
//!   every handshake (the embedded server's: nothing lost, the kernel waits for the data):
//!   `kfree_skb` with no reason at a watched listener that has the option counts those
//!   (`deferred_acks`), and the port's listen drops leave them out.
//! - **connection lifetimes**: ESTABLISHED to CLOSE, and from the SYN to CLOSE. A passive
//!   open's SYN makes no state change (the request socket has none), but at ESTABLISHED the
//!   kernel has just timed the handshake, its first RTT sample, from the first SYN-ACK (sent
//!   as the SYN arrived) to then: added to the lifetime, that is the lifetime from the SYN,
//!   for the connections whose SYN-ACK went once (with it sent again, the sample is from the
//!   last one, or none). With TCP_DEFER_ACCEPT the handshake ends at the first data;
//!   entries into TIME_WAIT (a close from FIN_WAIT1/2 or CLOSING with no error: the kernel
//!   swaps in a timewait socket, which makes no state change either); **time in
//!   TIME_WAIT**: a timewait socket is an `inet_timewait_sock`, which no socket tracepoint
//!   shows. One that runs its course (60 s) ends with its timer, a `timer_list` running
//!   `tw_timer_handler` (its address from `/proc/kallsyms`): `timer_expire_entry` on it,
//!   timed from the kernel's own entry stamp (`tw_entry_stamp`, ms, 6.14 on). One cut
//!   short by a new connection on its address pair (the kernel lets the SYN end it) is seen
//!   at that connection's ESTABLISHED: the pair's hash, which the kernel keeps for both,
//!   indexes a table of the entries seen (time from the close to the new SYN). Its timer's
//!   `timer_cancel` would show it too, but that tracepoint fires at every re-arming of any
//!   pending timer, 9 times per request at close. One an RST ends (in window, with
//!   `net.ipv4.tcp_rfc1337` = 0, the default: RFC 1337's TIME_WAIT assassination) is seen
//!   at the RST's drop (`kfree_skb` with the timewait socket as its receiver, its timer shut
//!   down), timed like an expired one and counted apart (`time_wait_reset`);
//!   connections closed while still queued;
//! - **TCP state transitions**, counted by the state entered;
//! - **retransmitted segments** (as `TcpRetransSegs` counts them), retransmission timeouts
//!   (entries into the Loss state), SYN-ACK retransmits, and per connection the number
//!   retransmitted by each connection that closed having retransmitted: as a histogram,
//!   and the run's worst ten by name (addresses and ports, `most_retransmitting`), each
//!   sent as it closes through a ring buffer (only those that retransmitted use it) and kept
//!   by the source. Connections still open at the end are not in that list;
//! - **run-queue latency** of the server's threads (`Config::pids`, with `children` their
//!   descendants; else the processes holding the ports' listeners): from a wake-up, or a
//!   preemption that left the thread runnable, to its running again.
//!
//! Nothing goes to user space per event. Each event adds to a counter or a histogram bucket
//! (16 per power of two, so within 3.2 % of the value) in the program's global data, which
//! this module reads through its memory mapping at each sample: interval figures are the
//! differences, run figures the last reading, both as HdrHistograms ([`layout::to_hdr`]).
//!
//! **Why libbpf-rs** (0.27, with libbpf-cargo building the program at `cargo build`): the
//! program is CO-RE C compiled by Debian's clang 14 against the few kernel fields it names
//! (`bpf/kernel.h`, no vmlinux.h of one kernel), relocated by libbpf against the running
//! kernel's BTF; it builds on stable Rust with apt packages only (clang, libelf-dev,
//! zlib1g-dev, pkg-config), libbpf itself vendored by libbpf-sys. aya, the pure-Rust choice,
//! needs nightly Rust and bpf-linker built against nightly's own LLVM for the kernel side,
//! and its user-space crate wanted a newer rustc than the workspace's: fragile here.
//!
//! **Hooks**: tp_btf programs only (BTF-typed raw tracepoints). This kernel has no kprobes
//! and refuses fentry with EPERM, so `inet_csk_accept` cannot be hooked; tp_btf needs neither
//! kprobes nor tracefs. See `bpf/webscope.bpf.c` for each hook.
//!
//! **Where it cannot load** (not root, no BTF, locked down, an old kernel): [`Kernel::start`]
//! returns one line saying why; the monitor notes it and runs as before.
//!
//! **Built only with the `kernel` feature** (off by default): compiling the program needs
//! clang, libelf-dev, zlib1g-dev and pkg-config, and a fresh machine with only Rust must
//! build webscope. Without it [`BUILT`] is false, [`Kernel`] has no values, and
//! [`crate::Config::check`] refuses `kernel` with [`NOT_BUILT`]; the groups, [`KernelSummary`]
//! and the files stay, so a build without it reads a run made with it.
//!
//! **Cost**: every hook filters first on a byte array indexed by port (or a short list of
//! process IDs) and returns, reading kernel memory by direct BTF loads; the accept hook the
//! server does not use is detached once 20 accepts have shown which way it accepts. See
//! `docs/architecture.md` for the measured cost per request (`bench/kernel_cost.py`).

mod groups;
pub mod hlog;
pub mod layout;
#[cfg(feature = "kernel")]
pub mod probe;
#[cfg(feature = "kernel")]
mod source;
mod summary;
#[cfg(not(feature = "kernel"))]
mod unbuilt;

#[cfg(feature = "kernel")]
#[allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    dead_code,
    unused_imports,
    unsafe_op_in_unsafe_fn
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/webscope.skel.rs"));
}

pub use groups::{listen_drops, KERNEL, KERNEL_STATES, RUNQ};
#[cfg(feature = "kernel")]
pub use source::Kernel;
pub use summary::{
    KernelSummary, Latency, PortFigures, Retransmitting, RunQueue, MOST_RETRANSMITTING,
};
#[cfg(not(feature = "kernel"))]
pub use unbuilt::Kernel;

/// Whether this build has the kernel module (the `kernel` feature): without it the program
/// is not compiled, no clang or libelf is needed, and a request for it is refused in one line
/// ([`NOT_BUILT`]). A caller that turns it on by default (the lab) asks here first.
pub const BUILT: bool = cfg!(feature = "kernel");

/// What a build without the kernel module says when asked for it, in one line.
pub const NOT_BUILT: &str = "built without the kernel module (cargo build --features kernel; needs clang, libelf-dev, zlib1g-dev, pkg-config)";
