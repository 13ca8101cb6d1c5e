//! The logged request times (nginx `$request_time`, Apache `%D`), when the format has them.

use hdrhistogram::Histogram;
use webscope_model::stats::Sorted;

use crate::line::Entry;

/// Percentiles of the logged request times, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RequestTimes {
    /// Entries with a request time.
    pub count: usize,
    /// Mean.
    pub mean_ms: f64,
    /// 50th percentile (nearest rank: the lower middle time for an even count).
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Whether every time was kept; if not, the percentiles are an HDR histogram's, within
    /// 0.1 % (the count, mean and largest stay exact).
    pub exact: bool,
}

/// The figures, `None` when no entry has a request time.
#[cfg(test)]
fn request_times(entries: &[Entry]) -> Option<RequestTimes> {
    let mut sketch = TimeSketch::new(usize::MAX);
    entries.iter().for_each(|e| sketch.add(e));
    sketch.figures()
}

/// The request times as entries stream by: every time up to a bound, then an HDR histogram
/// of microseconds at three significant digits, whose percentiles are within 0.1 % of the
/// exact ones (the mean and the largest stay exact).
#[derive(Debug, Clone)]
pub struct TimeSketch {
    exact_max: usize,
    /// While exact: each time, milliseconds.
    ms: Vec<f64>,
    histogram: Option<Histogram<u64>>,
    count: u64,
    sum_ms: f64,
    max_ms: f64,
}

impl TimeSketch {
    /// Keeps every time up to `exact_max`, then a histogram.
    pub fn new(exact_max: usize) -> TimeSketch {
        TimeSketch {
            exact_max,
            ms: Vec::new(),
            histogram: None,
            count: 0,
            sum_ms: 0.0,
            max_ms: 0.0,
        }
    }

    /// Counts the entry's request time, if it has one.
    pub fn add(&mut self, e: &Entry) {
        let Some(d) = e.request_time else {
            return;
        };
        let ms = d.as_secs_f64() * 1000.0;
        self.count += 1;
        self.sum_ms += ms;
        self.max_ms = self.max_ms.max(ms);
        match &mut self.histogram {
            Some(h) => record(h, ms),
            None => {
                self.ms.push(ms);
                if self.ms.len() > self.exact_max {
                    self.start_histogram();
                }
            }
        }
    }

    fn start_histogram(&mut self) {
        // Auto-resizing from 1 µs at three significant digits: construction cannot fail.
        let Ok(mut h) = Histogram::<u64>::new(3) else {
            return;
        };
        for ms in std::mem::take(&mut self.ms) {
            record(&mut h, ms);
        }
        self.histogram = Some(h);
    }

    /// The figures, `None` when no entry had a request time.
    pub fn figures(&self) -> Option<RequestTimes> {
        let Some(h) = &self.histogram else {
            return exact(&self.ms);
        };
        let at = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Some(RequestTimes {
            count: self.count as usize,
            mean_ms: self.sum_ms / self.count.max(1) as f64,
            p50_ms: at(0.50),
            p90_ms: at(0.90),
            p99_ms: at(0.99),
            max_ms: self.max_ms,
            exact: false,
        })
    }
}

/// Records a time in microseconds. `record` grows the histogram to the value
/// (`saturating_record` would not: it clamps to the range held so far).
fn record(h: &mut Histogram<u64>, ms: f64) {
    let us = (ms * 1000.0).round() as u64;
    if h.record(us).is_err() {
        h.saturating_record(us);
    }
}

fn exact(times_ms: &[f64]) -> Option<RequestTimes> {
    let ms = Sorted::new(times_ms.iter().copied());
    // Nearest-rank percentiles, as the load generator's: a logged p99 means its p99.
    let at = |q: f64| ms.quantile(q);
    let n = ms.len();
    Some(RequestTimes {
        count: n,
        mean_ms: ms.as_slice().iter().sum::<f64>() / n as f64,
        p50_ms: at(0.50)?,
        p90_ms: at(0.90)?,
        p99_ms: at(0.99)?,
        max_ms: at(1.0)?,
        exact: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_line, Format, TimeUnit};

    #[test]
    fn percentiles_of_the_logged_times() {
        let micro = Some(Format::CombinedWithTime(TimeUnit::Microseconds));
        let entries: Vec<Entry> = (1..=100)
            .map(|i| {
                let line = format!(
                    r#"h - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "-" {}"#,
                    i * 1000
                );
                parse_line(&line, micro).unwrap()
            })
            .collect();
        let t = request_times(&entries).unwrap();
        assert_eq!(
            (t.count, t.p50_ms, t.p90_ms, t.p99_ms, t.max_ms),
            (100, 50.0, 90.0, 99.0, 100.0)
        );
        assert!((t.mean_ms - 50.5).abs() < 1e-9);
        let untimed = parse_line(
            r#"h - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 5"#,
            None,
        )
        .unwrap();
        assert_eq!(request_times(&[untimed]), None);
    }
}
