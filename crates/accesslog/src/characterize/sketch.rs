//! A size distribution kept as entries stream by: every value up to a bound, then the
//! largest values exactly and the rest in a log-binned histogram, so that memory is bounded
//! whatever the log's length while the tail figures (which need only the top of the order)
//! stay exact. [`SizeFigures::of`](super::sizes::SizeFigures) states each figure's error.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::sizes::{Sample, SizeFigures};

/// Ratio of a bin's upper to its lower edge: a bin's geometric centre is within 0.5 % of
/// every value in it.
pub const BIN_RATIO: f64 = 1.01;

/// The values of one size distribution.
#[derive(Debug, Clone)]
pub struct SizeSketch {
    /// Most values kept one by one; past it the sketch keeps `top_k` and bins the rest.
    exact_max: usize,
    top_k: usize,
    /// While exact: every value (> 0) in arrival order.
    values: Vec<u64>,
    /// Once estimating: the `top_k` largest values, least on top.
    top: BinaryHeap<Reverse<u64>>,
    /// Once estimating: counts of the other values per bin (index ⌊ln x / ln BIN_RATIO⌋).
    bins: Vec<u64>,
    estimating: bool,
    count: u64,
    sum: u128,
}

impl SizeSketch {
    /// Keeps every value up to `exact_max`, then the `top_k` largest and a histogram.
    pub fn new(exact_max: usize, top_k: usize) -> SizeSketch {
        SizeSketch {
            exact_max,
            top_k: top_k.max(1),
            values: Vec::new(),
            top: BinaryHeap::new(),
            bins: Vec::new(),
            estimating: false,
            count: 0,
            sum: 0,
        }
    }

    /// Counts one value; zeros (a body-less response) are left out.
    pub fn add(&mut self, v: u64) {
        if v == 0 {
            return;
        }
        self.count += 1;
        self.sum += v as u128;
        if !self.estimating {
            self.values.push(v);
            if self.values.len() > self.exact_max {
                self.estimate();
            }
            return;
        }
        self.push_estimated(v);
    }

    /// From here on, keeps the top and bins the rest.
    fn estimate(&mut self) {
        self.estimating = true;
        self.bins = vec![0; bin_of(u64::MAX) + 1];
        for v in std::mem::take(&mut self.values) {
            self.push_estimated(v);
        }
    }

    fn push_estimated(&mut self, v: u64) {
        if self.top.len() < self.top_k {
            self.top.push(Reverse(v));
            return;
        }
        let out = match self.top.peek() {
            Some(&Reverse(least)) if v > least => {
                self.top.pop();
                self.top.push(Reverse(v));
                least
            }
            _ => v,
        };
        self.bins[bin_of(out)] += 1;
    }

    /// Whether every value was kept (the figures are then exact).
    pub fn exact(&self) -> bool {
        !self.estimating
    }

    /// The figures of the values.
    pub fn figures(&self) -> SizeFigures {
        if !self.estimating {
            return SizeFigures::new(self.values.iter().copied());
        }
        let mut top: Vec<f64> = self.top.iter().map(|r| r.0 as f64).collect();
        top.sort_by(|a, b| b.total_cmp(a));
        let rest: Vec<(f64, u64)> = (0..self.bins.len())
            .rev()
            .filter(|&i| self.bins[i] > 0)
            .map(|i| (centre(i), self.bins[i]))
            .collect();
        SizeFigures::of(&Sample {
            top: &top,
            rest: &rest,
            n: self.count as usize,
            mean: self.sum as f64 / self.count.max(1) as f64,
        })
    }
}

fn bin_of(v: u64) -> usize {
    ((v as f64).ln() / BIN_RATIO.ln()) as usize
}

/// The geometric centre of bin `i`.
fn centre(i: usize) -> f64 {
    BIN_RATIO.powf(i as f64 + 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_up_to_the_bound_then_top_and_bins() {
        let mut s = SizeSketch::new(10, 3);
        for v in [5u64, 0, 7, 9] {
            s.add(v);
        }
        assert!(s.exact());
        assert_eq!(s.figures(), SizeFigures::new([5u64, 7, 9].into_iter()));
        for v in 1..=100u64 {
            s.add(v * 10);
        }
        assert!(!s.exact());
        let f = s.figures();
        assert_eq!((f.count, f.max), (103, 1000.0));
        // The three largest are exact, the next come from bins within 0.5 %.
        assert_eq!(
            &f.ccdf[..3],
            &[
                (1000.0, 1.0 / 103.0),
                (990.0, 2.0 / 103.0),
                (980.0, 3.0 / 103.0)
            ]
        );
        let fourth = f.ccdf[3].0;
        assert!((fourth / 970.0 - 1.0).abs() < 0.005, "{fourth}");
        assert!((f.median / 490.0 - 1.0).abs() < 0.005, "{}", f.median);
        let mean = (5 + 7 + 9 + 50_500) as f64 / 103.0;
        assert!((f.mean - mean).abs() < 1e-9);
    }
}
