//! What failed the first (lowest-rate) probe that failed, so that the page explains the
//! condition that failed and not another: refusals (429/503, connections reset) when the
//! objective failed on errors or goodput while its latency held; other errors; a latency
//! condition failed by one size class's own service time (a heavy-tailed mix, whose largest
//! files take longer than the limit at any rate); or latency, which the operational laws
//! explain (`law`).
//!
//! Not for: judging probes (`webscope_lab::objective`) nor the verdict on a run
//! (`webscope_bottleneck`), whose figures it quotes.

use webscope_load::slo::{Condition, Metric, Slo, Verdict};
use webscope_load::{format_us, Latency};
use webscope_report::human::pct_brief;

use crate::point::Point;
use webscope_bottleneck::Refused;
use webscope_lab::objective::Outcome;
use webscope_lab::step::Judged;

/// What failed the lowest-rate probe that failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failed {
    /// The server refused load: refusals were most of the errors that failed the objective,
    /// while every latency condition held.
    Refused {
        rate: f64,
        /// "503 Service Unavailable on 37 % of requests".
        quoted: String,
        /// The latency conditions that held, with their figures: "p99<=5ms: 3.10ms, passed".
        held: Vec<String>,
    },
    /// Errors that are not refusals failed it, latency holding.
    Errors {
        rate: f64,
        /// The largest cause, in [`webscope_record::health::Health::cause`]'s words.
        cause: String,
    },
    /// A latency condition failed on one size class's own time: the other classes met it.
    ServiceTime(ServiceTime),
    /// A latency condition failed across the classes: the laws' reasoning applies.
    Latency { rate: f64 },
}

/// A latency condition failed by the slowest size classes' own time: requests whose median
/// is beyond the limit, either enough of them to fail the quantile by themselves, or the only
/// classes that failed it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceTime {
    pub rate: f64,
    /// The condition, as written: `p99<=5ms`.
    pub condition: String,
    /// Its quantile's name (`p99`), the share of requests it allows beyond its limit (0.01),
    /// and the limit, µs.
    pub quantile: String,
    pub allowed: f64,
    pub limit_us: f64,
    /// The condition itself, to write it for one class.
    pub on: Condition,
    /// The classes whose median is beyond the limit.
    pub slow: Vec<SlowClass>,
    /// At least this share of all requests was beyond the limit by the slow classes' own
    /// time (their share times the share of their requests beyond it).
    pub beyond: f64,
    /// The other classes, with their figure at the quantile (at most), µs.
    pub others: Vec<(String, f64)>,
}

/// One class whose requests take longer than a latency limit at their median.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowClass {
    pub name: String,
    /// Its share of the search's requests (every probe's: the mix's, not one probe's draw).
    pub share: f64,
    pub mean_bytes: f64,
    pub p50_us: f64,
    pub at_quantile_us: f64,
}

impl Failed {
    /// For the lowest-rate probe that failed; None when none did.
    pub fn of(points: &[Point], probes: &[Judged]) -> Option<Failed> {
        let (point, judged) = points
            .iter()
            .zip(probes)
            .filter(|(_, j)| j.outcome == Outcome::Fail)
            .min_by(|a, b| a.0.x.total_cmp(&b.0.x))?;
        let rate = point.x;
        let failed = conditions(judged, Verdict::Fail);
        let latency = |c: &&(Condition, String)| matches!(c.0.metric, Metric::Latency { .. });
        if let Some((condition, text)) = failed.iter().find(latency) {
            // A condition on one class already judges that class on its own terms.
            let whole = condition.class.is_none();
            return Some(
                whole
                    .then(|| service_time(point, points, condition, text))
                    .flatten()
                    .map_or(Failed::Latency { rate }, Failed::ServiceTime),
            );
        }
        let on_errors = failed
            .iter()
            .any(|(c, _)| matches!(c.metric, Metric::Errors | Metric::Goodput));
        if !on_errors {
            return Some(Failed::Latency { rate });
        }
        Some(match Refused::of(&point.health).filter(Refused::binds) {
            Some(r) => Failed::Refused {
                rate,
                quoted: r.quoted(),
                held: judged
                    .checks
                    .iter()
                    .filter(|c| c.verdict == Verdict::Pass)
                    .filter(|c| {
                        parse(&c.condition)
                            .is_some_and(|p| matches!(p.metric, Metric::Latency { .. }))
                    })
                    .map(|c| c.line.clone())
                    .collect(),
            },
            None => Failed::Errors {
                rate,
                cause: point.health.cause(),
            },
        })
    }

    /// Whether the laws' latency reasoning (queueing at the CPU, 1/D_max) explains it.
    pub fn is_latency(&self) -> bool {
        matches!(self, Failed::Latency { .. })
    }

    /// The page's sentence for it; None for latency, which the laws explain.
    pub fn sentence(&self) -> Option<String> {
        match self {
            Failed::Refused { rate, quoted, held } => Some(format!(
                "At {rate:.0} req/s, the first rate that failed, the server refused load: {quoted}{}. A rate or connection limit bounds the capacity (nginx's limit_req or limit_conn, a proxy's queue, load shedding), not a resource filling up: the capacity found is where that limit sits, and the CPU's bound below says what the server could carry without it.",
                if held.is_empty() {
                    String::new()
                } else {
                    format!(", while its latency held ({})", held.join("; "))
                }
            )),
            Failed::Errors { rate, cause } => Some(format!(
                "At {rate:.0} req/s, the first rate that failed, the objective failed on errors, not on latency: {cause}."
            )),
            Failed::ServiceTime(s) => Some(s.sentence()),
            Failed::Latency { .. } => None,
        }
    }
}

impl ServiceTime {
    /// Whether the slow classes alone put more requests beyond the limit than it allows.
    pub fn forced(&self) -> bool {
        // 1 − 0.99 is 0.010000000000000009 in floating point.
        self.beyond >= self.allowed - 1e-9
    }

    pub fn sentence(&self) -> String {
        let slow: Vec<String> = self
            .slow
            .iter()
            .map(|c| {
                format!(
                    "{} ({} of the search's requests, {} on average; {} at the median, {} at least at {})",
                    c.name,
                    pct_brief(c.share),
                    webscope_report::human::bytes(c.mean_bytes),
                    format_us(c.p50_us),
                    format_us(c.at_quantile_us),
                    self.quantile
                )
            })
            .collect();
        let why = if self.forced() {
            format!(
                "so at least {} of the requests exceed {} by their own time, as many as or more than the {} % a {} allows: the condition fails at any rate with this mix, and the search's answer follows how many large files a probe happens to draw (and so the probes' length), not the server",
                pct_brief(self.beyond),
                format_us(self.limit_us),
                trimmed(100.0 * self.allowed),
                self.quantile
            )
        } else {
            format!(
                "while every other size class met it ({}): the large responses' transfer, not the load, fails it",
                self.others_said()
            )
        };
        let fast: Vec<String> = self
            .others
            .iter()
            .map(|(name, _)| {
                Condition {
                    class: Some(name.clone()),
                    ..self.on.clone()
                }
                .to_string()
            })
            .collect();
        let own: Vec<String> = self
            .slow
            .iter()
            .map(|c| {
                format!(
                    "its own limit for {} (its {} was {} at this rate)",
                    c.name,
                    self.quantile,
                    format_us(c.at_quantile_us)
                )
            })
            .collect();
        format!(
            "At {:.0} req/s, the first rate that failed, {} failed on the largest responses' own time: {} took longer than the limit, {why}. An objective per size class judges each on its own terms: {} for the others ({} here), and {}.",
            self.rate,
            self.condition,
            slow.join("; "),
            fast.join(","),
            self.others_said(),
            own.join(", ")
        )
    }

    /// "0-1KB 8.28ms, 1-10KB 3.82ms": the other classes at the quantile.
    fn others_said(&self) -> String {
        let said: Vec<String> = self
            .others
            .iter()
            .map(|(name, us)| format!("{name} {}", format_us(*us)))
            .collect();
        format!("{} {}", self.quantile, said.join(", "))
    }
}

/// The probe's conditions with `verdict`, parsed, with their text.
fn conditions(judged: &Judged, verdict: Verdict) -> Vec<(Condition, String)> {
    judged
        .checks
        .iter()
        .filter(|c| c.verdict == verdict)
        .filter_map(|c| Some((parse(&c.condition)?, c.condition.clone())))
        .collect()
}

fn parse(text: &str) -> Option<Condition> {
    Slo::parse(text).ok()?.conditions.into_iter().next()
}

/// The size classes whose median is beyond a latency `condition`'s limit, when their own
/// time fails it: enough of their requests are beyond the limit to fail the quantile by
/// themselves, or the other classes all met it. None for a single class, when no class or
/// every class is that slow, or when the load fails the others too and the slow ones alone
/// would not fail it.
fn service_time(
    point: &Point,
    points: &[Point],
    condition: &Condition,
    text: &str,
) -> Option<ServiceTime> {
    let Metric::Latency { quantile } = condition.metric else {
        return None;
    };
    let limit = condition.limit;
    let classes: Vec<&webscope_load::ClassReport> = point
        .run
        .load
        .classes
        .iter()
        .filter(|c| c.figures.requests > 0)
        .collect();
    if classes.len() < 2 {
        return None;
    }
    // The mix's shares from every probe's requests, not from one probe's few large ones.
    let requests = |name: Option<&str>| -> u64 {
        points
            .iter()
            .flat_map(|p| &p.run.load.classes)
            .filter(|c| name.is_none_or(|n| c.name == n))
            .map(|c| c.figures.requests)
            .sum()
    };
    let all = requests(None).max(1) as f64;
    let (slow, others): (Vec<&webscope_load::ClassReport>, Vec<_>) = classes
        .into_iter()
        .partition(|c| c.figures.latency_us.p50 > limit);
    if slow.is_empty() || others.is_empty() {
        return None;
    }
    let share = |c: &webscope_load::ClassReport| requests(Some(&c.name)) as f64 / all;
    let beyond = slow
        .iter()
        .map(|c| share(c) * beyond_at_least(&c.figures.latency_us, limit))
        .sum::<f64>();
    let others: Vec<(String, f64)> = others
        .iter()
        .map(|c| (c.name.clone(), at_most(&c.figures.latency_us, quantile)))
        .collect();
    let allowed = 1.0 - quantile;
    if beyond < allowed && others.iter().any(|(_, us)| *us > limit) {
        return None;
    }
    Some(ServiceTime {
        rate: point.x,
        condition: text.to_string(),
        quantile: webscope_load::slo::quantile_name(quantile),
        allowed,
        limit_us: limit,
        on: condition.clone(),
        slow: slow
            .iter()
            .map(|c| SlowClass {
                name: c.name.clone(),
                share: share(c),
                mean_bytes: c.figures.bytes as f64 / c.figures.requests as f64,
                p50_us: c.figures.latency_us.p50,
                at_quantile_us: at_least(&c.figures.latency_us, quantile),
            })
            .collect(),
        beyond,
        others,
    })
}

/// The least share of a class's requests beyond `limit` its percentiles prove: 1 when its
/// fastest was beyond it, 0.5 when its median was, and so on.
fn beyond_at_least(l: &Latency, limit: f64) -> f64 {
    [
        (0.0, l.min),
        (0.5, l.p50),
        (0.9, l.p90),
        (0.99, l.p99),
        (0.999, l.p999),
    ]
    .iter()
    .find(|(_, us)| *us > limit)
    .map_or(0.0, |(at, _)| 1.0 - at)
}

/// A report's percentiles: the levels it carries.
fn levels(l: &Latency) -> [(f64, f64); 5] {
    [
        (0.5, l.p50),
        (0.9, l.p90),
        (0.99, l.p99),
        (0.999, l.p999),
        (1.0, l.max),
    ]
}

/// A figure the latency at `q` is at least: the carried percentile at or below `q`.
fn at_least(l: &Latency, q: f64) -> f64 {
    levels(l)
        .iter()
        .filter(|(at, _)| *at <= q + 1e-12)
        .map(|(_, us)| *us)
        .fold(0.0, f64::max)
}

/// A figure the latency at `q` is at most: the carried percentile at or above `q`.
fn at_most(l: &Latency, q: f64) -> f64 {
    levels(l)
        .iter()
        .find(|(at, _)| *at >= q - 1e-12)
        .map_or(l.max, |(_, us)| *us)
}

/// A per-cent figure without trailing zeros: 99, 99.9, 0.1.
fn trimmed(pct: f64) -> String {
    let text = format!("{pct:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::point::test_point;
    use serde_json::json;

    /// A failing probe at `rate` whose conditions said `checks` ((condition, passed)).
    fn judged(rate: f64, checks: &[(&str, bool)]) -> Judged {
        serde_json::from_value(json!({
            "number": 1, "rate": rate, "outcome": "fail", "reason": "", "not_sent_share": 0.0,
            "checks": checks.iter().map(|(c, ok)| json!({
                "condition": c, "measured": 1.0, "verdict": if *ok { "pass" } else { "fail" },
                "line": format!("{c}: {}", if *ok { "passed" } else { "FAILED" }),
            })).collect::<Vec<_>>(),
            "bound": "latency", "bound_reading": "", "warmup_s": 0.2,
            "cooldown": {"waited_s": 0.0, "open_before": 0, "open_after": 0, "time_wait": 0, "settled": true}
        }))
        .unwrap()
    }

    /// A 10-s probe of a heavy-tailed mix at 100 req/s: 1 000 requests, `large` of them
    /// over-1MB files taking `large_ms` at the median (half of it at least, ten times at
    /// their p99), the rest small ones at `small_p99_ms` at their p99.
    fn heavy_tailed(large: u64, large_ms: f64, small_p99_ms: f64) -> Point {
        let mut p = test_point(100.0, 100.0, 0.05, Some(0.04));
        let class = |name: &str, requests: u64, bytes: u64, p50_ms: f64, p99_ms: f64| {
            json!({"name": name, "requests": requests, "bytes": bytes * requests,
                "latency_us": {"min": p50_ms * 5e2, "p50": p50_ms * 1e3, "p90": p99_ms * 5e2,
                    "p99": p99_ms * 1e3, "p999": p99_ms * 2e3, "max": p99_ms * 3e3,
                    "count": requests}})
        };
        let small = (1000 - large) / 2;
        p.run.load = webscope_record::load_json(json!({
            "duration_s": 10.0, "requests": 1000, "status_codes": {"200": 1000},
            "classes": [
                class("0-1KB", small, 600, 0.3, small_p99_ms),
                class("1-10KB", 1000 - large - small, 5_000, 0.4, small_p99_ms),
                class("over-1MB", large, 12 << 20, large_ms, 10.0 * large_ms),
            ],
        }));
        p
    }

    fn service(point: Point) -> Option<ServiceTime> {
        let j = judged(100.0, &[("p99<=5ms", false), ("errors<=0.1%", true)]);
        match Failed::of(&[point], &[j])? {
            Failed::ServiceTime(s) => Some(s),
            _ => None,
        }
    }

    /// #33: 2 % of the requests are files of 1-69 MB: p99 fails at any rate from their
    /// transfer time alone, and the page says so.
    #[test]
    fn a_p99_failed_by_the_largest_files_own_time_says_so_and_offers_objectives_per_class() {
        // 2 % of the requests, each beyond 5 ms: the p99 cannot hold, whatever the rest.
        let s = service(heavy_tailed(20, 60.0, 9.0)).expect("the large class's own time");
        assert!(s.forced(), "{s:?}");
        assert_eq!(s.slow.len(), 1);
        assert_eq!(s.slow[0].name, "over-1MB");
        assert!((s.slow[0].share - 0.02).abs() < 1e-9, "{s:?}");
        let said = s.sentence();
        for words in [
            "At 100 req/s, the first rate that failed, p99<=5ms failed on the largest responses' own time",
            "over-1MB (2.0 % of the search's requests, 12 MiB on average; 60.00ms at the median",
            "at least 2.0 % of the requests exceed 5.00ms by their own time, as many as or more than the 1 % a p99 allows",
            "p99[0-1KB]<=5ms,p99[1-10KB]<=5ms for the others (p99 0-1KB 9.00ms, 1-10KB 9.00ms here)",
            "its own limit for over-1MB (its p99 was 600.00ms at this rate)",
        ] {
            assert!(said.contains(words), "{words:?} in {said}");
        }
        // The objective offered is one `--slo` takes.
        let offered = said
            .split("judges each on its own terms: ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .expect("an objective per class");
        let parsed = Slo::parse(offered).expect("an objective --slo takes");
        assert_eq!(parsed.conditions.len(), 2, "{offered}");
        assert_eq!(parsed.conditions[0].class.as_deref(), Some("0-1KB"));
        // A failed condition on one class is that class's latency, judged on its own terms.
        let j = judged(100.0, &[("p99[over-1MB]<=5ms", false)]);
        assert_eq!(
            Failed::of(&[heavy_tailed(20, 60.0, 9.0)], &[j]),
            Some(Failed::Latency { rate: 100.0 })
        );
        // 0.5 % of the requests: not enough to fail the p99 alone, but the only class that
        // failed it.
        let s = service(heavy_tailed(5, 60.0, 2.0)).expect("the only class that failed");
        assert!(!s.forced(), "{s:?}");
        assert!(
            s.sentence()
                .contains("while every other size class met it (p99 0-1KB 2.00ms"),
            "{}",
            s.sentence()
        );
        // The same few large files with the small requests late too: the load fails it.
        let queued = heavy_tailed(5, 60.0, 9.0);
        let j = judged(100.0, &[("p99<=5ms", false)]);
        assert_eq!(
            Failed::of(&[queued], &[j]),
            Some(Failed::Latency { rate: 100.0 })
        );
    }

    #[test]
    fn errors_are_said_as_errors_and_refusals_as_refusals() {
        let run = |codes: serde_json::Value| {
            let mut p = test_point(500.0, 400.0, 0.05, Some(0.04));
            p.run.load =
                webscope_record::load_json(json!({"duration_s": 1.0, "status_codes": codes}));
            p.health = webscope_record::health::Health::of(
                &p.run.load,
                &webscope_record::health::Expect::parse("2xx").unwrap(),
                1.0,
            );
            p
        };
        let j = judged(500.0, &[("p99<=5ms", true), ("errors<=0.1%", false)]);
        let refused = Failed::of(
            &[run(json!({"200": 400, "503": 100}))],
            std::slice::from_ref(&j),
        );
        let said = refused.as_ref().and_then(Failed::sentence).unwrap();
        assert!(
            said.contains("the server refused load: 503 Service Unavailable on 20 % of requests, while its latency held (p99<=5ms: passed)"),
            "{said}"
        );
        let missing = Failed::of(&[run(json!({"200": 400, "404": 100}))], &[j]);
        let said = missing.as_ref().and_then(Failed::sentence).unwrap();
        assert!(
            said.contains("failed on errors, not on latency: 404 Not Found on 20 %"),
            "{said}"
        );
        assert!(!missing.unwrap().is_latency());
    }

    #[test]
    fn a_quantile_between_two_reported_lies_between_their_latencies() {
        let l = Latency {
            p50: 1.0,
            p90: 2.0,
            p99: 3.0,
            p999: 4.0,
            max: 5.0,
            ..Latency::default()
        };
        // p95 lies between p90 and p99.
        assert_eq!((at_least(&l, 0.95), at_most(&l, 0.95)), (2.0, 3.0));
    }
}
