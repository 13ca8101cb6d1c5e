//! Server-side timing, as the WebMonitor server module of Yates, Almeida & Almeida did it:
//! for every request the time spent parsing (first byte to parsed head), processing (file
//! lookup and sending) and logging, and the whole connection's life (accept to close),
//! recorded in HdrHistograms by size class (the SPECweb96 classes 0-3, and over 1 MB) and by
//! status, with bytes sent, requests per connection and active connections.
//!
//! The clock is the TSC (`quanta`), a few nanoseconds a read. Each worker records into its own
//! [`Stats`] behind a mutex that only the admin endpoint ever contends for, so recording is one
//! uncontended lock per request. Histograms hold nanoseconds with two significant digits (1 %
//! resolution) up to 100 s: 30 KiB each.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;

/// The size classes, by response body bytes: SPECweb96's four, and one more for > 1 MB.
pub const CLASSES: [&str; 5] = ["0-1KB", "1-10KB", "10-100KB", "100KB-1MB", "over-1MB"];
/// The phases of a request.
/// `tls` is the TLS handshake, recorded once per TLS connection with its first request (so
/// its count is the handshakes that led to a request); record encryption is part of
/// `process`, where sending is.
pub const PHASES: [&str; 5] = ["parse", "process", "log", "total", "tls"];

const MAX_NANOS: u64 = 100_000_000_000;

/// The class of a response by its body size (SPECweb96 class boundaries, in KB of 1024).
pub fn size_class(bytes: u64) -> usize {
    match bytes {
        0..=1023 => 0,
        1024..=10_239 => 1,
        10_240..=102_399 => 2,
        102_400..=1_048_575 => 3,
        _ => 4,
    }
}

pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NANOS, 2).expect("valid histogram bounds")
}

/// What one worker (or, merged, the whole server) measured.
#[derive(Debug, Clone)]
pub struct Stats {
    /// `phases[class][phase]`: nanoseconds per request.
    pub phases: Vec<Vec<Histogram<u64>>>,
    /// Requests by status code.
    pub by_status: BTreeMap<u16, u64>,
    /// Total time of requests by status class (index 1 for 1xx ... 5 for 5xx).
    pub by_status_class: Vec<Histogram<u64>>,
    /// Bytes written to clients (heads and bodies).
    pub bytes_sent: u64,
    /// Connections accepted.
    pub connections: u64,
    /// Connections open now.
    pub active: i64,
    /// Connection lifetimes, accept to close, nanoseconds.
    pub connection_life: Histogram<u64>,
    /// Requests served per connection.
    pub requests_per_connection: Histogram<u64>,
    /// TLS handshakes that completed in full.
    pub tls_full: u64,
    /// TLS handshakes that resumed a session.
    pub tls_resumed: u64,
    /// TLS handshakes that failed or timed out (the connection was closed).
    pub tls_failed: u64,
    /// Connections that spoke HTTP/2.
    pub h2_connections: u64,
    /// HTTP/2 connections ended for a flood of control frames (`epoll/h2_guard.rs`).
    pub h2_floods: u64,
    /// QUIC connections that spoke HTTP/3.
    pub h3_connections: u64,
    /// QUIC: connection attempts answered with a Retry (their address unproven while many
    /// handshakes were in progress).
    pub quic_retries: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            phases: (0..CLASSES.len())
                .map(|_| (0..PHASES.len()).map(|_| histogram()).collect())
                .collect(),
            by_status: BTreeMap::new(),
            by_status_class: (0..6).map(|_| histogram()).collect(),
            bytes_sent: 0,
            connections: 0,
            active: 0,
            connection_life: histogram(),
            requests_per_connection: Histogram::new_with_bounds(1, 10_000_000, 2)
                .expect("valid histogram bounds"),
            tls_full: 0,
            tls_resumed: 0,
            tls_failed: 0,
            h2_connections: 0,
            h2_floods: 0,
            h3_connections: 0,
            quic_retries: 0,
        }
    }
}

/// One request's measurements.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub status: u16,
    pub body_bytes: u64,
    pub sent_bytes: u64,
    pub parse: u64,
    pub process: u64,
    pub log: u64,
    pub total: u64,
    /// The TLS handshake's nanoseconds, with a connection's first request only (else 0).
    pub tls: u64,
}

impl Stats {
    pub(crate) fn record(&mut self, s: &Sample) {
        let phases = &mut self.phases[size_class(s.body_bytes)];
        for (i, v) in [s.parse, s.process, s.log, s.total].into_iter().enumerate() {
            phases[i].saturating_record(v.max(1));
        }
        if s.tls > 0 {
            phases[4].saturating_record(s.tls);
        }
        *self.by_status.entry(s.status).or_insert(0) += 1;
        let class = usize::from(s.status / 100).min(5);
        self.by_status_class[class].saturating_record(s.total.max(1));
        self.bytes_sent += s.sent_bytes;
    }

    pub(crate) fn connection_closed(&mut self, life: u64, requests: u64, sent_bytes: u64) {
        self.active -= 1;
        self.connection_life.saturating_record(life.max(1));
        if requests > 0 {
            self.requests_per_connection.saturating_record(requests);
        }
        self.bytes_sent += sent_bytes;
    }

    /// Requests recorded.
    pub fn requests(&self) -> u64 {
        self.by_status.values().sum()
    }

    /// Adds another worker's figures into these.
    pub fn merge(&mut self, other: &Stats) {
        for (mine, theirs) in self.phases.iter_mut().zip(&other.phases) {
            for (m, t) in mine.iter_mut().zip(theirs) {
                let _ = m.add(t);
            }
        }
        for (code, n) in &other.by_status {
            *self.by_status.entry(*code).or_insert(0) += n;
        }
        for (m, t) in self.by_status_class.iter_mut().zip(&other.by_status_class) {
            let _ = m.add(t);
        }
        self.bytes_sent += other.bytes_sent;
        self.connections += other.connections;
        self.tls_full += other.tls_full;
        self.tls_resumed += other.tls_resumed;
        self.tls_failed += other.tls_failed;
        self.h2_connections += other.h2_connections;
        self.h2_floods += other.h2_floods;
        self.h3_connections += other.h3_connections;
        self.quic_retries += other.quic_retries;
        self.active += other.active;
        let _ = self.connection_life.add(&other.connection_life);
        let _ = self
            .requests_per_connection
            .add(&other.requests_per_connection);
    }
}

/// The per-worker stats, as the server and its admin endpoint share them.
pub type SharedStats = Arc<Mutex<Stats>>;

/// The sum of all workers' stats.
pub fn merged(all: &[SharedStats]) -> Stats {
    let mut total = Stats::default();
    for stats in all {
        if let Ok(stats) = stats.lock() {
            total.merge(&stats);
        }
    }
    total
}

/// A worker's recorder: the clock and where samples go; inert when timing is off.
pub(crate) struct Timing {
    clock: Option<quanta::Clock>,
    stats: SharedStats,
}

impl Timing {
    pub(crate) fn new(enabled: bool, stats: SharedStats) -> Timing {
        Timing {
            clock: enabled.then(quanta::Clock::new),
            stats,
        }
    }

    /// A raw clock reading (0 when timing is off).
    pub(crate) fn now(&self) -> u64 {
        self.clock.as_ref().map_or(0, quanta::Clock::raw)
    }

    /// Nanoseconds between two readings.
    pub(crate) fn nanos(&self, start: u64, end: u64) -> u64 {
        match &self.clock {
            Some(clock) if end > start => clock.delta_as_nanos(start, end),
            _ => 0,
        }
    }

    pub(crate) fn record(&self, sample: &Sample) {
        if self.clock.is_some() {
            if let Ok(mut stats) = self.stats.lock() {
                stats.record(sample);
            }
        }
    }

    /// Counts a new connection; returns the clock reading to pass to `end_connection`.
    pub(crate) fn start_connection(&self) -> u64 {
        if self.clock.is_some() {
            if let Ok(mut stats) = self.stats.lock() {
                stats.connections += 1;
                stats.active += 1;
            }
        }
        self.now()
    }

    /// Counts a TLS handshake: Some(resumed) when it completed, None when it failed.
    pub(crate) fn handshake(&self, done: Option<bool>) {
        if self.clock.is_some() {
            if let Ok(mut stats) = self.stats.lock() {
                match done {
                    Some(false) => stats.tls_full += 1,
                    Some(true) => stats.tls_resumed += 1,
                    None => stats.tls_failed += 1,
                }
            }
        }
    }

    /// Counts a connection that speaks HTTP/2.
    pub(crate) fn h2_connection(&self) {
        if self.clock.is_some() {
            if let Ok(mut stats) = self.stats.lock() {
                stats.h2_connections += 1;
            }
        }
    }

    /// Counts an HTTP/2 connection ended for a flood of control frames.
    pub(crate) fn h2_flood(&self) {
        if self.clock.is_some() {
            if let Ok(mut stats) = self.stats.lock() {
                stats.h2_floods += 1;
            }
        }
    }

    /// Counts a QUIC connection that speaks HTTP/3 (`retry`: false), or a Retry sent.
    pub(crate) fn quic(&self, retry: bool) {
        if self.clock.is_some() {
            if let Ok(mut stats) = self.stats.lock() {
                if retry {
                    stats.quic_retries += 1;
                } else {
                    stats.h3_connections += 1;
                }
            }
        }
    }

    pub(crate) fn end_connection(&self, accepted: u64, requests: u64) {
        if self.clock.is_some() {
            let life = self.nanos(accepted, self.now());
            if let Ok(mut stats) = self.stats.lock() {
                stats.connection_closed(life, requests, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_specweb96() {
        assert_eq!(size_class(0), 0);
        assert_eq!(size_class(1023), 0);
        assert_eq!(size_class(1024), 1);
        assert_eq!(size_class(102_399), 2);
        assert_eq!(size_class(102_400), 3);
        assert_eq!(size_class(1 << 20), 4);
    }

    #[test]
    fn merging_adds_up() {
        let mut a = Stats::default();
        let sample = Sample {
            status: 200,
            body_bytes: 2000,
            sent_bytes: 2200,
            parse: 100,
            process: 1000,
            log: 50,
            total: 1200,
            tls: 0,
        };
        a.record(&sample);
        a.record(&Sample {
            status: 404,
            body_bytes: 10,
            ..sample
        });
        let mut total = Stats::default();
        total.merge(&a);
        total.merge(&a);
        assert_eq!(total.requests(), 4);
        assert_eq!(total.by_status[&404], 2);
        assert_eq!(total.phases[1][0].len(), 2);
        assert_eq!(total.phases[0][3].len(), 2);
        assert_eq!(total.bytes_sent, 8800);
        assert_eq!(total.by_status_class[2].len(), 2);
    }
}
