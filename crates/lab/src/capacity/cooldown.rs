//! The cool-down after a capacity probe: the port's connections closed, and room in the
//! ephemeral port range for the next probe's connections, then a quiet moment, so that each
//! probe starts on an idle server.
//!
//! TIME_WAIT is waited for only as far as the next probe needs ports (#33 §6). A socket in
//! TIME_WAIT holds an ephemeral port only on the side that opened the connection: the
//! clients' sockets, whose remote port is the server's. The server's own TIME_WAIT sockets
//! (its side closes first after `Connection: close`, which is most of them on loopback) hold
//! no client port, and counting them made a close-mode search wait 7.7 s a probe on
//! average, 30 s at most, for sockets that took nothing from the next probe. The room needed
//! is the clients' TIME_WAIT plus the next probe's connections within
//! [`PORTS_LIMIT`] of the range (the share the ports verdict
//! judges by: past it, connect() searches for a port); when the next probe alone needs more
//! than that, no wait can make room, and none is made (its own verdict will name the ports).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use webscope_monitor::tcp::{SockDiag, TcpState};

use webscope_bottleneck::PORTS_LIMIT;

/// The cool-down's longest wait for the port's open connections to close.
pub const SETTLE_MOST: Duration = Duration::from_secs(5);
/// The cool-down's longest wait for room in the ephemeral ports (TIME_WAIT lasts a minute).
pub const TIME_WAIT_MOST: Duration = Duration::from_secs(30);
/// A quiet moment after the port settled, so that the next warm-up finds the server idle.
pub const SETTLE_PAUSE: Duration = Duration::from_millis(100);

/// The cool-down after a probe.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cooldown {
    /// Seconds waited in all.
    pub waited_s: f64,
    /// Open connections on the port (every state but LISTEN and TIME_WAIT) before the
    /// warm-up, and when the wait ended.
    pub open_before: u32,
    /// Open connections on the port when the wait ended.
    pub open_after: u32,
    /// TIME_WAIT sockets on the port when the wait ended, both sides.
    pub time_wait: u32,
    /// Of those, the clients' (each holds an ephemeral port); None in probes written before
    /// the count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait_clients: Option<u32>,
    /// The connections the next probe was given room for, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room_for: Option<f64>,
    /// Whether the port got back to its count before the probe within the wait.
    pub settled: bool,
}

/// A port's sockets on this host, by what the cool-down waits for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortSockets {
    /// Every state but LISTEN and TIME_WAIT, both sides.
    pub open: u32,
    /// TIME_WAIT on the server's side (local port = the port): no ephemeral port held.
    pub time_wait_server: u32,
    /// TIME_WAIT on the clients' side (remote port = the port): an ephemeral port each.
    pub time_wait_clients: u32,
}

/// The most connections a probe at `rate` req/s for `seconds` (warm-up included) opens: one
/// a request in close mode; with keep-alive, the open loop's cap.
pub fn connections(rate: f64, seconds: f64, keep_alive: bool) -> f64 {
    if keep_alive {
        crate::measure::MAX_CONNECTIONS as f64
    } else {
        (rate * seconds).max(0.0)
    }
}

/// Whether TIME_WAIT is still in the next probe's way: the clients' TIME_WAIT sockets and
/// the `next` probe's connections do not fit within [`PORTS_LIMIT`] of `ports`, and waiting
/// could make them fit (the next probe alone does).
pub fn needs_room(time_wait_clients: u32, next: f64, ports: f64) -> bool {
    let room = PORTS_LIMIT * ports;
    next <= room && f64::from(time_wait_clients) + next > room
}

/// Waits until the port's open connections are back to `open_before` (at most
/// [`SETTLE_MOST`]) and the ephemeral ports have room for the next probe's `next`
/// connections ([`needs_room`]; at most [`TIME_WAIT_MOST`]), then pauses [`SETTLE_PAUSE`].
pub fn cool_down_for(port: u16, open_before: u32, next: Option<f64>) -> Cooldown {
    let start = Instant::now();
    let ports = ephemeral_ports();
    let mut last = PortSockets {
        open: open_before,
        ..PortSockets::default()
    };
    let mut settled = false;
    while let Ok(sockets) = port_sockets(port) {
        last = sockets;
        let open_done = sockets.open <= open_before;
        let tw_done = !needs_room(sockets.time_wait_clients, next.unwrap_or(0.0), ports);
        let waited = start.elapsed();
        if open_done && tw_done {
            settled = true;
            break;
        }
        if (waited >= SETTLE_MOST && tw_done) || waited >= TIME_WAIT_MOST {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(SETTLE_PAUSE);
    Cooldown {
        waited_s: start.elapsed().as_secs_f64(),
        open_before,
        open_after: last.open,
        time_wait: last.time_wait_server + last.time_wait_clients,
        time_wait_clients: Some(last.time_wait_clients),
        room_for: next,
        settled,
    }
}

/// The port's open connections (both sides on this host, every state but LISTEN and
/// TIME_WAIT) and its TIME_WAIT sockets, both sides.
pub fn port_counts(port: u16) -> std::io::Result<(u32, u32)> {
    let s = port_sockets(port)?;
    Ok((s.open, s.time_wait_server + s.time_wait_clients))
}

/// The port's sockets on this host, by side.
pub fn port_sockets(port: u16) -> std::io::Result<PortSockets> {
    let mut diag = SockDiag::open()?;
    diag.probe()?;
    let (counts, _) = diag.port_states(&[port])?;
    let mut s = PortSockets::default();
    for c in counts.iter().filter(|c| c.port == port) {
        for (side, tw) in [
            (c.local, &mut s.time_wait_server),
            (c.remote, &mut s.time_wait_clients),
        ] {
            let listen = side.get(TcpState::Listen);
            let time_wait = side.get(TcpState::TimeWait);
            s.open += side.total() - listen - time_wait;
            *tw += time_wait;
        }
    }
    Ok(s)
}

/// The ephemeral port range's size (28 232 by Linux's default).
fn ephemeral_ports() -> f64 {
    crate::measure::ephemeral_ports().unwrap_or(28_232.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_wait_is_waited_for_only_when_the_next_probe_needs_the_ports() {
        let ports = 28_232.0;
        // The issue's close-mode search: 12 000 sockets in TIME_WAIT, nearly all the
        // server's; the clients' 1 400 leave room for a probe of 3 000 req/s × 2.4 s.
        let next = connections(3_000.0, 2.4, false);
        assert_eq!(next, 7_200.0);
        assert!(!needs_room(1_400, next, ports));
        // The clients' own TIME_WAIT near the limit: wait for it to drain.
        assert!(needs_room(8_000, next, ports));
        // Without the next probe's figure: only past the limit itself.
        assert!(!needs_room(12_000, 0.0, ports));
        assert!(needs_room(12_800, 0.0, ports));
        // A next probe that alone needs more than the limit: no wait makes room for it.
        assert!(!needs_room(
            12_000,
            connections(25_600.0, 2.4, false),
            ports
        ));
        // Keep-alive needs few ports whatever the rate.
        assert_eq!(connections(50_000.0, 3.6, true), 1000.0);
        assert!(!needs_room(9_000, connections(50_000.0, 3.6, true), ports));
    }

    #[test]
    fn probes_written_before_the_clients_count_read_back() {
        let old: Cooldown = serde_json::from_str(
            r#"{"waited_s": 7.7, "open_before": 0, "open_after": 0, "time_wait": 14276, "settled": false}"#,
        )
        .unwrap();
        assert_eq!((old.time_wait_clients, old.room_for), (None, None));
        let text = serde_json::to_string(&Cooldown::default()).unwrap();
        assert!(!text.contains("room_for"), "{text}");
    }
}
