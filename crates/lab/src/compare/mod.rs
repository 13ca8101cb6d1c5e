//! `webscope compare`: did the candidate get slower than the baseline? Per metric (goodput,
//! responses per second, error share, p50/p90/p99/p99.9, server CPU per request) the change
//! and whether it is significant: an exact rank test over repeated runs; or, where the data
//! cannot support a test (one run a side, too few runs, too few requests beyond a
//! percentile), that it cannot be decided. A single run's intervals are no substitute for
//! repeats: runs of one server differ by more than one run's intervals do (a rank test over
//! intervals flagged 8 to 11 of 20 pairs of runs of one server, `bench/compare_aa.py`), as
//! Kalibera and Jones found for benchmarks generally (the run, not the iteration, is what to
//! repeat). The latency distributions compared as wholes (Kolmogorov-Smirnov);
//! thresholds (`p99<+5%,rps>-3%`) that fail the command when a significant change crosses
//! them, for CI, and that are never passed when their row could not be decided.
//!
//! Inputs are what webscope writes: a lab run directory (`run.json`, `load.hlog`), a lab
//! report (its clients sweep, point by point: the runs of a point are its repeats), or a
//! `webscope load --json` file (with the `.hlog` of the same name beside it, if any).

pub mod html;
pub mod input;
pub mod stats;
pub mod table;

use serde::Serialize;
use webscope_model::stats::{median, requests_for_tail};

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
    let l = &run.load.total.latency_us;
    let at = Some;
    match name {
        "goodput" => Some(run.health.goodput_rps),
        "rps" => Some(run.health.responses_rps),
        "error_pct" => Some(100.0 * run.health.error_share),
        "p50" => at(l.p50),
        "p90" => at(l.p90),
        "p99" => at(l.p99),
        "p999" => at(l.p999),
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
    /// Whether a test could run at all: false when the data cannot support one (then `test`
    /// says why, and `significant` is false without meaning "no change").
    pub decided: bool,
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

/// Below this p-value (rank test) a change is significant.
pub const ALPHA: f64 = 0.05;

/// How a metric's change was judged.
struct Decision {
    test: String,
    p: Option<f64>,
    decided: bool,
}

impl Decision {
    fn undecided(why: String) -> Decision {
        Decision {
            test: format!("cannot be decided: {why}"),
            p: None,
            decided: false,
        }
    }
}

/// A run counts for a percentile only with at least this many requests beyond it: with
/// fewer, its "p99.9" is the latency of a request or two (the run's maximum, not its tail),
/// and a test on it would test something else than its name says.
pub const MIN_BEYOND: u64 = 10;

/// The percentile a latency metric names, and how people write it.
fn percentile(name: &str) -> Option<(f64, &'static str)> {
    match name {
        "p50" => Some((0.5, "p50")),
        "p90" => Some((0.9, "p90")),
        "p99" => Some((0.99, "p99")),
        "p999" => Some((0.999, "p99.9")),
        _ => None,
    }
}

/// Why one run a side decides nothing, in the row; [`ONE_RUN_WHY`] says it in full, once.
pub const ONE_RUN: &str = "one run a side";

/// What to do about one run a side, for the reader.
pub const ONE_RUN_WHY: &str = "one run a side decides nothing: runs of one server differ by \
                               more than one run's intervals do; repeat them (lab --repeat 4, \
                               or a directory of 4 or more load --json results a side)";

/// Judges one metric over the runs (`a`, `b`: its value in each run that has it), or says
/// why it cannot: a test that can only say "no" is no test.
fn judge(name: &str, base: &[Run], cand: &[Run], a: &[f64], b: &[f64]) -> Decision {
    if base.len() < 2 || cand.len() < 2 {
        return Decision::undecided(ONE_RUN.into());
    }
    let (a, b, why) = match percentile(name) {
        // Only the runs that carry the percentile: enough requests beyond it.
        Some((q, label)) => {
            // A percentile here is one of `percentile`'s, below 1: there is always a count.
            let need = requests_for_tail(q, MIN_BEYOND).map_or(f64::INFINITY, |n| n as f64);
            let carry = |runs: &[Run]| -> Vec<f64> {
                runs.iter()
                    .filter(|r| r.load.total.requests as f64 >= need)
                    .filter_map(|r| metric(r, name))
                    .collect()
            };
            let (x, y) = (carry(base), carry(cand));
            let why = format!(
                "{} and {} runs of {need}+ requests ({MIN_BEYOND} beyond {label})",
                x.len(),
                y.len()
            );
            (x, y, why)
        }
        None => (
            a.to_vec(),
            b.to_vec(),
            format!("{} and {} runs", a.len(), b.len()),
        ),
    };
    if stats::smallest_p(a.len(), b.len()) >= ALPHA {
        return Decision::undecided(format!("{why}, too few for p < {ALPHA}"));
    }
    Decision {
        test: format!("rank test, {} and {} runs", a.len(), b.len()),
        p: stats::mann_whitney(&b, &a),
        decided: true,
    }
}

/// Compares `base` with `cand` (each a set of repeated runs of one configuration).
pub fn compare(scope: &str, base: &[Run], cand: &[Run]) -> Comparison {
    let mut rows = Vec::new();
    for name in METRICS {
        let a: Vec<f64> = base.iter().filter_map(|r| metric(r, name)).collect();
        let b: Vec<f64> = cand.iter().filter_map(|r| metric(r, name)).collect();
        let (Some(ma), Some(mb)) = (median(&a), median(&b)) else {
            continue;
        };
        let change_pct = if ma != 0.0 {
            100.0 * (mb / ma - 1.0)
        } else {
            0.0
        };
        let judged = judge(name, base, cand, &a, &b);
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
            significant: judged.p.is_some_and(|p| p < ALPHA),
            test: judged.test,
            p: judged.p,
            decided: judged.decided,
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
                // A bare number is refused, not read as per cent: `rps>10` could as well
                // mean 10 responses a second.
                let limit_pct = rest
                    .trim()
                    .strip_suffix('%')
                    .and_then(|n| n.trim().parse::<f64>().ok())
                    .ok_or_else(|| {
                        let (op, n) = (if below { '<' } else { '>' }, rest.trim().trim_end_matches('%').trim_start_matches(['+', '-']));
                        format!("--threshold {t:?}: {:?} is not a change in per cent (write it with its %, e.g. {metric}{op}+{n}% or {metric}{op}-{n}%)", rest.trim())
                    })?;
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

    /// Whether it cannot be judged: its figure was not measured on both sides (no row), or
    /// the data could not support a test of it. Such a threshold is never passed.
    pub fn undecided(&self, row: Option<&Row>) -> bool {
        row.is_none_or(|r| !r.decided)
    }

    /// The threshold as written: `p99<+5%`.
    fn written(&self) -> String {
        format!(
            "{}{}{:+}%",
            self.metric,
            if self.below { "<" } else { ">" },
            self.limit_pct
        )
    }

    /// One line: the threshold, the change, and the verdict (`row`: the metric's row, none
    /// when the figure was not measured on both sides).
    pub fn verdict(&self, row: Option<&Row>) -> String {
        let Some(row) = row else {
            return format!(
                "{}: not measured on both sides: CANNOT BE DECIDED",
                self.written()
            );
        };
        let how = match row.p {
            Some(p) => format!("{}, p = {p:.3}", row.test),
            None => row.test.clone(),
        };
        format!(
            "{}: {:+.1} % ({how}): {}",
            self.written(),
            row.change_pct,
            if !row.decided {
                "CANNOT BE DECIDED"
            } else if self.crossed(row) {
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
