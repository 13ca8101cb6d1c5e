//! Whether a run measured what it claims: goodput (responses with the status the user
//! expects), errors by kind and status beside it, and a run marked invalid when its error
//! share passes the threshold, with the first cause named in words a user can act on. The
//! figures are the load report's one account ([`webscope_load::Outcomes`]): this module adds
//! the lab's threshold and its words, no definition of its own.
//!
//! A lab that draws 403s as throughput is worse than no lab: everything the report fits,
//! charts or concludes starts from [`Health::goodput_rps`], and invalid runs are left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use webscope_load::{Failure, Report};

pub use webscope_load::{Expect, DEFAULT_EXPECT};

/// The lab's default error threshold: 1 % of requests.
pub const DEFAULT_MAX_ERROR_PCT: f64 = 1.0;

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

impl Judge {
    /// A judge from `--expect-status` and `--max-error-pct`: the statuses must parse, and the
    /// share be a per cent from 0 to 100.
    pub fn new(expect_status: String, max_error_pct: f64) -> anyhow::Result<Judge> {
        Expect::parse(&expect_status).map_err(anyhow::Error::msg)?;
        anyhow::ensure!(
            max_error_pct.is_finite() && (0.0..=100.0).contains(&max_error_pct),
            "--max-error-pct {max_error_pct} is out of range: give a per cent from 0 to 100 (e.g. 1)"
        );
        Ok(Judge {
            expect_status,
            max_error_pct,
        })
    }

    /// The statuses expected, parsed.
    pub fn expect(&self) -> anyhow::Result<Expect> {
        Expect::parse(&self.expect_status).map_err(anyhow::Error::msg)
    }

    /// The health of the run whose report is `load`, judged this way.
    pub fn health(&self, load: &Report) -> anyhow::Result<Health> {
        Ok(Health::of(load, &self.expect()?, self.max_error_pct))
    }
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
    /// Failures that got no response, by kind, most frequent first.
    pub failures: Vec<(Failure, u64)>,
    /// Goodput: expected responses per second.
    pub goodput_rps: f64,
    /// All complete responses per second (what goodput is not).
    pub responses_rps: f64,
    /// Share of attempts that failed or got an unexpected status, 0..1.
    pub error_share: f64,
    /// Why the run is invalid, if it is: the first cause, in words a user can act on.
    pub invalid: Option<String>,
}

impl Health {
    /// Judges the load report `load` on one account of its outcomes ([`webscope_load::Outcomes`]).
    pub fn of(load: &Report, expect: &Expect, max_error_pct: f64) -> Health {
        let outcomes = load.outcomes();
        let good = outcomes.good(expect);
        let attempts = outcomes.ended();
        let mut health = Health {
            responses: outcomes.responses(),
            good,
            attempts,
            unexpected: outcomes.unexpected(expect),
            failures: outcomes.failures.clone(),
            goodput_rps: outcomes.goodput_rps(expect),
            responses_rps: per_second(outcomes.responses(), load.duration_s),
            error_share: outcomes.error_share(expect).unwrap_or(0.0),
            invalid: None,
        };
        if attempts == 0 {
            health.invalid =
                Some("no request completed or failed: the run measured nothing".into());
        } else if 100.0 * health.error_share > max_error_pct {
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
        parts.extend(
            self.failures
                .iter()
                .map(|(kind, n)| format!("{}×{n}", kind.key())),
        );
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
            .chain(self.failures.iter().map(|(k, n)| (k.key().to_string(), *n)))
            .collect()
    }
}

fn failure_cause((kind, _): (Failure, u64), share: f64) -> String {
    format!(
        "{} on {} of requests: {}",
        kind.what(),
        pct(share),
        kind.why()
    )
}

fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

/// A share given in per cent, as a cause says it.
fn pct(percent: f64) -> String {
    webscope_report::human::pct_brief(percent / 100.0)
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
    use serde_json::{json, Value};

    fn load(codes: Value, errors: Value) -> Report {
        serde_json::from_value(
            json!({ "duration_s": 2.0, "status_codes": codes, "errors": errors }),
        )
        .unwrap()
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
