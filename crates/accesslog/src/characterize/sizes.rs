//! A size distribution: mean and median, the CCDF, a lognormal body and a Pareto tail.
//!
//! The tail is fitted first ([`super::hill`]: Hill estimator, cut by the KS rule); the body
//! is the lognormal fitted by maximum likelihood to the values below the cut (a plain fit of
//! the body, not a truncated-lognormal MLE, so σ is somewhat under-estimated when much mass
//! lies near the cut; the CCDF chart shows how close it comes). Together they are the SURGE
//! model of Barford & Crovella (1998), which `webscope fileset --heavy-tail` generates.

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
    /// Median, bytes.
    pub median: f64,
    /// Largest, bytes.
    pub max: f64,
    /// The CCDF P(X ≥ x) at up to 200 log-spaced ranks: (x, probability).
    pub ccdf: Vec<(f64, f64)>,
    /// The Pareto tail (Hill estimator at the chosen cut), when there are enough values.
    pub tail: Option<TailFit>,
    /// The lognormal fitted below the cut (to all values when there is no tail fit).
    pub body: Option<Lognormal>,
    /// The Hill plot: α̂ against the number of order statistics k.
    pub hill: Vec<HillPoint>,
}

impl SizeFigures {
    /// The figures of `values` (zeros are left out: a body-less response has no size).
    pub fn new(values: impl Iterator<Item = u64>) -> SizeFigures {
        let mut desc: Vec<f64> = values.filter(|&v| v > 0).map(|v| v as f64).collect();
        desc.sort_by(|a, b| b.total_cmp(a));
        let n = desc.len();
        let mean = if n > 0 {
            desc.iter().sum::<f64>() / n as f64
        } else {
            0.0
        };
        let median = match n {
            0 => 0.0,
            n if n % 2 == 1 => desc[n / 2],
            n => 0.5 * (desc[n / 2 - 1] + desc[n / 2]),
        };
        let tail = hill::fit_tail(&desc);
        let body = match tail {
            Some(t) => Lognormal::fit(desc[t.tail..].iter().copied().filter(|&x| x < t.x_min)),
            None => Lognormal::fit(desc.iter().copied()),
        };
        SizeFigures {
            count: n,
            mean,
            median,
            max: desc.first().copied().unwrap_or(0.0),
            ccdf: log_spaced(1, n, 200)
                .into_iter()
                .map(|k| (desc[k - 1], k as f64 / n as f64))
                .collect(),
            tail,
            body,
            hill: hill::hill_plot(&desc, 200),
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

    #[test]
    fn mean_median_ccdf() {
        let s = SizeFigures::new([0u64, 10, 20, 30, 40].into_iter());
        assert_eq!((s.count, s.mean, s.median, s.max), (4, 25.0, 25.0, 40.0));
        assert_eq!(s.ccdf.first(), Some(&(40.0, 0.25)));
        assert_eq!(s.ccdf.last(), Some(&(10.0, 1.0)));
        assert!(s.tail.is_none(), "four values have no tail fit");
        assert!(s.body.is_some());
        let empty = SizeFigures::new(std::iter::empty());
        assert_eq!((empty.count, empty.median), (0, 0.0));
    }
}
