//! A replay plan (`webscope load --replay LOG`): an access log's requests as open-loop slots,
//! each slot carrying its own request, sent at the logged instant (relative to the log's
//! first second, divided by the speed-up).
//!
//! What it is for: turning the requests a log reader found into the schedule the engines run
//! (the distinct requests prebuilt once, the slots split by client over segments and by
//! request over threads), and the replay's own figures: the offered requests per interval,
//! the status pairs that differ from the log, what was skipped and why. What it is not: a
//! log parser (the caller hands over [`LoggedRequest`]s, or the log's paths for the feed to
//! read with webscope-accesslog) nor the engine's loop.
//!
//! Two forms, one schedule: a plan made in memory ([`Replay::new`]: tests, the lab's runs,
//! whose slots a run's length bounds) carries its slots; a plan of a whole log
//! (`replay_log::plan`) carries only what is distinct (the requests, the span, the counts)
//! and the log's paths, and the run's feed (`feed.rs`, a reader thread) reads the log again
//! as the run goes, a bounded read-ahead ahead of the engines, so that memory does not grow
//! with the log's length.
//!
//! Timing: a Common/Combined log has one-second resolution, so the `n` requests logged in one
//! second are spread evenly within it (the `j`-th at `j/n` of the second); a log of a
//! constant-rate run replays at that constant rate. The log's span is from the start of its
//! first second to the end of its last.

mod feed;
mod spread;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub(crate) use feed::{Feed, FeedPlan, Next, ReplaySchedule};
pub use spread::client_key;
pub(crate) use spread::Interner;
use spread::Spreader;

/// One request as a log recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// When it was logged (one-second resolution in CLF).
    pub time: SystemTime,
    /// The client (its address as logged): `--segment` splits by it.
    pub client: String,
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The request target: the path and its query, if any.
    pub target: String,
    /// The status the log gives.
    pub status: u16,
    /// The response body's bytes the log gives.
    pub bytes: u64,
}

impl LoggedRequest {
    /// Its second since the epoch.
    pub fn second(&self) -> u64 {
        self.time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    /// The distinct request it is sent as; None for a method that is not [`replayed`].
    pub(crate) fn request(&self) -> Option<ReplayRequest> {
        ReplayRequest::as_logged(&self.method, &self.target, self.status, self.bytes)
    }
}

impl ReplayRequest {
    /// The request a logged `method target` answered `status` with `bytes` is sent as (a
    /// replay's and a users run's alike): a logged 206 asks a Range of its logged length, a
    /// logged 304 is conditional; None for a method that is not [`replayed`].
    pub(crate) fn as_logged(
        method: &str,
        target: &str,
        status: u16,
        bytes: u64,
    ) -> Option<ReplayRequest> {
        if !replayed(method) {
            return None;
        }
        Some(ReplayRequest {
            method: method.to_string(),
            target: target.to_string(),
            range: (status == 206 && bytes > 0).then_some(bytes),
            not_modified: status == 304,
        })
    }
}

/// One distinct request to prebuild: method, target, the Range it asks for and whether it
/// is conditional.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// Its method.
    pub method: String,
    /// Its path and query.
    pub target: String,
    /// A `Range: bytes=0-{n-1}` field for a logged 206 of `n` bytes.
    pub range: Option<u64>,
    /// A logged 304: sent with `If-Modified-Since` (see `Target::replay`).
    #[serde(default)]
    pub not_modified: bool,
}

/// One slot of the replay: when, which request, the status the log gave, and its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    /// Offset from the replay's start, in nanoseconds (already divided by the speed-up).
    pub at_ns: u64,
    /// Index into [`Replay::requests`].
    pub request: u32,
    /// The logged status.
    pub status: u16,
    /// The client's key ([`client_key`]): its segment is `client % N`.
    #[serde(default)]
    pub client: u32,
}

/// Where a plan of a whole log reads its slots from during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSource {
    /// The logs, as given.
    pub paths: Vec<PathBuf>,
    /// Their format's name (`--log-format`), None to detect it per line.
    pub format: Option<String>,
    /// The log's first second (Unix time): offset 0 of the replay.
    pub first_s: u64,
}

/// A log made ready to replay (carried whole in a serialised [`crate::Config`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    /// The distinct requests, prebuilt once each.
    pub requests: Vec<ReplayRequest>,
    /// The slots in time order; empty when they are read from `log` as the run goes.
    pub slots: Vec<Slot>,
    /// The log's span divided by the speed-up, nanoseconds (the period of `--loop`).
    pub period_ns: u64,
    /// The speed-up.
    pub speed: f64,
    /// Whether the log repeats until the run's end.
    pub looped: bool,
    /// Requests of a method other than GET and HEAD left out (see [`replayed`]); reports
    /// written before the rule covered every method call it `skipped_no_body`.
    #[serde(alias = "skipped_no_body")]
    pub skipped_method: u64,
    /// Logged 206 responses replayed as a range of their logged length from the start.
    pub ranges: u64,
    /// Logged 304 responses replayed as conditional requests.
    #[serde(default)]
    pub conditional: u64,
    /// Slots in one pass of the log (`slots.len()` in memory).
    #[serde(default)]
    pub per_pass: u64,
    /// A whole log's plan: the log the feed reads the slots from.
    #[serde(default)]
    pub log: Option<LogSource>,
}

/// Whether a logged request of `method` is sent again: GET and HEAD only. A log keeps no
/// request body (POST, PUT, PATCH), a file set answers GET and HEAD alone (`fileset like`
/// counts the same requests), and a replay must change nothing on its target (a logged DELETE
/// sent to a real site would delete).
///
/// The rule itself is the access-log crate's ([`webscope_accesslog::replayed`]), so that
/// `characterize` counts its references among the same requests.
pub fn replayed(method: &str) -> bool {
    webscope_accesslog::replayed(method)
}

impl Replay {
    /// The plan of `logged` (any order; kept stable within a second) at `speed` times the
    /// logged pace, slots in memory. None when no request is left to replay.
    pub fn new(logged: &[LoggedRequest], speed: f64, looped: bool) -> Option<Replay> {
        let kept = logged.iter().filter(|r| r.request().is_some());
        let first = kept.clone().map(LoggedRequest::second).min()?;
        let last = kept.map(LoggedRequest::second).max()?;
        Replay::from_origin(logged, first, last - first + 1, speed, looped)
    }

    /// As [`Replay::new`], offsets counted from second `origin_s` and a span of `span_s`
    /// seconds whatever the first and last requests' (the lab's windows of a log). Requests
    /// before the origin are sent at it.
    pub fn from_origin(
        logged: &[LoggedRequest],
        origin_s: u64,
        span_s: u64,
        speed: f64,
        looped: bool,
    ) -> Option<Replay> {
        let mut kept: Vec<(&LoggedRequest, ReplayRequest)> = Vec::with_capacity(logged.len());
        let mut skipped_method = 0;
        for r in logged {
            match r.request() {
                Some(request) => kept.push((r, request)),
                None => skipped_method += 1,
            }
        }
        if kept.is_empty() {
            return None;
        }
        kept.sort_by_key(|(r, _)| r.second());
        let mut interner = Interner::default();
        let mut spreader = Spreader::new(origin_s, speed);
        let mut slots = Vec::with_capacity(kept.len());
        let (mut ranges, mut conditional) = (0, 0);
        for (r, request) in kept {
            ranges += u64::from(request.range.is_some());
            conditional += u64::from(request.not_modified);
            let index = interner.intern(request);
            let client = client_key(&r.client);
            spreader.push(r.second(), index, r.status, client, &mut |s| slots.push(s));
        }
        spreader.finish(&mut |s| slots.push(s));
        Some(Replay {
            requests: interner.into_requests(),
            per_pass: slots.len() as u64,
            slots,
            period_ns: (span_s.max(1) as f64 * 1e9 / speed) as u64,
            speed,
            looped,
            skipped_method,
            ranges,
            conditional,
            log: None,
        })
    }

    /// The same replay `k` times faster (a speed-up of `speed × k`).
    pub fn sped_up(&self, k: f64) -> Replay {
        let k = if k.is_finite() && k > 0.0 { k } else { 1.0 };
        Replay {
            slots: self
                .slots
                .iter()
                .map(|s| Slot {
                    at_ns: (s.at_ns as f64 / k) as u64,
                    ..*s
                })
                .collect(),
            period_ns: ((self.period_ns as f64 / k) as u64).max(1),
            speed: self.speed * k,
            ..self.clone()
        }
    }

    /// The same requests in the same order over the same span, sent as a Poisson process at
    /// the log's mean rate instead of at the logged instants: the log's mix and rate without
    /// its burstiness, to set beside the replay (the lab's replay experiment). Gaps are drawn
    /// with `seed`; a slot that would fall past the span wraps into it, so that every
    /// request is sent once per pass.
    pub fn with_poisson_times(&self, seed: u64) -> Replay {
        let mut rng = webscope_workload::Rng::new(seed);
        let period = self.period_ns.max(1);
        let gap_ns = period as f64 / self.slots.len().max(1) as f64;
        let mut at = 0.0;
        let mut slots: Vec<Slot> = self
            .slots
            .iter()
            .map(|s| {
                at += gap_ns * rng.exponential();
                Slot {
                    at_ns: (at as u64) % period,
                    ..*s
                }
            })
            .collect();
        slots.sort_by_key(|s| s.at_ns);
        Replay {
            slots,
            ..self.clone()
        }
    }

    /// The log's span divided by the speed-up: how long a replay without `--duration` runs.
    pub fn span(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// The mean offered rate, requests per second.
    pub fn mean_rate(&self) -> f64 {
        self.per_pass as f64 * 1e9 / self.period_ns.max(1) as f64
    }
}

/// The offset of a slot that never comes (a replay run to its end without `--loop`).
pub(crate) const NEVER_NS: u64 = 100 * 365 * 86_400 * 1_000_000_000;

/// The longest replay (the log's span divided by the speed-up): every slot's offset must
/// come before `NEVER_NS`. The reader refuses a longer one (`replay_log::plan`).
pub const MAX_REPLAY: Duration = Duration::from_nanos(NEVER_NS / 2);

/// What a replay adds to a run's report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// Requests of the log replayed per pass (the whole log's, every segment's alike).
    pub log_requests: u64,
    /// The speed-up.
    pub speed: f64,
    /// The log's span divided by the speed-up, seconds.
    pub span_s: f64,
    /// Whether the log was repeated (`--loop`).
    pub looped: bool,
    /// Requests of a method other than GET and HEAD left out (see [`replayed`]), whole log.
    #[serde(alias = "skipped_no_body")]
    pub skipped_method: u64,
    /// Logged 206 responses replayed as ranges, whole log.
    pub ranges: u64,
    /// Logged 304 responses replayed as conditional requests, whole log.
    #[serde(default)]
    pub conditional: u64,
    /// Why the feed stopped reading the log before the run's end (a file gone or unreadable
    /// during the run): the slots after it were not offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_error: Option<String>,
    /// Responses whose status differs from the logged one, by pair, most frequent first.
    pub status_mismatches: Vec<StatusPair>,
    /// Sends more than 1 ms after their slot's time (the generator or busy connections
    /// held them), and the largest delay in microseconds.
    pub late_sends: u64,
    /// The largest send delay after a slot's time, microseconds.
    pub max_send_delay_us: f64,
    /// How the timing was made, in words (for the summary).
    pub note: String,
}

/// A logged status and the one the server gave, and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusPair {
    /// The status in the log.
    pub logged: u16,
    /// The status the server answered.
    pub got: u16,
    /// Responses with this pair.
    pub count: u64,
}

/// The words the report says about the timing and the ranges.
pub(crate) const NOTE: &str = "the log's one-second resolution: the requests of each logged \
second are spread evenly within it; a logged 206 is replayed as a Range of its logged length \
from the file's start (Common/Combined logs do not record the Range asked); a logged 304 is \
sent with If-Modified-Since the time the requests were built, which is after the files were \
made and not after any send";

/// The pairs of a map, most frequent first (then by logged, got).
pub(crate) fn pairs(map: &std::collections::BTreeMap<(u16, u16), u64>) -> Vec<StatusPair> {
    let mut pairs: Vec<StatusPair> = map
        .iter()
        .map(|(&(logged, got), &count)| StatusPair { logged, got, count })
        .collect();
    pairs.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then((a.logged, a.got).cmp(&(b.logged, b.got)))
    });
    pairs
}

#[cfg(test)]
mod tests;
