//! What a worker thread records: per class, HdrHistograms of latency, time to first byte and
//! connect time, and counters of requests, bytes and failures by kind.
//!
//! One recorder per thread, owned by that thread's runtime and swapped out whole at each
//! interval: recording is a histogram increment and two additions, with no lock and no
//! allocation, and memory is a few histograms per class whatever the number of requests.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

/// The kinds of failure counted, in report order; `Failure as usize` indexes them. A failure
/// is an exchange that got no response: a complete response, whatever its status, is a
/// response (counted by status); whether its status is an error is the run's expectation's
/// business (`Expect::is_error`, the rule every judge reads in `outcome.rs`), which the
/// recorder applies to its per-class counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The server refused the connection (nothing listens).
    ConnectRefused = 0,
    /// Any other failure to connect (no route, out of ports, ...).
    Connect,
    /// The connection was reset or closed before a response began.
    Reset,
    /// No complete response within the timeout.
    Timeout,
    /// The connection closed before the body announced by Content-Length (or chunking) ended.
    ShortBody,
    /// The response was not HTTP/1.x (or its head was too large to buffer); HTTP/2: the
    /// server's frames broke the protocol (no valid SETTINGS first, a frame that does not
    /// parse), which the client answers with a GOAWAY of its own.
    Parse,
    /// The TLS handshake failed, or a TLS record was bad.
    Tls,
    /// HTTP/2: the server sent GOAWAY (with an error code) before answering the stream.
    GoAway,
    /// HTTP/2: the server reset the stream (RST_STREAM).
    StreamReset,
}

/// Names of the failure kinds, as they appear in reports and JSON.
pub const FAILURES: [&str; 9] = [
    "connect_refused",
    "connect",
    "reset",
    "timeout",
    "short_body",
    "parse_error",
    "tls",
    "goaway",
    "rst_stream",
];

/// A new histogram: nanoseconds, 3 significant digits, sized for 100 ms and growing if a
/// larger value comes.
pub(crate) fn histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 100_000_000, 3).expect("valid histogram bounds");
    h.auto(true);
    h
}

/// Records a duration in nanoseconds (at least 1).
#[inline]
pub(crate) fn record(h: &mut Histogram<u64>, nanos: u64) {
    // With auto-resize on, recording cannot fail for any u64.
    let _ = h.record(nanos.max(1));
}

/// What one class recorded.
#[derive(Debug, Clone)]
pub(crate) struct ClassStats {
    /// Latency: from the intended send time when a request waited for a connection (open
    /// loop), else from the send (connect included when the request opened one).
    pub latency: Histogram<u64>,
    /// Open loop only: latency from the actual send, what a closed-loop tool would show.
    pub uncorrected: Histogram<u64>,
    /// From the send (or connect start) to the first byte of the response.
    pub ttfb: Histogram<u64>,
    /// Time to establish a connection, for requests that opened one.
    pub connect: Histogram<u64>,
    /// https: time of the TLS handshake, for requests that made one.
    pub handshake: Histogram<u64>,
    /// Requests still unanswered when the run ended (or was stopped): their ages then, from
    /// the time their latency would have counted from. Neither a response nor a failure: the
    /// run ended before either came.
    pub unfinished: Histogram<u64>,
    /// Complete responses (any status).
    pub requests: u64,
    /// Bytes received (heads and bodies).
    pub bytes: u64,
    /// Of `requests`, those the run's expectation calls errors ([`crate::Expect::is_error`]:
    /// outside `--expect-status`, and in a replay not the logged status): classes keep no
    /// statuses of their own, and a service's refusals (503) are read per class.
    pub bad_status: u64,
    /// Exchanges that got no response, by kind.
    pub failures: [u64; FAILURES.len()],
}

impl ClassStats {
    pub(crate) fn new() -> ClassStats {
        ClassStats {
            latency: histogram(),
            uncorrected: histogram(),
            ttfb: histogram(),
            connect: histogram(),
            handshake: histogram(),
            unfinished: histogram(),
            requests: 0,
            bytes: 0,
            bad_status: 0,
            failures: [0; FAILURES.len()],
        }
    }

    /// Adds another class's figures to these.
    pub(crate) fn merge(&mut self, other: &ClassStats) {
        // Both sides auto-resize, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.uncorrected.add(&other.uncorrected);
        let _ = self.ttfb.add(&other.ttfb);
        let _ = self.connect.add(&other.connect);
        let _ = self.handshake.add(&other.handshake);
        let _ = self.unfinished.add(&other.unfinished);
        self.requests += other.requests;
        self.bytes += other.bytes;
        self.bad_status += other.bad_status;
        for (mine, theirs) in self.failures.iter_mut().zip(other.failures) {
            *mine += theirs;
        }
    }

    /// Exchanges that got no response, of every kind.
    pub(crate) fn failed(&self) -> u64 {
        self.failures.iter().sum()
    }
}

/// Highest status code counted one by one (others are counted as 599).
pub(crate) const STATUSES: usize = 600;

/// Everything one thread recorded during one interval.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    /// Per class, in the target's class order.
    pub classes: Vec<ClassStats>,
    /// Responses by status code.
    pub statuses: Vec<u64>,
    /// Connections opened.
    pub connections: u64,
    /// https: handshakes completed, in full and by resuming a session.
    pub tls_full: u64,
    pub tls_resumed: u64,
    /// HTTP/3 with `--0rtt`: resumed handshakes whose early data (the first requests) the
    /// server accepted.
    pub tls_early: u64,
    /// https: why the first failed handshake failed, in words a user can act on.
    pub tls_error: Option<String>,
    /// HTTP/2: why the first connection that failed for a protocol reason failed (a GOAWAY
    /// the server sent, with its code; frames that broke the protocol).
    pub h2_error: Option<String>,
    /// With `Config::samples`: completed requests as (end since start ns, latency ns, class).
    /// Not merged: the coordinator writes them out as they come.
    pub samples: Vec<(u64, u64, u16)>,
    /// A replay: responses whose status differs from the logged one, by (logged, got).
    pub mismatches: BTreeMap<(u16, u16), u64>,
    /// Open loop: sends later than [`LATE_SEND`] after their slot, and the largest delay (ns).
    pub late_sends: u64,
    pub max_send_delay: u64,
    /// `--users`: page views and think times.
    pub users: UserStats,
}

/// What `--users` records besides the requests.
#[derive(Debug, Clone)]
pub(crate) struct UserStats {
    /// Page load: from a page view's first request to its last answer, for page views all
    /// of whose requests were answered (and as the log had them, for logged sessions).
    pub page_load: Histogram<u64>,
    /// Think times as kept: from a page view's end to the next one's start.
    pub think: Histogram<u64>,
    /// Page views ended (answered or not).
    pub views: u64,
    /// Of those, the ones with a request unanswered or answered other than expected.
    pub view_errors: u64,
    /// Sessions begun.
    pub sessions: u64,
}

impl UserStats {
    pub(crate) fn new() -> UserStats {
        UserStats {
            page_load: histogram(),
            think: histogram(),
            views: 0,
            view_errors: 0,
            sessions: 0,
        }
    }

    fn merge(&mut self, other: &UserStats) {
        let _ = self.page_load.add(&other.page_load);
        let _ = self.think.add(&other.think);
        self.views += other.views;
        self.view_errors += other.view_errors;
        self.sessions += other.sessions;
    }
}

/// An open-loop send this long after its slot's time is late: the generator did not keep
/// the schedule (its 1 ms timer sends within half a millisecond of it when it can).
pub const LATE_SEND: std::time::Duration = std::time::Duration::from_millis(1);

impl Recorder {
    pub(crate) fn new(classes: usize) -> Recorder {
        Recorder {
            classes: (0..classes).map(|_| ClassStats::new()).collect(),
            statuses: vec![0; STATUSES],
            connections: 0,
            tls_full: 0,
            tls_resumed: 0,
            tls_early: 0,
            tls_error: None,
            h2_error: None,
            samples: Vec::new(),
            mismatches: BTreeMap::new(),
            late_sends: 0,
            max_send_delay: 0,
            users: UserStats::new(),
        }
    }

    /// Counts an open-loop send made at `now` for the slot of `intended`.
    #[inline]
    pub(crate) fn sent_after(&mut self, now: std::time::Instant, intended: std::time::Instant) {
        let delay = now.saturating_duration_since(intended);
        if delay > LATE_SEND {
            self.late_sends += 1;
        }
        self.max_send_delay = self.max_send_delay.max(delay.as_nanos() as u64);
    }

    pub(crate) fn merge(&mut self, other: &Recorder) {
        for (mine, theirs) in self.classes.iter_mut().zip(&other.classes) {
            mine.merge(theirs);
        }
        for (mine, theirs) in self.statuses.iter_mut().zip(&other.statuses) {
            *mine += theirs;
        }
        self.connections += other.connections;
        self.tls_full += other.tls_full;
        self.tls_resumed += other.tls_resumed;
        self.tls_early += other.tls_early;
        if self.tls_error.is_none() {
            self.tls_error.clone_from(&other.tls_error);
        }
        for (pair, n) in &other.mismatches {
            *self.mismatches.entry(*pair).or_insert(0) += n;
        }
        self.late_sends += other.late_sends;
        self.max_send_delay = self.max_send_delay.max(other.max_send_delay);
        self.users.merge(&other.users);
        if self.h2_error.is_none() {
            self.h2_error.clone_from(&other.h2_error);
        }
    }

    /// All classes merged into one.
    pub(crate) fn total(&self) -> ClassStats {
        let mut total = ClassStats::new();
        for class in &self.classes {
            total.merge(class);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_everything() {
        let mut a = Recorder::new(2);
        let mut b = Recorder::new(2);
        record(&mut a.classes[0].latency, 1_000);
        a.classes[0].requests = 1;
        record(&mut b.classes[0].latency, 5_000_000_000); // beyond the initial 100 ms
        b.classes[0].requests = 1;
        b.classes[1].failures[Failure::Timeout as usize] = 3;
        b.statuses[200] = 1;
        a.merge(&b);
        assert_eq!(a.classes[0].latency.len(), 2);
        assert!(a.classes[0].latency.max() >= 4_990_000_000);
        assert_eq!(a.statuses[200], 1);
        let total = a.total();
        assert_eq!(total.requests, 2);
        assert_eq!(total.failed(), 3);
        assert_eq!(FAILURES[Failure::Parse as usize], "parse_error");
    }
}
