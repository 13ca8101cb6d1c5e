//! The replay experiment (issue #26 §4): the site's access log (`--workload LOG`) replayed on
//! its own arrival process at growing speed-ups (1×, 2×, 4× ...), each followed by the same
//! requests at the same mean rate as a Poisson process, until the log's own arrivals fail the
//! objective (`--slo`, as the capacity search judges a probe). It asks the capacity question on
//! the real arrival process, burstiness included; the Poisson runs beside it show what the
//! burstiness costs.
//!
//! Not for: reading logs (`webscope_load::replay_log`) nor the page (`render::replay`).

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use webscope_load::replay::Replay;
use webscope_load::{Arrivals, Target as LoadTarget};

use crate::measure::{self, measure};
use crate::objective::{judge_run, Outcome};
use crate::record::{write_json, RunRecord};
use crate::runner::{Ctx, Next, Points, Run, SoFar, Sweep};
use crate::Options;

/// The largest speed-up tried: 2^10.
pub const MOST_SPEED: f64 = 1024.0;
/// Most runs: a logged and a Poisson run at each speed-up from 1 to [`MOST_SPEED`].
const MOST_RUNS: usize = 22;
/// The seed of the Poisson runs' gaps.
const SEED: u64 = 26;

/// One run: a speed-up, with the log's own arrivals or Poisson ones at the same mean rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub speed: f64,
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
    pub speed: f64,
    pub arrivals: ReplayArrivals,
    /// The replay's mean rate at this speed-up, requests per second.
    pub offered_rps: f64,
    /// On the objective.
    pub outcome: Outcome,
    pub reason: String,
    /// The lab's verdict on what bounds the run.
    pub bound: String,
}

/// The experiment: the log at speed 1, and the outcomes so far by run folder.
pub struct ReplaySweep {
    replay: Arc<Replay>,
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
        Ok(ReplaySweep {
            replay: Arc::new(plan.replay),
            judged: HashMap::new(),
        })
    }

    fn next(&mut self, so_far: &SoFar<'_, Step>, _: &Ctx<'_>) -> Next<Step> {
        if so_far.stopped.is_some() || !so_far.failed.is_empty() {
            return Next::Done;
        }
        let Some(last) = so_far.runs.last() else {
            return Next::Run(Step {
                speed: 1.0,
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
            Some(j) if j.outcome != Outcome::Pass => Next::Stop(format!(
                "the log's own arrivals at {speed}× ({:.0} req/s) did not meet the objective: {}",
                j.offered_rps, j.reason
            )),
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
        // What a run of this length sends of the log from its start, so that the Poisson
        // run beside it offers the same requests at the same rate.
        let mut replay = self.replay.sped_up(step.speed).window(ctx.duration);
        if step.poisson {
            replay = replay.with_poisson_times(SEED);
        }
        let rate = replay.mean_rate();
        let target = LoadTarget::replay(&ctx.target.base_url, &replay)?;
        let mut config = measure::open_loop(target, 4, rate, Arrivals::Constant, ctx);
        config.replay = Some(Arc::new(replay));
        let label = self.label(run);
        let measured = measure(run.dir, config, ctx.target, ctx.interrupt, ctx.bar, &label)?;
        let record = RunRecord::new(
            step.speed,
            format!(
                "the log at {}× ({rate:.0} req/s on average over the log), {} arrivals, from its start for the run's length (looped if shorter)",
                step.speed,
                step.arrivals()
            ),
            measured,
        );
        // What this run offered: a run shorter than the log replays its beginning, whose
        // rate is not the log's mean.
        let offered = offered_rps(&record.load).unwrap_or(rate);
        let judged = self.judge(step, offered, &record, run, ctx)?;
        write_json(&run.dir.join("step.json"), &judged)?;
        self.judged.insert(run.name.to_string(), judged);
        Ok(record)
    }
}

impl ReplaySweep {
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
            outcome: on.outcome,
            reason: on.reason,
            bound: on.verdict.bound.label().into(),
        })
    }
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
