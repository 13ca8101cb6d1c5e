//! [`Rule::Range`], the lab's rule since #48: a capacity stated as the range it is. Near a
//! knee a server meets the objective in some probes and not in others over a span of rates
//! (on a shared 2-vCPU host nginx's spanned 20-40 %), and any single figure chosen inside
//! that span moves from search to search. Its two edges do not:
//!
//! - **L, reliably up to**: the highest rate where every probe met the objective, with no
//!   confirmed miss below it. Found as `--every-probe` found its capacity: grow until a rate
//!   misses (a miss is confirmed by a second miss, or by [`MOST_AT_RATE`] probes with one
//!   among them: a scheduler's stall misses one probe, rarely two), then bisect between the
//!   highest reliable rate and the lowest confirmed miss, the *first miss* M, to the
//!   precision. L is the capacity: what `compare`, `--baseline` and `capacity>` use, in its
//!   own bracket [L, M].
//! - **U, every probe failing from**: the lowest rate above every rate where any probe
//!   passed, where [`AGREE`] probes failed. Found after L: grow from the highest rate
//!   that passed anything until a rate fails twice, then bisect between the two.
//!
//! Between L and U the server is *tipping*: passes and fails mixed, said with their count.
//! A sharp knee has M = U and nothing between; U costs no probe more there.

use webscope_load::thousands;

use super::{Ending, Search, Unsettled, CONFIRM, MOST_AT_RATE, MOST_UNDECIDED};

/// Probes that all agree, at least, before a rate is reliable (every one passed) or failing
/// (every one failed): three, as a rate settles, whatever `--repeat` (a server meeting the
/// objective in half its probes agrees three times in a row one time in eight; twice, one in
/// four: on a sloping knee, two put L and U inside its tipping range in one search of four).
const AGREE: u32 = 3;

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
    /// A miss that counts: a second fail, or one among [`MOST_AT_RATE`] probes.
    fn confirmed_miss(self) -> bool {
        self.fail >= CONFIRM || (self.fail > 0 && self.runs() >= MOST_AT_RATE)
    }
}

impl Search {
    fn tally_at(&self, rate: u64) -> Tally {
        let (pass, fail) = self.tally.get(&rate).copied().unwrap_or_default();
        Tally { pass, fail }
    }

    /// The lowest rate with a confirmed miss, M.
    fn first_miss(&self) -> Option<u64> {
        self.tally
            .keys()
            .copied()
            .find(|&r| self.tally_at(r).confirmed_miss())
    }

    /// The rate to probe next by [`Rule::Range`](super::Rule::Range), or how the search ends.
    pub(super) fn choose_range(&self) -> Result<u64, Ending> {
        let plan = &self.plan;
        let grow = |from: u64| ((from as f64) * plan.growth).round().max(from as f64 + 1.0) as u64;
        let miss = self.first_miss();
        let below = |r: u64| miss.is_none_or(|m| r < m);
        // A fail below M not yet confirmed or refuted: probed again before anything moves.
        if let Some(r) = self.tally.keys().copied().find(|&r| {
            let t = self.tally_at(r);
            below(r) && t.fail > 0 && !t.confirmed_miss()
        }) {
            return Ok(r);
        }
        // The highest rate below M whose probes all passed; confirmed by `repeat` of them.
        let top_pass = self
            .tally
            .keys()
            .rev()
            .copied()
            .find(|&r| below(r) && self.tally_at(r).pass > 0);
        // Growing, one pass moves on; L is confirmed once a miss bounds it.
        let Some(m) = miss else {
            return Ok(top_pass.map_or(plan.from.round().max(1.0) as u64, grow));
        };
        if let Some(r) = top_pass.filter(|&r| self.tally_at(r).pass < plan.repeat.max(AGREE)) {
            return Ok(r);
        }
        let Some(lo) = top_pass else {
            let down = ((m as f64) / plan.growth).floor();
            if down < plan.min_rate || down as u64 >= m {
                return Err(Ending::Below { rate: m as f64 });
            }
            return Ok(down as u64);
        };
        if let Some(mid) = split(lo, m, plan.precision) {
            return Ok(mid);
        }
        self.choose_upper(lo, m)
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
        }
    }

    /// Out of probes: L and M if found (U the highest rate probed that failed, when there is
    /// none that all failed above everything passed), else the bracket still open.
    pub(super) fn out_of_probes_range(&self) -> Ending {
        let m = self.first_miss();
        let lo = self.tally.keys().rev().copied().find(|&r| {
            let t = self.tally_at(r);
            m.is_some_and(|m| r < m) && t.fail == 0 && t.pass >= self.plan.repeat.max(AGREE)
        });
        match (lo, m) {
            (Some(lo), Some(m)) => {
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
                    .unwrap_or(m);
                self.found_range(lo, m, u.max(m))
            }
            _ => Ending::OutOfProbes {
                pass: lo.map(|r| r as f64),
                fail: m.map(|r| r as f64),
            },
        }
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
            ..
        } = self
        else {
            return String::new();
        };
        let (l, u) = (thousands(*capacity), thousands(*fails_at));
        let reliable = format!(
            "capacity: reliably up to {l} {unit} (every probe there met the objective, {}/{}",
            passes.0, passes.1
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
