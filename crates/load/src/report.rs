//! What a run measured, as data (serialised to `--json`) and as a wrk-like terminal summary.
//!
//! Latencies are reported in microseconds from nanosecond histograms; percentiles are taken
//! only here, at report time, from whole distributions.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::recorder::{ClassStats, FAILURES};

/// Percentiles of a latency distribution, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Number of values.
    pub count: u64,
}

impl Latency {
    pub(crate) fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            p50: us(h.value_at_quantile(0.50)),
            p90: us(h.value_at_quantile(0.90)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
            mean: h.mean() / 1000.0,
            min: us(h.min()),
            count: h.len(),
        }
    }
}

/// Failures by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Errors {
    /// Connections refused.
    pub connect_refused: u64,
    /// Other connect failures.
    pub connect: u64,
    /// Connections reset or closed before a response began.
    pub reset: u64,
    /// Requests that got no complete response in time.
    pub timeout: u64,
    /// Complete responses with status 400 or more.
    pub bad_status: u64,
    /// Bodies cut short.
    pub short_body: u64,
    /// Responses that were not HTTP/1.x.
    pub parse_error: u64,
    /// TLS handshakes or records that failed.
    #[serde(default)]
    pub tls: u64,
    /// HTTP/2: streams cut by the server's GOAWAY.
    #[serde(default)]
    pub goaway: u64,
    /// HTTP/2: streams the server reset (RST_STREAM).
    #[serde(default)]
    pub rst_stream: u64,
    /// All of the above.
    pub total: u64,
}

impl Errors {
    pub(crate) fn of(failures: &[u64; FAILURES.len()]) -> Errors {
        Errors {
            connect_refused: failures[0],
            connect: failures[1],
            reset: failures[2],
            timeout: failures[3],
            bad_status: failures[4],
            short_body: failures[5],
            parse_error: failures[6],
            tls: failures[7],
            goaway: failures[8],
            rst_stream: failures[9],
            total: failures.iter().sum(),
        }
    }

    fn describe(&self) -> String {
        let pairs = [
            ("connect refused", self.connect_refused),
            ("connect", self.connect),
            ("reset", self.reset),
            ("timeout", self.timeout),
            ("bad status", self.bad_status),
            ("short body", self.short_body),
            ("parse", self.parse_error),
            ("tls", self.tls),
            ("GOAWAY", self.goaway),
            ("RST_STREAM", self.rst_stream),
        ];
        let parts: Vec<String> = pairs
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// The figures of one class (or of all classes together).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClassReport {
    /// The class's name ("all" for a single URL).
    pub name: String,
    /// Complete responses (any status).
    pub requests: u64,
    /// Failures by kind.
    pub errors: Errors,
    /// Complete responses per second.
    pub requests_per_s: f64,
    /// Bytes received.
    pub bytes: u64,
    /// Bytes received per second.
    pub bytes_per_s: f64,
    /// Latency: from the intended send time in open loop when a request had to wait,
    /// otherwise from the send; connect time included when the request opened a connection.
    pub latency_us: Latency,
    /// Open loop: latency from the actual send (what a closed-loop tool would report).
    pub uncorrected_latency_us: Option<Latency>,
    /// Time to the first byte of the response.
    pub ttfb_us: Latency,
    /// Connect time of the requests that opened a connection.
    pub connect_us: Option<Latency>,
    /// https: TLS handshake time, when connections made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake_us: Option<Latency>,
}

impl ClassReport {
    pub(crate) fn of(name: &str, stats: &ClassStats, seconds: f64, open_loop: bool) -> ClassReport {
        let per_s = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        ClassReport {
            name: name.to_string(),
            requests: stats.requests,
            errors: Errors::of(&stats.failures),
            requests_per_s: per_s(stats.requests),
            bytes: stats.bytes,
            bytes_per_s: per_s(stats.bytes),
            latency_us: Latency::of(&stats.latency),
            uncorrected_latency_us: open_loop.then(|| Latency::of(&stats.uncorrected)),
            ttfb_us: Latency::of(&stats.ttfb),
            connect_us: (!stats.connect.is_empty()).then(|| Latency::of(&stats.connect)),
            tls_handshake_us: (!stats.handshake.is_empty()).then(|| Latency::of(&stats.handshake)),
        }
    }
}

/// The figures of one reporting interval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntervalReport {
    /// Start, in seconds from the run's start.
    pub start_s: f64,
    /// Length in seconds (the last one may be shorter).
    pub duration_s: f64,
    /// Complete responses.
    pub requests: u64,
    /// Failures of all kinds.
    pub errors: u64,
    /// Complete responses per second.
    pub requests_per_s: f64,
    /// Bytes received per second.
    pub bytes_per_s: f64,
    /// Latency in this interval.
    pub latency_us: Latency,
    /// The busiest generator thread's CPU use, as a fraction of the interval.
    pub generator_busy: f64,
    /// Connections open at the interval's end.
    pub connections: usize,
}

/// The TLS handshakes of an https run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TlsReport {
    /// Handshakes completed in full.
    pub full: u64,
    /// Handshakes that resumed a session (a ticket or an ID).
    pub resumed: u64,
    /// Handshake time, from the ClientHello's send to the handshake's end.
    pub handshake_us: Latency,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// What was requested.
    pub target: String,
    /// "keep-alive" or "close".
    pub mode: String,
    /// "HTTP/1.1", or "HTTP/2 (N streams per connection)".
    #[serde(default)]
    pub protocol: String,
    /// "closed" or "open".
    pub pacing: String,
    /// Open loop: the asked rate (requests per second).
    pub rate: Option<f64>,
    /// Open loop: "constant" or "poisson".
    pub arrivals: Option<String>,
    /// Connections at the start.
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// Start time, seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// Measured length of the run in seconds.
    pub duration_s: f64,
    /// Whether the run was cut short (Ctrl-C).
    pub interrupted: bool,
    /// Complete responses (any status).
    pub requests: u64,
    /// Failures by kind.
    pub errors: Errors,
    /// Open loop: requests whose send time came and went with no connection free, before
    /// the limit on connections let one open.
    pub not_sent: u64,
    /// Connections opened, or tried (a refused one counts), during the run.
    pub connects: u64,
    /// Complete responses per second.
    pub requests_per_s: f64,
    /// Bytes received.
    pub bytes: u64,
    /// Bytes received per second.
    pub bytes_per_s: f64,
    /// Latency of all requests (see [`ClassReport::latency_us`]).
    pub latency_us: Latency,
    /// Open loop: latency from the actual send.
    pub uncorrected_latency_us: Option<Latency>,
    /// Time to first byte.
    pub ttfb_us: Latency,
    /// Connect time, when connections were opened.
    pub connect_us: Option<Latency>,
    /// https: the handshakes, full and resumed, and their time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsReport>,
    /// Responses by status code.
    pub status_codes: BTreeMap<String, u64>,
    /// Per class (one entry, "all", for a single URL).
    pub classes: Vec<ClassReport>,
    /// Per interval.
    pub intervals: Vec<IntervalReport>,
    /// CPU time the generator used (all its threads, user and system).
    pub generator_cpu_s: f64,
    /// Generator CPU time per complete response, in microseconds.
    pub generator_cpu_per_request_us: f64,
    /// The busiest generator thread's CPU use over the run, as a fraction of the run.
    pub generator_busy: f64,
    /// The generator thread that slept least: the fraction of the run it was running or
    /// waiting in the run queue (schedstat). Near 1, the generator set the pace even if
    /// another process took part of its CPU.
    pub generator_busy_or_waiting: f64,
    /// Things the reader should know (e.g. the generator was the bottleneck).
    pub warnings: Vec<String>,
    /// The execution segment this run was (`I/N`), if it was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    /// The host that ran it.
    #[serde(default)]
    pub host: String,
    /// How long after `--start-at` it began, in seconds (0 when on time or not asked).
    #[serde(default)]
    pub start_late_s: f64,
    /// A segment's whole histograms per class, so that `webscope merge` adds them exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<Vec<crate::merge::ClassHistograms>>,
    /// A merged run: the generators that made it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<crate::merge::Generator>,
}

/// Formats microseconds for people: `85us`, `1.25ms`, `2.00s`.
pub fn format_us(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0}us")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

fn latency_row(label: &str, l: &Latency) -> String {
    format!(
        "  {label:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        format_us(l.p50),
        format_us(l.p90),
        format_us(l.p99),
        format_us(l.p999),
        format_us(l.max),
        format_us(l.mean)
    )
}

impl Report {
    /// Writes the report as JSON to `path`, through a hidden file renamed into place so
    /// that a reader never sees half a report.
    pub fn write_json(&self, path: &std::path::Path) -> Result<(), crate::Error> {
        let fail = |source| crate::Error::Json {
            path: path.to_path_buf(),
            source,
        };
        let text = serde_json::to_vec_pretty(self).map_err(|e| fail(std::io::Error::other(e)))?;
        let name = path
            .file_name()
            .ok_or_else(|| fail(std::io::Error::other("not a file name")))?;
        let partial = path.with_file_name(format!(".{}.partial", name.to_string_lossy()));
        let written = std::fs::write(&partial, text).and_then(|()| std::fs::rename(&partial, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&partial);
            return Err(fail(e));
        }
        Ok(())
    }

    /// The terminal summary, in the spirit of wrk's.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let pacing = match self.rate {
            Some(rate) => format!(
                "open loop at {rate} req/s ({})",
                self.arrivals.as_deref().unwrap_or("constant")
            ),
            None => "closed loop".to_string(),
        };
        let _ = writeln!(
            out,
            "{:.2}s {} @ {}\n  {} thread{}, {} connection{}, {}, {}",
            self.duration_s,
            if self.interrupted {
                "run (interrupted)"
            } else {
                "run"
            },
            self.target,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.connections,
            if self.connections == 1 { "" } else { "s" },
            if self.protocol.starts_with("HTTP/2") {
                self.protocol.as_str()
            } else {
                self.mode.as_str()
            },
            pacing
        );
        let _ = writeln!(
            out,
            "  {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "Latency", "p50", "p90", "p99", "p99.9", "max", "mean"
        );
        out.push_str(&latency_row("total", &self.latency_us));
        if let Some(uncorrected) = &self.uncorrected_latency_us {
            out.push_str(&latency_row("uncorrected", uncorrected));
        }
        out.push_str(&latency_row("first byte", &self.ttfb_us));
        if let Some(connect) = &self.connect_us {
            out.push_str(&latency_row("connect", connect));
        }
        if let Some(tls) = &self.tls {
            out.push_str(&latency_row("TLS handshake", &tls.handshake_us));
        }
        if self.classes.len() > 1 {
            for class in &self.classes {
                out.push_str(&latency_row(&class.name, &class.latency_us));
            }
            let _ = writeln!(
                out,
                "  {:<14} {:>9} {:>11} {:>11} {:>9}",
                "Class", "share", "requests", "req/s", "errors"
            );
            for class in &self.classes {
                let share = if self.requests > 0 {
                    class.requests as f64 * 100.0 / self.requests as f64
                } else {
                    0.0
                };
                let _ = writeln!(
                    out,
                    "  {:<14} {:>8.2}% {:>11} {:>11.1} {:>9}",
                    class.name, share, class.requests, class.requests_per_s, class.errors.total
                );
            }
        }
        let _ = writeln!(
            out,
            "  {} requests in {:.2}s, {:.1} MB read, {} connect{}",
            self.requests,
            self.duration_s,
            self.bytes as f64 / 1e6,
            self.connects,
            if self.connects == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "  Errors: {}", self.errors.describe());
        if let Some(tls) = &self.tls {
            let _ = writeln!(
                out,
                "  TLS handshakes: {} full, {} resumed",
                tls.full, tls.resumed
            );
        }
        // As wrk says it: the responses a success rate must not count.
        let unexpected: u64 = self
            .status_codes
            .iter()
            .filter(|(code, _)| !(code.starts_with('2') || code.starts_with('3')))
            .map(|(_, n)| n)
            .sum();
        if unexpected > 0 {
            let _ = writeln!(out, "  Non-2xx or 3xx responses: {unexpected}");
        }
        if self.rate.is_some() {
            let _ = writeln!(
                out,
                "  Not sent (no free connection in time): {}",
                self.not_sent
            );
        }
        let _ = writeln!(out, "Requests/sec: {:>12.2}", self.requests_per_s);
        let _ = writeln!(
            out,
            "Transfer/sec: {:>12.2} Mbit/s",
            self.bytes_per_s * 8.0 / 1e6
        );
        let _ = writeln!(
            out,
            "Generator:    {:.2}s CPU, {:.2}us per request, busiest thread {:.0}% busy ({:.0}% running or waiting for a CPU)",
            self.generator_cpu_s,
            self.generator_cpu_per_request_us,
            self.generator_busy * 100.0,
            self.generator_busy_or_waiting * 100.0
        );
        if !self.generators.is_empty() {
            out.push_str(&crate::merge::generators_table(&self.generators));
        }
        for warning in &self.warnings {
            let _ = writeln!(out, "warning: {warning}");
        }
        out
    }

    /// The one-line progress display for an interval.
    pub fn live_line(interval: &IntervalReport, elapsed_s: f64) -> String {
        format!(
            "[{elapsed_s:6.1}s] {:>10.0} req/s {:>8.1} Mbit/s  p50 {:>8}  p99 {:>8}  max {:>8}  errors {}  conns {}",
            interval.requests_per_s,
            interval.bytes_per_s * 8.0 / 1e6,
            format_us(interval.latency_us.p50),
            format_us(interval.latency_us.p99),
            format_us(interval.latency_us.max),
            interval.errors,
            interval.connections
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{histogram, record};

    #[test]
    fn latency_percentiles_in_microseconds() {
        let mut h = histogram();
        for i in 1..=1000u64 {
            record(&mut h, i * 1000);
        }
        let l = Latency::of(&h);
        assert!((l.p50 - 500.0).abs() < 1.0, "{l:?}");
        assert!((l.p99 - 990.0).abs() < 1.0, "{l:?}");
        assert!((l.max - 1000.0).abs() < 1.0, "{l:?}");
        assert_eq!(l.count, 1000);
        assert_eq!(Latency::of(&histogram()), Latency::default());
    }

    #[test]
    fn formats() {
        assert_eq!(format_us(85.2), "85us");
        assert_eq!(format_us(1250.0), "1.25ms");
        assert_eq!(format_us(2_000_000.0), "2.00s");
        let e = Errors::of(&[0, 0, 2, 0, 1, 0, 0, 0, 0, 0]);
        assert_eq!(e.total, 3);
        assert_eq!(e.describe(), "reset 2, bad status 1");
        assert_eq!(Errors::default().describe(), "none");
    }
}
