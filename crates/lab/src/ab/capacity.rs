//! The capacity of A and B at `--slo`, by two range searches in lockstep (#48 §3): at each
//! step both searches name their next rate, and their two probes run back to back in a random
//! order, balanced over pairs of steps as the rounds are ([`Order`]). Each search is the
//! capacity experiment's own (`capacity::search`, the range rule) and sees only its side's
//! probes. What lockstep buys is time: the two probes of a step run seconds apart, so the
//! machine's drift over the minutes of a search (nginx's peak moved 21-25 %, #48) meets both
//! searches alike, where two searches run one after the other each meet their own machine.
//!
//! The verdict is `compare`'s on two searches ([`crate::capacity::compare::decide`]): each
//! capacity read as its bracket [L, M], the changes the two brackets allow judged against the
//! floor (`capacity>-5%`). What `compare` adds for searches taken minutes apart (the
//! machine's reference loop, the spread of the server's own peak) is left out: these two ran
//! in the same minutes.
//!
//! Not for: running a probe (`capacity::probe`), nor the page (`webscope_pages::ab_capacity`).

use std::collections::VecDeque;
use std::time::Duration;

use super::{Order, Side};
use crate::capacity::compare::{self, Bracket, Decision};
use crate::capacity::probe::Probe;
use crate::capacity::search::{Ending, Plan, Search};
use crate::objective::Outcome;
use crate::results::ab::{AbVerdict, Said};
use crate::results::{EndingRecord, RpsEnding};

/// One side's probe, in a step of the two searches.
#[derive(Debug, Clone, PartialEq)]
pub struct SideProbe {
    /// The server it loads.
    pub side: Side,
    /// The step (from 1) it belongs to: both searches' probes of a step run back to back
    /// (a check's pair, for a check's probe).
    pub step: usize,
    /// A probe of the check after the searches (`ab::check`), not of a search.
    pub check: bool,
    /// Its place in its side's search, its rate and its length.
    pub probe: Probe,
}

impl SideProbe {
    /// Its folder: `a-probe-03-800rps`, or `b-check-02-760rps` for a check's probe.
    pub fn name(&self) -> String {
        if self.check {
            return format!(
                "{}-check-{:02}-{:.0}rps",
                self.side.letter(),
                self.probe.number,
                self.probe.rate
            );
        }
        format!("{}-{}", self.side.letter(), self.probe.name())
    }

    /// How the bar says it: "A probe 3 at 800 req/s for 2.0 s", "B check 2 at …".
    pub fn label(&self) -> String {
        let label = self.probe.label();
        if self.check {
            return format!("{} check{}", self.side.upper(), &label["probe".len()..]);
        }
        format!("{} {label}", self.side.upper())
    }

    /// The side and pair of the check's probe whose folder `name` is.
    pub fn check_of(name: &str) -> Option<(Side, usize)> {
        let (letter, rest) = name.split_once("-check-")?;
        let side = [Side::A, Side::B]
            .into_iter()
            .find(|s| letter.len() == 1 && letter.starts_with(s.letter()))?;
        Some((side, rest.split('-').next()?.parse().ok()?))
    }

    /// The side whose folder `name` is, and whether it is a probe's at all.
    pub fn side_of(name: &str) -> Option<Side> {
        [Side::A, Side::B]
            .into_iter()
            .find(|s| name.starts_with(&format!("{}-probe-", s.letter())))
    }
}

/// The two searches and the step under way.
pub struct Lockstep {
    a: Search,
    b: Search,
    order: Order,
    /// The probes of the step under way not yet handed out.
    queue: VecDeque<SideProbe>,
    steps: usize,
}

impl Lockstep {
    /// Two searches by one plan.
    pub fn new(plan: Plan, order: Order) -> Lockstep {
        Lockstep {
            a: Search::new(plan.clone()),
            b: Search::new(plan),
            order,
            queue: VecDeque::new(),
            steps: 0,
        }
    }

    /// `side`'s search.
    pub fn search(&self, side: Side) -> &Search {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }

    /// Steps begun so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// What `side`'s probe at `rate` said, and why ([`Search::record`]).
    pub fn record(&mut self, side: Side, rate: f64, outcome: Outcome, why: &str) {
        match side {
            Side::A => self.a.record(rate, outcome, why),
            Side::B => self.b.record(rate, outcome, why),
        }
    }

    /// The next probe: the second of the step under way, else the first of a new step (each
    /// search's next rate, in the step's order); None once both searches have ended. Every
    /// probe handed out is [`Lockstep::record`]ed before the next call. `length`: a probe's
    /// length at a rate, given the search's length factor there.
    pub fn next(&mut self, length: impl Fn(f64, u32) -> Duration) -> Option<SideProbe> {
        if let Some(p) = self.queue.pop_front() {
            return Some(p);
        }
        let order = self.order.sides();
        let mut wanted = Vec::new();
        for side in order {
            let search = match side {
                Side::A => &mut self.a,
                Side::B => &mut self.b,
            };
            if let Some(rate) = search.next_rate() {
                wanted.push((side, search.probes() + 1, rate, search.length_factor(rate)));
            }
        }
        if wanted.is_empty() {
            return None;
        }
        self.steps += 1;
        for (side, number, rate, factor) in wanted {
            self.queue.push_back(SideProbe {
                side,
                step: self.steps,
                check: false,
                probe: Probe {
                    number,
                    rate,
                    length: length(rate, factor),
                },
            });
        }
        self.queue.pop_front()
    }
}

/// A search's ending read as `compare` reads a stored one: its bracket, without the
/// machine's readings (see the module's doc).
fn bracket(ending: &Ending) -> Option<Bracket> {
    let (low, high, capacity) = RpsEnding::from(ending).bracket()?;
    Some(Bracket::bare(low, high, capacity))
}

/// The threshold `written` (`capacity>-5%`, the least change `least`) judged on A's and B's
/// endings (None: a search cut before its end), after `steps` steps.
pub fn verdict(
    written: &str,
    least: f64,
    a: Option<&Ending>,
    b: Option<&Ending>,
    steps: usize,
) -> AbVerdict {
    let how =
        |e: Option<&Ending>| e.map_or("cut before its end".into(), |e| RpsEnding::from(e).how());
    let (base, cand) = match (a.and_then(bracket), b.and_then(bracket)) {
        (Some(base), Some(cand)) => (base, cand),
        (base, _) => {
            let (side, said) = if base.is_none() {
                ("A", how(a))
            } else {
                ("B", how(b))
            };
            return AbVerdict {
                threshold: written.to_string(),
                verdict: Said::Undecided,
                sentence: format!(
                    "B against A: {written}: CANNOT BE DECIDED ({side}'s search established no capacity: {said})"
                ),
            };
        }
    };
    let decided = compare::decide(&base, &cand, least);
    AbVerdict {
        threshold: written.to_string(),
        verdict: match decided.decision {
            Decision::Pass => Said::Within,
            Decision::Fail => Said::Crossed,
            Decision::CannotDecide => Said::Undecided,
        },
        sentence: format!(
            "B against A: {}, two searches in lockstep over {steps} steps: {} {written} ({})",
            compare::sentence(&base, &cand),
            decided.decision.said(),
            decided.why
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::search::Rule;

    fn plan() -> Plan {
        Plan {
            precision: 0.05,
            max_probes: 40,
            rule: Rule::Range,
            ..Plan::new(100.0)
        }
    }

    /// Runs both searches against servers that meet the objective up to `a` and `b` req/s;
    /// the probes in the order they were handed out.
    fn run(a: f64, b: f64, seed: u64) -> (Lockstep, Vec<SideProbe>) {
        let mut l = Lockstep::new(plan(), Order::seeded(seed));
        let mut taken = Vec::new();
        while let Some(p) = l.next(|_, f| Duration::from_secs(u64::from(f))) {
            let limit = if p.side == Side::A { a } else { b };
            let outcome = if p.probe.rate <= limit {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            l.record(p.side, p.probe.rate, outcome, "");
            taken.push(p);
        }
        (l, taken)
    }

    #[test]
    fn each_step_runs_both_searches_back_to_back_in_a_balanced_order() {
        let (l, taken) = run(4_000.0, 4_000.0, 7);
        // Identical servers: the two searches ask for the same rates, step by step.
        let steps = l.steps();
        assert_eq!(taken.len(), 2 * steps);
        let mut b_first = 0;
        for pair in taken.chunks(2) {
            assert_eq!(pair[0].step, pair[1].step);
            assert_ne!(pair[0].side, pair[1].side);
            assert_eq!(pair[0].probe.rate, pair[1].probe.rate);
            b_first += usize::from(pair[0].side == Side::B);
        }
        // Balanced over pairs of steps: at most one more of either order.
        assert!(
            b_first.abs_diff(steps - b_first) <= 1,
            "{b_first} of {steps}"
        );
        // Each side's probes are numbered in its own search.
        let numbers: Vec<usize> = taken
            .iter()
            .filter(|p| p.side == Side::A)
            .map(|p| p.probe.number)
            .collect();
        assert_eq!(numbers, (1..=numbers.len()).collect::<Vec<_>>());
        assert_eq!(SideProbe::side_of(&taken[0].name()), Some(taken[0].side));
        assert_eq!(SideProbe::side_of("round-001-a"), None);
    }

    #[test]
    fn a_server_at_half_the_capacity_crosses_and_an_identical_one_does_not() {
        let (l, _) = run(4_000.0, 2_000.0, 3);
        let ending = |s| l.search(s).ending().cloned();
        let (a, b) = (ending(Side::A), ending(Side::B));
        let v = verdict("capacity>-5%", -0.05, a.as_ref(), b.as_ref(), l.steps());
        assert_eq!(v.verdict, Said::Crossed, "{}", v.sentence);
        assert!(
            v.sentence.starts_with("B against A: capacity ")
                && v.sentence.contains("CROSSED capacity>-5%"),
            "{}",
            v.sentence
        );
        assert!(
            v.sentence.contains("two searches in lockstep over"),
            "{}",
            v.sentence
        );

        let (l, _) = run(4_000.0, 4_000.0, 3);
        let ending = |s| l.search(s).ending().cloned();
        let (a, b) = (ending(Side::A), ending(Side::B));
        // Brackets of ±5 % on each side allow a drop of about 10 %: within -20 %, and
        // never crossed at -5 %.
        let v = verdict("capacity>-20%", -0.20, a.as_ref(), b.as_ref(), l.steps());
        assert_eq!(v.verdict, Said::Within, "{}", v.sentence);
        let v = verdict("capacity>-5%", -0.05, a.as_ref(), b.as_ref(), l.steps());
        assert_ne!(v.verdict, Said::Crossed, "{}", v.sentence);
    }

    #[test]
    fn a_search_cut_short_cannot_decide_and_says_whose() {
        let (l, _) = run(4_000.0, 4_000.0, 1);
        let a = l.search(Side::A).ending().cloned();
        let v = verdict("capacity>-5%", -0.05, a.as_ref(), None, l.steps());
        assert_eq!(v.verdict, Said::Undecided);
        assert!(
            v.sentence
                .contains("B's search established no capacity: cut before its end"),
            "{}",
            v.sentence
        );
    }
}
