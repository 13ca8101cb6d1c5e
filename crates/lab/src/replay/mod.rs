//! The replay experiment (issue #26 §4): the site's access log (`--workload LOG`) replayed on
//! its own arrival process at growing speed-ups (1×, 2×, 4× ...), each followed by the same
//! requests at the same mean rate as a Poisson process, until the log's own arrivals fail the
//! objective (`--slo`, as the capacity search judges a probe). It asks the capacity question on
//! the real arrival process, burstiness included; the Poisson runs beside it show what the
//! burstiness costs.
//!
//! What each run replays: the whole log's span in `m` windows, one in each of `m` equal parts
//! of it (`m` = the run's seconds, at most [`MOST_WINDOWS`]), each window a run-second of the
//! log at that speed-up (`K` seconds of log), played one after another ([`Part`]). So a run
//! offers the log's mix and mean rate from its whole span, times `K`, with the log's own
//! burstiness within each window; the busiest window would measure one peak only, and the
//! log's start (what this did before, issue #35) only its first hours: on a 3.5-day log a
//! 5 s run at 1 024x sent the first hour's 74 requests, at the same 37 req/s from 32x up.
//! Each window sits at a point drawn once per experiment in its part, the same for every
//! speed-up, so a longer window holds a shorter one's requests and the offered rate cannot
//! fall as `K` grows. When the windows would cover the span, the run replays the whole log
//! (looped if it is shorter than the run).
//!
//! A log sampled by the clock or with long gaps (`characterize`'s rule, read in the first
//! pass) is played on its time with traffic alone, its stretches back to back ([`Timeline`]),
//! and said so on the page. A sparse log starts at the speed-up whose runs hold enough of its
//! requests to judge, the lower ones said as not run; a log no run's windows can hold a
//! request of fails with why and what to give instead.
//!
//! The log is read as a stream: a first pass for its span (`replay_log::plan`), then each
//! run's windows alone (`replay_log::collect`), so memory follows a run's requests, not the
//! log's.
//!
//! Not for: reading logs (`webscope_load::replay_log`) nor the page (`webscope_pages::replay`).

mod part;

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use webscope_load::{Arrivals, Target as LoadTarget};

use crate::measure::{self, measure};
use crate::objective::{judge_run, Outcome};
use crate::runner::{Ctx, Next, Points, Run, SoFar, Sweep};
use crate::Options;
pub use part::{Part, Timeline};
use webscope_record::{write_json, RunRecord};
use webscope_report::human;

/// The largest speed-up tried: 2^10.
pub const MOST_SPEED: f64 = 1024.0;
/// Most runs: a logged and a Poisson run at each speed-up from 1 to [`MOST_SPEED`].
const MOST_RUNS: usize = 22;
/// The seed of the Poisson runs' gaps and of the windows' places.
const SEED: u64 = 26;
/// Requests a run should hold to be judged: the first speed-up is the least whose run is
/// expected to hold this many (a p99 needs hundreds; fewer runs undecided, and on).
const FEWEST_REQUESTS: f64 = 20.0;
/// Most windows a run replays (one per second of the run up to this).
pub const MOST_WINDOWS: u64 = 60;

/// One run: a speed-up, with the log's own arrivals or Poisson ones at the same mean rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// How much faster than the log the run replays it (2: twice as fast).
    pub speed: f64,
    /// Poisson arrivals at the same mean rate, instead of the log's own.
    pub poisson: bool,
}

impl Step {
    fn arrivals(&self) -> ReplayArrivals {
        if self.poisson {
            ReplayArrivals::Poisson
        } else {
            ReplayArrivals::Logged
        }
    }
}

/// The arrivals of a replay run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayArrivals {
    /// The log's own.
    Logged,
    /// Poisson at the same mean rate.
    Poisson,
}

impl std::fmt::Display for ReplayArrivals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReplayArrivals::Logged => "logged",
            ReplayArrivals::Poisson => "poisson",
        })
    }
}

/// What a run said, as `step.json` keeps it beside its `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepVerdict {
    /// The run's speed-up over the log.
    pub speed: f64,
    /// The log's own arrivals, or Poisson ones at the same mean rate.
    pub arrivals: ReplayArrivals,
    /// The replay's mean rate at this speed-up, requests per second.
    pub offered_rps: f64,
    /// Requests the run's schedule held (what its windows of the log hold).
    #[serde(default)]
    pub requests: u64,
    /// What of the log the run replayed, in words.
    #[serde(default)]
    pub part: String,
    /// On the objective.
    pub outcome: Outcome,
    /// Why, in one sentence.
    pub reason: String,
    /// The lab's verdict on what bounds the run.
    pub bound: String,
}

/// The experiment: the log (its paths, first second, time with traffic and requests), the
/// first speed-up, and the outcomes so far by run folder.
pub struct ReplaySweep {
    logs: Vec<std::path::PathBuf>,
    first_s: u64,
    timeline: Timeline,
    /// Requests the log replays (GET and HEAD).
    requests: u64,
    /// The log's real span, seconds (what `load --replay` would play).
    span_s: u64,
    first_speed: f64,
    judged: HashMap<String, StepVerdict>,
}

impl Sweep for ReplaySweep {
    const NAME: &'static str = "replay";
    const FACTOR: &'static str = "speed-up of the log (×)";
    type Point = Step;

    fn points(_: &Options) -> Points<Step> {
        Points::Adaptive { most: MOST_RUNS }
    }

    /// One pass: the speed-ups are the sweep; `--repeat` is not taken round it.
    fn rounds(_: &Options) -> usize {
        1
    }

    fn start(ctx: &Ctx<'_>) -> anyhow::Result<ReplaySweep> {
        let logs = &ctx.options.workload;
        anyhow::ensure!(
            !logs.is_empty(),
            "the replay experiment replays an access log: give it with --workload LOG"
        );
        anyhow::ensure!(
            !ctx.target.http2,
            "the replay experiment speaks HTTP/1.1 only so far (over TLS with --tls): leave --http2 out"
        );
        let plan = webscope_load::replay_log::plan(logs, None, 1.0, true)?;
        let first_s = plan.replay.log.as_ref().map_or(0, |l| l.first_s);
        let span_s = (plan.replay.span().as_secs_f64().round() as u64).max(1);
        let timeline = Timeline::of(&plan.coverage, first_s, span_s);
        let requests = plan.replay.per_pass;
        Ok(ReplaySweep {
            logs: logs.clone(),
            first_s,
            first_speed: first_speed(requests, timeline.length(), ctx.duration.as_secs().max(1)),
            timeline,
            requests,
            span_s,
            judged: HashMap::new(),
        })
    }

    fn next(&mut self, so_far: &SoFar<'_, Step>, _: &Ctx<'_>) -> Next<Step> {
        if so_far.stopped.is_some() || !so_far.failed.is_empty() {
            return Next::Done;
        }
        let Some(last) = so_far.runs.last() else {
            return Next::Run(Step {
                speed: self.first_speed,
                poisson: false,
            });
        };
        let speed = last.point.speed;
        if !last.point.poisson {
            return Next::Run(Step {
                speed,
                poisson: true,
            });
        }
        let logged = so_far
            .runs
            .iter()
            .rev()
            .find(|d| !d.point.poisson && d.point.speed == speed)
            .and_then(|d| self.judged.get(&d.name));
        match logged {
            Some(j) if j.outcome == Outcome::Generator => Next::Stop(format!(
                "at {speed}× ({:.0} req/s) the generator could not offer the log: {}",
                j.offered_rps, j.reason
            )),
            // Too few requests or an interval across the limit: a faster run holds more.
            Some(j) if matches!(j.outcome, Outcome::Fail | Outcome::Disturbed) => {
                Next::Stop(format!(
                "the log's own arrivals at {speed}× ({:.0} req/s) did not meet the objective: {}",
                j.offered_rps, j.reason
            ))
            }
            _ if speed >= MOST_SPEED => Next::Stop(format!(
                "the log was still met at {speed}×, the largest speed-up tried"
            )),
            _ => Next::Run(Step {
                speed: speed * 2.0,
                poisson: false,
            }),
        }
    }

    fn name(&self, step: &Step) -> String {
        format!("{}-{:04}x", step.arrivals(), step.speed)
    }

    fn label(&self, run: &Run<'_, Step>) -> String {
        format!(
            "the log at {}× ({} arrivals)",
            run.point.speed,
            run.point.arrivals()
        )
    }

    fn measure(&mut self, run: &Run<'_, Step>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        let step = run.point;
        let run_s = ctx.duration.as_secs().max(1);
        let part = Part::choose(self.timeline.length(), run_s, step.speed);
        let logged = webscope_load::replay_log::collect(&self.logs, None, &|second| {
            part.place_second(&self.timeline, self.first_s, second)
                .is_some()
        })?;
        let Some(mut replay) = part.replay(&logged, &self.timeline, self.first_s, step.speed)
        else {
            anyhow::bail!("{}", self.empty_windows(&part, run_s));
        };
        if step.poisson {
            replay = replay.with_poisson_times(SEED);
        }
        let rate = replay.mean_rate();
        let requests = replay.per_pass;
        let target = LoadTarget::replay(&ctx.target.base_url, &replay)?;
        let mut config = measure::open_loop(target, 4, rate, Arrivals::Constant, ctx);
        config.replay = Some(Arc::new(replay));
        let label = self.label(run);
        let measured = measure(run.dir, config, ctx.target, ctx.interrupt, ctx.bar, &label)?;
        let record = RunRecord::new(
            step.speed,
            format!(
                "the log at {}× ({rate:.1} req/s), {} arrivals, {}",
                step.speed,
                step.arrivals(),
                part.describe(&self.timeline)
            ),
            measured,
        );
        // What this run offered: its windows' rate, not the log's mean.
        let offered = offered_rps(&record.load).unwrap_or(rate);
        let mut judged = self.judge(step, offered, &record, run, ctx)?;
        judged.requests = requests;
        judged.part = part.describe(&self.timeline);
        write_json(&run.dir.join("step.json"), &judged)?;
        self.judged.insert(run.name.to_string(), judged);
        Ok(record)
    }

    /// The speed-ups below the first, said as not run, and why.
    fn finish(&mut self, ctx: &Ctx<'_>) -> Vec<String> {
        if self.first_speed <= 1.0 {
            return Vec::new();
        }
        let run_s = ctx.duration.as_secs().max(1);
        let rate = self.requests as f64 / self.timeline.length().max(1) as f64;
        vec![format!(
            "the speed-ups below {}×: at 1× a {run_s}-s run's windows would hold about {} of the log's requests ({} where it has traffic), too few to judge; the sweep starts at {}×",
            self.first_speed,
            human::sig3(rate * run_s as f64),
            human::rate(rate),
            self.first_speed
        )]
    }
}

impl ReplaySweep {
    /// Why a run's windows hold no request, and what to give instead.
    fn empty_windows(&self, part: &Part, run_s: u64) -> String {
        let whole =
            webscope_load::replay_log::speed_hint(std::time::Duration::from_secs(self.span_s), 1.0)
                .map_or(String::new(), |hint| format!(" ({hint})"));
        format!(
            "no request of the log falls in the run's {} (the log's {} over {} of traffic are too sparse for a {run_s}-s run): give a longer --duration, whose windows hold more, or replay the whole log with `webscope load --replay LOG`{whole}",
            part.describe(&self.timeline),
            human::plural(self.requests, "request"),
            human::duration(self.timeline.length() as f64),
        )
    }

    /// The objective's verdict on one run, with the generator's health, as a capacity probe's.
    fn judge(
        &self,
        step: &Step,
        rate: f64,
        record: &RunRecord,
        run: &Run<'_, Step>,
        ctx: &Ctx<'_>,
    ) -> anyhow::Result<StepVerdict> {
        let on = judge_run(record, run.dir, ctx, &ctx.options.capacity.slo)
            .context("the run's verdict")?;
        Ok(StepVerdict {
            speed: step.speed,
            arrivals: step.arrivals(),
            offered_rps: rate,
            requests: 0,
            part: String::new(),
            outcome: on.outcome,
            reason: on.reason,
            bound: on.verdict.bound.label().into(),
        })
    }
}

/// The first speed-up: the least power of two up to [`MOST_SPEED`] at which a run of `run_s`
/// seconds is expected to hold [`FEWEST_REQUESTS`] of the `requests` a timeline of
/// `length_s` seconds holds (or the whole log, when its windows would cover it).
fn first_speed(requests: u64, length_s: u64, run_s: u64) -> f64 {
    let rate = requests as f64 / length_s.max(1) as f64;
    let mut speed = 1.0;
    while speed < MOST_SPEED
        && rate * run_s as f64 * speed < FEWEST_REQUESTS
        && !Part::choose(length_s, run_s, speed).whole
    {
        speed *= 2.0;
    }
    speed
}

/// Requests the run's schedule offered per second (its intervals' `offered` over its length).
fn offered_rps(load: &webscope_load::Report) -> Option<f64> {
    let duration = Some(load.duration_s).filter(|d| *d > 0.0)?;
    let offered: u64 = load
        .intervals
        .iter()
        .map(|i| i.offered)
        .sum::<Option<u64>>()?;
    Some(offered as f64 / duration)
}

#[cfg(test)]
mod tests {
    use super::*;
    use webscope_load::replay::LoggedRequest;

    /// A 3.5-day log of sparse Poisson arrivals (one every 30 s on average).
    fn sparse_log() -> (Vec<LoggedRequest>, u64, u64) {
        let first_s = 1_700_000_000;
        let span_s = 302_400;
        let mut rng = webscope_workload::Rng::new(3);
        let mut at = 0.0;
        let mut log = Vec::new();
        while at < span_s as f64 {
            log.push(LoggedRequest {
                time: std::time::UNIX_EPOCH + std::time::Duration::from_secs(first_s + at as u64),
                client: format!("c{}", log.len() % 50),
                method: "GET".into(),
                target: format!("/p{}", log.len() % 40),
                status: 200,
                bytes: 100,
            });
            at += 30.0 * rng.exponential();
        }
        (log, first_s, span_s)
    }

    #[test]
    fn regression_35_offered_rates_grow_with_the_speed_up_on_a_long_sparse_log() {
        let (log, first_s, span_s) = sparse_log();
        let mean = log.len() as f64 / span_s as f64;
        let mut rates = Vec::new();
        let mut speed = 1.0;
        while speed <= MOST_SPEED {
            let part = Part::choose(span_s, 5, speed);
            assert!(!part.whole && part.starts.len() == 5, "{part:?}");
            // Windows spread over the whole span, not its start.
            assert!(part.starts[4] > span_s / 2, "{part:?}");
            let rate = part
                .replay(&log, &Timeline::whole(span_s), first_s, speed)
                .map_or(0.0, |r| r.per_pass as f64 / 5.0);
            rates.push(rate);
            speed *= 2.0;
        }
        assert!(rates.windows(2).all(|w| w[1] >= w[0]), "{rates:?}");
        // At 1 024x a run offers about the log's mean rate times 1 024 (Poisson counts of
        // ~170 requests: within 40 %), and 32 times what it offered at 32x within a factor 3.
        let at_1024 = rates[10];
        assert!(
            (at_1024 / (1024.0 * mean) - 1.0).abs() < 0.4,
            "{rates:?} mean {mean}"
        );
        assert!(at_1024 > 10.0 * rates[5], "{rates:?}");
    }

    #[test]
    fn windows_that_would_cover_the_log_replay_it_whole() {
        let (log, first_s, span_s) = sparse_log();
        let part = Part::choose(span_s, 60, 10_000.0);
        assert!(part.whole);
        let replay = part
            .replay(&log, &Timeline::whole(span_s), first_s, 10_000.0)
            .unwrap();
        assert_eq!(replay.per_pass, log.len() as u64);
        assert!(replay.looped);
        // Offsets land in the windows played one after another.
        let part = Part::choose(1000, 2, 10.0);
        assert_eq!(part.length, 10);
        let inside = part.starts[1] + 3;
        assert_eq!(part.place(inside), Some(13));
        assert_eq!(part.place(part.starts[1] + 10), None);
    }

    #[test]
    fn a_sparse_log_starts_where_a_run_holds_enough_requests() {
        // 300 requests over 3.5 days: 0.001 req/s. A 5-s run holds 20 at 4 096×: capped.
        assert_eq!(first_speed(300, 302_400, 5), MOST_SPEED);
        // Two requests a second: 10 in a 5-s run at 1×, 20 at 2×; 4 a second: 1×.
        assert_eq!(first_speed(9960, 4980, 5), 2.0);
        assert_eq!(first_speed(19_920, 4980, 5), 1.0);
        // 0.25 req/s: 16× gives a 5-s run 20.
        assert_eq!(first_speed(1000, 4000, 5), 16.0);
        // A short log played whole from the start.
        assert_eq!(first_speed(3, 2, 5), 1.0);
    }

    #[test]
    fn a_run_offers_what_its_intervals_scheduled() {
        let report = |load| serde_json::from_value(load).unwrap();
        let load = serde_json::json!({
            "duration_s": 2.0,
            "intervals": [{"offered": 18, "requests": 18}, {"offered": 60, "requests": 59}],
        });
        assert_eq!(offered_rps(&report(load)), Some(39.0));
        assert_eq!(
            offered_rps(&report(
                serde_json::json!({"duration_s": 2.0, "intervals": [{}]})
            )),
            None
        );
    }
}
