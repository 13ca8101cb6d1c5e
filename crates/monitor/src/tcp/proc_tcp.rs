//! The fallback: `/proc/net/tcp` and `/proc/net/tcp6`, one text line per socket.
//!
//! The kernel formats every socket of the host (whatever its port) and we parse them all;
//! Yates et al. found this kind of `/proc` reading too expensive to do often, and the bench
//! (`bench/monitor_cost.sh`) shows by how much. It cannot tell a listen socket's backlog limit.

use std::io;

use procfs::net::TcpNetEntry;

use super::{ListenQueue, PortCounts, SocketSeen, Tally, TcpState};

/// Reads `/proc/net/tcp{,6}` through the `procfs` crate.
#[derive(Debug, Default)]
pub struct ProcNetTcp;

impl ProcNetTcp {
    /// Counts the sockets of `ports` by state, both sides, with their listen queues.
    pub fn port_states(
        &mut self,
        ports: &[u16],
    ) -> io::Result<(Vec<PortCounts>, Vec<ListenQueue>)> {
        let mut tally = Tally::new(ports);
        let v4 = procfs::net::tcp().map_err(io::Error::other)?;
        // A kernel without IPv6 has no tcp6 file: that is no error.
        let v6 = procfs::net::tcp6().unwrap_or_default();
        for entry in v4.iter().chain(v6.iter()) {
            if let Some(socket) = seen(entry) {
                tally.add(socket);
            }
        }
        Ok((tally.ports, tally.listen))
    }
}

pub(crate) fn seen(entry: &TcpNetEntry) -> Option<SocketSeen> {
    Some(SocketSeen {
        state: TcpState::from_kernel(entry.state.to_u8())?,
        local_port: entry.local_address.port(),
        remote_port: entry.remote_address.port(),
        // For a listen socket the kernel prints its accept-queue length as rx_queue.
        rqueue: entry.rx_queue,
        wqueue: None,
        inode: entry.inode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use procfs::FromBufReadSI;

    #[test]
    fn recorded_proc_net_tcp_is_counted_per_port_and_side() {
        let text = include_str!("../../tests/data/proc_net_tcp.txt");
        let info = procfs::current_system_info();
        let entries = procfs::net::TcpNetEntries::from_buf_read(text.as_bytes(), info)
            .expect("fixture parses");
        let mut tally = Tally::new(&[8080]);
        for entry in &entries.0 {
            if let Some(socket) = seen(entry) {
                tally.add(socket);
            }
        }
        let port = tally.ports[0];
        assert_eq!(port.local.get(TcpState::Listen), 1);
        assert_eq!(
            port.local.get(TcpState::Established),
            3,
            "two accepted, one queued"
        );
        assert_eq!(port.remote.get(TcpState::Established), 3);
        assert_eq!(port.local.get(TcpState::TimeWait), 1);
        assert_eq!(tally.listen[0].queued, 1);
        assert_eq!(tally.listen[0].limit, None);
    }
}
