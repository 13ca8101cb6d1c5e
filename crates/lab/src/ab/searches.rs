//! The capacity part of the `ab` experiment as the runner takes it: the two searches'
//! probes handed out in lockstep ([`Lockstep`]), each run by the capacity experiment's own
//! probe (`capacity::probe::run`: warm-up, the open loop, the objective's verdict, the
//! machine watched, the cool-down) against its side's server, and its outcome handed back to
//! its side's search. When the two brackets cross the threshold, paired probes check the
//! crossing before it is said ([`super::check`]). The plan is written once as the experiment's `capacity.json`, so that
//! the page replays both searches from the probes' `probe.json` files, as the capacity page
//! replays one.

use std::path::Path;

use super::capacity::{self as ab_capacity, Lockstep, SideProbe};
use super::check::{Check, Rates};
use super::{Order, Side, Step};
use crate::capacity::experiment::{plan, write_plan};
use crate::capacity::probe;
use crate::results::ab::Said;
use crate::runner::{Ctx, Done, Next};
use crate::step::Ledger;
use crate::target::Target;
use crate::Options;
use webscope_record::RunRecord;

/// The two searches and what their probes said.
pub struct Searches {
    lockstep: Lockstep,
    /// Each measured probe's outcome, by folder name.
    ledger: Ledger,
    /// The runs already handed to the searches.
    recorded: usize,
    /// Whether each side's last probe ran on a disturbed machine (its next waits).
    last_disturbed: [bool; 2],
    /// The threshold as written and its least change (−0.05): whether a check is needed.
    threshold: (String, f64),
    /// The check of a crossing, once the searches have ended with one.
    check: Option<Check>,
    ended: bool,
}

impl Searches {
    /// Both searches by the lab's capacity plan (`--slo`, `--from`, `--precision`, the range
    /// rule), judged by `threshold` (as written, and its least change).
    pub fn new(options: &Options, threshold: (String, f64)) -> Searches {
        Searches {
            lockstep: Lockstep::new(plan(options), Order::new()),
            ledger: Ledger::default(),
            recorded: 0,
            last_disturbed: [false; 2],
            threshold,
            check: None,
            ended: false,
        }
    }

    /// The next probe, after handing the searches what the runs since the last call said.
    pub fn next(&mut self, runs: &[Done<Step>], ctx: &Ctx<'_>) -> Next<Step> {
        for done in &runs[self.recorded.min(runs.len())..] {
            if let Step::Probe(p) = &done.point {
                let (outcome, why) = self.ledger.of(&done.name);
                match &mut self.check {
                    Some(check) if p.check => check.record(p.side, outcome),
                    _ => self.lockstep.record(p.side, p.probe.rate, outcome, why),
                }
            }
        }
        self.recorded = runs.len();
        let slo = &ctx.options.capacity.slo;
        let length = |rate, factor| probe::length(rate, ctx.duration, slo, factor);
        if self.check.is_none() {
            if let Some(p) = self.lockstep.next(length) {
                return Next::Run(Step::Probe(p));
            }
            self.check = self.crossing().map(|rates| Check::new(rates, Order::new()));
        }
        if let Some(p) = self
            .check
            .as_mut()
            .and_then(|c| c.next(|rate| length(rate, 1)))
        {
            return Next::Run(Step::Probe(p));
        }
        if self.ended {
            return Next::Done;
        }
        self.ended = true;
        let checked = self.check.as_ref().map_or(String::new(), |c| {
            format!(
                "; their crossing checked by {}",
                webscope_report::human::plural(c.tried() as u64, "pair")
            )
        });
        Next::Stop(format!(
            "both capacity searches ended after {} steps{checked}",
            self.lockstep.steps()
        ))
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
