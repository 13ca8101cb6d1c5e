//! What a sweep says as a whole, for the pages that draw one: where throughput saturates and
//! what bounds it there, the USL's fit, a straight line. Every sentence a page
//! writes about the sweep's shape or its cause starts here, from the runs' verdicts, so that
//! the headline, the knee, the fit and the paper's panel cannot disagree. Not for one run's
//! figures (a point's) nor for drawing (the pages, and the paper's panel that quotes the
//! knee).

use super::point::{valid, Point};
use webscope_bottleneck::{Bound, MORE_CLIENTS};
use webscope_report::human::{plural, sig3};

/// A number of clients with its noun: `1 client`, `64 clients`.
fn clients(x: f64) -> String {
    if x.fract() == 0.0 && x >= 0.0 {
        plural(x as u64, "client")
    } else {
        format!("{} clients", sig3(x))
    }
}

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

/// Throughput from a sweep's peak to its largest load falls from this share of the peak
/// down: a smaller dip is run-to-run noise on a small VM, not a fall.
pub const FALL: f64 = 0.9;

/// What throughput does towards the sweep's largest load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The largest load has the most throughput, and no earlier run came near it.
    Grows,
    /// Throughput stays within [`FALL`] of its peak past the knee.
    Flat,
    /// The largest load has less than [`FALL`] of the peak.
    Falls,
}

/// Where throughput stops growing, and what limits it.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturation {
    /// The smallest load at which throughput reached 90 % of its maximum.
    pub knee: f64,
    /// The highest throughput measured.
    pub max_rps: f64,
    /// What throughput does towards the largest load.
    pub shape: Shape,
    /// What bounds the largest load (its run's verdict).
    pub last_bound: Bound,
    /// One sentence for the reader.
    pub reading: String,
}

/// Whether every valid run is bound by the server or by the clients' round trips: only then
/// does a model of the server's scalability (the USL, MVA's demands) describe the server.
/// Otherwise the bounds that are not the server's, with the client counts they hold at
/// ("ports/TIME_WAIT at 10, 20").
pub fn not_the_server(points: &[Point]) -> Option<String> {
    let mut bounds: Vec<(Bound, Vec<String>)> = Vec::new();
    for p in points.iter().filter(|p| p.valid()) {
        let b = p.verdict.bound;
        if matches!(b, Bound::ServerCpu | Bound::Latency) {
            continue;
        }
        match bounds.iter_mut().find(|(o, _)| *o == b) {
            Some((_, xs)) => xs.push(format!("{}", p.x)),
            None => bounds.push((b, vec![format!("{}", p.x)])),
        }
    }
    (!bounds.is_empty()).then(|| {
        bounds
            .iter()
            .map(|(b, xs)| format!("{} at {}", b.label(), xs.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    })
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
    let peak = points
        .iter()
        .max_by(|a, b| a.rps.total_cmp(&b.rps))
        .map_or(knee_point, |p| p);
    let shape = if last.rps < FALL * max_rps && last.x > peak.x {
        Shape::Falls
    } else if knee < last.x {
        Shape::Flat
    } else {
        Shape::Grows
    };
    let reading = match shape {
        Shape::Falls => format!(
            "Throughput peaks at {} requests/s with {} and falls to {} at {} ({} % lower). At the peak, {}; at {}, {}.",
            sig3(max_rps),
            clients(peak.x),
            sig3(last.rps),
            clients(last.x),
            sig3(100.0 * (1.0 - last.rps / max_rps)),
            // More clients lowered it: the peak run's "more clients would raise it" is moot.
            peak.verdict.reading.replace(MORE_CLIENTS, ""),
            clients(last.x),
            last.verdict.reading.replace(MORE_CLIENTS, "")
        ),
        Shape::Flat => format!(
            "Throughput flattens at {} requests/s from {} on: {}.",
            sig3(max_rps),
            clients(knee),
            knee_point.verdict.reading.replace(MORE_CLIENTS, "")
        ),
        // Growth to the end is "no saturation" only when nothing is at its limit there.
        Shape::Grows if last.verdict.bound == Bound::Latency => format!(
            "Throughput still grows at the largest load ({}, {} requests/s): no saturation reached; there, {}.",
            clients(last.x), sig3(last.rps), last.verdict.reading
        ),
        Shape::Grows => format!(
            "Throughput still grows at the largest load ({}, {} requests/s), where {}.",
            clients(last.x), sig3(last.rps), last.verdict.reading
        ),
    };
    Some(Saturation {
        knee,
        max_rps,
        shape,
        last_bound: last.verdict.bound,
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
    fn one_client_is_one_client() {
        // Issue #35: "from 1 clients on".
        let pts = test_sweep(
            &[(1.0, 1000.0), (2.0, 1010.0), (4.0, 1005.0)],
            0.3,
            Some(0.97),
        );
        let s = saturation(&pts).unwrap();
        assert!(s.reading.contains("from 1 client on"), "{}", s.reading);
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
            s.reading
                .contains("peaks at 3 000 requests/s with 2 clients")
                && s.reading.contains("falls to 1 200 at 5 clients")
                && !s.reading.contains("more clients would raise it")
                && s.reading.contains("(60 % lower)")
                && !s.reading.contains("slower, not just busier"),
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
        let grows = saturation(&test_sweep(&growing, 0.2, Some(0.2))).unwrap();
        assert!(
            grows
                .reading
                .contains("largest load (4 clients, 400 requests/s)"),
            "{}",
            grows.reading
        );
        let gen_bound = test_sweep(&gen_bound, 0.99, Some(0.5));
        assert!(saturation(&gen_bound[..1]).is_none());
    }
}
