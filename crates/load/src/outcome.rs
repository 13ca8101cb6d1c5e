//! One account of a run's outcomes, read by every judge: `load --threshold`, the lab's run
//! health, the capacity probe, the replay judge, `compare` and the text summary.
//!
//! The definitions, each once:
//! - a **response** is a complete response, whatever its status, kept by status;
//! - a **failure** is an exchange that got no response ([`Failure`]: connect, reset, timeout,
//!   short body, parse, TLS, GOAWAY, RST_STREAM);
//! - an **error** is a failure, or a response whose status is outside the expectation
//!   ([`Expect`]; in a replay, a response with the status the log has is expected too: a
//!   logged 404 answered 404 is the site's traffic as it was);
//! - the requests that **ended** are the responses and the failures; the requests **due** in
//!   an open loop are those that ended and those never sent (no connection free in time);
//!   requests still in flight when the run ended are neither;
//! - **error share**: errors over requests that ended; **goodput share**: expected responses
//!   over requests that ended (requests never sent are the generator's, judged apart by the
//!   not-sent share against [`crate::not_sent_limit`]); **not-sent share**: never sent over
//!   due; **late share**: sent more than [`LATE_SEND`](crate::LATE_SEND) after their slot
//!   over those sent.
//!
//! Not for: limits (the objective's, `slo`, and the lab's) nor percentiles (the report's).

use std::collections::BTreeMap;

use crate::recorder::{Failure, FAILURES};
use crate::report::Report;

/// The statuses that count as expected: ranges of codes, from `2xx,3xx`, `200`, `200-299`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    ranges: Vec<(u16, u16)>,
    text: String,
}

/// The default expectation: any 2xx or 3xx (a status of 400 and above is an error, as k6
/// and wrk count them).
pub const DEFAULT_EXPECT: &str = "2xx,3xx";

impl Default for Expect {
    fn default() -> Expect {
        Expect {
            ranges: vec![(200, 399)],
            text: DEFAULT_EXPECT.into(),
        }
    }
}

impl Expect {
    /// Parses a comma-separated list of codes (`200`), classes (`2xx`) and ranges (`200-204`).
    pub fn parse(text: &str) -> Result<Expect, String> {
        let mut ranges = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let code = |s: &str| -> Option<u16> {
                s.parse::<u16>().ok().filter(|c| (100..=599).contains(c))
            };
            let range = if let Some(class) = part.strip_suffix("xx").or(part.strip_suffix("XX")) {
                class
                    .parse::<u16>()
                    .ok()
                    .filter(|c| (1..=5).contains(c))
                    .map(|c| (c * 100, c * 100 + 99))
            } else if let Some((a, b)) = part.split_once('-') {
                code(a.trim()).zip(code(b.trim())).filter(|(a, b)| a <= b)
            } else {
                code(part).map(|c| (c, c))
            };
            ranges.push(range.ok_or_else(|| {
                format!("--expect-status: {part:?} is not a status, class or range (e.g. 2xx,3xx or 200 or 200-204)")
            })?);
        }
        if ranges.is_empty() {
            return Err("--expect-status needs at least one status (e.g. 2xx,3xx)".into());
        }
        Ok(Expect {
            ranges,
            text: text.trim().to_string(),
        })
    }

    /// Whether `status` is expected.
    pub fn accepts(&self, status: u16) -> bool {
        self.ranges.iter().any(|&(a, b)| (a..=b).contains(&status))
    }

    /// Whether a response of `status` to a request whose log had `logged` (a replay's) is an
    /// error: the one rule, the engine's per-class and per-interval counts included. A status
    /// the log had is expected whatever it is; any other must be in the expectation.
    pub fn is_error(&self, status: u16, logged: Option<u16>) -> bool {
        !(self.accepts(status) || logged == Some(status))
    }

    /// Whether this is the default expectation (2xx and 3xx).
    pub fn is_default(&self) -> bool {
        self.ranges == [(200, 399)]
    }
}

/// Stored as written (`"2xx,3xx"`), in a run's config and so in every segment's and pod's:
/// a reader parses it again, and refuses what does not parse with the parser's one line.
impl serde::Serialize for Expect {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for Expect {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Expect, D::Error> {
        let text = String::deserialize(d)?;
        Expect::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Failure {
    /// Every kind, in report order.
    pub const ALL: [Failure; FAILURES.len()] = [
        Failure::ConnectRefused,
        Failure::Connect,
        Failure::Reset,
        Failure::Timeout,
        Failure::ShortBody,
        Failure::Parse,
        Failure::Tls,
        Failure::GoAway,
        Failure::StreamReset,
    ];

    /// Its name in reports and JSON: `connect_refused`, `parse_error` ...
    pub fn key(self) -> &'static str {
        FAILURES[self as usize]
    }

    /// Its name in a summary line: `connect refused`, `RST_STREAM` ...
    pub fn short(self) -> &'static str {
        match self {
            Failure::ConnectRefused => "connect refused",
            Failure::Connect => "connect",
            Failure::Reset => "reset",
            Failure::Timeout => "timeout",
            Failure::ShortBody => "short body",
            Failure::Parse => "parse",
            Failure::Tls => "tls",
            Failure::GoAway => "GOAWAY",
            Failure::StreamReset => "RST_STREAM",
        }
    }

    /// What happened, counted: "connections refused".
    pub fn what(self) -> &'static str {
        match self {
            Failure::ConnectRefused => "connections refused",
            Failure::Connect => "connections failed",
            Failure::Reset => "connections reset or closed before a response",
            Failure::Timeout => "requests timed out",
            Failure::ShortBody => "bodies cut short",
            Failure::Parse => {
                "responses that are not HTTP/1.x (or HTTP/2 frames that break the protocol)"
            }
            Failure::Tls => "TLS handshakes that failed",
            Failure::GoAway => "HTTP/2 streams cut by the server's GOAWAY",
            Failure::StreamReset => "HTTP/2 streams the server reset",
        }
    }

    /// What a user should check when it is the main cause of failure.
    pub fn why(self) -> &'static str {
        match self {
            Failure::ConnectRefused => "the server is down or not listening on that port",
            Failure::Connect => {
                "the address is unreachable, or the machine ran out of ephemeral ports"
            }
            Failure::Reset => "the server closes connections (a connection limit, a crash, or TLS on a plain-HTTP port?)",
            Failure::Timeout => "the server stalls or is overloaded past the request timeout",
            Failure::ShortBody => "the server or a proxy closes connections mid-response",
            Failure::Parse => "is the port speaking TLS or another protocol?",
            Failure::Tls => "an unknown CA (--cacert), a certificate for another name, or plain HTTP on an https port",
            Failure::GoAway => "the server closes HTTP/2 connections (a request limit per connection, or a restart)",
            Failure::StreamReset => {
                "the server refuses streams (more concurrent streams than it allows?)"
            }
        }
    }
}

/// A run's outcomes, counted once from its report ([`Report::outcomes`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcomes {
    /// Complete responses by status.
    pub statuses: BTreeMap<u16, u64>,
    /// Complete responses whose status could not be read back (a report's key that is not
    /// a number): never expected.
    pub unreadable_statuses: u64,
    /// Exchanges that got no response, by kind, the kinds with none left out.
    pub failures: Vec<(Failure, u64)>,
    /// Open loop: slots never sent (no connection free in time before the run ended).
    pub not_sent: u64,
    /// Open loop: sends later than [`LATE_SEND`](crate::LATE_SEND) after their slot; None
    /// when the run was closed-loop (or its report predates the count).
    pub late_sends: Option<u64>,
    /// Requests sent and still unanswered when the run ended.
    pub unfinished: u64,
    /// Whether the run was open-loop.
    pub open_loop: bool,
    /// A replay: the responses whose status differs from the logged one, by (logged, got).
    /// The others had the logged status, which is expected whatever it is.
    pub replay_mismatches: Option<Vec<(u16, u16, u64)>>,
    /// The run's measured length, seconds.
    pub duration_s: f64,
}

impl Report {
    /// The run's outcomes: one account for every judge.
    pub fn outcomes(&self) -> Outcomes {
        let mut statuses = BTreeMap::new();
        let mut unreadable_statuses = 0;
        for (code, n) in &self.status_codes {
            match code.parse::<u16>() {
                Ok(status) => *statuses.entry(status).or_insert(0) += n,
                Err(_) => unreadable_statuses += n,
            }
        }
        let errors = &self.total.errors;
        let mut failures: Vec<(Failure, u64)> = Failure::ALL
            .iter()
            .map(|f| (*f, errors.count(*f)))
            .filter(|(_, n)| *n > 0)
            .collect();
        failures.sort_by_key(|f| std::cmp::Reverse(f.1));
        let open_loop = self.open_loop();
        let late_sends = match (&self.total.run.late_sends, &self.replay) {
            (Some(n), _) => Some(*n),
            (None, Some(replay)) => Some(replay.late_sends),
            (None, None) => None,
        };
        Outcomes {
            statuses,
            unreadable_statuses,
            failures,
            not_sent: self.total.run.not_sent,
            late_sends: late_sends.filter(|_| open_loop),
            unfinished: self.total.unfinished,
            open_loop,
            replay_mismatches: self.replay.as_ref().map(|r| {
                r.status_mismatches
                    .iter()
                    .map(|p| (p.logged, p.got, p.count))
                    .collect()
            }),
            duration_s: self.duration_s,
        }
    }
}

impl Outcomes {
    /// Complete responses, any status.
    pub fn responses(&self) -> u64 {
        self.statuses.values().sum::<u64>() + self.unreadable_statuses
    }

    /// Exchanges that got no response.
    pub fn no_response(&self) -> u64 {
        self.failures.iter().map(|f| f.1).sum()
    }

    /// Requests that ended: responses and failures.
    pub fn ended(&self) -> u64 {
        self.responses() + self.no_response()
    }

    /// Requests due: those that ended and those never sent.
    pub fn due(&self) -> u64 {
        self.ended() + self.not_sent
    }

    /// Responses with a status outside `expect`, by status, most frequent first (then by
    /// status); 0 stands for a status that could not be read back. In a replay, only those
    /// whose status also differs from the log's.
    pub fn unexpected(&self, expect: &Expect) -> Vec<(u16, u64)> {
        let mut by_status: BTreeMap<u16, u64> = BTreeMap::new();
        match &self.replay_mismatches {
            Some(pairs) => {
                for &(_, got, n) in pairs.iter().filter(|p| expect.is_error(p.1, Some(p.0))) {
                    *by_status.entry(got).or_insert(0) += n;
                }
            }
            None => {
                for (&status, &n) in self.statuses.iter().filter(|(s, _)| !expect.accepts(**s)) {
                    by_status.insert(status, n);
                }
            }
        }
        if self.unreadable_statuses > 0 {
            by_status.insert(0, self.unreadable_statuses);
        }
        let mut list: Vec<(u16, u64)> = by_status.into_iter().filter(|p| p.1 > 0).collect();
        list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        list
    }

    /// Responses with an expected status.
    pub fn good(&self, expect: &Expect) -> u64 {
        let bad: u64 = self.unexpected(expect).iter().map(|p| p.1).sum();
        self.responses().saturating_sub(bad)
    }

    /// Errors: failures and unexpected responses.
    pub fn errors(&self, expect: &Expect) -> u64 {
        self.ended() - self.good(expect)
    }

    /// Errors over requests that ended; None when none ended.
    pub fn error_share(&self, expect: &Expect) -> Option<f64> {
        share(self.errors(expect), self.ended())
    }

    /// Expected responses over requests that ended; None when none ended.
    pub fn goodput_share(&self, expect: &Expect) -> Option<f64> {
        share(self.good(expect), self.ended())
    }

    /// Expected responses per second of the run.
    pub fn goodput_rps(&self, expect: &Expect) -> f64 {
        per_second(self.good(expect), self.duration_s)
    }

    /// Open loop: requests never sent over requests due; None in a closed loop.
    pub fn not_sent_share(&self) -> Option<f64> {
        self.open_loop
            .then(|| share(self.not_sent, self.due()))
            .flatten()
    }

    /// Open loop: requests sent late over requests sent; None when not counted.
    pub fn late_share(&self) -> Option<f64> {
        let sent = self.ended() + self.unfinished;
        share(self.late_sends?, sent)
    }
}

fn share(part: u64, of: u64) -> Option<f64> {
    (of > 0).then(|| part as f64 / of as f64)
}

fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests;
