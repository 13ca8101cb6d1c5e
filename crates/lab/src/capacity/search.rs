//! The search for the largest offered rate that meets an objective: start low, grow
//! geometrically until a probe fails, then bisect between the highest rate that passed and
//! the lowest that failed above it until the bracket is within the precision.
//!
//! Never on one probe: a fail is confirmed before the search moves on it, and the bracket's two
//! boundary rates are confirmed both ways before it closes, so the bracket it reports is the
//! capacity's uncertainty: the highest rate whose pass was confirmed and the lowest above it
//! whose fail was. A rate's verdict is *settled* ([`Rule::Settled`], the default) when its
//! probes agree enough that a server meeting the objective in only half its probes there would
//! agree so rarely ([`SETTLE_ALPHA`], a sign test: 3 of 3, 4 of 4, 5 of 6). A rate whose
//! probes keep disagreeing for [`MOST_AT_RATE`] probes is *unsettled*: the server meets the
//! objective there in some probes and not in others, and such a rate bounds neither end. The
//! bracket then spans the unsettled rates (its ends refined on each side of them), so that
//! two searches of one server report brackets that share a rate, rather than each its own
//! narrow bracket somewhere in the range where the server is a coin's throw: searches of
//! nginx near its knee landed 20 % apart, each bracket ±1.5 %. A probe
//! that could not be decided (a condition's interval straddles its limit) is taken again at
//! the same rate, longer ([`Search::length_factor`]); after [`MOST_UNDECIDED`] such probes the
//! rate is *not shown to meet* the objective and counts as a fail there: a capacity is a rate
//! shown to meet it, and near the knee, where a run's slow requests come in queue episodes,
//! a rate may stay undecided however long it is probed. A probe taken while the machine was
//! disturbed does not count, and is taken again once the caller has waited the disturbance
//! out. A search that cannot get undisturbed probes ends without a capacity.
//!
//! With [`Rule::Every`] (`--every-probe`) a rate passes only when every probe there did:
//! near a knee where slow episodes come and go, the majority of two or three probes is a
//! coin's throw at every rate where the server meets the objective more often than not,
//! and searches of one server landed 20 % apart; every probe asks for the rate it meets
//! reliably, which lies where the pass share falls steeply.
//!
//! Pure: it only chooses rates and reads outcomes, so it is tested against servers whose
//! capacity is known by construction. The caller runs the probes (warm-up, cool-down, the
//! open-loop run, the objective's verdict) and hands back each probe's [`Outcome`], the judge's
//! own, with why where it is undecided or disturbed.

use std::collections::BTreeMap;

use webscope_model::stats::sign_test;

use crate::objective::Outcome;

/// How a search is run.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The first rate offered (requests per second).
    pub from: f64,
    /// Each step of the growth multiplies the rate by this.
    pub growth: f64,
    /// The bracket closes when (fail − pass) / pass is at most this (0.05: 5 %).
    pub precision: f64,
    /// Probes at each boundary rate at least (however soon they agree).
    pub repeat: u32,
    /// Below this rate the search gives up going down.
    pub min_rate: f64,
    /// At most this many probes in all.
    pub max_probes: usize,
    /// How a rate's probes decide it.
    pub rule: Rule,
}

/// How a rate's probes decide whether it passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Settled by a sign test at [`SETTLE_ALPHA`], or unsettled after [`MOST_AT_RATE`]
    /// probes that kept disagreeing (bounding neither end of the bracket).
    #[default]
    Settled,
    /// The majority of `repeat` probes, a third when two disagree; after [`MOST_AT_RATE`]
    /// whatever they say. Searches before the settled rule (replayed as they were).
    Majority,
    /// Passes only when every probe there did (`--every-probe` before #48).
    Every,
    /// The lab's since #48: the capacity as the range it is, reliably up to L (every probe
    /// at L met the objective), tipping between L and U, every probe failing from U
    /// (`search/range.rs`).
    Range,
}

impl Plan {
    /// A search from `from` req/s: doubling, to 5 %, boundaries confirmed, down to 1 req/s, at
    /// most 60 probes. The lab starts from these and sets its own precision, repeats and
    /// probe limit (`experiment::MOST_PROBES`, 40) over them.
    pub fn new(from: f64) -> Plan {
        Plan {
            from,
            growth: 2.0,
            precision: 0.05,
            repeat: CONFIRM,
            min_rate: 1.0,
            max_probes: 60,
            rule: Rule::Settled,
        }
    }
}

/// Probes at a boundary rate before its verdict counts, at least: a fail is confirmed by a
/// second fail before the search moves on it (a scheduler's stall fails one probe, rarely
/// two), a pass by a second pass before it bounds the capacity. The settled rule asks for
/// more (three that agree, [`SETTLE_ALPHA`]).
pub const CONFIRM: u32 = 2;
/// Most probes at one rate: then the rate is unsettled ([`Rule::Settled`]), decided by its
/// majority ([`Rule::Majority`]) or a fail if any failed ([`Rule::Every`]). Six, so that one
/// stalled probe among five that passed still settles the rate (5 of 6 at [`SETTLE_ALPHA`]).
pub const MOST_AT_RATE: u32 = 6;
/// A rate's probes settle its verdict when a server meeting the objective in exactly half its
/// probes there would agree as much at most this often (one-sided sign test): 1/8, so three
/// that agree settle it, and two do not (a coin agrees with itself twice in four throws).
pub const SETTLE_ALPHA: f64 = 0.125;
/// Most undecided probes at one rate, each twice as long as the one before, before the rate
/// counts as failing (not shown to meet the objective).
pub const MOST_UNDECIDED: u32 = 3;
/// Most disturbed probes in a row before the search ends without a capacity.
pub const MOST_DISTURBED: u32 = 3;

/// How a search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The bracket closed: `capacity` passed `passes` of its probes, `fails_at` failed
    /// (`unproven` of those fails: [`MOST_UNDECIDED`] undecided probes each); `unsettled`,
    /// the rates between them whose probes kept disagreeing. [`Rule::Range`]: `capacity` is
    /// L, `fails_at` U, `unsettled` the tipping rates between, and `first_miss` M, the
    /// lowest rate above L where the objective was missed: L's own bracket is [L, M].
    Found {
        /// The highest rate confirmed (L), req/s (users, in a users search).
        capacity: f64,
        /// Probes that passed at `capacity`, of all probes there.
        passes: (u32, u32),
        /// The lowest rate confirmed as failing (U).
        fails_at: f64,
        /// Probes that failed at `fails_at`, of all probes there.
        fails: (u32, u32),
        /// Of those fails, the ones counted for undecided probes.
        unproven: u32,
        /// The rates between whose probes kept disagreeing (None: there were none).
        unsettled: Option<Unsettled>,
        /// M: the lowest rate above L where the objective was missed (None: the majority
        /// rule, or no miss below U).
        first_miss: Option<f64>,
        /// [`Rule::Range`]: the rates below L where one probe failed and [`CONFIRM`] never
        /// did (`range.rs`'s lone misses), lowest first.
        lone_misses: Vec<f64>,
    },
    /// The generator fell behind at `at`; the capacity is above `above` (the highest rate
    /// that passed), beyond what this generator can offer.
    GeneratorBound {
        /// The highest rate that passed (None: none did).
        above: Option<f64>,
        /// The rate where the generator fell behind.
        at: f64,
    },
    /// Even the lowest rate tried failed.
    Below {
        /// The lowest rate tried.
        rate: f64,
    },
    /// A probe at `at` could not be judged (no longer reached by a search: the rate counts
    /// as failing; kept so that a stored report that has it still reads).
    Undecided {
        /// The rate of the probe.
        at: f64,
        /// Why it could not be judged.
        why: String,
    },
    /// The machine stayed disturbed: no probe at `at` could run on a quiet machine.
    /// `passed`: what the search had established before it (#52: a refused search still
    /// says the rates it passed), the highest rate its probes passed, with their count.
    Disturbed {
        /// The rate no probe could run at.
        at: f64,
        /// What disturbed the machine ("steal 30 %").
        why: String,
        /// The highest rate passed before (None: none).
        passed: Option<Passed>,
    },
    /// The probe budget ran out with the bracket still open.
    OutOfProbes {
        /// The highest rate that passed (None: none did).
        pass: Option<f64>,
        /// The lowest rate that failed (None: none did).
        fail: Option<f64>,
    },
}

/// A rate the search confirmed as a pass before it ended without a capacity, and its
/// probes there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Passed {
    /// The rate, req/s (users, in a users search).
    pub rate: f64,
    /// Probes that passed there.
    pub passes: u32,
    /// Probes there in all.
    pub probes: u32,
}

/// The rates inside a found bracket where the server met the objective in some probes and
/// not in others, [`MOST_AT_RATE`] probes each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unsettled {
    /// The lowest of them.
    pub from: f64,
    /// The highest of them.
    pub to: f64,
    /// How many rates they are.
    pub rates: u32,
    /// Probes that passed, of all probes at those rates.
    pub passes: u32,
    /// Probes at those rates in all.
    pub probes: u32,
}

/// The search's state: every probe so far, by rate.
#[derive(Debug, Clone)]
pub struct Search {
    plan: Plan,
    /// Rate (whole requests per second) → (passes, fails).
    tally: BTreeMap<u64, (u32, u32)>,
    /// Rate → undecided probes there.
    undecided: BTreeMap<u64, u32>,
    /// Rate → fails counted there for [`MOST_UNDECIDED`] undecided probes.
    unproven: BTreeMap<u64, u32>,
    /// Disturbed probes since the last one that was not, and the rate they were at.
    disturbed: (u32, u64),
    probes: usize,
    ended: Option<Ending>,
}

/// A rate's verdict on the probes taken there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pass,
    Fail,
    /// [`Rule::Settled`]: [`MOST_AT_RATE`] probes that did not settle.
    Unsettled,
}

impl Search {
    /// A search by `plan`; `repeat` is clamped to sense ([`CONFIRM`] ..= [`MOST_AT_RATE`]).
    pub fn new(mut plan: Plan) -> Search {
        plan.repeat = plan.repeat.clamp(CONFIRM, MOST_AT_RATE);
        plan.growth = plan.growth.max(1.05);
        Search {
            plan,
            tally: BTreeMap::new(),
            undecided: BTreeMap::new(),
            unproven: BTreeMap::new(),
            disturbed: (0, 0),
            probes: 0,
            ended: None,
        }
    }

    /// How much longer than the first the next probe at `rate` should run: 2^k after k
    /// undecided probes there.
    pub fn length_factor(&self, rate: f64) -> u32 {
        let k = self
            .undecided
            .get(&(rate.round() as u64))
            .copied()
            .unwrap_or(0);
        1 << k.min(MOST_UNDECIDED)
    }

    /// The rate to probe next, or None once the search has ended (see [`Search::ending`]).
    pub fn next_rate(&mut self) -> Option<f64> {
        if self.ended.is_some() {
            return None;
        }
        let next = self.choose();
        match next {
            Ok(_) if self.probes >= self.plan.max_probes => {
                // Both ends confirmed, the bracket only wider than the precision: that is
                // still the capacity's uncertainty, and a finding.
                self.ended = Some(match (self.confirmed_bracket(), self.bracket()) {
                    _ if self.plan.rule == Rule::Range => self.out_of_probes_range(),
                    ((Some(lo), Some(hi)), _) => self.found(lo, hi),
                    (_, (pass, fail)) => Ending::OutOfProbes {
                        pass: pass.map(|r| r as f64),
                        fail: fail.map(|r| r as f64),
                    },
                });
                None
            }
            Ok(rate) => Some(rate as f64),
            Err(ending) => {
                self.ended = Some(ending);
                None
            }
        }
    }

    /// What the probe at `rate` (the one [`Search::next_rate`] gave) said: the judge's
    /// outcome, and why where it matters to the ending (a disturbed probe's figures, which a
    /// search that cannot get quiet probes quotes).
    ///
    /// A pass or a fail counts at the rate; a generator-bound probe ends the search; an
    /// undecided one is taken again, [`MOST_UNDECIDED`] of them count as a fail there (the
    /// rate not shown to meet the objective); a disturbed one does not count, and
    /// [`MOST_DISTURBED`] in a row end the search.
    pub fn record(&mut self, rate: f64, outcome: Outcome, why: &str) {
        self.probes += 1;
        let key = rate.round() as u64;
        if outcome != Outcome::Disturbed {
            self.disturbed = (0, 0);
        }
        match outcome {
            Outcome::Pass => self.tally.entry(key).or_default().0 += 1,
            Outcome::Fail => self.tally.entry(key).or_default().1 += 1,
            Outcome::Generator => {
                self.ended = Some(Ending::GeneratorBound {
                    above: self.bracket().0.map(|r| r as f64),
                    at: rate,
                });
            }
            Outcome::Undecided => {
                let n = self.undecided.entry(key).or_default();
                *n += 1;
                if *n >= MOST_UNDECIDED {
                    // Not shown to meet the objective: a fail there (its next probe keeps
                    // the longest length).
                    *n = 0;
                    self.tally.entry(key).or_default().1 += 1;
                    *self.unproven.entry(key).or_default() += 1;
                }
            }
            Outcome::Disturbed => {
                self.disturbed = (self.disturbed.0 + 1, key);
                if self.disturbed.0 >= MOST_DISTURBED {
                    // The highest rate its probes passed so far, confirmed or not: the
                    // count says how firmly.
                    let passed = self.bracket().0.map(|r| {
                        let (passes, fails) = self.tally.get(&r).copied().unwrap_or_default();
                        Passed {
                            rate: r as f64,
                            passes,
                            probes: passes + fails,
                        }
                    });
                    self.ended = Some(Ending::Disturbed {
                        at: rate,
                        why: why.to_string(),
                        passed,
                    });
                }
            }
        }
    }

    /// How the search ended, once it has.
    pub fn ending(&self) -> Option<&Ending> {
        self.ended.as_ref()
    }

    /// Probes taken so far.
    pub fn probes(&self) -> usize {
        self.probes
    }

    /// A rate's verdict so far: the majority of its probes (a tie is no pass), or with
    /// [`Rule::Every`] a pass only while none of them failed; [`State::Unsettled`] once
    /// [`Rule::Settled`]'s probes there ran out without settling; None when it has none.
    fn state(&self, rate: u64) -> Option<State> {
        let &(pass, fail) = self.tally.get(&rate)?;
        if self.plan.rule == Rule::Settled && pass + fail >= MOST_AT_RATE && !self.settled(rate) {
            return Some(State::Unsettled);
        }
        let passes = match self.plan.rule {
            Rule::Every | Rule::Range => fail == 0,
            Rule::Settled | Rule::Majority => pass > fail,
        };
        (pass + fail > 0).then_some(if passes { State::Pass } else { State::Fail })
    }

    /// [`Rule::Settled`]: at least `repeat` probes, and agreeing past [`SETTLE_ALPHA`].
    fn settled(&self, rate: u64) -> bool {
        let (pass, fail) = self.tally.get(&rate).copied().unwrap_or_default();
        pass + fail >= self.plan.repeat
            && pass != fail
            && sign_test(pass.max(fail), pass + fail).is_some_and(|p| p <= SETTLE_ALPHA)
    }

    /// Whether a rate's verdict is confirmed, so that it may bound the bracket:
    /// - [`Rule::Settled`]: settled, or [`MOST_AT_RATE`] probes (then unsettled, bounding
    ///   nothing);
    /// - [`Rule::Majority`]: `repeat` probes and a majority, or [`MOST_AT_RATE`] probes;
    /// - [`Rule::Every`]: a pass by `repeat` probes that all passed, a fail by [`CONFIRM`]
    ///   fails (one fail among passes is probed again: a stall fails one probe, rarely two)
    ///   or by [`MOST_AT_RATE`] probes with a fail among them (a server that misses the
    ///   objective in one probe of six at a rate does not meet it there reliably).
    fn confirmed(&self, rate: u64) -> bool {
        let (pass, fail) = self.tally.get(&rate).copied().unwrap_or_default();
        let runs = pass + fail;
        match self.plan.rule {
            Rule::Settled => self.settled(rate) || runs >= MOST_AT_RATE,
            Rule::Majority => (runs >= self.plan.repeat && pass != fail) || runs >= MOST_AT_RATE,
            Rule::Every | Rule::Range => {
                (fail == 0 && pass >= self.plan.repeat) || fail >= CONFIRM || runs >= MOST_AT_RATE
            }
        }
    }

    /// The highest rate that passes, and the lowest that fails above it.
    fn bracket(&self) -> (Option<u64>, Option<u64>) {
        self.bracket_of(|_| true)
    }

    /// [`Search::bracket`] of confirmed rates only: what the probes have shown when they run
    /// out.
    fn confirmed_bracket(&self) -> (Option<u64>, Option<u64>) {
        self.bracket_of(|r| self.confirmed(r))
    }

    /// The highest rate that passes and the lowest that fails above it, of the rates `counts`.
    fn bracket_of(&self, counts: impl Fn(u64) -> bool) -> (Option<u64>, Option<u64>) {
        let is = |r: u64, state| self.state(r) == Some(state) && counts(r);
        let pass = self
            .tally
            .keys()
            .rev()
            .find(|&&r| is(r, State::Pass))
            .copied();
        let fail = self
            .tally
            .keys()
            .find(|&&r| pass.is_none_or(|p| r > p) && is(r, State::Fail))
            .copied();
        (pass, fail)
    }

    /// The unsettled rates between `pass` and `fail` (either open), lowest first.
    fn unsettled_between(&self, pass: Option<u64>, fail: Option<u64>) -> Vec<u64> {
        self.tally
            .keys()
            .copied()
            .filter(|&r| pass.is_none_or(|p| r > p) && fail.is_none_or(|f| r < f))
            .filter(|&r| self.state(r) == Some(State::Unsettled))
            .collect()
    }

    fn choose(&self) -> Result<u64, Ending> {
        let plan = &self.plan;
        // A disturbed or undecided probe is taken again at its rate first.
        if self.disturbed.0 > 0 {
            return Ok(self.disturbed.1);
        }
        if let Some((&rate, _)) = self
            .undecided
            .iter()
            .find(|(&r, &n)| n > 0 && self.state(r).is_none())
        {
            return Ok(rate);
        }
        if plan.rule == Rule::Range {
            return self.choose_range();
        }
        let (pass, fail) = self.bracket();
        let gray = self.unsettled_between(pass, fail);
        let grow = |from: u64| ((from as f64) * plan.growth).round() as u64;
        match (pass, fail) {
            (None, None) if gray.is_empty() => Ok(plan.from.round().max(1.0) as u64),
            // Nothing passes yet: down from the lowest rate that fails or would not settle.
            (None, _) => {
                if let Some(hi) = fail.filter(|&hi| !self.confirmed(hi)) {
                    return Ok(hi);
                }
                let top = gray.first().copied().or(fail).unwrap_or(1);
                let down = ((top as f64) / plan.growth).floor();
                if down < plan.min_rate || down as u64 >= top {
                    return Err(Ending::Below { rate: top as f64 });
                }
                Ok(down as u64)
            }
            // Nothing fails above the highest pass yet: grow past it and past the rates
            // that would not settle.
            (Some(lo), None) => Ok(grow(gray.last().copied().unwrap_or(lo).max(lo))),
            (Some(lo), Some(hi)) => {
                if !self.confirmed(hi) {
                    return Ok(hi);
                }
                if !self.confirmed(lo) {
                    return Ok(lo);
                }
                // Each end refined up to the unsettled rates (the lower first: it is the
                // capacity), or the whole bracket when there are none.
                let gaps = match (gray.first(), gray.last()) {
                    (Some(&g0), Some(&g1)) => vec![(lo, g0), (g1, hi)],
                    _ => vec![(lo, hi)],
                };
                for (a, b) in gaps {
                    let mid = (a + b) / 2;
                    if (b - a) as f64 > plan.precision * a as f64 && mid != a {
                        return Ok(mid);
                    }
                }
                Err(self.found(lo, hi))
            }
        }
    }

    /// The ending of a bracket whose ends are confirmed.
    fn found(&self, lo: u64, hi: u64) -> Ending {
        let count = |r: u64| self.tally.get(&r).copied().unwrap_or_default();
        let (lp, lf) = count(lo);
        let (hp, hf) = count(hi);
        let gray = self.unsettled_between(Some(lo), Some(hi));
        let unsettled = (!gray.is_empty()).then(|| {
            let (passes, probes) = gray.iter().fold((0, 0), |(p, n), &r| {
                let (rp, rf) = count(r);
                (p + rp, n + rp + rf)
            });
            Unsettled {
                from: gray[0] as f64,
                to: gray[gray.len() - 1] as f64,
                rates: gray.len() as u32,
                passes,
                probes,
            }
        });
        Ending::Found {
            capacity: lo as f64,
            passes: (lp, lp + lf),
            fails_at: hi as f64,
            fails: (hf, hp + hf),
            unproven: self.unproven.get(&hi).copied().unwrap_or(0),
            unsettled,
            first_miss: None,
            lone_misses: Vec::new(),
        }
    }
}

mod range;
#[cfg(test)]
mod range_tests;
mod sentence;
#[cfg(test)]
mod tests;
