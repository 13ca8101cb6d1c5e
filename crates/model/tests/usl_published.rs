//! The USL fit against the published fits of the data sets that ship with R's `usl`
//! package (Moeding) and Go's `codahale/usl`, to 1e-3 relative.

use webscope_model::usl::{self, Point};

fn points(data: &[(f64, f64)]) -> Vec<Point> {
    data.iter()
        .map(|&(concurrency, throughput)| Point {
            concurrency,
            throughput,
        })
        .collect()
}

#[track_caller]
fn rel(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        ((actual - expected) / expected).abs() <= tolerance,
        "computed {actual}, published {expected}"
    );
}

/// R usl's `specsdm91`: SPEC SDM 91 on a Sun SPARCcenter 2000 (load, throughput). The
/// package's tests print σ = 2.773e-2 ± 9.122e-3, κ = 1.044e-4 ± 1.988e-5,
/// γ (our λ) = 90.00 ± 14.21, residual standard error 82.85 on 4 degrees of freedom, peak
/// at 96.51956 with throughput 1884; its README prints R² = 0.9896.
#[test]
fn r_usl_specsdm91() {
    let data = points(&[
        (1.0, 64.9),
        (18.0, 995.9),
        (36.0, 1652.4),
        (72.0, 1853.2),
        (108.0, 1828.9),
        (144.0, 1775.0),
        (216.0, 1702.2),
    ]);
    let fit = usl::fit(&data).unwrap().usl;
    rel(fit.sigma, 2.773e-2, 1e-3);
    rel(fit.kappa, 1.044e-4, 1e-3);
    rel(fit.lambda, 90.00, 1e-3);
    rel(fit.sigma_stderr.unwrap(), 9.122e-3, 1e-3);
    rel(fit.kappa_stderr.unwrap(), 1.988e-5, 1e-3);
    rel(fit.lambda_stderr.unwrap(), 14.21, 1e-3);
    rel(fit.residual_std_error, 82.85, 1e-3);
    rel(fit.n_peak.unwrap(), 96.51956, 1e-4);
    rel(fit.x_peak.unwrap(), 1884.0, 1e-3);
    rel(fit.r_squared, 0.9896, 1e-4);
    // The fitted values R prints: 90 1078 1541 1850 1879 1822 1646.
    for (n, x) in [(1.0, 90.0), (18.0, 1078.0), (72.0, 1850.0), (216.0, 1646.0)] {
        rel(fit.throughput_at(n), x, 1e-3);
    }
}

/// R usl's test `coef.R`: data made from σ = κ = 0.02, λ = 1 and rounded to 4 digits.
#[test]
fn r_usl_synthetic() {
    let data = points(&[
        (1.0, 1.0),
        (2.0, 1.8868),
        (4.0, 3.0769),
        (6.0, 3.5294),
        (8.0, 3.5398),
        (10.0, 3.3557),
    ]);
    let fit = usl::fit(&data).unwrap().usl;
    rel(fit.sigma, 0.02, 1e-3);
    rel(fit.kappa, 0.02, 1e-3);
    rel(fit.lambda, 1.0, 1e-3);
}

/// R usl's `raytracer` (Gunther, Guerrilla Capacity Planning), first six rows as in the
/// package's `confint.R` test: σ = 0.02444, κ = 0.00163, γ = 20.85605, and "95 %"
/// intervals, which that package computes as estimate ± se · qt(0.95, n − 1): the standard
/// errors follow from them.
#[test]
fn r_usl_raytracer_six_rows() {
    let data = points(&[
        (1.0, 20.0),
        (4.0, 78.0),
        (8.0, 130.0),
        (12.0, 170.0),
        (16.0, 190.0),
        (20.0, 200.0),
    ]);
    let fit = usl::fit(&data).unwrap().usl;
    rel(fit.sigma, 0.02444, 1e-3);
    rel(fit.kappa, 0.00163, 2e-3);
    rel(fit.lambda, 20.85605, 1e-3);
    let t = 2.015048372669157; // qt(0.95, 5), as R usl's confint() uses
    rel(
        fit.sigma_stderr.unwrap(),
        (0.04135 - 0.00754) / (2.0 * t),
        1e-3,
    );
    rel(
        fit.kappa_stderr.unwrap(),
        (0.00215 - 0.00110) / (2.0 * t),
        5e-3,
    );
    rel(
        fit.lambda_stderr.unwrap(),
        (22.44492 - 19.26717) / (2.0 * t),
        1e-3,
    );
}

/// codahale/usl's README example (the SPEC SDM 91 figures rounded to integers):
/// σ = 0.0277299, κ = 0.000104343, λ = 89.9878.
#[test]
fn codahale_usl_example_csv() {
    let data =
        usl::parse_csv("1,65\n18,996\n36,1652\n72,1853\n108,1829\n144,1775\n216,1702\n").unwrap();
    let fit = usl::fit(&data).unwrap().usl;
    rel(fit.sigma, 0.0277299, 1e-3);
    rel(fit.kappa, 0.000104343, 1e-3);
    rel(fit.lambda, 89.9878, 1e-3);
}

/// codahale/usl's model test data (from Baron Schwartz's book): 32 measurements,
/// σ = 0.02671591, κ = 7.690945e-4, λ = 995.6486.
#[test]
fn codahale_usl_model_test() {
    let x = [
        955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08, 7219.8, 7867.61,
        8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24, 10097.6, 10240.5, 10532.39, 10798.52,
        11151.43, 11518.63, 11806.0, 12089.37, 12075.41, 12177.29, 12211.41, 12158.93, 12155.27,
        12118.04, 12140.4, 12074.39,
    ];
    let data: Vec<Point> = x
        .iter()
        .enumerate()
        .map(|(i, &t)| Point {
            concurrency: (i + 1) as f64,
            throughput: t,
        })
        .collect();
    let fit = usl::fit(&data).unwrap().usl;
    rel(fit.sigma, 0.02671591, 1e-3);
    rel(fit.kappa, 7.690945e-4, 1e-3);
    rel(fit.lambda, 995.6486, 1e-3);
    // codahale floors the peak to 35; ours is the real √((1−σ)/κ).
    assert_eq!(fit.n_peak.unwrap().floor(), 35.0);
    rel(fit.x_peak.unwrap(), 12341.745, 1e-3);
}

/// R usl's full `raytracer`: the unconstrained optimum has κ < 0 (throughput still rising
/// at 64 CPUs), so the bounded fit holds κ at 0 and equals the Amdahl fit.
#[test]
fn bounded_fit_holds_kappa_at_zero_when_the_data_ask_for_less() {
    let data = points(&[
        (1.0, 20.0),
        (4.0, 78.0),
        (8.0, 130.0),
        (12.0, 170.0),
        (16.0, 190.0),
        (20.0, 200.0),
        (24.0, 210.0),
        (28.0, 230.0),
        (32.0, 260.0),
        (48.0, 280.0),
        (64.0, 310.0),
    ]);
    let both = usl::fit(&data).unwrap();
    assert_eq!(both.usl.kappa, 0.0);
    assert!(both.usl.kappa_stderr.is_none() && both.usl.n_peak.is_none());
    rel(both.usl.sigma, both.amdahl.sigma, 1e-9);
    rel(both.usl.lambda, both.amdahl.lambda, 1e-9);
    assert!(both.usl.sigma > 0.0 && both.usl.x_limit.is_some());
}
