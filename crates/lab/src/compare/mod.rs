//! `webscope compare`: did the candidate get slower than the baseline? Per metric (goodput,
//! responses per second, error share, p50/p90/p99/p99.9, server CPU per request) the change
//! and whether it is significant: an exact rank test over repeated runs, or a bootstrap over
//! intervals for single runs; the latency distributions compared as wholes
//! (Kolmogorov-Smirnov); thresholds (`p99<+5%,rps>-3%`) that fail the command when a
//! significant change crosses them, for CI.
//!
//! Inputs are what webscope writes: a lab run directory (`run.json`, `load.hlog`), a lab
//! report (its clients sweep, point by point: the runs of a point are its repeats), or a
//! `webscope load --json` file (with the `.hlog` of the same name beside it, if any).

pub mod html;
pub mod input;
pub mod stats;
pub mod table;

use serde::Serialize;

use input::Run;

/// The figures compared, with how to read them off a run.
pub const METRICS: [&str; 8] = [
    "goodput",
    "rps",
    "error_pct",
    "p50",
    "p90",
    "p99",
    "p999",
    "cpu_us",
];

/// One metric of one run.
pub fn metric(run: &Run, name: &str) -> Option<f64> {
    let l = &run.load;
    let num = |path: &[&str]| {
        let mut v = l;
        for k in path {
            v = &v[*k];
        }
        v.as_f64()
    };
    match name {
        "goodput" => Some(run.health.goodput_rps),
        "rps" => Some(run.health.responses_rps),
        "error_pct" => Some(100.0 * run.health.error_share),
        "p50" => num(&["latency_us", "p50"]),
        "p90" => num(&["latency_us", "p90"]),
        "p99" => num(&["latency_us", "p99"]),
        "p999" => num(&["latency_us", "p999"]),
        "cpu_us" => run.cpu_us_per_request,
        _ => None,
    }
}

/// Which way is worse for a metric: lower goodput is, higher latency is.
fn higher_is_better(name: &str) -> bool {
    matches!(name, "goodput" | "rps")
}

/// One metric compared.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The metric.
    pub metric: String,
    /// Baseline (median of its runs).
    pub baseline: f64,
    /// Candidate (median of its runs).
    pub candidate: f64,
    /// candidate / baseline − 1, per cent.
    pub change_pct: f64,
    /// How significance was judged.
    pub test: String,
    /// The rank test's p-value, when it ran.
    pub p: Option<f64>,
    /// The bootstrap's 95 % interval of the change, per cent, when it ran.
    pub ci_pct: Option<(f64, f64)>,
    /// Whether the change is beyond the noise.
    pub significant: bool,
    /// Whether the change is for the worse.
    pub worse: bool,
}

/// The two latency distributions as wholes.
#[derive(Debug, Clone, Serialize)]
pub struct Distributions {
    /// Largest gap between the cumulative distributions.
    pub ks_d: f64,
    /// Its asymptotic p-value.
    pub ks_p: f64,
}

/// A whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// What was compared (the point, for lab reports).
    pub scope: String,
    /// Runs on each side.
    pub runs: (usize, usize),
    /// Per metric.
    pub rows: Vec<Row>,
    /// The distributions, when both sides have interval logs.
    pub distributions: Option<Distributions>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Bootstrap rounds for single runs: enough for the 2.5th and 97.5th percentiles of a change
/// to settle to a tenth of a per cent on the tests' data.
const ROUNDS: usize = 400;
/// Below this p-value (rank test) a change is significant.
const ALPHA: f64 = 0.05;

/// Compares `base` with `cand` (each a set of repeated runs of one configuration).
pub fn compare(scope: &str, base: &[Run], cand: &[Run]) -> Comparison {
    let mut rows = Vec::new();
    for name in METRICS {
        let a: Vec<f64> = base.iter().filter_map(|r| metric(r, name)).collect();
        let b: Vec<f64> = cand.iter().filter_map(|r| metric(r, name)).collect();
        let (Some(ma), Some(mb)) = (median(a.clone()), median(b.clone())) else {
            continue;
        };
        let change_pct = if ma != 0.0 {
            100.0 * (mb / ma - 1.0)
        } else {
            0.0
        };
        let (test, p, ci_pct, significant) = if a.len() >= 2 && b.len() >= 2 {
            let p = stats::mann_whitney(&b, &a);
            (
                format!("rank test, {} and {} runs", a.len(), b.len()),
                p,
                None,
                p.is_some_and(|p| p < ALPHA),
            )
        } else {
            match interval_ci(name, base, cand) {
                Some(ci) => (
                    "bootstrap over intervals".to_string(),
                    None,
                    Some(ci),
                    ci.0 > 0.0 || ci.1 < 0.0,
                ),
                None => (
                    "none (a single run without interval log)".to_string(),
                    None,
                    None,
                    false,
                ),
            }
        };
        let worse = if higher_is_better(name) {
            change_pct < 0.0
        } else {
            change_pct > 0.0
        };
        rows.push(Row {
            metric: name.to_string(),
            baseline: ma,
            candidate: mb,
            change_pct,
            test,
            p,
            ci_pct,
            significant,
            worse,
        });
    }
    let merged = |runs: &[Run]| {
        let mut total: Option<hdrhistogram::Histogram<u64>> = None;
        for r in runs {
            for i in r.intervals.iter() {
                match total.as_mut() {
                    Some(t) => {
                        let _ = t.add(&i.histogram);
                    }
                    None => total = Some(i.histogram.clone()),
                }
            }
        }
        total
    };
    let distributions = match (merged(base), merged(cand)) {
        (Some(a), Some(b)) => stats::ks(&a, &b).map(|(ks_d, ks_p)| Distributions { ks_d, ks_p }),
        _ => None,
    };
    Comparison {
        scope: scope.to_string(),
        runs: (base.len(), cand.len()),
        rows,
        distributions,
    }
}

/// The bootstrap interval of a metric's change (per cent) from the runs' interval logs: the
/// intervals of each side resampled, the metric read off the merged histogram (latency) or
/// the counts over the time (throughput). None where it cannot be read from intervals.
fn interval_ci(name: &str, base: &[Run], cand: &[Run]) -> Option<(f64, f64)> {
    // Without errors every response is good: goodput is the responses' rate.
    let error_free = base.iter().chain(cand).all(|r| r.health.error_share == 0.0);
    let quantile = match name {
        "p50" => Some(0.50),
        "p90" => Some(0.90),
        "p99" => Some(0.99),
        "p999" => Some(0.999),
        "rps" => None,
        "goodput" if error_free => None,
        _ => return None,
    };
    fn all(runs: &[Run]) -> Vec<&webscope_load::LoggedInterval> {
        runs.iter().flat_map(|r| r.intervals.iter()).collect()
    }
    let (a, b) = (all(base), all(cand));
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let value = |items: &[&&webscope_load::LoggedInterval]| -> Option<f64> {
        match quantile {
            Some(q) => {
                let mut h = items.first()?.histogram.clone();
                for i in &items[1..] {
                    let _ = h.add(&i.histogram);
                }
                (!h.is_empty()).then(|| h.value_at_quantile(q) as f64)
            }
            None => {
                let n: u64 = items.iter().map(|i| i.histogram.len()).sum();
                let t: f64 = items.iter().map(|i| i.length_s).sum();
                (t > 0.0).then(|| n as f64 / t)
            }
        }
    };
    stats::bootstrap(&a, &b, ROUNDS, |x, y| {
        let (va, vb) = (value(x)?, value(y)?);
        (va > 0.0).then(|| 100.0 * (vb / va - 1.0))
    })
}

/// A threshold: `p99<+5%` (the change must stay below +5 %), `rps>-3%`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The metric.
    pub metric: String,
    /// `<` or `>`.
    pub below: bool,
    /// The limit, per cent.
    pub limit_pct: f64,
}

impl Threshold {
    /// Parses `p99<+5%,rps>-3%`.
    pub fn parse_list(text: &str) -> Result<Vec<Threshold>, String> {
        text.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| {
                let (metric, rest, below) = match (t.split_once('<'), t.split_once('>')) {
                    (Some((m, r)), None) => (m, r, true),
                    (None, Some((m, r))) => (m, r, false),
                    _ => return Err(format!("--threshold {t:?}: write METRIC<CHANGE% or METRIC>CHANGE% (e.g. p99<+5%,rps>-3%)")),
                };
                let metric = metric.trim().to_string();
                if !METRICS.contains(&metric.as_str()) {
                    return Err(format!(
                        "--threshold {t:?}: unknown metric {metric:?} (known: {})",
                        METRICS.join(", ")
                    ));
                }
                let limit_pct = rest
                    .trim()
                    .trim_end_matches('%')
                    .parse::<f64>()
                    .map_err(|_| format!("--threshold {t:?}: {rest:?} is not a change in per cent (e.g. +5%)"))?;
                Ok(Threshold {
                    metric,
                    below,
                    limit_pct,
                })
            })
            .collect()
    }

    /// Whether `row` crosses it: a significant change past the limit.
    pub fn crossed(&self, row: &Row) -> bool {
        let past = if self.below {
            row.change_pct >= self.limit_pct
        } else {
            row.change_pct <= self.limit_pct
        };
        past && row.significant
    }

    /// One line: the threshold, the change, and the verdict.
    pub fn verdict(&self, row: &Row) -> String {
        let how = match (row.p, row.ci_pct) {
            (Some(p), _) => format!("{}, p = {p:.3}", row.test),
            (None, Some((lo, hi))) => format!("{}, 95 % interval {lo:+.1} .. {hi:+.1} %", row.test),
            _ => row.test.clone(),
        };
        format!(
            "{}{}{:+}%: {:+.1} % ({how}): {}",
            self.metric,
            if self.below { "<" } else { ">" },
            self.limit_pct,
            row.change_pct,
            if self.crossed(row) {
                "CROSSED"
            } else if row.significant {
                "within"
            } else {
                "within (no significant change)"
            }
        )
    }
}

#[cfg(test)]
mod tests;
