//! The `capacity` experiment on the runner: an adaptive sweep whose points are probes (an
//! offered rate and the probe's number, so that repeated rates get folders of their own),
//! chosen by [`Search`] from the outcomes of the probes so far, each run by
//! [`probe::run`]. The search's plan is written once as
//! `capacity.json` in the experiment's folder, so that the page replays the search from the
//! probes' `probe.json` files alone ([`replay`]).
//!
//! `--repeat` is the search's, not the runner's: it repeats the probes at the bracket's two
//! boundary rates (at least N probes each, however soon they agree), and the search runs once.
//! Rounds of the whole search would give N capacities with no bracket between them; repeats
//! at the boundary measure the noise exactly where it decides the figure.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::probe::{self, Probe};
use super::search::{Ending, Plan, Rule, Search, CONFIRM};
use super::Settings;
use crate::capacity::said::said_of;
use crate::runner::{Ctx, Next, Points, Run, SoFar, Sweep};
use crate::step::{Judged, Ledger};
use crate::Options;
use webscope_record::{read_json, write_json, RunRecord};

/// Most probes of one search: the bar counts them, the search stops there. Confirming both
/// boundaries, and taking undecided and disturbed probes again, costs about ten more than a
/// search on single probes took (30).
pub const MOST_PROBES: usize = 40;

/// What the page needs to replay the search: `capacity.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recorded {
    /// The objective, stored as `--slo` reads it (the goodput floor added), parsed once here.
    pub slo: webscope_load::slo::Slo,
    /// The first rate offered, req/s.
    pub from: f64,
    /// Each step of the growth multiplied the rate by this.
    pub growth: f64,
    /// The bracket closed when (fail − pass) / pass was at most this (0.05: 5 %).
    pub precision: f64,
    /// Probes at each boundary rate at least.
    pub repeat: u32,
    /// Written by searches before #33 (their boundary rates passed on `need` of `repeat`
    /// probes); later ones by [`Recorded::rule`].
    #[serde(default)]
    pub need: u32,
    /// The search's budget: at most this many probes in all.
    pub max_probes: usize,
    /// `--every-probe`: a rate passed only when all its probes did (searches before it: the
    /// majority).
    #[serde(default)]
    pub every: bool,
    /// Each rate settled by a sign test, or left unsettled (#33; searches before it: the
    /// majority).
    #[serde(default)]
    pub settled: bool,
    /// The rule, by name (searches since the range rule, #48; before it: `every` and
    /// `settled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
    /// `constant` or `poisson`.
    pub arrivals: String,
    /// Length of each probe, seconds (its warm-up not counted).
    pub probe_s: f64,
    /// The warm-up before each probe, seconds.
    pub warmup_s: f64,
}

impl Recorded {
    /// How the search decided each rate.
    pub fn rule(&self) -> Rule {
        if let Some(rule) = self.rule {
            return rule;
        }
        match (self.every, self.settled) {
            (true, _) => Rule::Every,
            (false, true) => Rule::Settled,
            (false, false) => Rule::Majority,
        }
    }

    /// The search's plan.
    pub fn plan(&self) -> Plan {
        Plan {
            from: self.from,
            growth: self.growth,
            precision: self.precision,
            repeat: self.repeat,
            max_probes: self.max_probes,
            rule: self.rule(),
            ..Plan::new(self.from)
        }
    }
}

/// The experiment: the search and the outcomes of the probes it has taken.
pub struct Capacity {
    settings: Settings,
    search: Search,
    /// The runs already handed to the search.
    recorded: usize,
    /// Each measured probe's outcome, by folder name.
    ledger: Ledger,
    /// Whether the last probe ran on a disturbed machine (the next waits for a quiet one).
    last_disturbed: bool,
    /// What each probe measured so far judged, in order.
    judged: Vec<Judged>,
}

pub(crate) fn plan(options: &Options) -> Plan {
    Plan {
        precision: options.capacity.precision,
        repeat: (options.repeat as u32).max(CONFIRM),
        max_probes: MOST_PROBES,
        rule: options.capacity.rule,
        ..Plan::new(options.capacity.from)
    }
}

impl Sweep for Capacity {
    const NAME: &'static str = "capacity";
    const FACTOR: &'static str = "offered rate (req/s)";
    type Point = Probe;

    fn points(_: &Options) -> Points<Probe> {
        Points::Adaptive { most: MOST_PROBES }
    }

    /// The search repeats its own boundary probes (see the module's note): one round.
    fn rounds(_: &Options) -> usize {
        1
    }

    fn start(ctx: &Ctx<'_>) -> anyhow::Result<Capacity> {
        if !ctx.options.quiet {
            if let Some(line) = long_first_probes(ctx.options, ctx.duration) {
                // A hidden bar (stderr not a terminal: a log, CI) prints nothing: the line
                // goes to stderr itself, as the lab's other lines do.
                if ctx.bar.is_hidden() {
                    eprintln!("{line}");
                } else {
                    ctx.bar.println(line);
                }
            }
        }
        Ok(Capacity {
            settings: ctx.options.capacity.clone(),
            search: Search::new(plan(ctx.options)),
            recorded: 0,
            ledger: Ledger::default(),
            last_disturbed: false,
            judged: Vec::new(),
        })
    }

    fn next(&mut self, so_far: &SoFar<'_, Probe>, ctx: &Ctx<'_>) -> Next<Probe> {
        for done in &so_far.runs[self.recorded..] {
            let (outcome, why) = self.ledger.of(&done.name);
            self.search.record(done.point.rate, outcome, why);
        }
        self.recorded = so_far.runs.len();
        match self.search.next_rate() {
            Some(rate) => Next::Run(Probe {
                number: so_far.runs.len() + 1,
                rate,
                length: probe::length(
                    rate,
                    ctx.duration,
                    &self.settings.slo,
                    self.search.length_factor(rate),
                ),
            }),
            None if so_far.stopped.is_some() => Next::Done,
            // As the page says it: a generator's ending quotes what triggered it.
            None => Next::Stop(self.search.ending().map_or("the search ended".into(), |e| {
                said_of(e, &self.judged, |_| None)
            })),
        }
    }

    fn name(&self, probe: &Probe) -> String {
        probe.name()
    }

    fn label(&self, run: &Run<'_, Probe>) -> String {
        run.point.label()
    }

    fn measure(&mut self, run: &Run<'_, Probe>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        if let Some(dir) = run.dir.parent() {
            write_plan(dir, ctx)?;
        }
        let (record, judged) =
            probe::run(run.point, run.dir, ctx, &self.settings, self.last_disturbed)?;
        self.last_disturbed = self.ledger.keep(run.name, &judged);
        self.judged.push(judged);
        Ok(record)
    }
}

/// Writes `capacity.json` (the plan and the probes' length) into the experiment's folder.
pub(crate) fn write_plan(dir: &Path, ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let path = dir.join("capacity.json");
    if path.exists() {
        return Ok(());
    }
    let plan = plan(ctx.options);
    let settings = &ctx.options.capacity;
    write_json(
        &path,
        &Recorded {
            slo: settings.slo.clone(),
            from: plan.from,
            growth: plan.growth,
            precision: plan.precision,
            repeat: plan.repeat,
            need: plan.repeat / 2 + 1,
            max_probes: plan.max_probes,
            every: plan.rule == Rule::Every,
            settled: plan.rule == Rule::Settled,
            rule: Some(plan.rule),
            arrivals: match settings.arrivals {
                webscope_load::Arrivals::Constant => "constant".into(),
                webscope_load::Arrivals::Poisson => "poisson".into(),
            },
            probe_s: ctx.duration.as_secs_f64(),
            warmup_s: crate::step::warmup_length(ctx.duration).as_secs_f64(),
        },
    )
}

/// The search replayed from the probes on disk, in their order: how it ended (None when it
/// was cut before its end).
pub fn replay(plan: Plan, probes: &[Judged]) -> Option<Ending> {
    let mut search = Search::new(plan);
    for judged in probes {
        // The search asks before each probe; the replay asks too, so that it ends the same.
        search.next_rate()?;
        search.record(judged.level.value(), judged.outcome, &judged.why());
    }
    search.next_rate();
    search.ending().cloned()
}

/// The experiment's plan and its probes' verdicts, from its folder (the probes in the order
/// of `runs`).
pub fn read(dir: &Path, runs: &[String]) -> anyhow::Result<(Recorded, Vec<Judged>)> {
    let recorded: Recorded = read_json(&dir.join("capacity.json"))?;
    let probes = runs
        .iter()
        .map(|name| read_json::<Judged>(&dir.join(name).join("probe.json")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((recorded, probes))
}

/// #52: why the first probes are long, said once on the console before they run: a low
/// first rate needs many seconds to offer the requests the objective is decided on (a p99
/// needs 2 000, errors<=0.1 % 3 838), so a user who asked for 2-s probes is not left
/// wondering at 38-s ones.
pub fn long_first_probes(
    options: &crate::Options,
    duration: std::time::Duration,
) -> Option<String> {
    let settings = &options.capacity;
    let first = probe::length(settings.from, duration, &settings.slo, 1);
    if first <= duration + std::time::Duration::from_millis(50) {
        return None;
    }
    let needed = crate::objective::needed_requests(&settings.slo);
    let short = needed as f64 / duration.as_secs_f64().max(1e-3);
    Some(format!(
        "capacity: the first probes, at {} req/s, run {} rather than {}: {} needs {} requests to be decided; the probes shorten as the rate grows (--from {} starts where a probe takes {})",
        webscope_report::human::sig3(settings.from),
        webscope_report::human::duration(first.as_secs_f64()),
        webscope_report::human::duration(duration.as_secs_f64()),
        settings.slo,
        webscope_report::human::count(needed),
        short.ceil(),
        webscope_report::human::duration(duration.as_secs_f64()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #52: the README's example (the default objective, 2-s probes from 100 req/s) ran
    /// 38-s probes without a word; the console now says why, and where probes are short.
    #[test]
    fn long_first_probes_are_explained_once() {
        let options = crate::tests_options(false);
        let line = long_first_probes(&options, std::time::Duration::from_secs(2)).unwrap();
        assert!(
            line.starts_with(
                "capacity: the first probes, at 100 req/s, run 38.4 s rather than 2 s: "
            ),
            "{line}"
        );
        assert!(line.contains("needs 3 838 requests"), "{line}");
        assert!(
            line.contains("--from 1919 starts where a probe takes 2 s"),
            "{line}"
        );
        // Probes as long as asked: nothing to say.
        assert_eq!(
            long_first_probes(&options, std::time::Duration::from_secs(60)),
            None
        );
    }

    use crate::objective::Outcome;

    fn judged(number: usize, rate: f64, outcome: Outcome) -> Judged {
        Judged {
            number,
            level: crate::step::Level::Rate(rate),
            outcome,
            reason: String::new(),
            checks: Vec::new(),
            not_sent_share: None,
            bound: webscope_bottleneck::Bound::Latency,
            bound_reading: String::new(),
            warmup_s: 0.2,
            probe_s: 1.0,
            disturbance: None,
            cooldown: Default::default(),
            reference: None,
        }
    }

    #[test]
    fn the_page_replays_the_search_to_the_same_end() {
        // A server that holds 300 req/s, searched from 100: the probes as the lab took them.
        let mut search = Search::new(Plan::new(100.0));
        let mut probes = Vec::new();
        while let Some(rate) = search.next_rate() {
            let outcome = if rate <= 300.0 {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            probes.push(judged(probes.len() + 1, rate, outcome));
            search.record(rate, outcome, "");
        }
        let ending = search.ending().cloned();
        assert_eq!(replay(Plan::new(100.0), &probes), ending);
        // Cut before its end: no ending.
        assert_eq!(replay(Plan::new(100.0), &probes[..2]), None);
    }
}
