//! Two capacity results side by side (issue #25 §2): "capacity 41 800 → 37 100 req/s
//! (−11.2 %; the brackets allow −15.7 .. −6.9 %)", and a threshold on the change (`capacity>-5%`) judged
//! from the two searches' uncertainty (issue #33 §5) with three answers — within, crossed,
//! or cannot decide — as `compare` judges runs.
//!
//! Each result is read as the bracket the true capacity lies in, both ends included: a found
//! capacity is `[capacity, fails_at]` (the highest rate that passed, the lowest that failed
//! above it); "above R, beyond what this generator can offer" is `[R, ∞)`; "below R" is
//! `[0, R]`; probes that ran out leave `[last pass, first fail]`. The candidate's change
//! against the baseline can then be anything from `cand.low / base.high − 1` (least
//! favourable) to `cand.high / base.low − 1` (most favourable). For a floor such as
//! `capacity>-5%`:
//!
//! - **crossed** when even the most favourable change is at or below the limit: the brackets
//!   are apart, and by more than the limit;
//! - **within** when even the least favourable change is above the limit;
//! - **cannot decide** otherwise: the changes the brackets allow lie on both sides of the
//!   limit. `compare` exits 3 then, as for runs: never a pass.
//!
//! This is the rule `compare` judges runs by (`webscope_model::stats::change`, #53): the
//! allowed changes are the interval, and only an interval wholly on one side of the limit
//! decides. Brackets that overlap are no longer a pass by themselves: an A/A pair of
//! searches was called "within" `capacity>-10%` while its own brackets allowed −14.8 %.
//!
//! **The machine's speed.** A search records the mean of its reference loop's readings
//! (`machine_reference`: [`webscope_monitor::reference`]) and its standard error. On a shared
//! machine that mean moves from one search to the next, and the capacity can move with it
//! (#33: between hosts, 1.8 times on the loop and 1.9 times on nginx's capacity; within one
//! host, 3 % on the loop and 10-25 % on the capacity in one run, not in the next). When
//! the two means are apart (by more than [`MACHINE_LIMIT`], or by more than their standard
//! errors allow: z above [`MACHINE_Z`]) and the machine's change runs the way the verdict
//! would (a crossed floor whose candidate ran on the slower machine, a pass whose candidate
//! ran on the faster one), the change may be the machine's: **cannot decide**. Searches
//! recorded without a mean are judged on their brackets alone; without standard errors, on
//! the limit alone.
//!
//! **The server's own peak.** The loop is read while the server is idle; under load the
//! machine moves more (#33: nginx's peak 88 000-116 000 req/s between 3-s runs while the loop
//! held within 2 %). A search records how far its overloaded probes' goodput moved within it
//! (report.json `peak.spread`). A crossed floor whose drop (between the point capacities) is
//! no larger than the larger of the two spreads may be the machine's: **cannot decide**. Only
//! a crossing is held back by it: a false alarm is what #33 found (one server "CROSSED" at
//! −34 %), while a pass already means no change these searches can tell.
//!
//! Pure: it judges two brackets, read from report.json by `results::SearchEntry`. Not for: the other figures
//! `webscope compare` sets side by side (`compare`), nor its command line.

use webscope_report::human;

/// The interval a result puts the capacity in, and its point figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bracket {
    /// The highest rate the result confirmed (L), req/s (users, for the users search).
    pub low: f64,
    /// `f64::INFINITY` when the search could not find a failing rate.
    pub high: f64,
    /// The capacity found, when there is one.
    pub capacity: Option<f64>,
    /// The mean of the search's reference-loop readings, ms (None: not recorded).
    pub machine_ms: Option<f64>,
    /// Its standard error, ms (None: not recorded, or one probe).
    pub machine_se_ms: Option<f64>,
    /// How far the server's own peak moved within the search, (max − min) / median of its
    /// overloaded probes' goodput (None: fewer than two such probes, or not recorded).
    pub peak_spread: Option<f64>,
}

/// How far apart two searches' machines may run (their reference means, as a share of the
/// baseline's) before a change between them is not the server's to claim, whatever their
/// standard errors. 5 %: the smallest change a threshold is usually asked about
/// (`capacity>-5%`); near the knee a machine 5 % slower took far more than 5 % off.
pub const MACHINE_LIMIT: f64 = 0.05;

/// How many standard errors of their difference two searches' reference means may lie
/// apart before their machines count as different: 1.645, one-sided 5 %. One-sided because
/// only the direction that could have made the verdict counts; on a machine of one speed, one
/// ordered pair in twenty is left undecided by it for nothing. Measured on six nginx searches
/// (2 vCPUs): the pairs 0.5 ms apart (2.5 %, z 1.9-2.7) were three of the four that crossed.
pub const MACHINE_Z: f64 = 1.645;

impl Bracket {
    /// A bracket with no reading of the machine's speed nor of the peak's spread.
    pub fn bare(low: f64, high: f64, capacity: Option<f64>) -> Bracket {
        Bracket {
            low,
            high,
            capacity,
            machine_ms: None,
            machine_se_ms: None,
            peak_spread: None,
        }
    }

    /// Whether the two brackets share a rate (both ends included: a rate one search passed
    /// and the other failed is shared).
    pub fn overlaps(&self, other: &Bracket) -> bool {
        self.low.max(other.low) <= self.high.min(other.high)
    }
}

/// Which search a bracket is of: its report.json entry, its threshold's name and its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Searched {
    /// The report.json entry and the threshold's name: `capacity`, `users`.
    pub name: &'static str,
    /// As people read it: `req/s`, `users`.
    pub unit: &'static str,
    /// The ending's keys end in `_{key_unit}`.
    pub key_unit: &'static str,
}

impl Searched {
    /// The capacity search, in req/s.
    pub const CAPACITY: Searched = Searched {
        name: "capacity",
        unit: "req/s",
        key_unit: "rps",
    };
    /// The users search, in users.
    pub const USERS: Searched = Searched {
        name: "users",
        unit: "users",
        key_unit: "users",
    };
    /// Both.
    pub const ALL: [Searched; 2] = [Searched::CAPACITY, Searched::USERS];
}

/// What a threshold says about a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The change is within the threshold, whatever the capacity in its bracket.
    Pass,
    /// The change crossed the threshold, wherever the capacity lies in its bracket.
    Fail,
    /// The brackets are too wide (or open) to tell: neither pass nor fail.
    CannotDecide,
}

impl Decision {
    /// As a verdict line says it: `within`, `CROSSED`, `CANNOT BE DECIDED` (`compare`'s
    /// words for runs too).
    pub fn said(self) -> &'static str {
        match self {
            Decision::Pass => "within",
            Decision::Fail => "CROSSED",
            Decision::CannotDecide => "CANNOT BE DECIDED",
        }
    }
}

/// `capacity>-5%`: the least change allowed, as a fraction (−0.05).
pub fn parse_threshold(text: &str) -> Result<f64, String> {
    parse_threshold_of(text, Searched::CAPACITY)
}

/// `capacity>-5%` or `users>-5%`: which search, and the least change allowed.
pub fn parse_any(text: &str) -> Result<(Searched, f64), String> {
    let what = Searched::ALL
        .into_iter()
        .find(|s| text.trim().starts_with(s.name))
        .ok_or_else(|| format!("{text:?}: give capacity>-5% or users>-5%"))?;
    Ok((what, parse_threshold_of(text, what)?))
}

fn parse_threshold_of(text: &str, what: Searched) -> Result<f64, String> {
    let name = what.name;
    let rest = text.trim().strip_prefix(name).ok_or_else(|| {
        format!("{text:?}: a {name} threshold starts with {name}, e.g. {name}>-5%")
    })?;
    let rest = rest
        .strip_prefix(">=")
        .or_else(|| rest.strip_prefix('>'))
        .ok_or_else(|| format!("{text:?}: {name} is a floor: write {name}>-5%"))?;
    let pct = rest
        .trim()
        .strip_suffix('%')
        .ok_or_else(|| format!("{text:?}: give the change in per cent, e.g. {name}>-5%"))?;
    pct.trim()
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite())
        .map(|p| p / 100.0)
        .ok_or_else(|| format!("{text:?}: {pct:?} is not a number"))
}

/// The sentence for a baseline and a candidate.
pub fn sentence(base: &Bracket, cand: &Bracket) -> String {
    sentence_of(base, cand, Searched::CAPACITY)
}

/// [`sentence`] for the search `what`: "users 120 → 96 users (−20.0 %, ...)".
pub fn sentence_of(base: &Bracket, cand: &Bracket, what: Searched) -> String {
    let show = |b: &Bracket| match (b.capacity, b.high.is_finite()) {
        (Some(c), _) => format!("{c:.0}"),
        (None, false) => format!("above {:.0}", b.low),
        (None, true) if b.low <= 0.0 => format!("below {:.0}", b.high),
        (None, true) => format!("{:.0}..{:.0}", b.low, b.high),
    };
    let change = match (base.capacity, cand.capacity) {
        (Some(b), Some(c)) if b > 0.0 => format!("{}; ", human::change(c / b - 1.0)),
        _ => String::new(),
    };
    let (worst, best) = changes(base, cand);
    format!(
        "{} {} → {} {} ({change}the brackets allow {})",
        what.name,
        show(base),
        show(cand),
        what.unit,
        human::change_interval(worst, best)
    )
}

/// The changes of the candidate against the baseline that their brackets allow, as
/// fractions: (least favourable, most favourable). An open end gives −1 or +∞.
pub fn changes(base: &Bracket, cand: &Bracket) -> (f64, f64) {
    let ratio = |c: f64, b: f64| if b > 0.0 { c / b } else { f64::INFINITY };
    (
        ratio(cand.low, base.high) - 1.0,
        ratio(cand.high, base.low) - 1.0,
    )
}

/// A threshold's verdict on a change: the decision and why, in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// Pass, fail, or cannot be decided.
    pub decision: Decision,
    /// Why, in one sentence with the brackets' figures.
    pub why: String,
}

/// Whether the candidate's change against the baseline is above `least` (−0.05 for
/// `capacity>-5%`: a drop of less than 5 %), by the rule in this module's doc: the brackets'
/// verdict, unless the machine's own change could have made it.
pub fn decide(base: &Bracket, cand: &Bracket, least: f64) -> Decided {
    let decided = on_machines(base, cand, decide_brackets(base, cand, least));
    within_peaks(base, cand, decided)
}

/// A crossed floor whose drop is within how far either search's server peak moved: cannot
/// decide.
fn within_peaks(base: &Bracket, cand: &Bracket, decided: Decided) -> Decided {
    let (Some(b), Some(c)) = (base.capacity, cand.capacity) else {
        return decided;
    };
    let moved = [base.peak_spread, cand.peak_spread]
        .into_iter()
        .flatten()
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
    let drop = 1.0 - c / b;
    match moved {
        Some(moved) if decided.decision == Decision::Fail && b > 0.0 && drop <= moved => {
            let whose = if base.peak_spread == Some(moved) {
                "the baseline's"
            } else {
                "the candidate's"
            };
            Decided {
                decision: Decision::CannotDecide,
                why: format!(
                    "{}; but the server's own peak moved {:.1} % within {whose} search (the goodput of its probes behind their rate, from least to most), and a drop of {:.1} % is no more than that: it may be the machine's",
                    decided.why,
                    100.0 * moved,
                    100.0 * drop
                ),
            }
        }
        _ => decided,
    }
}

/// The brackets' verdict `decided`, unless the machine's own speed could have made it.
fn on_machines(base: &Bracket, cand: &Bracket, decided: Decided) -> Decided {
    let (Some(b), Some(c)) = (base.machine_ms, cand.machine_ms) else {
        return decided;
    };
    let slower = c / b - 1.0;
    // How many standard errors the candidate's machine ran slower (negative: faster).
    let z = match (base.machine_se_ms, cand.machine_se_ms) {
        (Some(sb), Some(sc)) if sb.hypot(sc) > 0.0 => Some((c - b) / sb.hypot(sc)),
        _ => None,
    };
    let apart =
        |sign: f64| sign * slower > MACHINE_LIMIT || z.is_some_and(|z| sign * z > MACHINE_Z);
    let made_by_machine = match decided.decision {
        Decision::Fail => apart(1.0),
        Decision::Pass => apart(-1.0),
        Decision::CannotDecide => false,
    };
    if !made_by_machine {
        return decided;
    }
    let beyond = if slower.abs() > MACHINE_LIMIT {
        format!("more than {:.0} % apart", 100.0 * MACHINE_LIMIT)
    } else {
        format!(
            "{:.1} standard errors apart, beyond the readings' own noise",
            z.unwrap_or(0.0).abs()
        )
    };
    let (how, what) = if slower > 0.0 {
        ("slower", "a drop of that size may be the machine's")
    } else {
        ("faster", "the faster machine may hide a drop of that size")
    };
    Decided {
        decision: Decision::CannotDecide,
        why: format!(
            "{}; but the machine itself ran {:.1} % {how} in the candidate's search (its reference loop {c:.2} ms against {b:.2} ms, {beyond}): {what}",
            decided.why,
            100.0 * slower.abs(),
        ),
    }
}

/// [`decide`] on the brackets alone: the changes they allow are the interval.
fn decide_brackets(base: &Bracket, cand: &Bracket, least: f64) -> Decided {
    let (worst, best) = changes(base, cand);
    let span = human::change_interval(worst, best);
    let limit = human::change(least);
    let (decision, why) = if best <= least {
        (
            Decision::Fail,
            format!("the brackets allow {span}: even the most favourable is at or below {limit}"),
        )
    } else if worst > least {
        (
            Decision::Pass,
            format!("the brackets allow {span}: even the least favourable is above {limit}"),
        )
    } else {
        (
            Decision::CannotDecide,
            format!("the brackets allow {span}: either side of {limit}"),
        )
    };
    Decided { decision, why }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(c: f64, f: f64) -> Bracket {
        bracket(c, f, Some(c))
    }

    fn bracket(low: f64, high: f64, capacity: Option<f64>) -> Bracket {
        Bracket::bare(low, high, capacity)
    }

    /// `b` searched on a machine whose reference loop read `ms` on average (± `se`).
    fn on_machine(b: Bracket, ms: f64, se: Option<f64>) -> Bracket {
        Bracket {
            machine_ms: Some(ms),
            machine_se_ms: se,
            ..b
        }
    }

    /// `b` whose server's peak moved `spread` within its search.
    fn peak_moved(b: Bracket, spread: f64) -> Bracket {
        Bracket {
            peak_spread: Some(spread),
            ..b
        }
    }

    /// #33: six nginx searches of one server, 80 000 to 96 000 req/s, each with its peak
    /// moving 1-19 % within it: a crossing no larger than that move is not a regression.
    #[test]
    fn a_drop_within_how_far_the_servers_own_peak_moved_is_not_decided() {
        let base = found(96_000.0, 100_000.0);
        let cand = found(80_000.0, 84_000.0);
        assert_eq!(decision(&base, &cand), Decision::Fail);
        // −16.7 %, and the baseline's peak moved 19.3 %: maybe the machine.
        let d = decide(&peak_moved(base, 0.193), &peak_moved(cand, 0.076), -0.05);
        assert_eq!(d.decision, Decision::CannotDecide, "{}", d.why);
        assert!(
            d.why.contains("moved 19.3 % within the baseline's search")
                && d.why.contains("a drop of 16.7 %"),
            "{}",
            d.why
        );
        // A drop beyond both moves stands; so does one with no peak recorded.
        let far = found(60_000.0, 62_000.0);
        let d = decide(&peak_moved(base, 0.193), &peak_moved(far, 0.05), -0.05);
        assert_eq!(d.decision, Decision::Fail, "{}", d.why);
        assert_eq!(decision(&base, &peak_moved(cand, 0.0)), Decision::Fail);
        // A pass is not touched: the rule holds back alarms only.
        let same = peak_moved(found(96_000.0, 100_000.0), 0.3);
        assert_eq!(decision(&same, &same), Decision::Pass);
    }

    fn decision(base: &Bracket, cand: &Bracket) -> Decision {
        decide(base, cand, -0.05).decision
    }

    #[test]
    fn a_drop_counts_only_when_the_brackets_say_so() {
        let base = found(41_800.0, 44_000.0);
        let drop = found(37_100.0, 38_900.0);
        assert_eq!(
            sentence(&base, &drop),
            "capacity 41800 → 37100 req/s (−11.2 %; the brackets allow −15.7 .. −6.9 %)"
        );
        // Even 38 900 against 41 800 is −6.9 %: crossed.
        let d = decide(&base, &drop, -0.05);
        assert_eq!(d.decision, Decision::Fail);
        assert!(d.why.contains("allow −15.7 .. −6.9 %"), "{}", d.why);
        let same = found(42_900.0, 45_000.0);
        assert!(sentence(&base, &same).contains("allow −2.5 .. +7.7 %"));
        assert_eq!(decision(&base, &same), Decision::Pass);
        // Apart, but 39 000..41 000 against 41 800..44 000 is −11.4 % to −1.9 %: the drop
        // may be within 5 % or beyond it.
        let between = found(39_000.0, 41_000.0);
        let d = decide(&base, &between, -0.05);
        assert_eq!(d.decision, Decision::CannotDecide, "{}", d.why);
        assert!(d.why.contains("either side of −5.0 %"), "{}", d.why);
        // A generator-bound candidate above the baseline's bracket is no drop.
        let above = bracket(50_000.0, f64::INFINITY, None);
        assert_eq!(decision(&base, &above), Decision::Pass);
        assert!(sentence(&base, &above).contains("above 50000"));
        // A generator-bound baseline leaves an open top: a candidate below its floor by more
        // than the limit has dropped, and two open brackets say nothing of the change.
        assert_eq!(decision(&above, &base), Decision::Fail);
        assert_eq!(decision(&above, &above), Decision::CannotDecide);
        let below = bracket(0.0, 100.0, None);
        assert_eq!(decision(&below, &below), Decision::CannotDecide);
    }

    /// #33 and #53: two searches of one server pass `capacity>-5%` only when their brackets
    /// rule out a drop of 5 % (the same narrow bracket, or the candidate's above); brackets
    /// that overlap or touch but allow a larger drop cannot decide it (they were a pass before
    /// #53: an A/A pair was "within" `capacity>-10%` while allowing −14.8 %). Never a fail.
    #[test]
    fn two_searches_of_one_server_are_never_a_regression() {
        let same = found(43_200.0, 44_800.0);
        assert_eq!(decision(&same, &same), Decision::Pass);
        let pairs = [
            (found(43_200.0, 44_800.0), found(44_000.0, 46_400.0)),
            (found(43_200.0, 44_800.0), found(44_800.0, 46_400.0)),
            // Wide brackets that overlap: they allow −18.2 % .. +14.8 %.
            (found(41_800.0, 44_000.0), found(36_000.0, 48_000.0)),
        ];
        for (a, b) in pairs {
            // Whichever way round allows the larger drop cannot decide; neither is a fail.
            let both = [decide(&a, &b, -0.05), decide(&b, &a, -0.05)];
            assert!(
                both.iter().all(|d| d.decision != Decision::Fail),
                "{both:?}"
            );
            assert!(
                both.iter().any(|d| d.decision == Decision::CannotDecide),
                "{both:?}"
            );
        }
        // The same search compared with itself, an open bracket: no percentage it cannot
        // support (#52: "−100.0 %").
        let open = bracket(16_000.0, f64::INFINITY, None);
        assert_eq!(
            sentence(&open, &open),
            "capacity above 16000 → above 16000 req/s (the brackets allow any drop .. any rise)"
        );
        // #33's pair, 25 600 → 16 800 with ±2 % brackets, is a drop the brackets cannot
        // hide: crossed. That it came from two searches of one server is the brackets'
        // fault (the search's), not the rule's.
        let (a, b) = (found(25_600.0, 26_400.0), found(16_800.0, 17_600.0));
        assert_eq!(decision(&a, &b), Decision::Fail);
    }

    /// #33: a search on a machine that ran slower is no regression of the server's, nor is
    /// a pass on a faster one a proof of none.
    #[test]
    fn a_change_the_machines_own_speed_could_make_is_not_decided() {
        let on = |b: Bracket, ms: f64| on_machine(b, ms, None);
        let base = on(found(64_000.0, 66_000.0), 18.0);
        let drop = found(52_000.0, 54_000.0);
        // The candidate's machine ran 15 % slower: the drop may be the machine's.
        let d = decide(&base, &on(drop, 20.7), -0.05);
        assert_eq!(d.decision, Decision::CannotDecide, "{}", d.why);
        assert!(
            d.why.contains("ran 15.0 % slower") && d.why.contains("20.70 ms against 18.00 ms"),
            "{}",
            d.why
        );
        // Within 5 % of each other, or the candidate on the faster machine: still crossed.
        assert_eq!(
            decide(&base, &on(drop, 18.8), -0.05).decision,
            Decision::Fail
        );
        assert_eq!(
            decide(&base, &on(drop, 16.0), -0.05).decision,
            Decision::Fail
        );
        // A pass on a machine 15 % faster may hide a drop; on a slower one it stands.
        let same = found(64_000.0, 66_000.0);
        let d = decide(&base, &on(same, 15.3), -0.05);
        assert_eq!(d.decision, Decision::CannotDecide, "{}", d.why);
        assert!(d.why.contains("faster machine may hide"), "{}", d.why);
        assert_eq!(
            decide(&base, &on(same, 20.7), -0.05).decision,
            Decision::Pass
        );
        // Recorded on one side only: the brackets alone.
        assert_eq!(decide(&base, &drop, -0.05).decision, Decision::Fail);
    }

    /// #33: within 5 % but beyond what the two means' standard errors allow, the machines
    /// differ (one run of six nginx searches: a loop 2.5 % slower, capacities 10-25 % lower).
    #[test]
    fn machines_apart_beyond_their_standard_errors_leave_the_change_undecided() {
        let on = |b: Bracket, ms: f64, se: f64| on_machine(b, ms, Some(se));
        let base = on(found(100_000.0, 104_000.0), 19.96, 0.21);
        let drop = found(74_000.0, 88_000.0);
        // 20.50 against 19.96 ms: 2.7 % slower, z = 0.54 / 0.29 = 1.9.
        let d = decide(&base, &on(drop, 20.50, 0.20), -0.05);
        assert_eq!(d.decision, Decision::CannotDecide, "{}", d.why);
        assert!(
            d.why.contains("2.7 % slower") && d.why.contains("1.9 standard errors apart"),
            "{}",
            d.why
        );
        // The same difference read from noisier means (z 0.9): the brackets' verdict stands.
        assert_eq!(
            decide(&base, &on(drop, 20.50, 0.55), -0.05).decision,
            Decision::Fail
        );
        // Faster beyond the noise: a fail stands, a pass does not.
        assert_eq!(
            decide(&base, &on(drop, 19.40, 0.20), -0.05).decision,
            Decision::Fail
        );
        let same = found(100_000.0, 104_000.0);
        let d = decide(&base, &on(same, 19.40, 0.20), -0.05);
        assert_eq!(d.decision, Decision::CannotDecide, "{}", d.why);
        // Without standard errors (searches recorded before them): the 5 % limit alone.
        let plain = |b: Bracket, ms: f64| on_machine(b, ms, None);
        assert_eq!(
            decide(&plain(base, 19.96), &plain(drop, 20.50), -0.05).decision,
            Decision::Fail
        );
    }

    #[test]
    fn thresholds_read_as_the_least_change_allowed() {
        assert_eq!(parse_threshold("capacity>-5%"), Ok(-0.05));
        assert_eq!(parse_threshold("capacity>=-2.5%"), Ok(-0.025));
        for bad in ["p99>-5%", "capacity<-5%", "capacity>-5", "capacity>x%"] {
            assert!(parse_threshold(bad).is_err(), "{bad}");
        }
    }
}
