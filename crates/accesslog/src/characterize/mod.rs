//! The workload characterization of a log: the figures a load test has to reproduce to be
//! "like this site", with the fits that summarize them and the published invariants beside.
//!
//! What it is for: `webscope characterize` (and the figures `fileset like` and `--replay`
//! report back). What it is not for: judging a site (no sessions, bots or geography), or
//! statistics on logs too short to carry them — a figure that cannot be computed from this
//! log is `None`, with the reason in the invariants table where one applies.
//!
//! Which entries count where:
//! - requests, rate, methods, statuses, clients, burstiness: every entry;
//! - references (popularity, distinct URLs, document types): entries with a readable request
//!   and a 2xx or 304 status, keyed by path without the query;
//! - transfer sizes: 2xx responses with a body; document sizes: each referenced path's
//!   largest 200 response.

mod burst;
mod clients;
mod coverage;
mod hill;
mod hosts;
pub mod invariants;
mod lognormal;
mod points;
mod popularity;
mod service;
mod sizes;
mod traffic;
mod zipf;

use std::collections::HashMap;
use std::time::UNIX_EPOCH;

pub use burst::{Burstiness, IdcPeak, WindowFigure, NEAR_PEAK};
pub use clients::Clients;
pub use coverage::{Coverage, Gap, MAX_GAPS};
pub use hill::{HillPoint, TailFit};
pub use hosts::{HostTally, Hosts};
pub use invariants::{Invariant, Verdict};
pub use lognormal::Lognormal;
pub use popularity::{Document, InterReference, Popularity, MAX_DOCUMENTS};
pub use service::RequestTimes;
pub use sizes::SizeFigures;
pub use traffic::{DocType, Mix, Series, MAX_SERIES_BINS};
pub use zipf::ZipfFit;

use crate::line::Entry;
use crate::read::Parsed;
use crate::stream::BadLine;

/// Most per-second bins the burstiness figures use; longer logs get longer bins.
const MAX_BINS: u64 = 1 << 22;

/// Everything `webscope characterize` reports about a log.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Characterization {
    /// Entries parsed.
    pub requests: u64,
    /// Lines that did not parse.
    pub bad_lines: u64,
    /// Of them, lines over 64 KiB (only their start was read).
    pub long_lines: u64,
    /// Of them, lines dated before 1990 or more than a day ahead of the clock.
    pub bad_times: u64,
    /// The first few of them.
    pub bad_examples: Vec<BadLine>,
    /// Entries from lines cut short in their last quoted field (a user agent without its
    /// closing quote), accepted as GoAccess accepts them and counted in `requests`.
    pub repaired_lines: u64,
    /// First logged instant, Unix seconds.
    pub first_unix: i64,
    /// Last logged instant, Unix seconds.
    pub last_unix: i64,
    /// last - first + 1, seconds (the log's resolution is one second).
    pub span_s: u64,
    /// Mean requests per second over the span.
    pub mean_rate: f64,
    /// Requests per minute (per whole minutes, a few at a time, when the log spans more
    /// than [`MAX_SERIES_BINS`] of them).
    pub per_minute: Series,
    /// Requests per hour (the same).
    pub per_hour: Series,
    /// Methods, statuses, document types.
    pub mix: Mix,
    /// Popularity of the documents.
    pub popularity: Popularity,
    /// Sizes.
    pub sizes: Sizes,
    /// Whether the log is sampled by the clock or has long gaps: its burstiness figures
    /// then describe that.
    pub coverage: Coverage,
    /// Burstiness of the arrivals.
    pub arrivals: Burstiness,
    /// Base bin of the burstiness figures, seconds (1 unless the log spans weeks).
    pub arrivals_bin_s: u64,
    /// Requests per client.
    pub clients: Clients,
    /// Remote and local requests, and requests by domain (Arlitt & Williamson's last two
    /// invariants).
    pub hosts: Hosts,
    /// The logged request times, with a timed format.
    pub request_times: Option<RequestTimes>,
    /// Arlitt & Williamson's invariants beside this log's figures.
    pub invariants: Vec<Invariant>,
}

/// The size distributions.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Sizes {
    /// Bytes of each successful response with a body (what the network carried).
    pub transfer: SizeFigures,
    /// Each distinct document's size (its largest 200 response).
    pub files: SizeFigures,
    /// The documents over 1024 bytes, as Arlitt & Williamson fitted them.
    pub files_over_1k: SizeFigures,
}

/// Whether an entry is a reference to a document.
pub fn is_reference(e: &Entry) -> bool {
    e.has_request() && ((200..300).contains(&e.status) || e.status == 304)
}

fn unix(e: &Entry) -> i64 {
    match e.time.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(before) => -(before.duration().as_secs() as i64),
    }
}

/// A bad line with its first field (the client, where the line has one) replaced, so that
/// no client address leaves webscope in a report.
fn redacted(bad: &BadLine) -> BadLine {
    let text = match bad.text.split_once(' ') {
        Some((_, rest)) => format!("<client> {rest}"),
        None => bad.text.clone(),
    };
    BadLine {
        text,
        ..bad.clone()
    }
}

/// Characterizes parsed logs (entries sorted by time, as [`crate::read_logs`] gives them).
pub fn characterize(parsed: &Parsed) -> Characterization {
    let entries = &parsed.entries;
    let times: Vec<i64> = entries.iter().map(unix).collect();
    let first = times.first().copied().unwrap_or(0);
    let last = times.last().copied().unwrap_or(0);
    let span_s = (last - first + 1).max(0) as u64;
    let refs: Vec<(&str, i64)> = entries
        .iter()
        .zip(&times)
        .filter(|(e, _)| is_reference(e))
        .map(|(e, &t)| (e.path.as_str(), t))
        .collect();
    let mut file_sizes: HashMap<&str, u64> = HashMap::new();
    for e in entries
        .iter()
        .filter(|e| e.status == 200 && e.has_request())
    {
        let size = file_sizes.entry(e.path.as_str()).or_insert(0);
        *size = (*size).max(e.bytes);
    }
    let sizes = Sizes {
        transfer: SizeFigures::new(
            entries
                .iter()
                .filter(|e| (200..300).contains(&e.status))
                .map(|e| e.bytes),
        ),
        files: SizeFigures::new(file_sizes.values().copied()),
        files_over_1k: SizeFigures::new(file_sizes.values().copied().filter(|&b| b > 1024)),
    };
    let bin = span_s.div_ceil(MAX_BINS).max(1);
    let mut per_bin = vec![0u64; span_s.div_ceil(bin) as usize];
    for &t in &times {
        per_bin[((t - first) as u64 / bin) as usize] += 1;
    }
    let mut c = Characterization {
        requests: entries.len() as u64,
        bad_lines: parsed.bad_lines,
        long_lines: parsed.long_lines,
        bad_times: parsed.bad_times,
        bad_examples: parsed.bad_examples.iter().map(redacted).collect(),
        repaired_lines: parsed.repaired_lines,
        first_unix: first,
        last_unix: last,
        span_s,
        mean_rate: entries.len() as f64 / span_s.max(1) as f64,
        per_minute: Series::new(&times, 60),
        per_hour: Series::new(&times, 3600),
        mix: traffic::mix(entries, is_reference),
        popularity: popularity::popularity(&refs, &file_sizes),
        sizes,
        arrivals: burst::burstiness(&per_bin, bin),
        arrivals_bin_s: bin,
        clients: clients::clients(entries),
        hosts: entries
            .iter()
            .map(|e| e.client.as_str())
            .collect::<HostTally>()
            .finish(),
        request_times: service::request_times(entries),
        coverage: Coverage::default(),
        invariants: Vec::new(),
    };
    c.coverage = coverage::coverage(&c.per_minute, c.span_s);
    c.invariants = invariants::compare(&c);
    c
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
