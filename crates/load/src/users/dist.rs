//! The distributions a session model draws from (`--think`, `--views`, `--objects`): written
//! the way the field writes them (`pareto(1.5,1s)`), drawn by inverting the CDF, and with
//! the CDF and mean a test or a model needs (a KS check of the think times a run kept, MVA's
//! think time Z).
//!
//! A bound `max` truncates: values above it are not drawn at all (the distribution is
//! conditioned on being at most `max`), rather than piled up at `max`. A Pareto think time
//! has infinite variance (SURGE's α = 1.5), and one draw of ten minutes would take a user out
//! of a one-minute run; the truncated mean is the one reported and used.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use webscope_workload::Rng;

/// A distribution of non-negative values (seconds for times, counts for views and objects).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum Dist {
    /// Always `value`.
    Constant {
        /// The value.
        value: f64,
    },
    /// Exponential with this mean.
    Exponential {
        /// The mean.
        mean: f64,
    },
    /// Counts 1, 2, 3, ... with P(k) = p(1-p)^(k-1), p = 1/mean: a session that ends after each
    /// view with the same chance.
    Geometric {
        /// The mean (at least 1).
        mean: f64,
    },
    /// Pareto: P(X > x) = (scale/x)^alpha for x ≥ scale, truncated at `max`.
    Pareto {
        /// The tail index.
        alpha: f64,
        /// The smallest value (x_m, k).
        scale: f64,
        /// Nothing above this is drawn.
        max: Option<f64>,
    },
    /// Lognormal: ln X ~ N(mu, sigma²), truncated at `max`.
    Lognormal {
        /// The mean of ln X.
        mu: f64,
        /// The standard deviation of ln X.
        sigma: f64,
        /// Nothing above this is drawn.
        max: Option<f64>,
    },
}

impl Dist {
    /// One draw.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        match *self {
            Dist::Constant { value } => value,
            Dist::Exponential { mean } => mean * rng.exponential(),
            Dist::Geometric { mean } => {
                let p = 1.0 / mean.max(1.0);
                if p >= 1.0 {
                    return 1.0;
                }
                // Inversion: the number of trials to the first success.
                (rng.next_open_f64().ln() / (1.0 - p).ln()).ceil().max(1.0)
            }
            Dist::Pareto { .. } | Dist::Lognormal { .. } => {
                // Below F(max): the truncated distribution, drawn by inversion.
                let top = self.max().map_or(1.0, |m| self.untruncated_cdf(m));
                self.inverse(rng.next_f64() * top)
            }
        }
    }

    fn max(&self) -> Option<f64> {
        match *self {
            Dist::Pareto { max, .. } | Dist::Lognormal { max, .. } => max,
            _ => None,
        }
    }

    fn untruncated_cdf(&self, x: f64) -> f64 {
        match *self {
            Dist::Constant { value } => f64::from(u8::from(x >= value)),
            Dist::Exponential { mean } => (1.0 - (-x / mean).exp()).max(0.0),
            Dist::Geometric { mean } => {
                let p = 1.0 / mean.max(1.0);
                if x < 1.0 {
                    0.0
                } else {
                    1.0 - (1.0 - p).powf(x.floor())
                }
            }
            Dist::Pareto { alpha, scale, .. } => {
                if x < scale {
                    0.0
                } else {
                    1.0 - (scale / x).powf(alpha)
                }
            }
            Dist::Lognormal { mu, sigma, .. } => {
                if x <= 0.0 {
                    0.0
                } else {
                    std_normal().cdf((x.ln() - mu) / sigma)
                }
            }
        }
    }

    fn inverse(&self, p: f64) -> f64 {
        match *self {
            Dist::Pareto { alpha, scale, .. } => scale * (1.0 - p).powf(-1.0 / alpha),
            Dist::Lognormal { mu, sigma, .. } => {
                (mu + sigma * std_normal().inverse_cdf(p.max(f64::MIN_POSITIVE))).exp()
            }
            _ => unreachable!("inverted only for the continuous tails"),
        }
    }

    /// P(X ≤ x), truncation included.
    pub fn cdf(&self, x: f64) -> f64 {
        match self.max() {
            Some(m) if x >= m => 1.0,
            Some(m) => self.untruncated_cdf(x) / self.untruncated_cdf(m),
            None => self.untruncated_cdf(x),
        }
    }

    /// The mean, truncation included.
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Constant { value } => value,
            Dist::Exponential { mean } | Dist::Geometric { mean } => mean.max(match self {
                Dist::Geometric { .. } => 1.0,
                _ => 0.0,
            }),
            Dist::Pareto { alpha, scale, max } => pareto_mean(alpha, scale, max),
            Dist::Lognormal { mu, sigma, max } => {
                let whole = (mu + sigma * sigma / 2.0).exp();
                match max {
                    None => whole,
                    Some(m) => {
                        let n = std_normal();
                        let z = (m.ln() - mu) / sigma;
                        whole * n.cdf(z - sigma) / n.cdf(z)
                    }
                }
            }
        }
    }

    /// Parses `const(3)`, `exp(2s)`, `geo(5)`, `pareto(1.5,1s)`, `pareto(1.5,1s,60s)`,
    /// `lognormal(0.5,1.2)`, `lognormal(0.5,1.2,60s)`: times are in the one grammar of
    /// lengths (`500ms`, `2s`, `1m30s`; seconds without a unit), counts are plain numbers.
    /// No value may pass a year ([`webscope_sys::duration::MAX`], in seconds). The error says
    /// what is wrong.
    pub fn parse(text: &str) -> Result<Dist, String> {
        let bad = |why: &str| {
            format!("{text:?}: {why} (write const(X), exp(MEAN), geo(MEAN), pareto(ALPHA,SCALE[,MAX]) or lognormal(MU,SIGMA[,MAX]))")
        };
        let (name, rest) = text
            .trim()
            .split_once('(')
            .ok_or_else(|| bad("no parenthesis"))?;
        let args = rest
            .strip_suffix(')')
            .ok_or_else(|| bad("no closing parenthesis"))?;
        let values: Vec<f64> = args
            .split(',')
            .map(|a| seconds(a.trim()).map_err(|why| bad(&why)))
            .collect::<Result<_, _>>()?;
        let need = |n: std::ops::RangeInclusive<usize>| {
            if n.contains(&values.len()) {
                Ok(())
            } else {
                Err(bad(&format!(
                    "{name} takes {} to {} values",
                    n.start(),
                    n.end()
                )))
            }
        };
        let dist = match name.trim() {
            "const" | "constant" => need(1..=1).map(|_| Dist::Constant { value: values[0] }),
            "exp" | "exponential" => need(1..=1).map(|_| Dist::Exponential { mean: values[0] }),
            "geo" | "geometric" => need(1..=1).map(|_| Dist::Geometric { mean: values[0] }),
            "pareto" => need(2..=3).map(|_| Dist::Pareto {
                alpha: values[0],
                scale: values[1],
                max: values.get(2).copied(),
            }),
            "lognormal" => need(2..=3).map(|_| Dist::Lognormal {
                mu: values[0],
                sigma: values[1],
                max: values.get(2).copied(),
            }),
            other => Err(bad(&format!("unknown distribution {other:?}"))),
        }?;
        dist.check().map_err(|why| bad(&why))?;
        Ok(dist)
    }

    /// Its parameters, in the order they are written.
    fn parameters(&self) -> Vec<f64> {
        match *self {
            Dist::Constant { value } => vec![value],
            Dist::Exponential { mean } | Dist::Geometric { mean } => vec![mean],
            Dist::Pareto { alpha, scale, max } => [Some(alpha), Some(scale), max]
                .into_iter()
                .flatten()
                .collect(),
            Dist::Lognormal { mu, sigma, max } => {
                [Some(mu), Some(sigma), max].into_iter().flatten().collect()
            }
        }
    }

    /// Whether the parameters make a distribution of finite, non-negative values.
    fn check(&self) -> Result<(), String> {
        let ok = match *self {
            Dist::Constant { value } => value >= 0.0,
            Dist::Exponential { mean } => mean > 0.0,
            Dist::Geometric { mean } => mean >= 1.0,
            Dist::Pareto { alpha, scale, max } => {
                alpha > 0.0 && scale > 0.0 && max.is_none_or(|m| m > scale)
            }
            Dist::Lognormal { sigma, max, .. } => sigma > 0.0 && max.is_none_or(|m| m > 0.0),
        };
        if !ok {
            return Err("parameters out of range (means and scales > 0, geo's mean ≥ 1, a max above the scale)".into());
        }
        let most = webscope_sys::duration::MAX.as_secs_f64();
        if let Some(big) = self.parameters().into_iter().find(|v| v.abs() > most) {
            return Err(format!(
                "{big} is more than a year's seconds ({most}), the longest length webscope takes"
            ));
        }
        if let Dist::Pareto {
            alpha, max: None, ..
        } = *self
        {
            if alpha <= 1.0 {
                return Err("a Pareto with alpha ≤ 1 has no mean: give a max".into());
            }
        }
        Ok(())
    }
}

impl std::fmt::Display for Dist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let max = |m: Option<f64>| m.map(|m| format!(",{m}")).unwrap_or_default();
        match *self {
            Dist::Constant { value } => write!(f, "const({value})"),
            Dist::Exponential { mean } => write!(f, "exp({mean})"),
            Dist::Geometric { mean } => write!(f, "geo({mean})"),
            Dist::Pareto {
                alpha,
                scale,
                max: m,
            } => write!(f, "pareto({alpha},{scale}{})", max(m)),
            Dist::Lognormal { mu, sigma, max: m } => {
                write!(f, "lognormal({mu},{sigma}{})", max(m))
            }
        }
    }
}

fn std_normal() -> Normal {
    Normal::standard()
}

/// A plain number (a count, a shape, or seconds), or a time in the one grammar of lengths
/// (`webscope_sys::duration`: `500ms`, `2s`, `1m30s`), in seconds.
fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        Ok(_) => Err(format!("{text:?} is not a number")),
        Err(_) => webscope_sys::duration::parse(text)
            .map(|d| d.as_secs_f64())
            .map_err(|e| e.to_string()),
    }
}

/// The mean of a Pareto truncated at `max` (∫ x dF over [scale, max] / F(max)).
fn pareto_mean(alpha: f64, scale: f64, max: Option<f64>) -> f64 {
    let Some(m) = max else {
        return alpha * scale / (alpha - 1.0);
    };
    let mass = 1.0 - (scale / m).powf(alpha);
    let integral = if (alpha - 1.0).abs() < 1e-12 {
        scale * (m / scale).ln()
    } else {
        alpha * scale.powf(alpha) / (alpha - 1.0) * (scale.powf(1.0 - alpha) - m.powf(1.0 - alpha))
    };
    integral / mass
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_mean(d: &Dist, n: usize) -> f64 {
        let mut rng = Rng::new(7);
        (0..n).map(|_| d.sample(&mut rng)).sum::<f64>() / n as f64
    }

    #[test]
    fn parses_what_the_field_writes_and_refuses_the_rest() {
        assert_eq!(
            Dist::parse("pareto(1.5,1s,60s)"),
            Ok(Dist::Pareto {
                alpha: 1.5,
                scale: 1.0,
                max: Some(60.0)
            })
        );
        assert_eq!(
            Dist::parse("exp(250ms)"),
            Ok(Dist::Exponential { mean: 0.25 })
        );
        assert_eq!(Dist::parse("geo(5)"), Ok(Dist::Geometric { mean: 5.0 }));
        for bad in [
            "pareto(1.5)",
            "exp(-1)",
            "pareto(0.9,1)",
            "weibull(1,2)",
            "exp 3",
            "geo(x)",
        ] {
            let e = Dist::parse(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
        let d = Dist::parse("lognormal(0.5,1.2,60s)").unwrap();
        assert_eq!(Dist::parse(&d.to_string()), Ok(d));
        // Times in the one grammar of lengths; a bare number is seconds.
        assert_eq!(
            Dist::parse("const(1m30s)"),
            Ok(Dist::Constant { value: 90.0 })
        );
        assert_eq!(Dist::parse("const(1.5)"), Ok(Dist::Constant { value: 1.5 }));
    }

    /// Issue 51, item 8: a think time past any clock panicked when it became a `Duration`.
    #[test]
    fn a_value_past_a_year_is_refused_in_one_line() {
        for bad in [
            "const(1e300)",
            "exp(500000000000years)",
            "pareto(1.5,1s,400d)",
        ] {
            let e = Dist::parse(bad).unwrap_err();
            assert!(
                e.contains("a year") || e.contains("longest length"),
                "{bad}: {e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn draws_follow_the_mean_and_the_bound() {
        for d in [
            Dist::Exponential { mean: 2.0 },
            Dist::Geometric { mean: 5.0 },
            Dist::Pareto {
                alpha: 1.5,
                scale: 1.0,
                max: Some(60.0),
            },
            Dist::Pareto {
                alpha: 2.43,
                scale: 1.0,
                max: None,
            },
            Dist::Lognormal {
                mu: 0.0,
                sigma: 1.0,
                max: Some(10.0),
            },
        ] {
            let (drawn, mean) = (sample_mean(&d, 400_000), d.mean());
            assert!(
                (drawn - mean).abs() < 0.03 * mean,
                "{d}: drawn {drawn}, mean {mean}"
            );
        }
        let bounded = Dist::Pareto {
            alpha: 1.5,
            scale: 1.0,
            max: Some(5.0),
        };
        let mut rng = Rng::new(3);
        assert!((0..100_000).all(|_| (1.0..=5.0).contains(&bounded.sample(&mut rng))));
        assert_eq!(bounded.cdf(5.0), 1.0);
        assert!(
            (bounded.cdf(2.0) - (1.0 - 2f64.powf(-1.5)) / (1.0 - 5f64.powf(-1.5))).abs() < 1e-12
        );
    }
}
