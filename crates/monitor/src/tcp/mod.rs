//! TCP sockets counted per port and per state, and the listen sockets' accept queues.
//!
//! Two ways to read the kernel's socket table: netlink sock_diag ([`SockDiag`], what `ss`
//! uses: binary, filtered in the kernel, one walk of the table for every port and both
//! families) and `/proc/net/tcp{,6}` ([`ProcNetTcp`], text, every socket formatted and parsed),
//! kept only as the fallback for kernels or sandboxes without sock_diag. Both walk the whole
//! established-socket hash table, which is why the monitor spaces these counts out by cost
//! (see `sources/ports.rs`); the listen queues alone need no such walk with sock_diag.

mod proc_tcp;
mod sockdiag;

pub use proc_tcp::ProcNetTcp;
pub use sockdiag::SockDiag;

use serde::{Deserialize, Serialize};

/// The TCP states the kernel reports, in its own numbering (`include/net/tcp_states.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TcpState {
    /// Data can flow both ways.
    Established = 1,
    /// Our SYN is out, no answer yet (a client connecting).
    SynSent = 2,
    /// A SYN came in and was answered; the handshake is not finished (a request socket).
    SynRecv = 3,
    /// We closed first; our FIN is not acknowledged yet.
    FinWait1 = 4,
    /// We closed first and our FIN is acknowledged; waiting for the peer's FIN.
    FinWait2 = 5,
    /// We closed first and both FINs are done: the 2*MSL wait the closing side pays.
    TimeWait = 6,
    /// Closed but not freed yet (after a reset, or an orphan being torn down).
    Close = 7,
    /// The peer closed first; the application has not closed yet.
    CloseWait = 8,
    /// The peer closed first, then we did; our FIN is not acknowledged yet.
    LastAck = 9,
    /// A listening socket.
    Listen = 10,
    /// Both sides closed at once.
    Closing = 11,
}

impl TcpState {
    /// Every state, in the kernel's order (the order of the columns in `ports.csv`).
    pub const ALL: [TcpState; 11] = [
        TcpState::Established,
        TcpState::SynSent,
        TcpState::SynRecv,
        TcpState::FinWait1,
        TcpState::FinWait2,
        TcpState::TimeWait,
        TcpState::Close,
        TcpState::CloseWait,
        TcpState::LastAck,
        TcpState::Listen,
        TcpState::Closing,
    ];

    /// The states of a server's connections as a reader follows them, in the order of a
    /// connection's life: open, the closing states of either side, and `Close` last (a
    /// socket's instant between a reset and being freed, which charts over time leave out).
    /// `SynSent` (a client's) and `Listen` (counted apart, with the accept queues) are not
    /// among them. Names by [`TcpState::name`].
    pub const CONNECTION: [TcpState; 9] = [
        TcpState::Established,
        TcpState::SynRecv,
        TcpState::FinWait1,
        TcpState::FinWait2,
        TcpState::TimeWait,
        TcpState::CloseWait,
        TcpState::LastAck,
        TcpState::Closing,
        TcpState::Close,
    ];

    /// The state for a kernel state number; the kernel's request sockets (`NEW_SYN_RECV`,
    /// 12) count as `SynRecv`, as `ss` shows them.
    pub fn from_kernel(number: u8) -> Option<TcpState> {
        match number {
            12 => Some(TcpState::SynRecv),
            1..=11 => Some(TcpState::ALL[usize::from(number) - 1]),
            _ => None,
        }
    }

    /// The lower-case name used in column headers (`time_wait`, `syn_recv`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TcpState::Established => "established",
            TcpState::SynSent => "syn_sent",
            TcpState::SynRecv => "syn_recv",
            TcpState::FinWait1 => "fin_wait1",
            TcpState::FinWait2 => "fin_wait2",
            TcpState::TimeWait => "time_wait",
            TcpState::Close => "close",
            TcpState::CloseWait => "close_wait",
            TcpState::LastAck => "last_ack",
            TcpState::Listen => "listen",
            TcpState::Closing => "closing",
        }
    }

    fn index(self) -> usize {
        self as usize - 1
    }
}

/// How many sockets are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateCounts([u32; 11]);

impl StateCounts {
    /// Counts one more socket in `state`.
    pub fn add(&mut self, state: TcpState) {
        self.0[state.index()] += 1;
    }

    /// The sockets in `state`.
    pub fn get(&self, state: TcpState) -> u32 {
        self.0[state.index()]
    }

    /// All sockets, whatever their state.
    pub fn total(&self) -> u32 {
        self.0.iter().sum()
    }
}

/// The sockets of one port, seen from both ends of their connections.
///
/// The side that closes a connection first holds its TIME_WAIT. In Yates et al.'s Table 3 the
/// server closed (HTTP/1.0), so TIME_WAIT piled up on the server's port: that is `local`. When
/// the clients close first (HTTP/1.1 clients that hang up), TIME_WAIT is held by the clients'
/// sockets: `remote`, visible here only when the clients run on this host (as on loopback).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounts {
    /// The port.
    pub port: u16,
    /// Sockets whose local port is `port`: the server's side when the server runs here.
    pub local: StateCounts,
    /// Sockets on this host whose remote port is `port`: clients of the port running here.
    pub remote: StateCounts,
}

/// The accept queue of the listen sockets of one port (summed when several listen, as with
/// SO_REUSEPORT or one socket per address family).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenQueue {
    /// The port.
    pub port: u16,
    /// How many sockets listen on it (0: nothing listens).
    pub sockets: u32,
    /// Connections that finished their handshake and wait for `accept()`.
    pub queued: u32,
    /// The queue's limit (the listen backlog), when the method can tell (sock_diag can,
    /// `/proc/net/tcp` cannot).
    pub limit: Option<u32>,
}

/// One socket as both methods see it: enough to count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SocketSeen {
    pub state: TcpState,
    pub local_port: u16,
    pub remote_port: u16,
    /// For a listen socket: the accept queue length.
    pub rqueue: u32,
    /// For a listen socket: the backlog limit (sock_diag only).
    pub wqueue: Option<u32>,
    /// The socket's inode: what `/proc/PID/fd/N` links to as `socket:[INODE]`.
    pub inode: u64,
}

/// Adds sockets to per-port counts and listen queues.
#[derive(Debug)]
pub(crate) struct Tally {
    pub ports: Vec<PortCounts>,
    pub listen: Vec<ListenQueue>,
}

impl Tally {
    pub fn new(ports: &[u16]) -> Tally {
        Tally {
            ports: ports
                .iter()
                .map(|&port| PortCounts {
                    port,
                    ..PortCounts::default()
                })
                .collect(),
            listen: ports
                .iter()
                .map(|&port| ListenQueue {
                    port,
                    ..ListenQueue::default()
                })
                .collect(),
        }
    }

    pub fn add(&mut self, socket: SocketSeen) {
        // A handful of ports: a linear scan beats hashing.
        for (counts, queue) in self.ports.iter_mut().zip(self.listen.iter_mut()) {
            if socket.local_port == counts.port {
                counts.local.add(socket.state);
                if socket.state == TcpState::Listen {
                    queue.sockets += 1;
                    queue.queued += socket.rqueue;
                    queue.limit = match (queue.limit, socket.wqueue) {
                        (Some(a), Some(b)) => Some(a + b),
                        (None, b) if queue.sockets == 1 => b,
                        (a, _) => a,
                    };
                }
            }
            if socket.remote_port == counts.port && socket.state != TcpState::Listen {
                counts.remote.add(socket.state);
            }
        }
    }
}

/// Either way of reading the socket table.
pub enum TcpTable {
    /// Netlink sock_diag (preferred).
    SockDiag(SockDiag),
    /// `/proc/net/tcp` and `/proc/net/tcp6` (fallback).
    Proc(ProcNetTcp),
}

impl TcpTable {
    /// sock_diag when the kernel answers it, else `/proc/net/tcp`; the second value says why
    /// the fallback was taken.
    pub fn open() -> (TcpTable, Option<String>) {
        match SockDiag::open().and_then(|mut diag| diag.probe().map(|()| diag)) {
            Ok(diag) => (TcpTable::SockDiag(diag), None),
            Err(err) => (
                TcpTable::Proc(ProcNetTcp),
                Some(format!(
                    "netlink sock_diag unavailable ({err}): counting TCP states from /proc/net/tcp, which costs more"
                )),
            ),
        }
    }

    /// "sock_diag" or "proc": which method this is, for the summary.
    pub fn method(&self) -> &'static str {
        match self {
            TcpTable::SockDiag(_) => "sock_diag",
            TcpTable::Proc(_) => "proc",
        }
    }

    /// Counts the sockets of `ports` by state, both sides, with their listen queues.
    pub fn port_states(
        &mut self,
        ports: &[u16],
    ) -> std::io::Result<(Vec<PortCounts>, Vec<ListenQueue>)> {
        match self {
            TcpTable::SockDiag(diag) => diag.port_states(ports),
            TcpTable::Proc(proc) => proc.port_states(ports),
        }
    }

    /// The listen queues alone, when that is cheaper than [`TcpTable::port_states`]
    /// (sock_diag: the listen table only); `None` when it is not.
    pub fn listen_queues(&mut self, ports: &[u16]) -> Option<std::io::Result<Vec<ListenQueue>>> {
        match self {
            TcpTable::SockDiag(diag) => Some(diag.listen_queues(ports)),
            TcpTable::Proc(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(state: TcpState, local_port: u16, remote_port: u16) -> SocketSeen {
        SocketSeen {
            state,
            local_port,
            remote_port,
            rqueue: 0,
            wqueue: None,
            inode: 0,
        }
    }

    #[test]
    fn kernel_numbers_map_to_states_and_request_sockets_count_as_syn_recv() {
        for (i, state) in TcpState::ALL.iter().enumerate() {
            assert_eq!(TcpState::from_kernel(i as u8 + 1), Some(*state));
        }
        assert_eq!(TcpState::from_kernel(12), Some(TcpState::SynRecv));
        assert_eq!(TcpState::from_kernel(0), None);
        assert_eq!(TcpState::from_kernel(13), None);
    }

    #[test]
    fn tally_splits_sides_and_sums_listen_queues() {
        let mut tally = Tally::new(&[80, 8080]);
        tally.add(seen(TcpState::Established, 80, 40000));
        tally.add(seen(TcpState::TimeWait, 80, 40001));
        tally.add(seen(TcpState::TimeWait, 40002, 80));
        tally.add(seen(TcpState::Established, 40003, 9999));
        for (queued, limit) in [(3, 128), (2, 64)] {
            tally.add(SocketSeen {
                rqueue: queued,
                wqueue: Some(limit),
                ..seen(TcpState::Listen, 8080, 0)
            });
        }
        let p80 = tally.ports[0];
        assert_eq!(p80.local.get(TcpState::Established), 1);
        assert_eq!(p80.local.get(TcpState::TimeWait), 1);
        assert_eq!(p80.remote.get(TcpState::TimeWait), 1);
        assert_eq!(p80.local.total() + p80.remote.total(), 3);
        assert_eq!(tally.ports[1].local.get(TcpState::Listen), 2);
        assert_eq!(
            tally.listen[1],
            ListenQueue {
                port: 8080,
                sockets: 2,
                queued: 5,
                limit: Some(192)
            }
        );
        assert_eq!(tally.listen[0].sockets, 0);
    }

    #[test]
    fn listen_limit_stays_unknown_when_the_method_cannot_tell() {
        let mut tally = Tally::new(&[80]);
        tally.add(SocketSeen {
            rqueue: 1,
            ..seen(TcpState::Listen, 80, 0)
        });
        assert_eq!(tally.listen[0].limit, None);
        assert_eq!(tally.listen[0].queued, 1);
    }
}
