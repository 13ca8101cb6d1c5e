//! The lognormal distribution: its fit and its tail function.

/// A lognormal's parameters: ln X ~ Normal(mu, sigma).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Lognormal {
    /// Mean of ln X.
    pub mu: f64,
    /// Standard deviation of ln X.
    pub sigma: f64,
}

impl Lognormal {
    /// The maximum-likelihood fit (mean and standard deviation of the logs) of positive
    /// values; `None` with fewer than two.
    pub fn fit(values: impl Iterator<Item = f64>) -> Option<Lognormal> {
        Lognormal::fit_weighted(values.map(|v| (v, 1.0)))
    }

    /// [`Lognormal::fit`] of values each counted `weight` times: a log-binned histogram's
    /// bins, or the values themselves with weight 1 (the sums are then those of the plain
    /// fit, term by term, so the figures are identical).
    pub fn fit_weighted(values: impl Iterator<Item = (f64, f64)>) -> Option<Lognormal> {
        let (mut n, mut sum, mut sum_sq) = (0.0, 0.0, 0.0);
        for (v, w) in values.filter(|v| v.0 > 0.0) {
            let l = v.ln();
            n += w;
            sum += w * l;
            sum_sq += w * l * l;
        }
        if n < 2.0 {
            return None;
        }
        let mu = sum / n;
        let sigma = (sum_sq / n - mu * mu).max(0.0).sqrt();
        Some(Lognormal { mu, sigma })
    }

    /// The maximum-likelihood fit of values known to lie below `cut` (a lognormal truncated
    /// there): the plain fit under-estimates μ and σ when much of the mass lies near the cut.
    /// Nelder–Mead on (μ, ln σ) from the plain fit, written here for two parameters rather
    /// than taking an optimization crate for one call.
    pub fn fit_below(values: &[f64], cut: f64) -> Option<Lognormal> {
        let weighted: Vec<(f64, f64)> = values.iter().map(|&v| (v, 1.0)).collect();
        Lognormal::fit_below_weighted(&weighted, cut)
    }

    /// [`Lognormal::fit_below`] of values each counted `weight` times.
    pub fn fit_below_weighted(values: &[(f64, f64)], cut: f64) -> Option<Lognormal> {
        let logs: Vec<(f64, f64)> = values
            .iter()
            .filter(|v| v.0 > 0.0 && v.0 < cut)
            .map(|&(v, w)| (v.ln(), w))
            .collect();
        let start = Lognormal::fit_weighted(logs.iter().map(|&(l, w)| (l.exp(), w)))?;
        if start.sigma <= 0.0 {
            return Some(start);
        }
        // The likelihood needs only the sufficient statistics n, Σ ln x and Σ (ln x)²: each
        // evaluation is then O(1), not a pass over every value.
        let (mut n, mut s1, mut s2) = (0.0, 0.0, 0.0);
        for &(l, w) in &logs {
            n += w;
            s1 += w * l;
            s2 += w * l * l;
        }
        let c = cut.ln();
        let nll = |p: [f64; 2]| {
            let (mu, sigma) = (p[0], p[1].exp());
            let mass = normal_cdf((c - mu) / sigma);
            if mass <= 0.0 {
                return f64::INFINITY;
            }
            let sq = (s2 - 2.0 * mu * s1 + mu * mu * n).max(0.0) / (sigma * sigma);
            n * sigma.ln() + 0.5 * sq + n * mass.ln()
        };
        let best = nelder_mead(nll, [start.mu, start.sigma.ln()], [0.5, 0.2]);
        let fitted = Lognormal {
            mu: best[0],
            sigma: best[1].exp(),
        };
        // When the values below the cut rise toward it (no peak of their own), the truncated
        // likelihood is nearly flat along a ridge of ever larger μ and σ, and the optimum
        // runs off to a mode far past the cut that describes nothing: μ = 1 521, σ = 39 (ln
        // bytes) on a real site's documents (#35), which made `fileset like --synthetic`
        // draw every file at the cut. Such a fit is not believed: the values' own moments
        // are kept, which a sampler truncated at the cut reproduces.
        let believable = fitted.mu <= c + 2.0 * start.sigma && fitted.sigma <= 3.0 * start.sigma;
        Some(if believable { fitted } else { start })
    }

    /// P(X ≤ x).
    pub fn cdf(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        if self.sigma <= 0.0 {
            return if x.ln() >= self.mu { 1.0 } else { 0.0 };
        }
        normal_cdf((x.ln() - self.mu) / self.sigma)
    }
}

/// Minimizes `f` over two parameters from `start` with initial steps `step` (Nelder & Mead
/// 1965, the standard coefficients), for at most 400 evaluations.
fn nelder_mead(f: impl Fn([f64; 2]) -> f64, start: [f64; 2], step: [f64; 2]) -> [f64; 2] {
    let mut simplex = [
        start,
        [start[0] + step[0], start[1]],
        [start[0], start[1] + step[1]],
    ];
    let mut values = simplex.map(&f);
    for _ in 0..400 {
        let mut order = [0, 1, 2];
        order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
        let (best, mid, worst) = (order[0], order[1], order[2]);
        if (values[worst] - values[best]).abs() < 1e-10 {
            break;
        }
        let centroid = [
            0.5 * (simplex[best][0] + simplex[mid][0]),
            0.5 * (simplex[best][1] + simplex[mid][1]),
        ];
        let at = |k: f64| {
            [
                centroid[0] + k * (simplex[worst][0] - centroid[0]),
                centroid[1] + k * (simplex[worst][1] - centroid[1]),
            ]
        };
        let reflected = at(-1.0);
        let fr = f(reflected);
        if fr < values[best] {
            let expanded = at(-2.0);
            let fe = f(expanded);
            (simplex[worst], values[worst]) = if fe < fr {
                (expanded, fe)
            } else {
                (reflected, fr)
            };
        } else if fr < values[mid] {
            (simplex[worst], values[worst]) = (reflected, fr);
        } else {
            let contracted = at(0.5);
            let fc = f(contracted);
            if fc < values[worst] {
                (simplex[worst], values[worst]) = (contracted, fc);
            } else {
                for i in [mid, worst] {
                    simplex[i] = [
                        0.5 * (simplex[i][0] + simplex[best][0]),
                        0.5 * (simplex[i][1] + simplex[best][1]),
                    ];
                    values[i] = f(simplex[i]);
                }
            }
        }
    }
    let mut best = 0;
    for i in 1..3 {
        if values[i] < values[best] {
            best = i;
        }
    }
    simplex[best]
}

/// Φ(z), the standard normal CDF.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// The complementary error function, by the Chebyshev fit of Numerical Recipes (`erfcc`,
/// fractional error below 1.2e-7 everywhere). Written here because the standard library has
/// none and a chart's model curve needs no more precision than this.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webscope_workload::Rng;

    #[test]
    fn recovers_mu_and_sigma_within_two_percent() {
        let (mu, sigma) = (8.5, 1.3);
        let mut rng = Rng::new(7);
        let fit = Lognormal::fit((0..50_000).map(|_| (mu + sigma * rng.normal()).exp())).unwrap();
        assert!((fit.mu - mu).abs() < 0.02 * mu, "{fit:?}");
        assert!((fit.sigma - sigma).abs() < 0.02 * sigma, "{fit:?}");
    }

    #[test]
    fn a_lognormal_truncated_at_its_median_is_recovered() {
        // Only the values below e^mu are seen: the plain fit's μ is far too low, the
        // truncated fit's within 0.1, σ within 10 %.
        let (mu, sigma) = (8.0f64, 1.2);
        let mut rng = Rng::new(12);
        let cut = mu.exp();
        let below: Vec<f64> = (0..40_000)
            .map(|_| (mu + sigma * rng.normal()).exp())
            .filter(|&x| x < cut)
            .collect();
        let plain = Lognormal::fit(below.iter().copied()).unwrap();
        assert!(plain.mu < mu - 0.5, "{plain:?}");
        let fit = Lognormal::fit_below(&below, cut).unwrap();
        assert!((fit.mu - mu).abs() < 0.1, "{fit:?}");
        assert!((fit.sigma - sigma).abs() < 0.1 * sigma, "{fit:?}");
    }

    #[test]
    fn values_densest_at_the_cut_keep_their_own_moments_not_a_runaway_fit() {
        // ln x falls off exponentially below the cut at 10 000 (its density highest at the
        // cut): no peak of its own below it, the shape of a real site's documents (#35).
        let values: Vec<f64> = (0..600)
            .map(|i| {
                let u = (i as f64 + 0.5) / 600.0;
                (10_000f64.ln() + 0.8 * u.ln()).exp()
            })
            .collect();
        let fit = Lognormal::fit_below(&values, 10_000.0).unwrap();
        assert!(
            fit.mu > 10f64.ln() && fit.mu < 10_000f64.ln() && fit.sigma < 2.0,
            "{fit:?}"
        );
    }

    #[test]
    fn normal_cdf_known_values() {
        for (z, p) in [
            (0.0, 0.5),
            (1.0, 0.841_344_7),
            (-1.959_964, 0.025),
            (3.0, 0.998_650_1),
        ] {
            assert!((normal_cdf(z) - p).abs() < 1e-6, "{z}: {}", normal_cdf(z));
        }
        let ln = Lognormal {
            mu: 0.0,
            sigma: 1.0,
        };
        assert!((ln.cdf(1.0) - 0.5).abs() < 1e-7);
        assert_eq!(ln.cdf(0.0), 0.0);
    }
}
