//! The search for the largest offered rate that meets an objective: start low, grow
//! geometrically until a probe fails, then bisect between the highest rate that passed and
//! the lowest that failed above it until the bracket is within the precision.
//!
//! Never on one probe: a fail is confirmed before the search moves on it (the rate is probed
//! again, and a third time when the two disagree: the majority decides), and the bracket's two
//! boundary rates are confirmed both ways before it closes, so the bracket it reports is the
//! capacity's uncertainty: the highest rate whose pass was confirmed and the lowest above it
//! whose fail was (at least [`CONFIRM`] probes at each, or `repeat` with `--repeat`). A probe
//! that could not be decided (a condition's interval straddles its limit) is taken again at
//! the same rate, longer ([`Search::length_factor`]); after [`MOST_UNDECIDED`] such probes the
//! rate is *not shown to meet* the objective and counts as a fail there: a capacity is a rate
//! shown to meet it, and near the knee, where a run's slow requests come in queue episodes,
//! a rate may stay undecided however long it is probed. A probe taken while the machine was
//! disturbed does not count, and is taken again once the caller has waited the disturbance
//! out. A search that cannot get undisturbed probes ends without a capacity.
//!
//! With [`Plan::every`] (`--every-probe`) a rate passes only when every probe there did:
//! near a knee where slow episodes come and go, the majority of two or three probes is a
//! coin's throw at every rate where the server meets the objective more often than not,
//! and searches of one server landed 20 % apart; every probe asks for the rate it meets
//! reliably, which lies where the pass share falls steeply.
//!
//! Pure: it only chooses rates and reads outcomes, so it is tested against servers whose
//! capacity is known by construction. The caller runs the probes (warm-up, cool-down, the
//! open-loop run, the objective's verdict) and hands back one [`Outcome`] each.

use std::collections::BTreeMap;

use webscope_load::thousands;

/// How a search is run.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The first rate offered (requests per second).
    pub from: f64,
    /// Each step of the growth multiplies the rate by this.
    pub growth: f64,
    /// The bracket closes when (fail − pass) / pass is at most this (0.05: 5 %).
    pub precision: f64,
    /// Probes at each boundary rate, at least [`CONFIRM`]; the majority decides.
    pub repeat: u32,
    /// Below this rate the search gives up going down.
    pub min_rate: f64,
    /// At most this many probes in all.
    pub max_probes: usize,
    /// A rate passes only when every probe there passed (`--every-probe`), rather than
    /// most of them: see [`Search`]'s rule for each.
    pub every: bool,
}

impl Plan {
    /// A search from `from` req/s: doubling, to 5 %, boundaries confirmed, down to 1 req/s, at
    /// most 60 probes. The lab starts from these and sets its own precision, repeats and
    /// probe limit (`experiment::MOST_PROBES`, 30) over them.
    pub fn new(from: f64) -> Plan {
        Plan {
            from,
            growth: 2.0,
            precision: 0.05,
            repeat: CONFIRM,
            min_rate: 1.0,
            max_probes: 60,
            every: false,
        }
    }
}

/// What one probe said.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every condition of the objective held.
    Pass,
    /// A condition failed (the server, or the machine, did not keep up).
    Fail,
    /// The generator could not offer the rate (it sent late): a verdict on the generator,
    /// not on the server.
    GeneratorBound,
    /// A figure the objective needs was not measured, or its interval straddles the limit:
    /// no verdict (taken again, longer; [`MOST_UNDECIDED`] of them at a rate count as a fail
    /// there, the rate not shown to meet the objective).
    Undecided(String),
    /// The machine was disturbed while the probe ran (other processes took the server's or
    /// the generator's CPU, steal, pressure): no verdict on the server (taken again, up to
    /// [`MOST_DISTURBED`] times in a row).
    Disturbed(String),
}

/// Probes at a boundary rate before its verdict counts: a fail is confirmed by a second fail
/// before the search moves on it (a scheduler's stall fails one probe, rarely two), a pass by
/// a second pass before it bounds the capacity; two that disagree are settled by a third.
pub const CONFIRM: u32 = 2;
/// Most probes at one rate (the majority of them decides when they keep disagreeing).
pub const MOST_AT_RATE: u32 = 5;
/// Most undecided probes at one rate, each twice as long as the one before, before the rate
/// counts as failing (not shown to meet the objective).
pub const MOST_UNDECIDED: u32 = 3;
/// Most disturbed probes in a row before the search ends without a capacity.
pub const MOST_DISTURBED: u32 = 3;

/// How a search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The bracket closed: `capacity` passed `passes` of its probes, `fails_at` failed
    /// (`unproven` of those fails: [`MOST_UNDECIDED`] undecided probes each).
    Found {
        capacity: f64,
        passes: (u32, u32),
        fails_at: f64,
        fails: (u32, u32),
        unproven: u32,
    },
    /// The generator fell behind at `at`; the capacity is above `above` (the highest rate
    /// that passed), beyond what this generator can offer.
    GeneratorBound { above: Option<f64>, at: f64 },
    /// Even the lowest rate tried failed.
    Below { rate: f64 },
    /// A probe at `at` could not be judged (no longer reached by a search: the rate counts
    /// as failing; kept so that a stored report that has it still reads).
    Undecided { at: f64, why: String },
    /// The machine stayed disturbed: no probe at `at` could run on a quiet machine.
    Disturbed { at: f64, why: String },
    /// The probe budget ran out with the bracket still open.
    OutOfProbes {
        pass: Option<f64>,
        fail: Option<f64>,
    },
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
                let (pass, fail) = self.bracket();
                self.ended = Some(Ending::OutOfProbes {
                    pass: pass.map(|r| r as f64),
                    fail: fail.map(|r| r as f64),
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

    /// What the probe at `rate` (the one [`Search::next_rate`] gave) said.
    pub fn record(&mut self, rate: f64, outcome: Outcome) {
        self.probes += 1;
        let key = rate.round() as u64;
        if !matches!(outcome, Outcome::Disturbed(_)) {
            self.disturbed = (0, 0);
        }
        match outcome {
            Outcome::Pass => self.tally.entry(key).or_default().0 += 1,
            Outcome::Fail => self.tally.entry(key).or_default().1 += 1,
            Outcome::GeneratorBound => {
                self.ended = Some(Ending::GeneratorBound {
                    above: self.bracket().0.map(|r| r as f64),
                    at: rate,
                });
            }
            Outcome::Undecided(_) => {
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
            Outcome::Disturbed(why) => {
                self.disturbed = (self.disturbed.0 + 1, key);
                if self.disturbed.0 >= MOST_DISTURBED {
                    self.ended = Some(Ending::Disturbed { at: rate, why });
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
    /// [`Plan::every`] a pass only while none of them failed; None when it has none.
    fn state(&self, rate: u64) -> Option<State> {
        let &(pass, fail) = self.tally.get(&rate)?;
        let passes = if self.plan.every {
            fail == 0
        } else {
            pass > fail
        };
        (pass + fail > 0).then_some(if passes { State::Pass } else { State::Fail })
    }

    /// Whether a rate's verdict is confirmed: `repeat` probes (at least [`CONFIRM`]) and a
    /// majority, or [`MOST_AT_RATE`] probes whatever they said. With [`Plan::every`], a pass
    /// by `repeat` probes that all passed, a fail by [`CONFIRM`] fails (one fail among
    /// passes is probed again: a stall fails one probe, rarely two) or by [`MOST_AT_RATE`]
    /// probes with a fail among them (a server that misses the objective in one probe of
    /// five at a rate does not meet it there reliably).
    fn confirmed(&self, rate: u64) -> bool {
        let (pass, fail) = self.tally.get(&rate).copied().unwrap_or_default();
        let runs = pass + fail;
        if self.plan.every {
            return (fail == 0 && pass >= self.plan.repeat)
                || fail >= CONFIRM
                || runs >= MOST_AT_RATE;
        }
        (runs >= self.plan.repeat && pass != fail) || runs >= MOST_AT_RATE
    }

    /// The highest rate that passes, and the lowest that fails above it.
    fn bracket(&self) -> (Option<u64>, Option<u64>) {
        let pass = self
            .tally
            .keys()
            .rev()
            .find(|&&r| self.state(r) == Some(State::Pass))
            .copied();
        let fail = self
            .tally
            .keys()
            .find(|&&r| pass.is_none_or(|p| r > p) && self.state(r) == Some(State::Fail))
            .copied();
        (pass, fail)
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
        let (pass, fail) = self.bracket();
        match (pass, fail) {
            (None, None) => Ok(plan.from.round().max(1.0) as u64),
            (Some(lo), None) => Ok(((lo as f64) * plan.growth).round() as u64),
            (None, Some(hi)) => {
                if !self.confirmed(hi) {
                    return Ok(hi);
                }
                let down = ((hi as f64) / plan.growth).floor();
                if down < plan.min_rate || down as u64 >= hi {
                    return Err(Ending::Below { rate: hi as f64 });
                }
                Ok(down as u64)
            }
            (Some(lo), Some(hi)) => {
                if !self.confirmed(hi) {
                    return Ok(hi);
                }
                if !self.confirmed(lo) {
                    return Ok(lo);
                }
                let mid = (lo + hi) / 2;
                if (hi - lo) as f64 <= plan.precision * lo as f64 || mid == lo {
                    let count = |r: u64| self.tally.get(&r).copied().unwrap_or_default();
                    let (lp, lf) = count(lo);
                    let (hp, hf) = count(hi);
                    return Err(Ending::Found {
                        capacity: lo as f64,
                        passes: (lp, lp + lf),
                        fails_at: hi as f64,
                        fails: (hf, hp + hf),
                        unproven: self.unproven.get(&hi).copied().unwrap_or(0),
                    });
                }
                Ok(mid)
            }
        }
    }
}

impl Ending {
    /// The half-width of the bracket over the capacity, in per cent: 41 800 / 44 000 → 2.6.
    pub fn bracket_pct(&self) -> Option<f64> {
        match self {
            Ending::Found {
                capacity, fails_at, ..
            } => Some(50.0 * (fails_at - capacity) / capacity),
            _ => None,
        }
    }

    /// One sentence: "capacity 41 800 req/s (passes 3/3; 44 000 fails 3/3; bracket ±2.6 %)".
    pub fn sentence(&self) -> String {
        self.sentence_in("req/s")
    }

    /// [`Ending::sentence`] with another unit than req/s (the users search's: "users").
    pub fn sentence_in(&self, unit: &str) -> String {
        match self {
            Ending::Found {
                capacity,
                passes,
                fails_at,
                fails,
                unproven,
            } => format!(
                "capacity {} {unit} (passes {}/{}; {} fails {}/{}{}; bracket ±{:.1} %)",
                thousands(*capacity),
                passes.0,
                passes.1,
                thousands(*fails_at),
                fails.0,
                fails.1,
                match unproven {
                    0 => String::new(),
                    n => format!(
                        ", {n} of them for {MOST_UNDECIDED} undecided probes: not shown to meet the objective"
                    ),
                },
                self.bracket_pct().unwrap_or(0.0)
            ),
            Ending::GeneratorBound { above: Some(r), at } => format!(
                "capacity is above {} {unit}, beyond what this generator can offer (it fell behind at {} {unit})",
                thousands(*r),
                thousands(*at)
            ),
            Ending::GeneratorBound { above: None, at } => format!(
                "no capacity measured: the generator fell behind at {} {unit}, the first rate it offered",
                thousands(*at)
            ),
            Ending::Below { rate } => format!(
                "capacity is below {} {unit}: the objective failed at the lowest rate tried",
                thousands(*rate)
            ),
            Ending::Undecided { at, why } => format!(
                "no capacity: the probes at {} {unit} could not be decided, {MOST_UNDECIDED} times, each longer ({why})",
                thousands(*at)
            ),
            Ending::Disturbed { at, why } => format!(
                "no capacity: the machine was disturbed ({why}); {MOST_DISTURBED} probes in a row at {} {unit} ran on a disturbed machine",
                thousands(*at)
            ),
            Ending::OutOfProbes { pass, fail } => format!(
                "no capacity: the probes ran out with the bracket open (passed at {}, failed at {})",
                pass.map_or("none".into(), thousands),
                fail.map_or("none".into(), thousands)
            ),
        }
    }
}

#[cfg(test)]
mod tests;
