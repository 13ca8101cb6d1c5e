//! One step of a search, as a capacity probe and a users step both run it: wait for a quiet
//! machine after a disturbed step, read the machine's reference loop, warm up, measure (the
//! machine's quiet watched meanwhile), judge on the objective, take a disturbed machine's
//! verdict over the run's, cool down, and say what was judged ([`Judged`]). The two differ in
//! what they vary ([`Level`]: an offered rate or a number of users), in their load, and in
//! how a disturbance is told from their own work ([`Limits`]); each says so in its [`Spec`].
//!
//! Not for: choosing the next level (`capacity::search`), the load itself
//! (`capacity::probe`, `users::step`), nor judging a run (`objective`, `capacity::quiet`).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use serde::{Deserialize, Serialize};
use webscope_load::slo::Slo;
use webscope_load::Config;
use webscope_monitor::disturbance::{Disturbance, Limits};

use crate::capacity::cooldown::{self, port_counts, Cooldown};
use crate::capacity::quiet;
use crate::objective::{judge_run, CheckLine, OnObjective, Outcome};
use crate::runner::Ctx;
use webscope_record::Measured;
use webscope_record::RunRecord;

/// Longest a step runs, however many requests its objective would like: a low level's
/// step that cannot hold them all is judged on what it holds (its conditions then
/// undecided unless the rate misses them by far), not stretched without end.
pub const MOST_LENGTH: Duration = Duration::from_secs(60);

/// What a step varies, as its search counts it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// An open loop's offered rate, req/s (a capacity probe).
    Rate(f64),
    /// Closed-loop users (a users step).
    Users(usize),
}

impl Level {
    /// The figure the search records and the pages put on their x axis.
    pub fn value(self) -> f64 {
        match self {
            Level::Rate(rate) => rate,
            Level::Users(users) => users as f64,
        }
    }
}

/// What a step said, as `probe.json` and `step.json` keep it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Judged {
    /// The step's place in its search, from 1.
    pub number: usize,
    /// What it ran at: `"rate": req/s` or `"users": N` in the file.
    #[serde(flatten)]
    pub level: Level,
    /// The verdict on the objective.
    pub outcome: Outcome,
    /// Why, in one sentence.
    pub reason: String,
    /// Each condition of the objective: its text, the figure, its verdict.
    pub checks: Vec<CheckLine>,
    /// Requests never sent over requests due (`late_share` in probes written before #38,
    /// which meant the same).
    #[serde(alias = "late_share")]
    pub not_sent_share: Option<f64>,
    /// The lab's verdict on what bounds the step, and its reading.
    #[serde(with = "webscope_bottleneck::as_label")]
    pub bound: webscope_bottleneck::Bound,
    /// The figure behind the bound, in words.
    pub bound_reading: String,
    /// The warm-up before it, seconds.
    pub warmup_s: f64,
    /// How long it ran, seconds (longer than `--duration` at levels too low to give the
    /// objective the requests it needs in that time; 0 in probes written before #33).
    #[serde(default)]
    pub probe_s: f64,
    /// What else used the machine while it ran ([`quiet`]); None when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
    /// How the cool-down after it went.
    pub cooldown: Cooldown,
    /// The machine's reference loop, read just before the step; None when the server does
    /// not run on this machine, and in probes written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Reference>,
}

impl Judged {
    /// Why, as the search takes it beside the outcome: a disturbed step's machine
    /// figures alone ("other processes took 39 % of the server's CPU 0, I/O pressure 54 %"),
    /// which a search's ending quotes, rather than the step's whole reason.
    pub fn why(&self) -> String {
        match self.outcome {
            Outcome::Disturbed => self
                .disturbance
                .as_ref()
                .and_then(|d| d.beyond(&Limits::default()))
                .unwrap_or_else(|| self.reason.clone()),
            _ => self.reason.clone(),
        }
    }
}

/// What each step a search asked for said, by the step's folder name: the search reads it
/// back when the runner hands it the runs done (a step the lab did not judge, e.g. one cut
/// short, is undecided).
#[derive(Debug, Default)]
pub struct Ledger(HashMap<String, (Outcome, String)>);

impl Ledger {
    /// Keeps what the step in folder `name` said; true when it ran on a disturbed machine
    /// (the next step waits for a quiet one).
    pub fn keep(&mut self, name: &str, judged: &Judged) -> bool {
        self.0
            .insert(name.to_string(), (judged.outcome, judged.why()));
        judged.outcome == Outcome::Disturbed
    }

    /// What the step in folder `name` said, and why.
    pub fn of(&self, name: &str) -> (Outcome, &str) {
        self.0.get(name).map_or(
            (Outcome::Undecided, "the step was not judged"),
            |(o, why)| (*o, why.as_str()),
        )
    }
}

/// A step as its experiment hands it to [`run`].
pub struct Spec<'a> {
    /// Its place in the search, from 1.
    pub number: usize,
    /// What it runs at.
    pub level: Level,
    /// How the bar and failure lines name it.
    pub label: String,
    /// Its load, `duration` set to the step's length.
    pub config: Config,
    /// How the run record describes the load.
    pub description: String,
    /// Warm up first (pods on a cluster are the step itself, without a warm-up).
    pub warm_up: bool,
    /// Watch the machine's quiet while it runs (not where generator processes of its own
    /// start within the step, which the watch would count as others).
    pub watch: bool,
    /// The step before ran on a disturbed machine: wait for a quiet one first.
    pub after_disturbed: bool,
    /// Beyond what the machine's quiet counts as disturbed.
    pub limits: Limits,
    /// The objective it is judged on.
    pub slo: &'a Slo,
    /// Connections the next step may open, that the cool-down makes room for.
    pub next_connections: f64,
}

/// Runs `step` into `run_dir`, measuring with `measure` (the lab's own measurement, or one of
/// segments or pods). Returns its run record and what it judged; the caller writes the file.
pub fn run(
    step: Spec<'_>,
    run_dir: &Path,
    ctx: &Ctx<'_>,
    measure: impl FnOnce(Config, &str) -> anyhow::Result<Measured>,
) -> anyhow::Result<(RunRecord, Judged)> {
    let label = step.label.as_str();
    let watched = quiet::watched(ctx);
    if step.after_disturbed {
        quiet::wait_announced(label, ctx, &watched);
    }
    let reference = reference(ctx, &watched, label);
    let port = ctx.target.port();
    let open_before = port.and_then(|p| port_counts(p).ok()).map_or(0, |c| c.0);
    let warmup = warmup_length(ctx.duration);
    if step.warm_up {
        warm_up(&step.config, ctx, label)?;
    }
    let length = step.config.duration;
    let sampler = step.watch.then(|| quiet::start(&watched)).flatten();
    let measured = measure(step.config, label)?;
    let record = RunRecord::new(step.level.value(), step.description, measured);
    let disturbance = sampler.and_then(|s| s.stop().ok());
    let OnObjective {
        outcome,
        reason,
        checks,
        not_sent_share,
        verdict,
    } = judge_run(&record, run_dir, ctx, step.slo)?;
    let (outcome, reason) =
        quiet::verdict_within(outcome, reason, disturbance.as_ref(), &step.limits);
    ctx.bar.set_message(format!("{label}: cooling down"));
    let cooldown = port.map_or_else(Cooldown::default, |p| {
        cooldown::cool_down_for(p, open_before, Some(step.next_connections))
    });
    let judged = Judged {
        number: step.number,
        level: step.level,
        outcome,
        reason,
        checks,
        not_sent_share,
        bound: verdict.bound,
        bound_reading: verdict.reading,
        warmup_s: warmup.as_secs_f64(),
        probe_s: length.as_secs_f64(),
        disturbance,
        cooldown,
        reference,
    };
    Ok((record, judged))
}

/// Readings of [`webscope_monitor::reference`]'s loop before a probe: where, and each one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// The server's CPU the loop ran on; None when the server is not pinned (the loop was
    /// not either).
    pub cpu: Option<usize>,
    /// Each reading, ms of the loop thread's CPU time.
    pub ms: Vec<f64>,
}

/// Readings of the reference loop before each probe: five, 20 ms apart, about 0.2 s on the
/// machine this was written on. One reading follows the server's speed poorly; the search's
/// mean over all its probes' readings is what [`crate::capacity::compare`] sets side by
/// side.
const REFERENCE_READINGS: usize = 5;

/// The reference loop on the server's CPU while the server is idle (between probes), when
/// the server runs on this machine: on another host the loop would time the wrong machine.
pub(crate) fn reference(
    ctx: &Ctx<'_>,
    watched: &webscope_monitor::disturbance::Watched,
    label: &str,
) -> Option<Reference> {
    if watched.server.is_empty() {
        return None;
    }
    ctx.bar
        .set_message(format!("{label}: timing the machine's reference loop"));
    let cpu = watched
        .server_cpus
        .as_ref()
        .and_then(|c| c.first().copied());
    let ms =
        webscope_monitor::reference::measure(cpu, REFERENCE_READINGS, Duration::from_millis(20));
    (!ms.is_empty()).then_some(Reference { cpu, ms })
}

/// Runs `config` for the warm-up's length ([`warmup_length`] of the lab's run), said on the
/// bar as `label`'s.
pub fn warm_up(config: &Config, ctx: &Ctx<'_>, label: &str) -> anyhow::Result<()> {
    let mut warm = config.clone();
    warm.duration = warmup_length(ctx.duration);
    ctx.bar.set_message(format!("{label}: warming up"));
    webscope_load::run(&warm, ctx.interrupt, &mut |_| {})
        .with_context(|| format!("the warm-up of {label}"))?;
    Ok(())
}

/// A fifth of the probe, from 0.2 s to 2 s: long enough to open connections and warm the
/// server's caches, short enough not to double the search's time.
pub fn warmup_length(probe: Duration) -> Duration {
    (probe / 5).clamp(Duration::from_millis(200), Duration::from_secs(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(level: serde_json::Value) -> serde_json::Value {
        let mut v = serde_json::json!({
            "number": 1, "outcome": "disturbed",
            "reason": "the machine was disturbed: CPU pressure 60 % (the probe's own verdict: p99)",
            "checks": [], "bound": "machine CPU", "bound_reading": "", "warmup_s": 0.2,
            "disturbance": {"seconds": 2.0, "cpu_pressure": 0.6},
            "cooldown": {"waited_s": 0.0, "open_before": 0, "open_after": 0, "time_wait": 0, "settled": true},
        });
        if let (Some(map), Some(level)) = (v.as_object_mut(), level.as_object()) {
            map.extend(level.clone());
        }
        v
    }

    #[test]
    fn a_disturbed_step_hands_the_search_the_machines_figures() {
        let judged: Judged =
            serde_json::from_value(judged(serde_json::json!({"rate": 100.0}))).unwrap();
        assert_eq!(judged.outcome, Outcome::Disturbed);
        assert_eq!(judged.why(), "CPU pressure 60 %");
    }

    /// #47: what a step varies is typed. A probe's file keeps its `rate` as it always has; a
    /// users step's says `users`, a whole number, and each reads back as what it is.
    #[test]
    fn a_step_says_what_it_varies_in_its_own_key() {
        for (level, key, other, x) in [
            (Level::Rate(1500.0), "rate", "users", 1500.0),
            (Level::Users(40), "users", "rate", 40.0),
        ] {
            let mut j: Judged =
                serde_json::from_value(judged(serde_json::json!({"rate": 1.0}))).unwrap();
            j.level = level;
            let written = serde_json::to_value(&j).unwrap();
            assert_eq!(
                written.get(key).and_then(|v| v.as_f64()),
                Some(x),
                "{written}"
            );
            assert!(written.get(other).is_none(), "{written}");
            assert!(written.get("level").is_none(), "{written}");
            let back: Judged = serde_json::from_value(written).unwrap();
            assert_eq!(back.level, level);
            assert_eq!(back.level.value(), x);
        }
        let users: Judged =
            serde_json::from_value(judged(serde_json::json!({"users": 7}))).unwrap();
        assert_eq!(users.level, Level::Users(7));
    }
}
