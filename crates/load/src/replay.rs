//! A replay plan (`webscope load --replay LOG`): an access log's requests as open-loop slots,
//! each slot carrying its own request, sent at the logged instant (relative to the log's
//! first second, divided by the speed-up).
//!
//! What it is for: turning the requests a log reader found into the schedule the engines run
//! (the thread-and-segment split of its slots, the distinct requests prebuilt once),
//! and the replay's own figures: the offered requests per interval, the status pairs that
//! differ from the log, what was skipped and why. What it is not: a log parser (the caller
//! hands over [`LoggedRequest`]s, whatever format they came from) nor the engine's loop.
//!
//! Timing: a Common/Combined log has one-second resolution, so the `n` requests logged in one
//! second are spread evenly within it (the `j`-th at `j/n` of the second); a log of a
//! constant-rate run replays at that constant rate. The log's span is from the start of its
//! first second to the end of its last.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// One request as a log recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// When it was logged (one-second resolution in CLF).
    pub time: SystemTime,
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The request target: the path and its query, if any.
    pub target: String,
    /// The status the log gives.
    pub status: u16,
    /// The response body's bytes the log gives.
    pub bytes: u64,
}

/// One distinct request to prebuild: method, target and the Range it asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// Its method.
    pub method: String,
    /// Its path and query.
    pub target: String,
    /// A `Range: bytes=0-{n-1}` field for a logged 206 of `n` bytes.
    pub range: Option<u64>,
}

/// One slot of the replay: when, which request, and the status the log gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    /// Offset from the replay's start, in nanoseconds (already divided by the speed-up).
    pub at_ns: u64,
    /// Index into [`Replay::requests`].
    pub request: u32,
    /// The logged status.
    pub status: u16,
}

/// A log made ready to replay (carried whole in a serialised [`crate::Config`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    /// The distinct requests, prebuilt once each.
    pub requests: Vec<ReplayRequest>,
    /// The slots in time order.
    pub slots: Vec<Slot>,
    /// The log's span divided by the speed-up, nanoseconds (the period of `--loop`).
    pub period_ns: u64,
    /// The speed-up.
    pub speed: f64,
    /// Whether the log repeats until the run's end.
    pub looped: bool,
    /// Requests of a body-carrying method (POST, PUT, PATCH) left out: the log has no body.
    pub skipped_no_body: u64,
    /// Logged 206 responses replayed as a range of their logged length from the start.
    pub ranges: u64,
}

/// Methods whose request carries a body the log does not keep.
const BODY_METHODS: [&str; 3] = ["POST", "PUT", "PATCH"];

impl Replay {
    /// The plan of `logged` (any order; kept stable within a second) at `speed` times the
    /// logged pace. None when no request is left to replay.
    pub fn new(logged: &[LoggedRequest], speed: f64, looped: bool) -> Option<Replay> {
        let mut kept: Vec<&LoggedRequest> = Vec::with_capacity(logged.len());
        let mut skipped_no_body = 0;
        for request in logged {
            if BODY_METHODS.contains(&request.method.as_str()) {
                skipped_no_body += 1;
            } else {
                kept.push(request);
            }
        }
        let second =
            |r: &LoggedRequest| r.time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        kept.sort_by_key(|r| second(r));
        let first = second(kept.first()?);
        let last = second(kept.last()?);
        let mut index: HashMap<ReplayRequest, u32> = HashMap::new();
        let mut requests = Vec::new();
        let mut slots = Vec::with_capacity(kept.len());
        let mut ranges = 0;
        let mut begin = 0;
        while begin < kept.len() {
            let this = second(kept[begin]);
            let end = begin + kept[begin..].partition_point(|r| second(r) == this);
            let n = (end - begin) as f64;
            for (j, r) in kept[begin..end].iter().enumerate() {
                let range = (r.status == 206 && r.bytes > 0).then_some(r.bytes);
                ranges += u64::from(range.is_some());
                let key = ReplayRequest {
                    method: r.method.clone(),
                    target: r.target.clone(),
                    range,
                };
                let request = *index.entry(key.clone()).or_insert_with(|| {
                    requests.push(key);
                    requests.len() as u32 - 1
                });
                let logged_s = (this - first) as f64 + j as f64 / n;
                slots.push(Slot {
                    at_ns: (logged_s * 1e9 / speed) as u64,
                    request,
                    status: r.status,
                });
            }
            begin = end;
        }
        Some(Replay {
            requests,
            slots,
            period_ns: ((last - first + 1) as f64 * 1e9 / speed) as u64,
            speed,
            looped,
            skipped_no_body,
            ranges,
        })
    }

    /// The part of the replay that a run of `length` sends from its start: the slots before
    /// it, over a period of at most `length` (all of it when the log is shorter). The first
    /// slot is at 0, so a window is never empty.
    pub fn window(&self, length: Duration) -> Replay {
        let end = u64::try_from(length.as_nanos()).unwrap_or(u64::MAX).max(1);
        if end >= self.period_ns {
            return self.clone();
        }
        Replay {
            slots: self
                .slots
                .iter()
                .filter(|s| s.at_ns < end)
                .copied()
                .collect(),
            period_ns: end,
            ..self.clone()
        }
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
        self.slots.len() as f64 * 1e9 / self.period_ns.max(1) as f64
    }

    /// The slot times of thread `thread` of `threads` (every segment's threads), in order,
    /// until `end_ns` (slot `i` goes to thread `i % threads`: a split by request that keeps
    /// every request's time).
    fn times(&self, thread: usize, threads: usize, end_ns: u64) -> impl Iterator<Item = u64> + '_ {
        let period = self.period_ns.max(1);
        let loops = if self.looped { end_ns / period + 1 } else { 1 };
        (0..loops).flat_map(move |k| {
            self.slots
                .iter()
                .skip(thread)
                .step_by(threads.max(1))
                .map(move |s| s.at_ns + k * period)
                .take_while(move |at| *at < end_ns)
        })
    }

    /// Requests offered in each interval of `interval_ns` until `end_ns`, by the given
    /// threads among `threads` (one process's share; all of them for a whole run).
    pub fn offered(
        &self,
        here: &[usize],
        threads: usize,
        interval_ns: u64,
        end_ns: u64,
    ) -> Vec<u64> {
        let intervals = end_ns.div_ceil(interval_ns.max(1)) as usize;
        let mut counts = vec![0; intervals];
        for &thread in here {
            for at in self.times(thread, threads, end_ns) {
                counts[(at / interval_ns.max(1)) as usize] += 1;
            }
        }
        counts
    }
}

/// One thread's cursor through the replay: its slots in time order, looping if asked.
#[derive(Debug)]
pub(crate) struct ReplaySchedule {
    replay: std::sync::Arc<Replay>,
    /// First slot index and stride (the thread's index and the run's threads).
    first: usize,
    stride: usize,
    /// Slots per pass for this thread.
    per_pass: usize,
    /// Slots handed out so far (over all passes).
    next: u64,
}

/// The offset of a slot that never comes (a replay run to its end without `--loop`).
const NEVER_NS: u64 = 100 * 365 * 86_400 * 1_000_000_000;

/// The longest replay (the log's span divided by the speed-up): every slot's offset must
/// come before `NEVER_NS`. The reader refuses a longer one (`replay_log::plan`).
pub const MAX_REPLAY: Duration = Duration::from_nanos(NEVER_NS / 2);

impl ReplaySchedule {
    pub(crate) fn new(
        replay: std::sync::Arc<Replay>,
        thread: usize,
        threads: usize,
    ) -> ReplaySchedule {
        let stride = threads.max(1);
        let per_pass = replay.slots.len().saturating_sub(thread).div_ceil(stride);
        ReplaySchedule {
            replay,
            first: thread,
            stride,
            per_pass,
            next: 0,
        }
    }

    /// The next slot: its offset in nanoseconds, its request and logged status.
    pub(crate) fn peek(&self) -> (u64, Option<Slot>) {
        if self.per_pass == 0 {
            return (NEVER_NS, None);
        }
        let pass = self.next / self.per_pass as u64;
        if pass > 0 && !self.replay.looped {
            return (NEVER_NS, None);
        }
        let within = (self.next % self.per_pass as u64) as usize;
        let slot = self.replay.slots[self.first + within * self.stride];
        (slot.at_ns + pass * self.replay.period_ns, Some(slot))
    }

    pub(crate) fn advance(&mut self) {
        self.next += 1;
    }
}

/// What a replay adds to a run's report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// Requests of the log replayed per pass (this segment's share for a segment).
    pub log_requests: u64,
    /// The speed-up.
    pub speed: f64,
    /// The log's span divided by the speed-up, seconds.
    pub span_s: f64,
    /// Whether the log was repeated (`--loop`).
    pub looped: bool,
    /// Requests of a body-carrying method left out (the log has no body), whole log.
    pub skipped_no_body: u64,
    /// Logged 206 responses replayed as ranges, whole log.
    pub ranges: u64,
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
from the file's start (Common/Combined logs do not record the Range asked)";

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
mod tests {
    use super::*;

    fn logged(second: u64, method: &str, target: &str, status: u16, bytes: u64) -> LoggedRequest {
        LoggedRequest {
            time: UNIX_EPOCH + Duration::from_secs(1_700_000_000 + second),
            method: method.into(),
            target: target.into(),
            status,
            bytes,
        }
    }

    #[test]
    fn a_second_is_spread_evenly_and_the_speed_divides_time() {
        // Unsorted, as real logs are: two requests in second 1, four in second 0.
        let log = [
            logged(1, "GET", "/b", 200, 10),
            logged(0, "GET", "/a", 200, 10),
            logged(0, "GET", "/a", 200, 10),
            logged(1, "HEAD", "/b", 200, 0),
            logged(0, "GET", "/a?x=1", 404, 0),
            logged(0, "GET", "/a", 200, 10),
        ];
        let r = Replay::new(&log, 1.0, false).unwrap();
        let times: Vec<u64> = r.slots.iter().map(|s| s.at_ns / 1_000_000).collect();
        assert_eq!(times, [0, 250, 500, 750, 1000, 1500]);
        assert_eq!(r.span(), Duration::from_secs(2));
        assert_eq!(r.requests.len(), 4); // /a, /a?x=1, GET /b, HEAD /b
        assert_eq!(r.slots[2].status, 404);
        let fast = Replay::new(&log, 4.0, false).unwrap();
        assert_eq!(fast.slots[5].at_ns, 375_000_000);
        assert_eq!(fast.span(), Duration::from_millis(500));
        assert!((fast.mean_rate() - 12.0).abs() < 1e-9);
    }

    #[test]
    fn body_methods_are_skipped_and_206_become_ranges() {
        let log = [
            logged(0, "POST", "/form", 200, 5),
            logged(0, "GET", "/big", 206, 1000),
            logged(0, "PUT", "/x", 201, 0),
            logged(0, "GET", "/big", 200, 5000),
        ];
        let r = Replay::new(&log, 1.0, false).unwrap();
        assert_eq!((r.skipped_no_body, r.ranges, r.slots.len()), (2, 1, 2));
        assert_eq!(r.requests[0].range, Some(1000));
        assert_eq!(r.requests[1].range, None);
        assert!(Replay::new(&log[..1], 1.0, false).is_none());
    }

    #[test]
    fn threads_split_by_request_and_loops_repeat_the_period() {
        let log: Vec<LoggedRequest> = (0..10).map(|i| logged(i / 5, "GET", "/", 200, 1)).collect();
        let r = std::sync::Arc::new(Replay::new(&log, 1.0, false).unwrap());
        // Three threads take every third slot; together they are the whole log.
        let mut all: Vec<u64> = Vec::new();
        for t in 0..3 {
            let mut s = ReplaySchedule::new(r.clone(), t, 3);
            while let (at, Some(_)) = s.peek() {
                all.push(at);
                s.advance();
            }
            assert_eq!(s.peek().0, NEVER_NS);
        }
        all.sort();
        let whole: Vec<u64> = r.slots.iter().map(|s| s.at_ns).collect();
        assert_eq!(all, whole);
        // Looped, the second pass comes one span later.
        let looped = std::sync::Arc::new(Replay::new(&log, 2.0, true).unwrap());
        let mut s = ReplaySchedule::new(looped.clone(), 0, 1);
        for _ in 0..10 {
            s.advance();
        }
        assert_eq!(s.peek().0, 1_000_000_000);
        // Offered per 500 ms interval over 2 s at speed 2: 5 per interval, looped.
        assert_eq!(
            looped.offered(&[0, 1], 2, 500_000_000, 2_000_000_000),
            [5, 5, 5, 5]
        );
        assert_eq!(looped.offered(&[1], 2, 500_000_000, 1_000_000_000), [2, 3]);
    }

    #[test]
    fn poisson_times_keep_the_requests_the_count_and_the_span() {
        // A burst: 100 requests logged in one second, then 9 quiet seconds.
        let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let logged: Vec<LoggedRequest> = (0..100)
            .map(|i| LoggedRequest {
                time: t0 + Duration::from_secs(if i < 99 { 0 } else { 9 }),
                method: "GET".into(),
                target: format!("/f{}", i % 7),
                status: 200,
                bytes: 10,
            })
            .collect();
        let replay = Replay::new(&logged, 1.0, false).unwrap();
        let poisson = replay.with_poisson_times(7);
        assert_eq!(poisson.slots.len(), replay.slots.len());
        assert_eq!(poisson.requests, replay.requests);
        assert_eq!(poisson.period_ns, replay.period_ns);
        assert!(poisson.slots.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
        assert!(poisson.slots.iter().all(|s| s.at_ns < poisson.period_ns));
        // The burst is spread: far fewer than 99 of the requests in the first second.
        let first_second = poisson
            .slots
            .iter()
            .filter(|s| s.at_ns < 1_000_000_000)
            .count();
        assert!(first_second < 40, "{first_second}");
        // Four times faster: a quarter of the span, four times the rate, the same slots.
        let fast = replay.sped_up(4.0);
        assert_eq!(fast.period_ns, replay.period_ns / 4);
        assert!((fast.mean_rate() - 4.0 * replay.mean_rate()).abs() < 1e-6);
        assert_eq!(fast.speed, 4.0);
        // The first second of it: the burst's 99 requests, over one second.
        let first = replay.window(Duration::from_secs(1));
        assert_eq!((first.slots.len(), first.period_ns), (99, 1_000_000_000));
        assert_eq!(replay.window(Duration::from_secs(60)), replay);
    }
}
