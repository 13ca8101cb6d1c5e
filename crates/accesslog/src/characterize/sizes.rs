//! A size distribution: mean and median, the CCDF, a lognormal body and a Pareto tail.
//!
//! The tail is fitted first ([`super::hill`]: Hill estimator, cut by the KS rule); the body
//! is the lognormal fitted by maximum likelihood to the values below the cut, as a lognormal
//! truncated there ([`Lognormal::fit_below`]). Together they are the SURGE model of Barford &
//! Crovella (1998), which `webscope fileset --heavy-tail` generates.
//!
//! Known limit: the KS rule tends to place the cut somewhat above a mixture's true junction,
//! and the body's lognormal cannot follow the tail's first values left under it, so the
//! model's CCDF can stray by several points just below the cut (a unit test bounds it at 8).

use webscope_model::stats::Sorted;

use super::hill::{self, HillPoint, TailFit};
use super::lognormal::Lognormal;
use super::points::log_spaced;

/// Figures of one size distribution.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SizeFigures {
    /// Values (bytes > 0).
    pub count: usize,
    /// Mean, bytes.
    pub mean: f64,
    /// Median, bytes (0 when `count` is 0).
    pub median: f64,
    /// Largest, bytes.
    pub max: f64,
    /// The CCDF P(X ≥ x) at up to 200 log-spaced ranks: (x, probability).
    pub ccdf: Vec<(f64, f64)>,
    /// The Pareto tail (Hill estimator at the chosen cut), when there are enough values.
    pub tail: Option<TailFit>,
    /// The lognormal fitted below the cut, truncated there (to all values when there is no
    /// tail fit).
    pub body: Option<Lognormal>,
    /// The Hill plot: α̂ against the number of order statistics k.
    pub hill: Vec<HillPoint>,
}

/// A sample as the figures read it: its largest values exactly, in descending order, and
/// the rest (all no larger) as a descending list of (value, count) — empty when every value
/// is kept, a log-binned histogram's bins otherwise (`sketch.rs`).
pub(crate) struct Sample<'a> {
    pub top: &'a [f64],
    pub rest: &'a [(f64, u64)],
    /// Values in all (> 0).
    pub n: usize,
    pub mean: f64,
}

impl Sample<'_> {
    /// The value of descending rank `rank` (1 the largest).
    fn at(&self, rank: usize) -> f64 {
        if rank <= self.top.len() {
            return self.top[rank - 1];
        }
        let mut left = (rank - self.top.len()) as u64;
        for &(v, c) in self.rest {
            if left <= c {
                return v;
            }
            left -= c;
        }
        self.rest.last().map_or(0.0, |r| r.0)
    }

    /// The median as `webscope_model::stats::median` defines it (the mean of the two middle
    /// values for an even count), read by rank from the kept values and the bins.
    fn median(&self) -> f64 {
        let n = self.n;
        match n {
            0 => 0.0,
            _ if n % 2 == 1 => self.at(n - n / 2),
            _ => (self.at(n - n / 2 + 1) + self.at(n - n / 2)) / 2.0,
        }
    }

    /// The values at or past descending rank `from` + 1, with their counts.
    fn past_rank(&self, from: usize) -> Vec<(f64, f64)> {
        let top = self.top.get(from..).unwrap_or(&[]);
        let top = top.iter().map(|&v| (v, 1.0));
        top.chain(self.rest.iter().map(|&(v, c)| (v, c as f64)))
            .collect()
    }
}

impl SizeFigures {
    /// The figures of `values` (zeros are left out: a body-less response has no size).
    pub fn new(values: impl Iterator<Item = u64>) -> SizeFigures {
        let ascending = Sorted::new(values.filter(|&v| v > 0).map(|v| v as f64));
        let desc: Vec<f64> = ascending.as_slice().iter().rev().copied().collect();
        let n = desc.len();
        let mean = if n > 0 {
            desc.iter().sum::<f64>() / n as f64
        } else {
            0.0
        };
        SizeFigures::of(&Sample {
            top: &desc,
            rest: &[],
            n,
            mean,
        })
    }

    /// The figures of a sample kept in part. Where the figures come from, and their error
    /// against those of the whole sample:
    /// - count, mean, max: exact;
    /// - the tail (Hill α̂ at the KS cut) and the Hill plot: exact while the cut lies
    ///   within the values kept ([`hill::fit_tail_top`]);
    /// - median and CCDF: exact within the values kept, else a bin's geometric centre,
    ///   within half a bin's relative width of the true value;
    /// - the lognormal body: the truncated maximum-likelihood fit to the values kept below
    ///   the cut and to the bins' centres, each weighted by its count: each ln x is off by at
    ///   most half a bin's log-width (0.005 for 1 % bins), so μ by as much, and σ² by less than
    ///   its square plus the within-bin variance (Sheppard: w²/12), far below the fit's own
    ///   sampling error.
    pub(crate) fn of(s: &Sample) -> SizeFigures {
        let n = s.n;
        let tail = hill::fit_tail_top(s.top, n);
        let body = match tail {
            Some(t) => Lognormal::fit_below_weighted(&s.past_rank(t.tail), t.x_min),
            None => Lognormal::fit_weighted(s.past_rank(0).into_iter()),
        };
        SizeFigures {
            count: n,
            mean: s.mean,
            median: s.median(),
            max: if n > 0 { s.at(1) } else { 0.0 },
            ccdf: log_spaced(1, n, 200)
                .into_iter()
                .map(|k| (s.at(k), k as f64 / n as f64))
                .collect(),
            tail,
            body,
            hill: hill::hill_plot_top(s.top, n, 200),
        }
    }

    /// The fitted model's CCDF at x: the body's lognormal, truncated at the cut and scaled to
    /// the body's share, below it; the Pareto tail above.
    pub fn model_ccdf(&self, x: f64) -> Option<f64> {
        let body = self.body?;
        let Some(t) = self.tail else {
            return Some(1.0 - body.cdf(x));
        };
        let tail_share = t.tail as f64 / t.n as f64;
        if x >= t.x_min {
            return Some(tail_share * (x / t.x_min).powf(-t.alpha));
        }
        let at_cut = body.cdf(t.x_min);
        if at_cut <= 0.0 {
            return None;
        }
        Some(tail_share + (1.0 - tail_share) * (at_cut - body.cdf(x)).max(0.0) / at_cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webscope_workload::Rng;

    #[test]
    fn the_model_ccdf_is_continuous_at_the_cut_and_falls() {
        // A lognormal body under a Pareto tail: the model at the cut is the tail's share from
        // both sides, and falls from 1 to 0.
        let mut rng = Rng::new(8);
        let s = SizeFigures::new((0..20_000).map(|_| {
            if rng.next_f64() < 0.8 {
                loop {
                    let x = (7.0 + rng.normal()).exp();
                    if x < 10_000.0 {
                        break x as u64 + 1;
                    }
                }
            } else {
                (10_000.0 * rng.next_open_f64().powf(-1.0 / 1.3)) as u64
            }
        }));
        let tail = s.tail.unwrap();
        let share = tail.tail as f64 / tail.n as f64;
        let below = s.model_ccdf(tail.x_min * 0.999_999).unwrap();
        let at = s.model_ccdf(tail.x_min).unwrap();
        assert!(
            (below - share).abs() < 1e-3 && (at - share).abs() < 1e-9,
            "{below} {at} {share}"
        );
        assert!((s.model_ccdf(1.0).unwrap() - 1.0).abs() < 1e-3);
        let xs = [10.0, 100.0, 1e3, 1e4, 1e5, 1e6];
        let ps: Vec<f64> = xs.iter().map(|&x| s.model_ccdf(x).unwrap()).collect();
        assert!(ps.windows(2).all(|w| w[0] >= w[1]), "{ps:?}");
        // And it follows the sample: within 0.01 of the empirical CCDF above the cut, within
        // 0.08 below it (the worst just below the cut, where the body's lognormal cannot
        // follow the first values of the tail that the KS rule left under the cut).
        for &(x, p) in &s.ccdf {
            let m = s.model_ccdf(x).unwrap();
            let bound = if x >= tail.x_min { 0.01 } else { 0.08 };
            assert!((m - p).abs() < bound, "at {x}: model {m}, sample {p}");
        }
    }

    #[test]
    fn mean_median_ccdf() {
        let s = SizeFigures::new([0u64, 10, 20, 30, 40].into_iter());
        assert_eq!((s.count, s.mean, s.median, s.max), (4, 25.0, 25.0, 40.0));
        assert_eq!(s.ccdf.first(), Some(&(40.0, 0.25)));
        assert_eq!(s.ccdf.last(), Some(&(10.0, 1.0)));
        assert!(s.tail.is_none(), "four values have no tail fit");
        assert!(s.body.is_some());
        let empty = SizeFigures::new(std::iter::empty());
        assert_eq!(empty.model_ccdf(10.0), None);
        assert_eq!((empty.count, empty.median), (0, 0.0));
    }
}
