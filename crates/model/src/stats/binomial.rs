//! The binomial distribution's CDF, exact for any n a run can have.
//!
//! The pmf is summed outward from the mode: each term is its neighbour times a ratio, so
//! neither n! nor ln Γ is needed and nothing overflows or underflows, and the sum stops
//! where a term falls below [`NEGLIGIBLE`] of the mode's. That is about 12 standard
//! deviations each side, O(√n) terms: some 40 000 for ten million requests. (statrs 0.18's
//! Binomial goes through a continued fraction cut at 140 steps, which is wrong near the
//! centre for n in the millions, a long run's count: for Bin(10⁷, ½) it gives
//! P(B ≤ 4 999 999) = 0.635 and P(B ≤ 5 000 000) = 0.365.)

/// A term this much smaller than the mode's is left out: the tail beyond it weighs less
/// than 1e-25 of the whole.
const NEGLIGIBLE: f64 = 1e-30;

/// Binomial(n, p) for 0 < p < 1, as its CDF over the range that carries weight.
#[derive(Debug, Clone)]
pub(crate) struct Binomial {
    /// The smallest k that carries weight.
    lo: u64,
    /// `cdf[i]` = P(B ≤ lo + i).
    cdf: Vec<f64>,
}

impl Binomial {
    /// Binomial(n, p); `None` unless 0 < p < 1.
    pub(crate) fn new(n: u64, p: f64) -> Option<Binomial> {
        if !(p > 0.0 && p < 1.0) {
            return None;
        }
        let odds = p / (1.0 - p);
        let mode = (((n + 1) as f64) * p).floor().min(n as f64) as u64;
        // Weights relative to the mode's: w(k-1) / w(k) = k / (n - k + 1) / odds.
        let mut below = Vec::new();
        let (mut k, mut w) = (mode, 1.0);
        while k > 0 {
            w *= k as f64 / (n - k + 1) as f64 / odds;
            if w < NEGLIGIBLE {
                break;
            }
            below.push(w);
            k -= 1;
        }
        let lo = mode - below.len() as u64;
        below.reverse();
        let mut weights = below;
        weights.push(1.0);
        // w(k+1) / w(k) = (n - k) / (k + 1) * odds.
        let (mut k, mut w) = (mode, 1.0);
        while k < n {
            w *= (n - k) as f64 / (k + 1) as f64 * odds;
            if w < NEGLIGIBLE {
                break;
            }
            weights.push(w);
            k += 1;
        }
        let total: f64 = weights.iter().sum();
        let mut sum = 0.0;
        let cdf = weights
            .into_iter()
            .map(|w| {
                sum += w;
                sum / total
            })
            .collect();
        Some(Binomial { lo, cdf })
    }

    /// P(B ≤ k).
    pub(crate) fn cdf(&self, k: u64) -> f64 {
        match k.checked_sub(self.lo) {
            None => 0.0,
            Some(i) => usize::try_from(i)
                .ok()
                .and_then(|i| self.cdf.get(i))
                .map_or(1.0, |&c| c.min(1.0)),
        }
    }

    /// P(B < k), the CDF at k − 1 (0 for k = 0).
    pub(crate) fn below(&self, k: u64) -> f64 {
        k.checked_sub(1).map_or(0.0, |k| self.cdf(k))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The pmf from the binomial coefficient, in f64, independent of `Binomial`: fine for
    /// the small n it is used at.
    pub(crate) fn pmf(n: u64, k: u64, p: f64) -> f64 {
        let choose = (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
        choose * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32)
    }

    #[test]
    fn the_cdf_is_the_running_sum_of_the_pmf() {
        for (n, p) in [(1, 0.5), (10, 0.3), (100, 0.5), (300, 0.99), (60, 0.01)] {
            let b = Binomial::new(n, p).unwrap();
            let mut sum = 0.0;
            for k in 0..=n {
                sum += pmf(n, k, p);
                assert!(
                    (b.cdf(k) - sum).abs() < 1e-12,
                    "n={n} p={p} k={k}: {} vs {sum}",
                    b.cdf(k)
                );
            }
            assert_eq!(b.cdf(n + 5), 1.0);
            assert_eq!(b.below(0), 0.0);
        }
    }

    #[test]
    fn known_values_of_the_cdf() {
        // Bin(100, ½): P(B ≤ 39) = 0.017600100108852407, P(B ≤ 50) = 0.5397946186935894
        // (exact sums of C(100, i) / 2¹⁰⁰ in rational arithmetic).
        let b = Binomial::new(100, 0.5).unwrap();
        assert!((b.cdf(39) - 0.017600100108852407).abs() < 1e-14);
        assert!((b.cdf(50) - 0.5397946186935894).abs() < 1e-14);
        // Bin(10, 0.3): P(B = 0) = 0.7¹⁰.
        assert!((Binomial::new(10, 0.3).unwrap().cdf(0) - 0.7f64.powi(10)).abs() < 1e-15);
    }

    #[test]
    fn ten_million_trials_stay_exact_near_the_mode() {
        // Bin(10⁷, ½) is symmetric about 5·10⁶: P(B ≤ 5·10⁶ − 1) = (1 − P(B = 5·10⁶)) / 2,
        // and P(B = mode) = √(2 / (π n)) (1 − 1/(4n) + …) = 2.523 132 5e-4 (Stirling).
        let b = Binomial::new(10_000_000, 0.5).unwrap();
        let at_mode = b.cdf(5_000_000) - b.cdf(4_999_999);
        assert!((at_mode - 2.523_132_5e-4).abs() < 1e-10, "{at_mode}");
        assert!((b.cdf(4_999_999) - (1.0 - at_mode) / 2.0).abs() < 1e-12);
    }

    #[test]
    fn a_share_of_zero_or_one_is_no_binomial_to_sum() {
        assert!(Binomial::new(10, 0.0).is_none());
        assert!(Binomial::new(10, 1.0).is_none());
        assert!(Binomial::new(10, f64::NAN).is_none());
        // n = 0: all weight at 0.
        assert_eq!(Binomial::new(0, 0.5).unwrap().cdf(0), 1.0);
    }
}
