//! What the BPF program's global data means: its counters by index, its histogram buckets
//! by value. Kept in step with `bpf/webscope.bpf.c` by hand (the skeleton gives the types,
//! not the meaning); the tests below pin the bucket formula to the C one's edges.

use hdrhistogram::Histogram;

/// Ports watched at once (`MAX_PORTS` in the C program).
pub const MAX_PORTS: usize = 8;
/// Processes whose threads' run-queue waits are timed (`MAX_TGIDS`).
pub const MAX_TGIDS: usize = 64;
/// Buckets per histogram (`BUCKETS`).
pub const BUCKETS: usize = 1024;
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;

/// The per-port counters, by their index in `port_stats.counters` (`enum counter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Counter {
    /// SYN_RECV -> ESTABLISHED: a connection entered the accept queue.
    Established = 0,
    /// Left the queue, seen at accept()/accept4()'s return.
    AcceptedSyscall,
    /// Left the queue, seen at the connection's first receive (io_uring's accepts).
    AcceptedRead,
    /// Closed, born while watched: one lifetime.
    Closed,
    /// Closed, born before the monitor started.
    ClosedUnseen,
    /// Closed while still waiting in the accept queue.
    ClosedWaiting,
    /// Closed into TIME_WAIT (from FIN_WAIT1/2 or CLOSING without an error).
    TimeWait,
    /// Segments retransmitted.
    RetransSegs,
    /// Retransmissions (skbs sent again).
    RetransEvents,
    /// Retransmission timeouts (entries into the Loss state).
    Rto,
    /// SYN-ACKs retransmitted.
    SynackRetrans,
    /// Handshakes completed into a full accept queue and dropped.
    OverflowAck,
    /// Closed connections that retransmitted at least once.
    ConnsRetrans,
    /// Bare ACKs dropped by a listener with TCP_DEFER_ACCEPT (each handshake's last ACK: the
    /// kernel waits for the first data).
    DeferredAck,
    /// TIME_WAIT sockets that ran their course (the timer fired, 60 s on Linux).
    TimeWaitExpired,
    /// TIME_WAIT sockets ended early by a new connection on their address pair (its SYN).
    TimeWaitCut,
    /// Timewait sockets that ended still in FIN_WAIT2 (the peer's FIN never came).
    TimeWaitFinWait2,
    /// TIME_WAIT ends not timed: the kernel has no `tw_entry_stamp` (before 6.14).
    TimeWaitUntimed,
    /// Retransmitting connections closed when the ring to user space was full: in the
    /// counts, not in the list of the worst.
    RetransUnlisted,
    /// Connections displaced from the program's table of open connections by another
    /// (both entries of their index taken): no queue wait or lifetime for them.
    ConnDisplaced,
    /// TIME_WAIT sockets ended by an RST (with `net.ipv4.tcp_rfc1337` = 0, the default).
    TimeWaitReset,
}

/// Counters per port in the C struct (`COUNTERS`).
pub const COUNTERS: usize = 32;

/// Run-queue counters (`enum runq_counter`): waits timed, and threads switched in without
/// the scheduler's queueing stamp (untimed).
pub const RUNQ_WAITS: usize = 0;
/// See [`RUNQ_WAITS`].
pub const RUNQ_MISSED: usize = 1;

/// The bucket of a value: exact below 16, then 16 buckets per power of two.
pub fn bucket_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let k = 63 - v.leading_zeros();
    let b = (((k - SUB_BITS + 1) as u64) << SUB_BITS) + ((v >> (k - SUB_BITS)) & (SUB - 1));
    (b as usize).min(BUCKETS - 1)
}

/// The smallest value of bucket `b` and its width.
pub fn bucket_range(b: usize) -> (u64, u64) {
    let b = b as u64;
    if b < SUB {
        return (b, 1);
    }
    let k = (b >> SUB_BITS) + u64::from(SUB_BITS) - 1;
    let sub = b & (SUB - 1);
    let shift = k - u64::from(SUB_BITS);
    ((SUB + sub) << shift, 1 << shift)
}

/// The value a bucket stands for: its midpoint (within 1/32 of any value in it).
pub fn bucket_value(b: usize) -> u64 {
    let (low, width) = bucket_range(b);
    low + width / 2
}

/// A histogram of bucket counts as an HdrHistogram (3 significant digits, auto-resizing),
/// each count recorded at its bucket's midpoint.
pub fn to_hdr(counts: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::new(3).expect("3 significant digits are valid");
    for (b, &n) in counts.iter().enumerate() {
        if n > 0 {
            // Auto-resize makes every u64 value recordable.
            let _ = h.record_n(bucket_value(b).max(1), n);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_sixteen_and_one_sixteenth_wide_above() {
        for v in 0..16 {
            assert_eq!(bucket_of(v), v as usize);
            assert_eq!(bucket_range(v as usize), (v, 1));
        }
        // The C formula's edges: 16 starts the second power of two, 32 the third.
        assert_eq!(bucket_of(16), 16);
        assert_eq!(bucket_of(31), 31);
        assert_eq!(bucket_of(32), 32);
        assert_eq!(bucket_of(33), 32);
        assert_eq!(bucket_of(34), 33);
        for v in [17u64, 100, 999, 20_000_000, 1 << 40, u64::MAX / 3] {
            let (low, width) = bucket_range(bucket_of(v));
            assert!(
                low <= v && v < low + width,
                "{v} in [{low}, {})",
                low + width
            );
            assert!(
                width as f64 <= low as f64 / 16.0 + 1.0,
                "{v}: width {width}"
            );
            let mid = bucket_value(bucket_of(v)) as f64;
            assert!(
                (mid - v as f64).abs() / v as f64 <= 1.0 / 32.0 + 1e-9,
                "{v}: {mid}"
            );
        }
        assert!(bucket_of(u64::MAX) < BUCKETS);
    }

    #[test]
    fn bucket_counts_become_a_histogram_of_midpoints() {
        let mut counts = vec![0u64; BUCKETS];
        counts[bucket_of(20_000_000)] = 9;
        counts[bucket_of(5)] = 1;
        let h = to_hdr(&counts);
        assert_eq!(h.len(), 10);
        let p50 = h.value_at_quantile(0.5) as f64;
        assert!((p50 / 20e6 - 1.0).abs() < 0.04, "{p50}");
        assert_eq!(h.min(), 5);
    }
}
