//! Whether a run measured what it claims: goodput (responses with the status the user
//! expects), errors by kind and status beside it, and a run marked invalid when its error
//! share passes the threshold, with the first cause named in words a user can act on.
//!
//! A lab that draws 403s as throughput is worse than no lab: everything the report fits,
//! charts or concludes starts from [`Health::goodput_rps`], and invalid runs are left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The statuses that count as success: ranges of codes, from `2xx,3xx`, `200`, `200-299`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    ranges: Vec<(u16, u16)>,
    text: String,
}

/// The lab's default: any 2xx or 3xx.
pub const DEFAULT_EXPECT: &str = "2xx,3xx";

/// The lab's default error threshold: 1 % of requests.
pub const DEFAULT_MAX_ERROR_PCT: f64 = 1.0;

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

    /// Whether `status` is a success.
    pub fn accepts(&self, status: u16) -> bool {
        self.ranges.iter().any(|&(a, b)| (a..=b).contains(&status))
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// How runs are judged: the statuses expected and the error share that makes a run invalid.
/// Kept in `lab.json` so that a re-rendered report judges the same way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judge {
    /// `--expect-status`, as given.
    #[serde(default = "default_expect")]
    pub expect_status: String,
    /// `--max-error-pct`: a run with a larger share of failed requests is invalid.
    #[serde(default = "default_max_error_pct")]
    pub max_error_pct: f64,
}

fn default_expect() -> String {
    DEFAULT_EXPECT.into()
}

fn default_max_error_pct() -> f64 {
    DEFAULT_MAX_ERROR_PCT
}

impl Default for Judge {
    fn default() -> Judge {
        Judge {
            expect_status: default_expect(),
            max_error_pct: default_max_error_pct(),
        }
    }
}

/// A run's health, from its load report.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// Complete responses, any status.
    pub responses: u64,
    /// Responses with an expected status.
    pub good: u64,
    /// Requests that ended one way or another: responses plus connection-level failures.
    pub attempts: u64,
    /// Responses with an unexpected status, by status, most frequent first.
    pub unexpected: Vec<(u16, u64)>,
    /// Failures that got no response, by kind (`reset`, `timeout` ...), most frequent first.
    pub failures: Vec<(&'static str, u64)>,
    /// Goodput: expected responses per second.
    pub goodput_rps: f64,
    /// All complete responses per second (what goodput is not).
    pub responses_rps: f64,
    /// Share of attempts that failed or got an unexpected status, 0..1.
    pub error_share: f64,
    /// Why the run is invalid, if it is: the first cause, in words a user can act on.
    pub invalid: Option<String>,
}

/// The load report's failure kinds that carry no response, with what they mean.
const FAILURES: [(&str, &str, &str); 9] = [
    (
        "connect_refused",
        "connections refused",
        "the server is down or not listening on that port",
    ),
    (
        "connect",
        "connections failed",
        "the address is unreachable, or the machine ran out of ephemeral ports",
    ),
    (
        "reset",
        "connections reset or closed before a response",
        "the server closes connections (a connection limit, a crash, or TLS on a plain-HTTP port?)",
    ),
    (
        "timeout",
        "requests timed out",
        "the server stalls or is overloaded past the request timeout",
    ),
    (
        "short_body",
        "bodies cut short",
        "the server or a proxy closes connections mid-response",
    ),
    (
        "parse_error",
        "responses that are not HTTP/1.x (or HTTP/2 frames that break the protocol)",
        "is the port speaking TLS or another protocol?",
    ),
    (
        "tls",
        "TLS handshakes that failed",
        "an unknown CA (--cacert), a certificate for another name, or plain HTTP on an https port",
    ),
    (
        "goaway",
        "HTTP/2 streams cut by the server's GOAWAY",
        "the server closes HTTP/2 connections (a request limit per connection, or a restart)",
    ),
    (
        "rst_stream",
        "HTTP/2 streams the server reset",
        "the server refuses streams (more concurrent streams than it allows?)",
    ),
];

impl Health {
    /// Judges the load report `load` (the JSON of `webscope_load::Report`).
    pub fn of(load: &Value, expect: &Expect, max_error_pct: f64) -> Health {
        let count = |v: &Value| v.as_u64().unwrap_or(0);
        let seconds = load["duration_s"].as_f64().unwrap_or(0.0);
        let per_s = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        let mut good = 0;
        let mut responses = 0;
        let mut unexpected = Vec::new();
        if let Some(codes) = load["status_codes"].as_object() {
            for (code, n) in codes {
                let n = count(n);
                responses += n;
                match code.parse::<u16>() {
                    Ok(status) if expect.accepts(status) => good += n,
                    Ok(status) => unexpected.push((status, n)),
                    Err(_) => unexpected.push((0, n)),
                }
            }
        }
        unexpected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut failures: Vec<(&'static str, u64)> = FAILURES
            .iter()
            .map(|(key, _, _)| (*key, count(&load["errors"][*key])))
            .filter(|(_, n)| *n > 0)
            .collect();
        failures.sort_by_key(|f| std::cmp::Reverse(f.1));
        let attempts = responses + failures.iter().map(|f| f.1).sum::<u64>();
        let error_share = if attempts > 0 {
            (attempts - good) as f64 / attempts as f64
        } else {
            0.0
        };
        let mut health = Health {
            responses,
            good,
            attempts,
            unexpected,
            failures,
            goodput_rps: per_s(good),
            responses_rps: per_s(responses),
            error_share,
            invalid: None,
        };
        if attempts == 0 {
            health.invalid =
                Some("no request completed or failed: the run measured nothing".into());
        } else if 100.0 * error_share > max_error_pct {
            health.invalid = Some(health.cause());
        }
        health
    }

    /// The largest cause of failure, as "403 Forbidden on 100 % of requests: the server
    /// cannot read the file set; check its root and permissions".
    pub fn cause(&self) -> String {
        let share = |n: u64| 100.0 * n as f64 / self.attempts.max(1) as f64;
        let status = self.unexpected.first().copied();
        let failure = self.failures.first().copied();
        let by_status = |(code, n): (u16, u64)| {
            format!(
                "{code} {} on {} of requests: {}",
                reason(code),
                pct(share(n)),
                status_advice(code)
            )
        };
        match (status, failure) {
            (Some(s), Some(f)) if f.1 > s.1 => failure_cause(f, share(f.1)),
            (Some(s), _) => by_status(s),
            (None, Some(f)) => failure_cause(f, share(f.1)),
            (None, None) => "no failures".into(),
        }
    }

    /// Errors beside goodput, for a table cell: "403×1200, reset×3" or "-".
    pub fn errors_cell(&self) -> String {
        let mut parts: Vec<String> = self
            .unexpected
            .iter()
            .map(|(code, n)| format!("{code}×{n}"))
            .collect();
        parts.extend(self.failures.iter().map(|(kind, n)| format!("{kind}×{n}")));
        if parts.is_empty() {
            "-".into()
        } else {
            parts.join(", ")
        }
    }

    /// Status code → count of every response, for report.json.
    pub fn unexpected_map(&self) -> BTreeMap<String, u64> {
        self.unexpected
            .iter()
            .map(|(c, n)| (c.to_string(), *n))
            .chain(self.failures.iter().map(|(k, n)| (k.to_string(), *n)))
            .collect()
    }
}

fn failure_cause((kind, _): (&str, u64), share: f64) -> String {
    let (_, what, why) = FAILURES
        .iter()
        .find(|(key, _, _)| *key == kind)
        .copied()
        .unwrap_or((kind, kind, "see the run's errors"));
    format!("{what} on {} of requests: {why}", pct(share))
}

fn pct(share: f64) -> String {
    if share >= 99.95 {
        "100 %".into()
    } else if share >= 10.0 {
        format!("{share:.0} %")
    } else {
        format!("{share:.1} %")
    }
}

/// The reason phrase of the statuses a misconfigured run shows.
pub fn reason(code: u16) -> &'static str {
    match code {
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        0 => "(no status)",
        _ => "",
    }
}

/// What a user should check when most responses have `code`.
pub fn status_advice(code: u16) -> &'static str {
    match code {
        403 => "the server cannot read the file set; check its root and permissions",
        404 => "the files are not where the URLs point; check --base/--target (the file set's directory must be the server's document root)",
        401 => "the server asks for credentials; measure a path it serves openly",
        301 | 302 | 307 | 308 => "the server redirects; point --target at the final location (or --expect-status 3xx)",
        405 | 501 => "the server refuses the method",
        429 | 503 => "the server refuses load (a rate or connection limit, or overload)",
        500..=599 => "the server fails; check its error log",
        _ => "see the run's status codes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(codes: Value, errors: Value) -> Value {
        json!({ "duration_s": 2.0, "status_codes": codes, "errors": errors })
    }

    #[test]
    fn statuses_parse_as_codes_classes_and_ranges() {
        let e = Expect::parse("2xx, 304,400-404").unwrap();
        assert!(e.accepts(200) && e.accepts(299) && e.accepts(304) && e.accepts(403));
        assert!(!e.accepts(301) && !e.accepts(405) && !e.accepts(500));
        for bad in ["", "2xy", "6xx", "99", "404-400", "abc"] {
            let err = Expect::parse(bad).unwrap_err();
            assert!(err.contains("--expect-status"), "{bad}: {err}");
        }
    }

    #[test]
    fn goodput_counts_expected_statuses_only() {
        let h = Health::of(
            &load(json!({"200": 990, "404": 10}), json!({"reset": 0})),
            &Expect::parse(DEFAULT_EXPECT).unwrap(),
            1.0,
        );
        assert_eq!((h.responses, h.good, h.attempts), (1000, 990, 1000));
        assert_eq!(h.goodput_rps, 495.0);
        assert_eq!(h.responses_rps, 500.0);
        assert!((h.error_share - 0.01).abs() < 1e-12);
        assert_eq!(h.invalid, None, "exactly at the threshold is still valid");
        assert_eq!(h.errors_cell(), "404×10");
    }

    #[test]
    fn all_403_is_invalid_and_names_the_cause() {
        let h = Health::of(
            &load(json!({"403": 35000}), json!({})),
            &Expect::parse(DEFAULT_EXPECT).unwrap(),
            1.0,
        );
        assert_eq!(h.goodput_rps, 0.0);
        assert_eq!(
            h.invalid.as_deref(),
            Some("403 Forbidden on 100 % of requests: the server cannot read the file set; check its root and permissions")
        );
    }

    #[test]
    fn connection_failures_count_and_the_larger_cause_wins() {
        let h = Health::of(
            &load(
                json!({"200": 900, "503": 20}),
                json!({"reset": 80, "bad_status": 20}),
            ),
            &Expect::parse(DEFAULT_EXPECT).unwrap(),
            1.0,
        );
        assert_eq!(h.attempts, 1000);
        assert!((h.error_share - 0.1).abs() < 1e-12);
        let why = h.invalid.unwrap();
        assert!(
            why.starts_with("connections reset or closed before a response on 8.0 % of requests"),
            "{why}"
        );
        let refused = Health::of(
            &load(json!({}), json!({"connect_refused": 50})),
            &Expect::parse("200").unwrap(),
            1.0,
        );
        assert!(refused.invalid.unwrap().contains("not listening"));
        let nothing = Health::of(
            &load(json!({}), json!({})),
            &Expect::parse("200").unwrap(),
            1.0,
        );
        assert!(nothing.invalid.unwrap().contains("measured nothing"));
    }

    #[test]
    fn the_threshold_and_expected_statuses_are_the_users() {
        let report = load(json!({"200": 950, "404": 50}), json!({}));
        let strict = Health::of(&report, &Expect::parse("2xx").unwrap(), 1.0);
        assert!(strict
            .invalid
            .unwrap()
            .starts_with("404 Not Found on 5.0 % of requests"));
        let lax = Health::of(&report, &Expect::parse("2xx").unwrap(), 10.0);
        assert_eq!(lax.invalid, None);
        let with_404 = Health::of(&report, &Expect::parse("200,404").unwrap(), 1.0);
        assert_eq!((with_404.good, with_404.invalid), (1000, None));
    }
}
