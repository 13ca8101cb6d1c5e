//! The range rule (`range.rs`) against servers whose behaviour is known by construction.

use super::tests::{by_probe, flaky_server, search, server, sloping_server};
use super::*;

fn range_plan() -> Plan {
    Plan {
        rule: Rule::Range,
        max_probes: 40,
        ..Plan::new(1_000.0)
    }
}

#[test]
fn the_range_of_a_sharp_knee_is_its_bracket_with_no_tipping_rates() {
    for capacity in [137.0, 41_800.0] {
        let (ending, rates) = search(range_plan(), server(capacity));
        let Ending::Found {
            capacity: l,
            fails_at: u,
            first_miss: Some(m),
            unsettled: None,
            ..
        } = ending
        else {
            panic!("{capacity}: {ending:?}");
        };
        // L below the knee, M = U above it, within the precision.
        assert!(l <= capacity && m > capacity && m == u, "{l} {m} {u}");
        assert!((m - l) / l <= 0.05, "{l}..{m}");
        assert!(rates.len() <= 36, "{} probes", rates.len());
        let text = ending.sentence();
        assert!(
            text.starts_with("capacity: reliably up to ") && text.contains(": no tipping range"),
            "{text}"
        );
    }
}

#[test]
fn the_range_of_a_flaky_knee_is_reliable_up_to_l_and_failing_from_u() {
    // Always up to 40 000, each rate's second probe failing up to 60 000, never above.
    let (ending, _) = search(range_plan(), flaky_server());
    let Ending::Found {
        capacity: l,
        fails_at: u,
        first_miss: Some(m),
        unsettled: Some(t),
        ..
    } = ending
    else {
        panic!("{ending:?}");
    };
    assert!(
        l <= 40_000.0 && (m - l) / l <= 0.05 && m > 40_000.0,
        "{l}..{m}"
    );
    assert!(u > 60_000.0 && (u - 60_000.0) / 60_000.0 <= 0.1, "U {u}");
    // The tipping rates lie between, each with passes and fails.
    assert!(
        t.from == m && t.to < u && t.passes > 0 && t.passes < t.probes,
        "{t:?}"
    );
    let text = ending.sentence();
    assert!(text.contains("tipping between"), "{text}");
    // What compare and --baseline use: L in its own bracket [L, M], not [L, U].
    let record = crate::results::RpsEnding::from(&ending);
    use crate::results::EndingRecord;
    assert_eq!(record.bracket(), Some((l, m, Some(l))));
}

#[test]
fn a_lone_stall_below_the_knee_is_probed_again_and_l_goes_on_above_it() {
    // At 8 000 req/s the first probe stalls, the rest pass; the knee is at 41 800.
    let stall_once = by_probe(|rate, n| match rate {
        r if r == 8_000.0 && n == 1 => Outcome::Fail,
        r if r <= 41_800.0 => Outcome::Pass,
        _ => Outcome::Fail,
    });
    let (ending, rates) = search(range_plan(), stall_once);
    // Probed again, not moved on at once: two passes clear it, and the search grows on.
    assert_eq!(
        rates.iter().filter(|&&r| r == 8_000.0).count(),
        3,
        "{rates:?}"
    );
    let Ending::Found {
        capacity,
        first_miss: Some(m),
        fails_at,
        ref lone_misses,
        ..
    } = ending
    else {
        panic!("{ending:?}")
    };
    // L at the knee, as if the stall had not been: the stall is said, below it.
    assert!(
        capacity <= 41_800.0 && m > 41_800.0 && (m - capacity) / capacity <= 0.05,
        "{capacity}..{m}"
    );
    assert_eq!(lone_misses, &[8_000.0]);
    assert!(fails_at > 41_800.0 && fails_at < 46_000.0, "U {fails_at}");
    let text = ending.sentence();
    assert!(
        text.contains("below it a lone miss at 8 000 req/s")
            && text.contains("the machine's stall"),
        "{text}"
    );
}

#[test]
fn a_stall_that_repeats_at_its_rate_is_a_miss_and_l_stays_below_it() {
    // At 8 000 req/s the first two probes fail: not a stall but a miss, whatever above.
    let stall_twice = by_probe(|rate, n| match rate {
        r if r == 8_000.0 && n <= 2 => Outcome::Fail,
        r if r <= 41_800.0 => Outcome::Pass,
        _ => Outcome::Fail,
    });
    let (ending, _) = search(range_plan(), stall_twice);
    let Ending::Found {
        capacity,
        first_miss,
        ref lone_misses,
        ..
    } = ending
    else {
        panic!("{ending:?}")
    };
    assert!(
        capacity < 8_000.0 && first_miss == Some(8_000.0),
        "{capacity} {first_miss:?}"
    );
    assert!(lone_misses.is_empty(), "{lone_misses:?}");
}

#[test]
fn a_lone_miss_at_the_top_is_not_l_and_l_is_the_clean_rate_below_it() {
    // The rate just below the knee stalls once; nothing above it is clean, so L stays
    // below it and the stall is not called the machine's.
    let mut s = Search::new(range_plan());
    let mut at = |rate: f64, pass: u32, fail: u32| {
        (0..pass).for_each(|_| s.record(rate, Outcome::Pass, ""));
        (0..fail).for_each(|_| s.record(rate, Outcome::Fail, ""));
    };
    at(40_000.0, 3, 0);
    at(41_000.0, 2, 1);
    at(42_000.0, 0, 3);
    let Ending::Found {
        capacity,
        first_miss,
        ref lone_misses,
        ..
    } = s.out_of_probes_range()
    else {
        panic!()
    };
    assert_eq!((capacity, first_miss), (40_000.0, Some(41_000.0)));
    assert!(lone_misses.is_empty(), "{lone_misses:?}");
}

#[test]
fn searches_of_a_sloping_server_by_the_range_rule_put_l_where_it_passes_and_u_where_it_fails() {
    // The pass share falls from 1 at 60 000 req/s to 0 at 90 000.
    let share = |rate: f64| ((90_000.0 - rate) / 30_000.0).clamp(0.0, 1.0);
    let (mut ls, mut u_wrong) = (Vec::new(), 0);
    for seed in 1..=20 {
        let plan = Plan {
            max_probes: 60,
            ..range_plan()
        };
        let (ending, rates) = search(plan, sloping_server(seed));
        let Ending::Found {
            capacity: l,
            fails_at: u,
            fails,
            ..
        } = ending
        else {
            panic!("{seed}: {ending:?}");
        };
        // U confirmed by three fails; L where the server passes at least a third of probes.
        assert_eq!(fails, (3, 3), "{seed}: U {u}");
        assert!(share(l) >= 0.3, "{seed}: L {l}");
        // U where it mostly fails, but for a run of unlucky fails down the bisection (three
        // in a row at each rate, at 64 000 in one search of these twenty).
        u_wrong += usize::from(share(u) > 0.5);
        // Each lone fail in the tipping range is probed again (#48's lone misses): up to 47
        // probes of these twenty, 42 before.
        assert!(rates.len() <= 48, "{seed}: {} probes", rates.len());
        ls.push(l);
    }
    assert!(
        u_wrong <= 1,
        "{u_wrong} of 20 searches put U where the server mostly passes"
    );
    ls.sort_by(f64::total_cmp);
    // Most searches' L where it passes four probes in five or more.
    assert!(share(ls[10]) >= 0.6, "{ls:?}");
}

#[test]
fn probes_that_run_out_never_call_a_rate_with_a_fail_reliable() {
    // As nginx did on a shared host: 6 200 passed 3 probes of 4, 6 400 missed 1 of 6, 3 100
    // passed all 3; then the budget ran out. L is 3 100: a rate with a fail is not "every
    // probe met the objective", however many passed; and with no second fail anywhere
    // there is no miss to bound it.
    let mut s = Search::new(range_plan());
    let mut at = |rate: f64, pass: u32, fail: u32| {
        (0..pass).for_each(|_| s.record(rate, Outcome::Pass, ""));
        (0..fail).for_each(|_| s.record(rate, Outcome::Fail, ""));
    };
    at(3_100.0, 3, 0);
    at(6_200.0, 3, 1);
    at(6_400.0, 5, 1);
    assert_eq!(
        s.out_of_probes_range(),
        Ending::OutOfProbes {
            pass: Some(3_100.0),
            fail: None
        }
    );
    // A confirmed miss above bounds it: found, L still 3 100, its first miss 6 200.
    s.record(12_800.0, Outcome::Fail, "");
    s.record(12_800.0, Outcome::Fail, "");
    let Ending::Found {
        capacity,
        passes,
        first_miss,
        ..
    } = s.out_of_probes_range()
    else {
        panic!()
    };
    assert_eq!(
        (capacity, passes, first_miss),
        (3_100.0, (3, 3), Some(6_200.0))
    );
}
