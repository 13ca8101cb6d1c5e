//! The cool-down after a capacity probe: the port's connections closed and its TIME_WAIT
//! sockets few enough that the next probe cannot run out of ports, then a quiet moment, so
//! that each probe starts on an idle server.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use webscope_monitor::tcp::{SockDiag, TcpState};

/// The cool-down's longest wait for the port's open connections to close.
const SETTLE_MOST: Duration = Duration::from_secs(5);
/// The cool-down's longest wait for TIME_WAIT to drop below half the ephemeral ports.
const TIME_WAIT_MOST: Duration = Duration::from_secs(30);
/// A quiet moment after the port settled, so that the next warm-up finds the server idle.
const SETTLE_PAUSE: Duration = Duration::from_millis(100);

/// The cool-down after a probe.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cooldown {
    /// Seconds waited in all.
    pub waited_s: f64,
    /// Open connections on the port (every state but LISTEN and TIME_WAIT) before the
    /// warm-up, and when the wait ended.
    pub open_before: u32,
    pub open_after: u32,
    /// TIME_WAIT sockets on the port when the wait ended.
    pub time_wait: u32,
    /// Whether the port got back to its count before the probe within the wait.
    pub settled: bool,
}

/// Waits until the port's open connections are back to `open_before` (at most
/// [`SETTLE_MOST`]) and its TIME_WAIT sockets below half the ephemeral port range (at most
/// [`TIME_WAIT_MOST`]: TIME_WAIT lasts a minute and holds no server work, so it is waited for
/// only when the next probe could run out of ports), then pauses [`SETTLE_PAUSE`].
pub(super) fn cool_down(port: u16, open_before: u32) -> Cooldown {
    let start = Instant::now();
    let ports = ephemeral_ports();
    let mut last = (open_before, 0);
    let mut settled = false;
    while let Ok(counts) = port_counts(port) {
        last = counts;
        let open_done = counts.0 <= open_before;
        let tw_done = f64::from(counts.1) < ports / 2.0;
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
        open_after: last.0,
        time_wait: last.1,
        settled,
    }
}

/// The port's open connections (both sides on this host, every state but LISTEN and
/// TIME_WAIT) and its TIME_WAIT sockets.
pub(super) fn port_counts(port: u16) -> std::io::Result<(u32, u32)> {
    let mut diag = SockDiag::open()?;
    diag.probe()?;
    let (counts, _) = diag.port_states(&[port])?;
    let mut open = 0;
    let mut time_wait = 0;
    for c in counts.iter().filter(|c| c.port == port) {
        for side in [c.local, c.remote] {
            let listen = side.get(TcpState::Listen);
            let tw = side.get(TcpState::TimeWait);
            open += side.total() - listen - tw;
            time_wait += tw;
        }
    }
    Ok((open, time_wait))
}

/// The ephemeral port range's size (28 232 by Linux's default).
fn ephemeral_ports() -> f64 {
    crate::measure::ephemeral_ports().unwrap_or(28_232.0)
}
