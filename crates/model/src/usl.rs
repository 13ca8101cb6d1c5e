//! The Universal Scalability Law (Gunther): X(N) = λN / (1 + σ(N−1) + κN(N−1)), fitted to
//! measured (concurrency, throughput) points by bounded non-linear least squares, with
//! Amdahl's law (κ = 0) fitted beside it for comparison.
//!
//! σ is contention (the serial fraction), κ coherency (the crosstalk that makes throughput
//! fall after the peak N* = √((1−σ)/κ)), λ the throughput of one client. The fit minimises
//! the squared throughput residuals with Levenberg-Marquardt (the `levenberg-marquardt`
//! crate, a port of MINPACK's lmder) under σ, κ ≥ 0: the unconstrained optimum is taken when
//! it is feasible, otherwise the best of the fits with σ, κ or both held at 0 (the
//! constraints' active sets; with two bounds there are four). Standard errors come from
//! s² (JᵀJ)⁻¹ with s² = SSE / (n − p), as R's `nls` reports them; a parameter held at its
//! bound has none.

use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::{storage::Owned, DMatrix, DVector, Dyn};

use crate::Error;

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Concurrency N (clients, threads, CPUs), at least 1.
    pub concurrency: f64,
    /// Throughput measured at that concurrency.
    pub throughput: f64,
}

/// A fitted scalability curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// Contention σ ≥ 0.
    pub sigma: f64,
    /// Coherency κ ≥ 0 (0 for Amdahl).
    pub kappa: f64,
    /// Throughput of one client, λ.
    pub lambda: f64,
    /// Standard error of σ; `None` when σ is held at its bound 0.
    pub sigma_stderr: Option<f64>,
    /// Standard error of κ; `None` when κ is held at 0 (always for Amdahl).
    pub kappa_stderr: Option<f64>,
    /// Standard error of λ.
    pub lambda_stderr: Option<f64>,
    /// 1 − SSE / SST.
    pub r_squared: f64,
    /// √(SSE / (n − p)), in throughput units.
    pub residual_std_error: f64,
    /// Where throughput peaks: √((1−σ)/κ), 1 when σ ≥ 1; `None` when κ = 0 (it never
    /// falls, it only approaches λ/σ).
    pub n_peak: Option<f64>,
    /// X(n_peak).
    pub x_peak: Option<f64>,
    /// λ/σ: the ceiling when κ = 0 (Amdahl's asymptote); `None` when σ = 0.
    pub x_limit: Option<f64>,
    /// Measurements used.
    pub points: usize,
}

impl Fit {
    /// The fitted throughput at concurrency `n`.
    pub fn throughput_at(&self, n: f64) -> f64 {
        usl(self.sigma, self.kappa, self.lambda, n)
    }

    /// The response time the fit implies at concurrency `n` for a closed loop without think
    /// time (Little's law: R = N / X).
    pub fn response_time_at(&self, n: f64) -> f64 {
        n / self.throughput_at(n)
    }
}

/// The USL fit and the Amdahl fit of the same points.
#[derive(Debug, Clone, PartialEq)]
pub struct Scalability {
    /// The Universal Scalability Law (σ, κ, λ).
    pub usl: Fit,
    /// Amdahl's law (σ, λ; κ = 0).
    pub amdahl: Fit,
}

/// The lowest concurrency must be at most this for λ to be pinned by the data.
pub const MAX_LOWEST_CONCURRENCY: f64 = 4.0;

/// Fits the USL and Amdahl's law to the points.
pub fn fit(points: &[Point]) -> Result<Scalability, Error> {
    check(points)?;
    Ok(Scalability {
        usl: fit_model(points, true)?,
        amdahl: fit_model(points, false)?,
    })
}

fn usl(sigma: f64, kappa: f64, lambda: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

fn check(points: &[Point]) -> Result<(), Error> {
    for p in points {
        if !(p.concurrency.is_finite() && p.concurrency >= 1.0) {
            return Err(Error::Unfittable(format!(
                "concurrency {} is below 1: the USL is defined for N ≥ 1",
                p.concurrency
            )));
        }
        if !(p.throughput.is_finite() && p.throughput > 0.0) {
            return Err(Error::Unfittable(format!(
                "throughput {} at N = {} is not positive: drop failed runs before fitting",
                p.throughput, p.concurrency
            )));
        }
    }
    let mut distinct: Vec<f64> = points.iter().map(|p| p.concurrency).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() < 4 {
        return Err(Error::Unfittable(format!(
            "{} distinct concurrencies: fitting σ, κ and λ needs measurements at 4 or more",
            distinct.len()
        )));
    }
    if distinct[0] > MAX_LOWEST_CONCURRENCY {
        return Err(Error::Unfittable(format!(
            "the lowest concurrency measured is {}: the USL needs the region near N = 1 (a point at N ≤ {MAX_LOWEST_CONCURRENCY}) to pin λ, the throughput of one client",
            distinct[0]
        )));
    }
    let (lo, hi) = points.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), p| {
        (lo.min(p.throughput), hi.max(p.throughput))
    });
    if (hi - lo) <= 0.02 * hi {
        return Err(Error::Unfittable(format!(
            "throughput is flat ({lo} to {hi}, within 2 %) from N = {} to {}: there is no scaling to fit (the system is saturated from the start, or the load never reached it)",
            distinct[0],
            distinct[distinct.len() - 1]
        )));
    }
    Ok(())
}

/// Which parameters are free in one least-squares problem; the others are held at 0.
#[derive(Clone, Copy)]
struct Free {
    sigma: bool,
    kappa: bool,
}

struct Problem<'a> {
    points: &'a [Point],
    free: Free,
    /// Free parameters, in the order σ, κ, λ (the held ones omitted).
    params: DVector<f64>,
}

impl Problem<'_> {
    fn values(&self) -> (f64, f64, f64) {
        let mut it = self.params.iter().copied();
        let sigma = if self.free.sigma {
            it.next().unwrap_or(0.0)
        } else {
            0.0
        };
        let kappa = if self.free.kappa {
            it.next().unwrap_or(0.0)
        } else {
            0.0
        };
        let lambda = it.next().unwrap_or(0.0);
        (sigma, kappa, lambda)
    }

    fn jacobian_matrix(&self) -> DMatrix<f64> {
        let (sigma, kappa, lambda) = self.values();
        let cols = self.params.len();
        DMatrix::from_fn(self.points.len(), cols, |i, j| {
            let n = self.points[i].concurrency;
            let d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
            let mut col = j;
            if self.free.sigma {
                if col == 0 {
                    return -lambda * n * (n - 1.0) / (d * d);
                }
                col -= 1;
            }
            if self.free.kappa {
                if col == 0 {
                    return -lambda * n * n * (n - 1.0) / (d * d);
                }
                col -= 1;
            }
            debug_assert_eq!(col, 0);
            n / d
        })
    }
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Problem<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, Dyn>;
    type ParameterStorage = Owned<f64, Dyn>;

    fn set_params(&mut self, x: &DVector<f64>) {
        self.params.copy_from(x);
    }

    fn params(&self) -> DVector<f64> {
        self.params.clone()
    }

    fn residuals(&self) -> Option<DVector<f64>> {
        let (sigma, kappa, lambda) = self.values();
        Some(DVector::from_iterator(
            self.points.len(),
            self.points
                .iter()
                .map(|p| usl(sigma, kappa, lambda, p.concurrency) - p.throughput),
        ))
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        Some(self.jacobian_matrix())
    }
}

/// The best bounded fit: the USL (σ, κ ≥ 0) or Amdahl (κ = 0, σ ≥ 0).
fn fit_model(points: &[Point], with_kappa: bool) -> Result<Fit, Error> {
    let start = start(points);
    let active_sets: &[Free] = if with_kappa {
        &[
            Free {
                sigma: true,
                kappa: true,
            },
            Free {
                sigma: false,
                kappa: true,
            },
            Free {
                sigma: true,
                kappa: false,
            },
            Free {
                sigma: false,
                kappa: false,
            },
        ]
    } else {
        &[
            Free {
                sigma: true,
                kappa: false,
            },
            Free {
                sigma: false,
                kappa: false,
            },
        ]
    };
    let mut best: Option<(f64, Problem)> = None;
    for &free in active_sets {
        let Some((sse, problem)) = least_squares(points, free, start) else {
            continue;
        };
        let (sigma, kappa, _) = problem.values();
        if sigma < 0.0 || kappa < 0.0 {
            continue;
        }
        // The unconstrained optimum, when feasible, is the bounded one.
        let done = free.sigma && (free.kappa || !with_kappa);
        if best.as_ref().is_none_or(|(b, _)| sse < *b) {
            best = Some((sse, problem));
        }
        if done {
            break;
        }
    }
    let (sse, problem) = best.ok_or_else(|| {
        Error::Unfittable("the least-squares fit did not converge on these points".into())
    })?;
    Ok(summarise(points, &problem, sse))
}

/// Minimises from `start` with the given free parameters; `None` when LM fails.
fn least_squares(
    points: &[Point],
    free: Free,
    start: (f64, f64, f64),
) -> Option<(f64, Problem<'_>)> {
    let mut init = Vec::with_capacity(3);
    if free.sigma {
        init.push(start.0);
    }
    if free.kappa {
        init.push(start.1);
    }
    init.push(start.2);
    let problem = Problem {
        points,
        free,
        params: DVector::from_vec(init),
    };
    let (problem, report) = LevenbergMarquardt::new()
        .with_patience(1000)
        .with_ftol(1e-15)
        .with_xtol(1e-15)
        .minimize(problem);
    if !report.termination.was_successful() {
        return None;
    }
    let sse = 2.0 * report.objective_function;
    sse.is_finite().then_some((sse, problem))
}

/// A starting point from the data: λ from the lowest concurrency, then σ and κ by linear
/// least squares on N·λ/X − 1 = σ(N−1) + κN(N−1), clamped to small positive values.
fn start(points: &[Point]) -> (f64, f64, f64) {
    let low = points
        .iter()
        .min_by(|a, b| a.concurrency.total_cmp(&b.concurrency))
        .copied()
        .unwrap_or(Point {
            concurrency: 1.0,
            throughput: 1.0,
        });
    let lambda = low.throughput / low.concurrency;
    let (mut a11, mut a12, mut a22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points {
        let n = p.concurrency;
        let y = n * lambda / p.throughput - 1.0;
        let (u, v) = (n - 1.0, n * (n - 1.0));
        a11 += u * u;
        a12 += u * v;
        a22 += v * v;
        b1 += u * y;
        b2 += v * y;
    }
    let det = a11 * a22 - a12 * a12;
    let (sigma, kappa) = if det.abs() > 1e-300 {
        ((b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det)
    } else {
        (0.01, 1e-4)
    };
    (sigma.max(1e-6), kappa.max(1e-9), lambda)
}

fn summarise(points: &[Point], problem: &Problem, sse: f64) -> Fit {
    let (sigma, kappa, lambda) = problem.values();
    let n = points.len();
    let p = problem.params.len();
    let mean = points.iter().map(|p| p.throughput).sum::<f64>() / n as f64;
    let sst: f64 = points.iter().map(|p| (p.throughput - mean).powi(2)).sum();
    let dof = n.saturating_sub(p);
    let s2 = if dof > 0 { sse / dof as f64 } else { f64::NAN };
    let j = problem.jacobian_matrix();
    let cov = (j.transpose() * &j).try_inverse().map(|m| m * s2);
    let stderr = |i: usize| {
        cov.as_ref()
            .map(|c| c[(i, i)].sqrt())
            .filter(|v| v.is_finite())
    };
    let mut i = 0;
    let mut next = |free: bool| {
        free.then(|| {
            i += 1;
            stderr(i - 1)
        })
        .flatten()
    };
    let sigma_stderr = next(problem.free.sigma);
    let kappa_stderr = next(problem.free.kappa);
    let lambda_stderr = next(true);
    let n_peak = if kappa > 0.0 {
        Some(if sigma < 1.0 {
            ((1.0 - sigma) / kappa).sqrt().max(1.0)
        } else {
            1.0
        })
    } else {
        None
    };
    Fit {
        sigma,
        kappa,
        lambda,
        sigma_stderr,
        kappa_stderr,
        lambda_stderr,
        r_squared: 1.0 - sse / sst,
        residual_std_error: s2.sqrt(),
        n_peak,
        x_peak: n_peak.map(|n| usl(sigma, kappa, lambda, n)),
        x_limit: (sigma > 0.0).then(|| lambda / sigma),
        points: n,
    }
}

/// Reads `concurrency,throughput` points from CSV text: an optional header naming the two
/// columns (others are ignored, so a wider table works), `#` comments and blank lines.
pub fn parse_csv(text: &str) -> Result<Vec<Point>, Error> {
    let mut columns = (0usize, 1usize);
    let mut header_seen = false;
    let mut points = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if !header_seen && points.is_empty() && fields.iter().any(|f| f.parse::<f64>().is_err()) {
            header_seen = true;
            let find = |name: &str| {
                fields
                    .iter()
                    .position(|f| f.trim_matches('"').eq_ignore_ascii_case(name))
            };
            columns = match (find("concurrency"), find("throughput")) {
                (Some(c), Some(t)) => (c, t),
                _ => {
                    return Err(Error::Csv {
                        line: i + 1,
                        message: format!(
                            "header '{line}' has no 'concurrency' and 'throughput' columns (or give two unnamed columns)"
                        ),
                    })
                }
            };
            continue;
        }
        let field = |col: usize, name: &str| -> Result<f64, Error> {
            let text = fields.get(col).ok_or_else(|| Error::Csv {
                line: i + 1,
                message: format!("no {name} column in '{line}'"),
            })?;
            text.parse::<f64>().map_err(|_| Error::Csv {
                line: i + 1,
                message: format!("{name} '{text}' is not a number"),
            })
        };
        points.push(Point {
            concurrency: field(columns.0, "concurrency")?,
            throughput: field(columns.1, "throughput")?,
        });
    }
    if points.is_empty() {
        return Err(Error::Csv {
            line: text.lines().count().max(1),
            message: "no measurements: expected lines of concurrency,throughput".into(),
        });
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(data: &[(f64, f64)]) -> Vec<Point> {
        data.iter()
            .map(|&(concurrency, throughput)| Point {
                concurrency,
                throughput,
            })
            .collect()
    }

    #[test]
    fn jacobian_matches_numerical_derivatives() {
        let points = pts(&[(1.0, 10.0), (4.0, 30.0), (16.0, 60.0), (64.0, 50.0)]);
        for free in [
            Free {
                sigma: true,
                kappa: true,
            },
            Free {
                sigma: false,
                kappa: true,
            },
            Free {
                sigma: true,
                kappa: false,
            },
        ] {
            let mut init = vec![];
            if free.sigma {
                init.push(0.05);
            }
            if free.kappa {
                init.push(0.001);
            }
            init.push(11.0);
            let mut problem = Problem {
                points: &points,
                free,
                params: DVector::from_vec(init),
            };
            let analytic = problem.jacobian_matrix();
            // Central differences with a step relative to each parameter.
            let base = problem.params.clone();
            for j in 0..base.len() {
                let h = base[j] * 1e-6;
                let mut plus = base.clone();
                plus[j] += h;
                problem.set_params(&plus);
                let up = problem.residuals().unwrap();
                let mut minus = base.clone();
                minus[j] -= h;
                problem.set_params(&minus);
                let down = problem.residuals().unwrap();
                problem.set_params(&base);
                for i in 0..points.len() {
                    let numeric = (up[i] - down[i]) / (2.0 * h);
                    let a = analytic[(i, j)];
                    assert!(
                        (numeric - a).abs() <= 1e-6 * a.abs().max(1.0),
                        "({i},{j}): {numeric} vs {a}"
                    );
                }
            }
        }
    }

    #[test]
    fn recovers_the_parameters_of_exact_data() {
        let points: Vec<Point> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
            .iter()
            .map(|&n| Point {
                concurrency: n,
                throughput: usl(0.05, 0.0008, 120.0, n),
            })
            .collect();
        let fit = fit(&points).unwrap();
        assert!((fit.usl.sigma - 0.05).abs() < 1e-8);
        assert!((fit.usl.kappa - 0.0008).abs() < 1e-10);
        assert!((fit.usl.lambda - 120.0).abs() < 1e-6);
        assert!(fit.usl.r_squared > 1.0 - 1e-12);
        let peak = (0.95f64 / 0.0008).sqrt();
        assert!((fit.usl.n_peak.unwrap() - peak).abs() < 1e-6);
        // Amdahl cannot bend down: it fits worse.
        assert!(fit.amdahl.r_squared < fit.usl.r_squared);
        assert_eq!(fit.amdahl.kappa, 0.0);
        assert!(fit.amdahl.kappa_stderr.is_none() && fit.amdahl.n_peak.is_none());
    }

    #[test]
    fn data_that_cannot_support_a_fit_is_refused_with_a_reason() {
        let err = |d: &[(f64, f64)]| fit(&pts(d)).unwrap_err().to_string();
        assert!(err(&[(1.0, 1.0), (2.0, 2.0), (4.0, 3.0)]).contains("3 distinct"));
        assert!(err(&[(8.0, 1.0), (16.0, 2.0), (32.0, 3.0), (64.0, 3.5)]).contains("near N = 1"));
        assert!(err(&[(1.0, 100.0), (2.0, 100.5), (4.0, 99.8), (8.0, 100.2)]).contains("flat"));
        assert!(err(&[(0.0, 1.0), (2.0, 2.0), (4.0, 3.0), (8.0, 4.0)]).contains("below 1"));
        assert!(err(&[(1.0, 0.0), (2.0, 2.0), (4.0, 3.0), (8.0, 4.0)]).contains("not positive"));
    }

    #[test]
    fn csv_with_or_without_a_header() {
        let plain = parse_csv("1,65\n18,996\n# comment\n\n36,1652\n").unwrap();
        assert_eq!(plain.len(), 3);
        assert_eq!(
            plain[1],
            Point {
                concurrency: 18.0,
                throughput: 996.0
            }
        );
        let wide = parse_csv("run,throughput,concurrency\na,65,1\nb,996,18\n").unwrap();
        assert_eq!(
            wide[1],
            Point {
                concurrency: 18.0,
                throughput: 996.0
            }
        );
        let bad = parse_csv("concurrency,throughput\n1,65\n2,x\n").unwrap_err();
        assert_eq!(bad.to_string(), "line 3: throughput 'x' is not a number");
        assert!(parse_csv("n,x\n1,2\n")
            .unwrap_err()
            .to_string()
            .contains("header"));
        assert!(parse_csv("# nothing\n").is_err());
    }
}
