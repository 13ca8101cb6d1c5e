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
fn a_lone_stall_below_the_knee_is_probed_again_and_a_miss_once_it_repeats() {
    // At 8 000 req/s the first probe stalls, the rest pass; the knee is at 41 800.
    let stall_once = by_probe(|rate, n| match rate {
        r if r == 8_000.0 && n == 1 => ProbeOutcome::Fail,
        r if r <= 41_800.0 => ProbeOutcome::Pass,
        _ => ProbeOutcome::Fail,
    });
    let (ending, rates) = search(
        Plan {
            max_probes: 60,
            ..range_plan()
        },
        stall_once,
    );
    // Probed again, not moved on at once: six probes there, one a miss. "Reliably" means
    // every probe: L falls below it, and the tipping range spans it up to the knee.
    assert_eq!(
        rates.iter().filter(|&&r| r == 8_000.0).count(),
        6,
        "{rates:?}"
    );
    let Ending::Found {
        capacity,
        first_miss,
        fails_at,
        unsettled: Some(t),
        ..
    } = ending
    else {
        panic!("{ending:?}")
    };
    assert!(
        capacity < 8_000.0 && first_miss == Some(8_000.0),
        "{capacity} {first_miss:?}"
    );
    assert!(fails_at > 41_800.0 && fails_at < 46_000.0, "U {fails_at}");
    assert!(t.passes > 0 && t.passes < t.probes, "{t:?}");
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
        assert!(rates.len() <= 45, "{seed}: {} probes", rates.len());
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
    // As nginx did on a shared host: 6 200 passed 3 probes of 4, 6 400 missed 1 of 6 (a
    // confirmed miss), 3 100 passed all 3; then the budget ran out. L is 3 100: a rate with
    // a fail is not "every probe met the objective", however many passed.
    let mut s = Search::new(range_plan());
    let mut at = |rate: f64, pass: u32, fail: u32| {
        (0..pass).for_each(|_| s.record(rate, ProbeOutcome::Pass));
        (0..fail).for_each(|_| s.record(rate, ProbeOutcome::Fail));
    };
    at(3_100.0, 3, 0);
    at(6_200.0, 3, 1);
    at(6_400.0, 5, 1);
    let Ending::Found {
        capacity, passes, ..
    } = s.out_of_probes_range()
    else {
        panic!()
    };
    assert_eq!((capacity, passes), (3_100.0, (3, 3)));
}
