//! The workload characterization of a log: the figures a load test has to reproduce to be
//! "like this site", with the fits that summarize them and the published invariants beside.
//!
//! What it is for: `webscope characterize` (and the figures `fileset like` and `--replay`
//! report back), the sessions and page views a users' load test draws on ([`sessions`]), and
//! the sessions themselves as scripts it replays ([`scripts`]).
//! What it is not for: judging a site (no bots or geography, no sessions by cookie), or
//! statistics on logs too short to carry them — a figure that cannot be computed from this
//! log is `None`, with the reason in the invariants table where one applies.
//!
//! Which entries count where:
//! - requests, rate, methods, statuses, clients, burstiness: every entry;
//! - references (popularity, distinct URLs, document types): GET and HEAD requests — the
//!   requests a replay sends and a file set answers, one rule for all three
//!   ([`crate::replayed`]) — answered 2xx or 304 ([`is_reference`]), keyed by URL: path and
//!   query, or path alone when the queries are folded ([`Options::fold_query`]);
//! - transfer sizes: 2xx responses with a body; document sizes: each referenced URL's
//!   largest 200 response to a GET ([`document_size`], as `fileset like` sizes its files);
//! - sessions and page views: entries with a readable request, whatever their status.
//!
//! How: a [`Characterizer`] takes the entries one by one as [`crate::stream_logs`] hands
//! them over, and keeps only what is distinct in the log — a row per URL, a count per
//! client, per second, per minute and per hour — plus, up to bounds ([`Bounds`]), the raw
//! values a few figures need: transfer sizes, reference instants, request times. Past a
//! bound each of those turns into a bounded estimator whose error its module states (sizes:
//! the top values and a log-binned histogram; clients and reference instants: a sample
//! chosen by hash; request times: an HDR histogram), and the figure says it is estimated.
//! Under the bounds every figure is exact: the same whether the log was streamed or held.

mod accumulate;
mod bins;
mod burst;
mod clients;
mod coverage;
mod daily;
mod hill;
mod hosts;
pub mod invariants;
mod lognormal;
mod points;
mod popularity;
pub mod scripts;
mod service;
pub mod sessions;
mod sizes;
mod sketch;
mod traffic;
mod urls;
mod visitors;
mod zipf;

use std::time::UNIX_EPOCH;

pub use accumulate::{Bounds, Characterizer, Options};
pub use burst::{Burstiness, IdcPeak, WindowFigure, NEAR_PEAK};
pub use clients::Clients;
pub use coverage::{Coverage, Gap, MinuteCounts, MAX_GAPS};
pub use daily::Visitors;
pub use hill::{HillPoint, TailFit};
pub use hosts::{HostTally, Hosts};
pub use invariants::{Invariant, Verdict};
pub use lognormal::Lognormal;
pub use popularity::{Document, InterReference, Popularity, MAX_DOCUMENTS};
pub use service::RequestTimes;
pub use sizes::SizeFigures;
pub use sketch::BIN_RATIO;
pub use traffic::{DocType, Mix, Series, MAX_SERIES_BINS};
pub use urls::{UrlRow, UrlTable, TOP_URLS};
pub use zipf::ZipfFit;

use crate::line::Entry;
use crate::read::Parsed;
use crate::stream::BadLine;

/// Most per-second bins the burstiness figures use; longer logs get longer bins.
pub const MAX_BINS: u64 = 1 << 22;

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
    /// Entries that came later than the reader's look-back allows after a later one
    /// ([`crate::ReadSummary::out_of_order`]): counted everywhere, but their second may have
    /// been drawn among later ones in the inter-reference times.
    pub out_of_order: u64,
    /// Gzip files whose data stopped being readable (cut short, corrupt): characterized up to
    /// there ([`crate::ReadSummary::cut_short`], said by [`crate::ReadSummary::cut_note`]).
    pub cut_short: Vec<crate::CutShort>,
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
    /// The per-URL lists: total bytes, top URLs by requests and by bytes, 404s by URL.
    pub urls: UrlTable,
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
    /// Visitors as GoAccess counts them: distinct (client, day in the log's zone, user agent).
    pub visitors: Visitors,
    /// Remote and local requests, and requests by domain (Arlitt & Williamson's last two
    /// invariants).
    pub hosts: Hosts,
    /// The logged request times, with a timed format.
    pub request_times: Option<RequestTimes>,
    /// Arlitt & Williamson's invariants beside this log's figures.
    pub invariants: Vec<Invariant>,
    /// Sessions and page views ([`sessions`] defines them).
    pub sessions: sessions::Sessions,
}

/// The size distributions.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Sizes {
    /// Bytes of each successful response with a body (what the network carried).
    pub transfer: SizeFigures,
    /// Whether `transfer` is exact: false when the log had more transfers than
    /// [`Bounds::sizes`] (see [`SizeFigures`] for each figure's error then).
    pub transfer_exact: bool,
    /// Each distinct document's size (its largest 200 response).
    pub files: SizeFigures,
    /// The documents over 1024 bytes, as Arlitt & Williamson fitted them.
    pub files_over_1k: SizeFigures,
}

/// Whether an entry is a reference to a document: a request a replay sends
/// ([`crate::replayed`]: GET or HEAD) answered 2xx or 304. `characterize` counts its distinct
/// URLs among these, and `fileset like` says how many of its URLs these are.
pub fn is_reference(e: &Entry) -> bool {
    crate::replayed(&e.method) && is_reference_status(e.status)
}

/// Whether a response of `status` to a GET or HEAD makes a reference: 2xx or 304.
pub fn is_reference_status(status: u16) -> bool {
    (200..300).contains(&status) || status == 304
}

/// What an entry says of its document's size: the body of a 200 response to a GET (a HEAD's
/// has none, a 206's is a part). A document's size is the largest of them.
pub fn document_size(e: &Entry) -> Option<u64> {
    (e.status == 200 && e.method == "GET").then_some(e.bytes)
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

/// Characterizes parsed logs (entries sorted by time, as [`crate::read_logs`] gives them),
/// keeping query strings: for small logs and tests, as the whole log is in memory already.
pub fn characterize(parsed: &Parsed) -> Characterization {
    characterize_with(parsed, Options::default())
}

/// [`characterize`] with `options`.
pub fn characterize_with(parsed: &Parsed, options: Options) -> Characterization {
    let mut c = Characterizer::new(options);
    parsed.entries.iter().for_each(|e| c.add(e));
    c.finish(&crate::ReadSummary {
        entries: parsed.entries.len() as u64,
        lines: parsed.lines,
        bad_lines: parsed.bad_lines,
        long_lines: parsed.long_lines,
        bad_times: parsed.bad_times,
        blank_lines: parsed.blank_lines,
        repaired_lines: parsed.repaired_lines,
        bad_examples: parsed.bad_examples.clone(),
        cut_short: parsed.cut_short.clone(),
        ..crate::ReadSummary::default()
    })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

#[cfg(test)]
#[path = "stream_tests.rs"]
mod stream_tests;
