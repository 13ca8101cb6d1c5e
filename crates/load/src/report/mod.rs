//! What a run measured, as data (serialised to `--json`, and read back by `webscope merge` and
//! the lab) and as a wrk-like terminal summary (`text.rs`); `build.rs` assembles it from what
//! the workers recorded, for a single run and for a merge of segments alike, and
//! `histograms.rs` carries a segment's whole histograms in it.
//!
//! Latencies are reported in microseconds from nanosecond histograms; percentiles are taken
//! only here, at report time, from whole distributions. Not for recording (the recorder) nor
//! for running (the coordinator, `run`).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use self::histograms::ClassHistograms;
use crate::recorder::{Failure, FAILURES};

pub(crate) mod build;
pub(crate) mod histograms;
pub(crate) mod text;
pub mod users;

/// Percentiles of a latency distribution, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
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
    /// The percentile at quantile `q` among those a report carries (p50, p90, p99, p99.9,
    /// max); None for another quantile, or when nothing was timed.
    pub fn at(l: &Latency, q: f64) -> Option<f64> {
        if l.count == 0 {
            return None;
        }
        [
            (0.5, l.p50),
            (0.9, l.p90),
            (0.99, l.p99),
            (0.999, l.p999),
            (1.0, l.max),
        ]
        .iter()
        .find(|(at, _)| (*at - q).abs() < 1e-9)
        .map(|&(_, us)| us)
    }

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

/// Exchanges that got no response, by kind; and, apart, the responses of 400 and above.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Errors {
    /// Connections refused.
    pub connect_refused: u64,
    /// Other connect failures.
    pub connect: u64,
    /// Connections reset or closed before a response began.
    pub reset: u64,
    /// Requests that got no complete response in time.
    pub timeout: u64,
    /// Complete responses whose status the run's expectation calls an error (`Config::expect`,
    /// [`crate::Expect::is_error`]; before #47, any status of 400 or more): responses, not
    /// failures (they are in `requests` and in the run's `status_codes`), kept here because a
    /// class has no statuses of its own. Not in `total`.
    pub bad_status: u64,
    /// Bodies cut short.
    pub short_body: u64,
    /// Responses that were not HTTP/1.x; HTTP/2 frames that broke the protocol.
    pub parse_error: u64,
    /// TLS handshakes or records that failed.
    #[serde(default)]
    pub tls: u64,
    /// HTTP/2: streams cut by a GOAWAY the server sent.
    #[serde(default)]
    pub goaway: u64,
    /// HTTP/2: streams the server reset (RST_STREAM).
    #[serde(default)]
    pub rst_stream: u64,
    /// The exchanges that got no response: every kind above but `bad_status`. (Reports
    /// written before #38 added `bad_status` in; read [`Errors::no_response`], which sums
    /// the kinds, rather than this field.)
    pub total: u64,
}

impl Errors {
    pub(crate) fn of(failures: &[u64; FAILURES.len()], bad_status: u64) -> Errors {
        let mut e = Errors {
            bad_status,
            ..Errors::default()
        };
        for (failure, n) in Failure::ALL.iter().zip(failures) {
            *e.count_mut(*failure) = *n;
        }
        e.total = e.no_response();
        e
    }

    /// The count of one kind of failure.
    pub fn count(&self, failure: Failure) -> u64 {
        match failure {
            Failure::ConnectRefused => self.connect_refused,
            Failure::Connect => self.connect,
            Failure::Reset => self.reset,
            Failure::Timeout => self.timeout,
            Failure::ShortBody => self.short_body,
            Failure::Parse => self.parse_error,
            Failure::Tls => self.tls,
            Failure::GoAway => self.goaway,
            Failure::StreamReset => self.rst_stream,
        }
    }

    fn count_mut(&mut self, failure: Failure) -> &mut u64 {
        match failure {
            Failure::ConnectRefused => &mut self.connect_refused,
            Failure::Connect => &mut self.connect,
            Failure::Reset => &mut self.reset,
            Failure::Timeout => &mut self.timeout,
            Failure::ShortBody => &mut self.short_body,
            Failure::Parse => &mut self.parse_error,
            Failure::Tls => &mut self.tls,
            Failure::GoAway => &mut self.goaway,
            Failure::StreamReset => &mut self.rst_stream,
        }
    }

    /// The failures by kind, in report order, as an array indexed by `Failure as usize`.
    pub(crate) fn as_array(&self) -> [u64; FAILURES.len()] {
        Failure::ALL.map(|f| self.count(f))
    }

    /// Exchanges that got no response, of every kind: the sum of the kinds, whatever `total`
    /// a report read back says.
    pub fn no_response(&self) -> u64 {
        Failure::ALL.iter().map(|f| self.count(*f)).sum()
    }

    /// Errors as the default expectation counts them where no statuses are kept (a class):
    /// exchanges that got no response, and responses of status 400 and above.
    pub fn with_bad_status(&self) -> u64 {
        self.no_response() + self.bad_status
    }

    pub(crate) fn describe(&self) -> String {
        let parts: Vec<String> = Failure::ALL
            .iter()
            .map(|f| (f.short(), self.count(*f)))
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

/// The figures of a set of requests (one class, or the whole run): what completed, what
/// failed, how fast, and the latency distributions. A run's report and each class's hold one,
/// flattened into their JSON as if its fields were theirs.
///
/// `Run` is what a run's report adds in their middle ([`RunCounts`]; nothing for a class):
/// the JSON has always had those fields there, and flattening keeps every byte of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, bound(deserialize = "Run: Deserialize<'de> + Default"))]
pub struct Figures<Run = ()> {
    /// Complete responses (any status).
    pub requests: u64,
    /// Failures by kind.
    pub errors: Errors,
    /// Requests sent and still unanswered when the run ended: neither responses nor errors
    /// (the run ended before either came), but not to be lost either (a server that accepts
    /// and never answers makes nothing else).
    #[serde(default)]
    pub unfinished: u64,
    /// Their ages at the run's end (from when their latency would have counted), when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished_age_us: Option<Latency>,
    /// A run's own counts.
    #[serde(flatten)]
    pub run: Run,
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
}

/// What a whole run counts beside its requests' figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunCounts {
    /// Open loop: requests whose send time came and went with no connection free, before
    /// the limit on connections let one open.
    pub not_sent: u64,
    /// Connections opened, or tried (a refused one counts), during the run.
    pub connects: u64,
    /// Open loop: requests sent more than [`crate::LATE_SEND`] after their slot's time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_sends: Option<u64>,
}

/// The figures of one class.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ClassReport {
    /// The class's name ("all" for a single URL).
    pub name: String,
    /// Its requests' figures.
    #[serde(flatten)]
    pub figures: Figures,
    /// https: TLS handshake time, when connections made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake_us: Option<Latency>,
}

/// The figures of one reporting interval.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct IntervalReport {
    /// Start, in seconds from the run's start.
    pub start_s: f64,
    /// Length in seconds (the last one may be shorter).
    pub duration_s: f64,
    /// Complete responses.
    pub requests: u64,
    /// Errors as the default expectation counts them: exchanges that got no response, and
    /// responses of status 400 and above.
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
    /// A replay: the requests the log offered in this interval (slots whose time fell in
    /// it), to set against `requests`, those answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<u64>,
    /// `--users`: the users active, the page views and their page loads in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<users::IntervalUsers>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The TLS handshakes of an https run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsReport {
    /// Handshakes completed in full.
    pub full: u64,
    /// Handshakes that resumed a session (a ticket or an ID).
    pub resumed: u64,
    /// HTTP/3 with `--0rtt`: resumed handshakes whose 0-RTT early data the server accepted,
    /// so that their first requests did not wait for the handshake's round trip. Not
    /// written when none (every run but one with `--0rtt`).
    #[serde(skip_serializing_if = "is_zero")]
    pub early: u64,
    /// Handshake time, from the ClientHello's send to the handshake's end.
    pub handshake_us: Latency,
}

/// How a run's requests were paced, as report.json writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Loop {
    /// Each connection sends its next request once the last is answered (or a user's think
    /// time is over).
    #[default]
    Closed,
    /// Requests are sent at a rate, whether or not the earlier ones were answered.
    Open,
}

impl std::fmt::Display for Loop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Loop::Closed => "closed",
            Loop::Open => "open",
        })
    }
}

/// Everything a run measured. Every field has a default when read back, so that a report
/// written by an earlier version (a stored lab's) reads as a whole.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Report {
    /// What was requested.
    pub target: String,
    /// "keep-alive" or "close".
    pub mode: String,
    /// "HTTP/1.1", or "HTTP/2 (N streams per connection)".
    #[serde(default)]
    pub protocol: String,
    /// `closed` or `open` ([`Report::open_loop`] says which runs count as open).
    pub pacing: Loop,
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
    /// All requests' figures, every class together.
    #[serde(flatten)]
    pub total: Figures<RunCounts>,
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
    pub histograms: Option<Vec<ClassHistograms>>,
    /// A replay (`--replay`): the log's figures, the status pairs that differ from the log,
    /// and whether the schedule was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::replay::ReplayReport>,
    /// `--users`: page views, page loads, think times and the response time law.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<users::UsersReport>,
    /// A merged run: the generators that made it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<Generator>,
    /// The statuses the run expected (`Config::expect`), by which its classes' and intervals'
    /// errors were counted; written only when not the default, so a default run's report
    /// is as before #47, and one read back without it had the default.
    #[serde(default, skip_serializing_if = "crate::Expect::is_default")]
    pub expect: crate::Expect,
    /// The whole run's latency histogram (nanoseconds, as `latency_us` was taken from), for
    /// percentiles the JSON does not carry; not written (a report read back has none).
    #[serde(skip)]
    pub latency_histogram: Option<Histogram<u64>>,
}

/// One generator of a merged run, for its table.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Generator {
    /// `I/N`.
    pub segment: String,
    /// The host it ran on.
    pub host: String,
    /// Complete responses.
    pub requests: u64,
    /// Its generator CPU time, seconds.
    pub cpu_s: f64,
    /// Its busiest thread's share of the run.
    pub busy: f64,
    /// Its least-idle thread's share running or waiting for a CPU.
    pub busy_or_waiting: f64,
    /// How late it started after `--start-at`, seconds.
    pub start_late_s: f64,
    /// It was saturated: its figures measure it as much as the server.
    pub saturated: bool,
}

impl Report {
    /// Whether the run was an open loop, the one rule for it: paced at a rate, or a log
    /// replayed at its own times (each request sent when the log says, answered or not).
    pub fn open_loop(&self) -> bool {
        self.pacing == Loop::Open || self.replay.is_some()
    }

    /// The latency at quantile `q` (0 < q ≤ 1) in microseconds, from the whole histogram; or,
    /// for a report read back from JSON, from the percentiles it carries (p50, p90, p99,
    /// p99.9, max). None when neither has it.
    pub fn latency_at(&self, q: f64) -> Option<f64> {
        if let Some(h) = self.latency_histogram.as_ref().filter(|h| !h.is_empty()) {
            let ns = if q >= 1.0 {
                h.max()
            } else {
                h.value_at_quantile(q)
            };
            return Some(ns as f64 / 1000.0);
        }
        Latency::at(&self.total.latency_us, q)
    }

    /// Writes the report as JSON to `path`, through a hidden file renamed into place so
    /// that a reader never sees half a report (and a symlink at `path` is replaced, not
    /// followed).
    pub fn write_json(&self, path: &std::path::Path) -> Result<(), crate::Error> {
        let fail = |source| crate::Error::Json {
            path: path.to_path_buf(),
            source,
        };
        let text = serde_json::to_vec_pretty(self).map_err(|e| fail(std::io::Error::other(e)))?;
        webscope_sys::write_file(path, &text).map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::text::format_us;
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
        let e = Errors::of(&[0, 0, 2, 0, 0, 0, 0, 0, 1], 4);
        assert_eq!(e.total, 3, "bad statuses are responses, not failures");
        assert_eq!(e.describe(), "reset 2, RST_STREAM 1");
        assert_eq!(Errors::default().describe(), "none");
    }
}
