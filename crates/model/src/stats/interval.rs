//! Confidence intervals for what a run measures, and the verdict they allow on a limit.
//!
//! - A **percentile** measured on n requests: [`quantile_ranks`], the distribution-free
//!   interval between two order statistics. The number B of requests faster than the true
//!   q-quantile ξ is Binomial(n, q) whatever the latencies' distribution, so
//!   P(X₍ₗ₎ ≤ ξ ≤ X₍ᵤ₎) = P(l ≤ B < u). Exact for every n (see `binomial`), equal-tailed:
//!   each side misses with probability at most α/2. The interval comes back as ranks, so
//!   a caller with a histogram reads the values itself ([`RankInterval::quantile_of`]).
//! - A **share** (k errors of n requests): [`wilson`], the Wilson score interval, for the
//!   judges: closed-form, never outside [0, 1], and its coverage is close to the stated
//!   level on average even for k = 0 or shares near 0, where the textbook p ± z·√(p(1−p)/n)
//!   collapses to a point. [`clopper_pearson`] inverts the binomial itself: its coverage is
//!   at least the level for every true share (conservative, so wider): for a caller that
//!   must guarantee the level, such as a test that asserts a share.
//! - A share over **batches** of one run: [`batch_share`], the method of batch means, for
//!   counts whose requests are not independent (latencies are autocorrelated: a queue
//!   episode slows thousands of consecutive requests together).
//! - [`decide`]: an interval against a ceiling or a floor is a pass, a fail, or undecided
//!   when it straddles the limit — more requests are needed, not a verdict.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::binomial::Binomial;

/// A confidence level 1 − α: the probability that the interval holds the true value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confidence(f64);

impl Confidence {
    /// 95 %, the usual level.
    pub const P95: Confidence = Confidence(0.95);

    /// The level `level` (0.95 for 95 %); `None` unless 0 < level < 1.
    pub fn new(level: f64) -> Option<Confidence> {
        (level > 0.0 && level < 1.0).then_some(Confidence(level))
    }

    /// The level, 1 − α.
    pub fn level(self) -> f64 {
        self.0
    }

    /// α / 2: what each side of an equal-tailed interval may miss.
    fn tail(self) -> f64 {
        (1.0 - self.0) / 2.0
    }

    /// The standard normal quantile z at 1 − α/2 (1.959964 for 95 %).
    pub fn z(self) -> f64 {
        Normal::standard().inverse_cdf(1.0 - self.tail())
    }
}

/// The values between which the true value lies; −∞ or +∞ on a side the data do not bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The lowest value the true one may have.
    pub low: f64,
    /// The highest value the true one may have.
    pub high: f64,
}

/// The order statistics that bound a quantile of n values: ranks from 1 (the smallest) to
/// n. `None` on a side means the sample is too small to bound that side at the level: the
/// quantile may lie beyond its smallest (or largest) value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankInterval {
    /// How many values the ranks count.
    pub n: u64,
    /// The rank at or below which the quantile lies with probability ≤ α/2.
    pub lower: Option<u64>,
    /// The rank at or above which the quantile lies with probability ≤ α/2.
    pub upper: Option<u64>,
    /// The exact probability that the interval holds the quantile (≥ the level: ranks are
    /// whole numbers, so the level is met with some to spare).
    pub coverage: f64,
}

impl RankInterval {
    /// The quantile at which a nearest-rank reader (HdrHistogram's `value_at_quantile`,
    /// [`super::quantile`]) returns the value of `rank`: (rank − ½) / n, the middle of the
    /// rank's step, so that rounding cannot move it to a neighbour as rank / n can.
    pub fn quantile_of(&self, rank: u64) -> f64 {
        (rank as f64 - 0.5) / self.n as f64
    }

    /// The interval of values, reading each bounding rank with `at_rank` (±∞ on an
    /// unbounded side).
    pub fn values(&self, at_rank: impl Fn(u64) -> f64) -> Interval {
        Interval {
            low: self.lower.map_or(f64::NEG_INFINITY, &at_rank),
            high: self.upper.map_or(f64::INFINITY, &at_rank),
        }
    }
}

/// The ranks (l, u) that hold the q-quantile of n values with `confidence`: l the largest
/// rank with P(B < l) ≤ α/2, u the smallest with P(B ≥ u) ≤ α/2, B ~ Binomial(n, q).
/// `None` when n is 0 or q is not strictly between 0 and 1.
pub fn quantile_ranks(n: u64, q: f64, confidence: Confidence) -> Option<RankInterval> {
    if n == 0 {
        return None;
    }
    let b = Binomial::new(n, q)?;
    let tail = confidence.tail();
    // X₍ₗ₎ lies above ξ when fewer than l values do not: P(B < l), growing with l.
    let lower = match first(1, n, |l| b.below(l) > tail) {
        Some(1) => None,
        Some(l) => Some(l - 1),
        None => Some(n),
    };
    // X₍ᵤ₎ lies below ξ when u or more values do: P(B ≥ u), shrinking with u.
    let upper = first(1, n, |u| 1.0 - b.below(u) <= tail);
    let coverage = upper.map_or(1.0, |u| b.below(u)) - lower.map_or(0.0, |l| b.below(l));
    Some(RankInterval {
        n,
        lower,
        upper,
        coverage,
    })
}

/// The smallest x in lo..=hi for which `holds` (false below some x, true from it on).
fn first(lo: u64, hi: u64, holds: impl Fn(u64) -> bool) -> Option<u64> {
    let (mut lo, mut hi) = (lo, hi.checked_add(1)?);
    let end = hi;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    (lo < end).then_some(lo)
}

/// The batch-means interval of a share over consecutive batches of one run: `batches` holds
/// each batch's (k, n), k of its n requests counted (say, slower than a limit). The share is
/// Σk / Σn, its variance the ratio estimator's over the batches, Σ(kᵢ − p·nᵢ)² / ((b − 1)·b·n̄²),
/// and the interval p ± t(b − 1, 1 − α/2)·s, clamped to [0, 1] (Law & Kelton's method of
/// batch means). Unlike [`wilson`], which takes every request as independent of the next,
/// it widens when the counted requests came in clusters: a queue that built and drained
/// slows thousands of consecutive requests together, and then the batches disagree. `None`
/// for fewer than [`MIN_BATCHES`] batches or no request.
pub fn batch_share(batches: &[(u64, u64)], confidence: Confidence) -> Option<Interval> {
    let b = batches.len();
    let total: u64 = batches.iter().map(|&(_, n)| n).sum();
    if b < MIN_BATCHES || total == 0 || batches.iter().any(|&(k, n)| k > n) {
        return None;
    }
    let bf = b as f64;
    let p = batches.iter().map(|&(k, _)| k as f64).sum::<f64>() / total as f64;
    let mean_n = total as f64 / bf;
    let squares: f64 = batches
        .iter()
        .map(|&(k, n)| (k as f64 - p * n as f64).powi(2))
        .sum();
    let se = (squares / ((bf - 1.0) * bf * mean_n * mean_n)).sqrt();
    let t = StudentsT::new(0.0, 1.0, bf - 1.0)
        .ok()?
        .inverse_cdf(1.0 - confidence.tail());
    Some(Interval {
        low: (p - t * se).max(0.0),
        high: (p + t * se).min(1.0),
    })
}

/// The fewest batches a batch-means interval is drawn from: with fewer, t's quantile and the
/// spread of a handful of values make an interval too loose to decide anything (t(4) at
/// 95 % is 2.78; t(1) would be 12.7).
pub const MIN_BATCHES: usize = 5;

/// The Wilson score interval of the share k / n; `None` when n is 0 (no share to bound) or
/// k > n.
pub fn wilson(k: u64, n: u64, confidence: Confidence) -> Option<Interval> {
    if n == 0 || k > n {
        return None;
    }
    let (nf, p, z) = (n as f64, k as f64 / n as f64, confidence.z());
    let z2 = z * z;
    let scale = 1.0 + z2 / nf;
    let centre = (p + z2 / (2.0 * nf)) / scale;
    let half = z / scale * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt();
    // At k = 0 (k = n) the bound is 0 (1) exactly; the formula leaves a rounding error.
    Some(Interval {
        low: if k == 0 { 0.0 } else { centre - half },
        high: if k == n { 1.0 } else { centre + half },
    })
}

/// The Clopper-Pearson ("exact") interval of the share k / n: the shares p for which
/// neither P(B ≥ k) nor P(B ≤ k) is below α/2, B ~ Binomial(n, p). `None` when n is 0 or
/// k > n.
pub fn clopper_pearson(k: u64, n: u64, confidence: Confidence) -> Option<Interval> {
    if n == 0 || k > n {
        return None;
    }
    let tail = confidence.tail();
    let cdf = |p: f64, k: u64| Binomial::new(n, p).map_or(0.0, |b| b.cdf(k));
    let low = if k == 0 {
        0.0
    } else {
        // P(B ≥ k) grows with p.
        bisect(|p| 1.0 - cdf(p, k - 1) >= tail)
    };
    let high = if k == n {
        1.0
    } else {
        // P(B ≤ k) falls with p.
        bisect(|p| cdf(p, k) < tail)
    };
    Some(Interval { low, high })
}

/// The share in (0, 1) where `holds` turns from false to true, to 2⁻⁶⁰.
fn bisect(holds: impl Fn(f64) -> bool) -> f64 {
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if holds(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (lo + hi) / 2.0
}

/// A limit on a measured figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// A ceiling: the figure must be at most this (a p99, an error share).
    AtMost(f64),
    /// A floor: the figure must be at least this (a goodput share, a throughput).
    AtLeast(f64),
}

/// What an interval says of a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The whole interval meets the limit.
    Pass,
    /// No value of the interval meets the limit.
    Fail,
    /// The interval straddles the limit (or is not a number): more data, not a verdict.
    Undecided,
}

/// Whether `interval` meets `limit`: a pass only if all of it does, a fail only if none of
/// it does, else undecided. A bound equal to the limit meets it (the limits are ≤ and ≥).
pub fn decide(interval: Interval, limit: Limit) -> Decision {
    let (all, none) = match limit {
        Limit::AtMost(max) => (interval.high <= max, interval.low > max),
        Limit::AtLeast(min) => (interval.low >= min, interval.high < min),
    };
    match (all, none) {
        (true, _) => Decision::Pass,
        (_, true) => Decision::Fail,
        _ => Decision::Undecided,
    }
}

#[cfg(test)]
#[path = "interval_tests.rs"]
mod tests;
