//! The two-sample Kolmogorov-Smirnov statistic on whole histograms: `webscope compare`'s
//! look at the latency distributions as wholes. A percentile compared alone hides a change of
//! shape, which the distance between the two distributions shows. The verdicts on
//! thresholds rest on the change's interval over repeated runs (`webscope_model::stats::change`),
//! not on this: it compares pooled requests, and requests of one run are not independent
//! draws (a queue episode slows thousands together), so its p-value says more than the runs
//! can support.

use hdrhistogram::Histogram;

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
