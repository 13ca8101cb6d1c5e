//! The kernel module's groups of rows (what `kernel.csv`, `kernel_states.csv` and `runq.csv`
//! hold) and the listen-drop arithmetic: with or without the `kernel` feature, so that a build
//! without it lists the same groups and reads the same files.

use crate::table::Group;

/// Per port and interval: the connections' passage through the kernel.
pub static KERNEL: Group = Group {
    name: "kernel",
    about: "with --kernel, per --port (the server's side), from eBPF: connections entering the accept queue and leaving it, the wait between (ms), closes and lifetimes (from ESTABLISHED, and from the SYN), TIME_WAIT entries, TIME_WAIT sockets ended and their time in it (ms), listen drops (not the bare ACKs TCP_DEFER_ACCEPT drops: deferred_acks), retransmits",
    keys: &["port"],
    columns: &[
        "established_per_s",
        "accepted_per_s",
        "accept_wait_p50_ms",
        "accept_wait_p99_ms",
        "accept_wait_max_ms",
        "closed_per_s",
        "lifetime_p50_ms",
        "lifetime_p99_ms",
        "lifetime_syn_p50_ms",
        "lifetime_syn_p99_ms",
        "time_wait_per_s",
        "time_wait_ended_per_s",
        "time_wait_p50_ms",
        "time_wait_max_ms",
        "closed_waiting_per_s",
        "listen_drops_per_s",
        "overflows_ack_per_s",
        "retrans_segs_per_s",
        "rtos_per_s",
        "synack_retrans_per_s",
        "deferred_acks_per_s",
    ],
};

/// Per port and interval: state changes by the state entered.
pub static KERNEL_STATES: Group = Group {
    name: "kernel_states",
    about: "with --kernel, per --port (the server's side), from eBPF: TCP state changes per second, by the state entered (time_wait: closes into TIME_WAIT)",
    keys: &["port"],
    columns: &[
        "established",
        "syn_sent",
        "syn_recv",
        "fin_wait1",
        "fin_wait2",
        "time_wait",
        "close",
        "close_wait",
        "last_ack",
        "listen",
        "closing",
    ],
};

/// Per interval: the watched threads' waits for a CPU.
pub static RUNQ: Group = Group {
    name: "runq",
    about: "with --kernel, from eBPF: the watched processes' threads, each wait from wake-up (or preemption) to running: how many per second, and their spread (ms)",
    keys: &[],
    columns: &["waits_per_s", "wait_p50_ms", "wait_p99_ms", "wait_max_ms"],
};

/// The kernel's ListenDrops for a port's listeners over a run, from their drop counters at
/// its two ends, less what the kernel module saw them count that is no listen drop: the
/// handshakes dropped on overflow, which the kernel adds to a listener's counter twice (where
/// it counts ListenDrops, and again where it discards the packet), and the bare ACKs a
/// listener with TCP_DEFER_ACCEPT discards (the kernel's TCPDeferAcceptDrop: one per
/// handshake, waiting for the data, nothing lost). `None` unless a listener was seen at both
/// ends.
pub fn listen_drops(
    first: Option<u64>,
    last: Option<u64>,
    overflows_ack: u64,
    deferred_acks: u64,
) -> Option<u64> {
    let (first, last) = (first?, last?);
    // The counter is 32 bits in the kernel: a difference modulo 2^32.
    let counted = (last.wrapping_sub(first)) & 0xffff_ffff;
    Some(counted.saturating_sub(overflows_ack + deferred_acks))
}

#[cfg(test)]
mod tests {
    use super::listen_drops;

    #[test]
    fn listen_drops_take_out_the_overflows_the_kernel_counts_twice() {
        // 144 SYNs refused (once each) and 3 handshakes dropped on overflow (twice each).
        assert_eq!(listen_drops(Some(10), Some(10 + 144 + 6), 3, 0), Some(147));
        // The 32-bit counter wrapped.
        assert_eq!(
            listen_drops(Some(u64::from(u32::MAX)), Some(4), 0, 0),
            Some(5)
        );
        assert_eq!(listen_drops(None, Some(4), 0, 0), None);
        assert_eq!(listen_drops(Some(4), None, 0, 0), None);
    }

    #[test]
    fn listen_drops_leave_out_the_bare_acks_defer_accept_drops() {
        // 1981 handshakes, each one's bare ACK discarded under TCP_DEFER_ACCEPT: no drop.
        assert_eq!(listen_drops(Some(0), Some(1981), 0, 1981), Some(0));
        // 5 SYNs refused beside them.
        assert_eq!(listen_drops(Some(0), Some(1986), 0, 1981), Some(5));
    }
}
