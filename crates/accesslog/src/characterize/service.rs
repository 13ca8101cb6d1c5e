//! The logged request times (nginx `$request_time`, Apache `%D`), when the format has them.

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
}

/// The figures, `None` when no entry has a request time.
pub fn request_times(entries: &[Entry]) -> Option<RequestTimes> {
    let ms = Sorted::new(
        entries
            .iter()
            .filter_map(|e| e.request_time)
            .map(|d| d.as_secs_f64() * 1000.0),
    );
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
