//! The tail index of a heavy-tailed sample by the Hill estimator, with the cut chosen by the
//! Kolmogorov–Smirnov rule of Clauset, Shalizi & Newman (SIAM Review 2009).
//!
//! Hill (1975): over the k largest values x(1) ≥ … ≥ x(k) above x(k+1),
//! α̂(k) = k / Σ ln(x(i) / x(k+1)), the maximum-likelihood index of a Pareto tail starting at
//! x(k+1). Its weakness is k: too small and it is noise, too large and the body biases it.
//! The Hill plot (α̂ against k) shows that trade; the cut is the k whose Pareto, fitted to the
//! values above x(k+1), is closest to them in the KS distance — the rule that does not need
//! an eye on the plot and that CSN showed to pick the true x_min on mixtures like a
//! lognormal body under a Pareto tail.

use super::points::log_spaced;

/// A Pareto tail fitted above a cut.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TailFit {
    /// The tail index α of P(X > x) = share·(x / x_min)^-α above the cut.
    pub alpha: f64,
    /// The cut: where the tail starts (x(k+1)).
    pub x_min: f64,
    /// Values above the cut (k).
    pub tail: usize,
    /// Values in the sample (n).
    pub n: usize,
    /// KS distance between the tail and the fitted Pareto.
    pub ks: f64,
}

/// One point of the Hill plot.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct HillPoint {
    /// Order statistics used (k).
    pub k: usize,
    /// α̂(k).
    pub alpha: f64,
}

/// Fewest values above a cut that the KS rule will choose: below it the KS distance is noise.
pub const MIN_TAIL: usize = 50;
/// Cut candidates tried (log-spaced in k).
const CANDIDATES: usize = 120;

/// α̂(k) from descending values and the prefix sums of their logs.
fn hill_at(desc: &[f64], log_prefix: &[f64], k: usize) -> Option<f64> {
    let floor = desc[k];
    if floor <= 0.0 {
        return None;
    }
    let sum = log_prefix[k] - k as f64 * floor.ln();
    (sum > 0.0).then(|| k as f64 / sum)
}

fn prefix_logs(desc: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    let mut out = Vec::with_capacity(desc.len() + 1);
    out.push(0.0);
    for &x in desc {
        acc += x.max(f64::MIN_POSITIVE).ln();
        out.push(acc);
    }
    out
}

/// The Hill plot of values sorted in descending order, at up to `points` log-spaced k.
#[cfg(test)]
pub fn hill_plot(desc: &[f64], points: usize) -> Vec<HillPoint> {
    hill_plot_top(desc, desc.len(), points)
}

/// The Hill plot from only the largest values of a sample of `n` (`top`, descending): the
/// points of the whole sample's plot at k below `top.len()`, exactly; none beyond.
pub fn hill_plot_top(top: &[f64], n: usize, points: usize) -> Vec<HillPoint> {
    if n < 3 || top.len() < 2 {
        return Vec::new();
    }
    let logs = prefix_logs(top);
    log_spaced(2, n - 1, points)
        .into_iter()
        .take_while(|&k| k < top.len())
        .filter_map(|k| hill_at(top, &logs, k).map(|alpha| HillPoint { k, alpha }))
        .collect()
}

/// Fits the tail of values sorted in descending order; `None` when fewer than
/// 2·[`MIN_TAIL`] values are positive.
#[cfg(test)]
pub fn fit_tail(desc: &[f64]) -> Option<TailFit> {
    let positive = desc.partition_point(|&x| x > 0.0);
    fit_tail_top(&desc[..positive], positive)
}

/// Fits the tail of a sample of `n` positive values from only its largest (`top`,
/// descending). The cuts tried are those [`fit_tail`] tries on the whole sample, less those
/// at or beyond `top.len()`: Hill's α̂(k) and the KS distance at k need only the k + 1
/// largest values, so the fit is the whole sample's exactly whenever its cut lies within
/// `top`, and otherwise the best cut within it (the error then is that of choosing a cut
/// above the KS optimum: α̂ from fewer, farther-out values).
pub fn fit_tail_top(top: &[f64], n: usize) -> Option<TailFit> {
    if n < 2 * MIN_TAIL {
        return None;
    }
    let logs = prefix_logs(top);
    let mut best: Option<TailFit> = None;
    let cuts = log_spaced(MIN_TAIL, n - 1, CANDIDATES);
    for k in cuts.into_iter().take_while(|&k| k < top.len()) {
        let Some(alpha) = hill_at(top, &logs, k) else {
            continue;
        };
        let x_min = top[k];
        let ks = ks_distance(&top[..k], x_min, alpha);
        if best.is_none_or(|b| ks < b.ks) {
            best = Some(TailFit {
                alpha,
                x_min,
                tail: k,
                n,
                ks,
            });
        }
    }
    best
}

/// The largest gap between the empirical CDF of `tail_desc` (all ≥ x_min) and the Pareto
/// CDF 1 - (x/x_min)^-α; tied values are compared once, at both ends of their step.
fn ks_distance(tail_desc: &[f64], x_min: f64, alpha: f64) -> f64 {
    let k = tail_desc.len() as f64;
    let mut worst = 0.0f64;
    let mut i = tail_desc.len();
    // Walk up from the smallest tail value; `below` values are strictly smaller.
    let mut below = 0usize;
    while i > 0 {
        let x = tail_desc[i - 1];
        let mut j = i - 1;
        while j > 0 && tail_desc[j - 1] == x {
            j -= 1;
        }
        let step = i - j;
        let model = 1.0 - (x / x_min).powf(-alpha);
        let before = below as f64 / k;
        let after = (below + step) as f64 / k;
        worst = worst.max((model - before).abs()).max((model - after).abs());
        below += step;
        i = j;
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;
    use webscope_workload::Rng;

    fn pareto(rng: &mut Rng, x_min: f64, alpha: f64) -> f64 {
        x_min * rng.next_open_f64().powf(-1.0 / alpha)
    }

    fn desc(mut v: Vec<f64>) -> Vec<f64> {
        v.sort_by(|a, b| b.total_cmp(a));
        v
    }

    #[test]
    fn pure_pareto_1_2_recovered_within_0_1() {
        let mut rng = Rng::new(11);
        let v = desc((0..20_000).map(|_| pareto(&mut rng, 1000.0, 1.2)).collect());
        let fit = fit_tail(&v).unwrap();
        assert!((fit.alpha - 1.2).abs() < 0.1, "{fit:?}");
        // The Hill plot of a pure Pareto is flat: wherever k is large enough for the
        // estimate's own noise (α/√k ≈ 0.04 at k = 1000) to be small, within 0.12 of α.
        let plot = hill_plot(&v, 100);
        let settled: Vec<_> = plot.iter().filter(|p| p.k >= 1000).collect();
        assert!(settled.len() > 20);
        for p in settled {
            assert!((p.alpha - 1.2).abs() < 0.12, "{p:?}");
        }
    }

    #[test]
    fn lognormal_body_under_a_pareto_tail_finds_the_tail() {
        // 80 % lognormal below 20 kB, 20 % Pareto α = 1.2 above it: the SURGE shape.
        let mut rng = Rng::new(5);
        let cut = 20_000.0;
        let v = desc(
            (0..40_000)
                .map(|_| {
                    if rng.next_f64() < 0.8 {
                        loop {
                            let x = (8.0 + 1.0 * rng.normal()).exp();
                            if x < cut {
                                break x;
                            }
                        }
                    } else {
                        pareto(&mut rng, cut, 1.2)
                    }
                })
                .collect(),
        );
        let fit = fit_tail(&v).unwrap();
        assert!((fit.alpha - 1.2).abs() < 0.15, "{fit:?}");
        assert!(fit.x_min > cut / 2.0 && fit.x_min < cut * 4.0, "{fit:?}");
    }

    #[test]
    fn too_few_values_give_no_fit() {
        assert_eq!(fit_tail(&[5.0; 99]), None);
        assert!(hill_plot(&[1.0, 2.0], 10).is_empty());
    }
}
