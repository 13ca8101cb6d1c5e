//! The capacity part of the `ab` experiment as the runner takes it: the two searches'
//! probes handed out in lockstep ([`Lockstep`]), each run by the capacity experiment's own
//! probe (`capacity::probe::run`: warm-up, the open loop, the objective's verdict, the
//! machine watched, the cool-down) against its side's server, and its outcome handed back to
//! its side's search ([`Probing`]). When the two brackets cross the threshold, paired probes
//! check the crossing before it is said ([`mod@super::check`]). The plan is written once as the
//! experiment's `capacity.json`, so that the page replays both searches from the probes'
//! `probe.json` files, as the capacity page replays one.

use std::path::Path;
use std::time::Duration;

use super::capacity::{self as ab_capacity, Lockstep, SideProbe};
use super::check::{Check, Rates};
use super::{Order, Side, Step};
use crate::capacity::experiment::{plan, write_plan};
use crate::capacity::probe;
use crate::capacity::search::Plan;
use crate::objective::Outcome;
use crate::results::ab::Said;
use crate::runner::{Ctx, Done, Next};
use crate::step::Ledger;
use crate::target::Target;
use crate::Options;
use webscope_record::RunRecord;

/// The two searches, then the check of their crossing: which probe comes next, from what
/// the probes before said. Pure, so that the whole sequence is tested without servers.
pub struct Probing {
    lockstep: Lockstep,
    /// The threshold as written and its least change (−0.05): whether a check is needed.
    threshold: (String, f64),
    /// The check of a crossing, once the searches have ended with one.
    check: Option<Check>,
}

impl Probing {
    /// The searches by `plan`, judged by `threshold` (as written, and its least change).
    pub fn new(plan: Plan, threshold: (String, f64)) -> Probing {
        Probing {
            lockstep: Lockstep::new(plan, Order::new()),
            threshold,
            check: None,
        }
    }

    /// What probe `p` said, and why.
    pub fn record(&mut self, p: &SideProbe, outcome: Outcome, why: &str) {
        match &mut self.check {
            Some(check) if p.check => check.record(p.side, outcome),
            _ => self.lockstep.record(p.side, p.probe.rate, outcome, why),
        }
    }

    /// The next probe: the searches' (in lockstep), then the check's when their brackets
    /// crossed the threshold; None once both are over. `length`: a probe's length at a rate,
    /// given the search's length factor there.
    pub fn next(&mut self, length: impl Fn(f64, u32) -> Duration) -> Option<SideProbe> {
        if self.check.is_none() {
            if let Some(p) = self.lockstep.next(&length) {
                return Some(p);
            }
            self.check = self.crossing().map(|rates| Check::new(rates, Order::new()));
        }
        self.check.as_mut()?.next(|rate| length(rate, 1))
    }

    /// Why it is over, in words.
    pub fn ended(&self) -> String {
        let checked = self.check.as_ref().map_or(String::new(), |c| {
            format!(
                "; their crossing checked by {}",
                webscope_report::human::plural(c.tried() as u64, "pair")
            )
        });
        format!(
            "both capacity searches ended after {} steps{checked}",
            self.lockstep.steps()
        )
    }

    /// The check's rates, when both searches ended and their brackets cross the threshold.
    fn crossing(&self) -> Option<Rates> {
        let (a, b) = (
            self.lockstep.search(Side::A).ending()?,
            self.lockstep.search(Side::B).ending()?,
        );
        let (written, least) = &self.threshold;
        let said = ab_capacity::verdict(written, *least, Some(a), Some(b), 0);
        if said.verdict != Said::Crossed {
            return None;
        }
        Rates::of(a, *least)
    }
}

/// The two searches and what their probes said.
pub struct Searches {
    probing: Probing,
    /// Each measured probe's outcome, by folder name.
    ledger: Ledger,
    /// The runs already handed to the searches.
    recorded: usize,
    /// Whether each side's last probe ran on a disturbed machine (its next waits).
    last_disturbed: [bool; 2],
    ended: bool,
}

impl Searches {
    /// Both searches by the lab's capacity plan (`--slo`, `--from`, `--precision`, the range
    /// rule), judged by `threshold` (as written, and its least change).
    pub fn new(options: &Options, threshold: (String, f64)) -> Searches {
        Searches {
            probing: Probing::new(plan(options), threshold),
            ledger: Ledger::default(),
            recorded: 0,
            last_disturbed: [false; 2],
            ended: false,
        }
    }

    /// The next probe, after handing the searches what the runs since the last call said.
    pub fn next(&mut self, runs: &[Done<Step>], ctx: &Ctx<'_>) -> Next<Step> {
        for done in &runs[self.recorded.min(runs.len())..] {
            if let Step::Probe(p) = &done.point {
                let (outcome, why) = self.ledger.of(&done.name);
                self.probing.record(p, outcome, why);
            }
        }
        self.recorded = runs.len();
        let slo = &ctx.options.capacity.slo;
        let length = |rate, factor| probe::length(rate, ctx.duration, slo, factor);
        if let Some(p) = self.probing.next(length) {
            return Next::Run(Step::Probe(p));
        }
        if self.ended {
            return Next::Done;
        }
        self.ended = true;
        Next::Stop(self.probing.ended())
    }

    /// Runs `p` into `run_dir` (the run `name`) against `target`, its side's server.
    pub fn measure(
        &mut self,
        p: &SideProbe,
        name: &str,
        run_dir: &Path,
        ctx: &Ctx<'_>,
        target: &Target,
    ) -> anyhow::Result<RunRecord> {
        if let Some(dir) = run_dir.parent() {
            write_plan(dir, ctx)?;
        }
        // The probe reads its server (port, processes, CPUs) from the context.
        let side_ctx = Ctx { target, ..*ctx };
        let i = usize::from(p.side == Side::B);
        let (record, judged) = probe::run(
            &p.probe,
            run_dir,
            &side_ctx,
            &ctx.options.capacity,
            self.last_disturbed[i],
        )?;
        self.last_disturbed[i] = self.ledger.keep(name, &judged);
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::search::Rule;
    use crate::results::ab::AbVerdict;

    /// Runs the searches and the check against servers that meet the objective up to `a`
    /// and `b` req/s; the verdict the page gives, and the check's pairs.
    fn run(a: f64, b: f64) -> (AbVerdict, usize) {
        let plan = Plan {
            precision: 0.05,
            max_probes: 40,
            rule: Rule::Range,
            ..Plan::new(100.0)
        };
        let threshold = ("capacity>-5%".to_string(), -0.05);
        let mut probing = Probing::new(plan.clone(), threshold);
        let (mut a_probes, mut b_probes, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        let mut pending = [None, None];
        while let Some(p) = probing.next(|_, f| Duration::from_secs(u64::from(f))) {
            let limit = if p.side == Side::A { a } else { b };
            let outcome = if p.probe.rate <= limit {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            probing.record(&p, outcome, "");
            if p.check {
                pending[usize::from(p.side == Side::B)] = Some(outcome);
                if let [Some(x), Some(y)] = pending {
                    pairs.push((x, y));
                    pending = [None, None];
                }
            } else if p.side == Side::A {
                a_probes.push((p.probe.rate, outcome));
            } else {
                b_probes.push((p.probe.rate, outcome));
            }
        }
        assert!(probing.ended().starts_with("both capacity searches ended"));
        let a_end = probing.lockstep.search(Side::A).ending().cloned();
        let b_end = probing.lockstep.search(Side::B).ending().cloned();
        let brackets =
            ab_capacity::verdict("capacity>-5%", -0.05, a_end.as_ref(), b_end.as_ref(), 0);
        let rates = a_end.as_ref().and_then(|e| Rates::of(e, -0.05));
        (
            super::super::check::judge(brackets, rates, &pairs),
            pairs.len(),
        )
    }

    #[test]
    fn a_crossing_is_checked_after_the_searches_and_confirmed_when_b_carries_less() {
        let (said, pairs) = run(4_000.0, 2_000.0);
        assert_eq!(said.verdict, Said::Crossed, "{}", said.sentence);
        assert!(said.sentence.contains("confirmed by"), "{}", said.sentence);
        // B misses alone in every pair: settled after 9.
        assert_eq!(pairs, 9);
    }

    #[test]
    fn identical_servers_need_no_check() {
        let (said, pairs) = run(4_000.0, 4_000.0);
        assert_ne!(said.verdict, Said::Crossed, "{}", said.sentence);
        assert_eq!(pairs, 0);
    }
}
