//! One probe of the capacity search: a short warm-up at the probe's rate, the open-loop run
//! at a fixed offered rate (measured as every lab run is), the objective's verdict with the
//! generator's health as a condition, then a cool-down before the next probe. What it judged
//! is written beside the run as `probe.json`, so that the page reads it back.
//!
//! The generator's health: a probe is [`Outcome::GeneratorBound`] — a verdict on the
//! generator, never a server fail — when the lab's bottleneck verdict says the generator bound
//! the run (its CPU busy, or waiting for its CPU), or when more than [`late_limit`] of the
//! requests were never sent while every condition but goodput held (the server met the
//! objective on those it got; a server that fell behind fills the probe's connections, and
//! its latency, counted from each request's intended send, fails first).
//!
//! Not for: choosing rates (`search`) nor the runner's bookkeeping (`experiment`).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use webscope_load::slo::{Check, Measured, Metric, Slo, Verdict};
use webscope_load::{Config, Report, Target as LoadTarget};

use super::cooldown::{cool_down, port_counts, Cooldown};
use super::search::Outcome;
use super::Settings;
use super::{kubernetes, segments};
use crate::bottleneck::{self, Bound};
use crate::health::{Expect, Health};
use crate::measure::{self, measure, measure_by};
use crate::record::{write_json, RunRecord};
use crate::render::evidence::evidence;
use crate::runner::Ctx;

/// Most requests not sent by the end of a probe (the generator behind its schedule, or every
/// connection busy) a probe may have before its verdict is the generator's rather than the
/// server's: 1 %, or 100 ms of the schedule when that is more (a scheduler's hiccup at the
/// end of a 1-s probe on a busy machine is 5 % of it, and says nothing of the server).
pub const LATE_LIMIT: f64 = 0.01;
const LATE_ALLOWANCE_S: f64 = 0.1;

/// The late share allowed in a probe of `probe` length.
pub fn late_limit(probe: Duration) -> f64 {
    LATE_LIMIT.max(LATE_ALLOWANCE_S / probe.as_secs_f64().max(1e-3))
}
/// One point of the search: its place in the search (from 1) and its offered rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub number: usize,
    pub rate: f64,
}

impl Probe {
    /// Its folder: the number keeps repeated rates apart, the rate tells them at a glance.
    pub fn name(&self) -> String {
        format!("probe-{:02}-{:.0}rps", self.number, self.rate)
    }

    /// How the bar and failure lines say it.
    pub fn label(&self) -> String {
        format!("probe {} at {:.0} req/s", self.number, self.rate)
    }
}

/// What a probe said, as `probe.json` keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Judged {
    pub number: usize,
    pub rate: f64,
    /// `pass`, `fail`, `generator` or `undecided`.
    pub outcome: String,
    /// Why, in one sentence.
    pub reason: String,
    /// Each condition of the objective: its text, the figure, its verdict.
    pub checks: Vec<CheckLine>,
    /// Requests not sent on time over requests due.
    pub late_share: Option<f64>,
    /// The lab's verdict on what bounds the probe, and its reading.
    pub bound: String,
    pub bound_reading: String,
    pub warmup_s: f64,
    /// How the cool-down after it went.
    pub cooldown: Cooldown,
}

/// One condition judged on one probe.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckLine {
    /// As the objective writes it: `p99<=5ms`.
    pub condition: String,
    /// In the condition's unit (µs, or a fraction).
    pub measured: Option<f64>,
    /// `pass`, `fail` or `undecided`.
    pub verdict: String,
    /// For people: `p99<=5ms: 4.90ms, passed`.
    pub line: String,
}

impl Judged {
    /// The outcome the search takes.
    pub fn outcome(&self) -> Outcome {
        match self.outcome.as_str() {
            "pass" => Outcome::Pass,
            "fail" => Outcome::Fail,
            "generator" => Outcome::GeneratorBound,
            _ => Outcome::Undecided(self.reason.clone()),
        }
    }
}

/// Runs `probe` into `run_dir`: warm-up, the measured run, its verdict, the cool-down.
/// Returns its run record and what it judged (also written as `probe.json`).
pub fn run(
    probe: &Probe,
    run_dir: &Path,
    ctx: &Ctx<'_>,
    settings: &Settings,
) -> anyhow::Result<(RunRecord, Judged)> {
    let port = ctx.target.port();
    let open_before = port.and_then(|p| port_counts(p).ok()).map_or(0, |c| c.0);
    let config = open_loop(probe.rate, ctx, settings)?;
    let warmup = warmup_length(ctx.duration);
    let mut warm = config.clone();
    warm.duration = warmup;
    // Pods start from a cluster the lab's machine may not even reach the target from: their
    // Job is the probe, without a warm-up of its own.
    if settings.kubernetes.is_none() {
        ctx.bar
            .set_message(format!("{}: warming up", probe.label()));
        webscope_load::run(&warm, ctx.interrupt, &mut |_| {})
            .with_context(|| format!("the warm-up of {}", probe.label()))?;
    }
    let label = probe.label();
    let measured = if settings.segments > 1 || settings.kubernetes.is_some() {
        let plan = segments::Plan {
            segments: settings.segments,
            exe: ctx.exe,
            server_cpu: ctx.server_cpu,
        };
        let generate =
            |config: &Config, _: &mut dyn FnMut(&webscope_load::IntervalReport)| match &settings
                .kubernetes
            {
                Some(pods) => kubernetes::run(config, &plan, pods, ctx.interrupt),
                None => segments::run(config, &plan, ctx.interrupt),
            };
        measure_by(
            run_dir,
            config,
            ctx.target,
            ctx.interrupt,
            ctx.bar,
            &label,
            false,
            generate,
        )?
    } else {
        measure(run_dir, config, ctx.target, ctx.interrupt, ctx.bar, &label)?
    };
    let record = RunRecord::new(
        probe.rate,
        format!(
            "open loop, {} arrivals at {:.0} req/s, {}",
            arrivals_word(settings),
            probe.rate,
            if ctx.options.keep_alive || ctx.target.http2 {
                "keep-alive"
            } else {
                "a connection per request"
            }
        ),
        measured,
    );
    let OnObjective {
        outcome,
        reason,
        checks,
        late_share,
        verdict,
    } = judge_run(&record, run_dir, ctx, &settings.slo)?;
    ctx.bar.set_message(format!("{label}: cooling down"));
    let cooldown = port.map_or_else(Cooldown::default, |p| cool_down(p, open_before));
    let judged = Judged {
        number: probe.number,
        rate: probe.rate,
        outcome: outcome_word(&outcome).into(),
        reason,
        checks: checks
            .iter()
            .map(|c| CheckLine {
                condition: c.condition.to_string(),
                measured: c.measured,
                verdict: verdict_word(c.verdict).into(),
                line: c.line(),
            })
            .collect(),
        late_share,
        bound: verdict.bound.label().into(),
        bound_reading: verdict.reading,
        warmup_s: warmup.as_secs_f64(),
        cooldown,
    };
    write_json(&run_dir.join("probe.json"), &judged)?;
    Ok((record, judged))
}

/// An open-loop run judged on an objective, with the generator's health as a condition.
pub struct OnObjective {
    pub outcome: Outcome,
    /// Why, in one sentence.
    pub reason: String,
    pub checks: Vec<Check>,
    /// Requests not sent on time over requests due.
    pub late_share: Option<f64>,
    /// The lab's verdict on what bounds the run.
    pub verdict: bottleneck::Verdict,
}

/// Judges the measured open-loop run `record` (its files in `run_dir`) on `slo`: a capacity
/// probe, and a replay run of the replay experiment, alike.
pub fn judge_run(
    record: &RunRecord,
    run_dir: &Path,
    ctx: &Ctx<'_>,
    slo: &Slo,
) -> anyhow::Result<OnObjective> {
    let figures = figures(record, run_dir, slo)?;
    let expect = Expect::parse(&ctx.options.judge.expect_status).map_err(anyhow::Error::msg)?;
    let health = Health::of(&record.load, &expect, ctx.options.judge.max_error_pct);
    // Requests never sent are judged by [`judge`]'s lateness rule, with the objective: when
    // the server's latency fails too, its slowness is what held every connection busy, and
    // the run is the server's fail, not the generator's (which the verdict's missed-rate
    // rule, blind to the objective, would make it).
    let mut seen = evidence(record, &health);
    seen.missed_rate = None;
    let verdict = bottleneck::judge(&seen);
    let (outcome, reason, checks) = judge(
        slo,
        &figures,
        late_limit(ctx.duration),
        verdict.bound,
        &verdict.reading,
    );
    Ok(OnObjective {
        outcome,
        reason,
        checks,
        late_share: figures.late_share,
        verdict,
    })
}

/// The probe's load: open loop at `rate` on the file set, as [`measure::open_loop`] runs it;
/// over HTTP/2, a few connections of many streams.
fn open_loop(rate: f64, ctx: &Ctx<'_>, settings: &Settings) -> anyhow::Result<Config> {
    let target = LoadTarget::fileset(ctx.fileset, &ctx.target.base_url)?;
    // A few to start with; the open loop opens more when all are busy.
    let connections = ((rate / 1000.0).ceil() as usize).clamp(1, 64);
    let mut config = measure::open_loop(target, connections, rate, settings.arrivals, ctx);
    if ctx.target.http2 {
        // HTTP/2's concurrency is its streams: a few connections of many streams, as a
        // browser holds them, stand where HTTP/1.1 opens up to MAX_CONNECTIONS.
        config.connections = H2_CONNECTIONS;
        config.http2 = Some(H2_STREAMS);
    }
    Ok(config)
}

/// An HTTP/2 probe's connections and streams on each (the concurrency its open loop may use).
const H2_CONNECTIONS: usize = 4;
const H2_STREAMS: usize = 100;

/// A fifth of the probe, from 0.2 s to 2 s: long enough to open connections and warm the
/// server's caches, short enough not to double the search's time.
pub fn warmup_length(probe: Duration) -> Duration {
    (probe / 5).clamp(Duration::from_millis(200), Duration::from_secs(2))
}

fn arrivals_word(settings: &Settings) -> &'static str {
    match settings.arrivals {
        webscope_load::Arrivals::Constant => "constant",
        webscope_load::Arrivals::Poisson => "Poisson",
    }
}

/// The probe's figures for the objective: the load's own (latency quantiles from the run's
/// histogram log when the report's percentiles lack one), and the server's CPU share.
fn figures(record: &RunRecord, run_dir: &Path, slo: &Slo) -> anyhow::Result<Measured> {
    let mut report: Report =
        serde_json::from_value(record.load.clone()).context("the probe's load report")?;
    let quantiles = slo.quantiles();
    if quantiles.iter().any(|&q| report.latency_at(q).is_none()) {
        // A report read back carries p50, p90, p99, p99.9 and max; the log has them all.
        let mut whole = None::<hdrhistogram::Histogram<u64>>;
        for interval in webscope_load::read_intervals(&run_dir.join("load.hlog"), None)? {
            match whole.as_mut() {
                // Both auto-resize: adding cannot fail.
                Some(h) => {
                    let _ = h.add(&interval.histogram);
                }
                None => whole = Some(interval.histogram),
            }
        }
        report.latency_histogram = whole;
    }
    let mut figures = Measured::of_load(&report, &quantiles);
    // Goodput over the requests sent that ended (answered or failed): the load report's own
    // share divides by the offered rate × the run, which counts the requests still in flight
    // when the probe ended (the generator drops them) and those never sent as not answered.
    // At 1-s probes and 10 ms latencies the first are 1 % of the offered, which a 99 % floor
    // would take for a server failure; the second are the lateness condition's
    // ([`late_limit`]). Over the requests that ended, good = ended × (1 − error share).
    if figures.goodput_share.is_some() {
        figures.goodput_share = figures.error_share.map(|e| 1.0 - e);
    }
    figures.cpu_share = record.server.as_ref().and_then(|s| {
        let cpus = record.env.server_cpus.filter(|c| *c > 0.0)?;
        (s.cpu_s > 0.0).then(|| s.busy_cores / cpus)
    });
    Ok(figures)
}

/// The objective's verdict on one probe's `figures`, with the generator's health: the
/// outcome, why, and each condition.
pub fn judge(
    slo: &Slo,
    figures: &Measured,
    late_limit: f64,
    bound: Bound,
    reading: &str,
) -> (Outcome, String, Vec<Check>) {
    let checks = slo.judge(figures);
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .map(Check::line)
        .collect();
    if bound == Bound::Generator {
        return (
            Outcome::GeneratorBound,
            format!("the generator bound the probe: {reading}"),
            checks,
        );
    }
    let late = figures.late_share.unwrap_or(0.0);
    let only_goodput_failed = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .all(|c| c.condition.metric == Metric::Goodput);
    if late > late_limit && only_goodput_failed {
        return (
            Outcome::GeneratorBound,
            format!(
                "{:.1} % of the requests were never sent (the generator behind its schedule, above the {:.1} % allowed) while the server met the rest of the objective",
                100.0 * late,
                100.0 * late_limit
            ),
            checks,
        );
    }
    match Slo::verdict(&checks) {
        Verdict::Pass => (Outcome::Pass, "every condition held".into(), checks),
        Verdict::Fail => (Outcome::Fail, failed.join("; "), checks),
        Verdict::Undecided => {
            let why = checks
                .iter()
                .filter(|c| c.verdict == Verdict::Undecided)
                .map(Check::line)
                .collect::<Vec<_>>()
                .join("; ");
            (Outcome::Undecided(why.clone()), why, checks)
        }
    }
}

pub fn outcome_word(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::GeneratorBound => "generator",
        Outcome::Undecided(_) => "undecided",
    }
}

fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Undecided => "undecided",
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

    fn figures(p99_us: f64, errors: f64, goodput: f64, late: f64) -> Measured {
        Measured {
            latency_us: vec![(0.99, p99_us)],
            error_share: Some(errors),
            goodput_share: Some(goodput),
            cpu_share: None,
            late_share: Some(late),
        }
    }

    #[test]
    fn a_probe_passes_fails_or_blames_the_generator() {
        let (o, _, checks) = judge(
            &slo(),
            &figures(4_000.0, 0.0, 1.0, 0.0),
            LATE_LIMIT,
            Bound::Latency,
            "",
        );
        assert_eq!(o, Outcome::Pass);
        assert_eq!(checks.len(), 3);
        let (o, why, _) = judge(
            &slo(),
            &figures(9_000.0, 0.0, 1.0, 0.0),
            LATE_LIMIT,
            Bound::ServerCpu,
            "",
        );
        assert_eq!(o, Outcome::Fail);
        assert!(why.starts_with("p99<=5ms"), "{why}");
        // The generator's verdict wins over any condition: the probe measured the generator.
        let (o, why, _) = judge(
            &slo(),
            &figures(9_000.0, 0.0, 1.0, 0.0),
            LATE_LIMIT,
            Bound::Generator,
            "busy 99 %",
        );
        assert_eq!(o, Outcome::GeneratorBound);
        assert!(why.contains("busy 99 %"), "{why}");
        // Late sends that only cost goodput are the generator's; with latency failing too,
        // the server's.
        let (o, _, _) = judge(
            &slo(),
            &figures(4_000.0, 0.0, 0.9, 0.1),
            LATE_LIMIT,
            Bound::Latency,
            "",
        );
        assert_eq!(o, Outcome::GeneratorBound);
        let (o, _, _) = judge(
            &slo(),
            &figures(40_000.0, 0.0, 0.9, 0.1),
            LATE_LIMIT,
            Bound::Latency,
            "",
        );
        assert_eq!(o, Outcome::Fail);
        // A figure not measured is no pass.
        let mut none = figures(4_000.0, 0.0, 1.0, 0.0);
        none.error_share = None;
        let (o, _, _) = judge(&slo(), &none, LATE_LIMIT, Bound::Latency, "");
        assert!(
            matches!(o, Outcome::Undecided(ref why) if why.contains("errors")),
            "{o:?}"
        );
    }

    #[test]
    fn probes_have_names_of_their_own_and_a_bounded_warm_up() {
        let a = Probe {
            number: 3,
            rate: 1500.0,
        };
        let b = Probe {
            number: 4,
            rate: 1500.0,
        };
        assert_ne!(a.name(), b.name());
        assert_eq!(a.name(), "probe-03-1500rps");
        assert_eq!(
            warmup_length(Duration::from_secs(1)),
            Duration::from_millis(200)
        );
        assert_eq!(
            warmup_length(Duration::from_secs(5)),
            Duration::from_secs(1)
        );
        // 100 ms of the schedule, or 1 %.
        assert!((late_limit(Duration::from_secs(1)) - 0.1).abs() < 1e-9);
        assert!((late_limit(Duration::from_secs(15)) - 0.01).abs() < 1e-9);
        assert_eq!(
            warmup_length(Duration::from_secs(60)),
            Duration::from_secs(2)
        );
    }
}
