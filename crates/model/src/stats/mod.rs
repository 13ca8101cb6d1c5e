//! Small statistics, defined once for the whole workspace: the median, quantiles, and the
//! confidence intervals a judge needs before it calls a measured figure a pass or a fail.
//!
//! One definition each, so that a page, a comparison and a log's characterization cannot
//! disagree on what "the median" or "p99" means:
//!
//! - [`median`]: the middle value of the sorted values, the mean of the two middle ones
//!   when their number is even (the textbook median, symmetric: the median of a sample and
//!   of its mirror image are mirror images).
//! - [`quantile`]: the **nearest rank**, the smallest value with at least a share q of the
//!   values at or below it (rank ⌈q·n⌉, at least 1). This is what HdrHistogram's
//!   `value_at_quantile` gives, and so what the load generator reports as p99: a p99 read
//!   from an access log or a list of samples means the same as the generator's. It is
//!   always a measured value, never an interpolation between two, which is what the
//!   order-statistic intervals of [`quantile_ranks`] are made of. Hence `quantile(v, 0.5)`
//!   is the lower middle value when n is even, not [`median`].
//! - A value that is not finite (NaN, ±∞) is left out of both. In this workspace such a
//!   value comes from a ratio over a zero count (0/0, x/0: a run that served no request),
//!   which is no measurement rather than an extreme one. Nothing is left: `None`, never 0.
//!
//! The intervals ([`interval`]) serve a judge that must not call a noisy figure a fail:
//! [`quantile_ranks`] bounds a percentile by two order statistics (distribution-free, from
//! the binomial), [`wilson`] and [`clopper_pearson`] bound a share, [`requests_for_tail`]
//! says how many requests a percentile needs, [`decide`] reads an interval against a
//! limit as pass, fail or undecided, and [`sign_test`] says how often a fair coin agrees
//! with itself as much as a few repeated verdicts did. [`change()`] is the one rule for "did
//! B change against A" over repeated runs: the change with its interval, within, crossed or
//! undecided against a limit, for `compare` and the interleaved A/B experiment alike.
//!
//! Not here: a mean or a variance (a sum divided by a count, with nothing to define), rank
//! tests (the lab's `compare::stats`), estimators of tails and fits (accesslog's Hill and
//! lognormal code: they sort for their own reasons).

mod binomial;
pub mod change;
pub mod interval;

pub use change::{change, Change, NoInterval, Pairing};
pub use interval::{
    batch_share, clopper_pearson, decide, quantile_ranks, wilson, Confidence, Decision, Interval,
    Limit, RankInterval,
};

/// Finite values in ascending order: sort once, then read the median, any quantile, or a
/// value by rank without sorting again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sorted(Vec<f64>);

impl Sorted {
    /// The finite values of `values`, sorted ascending (NaN and ±∞ are left out).
    pub fn new(values: impl IntoIterator<Item = f64>) -> Sorted {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        Sorted(v)
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no value.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values, ascending.
    pub fn as_slice(&self) -> &[f64] {
        &self.0
    }

    /// The median (see the module doc), `None` when there is no value.
    pub fn median(&self) -> Option<f64> {
        let n = self.0.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(self.0[n / 2]),
            _ => Some((self.0[n / 2 - 1] + self.0[n / 2]) / 2.0),
        }
    }

    /// The nearest-rank q-quantile (see the module doc); `None` when there is no value or
    /// q is not within [0, 1].
    pub fn quantile(&self, q: f64) -> Option<f64> {
        self.at_rank(nearest_rank(q, self.0.len() as u64)?)
    }

    /// The value of rank `rank` (1 is the smallest), `None` outside 1..=n.
    pub fn at_rank(&self, rank: u64) -> Option<f64> {
        let i = usize::try_from(rank).ok()?.checked_sub(1)?;
        self.0.get(i).copied()
    }

    /// The values between which the q-quantile lies with `confidence` (see
    /// [`quantile_ranks`]), ±∞ on a side the sample is too small to bound; `None` when
    /// there is no value or q is not strictly between 0 and 1.
    pub fn quantile_interval(&self, q: f64, confidence: Confidence) -> Option<Interval> {
        let ranks = quantile_ranks(self.0.len() as u64, q, confidence)?;
        Some(ranks.values(|r| self.at_rank(r).unwrap_or(f64::NAN)))
    }
}

/// The median of the finite values of `values` (the mean of the two middle ones for an
/// even count), `None` when there is none.
pub fn median(values: &[f64]) -> Option<f64> {
    Sorted::new(values.iter().copied()).median()
}

/// The nearest-rank q-quantile of the finite values of `values`, `None` when there is none
/// or q is not within [0, 1].
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    Sorted::new(values.iter().copied()).quantile(q)
}

/// The nearest rank of the q-quantile among n values: ⌈q·n⌉, at least 1; `None` when n is
/// 0 or q is not within [0, 1].
pub fn nearest_rank(q: f64, n: u64) -> Option<u64> {
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    Some(ceil_exact(q * n as f64).clamp(1, n))
}

/// How many requests a run needs for `k` of them to lie beyond its q-quantile: ⌈k / (1 − q)⌉
/// (20 beyond p99 need 2 000, beyond p99.9 20 000). `None` unless 0 ≤ q < 1.
pub fn requests_for_tail(q: f64, k: u64) -> Option<u64> {
    if !(0.0..1.0).contains(&q) {
        return None;
    }
    Some(ceil_exact(k as f64 / (1.0 - q)))
}

/// The one-sided sign test: the chance that `runs` throws of a fair coin give `agree` or
/// more heads (3 of 3: 1/8; 5 of 6: 7/64). Summed over whole binomial coefficients, so it is
/// exact for the few probes a verdict is repeated over, and a threshold such as 1/8 is met
/// exactly; the running-sum CDF (`binomial`), built for runs of millions, rounds at the
/// last bit. `None` past 53 throws (the sum stops being whole in an f64) or when `agree`
/// exceeds `runs`.
pub fn sign_test(agree: u32, runs: u32) -> Option<f64> {
    if runs > 53 || agree > runs {
        return None;
    }
    // C(runs, k) for k from runs down to agree: each from the one above, exactly.
    let (mut choose, mut tail) = (1u64, 0u64);
    for k in (agree..=runs).rev() {
        tail += choose;
        choose = choose * u64::from(k) / u64::from(runs - k + 1);
    }
    Some(tail as f64 / 2f64.powi(runs as i32))
}

/// ⌈x⌉ for x ≥ 0, where an x within rounding of a whole number is that number: 1 − 0.99 is
/// 0.010000000000000009 in binary, so 20 / (1 − 0.99) is 1 999.999…, and 0.07 × 100 is
/// 7.000000000000001; a plain ceil would ask for one request or one rank too many.
fn ceil_exact(x: f64) -> u64 {
    let whole = x.round();
    if (x - whole).abs() <= 1e-9 * whole.max(1.0) {
        whole as u64
    } else {
        x.ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sign_test_is_the_fair_coins_upper_tail_exactly() {
        assert_eq!(sign_test(3, 3), Some(0.125));
        assert_eq!(sign_test(2, 2), Some(0.25));
        assert_eq!(sign_test(4, 5), Some(6.0 / 32.0));
        assert_eq!(sign_test(5, 6), Some(7.0 / 64.0));
        assert_eq!(sign_test(0, 6), Some(1.0));
        // Half or more heads in 50 throws: just over a half (the middle counted in).
        let half = sign_test(25, 50).unwrap();
        assert!(half > 0.5 && half < 0.6, "{half}");
        assert_eq!(sign_test(4, 3), None);
        assert_eq!(sign_test(54, 54), None);
    }

    #[test]
    fn the_median_averages_the_two_middle_values_of_an_even_count() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
    }

    #[test]
    fn nothing_to_take_the_middle_of_is_none_not_zero() {
        assert_eq!(median(&[]), None);
        assert_eq!(quantile(&[], 0.5), None);
        // Ratios over a zero count (0/0, 1/0) are no measurement: left out, not sorted in.
        assert_eq!(median(&[f64::NAN, f64::INFINITY]), None);
        assert_eq!(median(&[f64::NAN, 1.0, f64::INFINITY, 3.0]), Some(2.0));
        assert_eq!(quantile(&[f64::NEG_INFINITY, 5.0], 0.0), Some(5.0));
    }

    #[test]
    fn the_quantile_is_the_nearest_rank_as_hdrhistogram_reads_it() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        // At least q of the values lie at or below it: p50 of 1..=100 is 50, p99 is 99.
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&v, 0.991), Some(100.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 1.0), Some(100.0));
        // 0.07 × 100 is 7.000000000000001 in binary: still rank 7.
        assert_eq!(quantile(&v, 0.07), Some(7.0));
        // For an even count, the 0.5-quantile is the lower middle value, not the median.
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.0));
        assert_eq!(quantile(&v, 1.5), None);
        assert_eq!(quantile(&v, f64::NAN), None);
    }

    #[test]
    fn a_sorted_sample_reads_ranks_from_one() {
        let s = Sorted::new([3.0, f64::NAN, 1.0, 2.0]);
        assert_eq!(s.as_slice(), &[1.0, 2.0, 3.0]);
        assert_eq!((s.at_rank(1), s.at_rank(3)), (Some(1.0), Some(3.0)));
        assert_eq!((s.at_rank(0), s.at_rank(4)), (None, None));
    }

    #[test]
    fn requests_for_a_tail_need_k_beyond_the_percentile() {
        assert_eq!(requests_for_tail(0.99, 20), Some(2_000));
        assert_eq!(requests_for_tail(0.999, 20), Some(20_000));
        assert_eq!(requests_for_tail(0.9, 10), Some(100));
        assert_eq!(requests_for_tail(0.5, 3), Some(6));
        // A share that does not divide k: round up, 7 beyond p70 need 24 (7.2 beyond it).
        assert_eq!(requests_for_tail(0.7, 7), Some(24));
        assert_eq!(requests_for_tail(0.99, 0), Some(0));
        assert_eq!(requests_for_tail(1.0, 20), None);
        assert_eq!(requests_for_tail(-0.1, 20), None);
    }
}
