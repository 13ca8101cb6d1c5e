//! [`Rule::Range`], the lab's rule since #48: a capacity stated as the range it is. Near a
//! knee a server meets the objective in some probes and not in others over a span of rates
//! (on a shared 2-vCPU host nginx's spanned 20-40 %), and any single figure chosen inside
//! that span moves from search to search. Its two edges do not:
//!
//! - **L, reliably up to**: the highest rate where every probe met the objective ([`AGREE`]
//!   of them at least), with no confirmed miss below it. A miss is confirmed by a second
//!   fail at its rate. One fail is probed again: [`CLEAR`] passes there make it a *lone
//!   miss*, and the search goes on above it as above a pass. The rate is not L itself (not
//!   every probe there passed), but once a higher rate passes every probe, a lone miss below
//!   it is the machine's stall, not the server's limit: a server that meets the objective at
//!   a higher rate meets it at a lower one. The sentence names each. (Before, one fail among
//!   six probes confirmed a miss: on a shared host nginx's L then landed at 6 200, 9 200 and
//!   24 800 req/s in three quiet searches, each held down by a stall far below its knee.)
//!   Found by growing until a rate misses, bisecting between the highest rate that held and
//!   that miss, then L to the precision below the first fail above it, the *first miss* M.
//!   L is the capacity: what `compare`, `--baseline` and `capacity>` use, in its own bracket
//!   [L, M].
//! - **U, every probe failing from**: the lowest rate above every rate where any probe
//!   passed, where [`AGREE`] probes failed. Found after L: grow from the highest rate
//!   that passed anything until a rate fails twice, then bisect between the two.
//!
//! Between L and U the server is *tipping*: passes and fails mixed, said with their count.
//! A sharp knee has M = U and nothing between; U costs no probe more there.

use webscope_load::thousands;

use super::{Ending, Search, Unsettled, CONFIRM, MOST_UNDECIDED};

/// Probes that all agree, at least, before a rate is reliable (every one passed) or failing
/// (every one failed): three, as a rate settles, whatever `--repeat` (a server meeting the
/// objective in half its probes agrees three times in a row one time in eight; twice, one in
/// four: on a sloping knee, two put L and U inside its tipping range in one search of four).
const AGREE: u32 = 3;

/// Passes that clear a rate's one fail as a lone miss: two, as a second fail confirms a
/// miss ([`CONFIRM`]). The rate is never L (not every probe there passed); clearing it only
/// lets the search go on above it.
const CLEAR: u32 = CONFIRM;

/// What the probes at one rate have shown, by this rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tally {
    pass: u32,
    fail: u32,
}

impl Tally {
    fn runs(self) -> u32 {
        self.pass + self.fail
    }
    /// A miss that counts: a second fail at the rate.
    fn confirmed_miss(self) -> bool {
        self.fail >= CONFIRM
    }
    /// Every probe passed, `agree` of them at least.
    fn clean(self, agree: u32) -> bool {
        self.fail == 0 && self.pass >= agree
    }
    /// One fail, not yet probed again enough to confirm or clear it.
    fn pending(self) -> bool {
        self.fail == 1 && self.pass < CLEAR
    }
    /// One fail and [`CLEAR`] passes: a stall, not the server's limit, once a higher rate is
    /// clean.
    fn lone_miss(self) -> bool {
        self.fail == 1 && self.pass >= CLEAR
    }
}

impl Search {
    fn tally_at(&self, rate: u64) -> Tally {
        let (pass, fail) = self.tally.get(&rate).copied().unwrap_or_default();
        Tally { pass, fail }
    }

    /// Probes that all passed, at least, before a rate may be L.
    fn agree(&self) -> u32 {
        self.plan.repeat.max(AGREE)
    }

    /// The lowest rate with a confirmed miss: where the growth stopped.
    fn knee_miss(&self) -> Option<u64> {
        self.tally
            .keys()
            .copied()
            .find(|&r| self.tally_at(r).confirmed_miss())
    }

    /// The highest rate below `miss` whose probes all passed (however many).
    fn top_clean(&self, miss: Option<u64>, at_most: u64) -> Option<u64> {
        self.tally.keys().rev().copied().find(|&r| {
            let t = self.tally_at(r);
            r <= at_most && miss.is_none_or(|m| r < m) && t.fail == 0 && t.pass > 0
        })
    }

    /// The lowest rate above `l` where any probe failed: L's own bracket is [L, M].
    fn first_fail_above(&self, l: u64) -> Option<u64> {
        self.tally
            .keys()
            .copied()
            .find(|&r| r > l && self.tally_at(r).fail > 0)
    }

    /// The lone misses below `l`: the machine's stalls, since every probe at `l` passed.
    fn lone_misses_below(&self, l: u64) -> Vec<f64> {
        self.tally
            .keys()
            .copied()
            .filter(|&r| r < l && self.tally_at(r).lone_miss())
            .map(|r| r as f64)
            .collect()
    }

    /// The rate to probe next by [`Rule::Range`](super::Rule::Range), or how the search ends.
    pub(super) fn choose_range(&self) -> Result<u64, Ending> {
        let plan = &self.plan;
        let agree = self.agree();
        let grow = |from: u64| ((from as f64) * plan.growth).round().max(from as f64 + 1.0) as u64;
        let miss = self.knee_miss();
        let below = |r: u64| miss.is_none_or(|m| r < m);
        // A lone fail below the knee is probed again before anything moves: a second fail
        // makes it the knee, CLEAR passes a lone miss.
        if let Some(r) = self
            .tally
            .keys()
            .copied()
            .find(|&r| below(r) && self.tally_at(r).pending())
        {
            return Ok(r);
        }
        // The highest rate that held below the knee: every rate below it now did.
        let top = self
            .tally
            .keys()
            .rev()
            .copied()
            .find(|&r| below(r) && self.tally_at(r).pass > 0);
        // Growing, one pass moves on.
        let Some(m) = miss else {
            return Ok(top.map_or(plan.from.round().max(1.0) as u64, grow));
        };
        let Some(top) = top else {
            return self.down_from(m, m);
        };
        // The knee first: the top confirmed, then bisected against the miss.
        if self.tally_at(top).fail == 0 && self.tally_at(top).pass < agree {
            return Ok(top);
        }
        if let Some(mid) = split(top, m, plan.precision) {
            return Ok(mid);
        }
        // Then L: the highest clean rate, confirmed, to the precision below the first fail
        // above it (the knee's miss when the top is clean).
        let Some(l) = self.top_clean(miss, top) else {
            let lowest = self.tally.keys().next().copied().unwrap_or(m);
            return self.down_from(lowest, m);
        };
        if self.tally_at(l).pass < agree {
            return Ok(l);
        }
        let first = self.first_fail_above(l).unwrap_or(m);
        if let Some(mid) = split(l, first, plan.precision) {
            return Ok(mid);
        }
        self.choose_upper(l, first)
    }

    /// Nothing clean below `lowest`: a rate a growth step below it, or the search ends below
    /// the knee's miss `m`.
    fn down_from(&self, lowest: u64, m: u64) -> Result<u64, Ending> {
        let down = ((lowest as f64) / self.plan.growth).floor();
        if down < self.plan.min_rate || down as u64 >= lowest {
            return Err(Ending::Below { rate: m as f64 });
        }
        Ok(down as u64)
    }

    /// L and M are found: U next, above the highest rate where any probe passed.
    fn choose_upper(&self, lo: u64, m: u64) -> Result<u64, Ending> {
        let plan = &self.plan;
        let passed = self
            .tally
            .iter()
            .rev()
            .find(|(_, &(p, _))| p > 0)
            .map_or(lo, |(&r, _)| r);
        // Above it no probe passed; a rate there that failed once is probed again.
        if let Some(r) = self
            .tally
            .keys()
            .copied()
            .find(|&r| r > passed && self.tally_at(r).fail < AGREE)
        {
            return Ok(r);
        }
        let Some(u) = self.tally.keys().copied().find(|&r| r > passed) else {
            return Ok(((passed as f64) * plan.growth).round() as u64);
        };
        if let Some(mid) = split(passed, u, plan.precision) {
            return Ok(mid);
        }
        Err(self.found_range(lo, m, u))
    }

    /// The ending once L, M and U are known (U = M for a sharp knee).
    pub(super) fn found_range(&self, lo: u64, m: u64, u: u64) -> Ending {
        let count = |r: u64| self.tally_at(r);
        let tipping: Vec<u64> = self
            .tally
            .keys()
            .copied()
            .filter(|&r| r > lo && r < u)
            .collect();
        let unsettled = (!tipping.is_empty()).then(|| {
            let (passes, probes) = tipping.iter().fold((0, 0), |(p, n), &r| {
                (p + count(r).pass, n + count(r).runs())
            });
            Unsettled {
                from: tipping[0] as f64,
                to: tipping[tipping.len() - 1] as f64,
                rates: tipping.len() as u32,
                passes,
                probes,
            }
        });
        Ending::Found {
            capacity: lo as f64,
            passes: (count(lo).pass, count(lo).runs()),
            fails_at: u as f64,
            fails: (count(u).fail, count(u).runs()),
            unproven: self.unproven.get(&u).copied().unwrap_or(0),
            unsettled,
            first_miss: Some(m as f64),
            lone_misses: self.lone_misses_below(lo),
        }
    }

    /// Out of probes: L and M if found (U the highest rate probed that failed, when there is
    /// none that all failed above everything passed), else the bracket still open. L only
    /// where every probe passed, however many passed at a rate with a fail.
    pub(super) fn out_of_probes_range(&self) -> Ending {
        let knee = self.knee_miss();
        let agree = self.agree();
        let lo = self
            .tally
            .keys()
            .rev()
            .copied()
            .find(|&r| knee.is_none_or(|m| r < m) && self.tally_at(r).clean(agree));
        match (lo, knee) {
            (Some(lo), Some(knee)) => {
                let m = self.first_fail_above(lo).unwrap_or(knee);
                let passed = self
                    .tally
                    .iter()
                    .rev()
                    .find(|(_, &(p, _))| p > 0)
                    .map_or(lo, |(&r, _)| r);
                // U only where every probe failed, AGREE of them; else the rate above
                // everything passed that was probed, its count saying it is not confirmed.
                let u = self
                    .tally
                    .keys()
                    .copied()
                    .find(|&r| r > passed && self.tally_at(r).fail >= AGREE)
                    .or_else(|| self.tally.keys().copied().find(|&r| r > passed))
                    .unwrap_or(knee);
                self.found_range(lo, m, u.max(m))
            }
            _ => Ending::OutOfProbes {
                pass: lo.map(|r| r as f64),
                fail: knee.map(|r| r as f64),
            },
        }
    }
}

/// "; below it a lone miss at 6 200 req/s (one probe failed, 2 or more passed, none failed
/// again): the machine's stall, not the server's limit" (nothing when there is none).
fn lone_sentence(rates: &[f64], unit: &str) -> String {
    let listed: Vec<String> = rates.iter().map(|&r| thousands(r)).collect();
    match listed.len() {
        0 => String::new(),
        1 => format!(
            "; below it a lone miss at {} {unit} (one probe failed, {CLEAR} or more passed, none failed again): the machine's stall, not the server's limit",
            listed[0],
        ),
        n => format!(
            "; below it {n} lone misses at {} {unit} (at each one probe failed, {CLEAR} or more passed, none failed again): the machine's stalls, not the server's limit",
            listed.join(", "),
        ),
    }
}

/// The rate halfway between `a` and `b` while they are wider apart than `precision` of `a`.
fn split(a: u64, b: u64, precision: f64) -> Option<u64> {
    let mid = (a + b) / 2;
    ((b - a) as f64 > precision * a as f64 && mid != a).then_some(mid)
}

impl Ending {
    /// [`Ending::sentence_in`] of a range: "capacity: reliably up to 41 800 req/s (every
    /// probe there met the objective, 3/3; the first miss at 43 900: ±2.5 %), tipping
    /// between 41 800 and 52 000 req/s (passes and fails mixed: 7 of 12 probes passed at 3
    /// rates), every probe failing from 52 000 req/s (2/2)".
    pub(super) fn range_sentence(&self, m: f64, unit: &str) -> String {
        let Ending::Found {
            capacity,
            passes,
            fails_at,
            fails,
            unproven,
            unsettled,
            lone_misses,
            ..
        } = self
        else {
            return String::new();
        };
        let (l, u) = (thousands(*capacity), thousands(*fails_at));
        let reliable = format!(
            "capacity: reliably up to {l} {unit} (every probe there met the objective, {}/{}{}",
            passes.0,
            passes.1,
            lone_sentence(lone_misses, unit)
        );
        let unproven = match unproven {
            0 => String::new(),
            n => format!(
                ", {n} of them for {MOST_UNDECIDED} undecided probes: not shown to meet the objective"
            ),
        };
        let failing = if fails.0 >= AGREE && fails.0 == fails.1 {
            format!(
                "every probe failing from {u} {unit} ({}/{}{unproven})",
                fails.0, fails.1
            )
        } else {
            format!(
                "the probes ran out before a rate above it failed {AGREE} of {AGREE} (at {u} {unit}: {} of {} failed{unproven})",
                fails.0, fails.1
            )
        };
        let pct = self.bracket_pct().unwrap_or(0.0);
        match unsettled {
            Some(t) => format!(
                "{reliable}; the first miss at {} {unit}: ±{pct:.1} %), tipping between {l} and {u} {unit} (passes and fails mixed: {} of {} probes passed at {} rate{}), {failing}",
                thousands(m),
                t.passes,
                t.probes,
                t.rates,
                if t.rates == 1 { "" } else { "s" },
            ),
            None => format!("{reliable}), {failing}: no tipping range, bracket ±{pct:.1} %"),
        }
    }
}
