use super::*;
use crate::stats::binomial::tests::pmf;
use crate::stats::{nearest_rank, Sorted};

/// P(B < k) by summing the pmf.
fn below(n: u64, k: u64, p: f64) -> f64 {
    (0..k).map(|i| pmf(n, i, p)).sum()
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

#[test]
fn the_median_of_100_lies_between_the_40th_and_the_61st_value() {
    // B ~ Bin(100, ½): P(B ≤ 39) = 0.0176 ≤ 0.025 < P(B ≤ 40) = 0.0284, so l = 40; by
    // symmetry P(B ≥ 61) = 0.0176 ≤ 0.025 < P(B ≥ 60), so u = 61; coverage 1 − 2·0.0176.
    let r = quantile_ranks(100, 0.5, Confidence::P95).unwrap();
    assert_eq!((r.lower, r.upper), (Some(40), Some(61)));
    assert!(
        close(r.coverage, 0.9647997997822952, 1e-12),
        "{}",
        r.coverage
    );
    let values = Sorted::new((1..=100).map(f64::from));
    let i = values.quantile_interval(0.5, Confidence::P95).unwrap();
    assert_eq!((i.low, i.high), (40.0, 61.0));
}

#[test]
fn the_p99_of_300_requests_has_no_upper_bound() {
    // 0.99³⁰⁰ = 0.049 > 0.025: even the slowest of 300 requests is below the true p99
    // one time in twenty, so a p99 of 300 requests cannot be shown to meet a ceiling.
    let r = quantile_ranks(300, 0.99, Confidence::P95).unwrap();
    assert_eq!((r.lower, r.upper), (Some(293), None));
    // 2 000 requests (20 beyond p99) bound it from the 30th- to the 12th-slowest.
    let r = quantile_ranks(2_000, 0.99, Confidence::P95).unwrap();
    assert_eq!((r.lower, r.upper), (Some(1_971), Some(1_989)));
    let r = quantile_ranks(20_000, 0.999, Confidence::P95).unwrap();
    assert_eq!((r.lower, r.upper), (Some(19_971), Some(19_989)));
}

#[test]
fn the_ranks_cover_at_the_level_and_no_tighter_pair_would() {
    for (n, q) in [
        (20, 0.5),
        (100, 0.5),
        (100, 0.9),
        (300, 0.99),
        (250, 0.1),
        (7, 0.5),
    ] {
        let r = quantile_ranks(n, q, Confidence::P95).unwrap();
        let low_miss = r.lower.map_or(0.0, |l| below(n, l, q));
        let high_miss = r.upper.map_or(0.0, |u| 1.0 - below(n, u, q));
        assert!(
            low_miss <= 0.025 && high_miss <= 0.025,
            "n={n} q={q}: {r:?}"
        );
        assert!(
            close(r.coverage, 1.0 - low_miss - high_miss, 1e-9),
            "n={n} q={q}"
        );
        // One rank further in would miss more than α/2 on that side.
        let l = r.lower.unwrap_or(0);
        assert!(l == n || below(n, l + 1, q) > 0.025, "n={n} q={q}: l={l}");
        let u = r.upper.unwrap_or(n + 1);
        assert!(
            u == 1 || 1.0 - below(n, u - 1, q) > 0.025,
            "n={n} q={q}: u={u}"
        );
    }
}

#[test]
fn too_few_values_bound_nothing_and_none_bound_less() {
    assert_eq!(quantile_ranks(0, 0.5, Confidence::P95), None);
    assert_eq!(quantile_ranks(10, 0.0, Confidence::P95), None);
    assert_eq!(quantile_ranks(10, 1.0, Confidence::P95), None);
    let one = quantile_ranks(1, 0.5, Confidence::P95).unwrap();
    assert_eq!((one.lower, one.upper, one.coverage), (None, None, 1.0));
    let i = one.values(|_| 3.0);
    assert_eq!((i.low, i.high), (f64::NEG_INFINITY, f64::INFINITY));
    assert_eq!(
        Sorted::new([]).quantile_interval(0.5, Confidence::P95),
        None
    );
}

#[test]
fn a_histogram_reads_each_rank_back_at_its_quantile() {
    // A nearest-rank reader given quantile_of(rank) lands on the rank itself, for every
    // rank: rank / n would land on rank + 1 where q·n rounds up (7 / 100 · 100).
    for n in [1, 7, 100, 2_000, 30_001] {
        let r = RankInterval {
            n,
            lower: None,
            upper: None,
            coverage: 1.0,
        };
        for rank in 1..=n {
            assert_eq!(nearest_rank(r.quantile_of(rank), n), Some(rank), "n={n}");
        }
    }
}

#[test]
fn wilson_for_10_errors_in_1000() {
    // p̂ = 0.01, z = 1.959964: centre (p̂ + z²/2n) / (1 + z²/n), half-width
    // z / (1 + z²/n) · √(p̂(1 − p̂)/n + z²/4n²).
    let i = wilson(10, 1_000, Confidence::P95).unwrap();
    assert!(close(i.low, 0.005440754, 1e-8), "{}", i.low);
    assert!(close(i.high, 0.018309469, 1e-8), "{}", i.high);
}

#[test]
fn wilson_at_the_edges() {
    assert_eq!(wilson(0, 0, Confidence::P95), None);
    assert_eq!(wilson(5, 4, Confidence::P95), None);
    // No error in 2 000: the share is at most z² / (n + z²) = 0.001917.
    let none = wilson(0, 2_000, Confidence::P95).unwrap();
    assert_eq!(none.low, 0.0);
    assert!(close(none.high, 0.0019170473, 1e-9), "{}", none.high);
    // All five failed: at least 0.5655.
    let all = wilson(5, 5, Confidence::P95).unwrap();
    assert_eq!(all.high, 1.0);
    assert!(close(all.low, 0.5655175, 1e-6), "{}", all.low);
}

#[test]
fn clopper_pearson_for_10_errors_in_1000() {
    // The shares p with P(B ≥ 10) = 0.025 and P(B ≤ 10) = 0.025 for B ~ Bin(1000, p)
    // (bisection on the pmf summed with Python's math.comb): wider than Wilson each side.
    let i = clopper_pearson(10, 1_000, Confidence::P95).unwrap();
    assert!(close(i.low, 0.004805511, 1e-8), "{}", i.low);
    assert!(close(i.high, 0.018313243, 1e-8), "{}", i.high);
    let w = wilson(10, 1_000, Confidence::P95).unwrap();
    assert!(i.low < w.low && i.high > w.high);
}

#[test]
fn clopper_pearson_at_the_edges() {
    assert_eq!(clopper_pearson(0, 0, Confidence::P95), None);
    // No error in 2 000: P(B = 0) = (1 − p)ⁿ = 0.025 at p = 1 − 0.025^(1/n).
    let none = clopper_pearson(0, 2_000, Confidence::P95).unwrap();
    assert_eq!(none.low, 0.0);
    assert!(close(none.high, 1.0 - 0.025f64.powf(1.0 / 2_000.0), 1e-12));
    // All of 2 failed: pⁿ = 0.025 at the lower bound.
    let all = clopper_pearson(2, 2, Confidence::P95).unwrap();
    assert_eq!(all.high, 1.0);
    assert!(close(all.low, 0.025f64.sqrt(), 1e-12), "{}", all.low);
}

#[test]
fn the_level_sets_z() {
    assert!(close(Confidence::P95.z(), 1.959963984540054, 1e-9));
    assert!(close(
        Confidence::new(0.99).unwrap().z(),
        2.5758293035489,
        1e-9
    ));
    assert_eq!(Confidence::new(1.0), None);
    assert_eq!(Confidence::new(0.0), None);
}

#[test]
fn an_interval_across_the_limit_is_undecided() {
    // 10 errors in 1 000: Wilson [0.54 %, 1.83 %].
    let errors = wilson(10, 1_000, Confidence::P95).unwrap();
    assert_eq!(decide(errors, Limit::AtMost(0.02)), Decision::Pass);
    assert_eq!(decide(errors, Limit::AtMost(0.01)), Decision::Undecided);
    assert_eq!(decide(errors, Limit::AtMost(0.005)), Decision::Fail);
    let goodput = Interval {
        low: 1.0 - errors.high,
        high: 1.0 - errors.low,
    };
    assert_eq!(decide(goodput, Limit::AtLeast(0.98)), Decision::Pass);
    assert_eq!(decide(goodput, Limit::AtLeast(0.99)), Decision::Undecided);
    assert_eq!(decide(goodput, Limit::AtLeast(0.995)), Decision::Fail);
}

#[test]
fn a_bound_on_the_limit_meets_it_and_an_unbounded_side_decides_nothing() {
    let at = |low, high| Interval { low, high };
    assert_eq!(decide(at(1.0, 5.0), Limit::AtMost(5.0)), Decision::Pass);
    assert_eq!(
        decide(at(5.0, 9.0), Limit::AtMost(5.0)),
        Decision::Undecided
    );
    assert_eq!(decide(at(5.0, 9.0), Limit::AtLeast(5.0)), Decision::Pass);
    assert_eq!(
        decide(at(1.0, 5.0), Limit::AtLeast(5.0)),
        Decision::Undecided
    );
    // A p99 of 300 requests: above the limit it fails, below it cannot pass.
    assert_eq!(
        decide(at(6.0, f64::INFINITY), Limit::AtMost(5.0)),
        Decision::Fail
    );
    assert_eq!(
        decide(at(3.0, f64::INFINITY), Limit::AtMost(5.0)),
        Decision::Undecided
    );
    assert_eq!(
        decide(at(f64::NAN, f64::NAN), Limit::AtMost(5.0)),
        Decision::Undecided
    );
}

#[test]
fn batch_share_of_equal_batches_is_the_t_interval_of_their_shares() {
    // Ten batches of 1 000 with 1..=10 counted: p = 55/10 000 = 0.0055; the shares' standard
    // error is 0.0009574 (s² of 1..=10 is 9.1667, over 1 000² and 10); t(9) at 97.5 % =
    // 2.2622 (tables): half-width 0.0021659.
    let batches: Vec<(u64, u64)> = (1..=10).map(|k| (k, 1_000)).collect();
    let i = batch_share(&batches, Confidence::P95).unwrap();
    assert!(close(i.low, 0.0055 - 0.0021659, 1e-6), "{i:?}");
    assert!(close(i.high, 0.0055 + 0.0021659, 1e-6), "{i:?}");
}

#[test]
fn clustered_counts_widen_the_share_where_wilson_would_not() {
    // 1 200 of 30 000 requests counted (4 %): spread evenly over ten batches the interval is
    // tight; all in one batch it reaches down past 1 %, as Wilson's never would.
    let even: Vec<(u64, u64)> = (0..10).map(|_| (120, 3_000)).collect();
    let mut clustered: Vec<(u64, u64)> = (0..10).map(|_| (0, 3_000)).collect();
    clustered[4].0 = 1_200;
    let e = batch_share(&even, Confidence::P95).unwrap();
    let c = batch_share(&clustered, Confidence::P95).unwrap();
    let w = wilson(1_200, 30_000, Confidence::P95).unwrap();
    assert!(e.low > 0.039 && e.high < 0.041, "{e:?}");
    assert!(w.low > 0.037, "{w:?}");
    assert!(c.low < 0.01 && c.high > 0.09, "{c:?}");
}

#[test]
fn batch_share_needs_five_batches_of_sound_counts() {
    let four = [(1, 10), (1, 10), (1, 10), (1, 10)];
    assert_eq!(batch_share(&four, Confidence::P95), None);
    assert_eq!(batch_share(&[(0, 0); 5], Confidence::P95), None);
    assert_eq!(batch_share(&[(11, 10); 5], Confidence::P95), None);
    let same = batch_share(&[(3, 100); 5], Confidence::P95).unwrap();
    assert_eq!((same.low, same.high), (0.03, 0.03));
}
