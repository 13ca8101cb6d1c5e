use super::*;
use Outcome::{Disturbed, Fail, Pass};

fn tally(pairs: &[(Outcome, Outcome)]) -> Tally {
    Tally::of(pairs)
}

#[test]
fn pairs_where_both_met_settle_it_unconfirmed_once_the_rest_could_not_confirm() {
    // Five both-met pairs leave five: B missing alone in all five would give p = 1/32.
    let five = vec![(Pass, Pass); 5];
    assert_eq!(tally(&five).settled(), None);
    // Six leave four: p = 1/16 at best, over 5 %.
    let six = vec![(Pass, Pass); 6];
    assert_eq!(tally(&six).settled(), Some(false));
}

#[test]
fn b_missing_alone_is_confirmed_only_when_the_rest_could_not_undo_it() {
    // Eight of eight: the two left, both A's misses, would give 8 of 10 (p = 0.055).
    let eight = vec![(Pass, Fail); 8];
    assert_eq!(tally(&eight).settled(), None);
    let nine = vec![(Pass, Fail); 9];
    let t = tally(&nine);
    assert_eq!(t.settled(), Some(true));
    assert!((t.p() - 1.0 / 512.0).abs() < 1e-12, "{}", t.p());
    // Five of five with five both-met pairs: p = 1/32, counted ten.
    let mut mixed = vec![(Pass, Fail); 5];
    mixed.extend(vec![(Fail, Fail); 5]);
    assert_eq!(tally(&mixed).settled(), Some(true));
}

#[test]
fn misses_on_both_sides_do_not_confirm() {
    let pairs: Vec<_> = (0..10)
        .map(|i| {
            if i % 3 == 0 {
                (Fail, Pass)
            } else {
                (Pass, Fail)
            }
        })
        .collect();
    // Six against four: p = 0.377.
    let t = tally(&pairs);
    assert_eq!((t.b_missed, t.a_missed), (6, 4));
    assert_eq!(t.settled(), Some(false));
}

#[test]
fn pairs_not_counted_are_taken_again_up_to_a_bound() {
    let mut pairs = vec![(Disturbed, Pass); 3];
    pairs.push((Pass, Fail));
    let t = tally(&pairs);
    assert_eq!((t.counted(), t.not_counted), (1, 3));
    assert_eq!(t.settled(), None);
    let all = vec![(Pass, Disturbed); MOST_TRIED];
    assert_eq!(tally(&all).settled(), Some(false), "nothing counted");
}

/// Runs checks against two servers that miss at their rates with chances `miss_a` and
/// `miss_b`; how many of `n` confirmed B worse.
fn confirmed(miss_a: f64, miss_b: f64, n: usize, seed: u64) -> usize {
    let mut rng = webscope_workload::Rng::new(seed);
    let rates = Rates {
        a: 1000.0,
        b: 950.0,
    };
    let mut yes = 0;
    for i in 0..n {
        let mut check = Check::new(rates, Order::seeded(seed + i as u64));
        while let Some(p) = check.next(|_| Duration::from_secs(2)) {
            let miss = if p.side == Side::A { miss_a } else { miss_b };
            let outcome = if rng.next_f64() < miss { Fail } else { Pass };
            check.record(p.side, outcome);
        }
        yes += usize::from(check.tally().settled() == Some(true));
    }
    yes
}

#[test]
fn sides_missing_alike_are_confirmed_worse_at_most_one_check_in_twenty() {
    // Bistable at the rate: each side misses half the time, independently.
    let n = 2_000;
    for (miss, seed) in [(0.5, 11), (0.2, 12), (0.8, 13)] {
        let false_alarms = confirmed(miss, miss, n, seed);
        assert!(
            false_alarms * 20 <= n,
            "{false_alarms} of {n} at a miss chance of {miss}"
        );
    }
}

#[test]
fn a_b_that_misses_far_more_often_is_confirmed() {
    let n = 500;
    let found = confirmed(0.1, 0.9, n, 5);
    assert!(found * 10 >= n * 9, "{found} of {n}");
}

#[test]
fn a_check_runs_pairs_in_a_balanced_order_at_the_two_rates() {
    let rates = Rates {
        a: 1000.0,
        b: 950.0,
    };
    let mut check = Check::new(rates, Order::seeded(3));
    let mut taken = Vec::new();
    while let Some(p) = check.next(|_| Duration::from_secs(1)) {
        check.record(p.side, Pass);
        taken.push(p);
    }
    // Six pairs where both met settle it.
    assert_eq!(check.tried(), 6);
    assert_eq!(taken.len(), 12);
    let mut b_first = 0;
    for pair in taken.chunks(2) {
        assert_eq!(pair[0].step, pair[1].step);
        assert_ne!(pair[0].side, pair[1].side);
        b_first += usize::from(pair[0].side == Side::B);
        for p in pair {
            assert!(p.check);
            assert_eq!(p.probe.rate, rates.of_side(p.side));
        }
    }
    assert_eq!(b_first, 3, "balanced over pairs");
    assert_eq!(taken[0].name().split('-').nth(1), Some("check"));
    assert_eq!(
        SideProbe::check_of(&taken[0].name()),
        Some((taken[0].side, 1))
    );
    assert_eq!(
        SideProbe::side_of(&taken[0].name()),
        None,
        "not a search's probe"
    );
}

fn crossed() -> AbVerdict {
    AbVerdict {
        threshold: "capacity>-5%".into(),
        verdict: Said::Crossed,
        sentence: "B against A: capacity 36000 → 28000 req/s: CROSSED capacity>-5% (…)".into(),
    }
}

#[test]
fn a_crossing_is_said_only_when_the_check_confirms_it() {
    let rates = Some(Rates {
        a: 36_000.0,
        b: 34_200.0,
    });
    let v = judge(crossed(), rates, &[(Pass, Fail); 9]);
    assert_eq!(v.verdict, Said::Crossed, "{}", v.sentence);
    assert!(
        v.sentence.contains("confirmed by 9 pairs"),
        "{}",
        v.sentence
    );
    assert!(
        v.sentence.contains("36,000 req/s") || v.sentence.contains("36 000 req/s"),
        "{}",
        v.sentence
    );

    let v = judge(crossed(), rates, &[(Pass, Pass); 6]);
    assert_eq!(v.verdict, Said::Undecided, "{}", v.sentence);
    assert!(
        v.sentence.contains("CANNOT BE DECIDED") && v.sentence.contains("did not confirm it"),
        "{}",
        v.sentence
    );

    let v = judge(crossed(), rates, &[(Pass, Fail)]);
    assert_eq!(v.verdict, Said::Undecided);
    assert!(v.sentence.contains("cut short"), "{}", v.sentence);

    let v = judge(crossed(), None, &[]);
    assert_eq!(v.verdict, Said::Undecided);

    let within = AbVerdict {
        verdict: Said::Within,
        ..crossed()
    };
    assert_eq!(
        judge(within.clone(), rates, &[]),
        within,
        "only a crossing is checked"
    );
}
