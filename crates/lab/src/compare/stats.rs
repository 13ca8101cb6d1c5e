//! The tests `webscope compare` uses: a rank test over repeated runs (Mann-Whitney U, exact
//! for small samples), and the two-sample Kolmogorov-Smirnov statistic on whole histograms.
//!
//! Why these: repeated runs of a server are few (3-10) and not normal, so an exact rank test
//! is the honest one, and its false-alarm rate is at most its level whatever the figures'
//! distribution, as long as the runs are exchangeable; a bootstrap over a single run's
//! handful of intervals is not (three 1-s intervals gave "p99.9 +46 %, significant" on one
//! server run twice), and no test over one run's intervals is: the runs differ by more. A percentile compared alone
//! hides a change of shape, which the distance between the two distributions shows.
//! `compare::tests` counts the false alarms and the detections on synthetic runs.

use hdrhistogram::Histogram;

/// Up to this many pairs (n1 n2) the rank test's distribution is enumerated (its cost grows
/// as the square of the pairs); beyond, the normal approximation is within a thousandth.
const EXACT_PAIRS: usize = 2500;

/// The smallest two-sided p-value a rank test of `n1` against `n2` can give (one side
/// entirely above the other): 2 / C(n1 + n2, n1). At or above the level, the test can never
/// find a change, and saying "no significant change" would be a pass it could not judge.
pub fn smallest_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let mut c = 1.0f64;
    for i in 0..n1.min(n2) {
        c = c * (n1 + n2 - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// Two-sided p-value of the Mann-Whitney U test of `a` against `b`: exact for small samples
/// (the distribution of U enumerated, ties counted as halves), else the normal approximation
/// with the tie correction. None with an empty side.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    if n1 * n2 > EXACT_PAIRS {
        return Some(mann_whitney_normal(a, b));
    }
    // U in half units, so that ties (worth ½) stay integers.
    let u2: usize = a
        .iter()
        .map(|x| {
            b.iter()
                .map(|y| match x.partial_cmp(y) {
                    Some(std::cmp::Ordering::Greater) => 2,
                    Some(std::cmp::Ordering::Equal) => 1,
                    _ => 0,
                })
                .sum::<usize>()
        })
        .sum();
    let dist = u_distribution(n1, n2);
    let total: f64 = dist.iter().sum();
    let u = u2 / 2;
    let below: f64 = dist[..=u.min(dist.len() - 1)].iter().sum::<f64>() / total;
    let above: f64 = dist[u2.div_ceil(2).min(dist.len() - 1)..]
        .iter()
        .sum::<f64>()
        / total;
    Some((2.0 * below.min(above)).min(1.0))
}

/// The normal approximation of the rank test, with the variance corrected for ties and a
/// continuity correction.
fn mann_whitney_normal(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&y| (y, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let (mut rank_sum_a, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        let mid_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_a += mid_rank * all[i..=j].iter().filter(|v| v.1).count() as f64;
        i = j + 1;
    }
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let nn = n1 + n2;
    let var = n1 * n2 / 12.0 * ((nn + 1.0) - ties / (nn * (nn - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - n1 * n2 / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * upper_normal_tail(z)).min(1.0)
}

/// P(Z > z) for a standard normal Z (Abramowitz and Stegun 7.1.26, error below 1.5e-7).
fn upper_normal_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

/// How many orderings of n1 + n2 distinct values give each U = 0 ..= n1 n2 (the standard
/// recurrence f(n1, n2, u) = f(n1 - 1, n2, u - n2) + f(n1, n2 - 1, u)).
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    let max = n1 * n2;
    // table[j][u] for the current i, rows j = 0 ..= n2.
    let mut prev: Vec<Vec<f64>> = (0..=n2)
        .map(|_| {
            let mut v = vec![0.0; max + 1];
            v[0] = 1.0;
            v
        })
        .collect();
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n2 + 1];
        cur[0][0] = 1.0;
        for j in 1..=n2 {
            for u in 0..=max {
                let with_top_a = if u >= j { prev[j][u - j] } else { 0.0 };
                cur[j][u] = with_top_a + cur[j - 1][u];
            }
        }
        prev = cur;
        let _ = i;
    }
    prev.swap_remove(n2)
}

/// The Kolmogorov-Smirnov distance between two histograms (the largest gap between their
/// cumulative distributions, read at every bucket either has) and its asymptotic p-value.
pub fn ks(a: &Histogram<u64>, b: &Histogram<u64>) -> Option<(f64, f64)> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if na == 0.0 || nb == 0.0 {
        return None;
    }
    let values = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_since_last_iteration()))
            .collect()
    };
    let (va, vb) = (values(a), values(b));
    let (mut i, mut j) = (0, 0);
    let (mut ca, mut cb) = (0u64, 0u64);
    let mut d: f64 = 0.0;
    while i < va.len() || j < vb.len() {
        let next = match (va.get(i), vb.get(j)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) => break,
        };
        while i < va.len() && va[i].0 == next {
            ca += va[i].1;
            i += 1;
        }
        while j < vb.len() && vb[j].0 == next {
            cb += vb[j].1;
            j += 1;
        }
        d = d.max((ca as f64 / na - cb as f64 / nb).abs());
    }
    let en = (na * nb / (na + nb)).sqrt();
    let lambda = (en + 0.12 + 0.11 / en) * d;
    // The series below converges only away from zero; near it the distributions agree.
    if lambda < 0.3 {
        return Some((d, 1.0));
    }
    let mut p = 0.0;
    for k in 1..=100 {
        let term = 2.0 * (-1f64).powi(k - 1) * (-2.0 * f64::from(k * k) * lambda * lambda).exp();
        p += term;
        if term.abs() < 1e-12 {
            break;
        }
    }
    Some((d, p.clamp(0.0, 1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_test_matches_the_tables() {
        // 4 against 4, all of one side above: U = 0, exact two-sided p = 2/70.
        let p = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!((p - 2.0 / 70.0).abs() < 1e-12, "{p}");
        // 3 against 3 can never go below 2/20 = 0.1.
        let p = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        // Interleaved: nothing to see.
        let p = mann_whitney(&[1.0, 4.0, 5.0, 8.0], &[2.0, 3.0, 6.0, 7.0]).unwrap();
        assert!(p > 0.8, "{p}");
        assert_eq!(u_distribution(2, 2), vec![1.0, 1.0, 2.0, 1.0, 1.0]);
        assert!(mann_whitney(&[], &[1.0]).is_none());
        assert!((smallest_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((smallest_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert_eq!(smallest_p(0, 5), 1.0);
    }

    /// The test's own size, counted: on 20 000 pairs of 8 against 8 draws of one
    /// distribution (continuous, so no ties) it finds a change in 5 % or fewer (the exact
    /// level it can reach below 0.05 is 0.0499), within the count's own noise (3 standard
    /// errors, 0.46 points); and with the normal approximation (60 against 60) likewise.
    #[test]
    fn the_rank_test_raises_false_alarms_at_its_level_or_below() {
        let mut rng = webscope_workload::Rng::new(7);
        for (n, reps) in [(8, 20_000), (60, 4_000)] {
            let mut alarms = 0;
            for _ in 0..reps {
                let a: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
                let b: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
                alarms += usize::from(mann_whitney(&a, &b).unwrap() < 0.05);
            }
            let rate = alarms as f64 / reps as f64;
            let se = (0.05 * 0.95 / reps as f64).sqrt();
            eprintln!(
                "{n} against {n}: {alarms} alarms in {reps} ({:.2} %)",
                100.0 * rate
            );
            assert!(rate <= 0.05 + 3.0 * se, "{n} against {n}: {rate}");
        }
    }

    #[test]
    fn the_normal_approximation_agrees_with_the_exact_test() {
        // 50 against 50 (2500 pairs, still exact) read both ways.
        let a: Vec<f64> = (0..50).map(|i| (i * 7 % 50) as f64).collect();
        let b: Vec<f64> = (0..50).map(|i| (i * 7 % 50) as f64 + 6.5).collect();
        let exact = mann_whitney(&a, &b).unwrap();
        let normal = mann_whitney_normal(&a, &b);
        assert!((exact - normal).abs() < 0.005, "{exact} {normal}");
        assert!(exact < 0.05 && exact > 0.001, "{exact}");
    }

    #[test]
    fn ks_is_zero_for_the_same_and_one_for_disjoint() {
        let mut a = Histogram::<u64>::new_with_bounds(1, 1_000_000, 3).unwrap();
        let mut b = a.clone();
        for v in 1..=1000u64 {
            a.record(v).unwrap();
            b.record(v + 5000).unwrap();
        }
        let (d, p) = ks(&a, &a).unwrap();
        assert_eq!(d, 0.0);
        assert!(p > 0.99);
        let (d, p) = ks(&a, &b).unwrap();
        assert_eq!(d, 1.0);
        assert!(p < 1e-10);
    }
}
