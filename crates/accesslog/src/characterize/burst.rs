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
    /// Where the IDC curve is highest: a curve that climbs and falls back has a time scale
    /// of its bursts, which its two ends do not show.
    pub idc_peak: Option<IdcPeak>,
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

/// The highest point of the IDC curve, and the windows near it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct IdcPeak {
    /// The highest IDC.
    pub value: f64,
    /// The window it was reached at, seconds.
    pub window_s: u64,
    /// The run of windows around it whose IDC is within [`NEAR_PEAK`] of it, seconds (the
    /// peak's own window when its neighbours fall further).
    pub near_from_s: u64,
    /// Its end.
    pub near_to_s: u64,
    /// Whether the peak is the longest window measured: the curve may still be climbing.
    pub at_longest: bool,
}

/// Share of the peak a window's IDC must reach to count as near it.
pub const NEAR_PEAK: f64 = 0.9;

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
        idc_peak: idc_peak(&idc),
        idc,
        aggregated_variance,
        hurst,
    }
}

/// The highest point of `idc` (windows ascending) and the run of windows near it.
fn idc_peak(idc: &[WindowFigure]) -> Option<IdcPeak> {
    let (top, peak) = idc
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.value.total_cmp(&b.1.value))?;
    let near = |w: &&WindowFigure| w.value >= NEAR_PEAK * peak.value;
    let before = idc[..top].iter().rev().take_while(near).count();
    let after = idc[top + 1..].iter().take_while(near).count();
    Some(IdcPeak {
        value: peak.value,
        window_s: peak.window_s,
        near_from_s: idc[top - before].window_s,
        near_to_s: idc[top + after].window_s,
        at_longest: top + 1 == idc.len(),
    })
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
    fn the_idc_peak_lies_at_the_time_scale_of_the_bursts() {
        // 5 minutes at 20 req/s, 5 minutes idle, over 8 hours: windows shorter than the
        // period see ever more of an on or off stretch (the IDC climbs); a window of a whole
        // period always holds one on stretch (it falls back). So the peak is inside the
        // curve, between a quarter and three quarters of the 600 s period.
        let mut counts = Vec::new();
        let mut rng = Rng::new(5);
        while counts.len() < 8 * 3600 {
            counts.extend(poisson(20.0, 300, rng.next_u64()));
            counts.extend(vec![0; 300]);
        }
        let b = burstiness(&counts, 1);
        let peak = b.idc_peak.unwrap();
        assert!(
            (150..=450).contains(&peak.window_s) && !peak.at_longest,
            "{peak:?}"
        );
        let (first, last) = (b.idc[0].value, b.idc.last().unwrap().value);
        assert!(
            peak.value > 2.0 * first.max(last),
            "{peak:?} {first} {last}"
        );
        assert!(peak.near_from_s <= peak.window_s && peak.window_s <= peak.near_to_s);
        // Every window in the near run is within 10 % of the peak, and the ones just
        // outside it are not.
        for w in &b.idc {
            let inside = (peak.near_from_s..=peak.near_to_s).contains(&w.window_s);
            assert_eq!(inside, w.value >= NEAR_PEAK * peak.value, "{w:?} {peak:?}");
        }
        // A Poisson log's curve is flat: its peak is near 1.
        let flat = burstiness(&poisson(20.0, 4000, 3), 1).idc_peak.unwrap();
        assert!(flat.value < 1.5, "{flat:?}");
        assert_eq!(burstiness(&[], 1).idc_peak, None);
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
