//! A run's latencies as the objective judges them: read from the run's interval log, the
//! whole run's histogram for the point figure and the log's intervals as batches, and the
//! 95 % interval of a percentile from both.
//!
//! Why two intervals: the order-statistic interval ([`stats::quantile_ranks`]) takes the
//! requests as independent draws. Near a server's knee they are not: a queue that builds and
//! drains slows thousands of consecutive requests together, and a 3-s probe of 150 000
//! requests then gets a p99 interval of a few µs while a repeat of it a minute later lands
//! milliseconds away. The batch-means interval ([`stats::batch_share`]) reads that from
//! the run itself: when the batches disagree on the share of requests slower than a value,
//! the slow ones came in episodes, and the p99 is that uncertain. The judge takes the wider of the two on each side, so an
//! episode makes a probe undecided (taken again, longer) rather than decided on one draw.

use std::path::Path;

use anyhow::Context;
use hdrhistogram::Histogram;
use webscope_load::slo::Range;
use webscope_model::stats;

use super::{BEYOND, CONFIDENCE};

/// A run's latencies from its interval log (of one tag, or all requests).
pub(super) struct Logged {
    /// Every interval added into one histogram.
    pub whole: Histogram<u64>,
    /// The intervals in order, each its own histogram.
    pub intervals: Vec<Histogram<u64>>,
}

/// Reads the interval log `log` (the lines of `tag`, a class's, or the untagged ones: all
/// requests); `None` for a log without a request.
pub(super) fn read(log: &Path, tag: Option<&str>) -> anyhow::Result<Option<Logged>> {
    let mut whole = None::<Histogram<u64>>;
    let mut intervals = Vec::new();
    let logged = webscope_load::read_intervals(log, tag)
        .with_context(|| format!("the run's interval log {}", log.display()))?;
    for interval in logged {
        match whole.as_mut() {
            Some(h) => h
                .add(&interval.histogram)
                .map_err(|e| anyhow::anyhow!("{}: {e:?}", log.display()))?,
            None => {
                // A histogram read back from a log does not grow by itself: the next
                // interval's slowest request may lie beyond its range.
                let mut first = interval.histogram.clone();
                first.auto(true);
                whole = Some(first);
            }
        }
        intervals.push(interval.histogram);
    }
    Ok(whole
        .filter(|h| !h.is_empty())
        .map(|whole| Logged { whole, intervals }))
}

/// The 95 % interval of the q-quantile (q < 1) of the latencies in `whole`, in µs: the
/// order statistics' interval, widened on each side to the batch-means one where
/// `intervals` make enough batches ([`batch_range`]).
pub(super) fn range(whole: &Histogram<u64>, intervals: &[Histogram<u64>], q: f64) -> Option<Range> {
    if q >= 1.0 {
        return None;
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    let ranks = stats::quantile_ranks(whole.len(), q, CONFIDENCE)?;
    let values = ranks.values(|rank| us(whole.value_at_quantile(ranks.quantile_of(rank))));
    let mut range = Range {
        low: values.low,
        high: values.high,
    };
    if let Some((low, high)) = batch_range(whole, &batches(intervals, q), q) {
        range.low = range.low.min(us(low));
        range.high = range.high.max(us(high));
    }
    Some(range)
}

/// The q-quantile's interval from batch means, in ns: ξ lies at or below x exactly when the
/// share of requests slower than x is at most 1 − q, so the interval runs from the largest
/// x whose share is surely above 1 − q (the batch-means interval of the share, wholly above)
/// to the smallest x whose share is surely at most 1 − q. Each bound is found by bisection
/// over the recorded values (the share falls as x grows). `None` for too few batches.
fn batch_range(whole: &Histogram<u64>, batches: &[Histogram<u64>], q: f64) -> Option<(u64, u64)> {
    let tail = 1.0 - q;
    let share = |x: u64| {
        let counts: Vec<(u64, u64)> = batches
            .iter()
            .map(|b| (slower_than(b, x), b.len()))
            .collect();
        stats::batch_share(&counts, CONFIDENCE)
    };
    share(whole.max())?;
    let first = |holds: &dyn Fn(u64) -> bool| {
        let (mut lo, mut hi) = (whole.min(), whole.max());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if holds(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    };
    // Read as a value the histogram reports (the top of its bucket), as the order
    // statistics' bounds are.
    let low = first(&|x| share(x).is_some_and(|i| i.low <= tail));
    let high = first(&|x| share(x).is_some_and(|i| i.high <= tail));
    Some((
        whole.highest_equivalent(low),
        whole.highest_equivalent(high),
    ))
}

/// Requests of `h` slower than `x` ns (by the histogram's resolution: values equivalent to
/// `x` count as `x`).
fn slower_than(h: &Histogram<u64>, x: u64) -> u64 {
    if h.is_empty() || x >= h.max() {
        return 0;
    }
    h.count_between(h.next_non_equivalent(x), h.max())
}

/// The run's consecutive intervals grouped into batches that each hold enough requests for
/// their own q-quantile ([`BEYOND`] beyond it, as a probe is sized); a remainder too small
/// for a batch of its own joins the last one.
fn batches(intervals: &[Histogram<u64>], q: f64) -> Vec<Histogram<u64>> {
    let Some(need) = stats::requests_for_tail(q, BEYOND) else {
        return Vec::new();
    };
    let mut out: Vec<Histogram<u64>> = Vec::new();
    let mut open: Option<Histogram<u64>> = None;
    for h in intervals {
        let batch = match open.as_mut() {
            Some(batch) => {
                if batch.add(h).is_err() {
                    return Vec::new();
                }
                batch
            }
            None => {
                let mut first = h.clone();
                first.auto(true);
                open.insert(first)
            }
        };
        if batch.len() >= need {
            out.extend(open.take());
        }
    }
    if let (Some(rest), Some(last)) = (open, out.last_mut()) {
        if last.add(&rest).is_err() {
            return Vec::new();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(fast: u64, slow: u64, slow_ms: u64) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record_n(2_000_000, fast).unwrap();
        if slow > 0 {
            h.record_n(slow_ms * 1_000_000, slow).unwrap();
        }
        h
    }

    fn whole(intervals: &[Histogram<u64>]) -> Histogram<u64> {
        let mut w = intervals[0].clone();
        w.auto(true);
        for h in &intervals[1..] {
            w.add(h).unwrap();
        }
        w
    }

    #[test]
    fn a_queue_episode_widens_the_interval_the_order_statistics_give() {
        // 30 intervals of 5 000 requests at 2 ms; in three of them in a row, a queue episode
        // slowed 2 000 requests to 9 ms. The run's p99 is 9 ms; its order-statistic interval,
        // taking 150 000 requests as independent, is 9 ms on both sides. The batches' p99s
        // (2 ms in 27, 9 ms in 3) say how much that rests on one episode.
        let mut intervals: Vec<_> = (0..30).map(|_| interval(5_000, 0, 0)).collect();
        for h in &mut intervals[10..13] {
            *h = interval(3_000, 2_000, 9);
        }
        let w = whole(&intervals);
        let ranks_only = range(&w, &[], 0.99).unwrap();
        assert!(ranks_only.low > 8_900.0, "{ranks_only:?}");
        // With the batches, the interval reaches down to the 2-ms requests: a 5-ms limit is
        // undecided, not failed, on this run.
        let with_batches = range(&w, &intervals, 0.99).unwrap();
        assert!(with_batches.low < 2_100.0, "{with_batches:?}");
        assert!(with_batches.high >= 9_000.0, "{with_batches:?}");
    }

    #[test]
    fn steady_batches_leave_the_order_statistics_interval_as_it_was() {
        let intervals: Vec<_> = (0..20).map(|_| interval(4_975, 25, 4)).collect();
        let w = whole(&intervals);
        assert_eq!(range(&w, &intervals, 0.99), range(&w, &[], 0.99));
    }

    #[test]
    fn small_intervals_are_grouped_into_batches_big_enough_for_their_percentile() {
        // 25 intervals of 500 requests: a p99 batch needs 2 000, so 6 batches of 2 000 and
        // the last 500 joined to the sixth.
        let intervals: Vec<_> = (0..25).map(|_| interval(500, 0, 0)).collect();
        let b = batches(&intervals, 0.99);
        let sizes: Vec<u64> = b.iter().map(Histogram::len).collect();
        assert_eq!(sizes, [2_000, 2_000, 2_000, 2_000, 2_000, 2_500]);
        // Too few requests for five batches: no batch-means interval.
        let few: Vec<_> = (0..7).map(|_| interval(1_000, 0, 0)).collect();
        assert_eq!(batches(&few, 0.99).len(), 3);
    }
}
