//! The tests `webscope compare` uses: a rank test for repeated runs (Mann-Whitney U, exact),
//! a bootstrap over intervals for single runs, and the two-sample Kolmogorov-Smirnov
//! statistic on whole histograms.
//!
//! Why these: repeated runs of a server are few (3-10) and not normal, so an exact rank test
//! is the honest one; a single run still has its intervals, which resampled give the spread
//! of a figure within the run; a percentile compared alone hides a change of shape, which the
//! distance between the two distributions shows.

use hdrhistogram::Histogram;
use webscope_workload::Rng;

/// Two-sided p-value of the Mann-Whitney U test of `a` against `b`, exact (the distribution
/// of U enumerated, ties counted as halves). None with an empty side.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
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

/// The 2.5th and 97.5th percentiles of `statistic` over `rounds` bootstrap resamples of
/// `a`'s and `b`'s items (each resampled with replacement, to its own size), from a fixed
/// seed so that a comparison gives the same interval every time.
pub fn bootstrap<T>(
    a: &[T],
    b: &[T],
    rounds: usize,
    statistic: impl Fn(&[&T], &[&T]) -> Option<f64>,
) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut rng = Rng::new(0x5eed_c0de);
    let mut values = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let ra: Vec<&T> = (0..a.len())
            .map(|_| &a[rng.below(a.len() as u64) as usize])
            .collect();
        let rb: Vec<&T> = (0..b.len())
            .map(|_| &b[rng.below(b.len() as u64) as usize])
            .collect();
        if let Some(v) = statistic(&ra, &rb) {
            values.push(v);
        }
    }
    if values.len() < rounds / 2 {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
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
    }

    #[test]
    fn the_bootstrap_brackets_a_known_difference_and_is_repeatable() {
        let a: Vec<f64> = (0..50).map(|i| 100.0 + (i % 7) as f64).collect();
        let b: Vec<f64> = (0..50).map(|i| 110.0 + (i % 7) as f64).collect();
        let mean = |v: &[&f64]| v.iter().copied().sum::<f64>() / v.len() as f64;
        let ci = bootstrap(&a, &b, 500, |x, y| Some(mean(y) - mean(x))).unwrap();
        assert!(ci.0 > 9.0 && ci.1 < 11.0, "{ci:?}");
        assert_eq!(
            ci,
            bootstrap(&a, &b, 500, |x, y| Some(mean(y) - mean(x))).unwrap()
        );
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
