//! What a single run's reporting intervals say about a metric: one value an interval
//! (throughput, error share, a latency percentile), which the rank test over intervals takes
//! when a side has one run, or why the intervals cannot stand for the metric. Not for the
//! whole-run figures the table shows (`super::metric`), and not the test itself.
//!
//! The values come from the load JSON's `intervals` (every `load --json` and every lab run
//! carries them), or from the interval log (`.hlog`) when the JSON has none.

use serde_json::Value;

use super::input::Run;

/// An interval counts for a percentile only with at least this many requests beyond it:
/// with fewer, its "p99.9" is the latency of one or two requests (the interval's maximum,
/// not its tail), and a test on it would test something else than the name says.
pub const MIN_BEYOND: f64 = 10.0;

/// An interval shorter than this share of the run's longest (the last one, cut short) is left
/// out: its rate and percentiles rest on a fraction of the requests the others have.
const MIN_LENGTH_SHARE: f64 = 0.5;

/// The latency metrics and the quantiles they name.
const PERCENTILES: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)];

/// The percentile a latency metric names.
pub fn quantile(name: &str) -> Option<f64> {
    PERCENTILES.iter().find(|p| p.0 == name).map(|p| p.1)
}

/// One reporting interval, whichever file it came from.
struct Interval {
    length_s: f64,
    requests: f64,
    /// Failures in it, when the source counts them (the interval log does not).
    errors: Option<f64>,
    /// Latency at each of [`PERCENTILES`], microseconds.
    latency_us: [Option<f64>; 4],
}

fn from_json(load: &Value) -> Vec<Interval> {
    let Some(list) = load["intervals"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .map(|i| Interval {
            length_s: i["duration_s"].as_f64().unwrap_or(0.0),
            requests: i["requests"].as_f64().unwrap_or(0.0),
            errors: i["errors"].as_f64(),
            latency_us: PERCENTILES.map(|(name, _)| i["latency_us"][name].as_f64()),
        })
        .collect()
}

fn from_hlog(run: &Run) -> Vec<Interval> {
    run.intervals
        .iter()
        .map(|i| {
            let h = &i.histogram;
            Interval {
                length_s: i.length_s,
                requests: h.len() as f64,
                errors: None,
                latency_us: PERCENTILES
                    .map(|(_, q)| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)),
            }
        })
        .collect()
}

/// The run's intervals of full length, from its JSON or else its interval log.
fn intervals(run: &Run) -> Vec<Interval> {
    let mut all = from_json(&run.load);
    if all.is_empty() {
        all = from_hlog(run);
    }
    let longest = all.iter().map(|i| i.length_s).fold(0.0, f64::max);
    all.retain(|i| i.length_s > 0.0 && i.length_s >= MIN_LENGTH_SHARE * longest);
    all
}

/// The metric's value in each of `run`'s intervals that can give it, or why none can.
pub fn values(run: &Run, name: &str) -> Result<Vec<f64>, String> {
    let all = intervals(run);
    if all.is_empty() {
        return Err("the run has no per-interval figures".into());
    }
    let error_free = run.health.error_share == 0.0;
    match name {
        "rps" => Ok(all.iter().map(|i| i.requests / i.length_s).collect()),
        "goodput" if error_free => Ok(all.iter().map(|i| i.requests / i.length_s).collect()),
        "goodput" => Err("goodput is judged per run (by status), not per interval".into()),
        "error_pct" => all
            .iter()
            .map(|i| {
                let e = i.errors.ok_or("the interval log counts no errors")?;
                Ok(if i.requests + e > 0.0 {
                    100.0 * e / (i.requests + e)
                } else {
                    0.0
                })
            })
            .collect(),
        "cpu_us" => Err("server CPU is measured per run, not per interval".into()),
        _ => {
            let at = PERCENTILES
                .iter()
                .position(|p| p.0 == name)
                .ok_or_else(|| format!("no metric {name}"))?;
            let q = PERCENTILES[at].1;
            let need = (MIN_BEYOND / (1.0 - q)).ceil();
            Ok(all
                .iter()
                .filter(|i| i.requests >= need)
                .filter_map(|i| i.latency_us[at])
                .collect())
        }
    }
}

/// Why an interval test of `name` had too few intervals, in words: for a percentile, what an
/// interval needs to count.
pub fn too_few(name: &str, n: usize, m: usize) -> String {
    match quantile(name) {
        Some(q) => format!(
            "{n} and {m} intervals with {MIN_BEYOND} or more requests beyond {} (at least {} requests each)",
            label(name),
            (MIN_BEYOND / (1.0 - q)).ceil()
        ),
        None => format!("{n} and {m} intervals"),
    }
}

/// A percentile's name as people write it: p999 is p99.9.
fn label(name: &str) -> &str {
    match name {
        "p999" => "p99.9",
        other => other,
    }
}
