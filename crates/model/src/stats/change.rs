//! How much B differs from A, measured over repeated runs of each: the change as a ratio
//! with its confidence interval, and the verdict that interval allows on a limit.
//!
//! **The rule (equivalence testing).** A limit such as "goodput may drop by less than 3 %"
//! is met (**within**) only when the whole interval of the change lies on its good side,
//! crossed (**CROSSED**) only when the whole interval lies beyond it, and **undecided**
//! otherwise: more runs, not a verdict. This is the two one-sided tests (TOST) read off one
//! interval. It replaces a rank test's "no significant change", which passed a 9-15 %
//! regression against a 3 % limit in four of six trials (#53): a test that fails to see a
//! change has not shown that the change is small.
//!
//! **The interval.** Run figures of one server are positive and spread by a factor (a run
//! 5 % slow is 5 % slow whatever the level), so the change is taken on logarithms:
//! - **unpaired** runs: Welch's t interval on the difference of the sides' mean logs (the
//!   ratio of their geometric means), with the Welch-Satterthwaite degrees of freedom;
//! - **paired** runs (A and B taken back to back, round after round): a t interval on the
//!   rounds' log-ratios. A pair's ratio is far steadier than either side (#48: two
//!   identical servers loaded seconds apart held a ratio within 2.8-4.7 % while each
//!   drifted 21-25 % over minutes), so pairing is what makes a shared machine usable. The
//!   rounds' lag-1 autocorrelation is checked from [`LAG1_PAIRS`] pairs on: when positive
//!   (a drift the pairs did not cancel), the standard error is widened by
//!   √((1 + r) / (1 − r)), the factor for the mean of an AR(1) series.
//!
//! A figure that is 0 in every run of both sides has not changed (an error share of 0);
//! one that is 0 on one side only has no ratio, and is left undecided by its caller.
//!
//! Not here: which runs pair with which (the caller knows when they were taken), nor what a
//! figure means or which way is worse.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::interval::{decide, Confidence, Decision, Interval, Limit};

/// From this many pairs on, their lag-1 autocorrelation is estimated and, when positive,
/// widens the interval; with fewer, its estimate is mostly noise.
pub const LAG1_PAIRS: usize = 8;

/// How the runs of the two sides relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// Taken apart: any run of A against any run of B.
    Unpaired,
    /// Run i of A and run i of B were taken together, round after round.
    Paired,
}

/// The change of B against A, as fractions of A (−0.15 for 15 % lower).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The estimate: B's geometric mean over A's (paired: the geometric mean of the
    /// rounds' ratios), minus 1. The centre of `interval` on the log scale.
    pub estimate: f64,
    /// The interval the true change lies in, at `confidence`.
    pub interval: Interval,
    /// The confidence level of `interval`.
    pub confidence: Confidence,
    /// Runs of A and of B that went into it.
    pub runs: (usize, usize),
    /// Whether the runs were paired.
    pub pairing: Pairing,
    /// Paired, with [`LAG1_PAIRS`] or more: the rounds' lag-1 autocorrelation, and whether
    /// it widened the interval (it does when positive).
    pub lag1: Option<f64>,
    /// One run's spread on the log scale (paired: of a round's log-ratio; unpaired: the
    /// two sides' pooled), for [`Change::runs_to_decide`].
    spread: f64,
}

/// Why there is no interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoInterval {
    /// Fewer than two runs on a side (or two pairs): one run's luck cannot be told from a
    /// change.
    TooFewRuns,
    /// A run's figure is 0 or negative on one side (and not 0 on every run of both): a
    /// ratio has no meaning.
    NotPositive,
    /// Paired runs whose counts differ.
    Unmatched,
}

impl std::fmt::Display for NoInterval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoInterval::TooFewRuns => "fewer than 2 runs a side",
            NoInterval::NotPositive => "a figure of 0 on one side has no ratio",
            NoInterval::Unmatched => "paired runs of different counts",
        })
    }
}

/// The change of `b` against `a` (each: one figure per run) with its interval.
pub fn change(
    a: &[f64],
    b: &[f64],
    pairing: Pairing,
    confidence: Confidence,
) -> Result<Change, NoInterval> {
    if pairing == Pairing::Paired && a.len() != b.len() {
        return Err(NoInterval::Unmatched);
    }
    if a.len() < 2 || b.len() < 2 {
        return Err(NoInterval::TooFewRuns);
    }
    let all = a.iter().chain(b);
    if all.clone().all(|&v| v == 0.0) {
        return Ok(Change {
            estimate: 0.0,
            interval: Interval {
                low: 0.0,
                high: 0.0,
            },
            confidence,
            runs: (a.len(), b.len()),
            pairing,
            lag1: None,
            spread: 0.0,
        });
    }
    if !all.clone().all(|&v| v > 0.0 && v.is_finite()) {
        return Err(NoInterval::NotPositive);
    }
    let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
    let (la, lb) = (ln(a), ln(b));
    let (centre, se, df, spread, lag1) = match pairing {
        Pairing::Paired => {
            let d: Vec<f64> = la.iter().zip(&lb).map(|(x, y)| y - x).collect();
            let (m, var) = mean_var(&d);
            let n = d.len() as f64;
            let lag1 = (d.len() >= LAG1_PAIRS).then(|| lag1(&d, m, var));
            let widen = lag1
                .filter(|r| *r > 0.0)
                .map_or(1.0, |r| ((1.0 + r) / (1.0 - r.min(0.95))).sqrt());
            (m, widen * (var / n).sqrt(), n - 1.0, var.sqrt(), lag1)
        }
        Pairing::Unpaired => {
            let ((ma, va), (mb, vb)) = (mean_var(&la), mean_var(&lb));
            let (na, nb) = (la.len() as f64, lb.len() as f64);
            let (ea, eb) = (va / na, vb / nb);
            let se = (ea + eb).sqrt();
            let df = (ea + eb).powi(2) / (ea * ea / (na - 1.0) + eb * eb / (nb - 1.0));
            let pooled = (((na - 1.0) * va + (nb - 1.0) * vb) / (na + nb - 2.0)).sqrt();
            (mb - ma, se, df, pooled, None)
        }
    };
    let half = if se > 0.0 {
        t_quantile(confidence, df) * se
    } else {
        0.0
    };
    Ok(Change {
        estimate: centre.exp() - 1.0,
        interval: Interval {
            low: (centre - half).exp() - 1.0,
            high: (centre + half).exp() - 1.0,
        },
        confidence,
        runs: (a.len(), b.len()),
        pairing,
        lag1,
        spread,
    })
}

impl Change {
    /// What the interval says of `limit` (a change, as a fraction: `AtLeast(-0.03)` for
    /// "may drop by less than 3 %"): pass (within), fail (crossed) or undecided.
    pub fn decide(&self, limit: Limit) -> Decision {
        decide(self.interval, limit)
    }

    /// Whether the interval leaves out "no change" (0).
    pub fn excludes_zero(&self) -> bool {
        self.interval.low > 0.0 || self.interval.high < 0.0
    }

    /// About how many runs a side (pairs, when paired) would likely decide `limit`, if the
    /// change and the runs' spread stay as measured: the usual sample size for a one-sided
    /// test of power 80 % at the interval's level, n = k ((z + z₀.₈) s / d)², with d the
    /// distance from the estimate to the limit on the log scale and k = 2 unpaired. `None`
    /// when the estimate lies on the limit (no number of runs is likely to decide it) or
    /// the runs have no spread.
    pub fn runs_to_decide(&self, limit: Limit) -> Option<usize> {
        let at = match limit {
            Limit::AtLeast(l) | Limit::AtMost(l) => l,
        };
        let distance = ((1.0 + self.estimate).ln() - (1.0 + at).ln()).abs();
        if distance == 0.0 || self.spread == 0.0 || !distance.is_finite() {
            return None;
        }
        // Unpaired, the difference of two sides' means has twice one side's variance.
        let sides = if self.pairing == Pairing::Paired {
            1.0
        } else {
            2.0
        };
        const Z_POWER_80: f64 = 0.841_621;
        let z = self.confidence.z() + Z_POWER_80;
        let n = sides * (z * self.spread / distance).powi(2);
        // A t quantile rather than z: one more run is about what few runs cost.
        Some(((n.ceil() as usize) + 1).max(self.runs.0.max(self.runs.1) + 1))
    }
}

/// The mean and the sample variance (n − 1) of `v` (two or more values).
fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, var)
}

/// The lag-1 autocorrelation of `v` around its mean `m` (variance `var`); 0 when `v` does
/// not vary.
fn lag1(v: &[f64], m: f64, var: f64) -> f64 {
    let denominator = var * (v.len() as f64 - 1.0);
    if denominator <= 0.0 {
        return 0.0;
    }
    v.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / denominator
}

/// Student's t quantile at 1 − α/2 for `df` degrees of freedom (the normal's, z, when the
/// t distribution cannot be made).
fn t_quantile(confidence: Confidence, df: f64) -> f64 {
    let p = 1.0 - (1.0 - confidence.level()) / 2.0;
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) if df.is_finite() && df > 0.0 => t.inverse_cdf(p),
        _ => confidence.z(),
    }
}

#[cfg(test)]
#[path = "change_tests.rs"]
mod tests;
