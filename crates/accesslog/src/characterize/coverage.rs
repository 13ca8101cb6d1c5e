//! Whether the log covers its span: a log sampled by the clock (only some minutes of each
//! hour kept, as some hosts and archives publish them) or with long stretches without a line.
//!
//! Either makes the burstiness figures describe the sampling rather than the traffic: a log
//! of minute :05 of every hour has an IDC that peaks at the hour and a mean rate sixty times
//! below the rate within its minutes. Both are told from the per-minute counts alone (what a
//! streaming reader keeps), so the memory is that of the series.
//!
//! A sampled log is one whose requests (all but 1 %) fall in at most half of the minutes of
//! the hour, each of those minutes busy in several hours: a few visits of a quiet site also
//! fall in few minutes of the hour, but each in its own hour. A gap is a stretch of empty
//! minutes longer than an hour and longer than a Poisson process at the log's mean rate
//! would leave anywhere in the span but with a 1 % chance.

use super::bins::Bins;
use super::traffic::{Series, MAX_SERIES_BINS};

/// What the log covers of its span.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Coverage {
    /// Whether the minutes of the hour could be told: the per-minute series has bins of one
    /// minute (a log of more than [`super::MAX_SERIES_BINS`] minutes has wider ones).
    pub minutes_checked: bool,
    /// The minutes of the hour (0-59) that hold all but 1 % of the requests, when the log is
    /// sampled by them; empty when it is not.
    pub sampled_minutes: Vec<u8>,
    /// Clock hours with at least one request.
    pub active_hours: u64,
    /// Empty stretches of at least `min_gap_s`, longest first (at most [`MAX_GAPS`]).
    pub gaps: Vec<Gap>,
    /// How many there were.
    pub gap_count: u64,
    /// Their total length, seconds.
    pub gap_total_s: u64,
    /// The length from which an empty stretch counts as a gap, seconds.
    pub min_gap_s: u64,
    /// The mean rate where the log has lines, req/s: within the sampled minutes of a sampled
    /// log, outside the gaps of a gapped one; `None` for a log that covers its span.
    pub covered_rate: Option<f64>,
}

/// An empty stretch of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Gap {
    /// Its start, Unix seconds (the start of its first empty bin).
    pub start_unix: i64,
    /// Its length, seconds.
    pub length_s: u64,
}

/// Most gaps listed.
pub const MAX_GAPS: usize = 5;
/// Share of the requests the sampled minutes must hold.
const SAMPLED_SHARE: f64 = 0.99;
/// Most minutes of the hour a sampled log may use: beyond half it is not a sample of them.
const MAX_SAMPLED_MINUTES: usize = 30;
/// Fewest busy hours per sampled minute, on average: a pattern seen in one hour is chance.
const MIN_REPEATS: usize = 3;
/// Fewest requests and busy hours for a pattern of minutes to be told at all.
const MIN_REQUESTS: u64 = 100;
const MIN_HOURS: u64 = 3;
/// The shortest gap: an hour with no request is worth saying on any site.
const MIN_GAP_S: u64 = 3600;

impl Coverage {
    /// Whether the log is sampled or gapped: its burstiness figures then describe that.
    pub fn is_partial(&self) -> bool {
        !self.sampled_minutes.is_empty() || self.gap_count > 0
    }
}

/// The per-minute counts a reader that wants only the coverage keeps as entries stream by
/// (the replay's first pass, `webscope-load`'s `replay_log`), in the memory `characterize`'s
/// own series takes, so that both read a log's coverage by the one rule of this module.
#[derive(Debug, Clone)]
pub struct MinuteCounts {
    minutes: Bins,
    span: Option<(i64, i64)>,
}

impl Default for MinuteCounts {
    fn default() -> MinuteCounts {
        MinuteCounts {
            minutes: Bins::new(60, 4 * MAX_SERIES_BINS as usize),
            span: None,
        }
    }
}

impl MinuteCounts {
    /// Counts one entry at `t` (Unix seconds).
    pub fn add(&mut self, t: i64) {
        self.minutes.add(t);
        self.span = Some(self.span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
    }

    /// The coverage of what was counted, as `characterize` reports it.
    pub fn coverage(&self) -> Coverage {
        let span_s = self.span.map_or(0, |(a, b)| b.abs_diff(a) + 1);
        coverage(&Series::from_bins(&self.minutes, 60, self.span), span_s)
    }
}

/// The coverage of a log given its per-minute series and its span in seconds.
pub fn coverage(per_minute: &Series, span_s: u64) -> Coverage {
    let requests: u64 = per_minute.counts.iter().sum();
    let min_gap_s = min_gap(requests, span_s, per_minute.bin_s);
    let (gaps, gap_count, gap_total_s) = gaps(per_minute, min_gap_s);
    let mut c = Coverage {
        minutes_checked: per_minute.bin_s == 60,
        active_hours: active_hours(per_minute),
        gaps,
        gap_count,
        gap_total_s,
        min_gap_s,
        ..Coverage::default()
    };
    if c.minutes_checked && requests >= MIN_REQUESTS && c.active_hours >= MIN_HOURS {
        if let Some((minutes, rate)) = sampled(per_minute) {
            c.sampled_minutes = minutes;
            c.covered_rate = Some(rate);
        }
    }
    if c.covered_rate.is_none() && gap_count > 0 && span_s > gap_total_s {
        c.covered_rate = Some(requests as f64 / (span_s - gap_total_s) as f64);
    }
    c
}

/// The shortest empty stretch that counts as a gap: an hour, or longer when a Poisson process
/// at the log's mean rate would leave an empty stretch that long somewhere in the span with
/// a chance over 1 % (about `n·exp(-λg)` of its `n` inter-arrival times exceed `g`); whole
/// bins.
fn min_gap(requests: u64, span_s: u64, bin_s: u64) -> u64 {
    let rate = requests as f64 / span_s.max(1) as f64;
    let poisson = if rate > 0.0 {
        (100.0 * requests.max(1) as f64).ln() / rate
    } else {
        0.0
    };
    let seconds = poisson.clamp(MIN_GAP_S as f64, 1e15) as u64;
    seconds.div_ceil(bin_s.max(1)) * bin_s.max(1)
}

/// Runs of empty bins of at least `min_s`: the longest few, their count and total length.
fn gaps(s: &Series, min_s: u64) -> (Vec<Gap>, u64, u64) {
    let mut all = Vec::new();
    let mut run_start: Option<usize> = None;
    // A sentinel busy bin closes a run at the end (the last bin holds the last line anyway).
    for (i, &n) in s.counts.iter().chain(std::iter::once(&1)).enumerate() {
        match (n, run_start) {
            (0, None) => run_start = Some(i),
            (0, Some(_)) => {}
            (_, Some(from)) => {
                let length_s = (i - from) as u64 * s.bin_s;
                if length_s >= min_s {
                    all.push(Gap {
                        start_unix: s.start_unix + (from as u64 * s.bin_s) as i64,
                        length_s,
                    });
                }
                run_start = None;
            }
            (_, None) => {}
        }
    }
    let (count, total) = (all.len() as u64, all.iter().map(|g| g.length_s).sum());
    all.sort_by_key(|g| (std::cmp::Reverse(g.length_s), g.start_unix));
    all.truncate(MAX_GAPS);
    (all, count, total)
}

/// The clock hour of bin `i`.
fn hour_of(s: &Series, i: usize) -> i64 {
    (s.start_unix + (i as u64 * s.bin_s) as i64).div_euclid(3600)
}

fn active_hours(s: &Series) -> u64 {
    let mut hours = 0;
    let mut last = None;
    for (i, _) in s.counts.iter().enumerate().filter(|(_, &n)| n > 0) {
        let h = hour_of(s, i);
        if last != Some(h) {
            hours += 1;
            last = Some(h);
        }
    }
    hours
}

/// The minutes of the hour a sampled log keeps, and its rate within them; `None` when the
/// requests spread over more than half of the hour or the pattern does not repeat.
fn sampled(s: &Series) -> Option<(Vec<u8>, f64)> {
    let minute = |i: usize| ((s.start_unix + 60 * i as i64).rem_euclid(3600) / 60) as usize;
    let mut requests = [0u64; 60];
    let mut busy = [0usize; 60];
    for (i, &n) in s.counts.iter().enumerate() {
        requests[minute(i)] += n;
        busy[minute(i)] += usize::from(n > 0);
    }
    let total: u64 = requests.iter().sum();
    let mut order: Vec<usize> = (0..60).collect();
    order.sort_by_key(|&m| (std::cmp::Reverse(requests[m]), m));
    let mut held = 0;
    let mut kept = Vec::new();
    for m in order {
        if held as f64 >= SAMPLED_SHARE * total as f64 {
            break;
        }
        held += requests[m];
        kept.push(m);
    }
    let repeats: usize = kept.iter().map(|&m| busy[m]).sum();
    if kept.len() > MAX_SAMPLED_MINUTES || repeats < MIN_REPEATS * kept.len() {
        return None;
    }
    kept.sort_unstable();
    let bins = (0..s.counts.len())
        .filter(|&i| kept.contains(&minute(i)))
        .count();
    let rate = held as f64 / (60 * bins.max(1)) as f64;
    Some((kept.into_iter().map(|m| m as u8).collect(), rate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use webscope_workload::Rng;

    /// Instants of a Poisson process of `rate` per second from `from` for `seconds`.
    fn poisson(rate: f64, from: i64, seconds: u64, rng: &mut Rng) -> Vec<i64> {
        let mut out = Vec::new();
        let mut t = 0.0;
        loop {
            t += rng.exponential() / rate;
            if t >= seconds as f64 {
                return out;
            }
            out.push(from + t as i64);
        }
    }

    fn coverage_of(times: &[i64]) -> Coverage {
        let span = (times[times.len() - 1] - times[0] + 1) as u64;
        coverage(&Series::new(times, 60), span)
    }

    /// 2024-01-01T00:00:00Z.
    const T0: i64 = 1_704_067_200;

    #[test]
    fn a_log_of_minute_5_of_each_hour_is_sampled() {
        // Three and a half days, 2 req/s within minute :05 and nothing else: the log.
        let mut rng = Rng::new(1);
        let times: Vec<i64> = (0..84)
            .flat_map(|h| poisson(2.0, T0 + h * 3600 + 300, 60, &mut rng))
            .collect();
        let c = coverage_of(&times);
        assert!(c.minutes_checked && c.is_partial());
        assert_eq!((c.sampled_minutes.clone(), c.active_hours), (vec![5], 84));
        let rate = c.covered_rate.unwrap();
        assert!((rate - 2.0).abs() < 0.1, "{rate}");
        // 59 empty minutes between samples are the sampling, not gaps.
        assert_eq!(c.gap_count, 0, "{c:?}");
    }

    #[test]
    fn counted_as_a_stream_the_coverage_is_characterize_s() {
        let mut rng = Rng::new(1);
        let times: Vec<i64> = (0..84)
            .flat_map(|h| poisson(2.0, T0 + h * 3600 + 300, 60, &mut rng))
            .collect();
        let mut counts = MinuteCounts::default();
        // In any order: a stream delivers some late.
        times.iter().rev().for_each(|&t| counts.add(t));
        assert_eq!(counts.coverage(), coverage_of(&times));
        assert_eq!(counts.coverage().sampled_minutes, vec![5]);
        assert!(!MinuteCounts::default().coverage().is_partial());
    }

    #[test]
    fn a_log_of_the_first_ten_minutes_of_each_hour_with_strays_is_sampled() {
        let mut rng = Rng::new(2);
        let mut times: Vec<i64> = (0..24)
            .flat_map(|h| poisson(1.0, T0 + h * 3600, 600, &mut rng))
            .collect();
        // A few lines outside the sample (well under 1 %) do not hide it.
        times.extend([T0 + 1800, T0 + 7200 + 2400, T0 + 20 * 3600 + 3000]);
        times.sort_unstable();
        let c = coverage_of(&times);
        assert_eq!(c.sampled_minutes, (0..10).collect::<Vec<u8>>());
    }

    #[test]
    fn steady_traffic_and_a_quiet_site_s_few_visits_are_not_sampled() {
        let mut rng = Rng::new(3);
        let steady = poisson(0.5, T0, 10 * 3600, &mut rng);
        let c = coverage_of(&steady);
        assert!(!c.is_partial(), "{c:?}");
        assert_eq!(c.covered_rate, None);
        // Forty visits of 20 requests each, each in its own minute, over two days: they use
        // few minutes of the hour, but each minute in one or two hours only.
        let visits: Vec<i64> = (0..40u64)
            .flat_map(|v| {
                let start = T0 + (v * 4321 + rng.next_u64() % 600) as i64;
                (0..20).map(move |k| start + k)
            })
            .collect();
        let mut visits = visits;
        visits.sort_unstable();
        let c = coverage_of(&visits);
        assert!(c.sampled_minutes.is_empty(), "{c:?}");
    }

    #[test]
    fn a_five_hour_hole_in_busy_traffic_is_a_gap() {
        let mut rng = Rng::new(4);
        let mut times = poisson(1.0, T0, 10 * 3600, &mut rng);
        times.retain(|&t| !(T0 + 3 * 3600..T0 + 8 * 3600).contains(&t));
        let c = coverage_of(&times);
        assert_eq!(c.gap_count, 1, "{c:?}");
        let g = c.gaps[0];
        // The hole is 5 h; the empty minutes around its edges may add a minute or so.
        assert!((5 * 3600..=5 * 3600 + 180).contains(&g.length_s), "{g:?}");
        assert!(
            (T0 + 3 * 3600 - 120..=T0 + 3 * 3600).contains(&g.start_unix),
            "{g:?}"
        );
        let rate = c.covered_rate.unwrap();
        assert!((rate - 1.0).abs() < 0.05, "{rate}");
        assert!(c.sampled_minutes.is_empty());
    }

    #[test]
    fn a_quiet_log_needs_a_longer_hole_to_call_it_a_gap() {
        // One request per 20 minutes on average: stretches of an hour or two without one
        // are chance, and are not called gaps.
        let mut rng = Rng::new(5);
        let times = poisson(1.0 / 1200.0, T0, 30 * 86_400, &mut rng);
        let c = coverage_of(&times);
        assert!(c.min_gap_s > 3 * 3600, "{}", c.min_gap_s);
        assert_eq!(c.gap_count, 0, "{c:?}");
    }

    #[test]
    fn a_log_of_months_has_wide_bins_its_minutes_unchecked_and_its_gaps_still_found() {
        // 100 days at 1 req/min (times every 60 s) with a ten-day hole.
        let times: Vec<i64> = (0..100 * 1440)
            .filter(|m| !(40 * 1440..50 * 1440).contains(m))
            .map(|m| T0 + 60 * m as i64)
            .collect();
        let c = coverage_of(&times);
        assert!(!c.minutes_checked);
        assert_eq!(c.gap_count, 1, "{c:?}");
        assert!(c.gaps[0].length_s >= 10 * 86_400 - 300, "{:?}", c.gaps[0]);
    }
}
