//! What a sweep says as a whole, for the pages that draw one: where throughput saturates and
//! what bounds it there, the USL's fit, a straight line, a median. Not for one run's figures
//! (a point's) nor for drawing (the pages, and the paper's panel that quotes the knee).

use super::point::{valid, Point};

/// Least-squares line y = a + b x; None with fewer than two distinct x.
pub fn line_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

/// The median of the finite values (the mean of the middle two for an even count); None
/// when there is none.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Where throughput stops growing, and what limits it.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturation {
    /// The smallest load at which throughput reached 90 % of its maximum.
    pub knee: f64,
    /// The highest throughput measured.
    pub max_rps: f64,
    /// One sentence for the reader.
    pub reading: String,
}

/// Finds the knee of a throughput sweep (points in increasing x), over its valid runs only,
/// and says what bounds throughput there (the knee run's verdict, with its figure).
pub fn saturation(points: &[Point]) -> Option<Saturation> {
    let points = valid(points);
    let max_rps = points.iter().map(|p| p.rps).fold(0.0, f64::max);
    if points.len() < 2 || max_rps <= 0.0 {
        return None;
    }
    let knee_point = points.iter().find(|p| p.rps >= 0.9 * max_rps)?;
    let last = points.last()?;
    let knee = knee_point.x;
    let flat = knee < last.x;
    let limit = &knee_point.verdict.reading;
    let peak = points
        .iter()
        .max_by(|a, b| a.rps.total_cmp(&b.rps))
        .map_or(knee_point, |p| p);
    let reading = if last.rps < 0.8 * max_rps && last.x > peak.x {
        format!(
            "Throughput peaks at {:.0} requests/s with {} clients and falls to {:.0} at {} clients ({:.0} % lower): more load makes the system slower, not just busier; at the peak, {limit}.",
            max_rps,
            peak.x,
            last.rps,
            last.x,
            100.0 * (1.0 - last.rps / max_rps)
        )
    } else if flat {
        format!(
            "Throughput flattens at {:.0} requests/s from {} clients on: {limit}.",
            max_rps, knee
        )
    } else {
        format!(
            "Throughput still grows at the largest load ({} clients, {:.0} requests/s): no saturation reached; there, {}.",
            last.x, last.rps, last.verdict.reading
        )
    };
    Some(Saturation {
        knee,
        max_rps,
        reading,
    })
}

/// The USL fit of a sweep (goodput vs clients, valid runs only), or why there is none.
pub fn usl_fit(points: &[Point]) -> Result<webscope_model::usl::Fit, String> {
    let data: Vec<webscope_model::usl::Point> = points
        .iter()
        .filter(|p| p.valid() && p.rps > 0.0)
        .map(|p| webscope_model::usl::Point {
            concurrency: p.x,
            throughput: p.rps,
        })
        .collect();
    webscope_model::usl::fit(&data)
        .map(|s| s.usl)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::point::test_sweep;

    #[test]
    fn the_knee_is_where_throughput_reaches_nine_tenths_of_its_peak() {
        let pts: Vec<Point> = test_sweep(
            &[
                (1.0, 1000.0),
                (2.0, 1900.0),
                (5.0, 4200.0),
                (10.0, 4500.0),
                (20.0, 4550.0),
            ],
            0.3,
            Some(0.97),
        );
        let s = saturation(&pts).unwrap();
        assert_eq!(s.knee, 5.0);
        assert!(
            s.reading.contains("from 5 clients")
                && s.reading.contains("server's processes are CPU-bound: 0.97"),
            "{}",
            s.reading
        );
    }

    #[test]
    fn a_fall_after_the_peak_is_said() {
        let pts: Vec<Point> = test_sweep(
            &[(1.0, 1000.0), (2.0, 3000.0), (5.0, 1200.0)],
            0.3,
            Some(0.5),
        );
        let s = saturation(&pts).unwrap();
        assert!(
            s.reading.contains("peaks at 3000") && s.reading.contains("60 % lower"),
            "{}",
            s.reading
        );
    }

    #[test]
    fn growth_to_the_end_is_no_saturation_and_a_busy_generator_is_named() {
        let growing = [(1.0, 100.0), (2.0, 200.0), (4.0, 400.0)];
        let gen_bound = [(1.0, 100.0), (2.0, 190.0), (4.0, 195.0)];
        let cases = [
            (growing, 0.2, 0.2, "no saturation"),
            (gen_bound, 0.99, 0.5, "load generator"),
        ];
        for (runs, gen, cores, says) in cases {
            let s = saturation(&test_sweep(&runs, gen, Some(cores))).unwrap();
            assert!(s.reading.contains(says), "{}", s.reading);
        }
        let gen_bound = test_sweep(&gen_bound, 0.99, Some(0.5));
        assert!(saturation(&gen_bound[..1]).is_none());
    }
}
