//! Rates where the server tipped: at one offered rate, some probes met a latency condition
//! and others missed it by an order of magnitude. A queue that merely grows moves its
//! percentiles smoothly with the rate; probes ten times apart at the same rate are two states,
//! one where the server keeps up and one where it fell behind into a backlog it did not drain
//! within the probe (a probe that tipped late in its run lies in between, so only the far
//! ones are counted). Near such a knee repeated searches land anywhere among these
//! rates (#33: nginx on 2 vCPUs, p99 2-4 ms or 140-380 ms at one rate, capacities from
//! 74 000 to 104 000 req/s from one search to the next), and the page says so, so that the
//! bracket is read rather than the point. The users page asks the same of its steps, whose
//! `rate` is a number of users.
//!
//! Not for: deciding a rate (the search's rule does), nor any condition but a percentile.

use std::collections::BTreeMap;

use webscope_load::slo::{Metric, Slo, Verdict};
use webscope_load::thousands;
use webscope_report::human::duration;

use webscope_lab::objective::Outcome;
use webscope_lab::step::Judged;

/// How far past the passing probes' largest figure a failing probe's must lie to count as
/// the other state: ten times, as far as a percentile moves over the whole of a smooth knee
/// (#33's probes: 2-4 ms below it, 5-20 ms just past it, 140 ms and more when tipped).
const APART: f64 = 10.0;

/// One rate where a percentile condition split the probes into two states.
#[derive(Debug, Clone, PartialEq)]
pub struct Tipped {
    /// The offered rate (req/s) or number of users where the probes tipped.
    pub rate: f64,
    /// As the objective writes it: `p99<=5ms`.
    pub condition: String,
    /// Probes that met the objective, and their figures' range, µs.
    pub passed: usize,
    /// Lowest and highest figure of the passing probes on this condition, µs.
    pub pass_us: (f64, f64),
    /// Probes that failed on this condition.
    pub failed: usize,
    /// Of those, the ones ten times (`APART`) past the passing probes, and their range, µs.
    pub far: usize,
    /// Lowest and highest figure of the far probes, µs.
    pub far_us: (f64, f64),
}

/// The rates (ascending) where the probes tipped.
pub fn tipped(probes: &[Judged]) -> Vec<Tipped> {
    let mut by_rate: BTreeMap<u64, Vec<&Judged>> = BTreeMap::new();
    for j in probes {
        if matches!(j.outcome, Outcome::Pass | Outcome::Fail) {
            by_rate
                .entry(j.level.value().round() as u64)
                .or_default()
                .push(j);
        }
    }
    by_rate
        .values()
        .flat_map(|at| conditions(at).into_iter().filter_map(|c| split(at, &c)))
        .collect()
}

/// The percentile conditions the probes at one rate failed on.
fn conditions(at: &[&Judged]) -> Vec<String> {
    let mut out: Vec<String> = at
        .iter()
        .filter(|j| j.outcome == Outcome::Fail)
        .flat_map(|j| j.checks.iter())
        .filter(|c| c.verdict == Verdict::Fail && is_percentile(&c.condition))
        .map(|c| c.condition.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A latency condition (`p99<=5ms`, `max<=1s`), by the objective's own grammar.
fn is_percentile(condition: &str) -> bool {
    Slo::parse(condition).is_ok_and(|slo| {
        slo.conditions
            .iter()
            .all(|c| matches!(c.metric, Metric::Latency { .. }))
    })
}

fn split(at: &[&Judged], condition: &str) -> Option<Tipped> {
    let figure = |j: &Judged, verdict: Verdict| {
        j.checks
            .iter()
            .find(|c| c.condition == condition && c.verdict == verdict)
            .and_then(|c| c.measured)
            .filter(|m| m.is_finite())
    };
    let passed: Vec<f64> = at
        .iter()
        .filter(|j| j.outcome == Outcome::Pass)
        .filter_map(|j| figure(j, Verdict::Pass))
        .collect();
    let failed: Vec<f64> = at
        .iter()
        .filter(|j| j.outcome == Outcome::Fail)
        .filter_map(|j| figure(j, Verdict::Fail))
        .collect();
    let range = |v: &[f64]| {
        v.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(*x), hi.max(*x))
            })
    };
    let pass_us = range(&passed);
    let far: Vec<f64> = failed
        .iter()
        .copied()
        .filter(|f| *f >= APART * pass_us.1)
        .collect();
    if passed.is_empty() || far.is_empty() {
        return None;
    }
    Some(Tipped {
        rate: at[0].level.value(),
        condition: condition.to_string(),
        passed: passed.len(),
        pass_us,
        failed: failed.len(),
        far: far.len(),
        far_us: range(&far),
    })
}

/// What a search varied: the capacity search an offered rate, the users search a number of
/// closed-loop users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// The capacity search: an offered rate, req/s.
    Rate,
    /// The users search: a number of closed-loop users.
    Users,
}

/// The page's sentence: the load with the most probes, and how many others tipped.
pub fn sentence(tipped: &[Tipped], load: Load) -> Option<String> {
    let most = tipped.iter().max_by_key(|t| t.passed + t.failed)?;
    let name = most.condition.split("<").next().unwrap_or(&most.condition);
    let (at, other, others, unit, probe, why) = match load {
        Load::Rate => (
            format!("{} req/s", thousands(most.rate)),
            "rate",
            "rates",
            "probe",
            "probes",
            "Near its capacity it either keeps up or falls into a backlog it does not drain within a probe, so repeated searches land anywhere among such rates",
        ),
        Load::Users => (
            format!("{} users", thousands(most.rate)),
            "number of users",
            "numbers of users",
            "step",
            "steps",
            "With that many users it was in one of two states, so repeated searches land anywhere among such numbers",
        ),
    };
    let others = match tipped.len() - 1 {
        0 => String::new(),
        1 => format!(" (and at one other {other})"),
        n => format!(" (and at {n} other {others})"),
    };
    let (passed, far, failed) = (most.passed, most.far, most.failed);
    let passed = match passed {
        1 => unit.to_string(),
        n => format!("{n} {probe}"),
    };
    Some(format!(
        "The server tipped: at {at}{others} its {name} was {} in the {passed} that met the objective, and {} in {far} of the {failed} that failed on it, ten times and more past them. {why}: read the bracket, not the point.",
        span(most.pass_us),
        span(most.far_us),
    ))
}

fn span((low_us, high_us): (f64, f64)) -> String {
    let (low, high) = (duration(low_us / 1e6), duration(high_us / 1e6));
    if low == high {
        low
    } else {
        format!("{low} to {high}")
    }
}

/// report.json's `tipped`.
pub fn entries(tipped: &[Tipped]) -> Vec<webscope_lab::results::capacity::Tipped> {
    tipped
        .iter()
        .map(|t| webscope_lab::results::capacity::Tipped {
            rate_rps: t.rate,
            condition: t.condition.clone(),
            passed: t.passed,
            pass_us: [t.pass_us.0, t.pass_us.1],
            failed: t.failed,
            far: t.far,
            far_us: [t.far_us.0, t.far_us.1],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A probe at `rate` whose p99 was `p99_ms` against `p99<=5ms`.
    fn probe(rate: f64, p99_ms: f64) -> Judged {
        let ok = p99_ms <= 5.0;
        serde_json::from_value(json!({
            "number": 1, "rate": rate, "outcome": if ok { "pass" } else { "fail" },
            "reason": "", "not_sent_share": 0.0,
            "checks": [
                {"condition": "p99<=5ms", "measured": p99_ms * 1e3,
                 "verdict": if ok { "pass" } else { "fail" }, "line": ""},
                {"condition": "errors<=0.1%", "measured": 0.0, "verdict": "pass", "line": ""},
            ],
            "bound": "server CPU", "bound_reading": "", "warmup_s": 0.2,
            "cooldown": {"waited_s": 0.0, "open_before": 0, "open_after": 0, "time_wait": 0, "settled": true}
        }))
        .unwrap()
    }

    #[test]
    fn two_states_at_one_rate_are_named_a_smooth_knee_is_not() {
        // #33's search at 96 000: four probes at 2.2-3.8 ms, two at 172 and 384 ms, one that
        // tipped late in its run at 9.2 ms.
        let mut probes: Vec<Judged> = [2.2, 172.0, 3.4, 2.9, 384.0, 3.8, 9.2]
            .iter()
            .map(|ms| probe(96_000.0, *ms))
            .collect();
        // A smooth knee: just past the limit, as a growing queue is.
        probes.extend([4.1, 6.0, 9.2].iter().map(|ms| probe(100_000.0, *ms)));
        // All failing, however far: one state.
        probes.extend([200.0, 300.0].iter().map(|ms| probe(120_000.0, *ms)));
        let t = tipped(&probes);
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(
            (t[0].rate, t[0].passed, t[0].failed, t[0].far),
            (96_000.0, 4, 3, 2)
        );
        assert_eq!((t[0].pass_us.1, t[0].far_us.0), (3_800.0, 172_000.0));
        let said = sentence(&t, Load::Rate).unwrap();
        assert!(
            said.contains("at 96 000 req/s its p99 was 2.20 ms to 3.80 ms in the 4 probes")
                && said.contains("172 ms to 384 ms in 2 of the 3 that failed on it"),
            "{said}"
        );
        assert_eq!(entries(&t)[0].far_us[1], 384_000.0);
        // Under ten times apart: not tipped.
        let near: Vec<Judged> = [3.0, 25.0].iter().map(|ms| probe(90_000.0, *ms)).collect();
        assert!(tipped(&near).is_empty());
        // A fail on errors, however far from the passes' figure: not a percentile's two states.
        let mut refused = probe(80_000.0, 0.001);
        refused.outcome = Outcome::Fail;
        refused.checks[1].verdict = Verdict::Fail;
        refused.checks[1].measured = Some(0.4);
        assert!(tipped(&[probe(80_000.0, 0.001), refused]).is_empty());
        assert_eq!(sentence(&[], Load::Rate), None);
    }

    #[test]
    fn a_users_search_that_tipped_is_told_in_users_and_steps() {
        // A users step is judged as a capacity probe, its `rate` the number of users.
        let step = |ms: f64| {
            let mut j = probe(40.0, ms);
            j.checks[0].condition = "page_p95<=10ms".into();
            if ms > 10.0 {
                j.outcome = Outcome::Fail;
                j.checks[0].verdict = Verdict::Fail;
            } else {
                j.outcome = Outcome::Pass;
                j.checks[0].verdict = Verdict::Pass;
            }
            j
        };
        let t = tipped(&[step(4.0), step(900.0), step(5.0), step(700.0)]);
        let said = sentence(&t, Load::Users).unwrap();
        assert!(
            said.contains("at 40 users its page_p95 was 4 ms to 5 ms in the 2 steps that met the objective, and 700 ms to 900 ms in 2 of the 2 that failed on it"),
            "{said}"
        );
    }
}
