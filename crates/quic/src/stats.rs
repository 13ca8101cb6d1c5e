//! A connection's transport figures at its end, as one line appended to the file named by
//! `WEBSCOPE_QUIC_STATS` (when set): what quinn knows of its loss recovery and congestion
//! control (packets sent and lost, congestion events, window, RTT estimates, PMTU probes and
//! black holes, PING frames: quinn sends one in a probe packet when a PTO fires with nothing
//! else to send), datagrams sent and the system calls that sent them (more datagrams than
//! calls: segmentation offload, the `gso` technique), from the server and the load generator
//! alike. A diagnostic for the lab's
//! loss experiment, beside TCP's `ss -ti`; nothing reads it back.

use std::io::Write;

use quinn_proto::ConnectionStats;

/// The variable naming the file the lines are appended to.
pub const STATS_VAR: &str = "WEBSCOPE_QUIC_STATS";

/// One line of `stats`, `side` first (`server` or `client`), as `key=value` pairs.
pub fn stats_line(side: &str, stats: &ConnectionStats) -> String {
    let p = &stats.path;
    format!(
        "side={side} sent_packets={} lost_packets={} lost_bytes={} congestion_events={} cwnd={} rtt_ms={:.1} min_rtt_ms={:.1} mtu={} plpmtud_sent={} plpmtud_lost={} black_holes={} udp_tx={} udp_tx_calls={} udp_rx={} acks_tx={} acks_rx={} ping_tx={} stream_tx={}",
        p.sent_packets,
        p.lost_packets,
        p.lost_bytes,
        p.congestion_events,
        p.cwnd,
        p.rtt.as_secs_f64() * 1e3,
        p.min_rtt.as_secs_f64() * 1e3,
        p.current_mtu,
        p.sent_plpmtud_probes,
        p.lost_plpmtud_probes,
        p.black_holes_detected,
        stats.udp_tx.datagrams,
        stats.udp_tx.ios,
        stats.udp_rx.datagrams,
        stats.frame_tx.acks,
        stats.frame_rx.acks,
        stats.frame_tx.ping,
        stats.frame_tx.stream,
    )
}

/// Appends `stats`' line to the `WEBSCOPE_QUIC_STATS` file, if the variable is set. A file
/// that cannot be written loses the line: a diagnostic never stops a connection's end.
pub fn note(side: &str, stats: &ConnectionStats) {
    let Some(path) = std::env::var_os(STATS_VAR) else {
        return;
    };
    let line = stats_line(side, stats) + "\n";
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        // One write per line, so that lines from several processes do not interleave.
        let _ = file.write_all(line.as_bytes());
    }
}

/// The variable of [`tune`]: comma-separated `key=value` transport settings.
pub const TUNE_VAR: &str = "WEBSCOPE_QUIC_TUNE";

/// Applies `WEBSCOPE_QUIC_TUNE`'s settings to `transport`, for trying quinn's loss recovery
/// and congestion control without a rebuild: `cc=cubic|newreno|bbr`, `mtud=off`,
/// `initial_rtt_ms=N`, `packet_threshold=N`, `time_threshold=F`. Err names a setting it does
/// not know (both sides of the loss experiment are then told, once).
pub fn tune(transport: &mut quinn_proto::TransportConfig) -> Result<(), String> {
    use quinn_proto::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
    use std::sync::Arc;
    let Ok(spec) = std::env::var(TUNE_VAR) else {
        return Ok(());
    };
    for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
        let (key, value) = part.trim().split_once('=').unwrap_or((part.trim(), ""));
        let bad = || format!("{TUNE_VAR}: cannot read {part:?}");
        match key {
            "cc" => match value {
                "cubic" => {
                    transport.congestion_controller_factory(Arc::new(CubicConfig::default()))
                }
                "newreno" => {
                    transport.congestion_controller_factory(Arc::new(NewRenoConfig::default()))
                }
                "bbr" => transport.congestion_controller_factory(Arc::new(BbrConfig::default())),
                _ => return Err(bad()),
            },
            "mtud" if value == "off" => transport.mtu_discovery_config(None),
            "initial_rtt_ms" => transport.initial_rtt(std::time::Duration::from_millis(
                value.parse().map_err(|_| bad())?,
            )),
            "packet_threshold" => transport.packet_threshold(value.parse().map_err(|_| bad())?),
            "time_threshold" => transport.time_threshold(value.parse().map_err(|_| bad())?),
            _ => return Err(bad()),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_its_side_and_the_losses() {
        let mut stats = ConnectionStats::default();
        stats.path.lost_packets = 7;
        stats.path.rtt = std::time::Duration::from_millis(21);
        stats.udp_tx.datagrams = 10;
        stats.udp_tx.ios = 1;
        let line = stats_line("server", &stats);
        assert!(line.contains(" udp_tx=10 udp_tx_calls=1 "), "{line}");
        assert!(line.starts_with("side=server "), "{line}");
        assert!(line.contains(" lost_packets=7 "), "{line}");
        assert!(line.contains(" rtt_ms=21.0 "), "{line}");
    }
}
