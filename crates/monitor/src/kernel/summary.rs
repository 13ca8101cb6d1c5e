//! The kernel module's figures for a whole run, as `monitor.json` holds them.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// What the kernel module saw over a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSummary {
    /// How a connection's leaving the accept queue is seen (accept()'s return, or the first
    /// receive for io_uring's accepts), in words.
    pub dequeue: String,
    /// Hooks that would not attach, each with why; their figures are missing (zero).
    pub unattached: Vec<String>,
    /// Hooks detached during the run once the server showed how it accepts, each with why.
    #[serde(default)]
    pub detached: Vec<String>,
    /// One per watched port, in the order given.
    pub ports: Vec<PortFigures>,
    /// The run-queue latency of the watched processes' threads.
    pub runq: RunQueue,
    /// The connections that retransmitted most, of those that closed during the run, most
    /// first: at most [`MOST_RETRANSMITTING`], over all ports.
    #[serde(default)]
    pub most_retransmitting: Vec<Retransmitting>,
    /// Retransmitting connections left out of that list because the ring that brings them
    /// to the monitor was full (over a thousand closing in one interval).
    #[serde(default)]
    pub retransmitting_unlisted: u64,
}

/// How many connections [`KernelSummary::most_retransmitting`] names.
pub const MOST_RETRANSMITTING: usize = 10;

/// One connection that retransmitted, as it closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retransmitting {
    /// The server's address and port.
    pub local: SocketAddr,
    /// The peer's.
    pub peer: SocketAddr,
    /// Segments it sent again over its life (the kernel's `total_retrans`, SYN-ACKs
    /// included).
    pub retrans: u64,
}

impl Retransmitting {
    /// Adds `more` to the `worst` (most first), keeping [`MOST_RETRANSMITTING`]; ties keep
    /// the first seen.
    pub fn keep_worst(
        worst: &mut Vec<Retransmitting>,
        more: impl IntoIterator<Item = Retransmitting>,
    ) {
        worst.extend(more);
        // Stable: among equals, the earlier stays ahead.
        worst.sort_by_key(|r| std::cmp::Reverse(r.retrans));
        worst.truncate(MOST_RETRANSMITTING);
    }
}

/// One port's figures over a run (the server's side: sockets whose local port it is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortFigures {
    /// The port.
    pub port: u16,
    /// Connections that finished their handshake and entered the accept queue.
    pub established: u64,
    /// Of those, seen leaving the queue at accept()/accept4()'s return.
    pub accepted_syscall: u64,
    /// Seen leaving it at their first receive (io_uring's accepts, or any accept not made by
    /// a system call).
    pub accepted_read: u64,
    /// Connections closed that were born while watched: one lifetime each.
    pub closed: u64,
    /// Connections closed that were open before the monitor started (no lifetime).
    pub closed_unseen: u64,
    /// Connections displaced from the program's table of open connections (16 Ki entries,
    /// two per index) by a later one: untimed, counted in `closed_unseen` at their close.
    /// Rare below thousands open at once.
    #[serde(default)]
    pub displaced: u64,
    /// Connections closed while still in the accept queue (never accepted); for a server
    /// accepting through io_uring, also those accepted and closed without a read.
    pub closed_waiting: u64,
    /// Connections closed into TIME_WAIT (this side closed first).
    pub time_wait: u64,
    /// TIME_WAIT sockets that ran their course (the kernel's 60 s), those born before the
    /// monitor started included.
    #[serde(default)]
    pub time_wait_expired: u64,
    /// TIME_WAIT sockets ended early by a new connection on their address pair (the
    /// client's port coming round again: the kernel lets its SYN end the TIME_WAIT).
    #[serde(default)]
    pub time_wait_cut: u64,
    /// TIME_WAIT sockets ended early by an RST in window (RFC 1337's TIME_WAIT
    /// assassination: with `net.ipv4.tcp_rfc1337` = 0, Linux's default, the RST ends it).
    /// Zero in a summary written before it was counted (such an end went unseen then).
    #[serde(default)]
    pub time_wait_reset: u64,
    /// Timewait sockets that ended still in FIN_WAIT2 (their timer fired, or an RST ended
    /// them): the peer's FIN never came (no time in TIME_WAIT).
    #[serde(default)]
    pub time_wait_fin_wait2: u64,
    /// Time in TIME_WAIT of those that ended: expired or reset, from the kernel's own entry
    /// stamp (whole milliseconds; kernel 6.14 on); cut short, from the close to the new SYN.
    #[serde(default)]
    pub time_in_time_wait: Option<Latency>,
    /// Segments retransmitted (as the kernel's TcpRetransSegs counts them).
    pub retrans_segs: u64,
    /// Retransmissions (packets sent again, each one or more segments).
    pub retransmissions: u64,
    /// Retransmission timeouts (entries into the Loss state).
    pub rtos: u64,
    /// SYN-ACKs retransmitted.
    pub synack_retrans: u64,
    /// Handshakes completed into a full accept queue, dropped (kernel 6.15 on).
    pub overflows_ack: u64,
    /// Bare ACKs a listener with TCP_DEFER_ACCEPT discarded (the handshake's last ACK: the
    /// kernel waits for the first data before it queues the connection; the kernel's
    /// TCPDeferAcceptDrop). Nothing is lost; the listener's drop counter counts them all the
    /// same, and `listen_drops` leaves them out. Zero in a summary written before it was
    /// counted.
    #[serde(default)]
    pub deferred_acks: u64,
    /// The kernel's ListenDrops for this port's listeners: SYNs refused and handshakes
    /// dropped because the accept queue was full (ListenOverflows), or the SYN queue without
    /// syncookies, or memory. From the listen sockets' own drop counter (sock_diag), less
    /// the overflows it counts twice and the deferred ACKs; `None` when no listener was seen
    /// at both ends of the run.
    pub listen_drops: Option<u64>,
    /// Closed connections that had retransmitted, and the most one of them retransmitted.
    pub conns_retransmitting: u64,
    /// See `conns_retransmitting`.
    pub most_retrans_per_conn: u64,
    /// State changes, by the state entered (`established`, `fin_wait1`, ...; `time_wait`
    /// is `time_wait` above, as the kernel traces no change into it).
    pub transitions: BTreeMap<String, u64>,
    /// Accept-queue wait.
    pub accept_wait: Option<Latency>,
    /// Lifetime, ESTABLISHED to CLOSE.
    pub lifetime: Option<Latency>,
    /// Lifetime from the SYN to CLOSE: `lifetime` plus the handshake as the kernel timed it
    /// (its first RTT sample, from the first SYN-ACK, sent as the SYN arrived, to
    /// ESTABLISHED; with TCP_DEFER_ACCEPT to the first data). Of the connections whose
    /// SYN-ACK went once (the kernel times no handshake with a SYN-ACK sent again), so its
    /// count may be under `lifetime`'s.
    #[serde(default)]
    pub lifetime_from_syn: Option<Latency>,
}

/// The run-queue latency of the watched threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunQueue {
    /// The processes whose threads were timed (the last set; it follows children).
    pub pids: Vec<u32>,
    /// Threads switched in with no queueing stamp of the scheduler's (untimed; none where
    /// /proc/PID/schedstat exists, whose run_delay the stamp makes).
    pub untimed: u64,
    /// The waits timed.
    pub wait: Option<Latency>,
}

/// A distribution of times, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// How many.
    pub count: u64,
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest (within the bucket's 3.2 %).
    pub max_ms: f64,
}

impl Latency {
    /// The distribution of a histogram of nanoseconds; `None` if it is empty.
    pub fn of(h: &Histogram<u64>) -> Option<Latency> {
        if h.is_empty() {
            return None;
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        Some(Latency {
            count: h.len(),
            mean_ms: h.mean() / 1e6,
            p50_ms: ms(h.value_at_quantile(0.5)),
            p90_ms: ms(h.value_at_quantile(0.9)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        })
    }
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn spread(l: &Option<Latency>) -> String {
    match l {
        Some(l) => format!(
            "p50 {} ms, p99 {} ms, max {} ms",
            ms(l.p50_ms),
            ms(l.p99_ms),
            ms(l.max_ms)
        ),
        None => "-".into(),
    }
}

impl KernelSummary {
    /// A few lines per port for the terminal, each starting with two spaces.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.ports {
            let accepted = p.accepted_syscall + p.accepted_read;
            out.push_str(&format!(
                "  kernel   :{} {} queued, {} accepted ({} at accept(), {} at first read); queue wait {}\n",
                p.port,
                p.established,
                accepted,
                p.accepted_syscall,
                p.accepted_read,
                spread(&p.accept_wait)
            ));
            out.push_str(&format!(
                "           :{} {} closed (lifetime {}; from the SYN {}), {} into TIME_WAIT, {} closed while queued, listen drops {}{}\n",
                p.port,
                p.closed,
                spread(&p.lifetime),
                spread(&p.lifetime_from_syn),
                p.time_wait,
                p.closed_waiting,
                p.listen_drops.map_or("-".into(), |d| d.to_string()),
                if p.deferred_acks > 0 {
                    format!(
                        " ({} bare ACKs deferred by TCP_DEFER_ACCEPT, not counted)",
                        p.deferred_acks
                    )
                } else {
                    String::new()
                },
            ));
            if p.displaced > 0 {
                out.push_str(&format!(
                    "           :{} {} connections untimed: displaced from the program's table of open connections\n",
                    p.port, p.displaced
                ));
            }
            if p.time_wait_expired + p.time_wait_cut + p.time_wait_reset + p.time_wait_fin_wait2 > 0
            {
                out.push_str(&format!(
                    "           :{} TIME_WAIT ended: {} ran their course, {} cut short by a new SYN, {} by an RST, {} still in FIN_WAIT2; time in it {}\n",
                    p.port,
                    p.time_wait_expired,
                    p.time_wait_cut,
                    p.time_wait_reset,
                    p.time_wait_fin_wait2,
                    spread(&p.time_in_time_wait)
                ));
            }
            if p.retrans_segs + p.rtos + p.synack_retrans > 0 {
                out.push_str(&format!(
                    "           :{} {} segments retransmitted, {} timeouts, {} SYN-ACKs again; {} connections retransmitted (at most {} each)\n",
                    p.port, p.retrans_segs, p.rtos, p.synack_retrans, p.conns_retransmitting, p.most_retrans_per_conn
                ));
            }
        }
        if !self.most_retransmitting.is_empty() {
            let named: Vec<String> = self
                .most_retransmitting
                .iter()
                .take(3)
                .map(|r| format!("{} <- {} {}", r.local, r.peer, r.retrans))
                .collect();
            out.push_str(&format!(
                "  kernel   most retransmits: {}\n",
                named.join(", ")
            ));
        }
        if !self.runq.pids.is_empty() {
            out.push_str(&format!(
                "  kernel   run queue of {} process(es): {} waits, {}\n",
                self.runq.pids.len(),
                self.runq.wait.map_or(0, |w| w.count),
                spread(&self.runq.wait)
            ));
        }
        for why in &self.detached {
            out.push_str(&format!("  kernel   hook detached: {why}\n"));
        }
        for why in &self.unattached {
            out.push_str(&format!("  kernel   hook not attached: {why}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(port: u16, retrans: u64) -> Retransmitting {
        Retransmitting {
            local: "127.0.0.1:80".parse().unwrap(),
            peer: SocketAddr::from(([10, 0, 0, 1], port)),
            retrans,
        }
    }

    #[test]
    fn the_worst_retransmitters_are_kept_most_first_and_bounded() {
        let mut worst = Vec::new();
        Retransmitting::keep_worst(&mut worst, (1..=8).map(|p| conn(p, u64::from(p))));
        Retransmitting::keep_worst(&mut worst, [conn(100, 50), conn(101, 3), conn(102, 9)]);
        Retransmitting::keep_worst(&mut worst, (200..210).map(|p| conn(p, 1)));
        let kept: Vec<(u16, u64)> = worst.iter().map(|r| (r.peer.port(), r.retrans)).collect();
        assert_eq!(
            kept,
            [
                (100, 50),
                (102, 9),
                (8, 8),
                (7, 7),
                (6, 6),
                (5, 5),
                (4, 4),
                (3, 3),
                (101, 3),
                (2, 2)
            ]
        );
        assert_eq!(worst.len(), MOST_RETRANSMITTING);
    }
}
