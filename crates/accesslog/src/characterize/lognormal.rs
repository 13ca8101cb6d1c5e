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
        let (mut n, mut sum, mut sum_sq) = (0u64, 0.0, 0.0);
        for v in values.filter(|v| *v > 0.0) {
            let l = v.ln();
            n += 1;
            sum += l;
            sum_sq += l * l;
        }
        if n < 2 {
            return None;
        }
        let mu = sum / n as f64;
        let sigma = (sum_sq / n as f64 - mu * mu).max(0.0).sqrt();
        Some(Lognormal { mu, sigma })
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
