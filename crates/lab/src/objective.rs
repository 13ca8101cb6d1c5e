//! The objective's judge: whether an open-loop run met the objective (`--slo`), with the
//! generator's health as a condition. One judge for every experiment that asks "does the
//! server meet the objective at this load": the capacity search's probes, the replay
//! experiment's runs and the users experiment's steps, as siblings that read this module and
//! not each other.
//!
//! The figures are the load report's one account of its outcomes
//! ([`webscope_load::Outcomes`], judged on the lab's `--expect-status`); the limit on
//! requests never sent is the load crate's one rule ([`webscope_load::not_sent_limit`]).
//! A run is [`Outcome::Generator`] — a verdict on the generator, never a server fail — when
//! the lab's bottleneck verdict says the generator bound the run (its CPU busy, or waiting for
//! its CPU), or when more requests than that limit were never sent while every condition of
//! the objective held (the server met it on those it got; a server that fell behind fills the
//! run's connections, and its latency, counted from each request's intended send, fails
//! first).
//!
//! Not for: choosing the loads (the search, the replay's speed-ups) nor running them.

mod latency;

use std::path::Path;
use webscope_report::human::pct_brief;

use serde::{Deserialize, Serialize};
use webscope_load::slo::{Check, Measured, Metric, Range, Slo, Verdict};
use webscope_model::stats::{self, Confidence};

use crate::runner::Ctx;
use webscope_bottleneck::evidence::evidence;
use webscope_bottleneck::{self as bottleneck, Bound};
use webscope_record::RunRecord;

/// What the objective said of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Every condition of the objective held.
    Pass,
    /// A condition failed (the server, or the machine, did not keep up).
    Fail,
    /// The generator could not offer the load: a verdict on the generator, not the server.
    Generator,
    /// A figure the objective needs was not measured, or its interval straddles the limit:
    /// no verdict.
    Undecided,
    /// The machine was disturbed while the run ran: no verdict on the server.
    Disturbed,
}

impl Outcome {
    /// How a table cell says it.
    pub fn cell(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "FAIL",
            Outcome::Generator => "generator",
            Outcome::Undecided => "undecided",
            Outcome::Disturbed => "disturbed",
        }
    }
}

/// One condition judged on one run, as `probe.json` and `step.json` keep it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckLine {
    /// As the objective writes it: `p99<=5ms`.
    pub condition: String,
    /// In the condition's unit (µs, or a fraction).
    pub measured: Option<f64>,
    /// Whether the condition was met (undecided when nothing was measured).
    pub verdict: Verdict,
    /// For people: `p99<=5ms: 4.90ms, passed`.
    pub line: String,
}

impl CheckLine {
    fn of(check: &Check) -> CheckLine {
        CheckLine {
            condition: check.condition.to_string(),
            measured: check.measured,
            verdict: check.verdict,
            line: check.line(),
        }
    }
}

/// An open-loop run judged on an objective, with the generator's health as a condition.
pub struct OnObjective {
    /// The run's verdict on the objective.
    pub outcome: Outcome,
    /// Why, in one sentence.
    pub reason: String,
    /// Each condition of the objective, judged.
    pub checks: Vec<CheckLine>,
    /// Requests never sent over requests due ([`webscope_load::Outcomes::not_sent_share`]).
    pub not_sent_share: Option<f64>,
    /// The lab's verdict on what bounds the run.
    pub verdict: bottleneck::Verdict,
}

/// Judges the measured open-loop run `record` (its files in `run_dir`) on `slo`.
pub fn judge_run(
    record: &RunRecord,
    run_dir: &Path,
    ctx: &Ctx<'_>,
    slo: &Slo,
) -> anyhow::Result<OnObjective> {
    let lab = &ctx.options.judge;
    let figures = figures(record, run_dir, slo, &lab.expect()?)?;
    let health = lab.health(&record.load)?;
    // Requests never sent are judged by [`judge`]'s rule, with the objective: when the
    // server's latency fails too, its slowness is what held every connection busy, and the
    // run is the server's fail, not the generator's (which the verdict's missed-rate rule,
    // blind to the objective, would make it).
    let mut seen = evidence(record, &health);
    seen.missed_rate = None;
    let verdict = bottleneck::judge(&seen);
    let limit = webscope_load::not_sent_limit(record.load.duration_s);
    let (outcome, reason, checks) = judge(slo, &figures, limit, verdict.bound, &verdict.reading);
    Ok(OnObjective {
        outcome,
        reason,
        checks: checks.iter().map(CheckLine::of).collect(),
        not_sent_share: figures.not_sent_share,
        verdict,
    })
}

/// The run's figures for the objective, each with its confidence interval where one can be
/// had: the load's own, from the run's whole histogram (its interval log) when there is one,
/// and the server's CPU share.
fn figures(
    record: &RunRecord,
    run_dir: &Path,
    slo: &Slo,
    expect: &webscope_load::Expect,
) -> anyhow::Result<Measured> {
    let mut report = record.load.clone();
    let log = run_dir.join("load.hlog");
    let mut batches = Vec::new();
    if log.exists() {
        let logged = latency::read(&log, None)?;
        report.latency_histogram = logged.as_ref().map(|l| l.whole.clone());
        batches = logged.map(|l| l.intervals).unwrap_or_default();
    }
    let quantiles = slo.quantiles();
    let mut figures = Measured::of_run(&report, slo, expect);
    figures.intervals = intervals(&report, &batches, &quantiles, expect);
    if log.exists() {
        class_figures(&mut figures, slo, &log)?;
    }
    figures.cpu_share = record.server.as_ref().and_then(|s| {
        let cpus = record.env.server_cpus.filter(|c| *c > 0.0)?;
        (s.cpu_s > 0.0).then(|| s.busy_cores / cpus)
    });
    Ok(figures)
}

/// Each class's latency at the percentiles its conditions ask, with its interval, from the
/// class's own histogram in the run's log (a class the log does not have stays unmeasured:
/// its conditions undecided, never passed).
fn class_figures(figures: &mut Measured, slo: &Slo, log: &Path) -> anyhow::Result<()> {
    figures.class_latency_us.clear();
    // Each class's histogram read from the log once, whatever number of percentiles ask it.
    let mut read: std::collections::HashMap<String, Option<latency::Logged>> =
        std::collections::HashMap::new();
    for (class, q) in slo.class_quantiles() {
        if !read.contains_key(&class) {
            let logged = latency::read(log, Some(&webscope_load::tag_of(&class)))?;
            read.insert(class.clone(), logged);
        }
        let Some(logged) = read.get(&class).and_then(Option::as_ref) else {
            continue;
        };
        let h = &logged.whole;
        let us = |ns: u64| ns as f64 / 1000.0;
        let point = if q >= 1.0 {
            us(h.max())
        } else {
            us(h.value_at_quantile(q))
        };
        figures.class_latency_us.push((class.clone(), q, point));
        if let Some(range) = latency::range(h, &logged.intervals, q) {
            figures
                .intervals
                .push((Metric::Latency { quantile: q }, Some(class), range));
        }
    }
    Ok(())
}

/// The confidence of every interval the judge draws.
const CONFIDENCE: Confidence = Confidence::P95;

/// The 95 % intervals of the figures the objective judges: each latency percentile's from
/// the order statistics of the run's whole histogram (distribution-free: the ranks that hold
/// it, from the binomial), widened by the batch-means interval of the run's `batches` (its
/// log's intervals) where they disagree ([`latency`]); the error and goodput shares' by
/// Wilson's score interval.
fn intervals(
    report: &webscope_load::Report,
    batches: &[hdrhistogram::Histogram<u64>],
    quantiles: &[f64],
    expect: &webscope_load::Expect,
) -> Vec<(Metric, Option<String>, Range)> {
    let mut out = Vec::new();
    if let Some(h) = report.latency_histogram.as_ref().filter(|h| !h.is_empty()) {
        for &q in quantiles {
            if let Some(range) = latency::range(h, batches, q) {
                out.push((Metric::Latency { quantile: q }, None, range));
            }
        }
    }
    let outcomes = report.outcomes();
    let ended = outcomes.ended();
    let shares = [
        (Metric::Errors, outcomes.errors(expect)),
        (Metric::Goodput, outcomes.good(expect)),
    ];
    for (metric, k) in shares {
        if let Some(i) = stats::wilson(k, ended, CONFIDENCE) {
            out.push((
                metric,
                None,
                Range {
                    low: i.low,
                    high: i.high,
                },
            ));
        }
    }
    out
}

/// Requests beyond a percentile a probe should hold for the percentile to be judged: 20. The
/// p99 of n requests is then the 20th-largest of them, its 95 % interval about the 11th to
/// the 29th largest: a stall that delays a handful of requests moves it by a few ranks, it
/// cannot decide it (with 300 requests, the p99 is the 4th-largest, and one stall fails it).
pub const BEYOND: u64 = 20;

/// The requests a run needs for every condition of `slo` to be decidable on a server that
/// meets it comfortably: [`BEYOND`] requests beyond each latency percentile (2 000 for p99,
/// 20 000 for p99.9), and, for a share's ceiling L (errors) or floor 1 − L (goodput), enough
/// that no error at all brings Wilson's upper bound down to L (n ≥ z²(1 − L)/L: 3 838 for
/// 0.1 %, 381 for 1 %). Fewer requests leave the condition undecided unless the run misses
/// it by far.
pub fn needed_requests(slo: &Slo) -> u64 {
    let z2 = CONFIDENCE.z() * CONFIDENCE.z();
    let for_share = |l: f64| {
        if l > 0.0 && l < 1.0 {
            (z2 * (1.0 - l) / l).ceil() as u64
        } else {
            0
        }
    };
    slo.conditions
        .iter()
        .map(|c| match c.metric {
            Metric::Latency { quantile } => stats::requests_for_tail(quantile, BEYOND).unwrap_or(0),
            Metric::Errors => for_share(c.limit),
            Metric::Goodput => for_share(1.0 - c.limit),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// The objective's verdict on one run's `figures`, with the generator's health: the outcome,
/// why, and each condition. `not_sent_limit`: the share of requests never sent beyond which
/// the generator, not the server, set the pace.
pub fn judge(
    slo: &Slo,
    figures: &Measured,
    not_sent_limit: f64,
    bound: Bound,
    reading: &str,
) -> (Outcome, String, Vec<Check>) {
    let checks = slo.judge(figures);
    let lines = |verdict: Verdict| {
        checks
            .iter()
            .filter(|c| c.verdict == verdict)
            .map(Check::line)
            .collect::<Vec<_>>()
            .join("; ")
    };
    if bound == Bound::Generator {
        return (
            Outcome::Generator,
            format!("the generator bound the run: {reading}"),
            checks,
        );
    }
    let verdict = Slo::verdict(&checks);
    let not_sent = figures.not_sent_share.unwrap_or(0.0);
    if not_sent > not_sent_limit && verdict != Verdict::Fail {
        return (
            Outcome::Generator,
            format!(
                "{} of the requests were never sent (the generator behind its schedule, above the {} allowed) while the server met the objective on those it got",
                pct_brief(not_sent),
                pct_brief(not_sent_limit)
            ),
            checks,
        );
    }
    match verdict {
        Verdict::Pass => (Outcome::Pass, "every condition held".into(), checks),
        Verdict::Fail => (Outcome::Fail, lines(Verdict::Fail), checks),
        Verdict::Undecided => (Outcome::Undecided, lines(Verdict::Undecided), checks),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slo() -> Slo {
        Slo::parse("p99<=5ms,errors<=0.1%")
            .unwrap()
            .with_goodput_floor(0.99)
    }

    fn figures(p99_us: f64, errors: f64, not_sent: f64) -> Measured {
        Measured {
            latency_us: vec![(0.99, p99_us)],
            error_share: Some(errors),
            goodput_share: Some(1.0 - errors),
            cpu_share: None,
            not_sent_share: Some(not_sent),
            late_share: None,
            intervals: Vec::new(),
            class_latency_us: Vec::new(),
        }
    }

    const LIMIT: f64 = 0.01;

    #[test]
    fn a_run_passes_fails_or_blames_the_generator() {
        let (o, _, checks) = judge(
            &slo(),
            &figures(4_000.0, 0.0, 0.0),
            LIMIT,
            Bound::Latency,
            "",
        );
        assert_eq!(o, Outcome::Pass);
        assert_eq!(checks.len(), 3);
        let (o, why, _) = judge(
            &slo(),
            &figures(9_000.0, 0.0, 0.0),
            LIMIT,
            Bound::ServerCpu,
            "",
        );
        assert_eq!(o, Outcome::Fail);
        assert!(why.starts_with("p99<=5ms"), "{why}");
        // The generator's verdict wins over any condition: the run measured the generator.
        let (o, why, _) = judge(
            &slo(),
            &figures(9_000.0, 0.0, 0.0),
            LIMIT,
            Bound::Generator,
            "busy 99 %",
        );
        assert_eq!(o, Outcome::Generator);
        assert!(why.contains("busy 99 %"), "{why}");
        // Requests never sent while the server met the objective are the generator's; with
        // latency failing too, the server's.
        let (o, why, _) = judge(
            &slo(),
            &figures(4_000.0, 0.0, 0.1),
            LIMIT,
            Bound::Latency,
            "",
        );
        assert_eq!(o, Outcome::Generator);
        assert!(
            why.contains("10 % of the requests were never sent"),
            "{why}"
        );
        let (o, _, _) = judge(
            &slo(),
            &figures(40_000.0, 0.0, 0.1),
            LIMIT,
            Bound::Latency,
            "",
        );
        assert_eq!(o, Outcome::Fail);
        // Within the limit, requests never sent change nothing.
        let (o, _, _) = judge(
            &slo(),
            &figures(4_000.0, 0.0, 0.009),
            LIMIT,
            Bound::Latency,
            "",
        );
        assert_eq!(o, Outcome::Pass);
        // A figure not measured is no pass.
        let mut none = figures(4_000.0, 0.0, 0.0);
        none.error_share = None;
        let (o, why, _) = judge(&slo(), &none, LIMIT, Bound::Latency, "");
        assert_eq!(o, Outcome::Undecided);
        assert!(why.contains("errors"), "{why}");
    }

    #[test]
    fn a_condition_needs_enough_requests_to_be_decided() {
        let needed = |text: &str| needed_requests(&Slo::parse(text).unwrap());
        assert_eq!(needed("p99<=5ms"), 2_000);
        assert_eq!(needed("p99.9<=5ms"), 20_000);
        assert_eq!(needed("p50<=5ms,max<=1s"), 40);
        assert_eq!(needed("errors<=1%"), 381);
        assert_eq!(needed("errors<=0.1%"), 3_838);
        assert_eq!(needed("p99<=5ms,errors<=0.1%"), 3_838);
        assert_eq!(
            needed("p99<=5ms,goodput>=99%"),
            needed("p99<=5ms,errors<=1%")
        );
    }

    #[test]
    fn a_percentile_of_few_requests_is_undecided_where_a_point_would_fail() {
        // 300 requests at 1 ms and 4 stalled at 7 ms: the point p99 (the 4th-largest) is
        // 7 ms, past a 5 ms limit; its interval reaches down to the 1-ms requests.
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        h.record_n(1_000_000, 296).unwrap();
        h.record_n(7_000_000, 4).unwrap();
        let report = webscope_load::Report {
            latency_histogram: Some(h),
            ..Default::default()
        };
        let slo = Slo::parse("p99<=5ms").unwrap();
        let expect = webscope_load::Expect::default();
        let mut m = Measured::of_load(&report, &[0.99], &expect);
        let point = slo.judge(&m);
        assert_eq!(point[0].verdict, Verdict::Fail, "{}", point[0].line());
        m.intervals = intervals(&report, &[], &[0.99], &expect);
        let judged = slo.judge(&m);
        assert_eq!(
            judged[0].verdict,
            Verdict::Undecided,
            "{}",
            judged[0].line()
        );
        // 2 000 requests with 4 % of them at 7 ms: the whole interval is past the limit.
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        h.record_n(1_000_000, 1_920).unwrap();
        h.record_n(7_000_000, 80).unwrap();
        let report = webscope_load::Report {
            latency_histogram: Some(h),
            ..Default::default()
        };
        let mut m = Measured::of_load(&report, &[0.99], &expect);
        m.intervals = intervals(&report, &[], &[0.99], &expect);
        assert_eq!(slo.judge(&m)[0].verdict, Verdict::Fail);
    }

    #[test]
    fn a_class_condition_is_judged_on_that_class_s_histogram_in_the_log() {
        use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
        use hdrhistogram::serialization::V2DeflateSerializer;
        // Two intervals of a log as the generator writes it: untagged lines hold every
        // request, Tag= lines one class. The small files answer in 1 ms, the large in 80 ms.
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("load.hlog");
        let mut text = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        {
            let mut writer = IntervalLogWriterBuilder::new()
                .begin_log_with(&mut text, &mut serializer)
                .unwrap();
            for i in 0..2u64 {
                let mut small = hdrhistogram::Histogram::<u64>::new(3).unwrap();
                small.record_n(1_000_000, 1_500).unwrap();
                let mut large = hdrhistogram::Histogram::<u64>::new(3).unwrap();
                large.record_n(80_000_000, 30).unwrap();
                let mut all = small.clone();
                all.add(&large).unwrap();
                let at = std::time::Duration::from_secs(i);
                let second = std::time::Duration::from_secs(1);
                writer.write_histogram(&all, at, second, None).unwrap();
                for (h, tag) in [(&small, "0-1KB"), (&large, "over-1MB")] {
                    writer
                        .write_histogram(h, at, second, Tag::new(tag))
                        .unwrap();
                }
            }
        }
        std::fs::write(&log, &text).unwrap();
        let slo = Slo::parse("p99[0-1KB]<=5ms,p50[0-1KB]<=5ms,p99[over-1MB]<=5ms,p99[none]<=5ms")
            .unwrap();
        let mut m = Measured::default();
        class_figures(&mut m, &slo, &log).unwrap();
        let verdicts: Vec<Verdict> = slo.judge(&m).iter().map(|c| c.verdict).collect();
        // 3 000 small requests at 1 ms: a p99 and a p50 within 5 ms, interval and all; 60
        // large at 80 ms fail theirs; a class the log does not have is not measured.
        assert_eq!(
            verdicts,
            [
                Verdict::Pass,
                Verdict::Pass,
                Verdict::Fail,
                Verdict::Undecided
            ],
            "{:?}",
            slo.judge(&m).iter().map(Check::line).collect::<Vec<_>>()
        );
    }

    #[test]
    fn outcomes_and_verdicts_keep_their_words_on_disk() {
        // probe.json and step.json written before the types were enums read back the same.
        for (word, outcome) in [
            ("pass", Outcome::Pass),
            ("fail", Outcome::Fail),
            ("generator", Outcome::Generator),
            ("undecided", Outcome::Undecided),
        ] {
            let json = format!("\"{word}\"");
            assert_eq!(serde_json::from_str::<Outcome>(&json).unwrap(), outcome);
            assert_eq!(serde_json::to_string(&outcome).unwrap(), json);
        }
        let line: CheckLine = serde_json::from_str(
            r#"{"condition": "p99<=5ms", "measured": 4900.0, "verdict": "fail", "line": "x"}"#,
        )
        .unwrap();
        assert_eq!(line.verdict, Verdict::Fail);
        assert!(serde_json::from_str::<Outcome>("\"passed\"").is_err());
    }
}
