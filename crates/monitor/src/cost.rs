//! What the monitor itself costs: CPU time of the sampling thread (webscope-sys's thread clock),
//! per source.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The cost of one source over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceCost {
    /// How many times it was read.
    pub calls: u64,
    /// Mean CPU time per call, microseconds.
    pub mean_us: f64,
    /// Longest CPU time of one call, microseconds.
    pub max_us: f64,
}

/// What sampling cost, in CPU time of the thread that sampled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// CPU seconds spent in sampling (reading, computing, writing CSV), baseline included.
    pub sampler_cpu_s: f64,
    /// Wall seconds of the run.
    pub wall_s: f64,
    /// `sampler_cpu_s / wall_s`, in percent of one core.
    pub pct_of_one_core: f64,
    /// Mean CPU time of one whole sample, microseconds.
    pub mean_sample_us: f64,
    /// Per source.
    pub by_source: BTreeMap<String, SourceCost>,
    /// CPU seconds used by `perf record` (with --profile), not included above.
    pub perf_record_cpu_s: Option<f64>,
}

/// Adds up the costs while the monitor runs.
#[derive(Debug, Default)]
pub(crate) struct CostBook {
    total: Duration,
    samples: u64,
    sources: BTreeMap<&'static str, (u64, Duration, Duration)>,
}

impl CostBook {
    pub fn add_source(&mut self, name: &'static str, spent: Duration) {
        let entry = self.sources.entry(name).or_default();
        entry.0 += 1;
        entry.1 += spent;
        entry.2 = entry.2.max(spent);
    }

    pub fn add_sample(&mut self, spent: Duration) {
        self.total += spent;
        self.samples += 1;
    }

    pub fn summary(&self, wall: Duration) -> Cost {
        let wall_s = wall.as_secs_f64();
        let sampler_cpu_s = self.total.as_secs_f64();
        Cost {
            sampler_cpu_s,
            wall_s,
            pct_of_one_core: if wall_s > 0.0 {
                sampler_cpu_s * 100.0 / wall_s
            } else {
                0.0
            },
            mean_sample_us: if self.samples > 0 {
                sampler_cpu_s * 1e6 / self.samples as f64
            } else {
                0.0
            },
            by_source: self
                .sources
                .iter()
                .map(|(name, (calls, spent, max))| {
                    (
                        name.to_string(),
                        SourceCost {
                            calls: *calls,
                            mean_us: spent.as_secs_f64() * 1e6 / (*calls).max(1) as f64,
                            max_us: max.as_secs_f64() * 1e6,
                        },
                    )
                })
                .collect(),
            perf_record_cpu_s: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_add_up_per_source_and_per_sample() {
        let mut book = CostBook::default();
        book.add_source("cpu", Duration::from_micros(10));
        book.add_source("cpu", Duration::from_micros(30));
        book.add_sample(Duration::from_micros(100));
        book.add_sample(Duration::from_micros(300));
        let cost = book.summary(Duration::from_millis(40));
        assert_eq!(cost.by_source["cpu"].calls, 2);
        assert!((cost.by_source["cpu"].mean_us - 20.0).abs() < 1e-9);
        assert!((cost.by_source["cpu"].max_us - 30.0).abs() < 1e-9);
        assert!((cost.mean_sample_us - 200.0).abs() < 1e-9);
        assert!((cost.pct_of_one_core - 1.0).abs() < 1e-9);
    }
}
