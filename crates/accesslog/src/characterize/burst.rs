//! How bursty the arrivals are: the inter-arrival CV, the index of dispersion of counts over
//! growing windows, and the Hurst parameter by the aggregated-variance method.
//!
//! A Common Log Format time has one-second resolution, so every figure here starts from the
//! count of requests in each second. Within a second, instants are drawn uniformly (seeded,
//! so the result is reproducible): given its count, that is exactly how a Poisson process
//! places its arrivals, so a Poisson log gives CV ≈ 1 and any departure from 1 is structure
//! at scales of a second and more, not an artefact of the resolution.

use webscope_workload::Rng;

use super::points::log_spaced;

/// The burstiness figures.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Burstiness {
    /// Coefficient of variation of the inter-arrival times (1 for Poisson).
    pub interarrival_cv: Option<f64>,
    /// Mean inter-arrival time, seconds.
    pub mean_interarrival_s: Option<f64>,
    /// Index of dispersion of counts, Var/mean of the count in windows of growing length
    /// (1 at every length for Poisson; growing with the length for self-similar traffic).
    pub idc: Vec<WindowFigure>,
    /// Variance of the rate (requests per bin) averaged over windows of growing length, for
    /// the aggregated-variance plot (slope -1 for Poisson, 2H - 2 in general).
    pub aggregated_variance: Vec<WindowFigure>,
    /// Hurst parameter from the slope of that plot (0.5 Poisson, → 1 strongly self-similar);
    /// `None` when the log spans too few seconds.
    pub hurst: Option<f64>,
}

/// A figure at one window length.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct WindowFigure {
    /// Window length, seconds.
    pub window_s: u64,
    /// The figure.
    pub value: f64,
}

/// Fewest windows a variance is taken over: fewer and the estimate is noise.
const MIN_WINDOWS: usize = 30;
/// Fewest seconds for a Hurst estimate (at least four aggregation levels of 30 windows).
const MIN_SECONDS_FOR_HURST: usize = 240;
/// Seed of the within-second draws.
const SEED: u64 = 0x5eed_1e55;

/// The figures of a series of counts per `bin_s` seconds (1 but for logs of many weeks).
pub fn burstiness(per_second: &[u64], bin_s: u64) -> Burstiness {
    let (cv, mean) = interarrival(per_second);
    let mean = mean.map(|m| m * bin_s as f64);
    let levels = log_spaced(1, per_second.len() / MIN_WINDOWS, 24);
    let mut idc = Vec::new();
    let mut aggregated_variance = Vec::new();
    for &m in &levels {
        let sums: Vec<f64> = per_second
            .chunks_exact(m)
            .map(|c| c.iter().sum::<u64>() as f64)
            .collect();
        let (mean, var) = mean_var(&sums);
        if mean > 0.0 {
            idc.push(WindowFigure {
                window_s: (m as u64) * bin_s,
                value: var / mean,
            });
        }
        let m_f = m as f64;
        aggregated_variance.push(WindowFigure {
            window_s: (m as u64) * bin_s,
            value: var / (m_f * m_f),
        });
    }
    let hurst = (per_second.len() >= MIN_SECONDS_FOR_HURST)
        .then(|| hurst(&aggregated_variance))
        .flatten();
    Burstiness {
        interarrival_cv: cv,
        mean_interarrival_s: mean,
        idc,
        aggregated_variance,
        hurst,
    }
}

/// H = 1 + slope/2, the slope of log Var(X^(m)) against log m by least squares (the
/// aggregated-variance method of Beran 1994 / Leland et al. 1994).
fn hurst(points: &[WindowFigure]) -> Option<f64> {
    let xy: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.value > 0.0)
        .map(|p| ((p.window_s as f64).ln(), p.value.ln()))
        .collect();
    if xy.len() < 4 {
        return None;
    }
    let n = xy.len() as f64;
    let (mx, my) = (
        xy.iter().map(|p| p.0).sum::<f64>() / n,
        xy.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = xy.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (sxx > 0.0).then(|| 1.0 + sxy / sxx / 2.0)
}

/// CV and mean of the inter-arrival times, instants drawn uniformly within each second.
fn interarrival(per_second: &[u64]) -> (Option<f64>, Option<f64>) {
    let mut rng = Rng::new(SEED);
    let mut previous: Option<f64> = None;
    let (mut n, mut sum, mut sum_sq) = (0u64, 0.0, 0.0);
    let mut within = Vec::new();
    for (second, &count) in per_second.iter().enumerate() {
        within.clear();
        within.extend((0..count).map(|_| second as f64 + rng.next_f64()));
        within.sort_by(f64::total_cmp);
        for &t in &within {
            if let Some(p) = previous {
                let gap = t - p;
                n += 1;
                sum += gap;
                sum_sq += gap * gap;
            }
            previous = Some(t);
        }
    }
    if n < 2 {
        return (None, None);
    }
    let mean = sum / n as f64;
    let var = (sum_sq / n as f64 - mean * mean).max(0.0);
    ((mean > 0.0).then(|| var.sqrt() / mean), Some(mean))
}

/// Mean and (population) variance.
pub fn mean_var(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, var)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per-second counts of a Poisson process of `rate` per second over `seconds`.
    fn poisson(rate: f64, seconds: usize, seed: u64) -> Vec<u64> {
        let mut rng = Rng::new(seed);
        let mut counts = vec![0u64; seconds];
        let mut t = 0.0;
        loop {
            t += rng.exponential() / rate;
            if t >= seconds as f64 {
                return counts;
            }
            counts[t as usize] += 1;
        }
    }

    #[test]
    fn poisson_arrivals_give_h_half_idc_one_cv_one() {
        let b = burstiness(&poisson(20.0, 4000, 3), 1);
        let h = b.hurst.unwrap();
        assert!((h - 0.5).abs() < 0.1, "H = {h}");
        // Windows with at least 100 of them: the variance is known to ±~15 %.
        for w in b.idc.iter().filter(|w| w.window_s <= 40) {
            assert!((w.value - 1.0).abs() < 0.25, "{w:?}");
        }
        let cv = b.interarrival_cv.unwrap();
        assert!((cv - 1.0).abs() < 0.05, "CV = {cv}");
        assert!((b.mean_interarrival_s.unwrap() - 0.05).abs() < 0.005);
    }

    #[test]
    fn heavy_tailed_on_off_traffic_is_seen_as_self_similar() {
        // Rates switching between 2 and 40 per second, each period Pareto(α = 1.2) long:
        // the superposition theory gives H = (3 - α)/2 = 0.9.
        let mut rng = Rng::new(9);
        let mut counts = Vec::new();
        let mut high = false;
        while counts.len() < 20_000 {
            let len = (5.0 * rng.next_open_f64().powf(-1.0 / 1.2)) as usize;
            let rate = if high { 40.0 } else { 2.0 };
            let seg = poisson(rate, len.max(1), rng.next_u64());
            counts.extend(seg);
            high = !high;
        }
        let b = burstiness(&counts, 1);
        assert!(b.hurst.unwrap() > 0.7, "H = {:?}", b.hurst);
        assert!(b.idc.last().unwrap().value > 10.0, "{:?}", b.idc.last());
    }

    #[test]
    fn a_short_log_has_no_hurst() {
        let b = burstiness(&[3, 1, 2], 1);
        assert_eq!(b.hurst, None);
        assert!(b.interarrival_cv.is_some());
        assert_eq!(burstiness(&[1], 1).interarrival_cv, None);
        // Ten-second bins: windows and times in seconds.
        let b = burstiness(&[20; 300], 10);
        assert_eq!(b.idc[0].window_s, 10);
        assert!((b.mean_interarrival_s.unwrap() - 0.5).abs() < 0.01);
    }
}
