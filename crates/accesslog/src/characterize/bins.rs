//! Counts per clock bin, kept as entries stream by, in memory bounded whatever the log's span.
//!
//! Bins start on multiples of their width on the clock (Unix seconds), so that any longer
//! bin whose length is a multiple of the width is a whole number of them: the per-minute
//! series and the per-second arrivals regroup exactly. When a log spans more than the bins
//! allowed, the width doubles (pairs merge), so memory stays bounded while the counts stay
//! exact at the coarser width. Entries may come in any order (a stream delivers some late):
//! bins grow at either end.

use std::collections::VecDeque;

/// Counts per bin of `width` seconds, the first bin starting at `start`.
#[derive(Debug, Clone)]
pub struct Bins {
    /// The width asked times a power of two.
    width: u64,
    /// Most bins before the width doubles.
    max_bins: usize,
    /// Start of the first bin, a multiple of `width`.
    start: i64,
    counts: VecDeque<u64>,
}

impl Bins {
    /// Empty bins of `unit` seconds, holding at most `max_bins` (at least 2).
    pub fn new(unit: u64, max_bins: usize) -> Bins {
        Bins {
            width: unit.max(1),
            max_bins: max_bins.max(2),
            start: 0,
            counts: VecDeque::new(),
        }
    }

    /// Counts one instant (Unix seconds).
    pub fn add(&mut self, t: i64) {
        loop {
            let w = self.width as i64;
            let slot = t.div_euclid(w) * w;
            if self.counts.is_empty() {
                self.start = slot;
                self.counts.push_back(0);
            }
            let end = self.start + self.counts.len() as i64 * w;
            // Bins the instant needs beyond those held, at the front or at the back.
            let (before, after) = ((self.start - slot).max(0) / w, (slot - end + w).max(0) / w);
            if self.counts.len() as i64 + before + after > self.max_bins as i64 {
                self.double();
                continue;
            }
            for _ in 0..before {
                self.counts.push_front(0);
            }
            self.start -= before * w;
            self.counts.resize(self.counts.len() + after as usize, 0);
            self.counts[((slot - self.start) / w) as usize] += 1;
            return;
        }
    }

    /// Doubles the width: pairs of bins, aligned on the clock, merge.
    fn double(&mut self) {
        let w2 = 2 * self.width as i64;
        let start = self.start.div_euclid(w2) * w2;
        let mut merged = VecDeque::with_capacity(self.counts.len() / 2 + 1);
        let mut t = self.start;
        for c in self.counts.drain(..) {
            let i = ((t.div_euclid(w2) * w2 - start) / w2) as usize;
            if i == merged.len() {
                merged.push_back(0);
            }
            merged[i] += c;
            t += self.width as i64;
        }
        self.counts = merged;
        self.start = start;
        self.width *= 2;
    }

    /// Width of the bins, seconds.
    #[cfg(test)]
    fn width(&self) -> u64 {
        self.width
    }

    /// The counts in bins of the least multiple of the width that is at least `bin` seconds
    /// (`bin` itself while the bins were not widened and `bin` is a multiple of the unit),
    /// from the bin holding `from` to the one holding `to`: `(bin, start of the first, counts)`.
    pub fn regrouped(&self, bin: u64, from: i64, to: i64) -> (u64, i64, Vec<u64>) {
        let bin = bin.max(1).div_ceil(self.width) * self.width;
        let b = bin as i64;
        let first = from.div_euclid(b) * b;
        let len = if to < first {
            0
        } else {
            ((to - first) / b + 1) as usize
        };
        let mut out = vec![0u64; len];
        let mut t = self.start;
        for &c in &self.counts {
            let i = (t.div_euclid(b) * b - first) / b;
            if c > 0 && i >= 0 && (i as usize) < len {
                out[i as usize] += c;
            }
            t += self.width as i64;
        }
        (bin, first, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_regroup_exactly_and_late_entries_grow_the_front() {
        let mut b = Bins::new(1, 100);
        for t in [100, 101, 101, 130, 95, 159] {
            b.add(t);
        }
        let (bin, start, counts) = b.regrouped(60, 95, 159);
        assert_eq!((bin, start), (60, 60));
        assert_eq!(counts, vec![4, 2]);
        let (_, start, counts) = b.regrouped(1, 95, 101);
        assert_eq!((start, counts), (95, vec![1, 0, 0, 0, 0, 1, 2]));
    }

    #[test]
    fn a_long_span_doubles_the_width_and_keeps_every_count() {
        let mut b = Bins::new(1, 8);
        for t in 0..100 {
            b.add(t);
        }
        b.add(-7);
        assert!(b.width() >= 16, "{}", b.width());
        let (bin, _, counts) = b.regrouped(1, -7, 99);
        assert_eq!(bin, b.width());
        assert_eq!(counts.iter().sum::<u64>(), 101);
        assert!(counts.len() <= 9, "{counts:?}");
    }
}
