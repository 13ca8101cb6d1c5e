//! A capacity crossing checked by paired probes before it is said (#48). Two searches of one
//! server in lockstep still put its knee 28 % apart in one of two A/A experiments (stop 57),
//! and five quiet searches of one nginx put their lower edges 13.6-48 % apart: near its knee
//! the server is bistable, and where a search meets its first miss is partly chance. So the
//! brackets' CROSSED (`capacity>-5%`) is a claim, and this checks it.
//!
//! **The check:** A at its search's lower edge L, B at L × (1 + least) (34 200 req/s for
//! `capacity>-5%` and L = 36 000), the two back to back in a random order balanced over pairs,
//! up to [`PAIRS`] pairs whose two probes both passed or failed. If B's capacity is at least
//! (1 + least) times A's (B's pass/miss curve over the rate is A's, scaled), B misses at its
//! rate no more often than A at L, so the pairs where exactly one side missed favour neither:
//! an exact one-sided sign test on them (McNemar's) at [`ALPHA`] confirms that B is worse.
//! The two probes of a pair run seconds apart, so a drift of the machine meets both; the
//! test needs no model of the knee, only that misses grow with the rate.
//!
//! It stops early only where the pairs left could not change the answer (six pairs where
//! both met the objective, say), so stopping costs nothing in false alarms. A pair with a
//! probe disturbed, undecided or bound by the generator is not counted, and another is taken
//! (at most [`MOST_TRIED`]).
//!
//! Not for: the searches (`capacity`), running a probe (`capacity::probe`), the page.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::capacity::SideProbe;
use super::{Order, Side};
use crate::capacity::probe::Probe;
use crate::capacity::search::Ending;
use crate::objective::Outcome;
use crate::results::ab::{AbVerdict, Said, Tally};
use crate::results::{EndingRecord, RpsEnding};
use webscope_report::human;

/// Counted pairs at most: enough for the sign test to confirm at 5 % when B misses alone in
/// 9 of 10 (or 5 of 5, 7 of 8 where the rest both met or both missed).
pub const PAIRS: usize = 10;

/// Pairs taken at most, counted or not.
pub const MOST_TRIED: usize = 2 * PAIRS;

/// The sign test's level: a crossing is confirmed when p is at or under it.
pub const ALPHA: f64 = 0.05;

/// The rates a check probes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// A's: its search's lower edge L, req/s.
    pub a: f64,
    /// B's: L × (1 + least), req/s.
    pub b: f64,
}

impl Rates {
    /// The check's rates from A's ending and the threshold's least change (−0.05); None when
    /// A's search confirmed no rate.
    pub fn of(a: &Ending, least: f64) -> Option<Rates> {
        let (low, _, _) = RpsEnding::from(a).bracket()?;
        (low > 0.0).then_some(Rates {
            a: low,
            b: low * (1.0 + least),
        })
    }

    /// `side`'s rate.
    pub fn of_side(&self, side: Side) -> f64 {
        match side {
            Side::A => self.a,
            Side::B => self.b,
        }
    }
}

/// The sign test on a tally: its p, and whether the check is over.
pub trait Decide {
    /// The one-sided sign test's p on the pairs where one side alone missed: the chance of
    /// B missing alone this often or more were the two equally likely to.
    fn p(&self) -> f64;
    /// Whether the check is over, and what it found: Some(true) confirmed, Some(false) not,
    /// None to go on. Over after [`PAIRS`] counted or [`MOST_TRIED`] taken, or sooner where
    /// the pairs left could not change the answer.
    fn settled(&self) -> Option<bool>;
}

impl Decide for Tally {
    fn p(&self) -> f64 {
        p_with(self, 0, 0)
    }

    fn settled(&self) -> Option<bool> {
        let tried = self.counted() + self.not_counted;
        let left = PAIRS.saturating_sub(self.counted());
        if left == 0 || tried >= MOST_TRIED {
            return Some(self.p() <= ALPHA);
        }
        if p_with(self, left, 0) > ALPHA {
            return Some(false);
        }
        if p_with(self, 0, left) <= ALPHA {
            return Some(true);
        }
        None
    }
}

/// The sign test's p with `more_b` and `more_a` pairs added where one side alone missed.
fn p_with(t: &Tally, more_b: usize, more_a: usize) -> f64 {
    let b = t.b_missed + more_b;
    webscope_model::stats::sign_test(b as u32, (b + t.a_missed + more_a) as u32).unwrap_or(1.0)
}

/// The check under way: its rates, the pairs' outcomes, the probes of the pair under way.
pub struct Check {
    rates: Rates,
    order: Order,
    pairs: Vec<(Outcome, Outcome)>,
    /// The pair under way: A's and B's outcomes as they come.
    pending: [Option<Outcome>; 2],
    queue: VecDeque<SideProbe>,
    tried: usize,
}

impl Check {
    /// A check at `rates`.
    pub fn new(rates: Rates, order: Order) -> Check {
        Check {
            rates,
            order,
            pairs: Vec::new(),
            pending: [None; 2],
            queue: VecDeque::new(),
            tried: 0,
        }
    }

    /// The pairs so far.
    pub fn tally(&self) -> Tally {
        Tally::of(&self.pairs)
    }

    /// What `side`'s probe of the pair under way said.
    pub fn record(&mut self, side: Side, outcome: Outcome) {
        self.pending[usize::from(side == Side::B)] = Some(outcome);
        if let [Some(a), Some(b)] = self.pending {
            self.pairs.push((a, b));
            self.pending = [None; 2];
        }
    }

    /// The next probe: the second of the pair under way, else the first of a new pair; None
    /// once the check is settled. `length`: a probe's length at a rate.
    pub fn next(&mut self, length: impl Fn(f64) -> Duration) -> Option<SideProbe> {
        if let Some(p) = self.queue.pop_front() {
            return Some(p);
        }
        if self.tally().settled().is_some() {
            return None;
        }
        self.tried += 1;
        for side in self.order.sides() {
            let rate = self.rates.of_side(side);
            self.queue.push_back(SideProbe {
                side,
                step: self.tried,
                check: true,
                probe: Probe {
                    number: self.tried,
                    rate,
                    length: length(rate),
                },
            });
        }
        self.queue.pop_front()
    }

    /// Pairs begun.
    pub fn tried(&self) -> usize {
        self.tried
    }
}

/// The searches' verdict `brackets` after the check: unchanged unless it said CROSSED; then
/// CROSSED only when the check (at `rates`, its pairs `pairs`) confirmed it, and cannot be
/// decided otherwise (a check cut short, or none).
pub fn judge(brackets: AbVerdict, rates: Option<Rates>, pairs: &[(Outcome, Outcome)]) -> AbVerdict {
    if brackets.verdict != Said::Crossed {
        return brackets;
    }
    let Some(rates) = rates else {
        return undecided(
            brackets,
            "A's search confirmed no rate to check it at".into(),
        );
    };
    let t = Tally::of(pairs);
    let how = format!(
        "{} of probes, A at its lower edge {} and B at {} back to back in a random order: B missed the objective where A met it in {}, A where B met it in {} (both met {}, both missed {}{}; sign test p = {:.3})",
        human::plural(t.counted() as u64, "pair"),
        human::rate(rates.a),
        human::rate(rates.b),
        t.b_missed,
        t.a_missed,
        t.both_met,
        t.both_missed,
        if t.not_counted > 0 {
            format!(", {} not counted", t.not_counted)
        } else {
            String::new()
        },
        t.p()
    );
    match t.settled() {
        Some(true) => AbVerdict {
            sentence: format!("{}; confirmed by {how}", brackets.sentence),
            ..brackets
        },
        Some(false) => undecided(
            brackets,
            format!("{how} did not confirm it: where each search met its first miss was chance"),
        ),
        None => undecided(brackets, format!("the check was cut short after {how}")),
    }
}

/// `brackets`' CROSSED held back, and why.
fn undecided(brackets: AbVerdict, why: String) -> AbVerdict {
    AbVerdict {
        verdict: Said::Undecided,
        sentence: format!(
            "B against A: {}: CANNOT BE DECIDED: the searches said CROSSED ({}), but {why}",
            brackets.threshold, brackets.sentence
        ),
        threshold: brackets.threshold,
    }
}

#[cfg(test)]
mod tests;
